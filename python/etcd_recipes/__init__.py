"""etcd_recipes: etcd v3 coordination recipes (locks, elections, queues, caches,
discovery, ...) over etcd-recipes' C++ asynchronous client.

Blocking API here; the asyncio twins (same names, ``await``/``async for``/
``async with``) are in :mod:`etcd_recipes.aio`; the test harness (real etcd
members, fault proxy) in :mod:`etcd_recipes.testing`. A module per recipe family
names the same classes: :mod:`etcd_recipes.locks`, ``.election``, ``.queues``,
``.barriers``, ``.counter``, ``.transient``, ``.caches``, ``.discovery``,
``.shared_value``, ``.group``.
What the library does in the background reaches :func:`set_log_sink` or, with
:func:`log_to_logging`, the :mod:`logging` logger ``etcd_recipes``
(:mod:`etcd_recipes.log`); it is silent otherwise. :class:`PresenceLease`
(:mod:`etcd_recipes.presence`) is a lease that heals, with the keys it owns.

Every blocking call releases the GIL while it waits and can be interrupted with
Ctrl-C (KeyboardInterrupt; the C++ call is cancelled). ``timeout`` arguments are
seconds; ``None`` means the client's default deadline for single calls and
"until done" for waits (acquire, dequeue, ...). Listeners run on the client's
executor thread, with the GIL.

Every recipe takes the keyword arguments ``client_id``, ``session``,
``session_factory`` (a callable returning a :class:`Session`, called whenever the
recipe needs a session: at first use and after one was lost; an exception it raises
fails that operation with an EtcdError that names it), ``session_ttl`` and ``metrics`` (a
:class:`PrometheusMetrics` or any object with ``add``/``observe``/``set``);
:class:`Recipes` states them once for many recipes.
Queues, work queues, transient keys and caches take ``codec=`` for typed values
(:mod:`etcd_recipes.codecs`).
"""

# The classes live in one module per family (client.py; locks.py, election.py,
# queues.py, coordination.py: counter, barriers and transient keys; caches.py,
# discovery.py; facade.py: Recipes) over _base.py, what the blocking classes and
# their asyncio twins (aio.py) share. This module names them.

from . import _core  # noqa: F401
from . import codecs, errors  # noqa: F401
from ._base import Bytes, Hold  # noqa: F401
from ._core import PrometheusMetrics  # the library's metrics, aggregated in C++ (render(): Prometheus text)
from .caches import (
    CachedNode, ChildEvent, NodeCache, NodeEvent, PathChildrenCache, TypedCachedNode, TypedChildEvent, TypedNodeEvent,
)
from .client import (
    Client, Compare, DeleteResponse, Event, GetResponse, KeyValue, Lease, LeaseGrantResponse, LeaseTimeToLiveResponse,
    Member, MemberListResponse, Op, PutResponse, ResponseHeader, Session, StatusResponse, Subscription, Txn,
    TxnResponse, Watch, WatchResponse,
)
from .codecs import Codec
from .coordination import (
    DistributedAtomicLong, DistributedBarrier, DistributedBarrierWithCount, DistributedDoubleBarrier, TransientKeyValue,
)
from .discovery import ServiceCache, ServiceDiscovery, ServiceInstance, ServiceProvider, ServiceRegistry
from .election import LeaderInfo, LeaderLatch, LeaderObserver, LeaderSelector, LeaderTerm, Participant
from .errors import Closed, DecodeFailed, EtcdError, HoldLost, InvalidArgument, Timeout
from .facade import Recipes
from .group import GroupEvent, GroupMember
from .log import LogRecord, log_to_logging, set_log_sink
from .presence import PresenceLease
from .locks import DistributedMutex, DistributedReadWriteLock, DistributedSemaphore, LockView, MultiHold, MultiLock
from .reaper import ReapedKey, ReapReport, reap
from .queues import DeadLetter, DistributedPriorityQueue, DistributedQueue, DistributedWorkQueue, Enqueued, WorkItem
from .view import EventStream, KeyspaceEvent, KeyspaceView, watch_stream
from .shared_value import (
    SharedValue, SharedValueEvent, TypedSharedValueEvent, TypedVersionedValue, VersionedValue,
)

__all__ = [
    "EtcdError", "HoldLost", "Timeout", "Closed", "InvalidArgument", "DecodeFailed", "codecs", "Codec",
    "Recipes", "PrometheusMetrics", "TypedCachedNode", "TypedChildEvent", "TypedNodeEvent",
    "Client", "Lease", "Session", "Watch", "Compare", "Op", "Txn", "Subscription",
    "KeyValue", "ResponseHeader", "GetResponse", "PutResponse", "DeleteResponse", "TxnResponse",
    "LeaseGrantResponse", "LeaseTimeToLiveResponse", "WatchResponse", "Event", "StatusResponse",
    "MemberListResponse", "Member",
    "Hold", "LeaderTerm", "DistributedMutex", "DistributedReadWriteLock", "LockView", "DistributedSemaphore",
    "MultiLock", "MultiHold",
    "LeaderLatch", "LeaderSelector", "LeaderObserver", "Participant", "LeaderInfo",
    "DistributedQueue", "DistributedPriorityQueue", "Enqueued", "DistributedWorkQueue", "WorkItem",
    "DeadLetter", "DistributedAtomicLong", "DistributedBarrier", "DistributedBarrierWithCount",
    "DistributedDoubleBarrier", "TransientKeyValue", "PathChildrenCache", "NodeCache", "CachedNode",
    "ChildEvent", "NodeEvent", "ServiceInstance", "ServiceRegistry", "ServiceCache", "ServiceProvider",
    "ServiceDiscovery", "KeyspaceView", "KeyspaceEvent", "EventStream", "watch_stream",
    "SharedValue", "VersionedValue", "SharedValueEvent", "TypedVersionedValue",
    "TypedSharedValueEvent", "GroupMember", "GroupEvent", "LogRecord", "set_log_sink", "log_to_logging",
    "PresenceLease", "reap", "ReapReport", "ReapedKey",
]
