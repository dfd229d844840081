"""The 64-bit counter.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.counter import DistributedAtomicLong``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from . import (  # noqa: F401
    DistributedAtomicLong,
)

__all__ = ["DistributedAtomicLong"]
