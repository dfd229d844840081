"""Barriers: the gate, the count barrier, the double barrier.

The same classes as ``etcd_recipes`` has, which live in
:mod:`etcd_recipes.coordination` (this module names them too, as
``from etcd_recipes.barriers import DistributedBarrier``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from .coordination import (  # noqa: F401
    DistributedBarrier, DistributedBarrierWithCount, DistributedDoubleBarrier,
)

__all__ = ["DistributedBarrier", "DistributedBarrierWithCount", "DistributedDoubleBarrier"]
