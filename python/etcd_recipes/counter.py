"""The 64-bit counter.

The same classes as ``etcd_recipes`` has, which live in
:mod:`etcd_recipes.coordination` (this module names them too, as
``from etcd_recipes.counter import DistributedAtomicLong``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from .coordination import (  # noqa: F401
    DistributedAtomicLong,
)

__all__ = ["DistributedAtomicLong"]
