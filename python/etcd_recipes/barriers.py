"""Barriers: the gate, the count barrier, the double barrier.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.barriers import DistributedBarrier``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from . import (  # noqa: F401
    DistributedBarrier, DistributedBarrierWithCount, DistributedDoubleBarrier,
)

__all__ = ["DistributedBarrier", "DistributedBarrierWithCount", "DistributedDoubleBarrier"]
