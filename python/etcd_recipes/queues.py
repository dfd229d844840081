"""Queues: FIFO, priority, and the at-least-once work queue.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.queues import DistributedQueue``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from . import (  # noqa: F401
    DistributedQueue, DistributedPriorityQueue, DistributedWorkQueue, WorkItem, Enqueued, DeadLetter,
)

__all__ = [
    "DistributedQueue",
    "DistributedPriorityQueue",
    "DistributedWorkQueue",
    "WorkItem",
    "Enqueued",
    "DeadLetter",
]
