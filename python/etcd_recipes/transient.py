"""A key that lives as long as its owner.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.transient import TransientKeyValue``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from . import (  # noqa: F401
    TransientKeyValue,
)

__all__ = ["TransientKeyValue"]
