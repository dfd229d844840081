"""A key that lives as long as its owner.

The same classes as ``etcd_recipes`` has, which live in
:mod:`etcd_recipes.coordination` (this module names them too, as
``from etcd_recipes.transient import TransientKeyValue``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from .coordination import (  # noqa: F401
    TransientKeyValue,
)

__all__ = ["TransientKeyValue"]
