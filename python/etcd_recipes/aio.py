"""asyncio twins of etcd_recipes' classes: the same names, methods and arguments,
with ``await``, ``async with`` and ``async for``. Each twin is a subclass of the
blocking class: what does no I/O (properties, listeners, pick()) is the same
method, and every method that waits for etcd is a coroutine here
(tests/test_api_parity.py keeps them equal).

No thread waits on your behalf: each call is started on the C++ async core, and
its completion (on the client's executor thread) hands the result to your event
loop with ``loop.call_soon_threadsafe``. Cancelling the awaiting task cancels the
C++ call; a hold or work item granted in that same instant is released/requeued.

    async with etcd_recipes.aio.Client(endpoints) as client:
        mutex = etcd_recipes.aio.DistributedMutex(client, "/locks/orders")
        async with mutex as hold:
            ...
        async for item in etcd_recipes.aio.DistributedQueue(client, "/q"):
            ...
        async with etcd_recipes.aio.Recipes(client, client_id="billing-7") as recipes:
            async with recipes.mutex("/locks/orders") as hold:
                ...
"""

# The twins live in _aio_<family>.py, one module per module of the blocking
# classes, over _aio_base.py (run, the asyncio Hold); this module names them.

from __future__ import annotations

import sys
from typing import Any

from . import codecs  # noqa: F401
from . import facade as _blocking
from ._aio_base import Hold, run
from ._aio_caches import NodeCache, PathChildrenCache
from ._aio_client import Client, Lease, Session, Watch
from ._aio_coordination import (
    DistributedAtomicLong, DistributedBarrier, DistributedBarrierWithCount, DistributedDoubleBarrier, TransientKeyValue,
)
from ._aio_discovery import ServiceCache, ServiceDiscovery, ServiceProvider, ServiceRegistry
from ._aio_election import LeaderLatch, LeaderObserver, LeaderSelector, LeaderTerm
from ._aio_locks import DistributedMutex, DistributedReadWriteLock, DistributedSemaphore, LockView, MultiHold, MultiLock
from ._aio_presence import PresenceLease
from ._aio_reaper import reap
from ._aio_queues import DistributedPriorityQueue, DistributedQueue, DistributedWorkQueue, WorkItem
from ._aio_view import EventStream, KeyspaceView, watch_stream
from ._aio_values import GroupMember, SharedValue
from ._base import Bytes  # noqa: F401
from ._core import (  # noqa: F401  (plain data, shared with the blocking API)
    CachedNode, ChildEvent, Compare, DeadLetter, Enqueued, Event, GetResponse, LeaderInfo, NodeEvent, Op,
    Participant, PrometheusMetrics, PutResponse, DeleteResponse, ServiceInstance, Subscription, Txn, TxnResponse,
    TypedCachedNode, TypedChildEvent, TypedNodeEvent, WatchResponse, KeyspaceEvent, ReapedKey, ReapReport,
)
from ._core import (  # noqa: F401  (plain data of the shared value and the group)
    GroupEvent, SharedValueEvent, TypedSharedValueEvent, TypedVersionedValue, VersionedValue,
)
from .codecs import Codec  # noqa: F401
from .errors import Closed, DecodeFailed, Timeout  # noqa: F401

__all__ = [
    "Client", "Lease", "Watch", "Hold", "LeaderTerm", "DistributedMutex", "DistributedReadWriteLock", "LockView",
    "DistributedSemaphore", "MultiLock", "MultiHold", "LeaderLatch", "LeaderSelector", "LeaderObserver",
    "DistributedQueue",
    "DistributedPriorityQueue", "DistributedWorkQueue", "WorkItem", "DistributedAtomicLong", "DistributedBarrier",
    "DistributedBarrierWithCount", "DistributedDoubleBarrier", "TransientKeyValue", "PathChildrenCache",
    "NodeCache", "ServiceRegistry", "ServiceCache", "ServiceDiscovery", "ServiceProvider", "Recipes", "Session",
    "run", "KeyspaceView", "EventStream", "watch_stream", "SharedValue", "GroupMember", "PresenceLease", "reap",
]


class Recipes(_blocking.Recipes):
    """etcd_recipes.Recipes making the asyncio twins (``recipes.mutex(name)`` is an
    etcd_recipes.aio.DistributedMutex, ...), with ``async with`` besides ``with``."""

    async def __aenter__(self) -> "Recipes":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


Recipes._kinds = sys.modules[__name__]
