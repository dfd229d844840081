"""etcd_recipes: etcd v3 coordination recipes (locks, elections, queues, caches,
discovery, ...) over etcd-recipes' C++ asynchronous client.

Blocking API here; the asyncio twins (same names, ``await``/``async for``/
``async with``) are in :mod:`etcd_recipes.aio`; the test harness (real etcd
members, fault proxy) in :mod:`etcd_recipes.testing`. A module per recipe family
names the same classes: :mod:`etcd_recipes.locks`, ``.election``, ``.queues``,
``.barriers``, ``.counter``, ``.transient``, ``.caches``, ``.discovery``.

Every blocking call releases the GIL while it waits and can be interrupted with
Ctrl-C (KeyboardInterrupt; the C++ call is cancelled). ``timeout`` arguments are
seconds; ``None`` means the client's default deadline for single calls and
"until done" for waits (acquire, dequeue, ...). Listeners run on the client's
executor thread, with the GIL.

Every recipe takes the keyword arguments ``client_id``, ``session``,
``session_ttl`` and ``metrics`` (a :class:`PrometheusMetrics` or any object with
``add``/``observe``/``set``); :class:`Recipes` states them once for many recipes.
Queues, work queues, transient keys and caches take ``codec=`` for typed values
(:mod:`etcd_recipes.codecs`).
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import errors
from .errors import Closed, DecodeFailed, EtcdError, HoldLost, InvalidArgument, Timeout
from . import _core
from . import codecs
from .codecs import Codec

Bytes = Union[str, bytes]

# Plain data the C++ side returns as is.
KeyValue = _core.KeyValue
ResponseHeader = _core.ResponseHeader
GetResponse = _core.GetResponse
PutResponse = _core.PutResponse
DeleteResponse = _core.DeleteResponse
TxnResponse = _core.TxnResponse
LeaseGrantResponse = _core.LeaseGrantResponse
LeaseTimeToLiveResponse = _core.LeaseTimeToLiveResponse
WatchResponse = _core.WatchResponse
Event = _core.Event
StatusResponse = _core.StatusResponse
MemberListResponse = _core.MemberListResponse
Member = _core.Member
Compare = _core.Compare
Op = _core.Op
Txn = _core.Txn
Subscription = _core.Subscription
Enqueued = _core.Enqueued
Participant = _core.Participant
LeaderInfo = _core.LeaderInfo
DeadLetter = _core.DeadLetter
CachedNode = _core.CachedNode
ChildEvent = _core.ChildEvent
NodeEvent = _core.NodeEvent
# The same three for a cache with a codec: `value` is the decoded object (and
# raises DecodeFailed for a value that did not decode).
TypedCachedNode = _core.TypedCachedNode
TypedChildEvent = _core.TypedChildEvent
TypedNodeEvent = _core.TypedNodeEvent
ServiceInstance = _core.ServiceInstance
# The library's metrics, aggregated in C++ (render() gives Prometheus text).
PrometheusMetrics = _core.PrometheusMetrics

__all__ = [
    "EtcdError", "HoldLost", "Timeout", "Closed", "InvalidArgument", "DecodeFailed", "codecs", "Codec",
    "Recipes", "PrometheusMetrics", "TypedCachedNode", "TypedChildEvent", "TypedNodeEvent",
    "Client", "Lease", "Session", "Watch", "Compare", "Op", "Txn", "Subscription",
    "KeyValue", "ResponseHeader", "GetResponse", "PutResponse", "DeleteResponse", "TxnResponse",
    "LeaseGrantResponse", "LeaseTimeToLiveResponse", "WatchResponse", "Event", "StatusResponse",
    "MemberListResponse", "Member",
    "Hold", "LeaderTerm", "DistributedMutex", "DistributedReadWriteLock", "LockView", "DistributedSemaphore",
    "LeaderLatch", "LeaderSelector", "LeaderObserver", "Participant", "LeaderInfo",
    "DistributedQueue", "DistributedPriorityQueue", "Enqueued", "DistributedWorkQueue", "WorkItem",
    "DeadLetter", "DistributedAtomicLong", "DistributedBarrier", "DistributedBarrierWithCount",
    "DistributedDoubleBarrier", "TransientKeyValue", "PathChildrenCache", "NodeCache", "CachedNode",
    "ChildEvent", "NodeEvent", "ServiceInstance", "ServiceRegistry", "ServiceCache", "ServiceProvider",
    "ServiceDiscovery",
]


def _keep(owner: Any, sub: Subscription) -> Subscription:
    """Keeps a listener registered for as long as ``owner`` lives, unless
    ``sub.cancel()`` is called: dropping the returned Subscription (the usual
    ``cache.on_event(f)`` without keeping the result) must not unregister it,
    as destroying a C++ Subscription would."""
    owner.__dict__.setdefault("_subscriptions", []).append(sub)
    return sub


# --- client -----------------------------------------------------------------------


class Client:
    """An etcd v3 client: KV, Txn, leases, watches. Cheap to share between threads.

    ``Client(endpoints=["127.0.0.1:2379"], namespace="app/", user=..., password=...,
    ca_file=..., cert_file=..., key_file=...)``. The constructor does no I/O;
    a bad endpoint raises InvalidArgument.
    """

    def __init__(
        self,
        endpoints: Union[str, Sequence[str]],
        *,
        timeout: Optional[float] = None,
        namespace: str = "",
        user: Optional[str] = None,
        password: Optional[str] = None,
        ca_file: Optional[str] = None,
        cert_file: Optional[str] = None,
        key_file: Optional[str] = None,
        server_name: Optional[str] = None,
        tls: bool = False,
        callback_threads: int = 2,
    ) -> None:
        """Connects lazily to ``endpoints`` (a list, or one comma-separated string of host:port).

        ``timeout``: the deadline of a call given none (seconds; default 5). ``namespace``: a key prefix
        every call lives under, invisibly. ``user``/``password``: etcd authentication. ``ca_file``,
        ``cert_file``, ``key_file``, ``server_name``, ``tls``: TLS. ``callback_threads``: the threads
        listeners run on.
        """
        if isinstance(endpoints, str):
            endpoints = [e for e in endpoints.split(",") if e]
        self._c = _core.Client(
            list(endpoints), timeout=timeout, namespace=namespace, user=user, password=password,
            ca_file=ca_file, cert_file=cert_file, key_file=key_file, server_name=server_name, tls=tls,
            callback_threads=callback_threads)

    # KV
    def get(self, key: Bytes, *, prefix: bool = False, range_end: Bytes = b"", limit: int = 0, revision: int = 0,
            keys_only: bool = False, count_only: bool = False, serializable: bool = False, sort_order: int = 0,
            sort_target: int = 0, timeout: Optional[float] = None) -> GetResponse:
        """Reads ``key``, every key under it with ``prefix``, or [key, range_end); the GetResponse."""
        return self._c.get(key, prefix=prefix, range_end=range_end, limit=limit, revision=revision,
                           keys_only=keys_only, count_only=count_only, serializable=serializable,
                           sort_order=sort_order, sort_target=sort_target).wait(timeout)

    def put(self, key: Bytes, value: Bytes, *, lease: int = 0, prev_kv: bool = False, ignore_value: bool = False,
            ignore_lease: bool = False, timeout: Optional[float] = None) -> PutResponse:
        """Writes ``value`` at ``key`` (under ``lease``, with ``prev_kv`` the value it replaced)."""
        return self._c.put(key, value, lease=lease, prev_kv=prev_kv, ignore_value=ignore_value,
                           ignore_lease=ignore_lease).wait(timeout)

    def delete(self, key: Bytes, *, prefix: bool = False, range_end: Bytes = b"", prev_kv: bool = False,
               timeout: Optional[float] = None) -> DeleteResponse:
        """Deletes ``key``, every key under it with ``prefix``, or [key, range_end); the DeleteResponse."""
        return self._c.delete(key, prefix=prefix, range_end=range_end, prev_kv=prev_kv).wait(timeout)

    def txn(self, txn: Txn, *, timeout: Optional[float] = None) -> TxnResponse:
        """Runs the transaction: its compares, then one branch; the TxnResponse."""
        return self._c.txn(txn).wait(timeout)

    def compact(self, revision: int, *, physical: bool = False, timeout: Optional[float] = None) -> Any:
        """Compacts etcd's history up to ``revision`` (``physical``: wait until it is removed from disk)."""
        return self._c.compact(revision, physical=physical).wait(timeout)

    # Leases
    def lease_grant(self, ttl: float, *, id: int = 0, timeout: Optional[float] = None) -> LeaseGrantResponse:
        """Grants a lease of ``ttl`` seconds (not kept alive: see lease())."""
        return self._c.lease_grant(ttl, id=id).wait(timeout)

    def lease_revoke(self, id: int, *, timeout: Optional[float] = None) -> Any:
        """Revokes lease ``id``: its keys are deleted."""
        return self._c.lease_revoke(id).wait(timeout)

    def lease_time_to_live(self, id: int, *, keys: bool = False,
                           timeout: Optional[float] = None) -> LeaseTimeToLiveResponse:
        """The lease's remaining and granted TTL (and its keys, with ``keys``)."""
        return self._c.lease_time_to_live(id, keys=keys).wait(timeout)

    def lease_leases(self, *, timeout: Optional[float] = None) -> List[int]:
        """The ids of every lease etcd holds."""
        return list(self._c.lease_leases().wait(timeout).leases)

    def lease(self, ttl: float, *, timeout: Optional[float] = None) -> "Lease":
        """Grants a lease kept alive while the returned Lease lives (or until revoke())."""
        return Lease(self._c.lease(ttl).wait(timeout))

    # Watches
    def watch(self, key: Bytes, *, prefix: bool = False, range_end: Bytes = b"", start_revision: int = 0,
              prev_kv: bool = False, progress_notify: bool = False, filter_puts: bool = False,
              filter_deletes: bool = False) -> "Watch":
        """A watch: iterate it for WatchResponses, in revision order, without loss across reconnects."""
        return self._watch_type(
            self._c.watch(key, prefix=prefix, range_end=range_end, start_revision=start_revision, prev_kv=prev_kv,
                          progress_notify=progress_notify, filter_puts=filter_puts, filter_deletes=filter_deletes))

    # Cluster
    def status(self, endpoint: str = "", *, timeout: Optional[float] = None) -> StatusResponse:
        """The status of the member calls go to, or of ``endpoint``."""
        return self._c.status(endpoint).wait(timeout)

    def member_list(self, *, timeout: Optional[float] = None) -> MemberListResponse:
        """The cluster's members."""
        return self._c.member_list().wait(timeout)

    def ping(self, *, timeout: Optional[float] = None) -> None:
        """A linearizable read: returns once a quorum answered (raises otherwise)."""
        self._c.ping().wait(timeout)

    @property
    def state(self) -> str:
        """CONNECTED, SUSPENDED, RECONNECTED or LOST."""
        return self._c.state

    def on_state_change(self, listener: Callable[[str], None]) -> Subscription:
        """Runs ``listener`` with the connection's new state ("CONNECTED", "SUSPENDED", ...) at every change."""
        return _keep(self, self._c.on_state_change(listener))

    @property
    def endpoints(self) -> List[str]:
        """The endpoints given, in order."""
        return list(self._c.endpoints)

    @property
    def namespace(self) -> str:
        """The key prefix every call lives under ("" for none)."""
        return self._c.namespace

    def stats(self) -> Dict[str, int]:
        """The client's counters (RPCs, retries, failovers, watches, leases)."""
        return self._c.stats()

    def close(self) -> None:
        """Refuses new calls (Closed), cancels watches and keep-alives. Idempotent."""
        self._c.close()

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._c.closed

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Lease:
    """A granted lease, kept alive over the client's one keep-alive stream."""

    def __init__(self, core: Any) -> None:
        """A kept-alive lease, as Client.lease() returns it."""
        self._c = core

    @property
    def id(self) -> int:
        """The lease id."""
        return self._c.id

    @property
    def ttl(self) -> int:
        """The TTL granted, in seconds."""
        return self._c.ttl

    @property
    def alive(self) -> bool:
        """True while renewals succeed."""
        return self._c.alive

    def on_lost(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with the reason when the lease is lost (expired, revoked)."""
        return _keep(self, self._c.on_lost(listener))

    def revoke(self, *, timeout: Optional[float] = None) -> None:
        """Revokes the lease: its keys are deleted."""
        self._c.revoke().wait(timeout)

    def detach(self) -> None:
        """Stops renewing without revoking: the lease expires after its TTL."""
        self._c.detach()

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._c.alive:
            self._c.revoke().wait(None)


class Session:
    """A lease shared by recipes for their exclusive holds (pass ``session=`` to a recipe)."""

    def __init__(self, client: Client, *, ttl: float = 10.0) -> None:
        """A lease of ``ttl`` seconds for recipes to share (not granted until start() or first use)."""
        self._c = _core.Session(client._c, ttl=ttl)

    def start(self, *, timeout: Optional[float] = None) -> None:
        """Grants the lease now instead of at first use."""
        self._c.start().wait(timeout)

    def close(self, *, timeout: Optional[float] = None) -> None:
        """Revokes the lease: every hold under it ends."""
        self._c.close().wait(timeout)

    @property
    def lease_id(self) -> int:
        """The lease id (0 before it is granted)."""
        return self._c.lease_id

    @property
    def alive(self) -> bool:
        """True while the lease is kept alive."""
        return self._c.alive


class Watch:
    """Iterate for WatchResponses; ``cancel()`` (or leaving ``with``) ends the iteration.

    The watch's final error (e.g. reason ``resync_needed``) is raised by the iteration.
    """

    def __init__(self, core: Any) -> None:
        """A watch, as Client.watch() returns it."""
        self._c = core

    def __iter__(self) -> Iterator[WatchResponse]:
        return self

    def __next__(self) -> WatchResponse:
        return self._c.next(None)

    def get(self, timeout: Optional[float] = None) -> Optional[WatchResponse]:
        """The next response, or None when ``timeout`` ran out. StopIteration once cancelled."""
        return self._c.next(timeout)

    def events(self) -> Iterator[Event]:
        """Every event of every response, in order."""
        for response in self:
            yield from response.events

    def wait_created(self, timeout: float = 5.0) -> bool:
        """True once etcd confirmed the watch; False when ``timeout`` ran out."""
        return self._c.wait_created(timeout)

    def cancel(self) -> None:
        """Ends the watch: the iteration stops."""
        self._c.cancel()

    @property
    def delivered_revision(self) -> int:
        """Every event up to this revision has been delivered."""
        return self._c.delivered_revision

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cancel()


Client._watch_type = Watch  # the asyncio Client makes asyncio Watches


# --- recipes: what they share -----------------------------------------------------


def _opts(client_id: Optional[str], session: Optional[Session], session_ttl: Optional[float],
          metrics: Any, contender_layout: str = "go") -> Dict[str, Any]:
    """The options keyword of every recipe of the core."""
    return {"options": _core.RecipeOptions(client_id=client_id,
                                           session=session._c if session is not None else None,
                                           session_ttl=session_ttl, metrics=metrics,
                                           contender_layout=contender_layout)}


def _typed(codec: Optional[Codec]) -> Optional[Codec]:
    """The codec a recipe must run, or None for bytes as stored (no codec, or
    BYTES: the bytes recipes, with no Python per value)."""
    if codec is None or codec is codecs.BYTES:
        return None
    if not (callable(getattr(codec, "encode", None)) and callable(getattr(codec, "decode", None))):
        raise InvalidArgument(f"codec must have encode(value) -> bytes and decode(bytes) -> value (got {codec!r})",
                              "INVALID_ARGUMENT", 3, "bad_argument")
    return codec


class _Recipe:
    """The one lifecycle of every recipe (docs/recipes.md): no I/O in the
    constructor, start() is optional for most, close() is idempotent."""

    _c: Any

    @property
    def _life(self) -> Any:
        """The core that carries this object's lifecycle: its own (a lock
        side's: its lock's)."""
        return self._c

    @property
    def name(self) -> str:
        """The recipe's name (its key or prefix)."""
        return self._life.name

    @property
    def identity(self) -> str:
        """This object's identity in etcd (the client_id, or one made up)."""
        return self._life.identity

    def start(self) -> None:
        """Starts background work now instead of at first use (most recipes need no start())."""
        self._life.start()

    def close(self) -> None:
        """Ends the recipe: releases what it holds, stops its background work. Idempotent."""
        self._life.close()

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._life.closed

    @property
    def state(self) -> str:
        """The connection's state as the recipe sees it: "CONNECTED", "SUSPENDED", "RECONNECTED" or "LOST"."""
        return self._life.state

    def errors(self) -> List[EtcdError]:
        """The errors background work recorded, oldest first."""
        return self._life.errors()

    def on_state_change(self, listener: Callable[[str], None]) -> Subscription:
        """Runs ``listener`` with the new state (see ``state``) at every change."""
        return _keep(self, self._life.on_state_change(listener))

    def on_error(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with each error background work records."""
        return _keep(self, self._life.on_error(listener))


class _HoldBase:
    """An exclusive hold (lock, rwlock side, permit, leadership term): key,
    fencing token, loss. Falsy when empty."""

    def __init__(self, core: Any) -> None:
        self._c = core

    @property
    def key(self) -> str:
        """The key that holds it."""
        return self._c.key

    @property
    def token(self) -> int:
        """The fencing token: strictly increases from one holder to the next."""
        return self._c.token

    @property
    def lease(self) -> int:
        """The lease the hold lives under."""
        return self._c.lease

    @property
    def is_held(self) -> bool:
        """True until the hold ends (released or lost)."""
        return self._c.is_held

    @property
    def ended(self) -> bool:
        """True once the hold was lost or released (the C++ stop_token)."""
        return self._c.ended

    def on_lost(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with the reason if the hold is lost (not when released)."""
        return _keep(self, self._c.on_lost(listener))

    def __bool__(self) -> bool:
        return self._c.valid

    def __repr__(self) -> str:
        return repr(self._c)


class Hold(_HoldBase):
    def guarded(self, txn: Txn, *, timeout: Optional[float] = None) -> TxnResponse:
        """Runs ``txn`` only while the hold is intact, atomically; HoldLost otherwise."""
        return self._c.guarded(txn).wait(timeout)

    def release(self, *, timeout: Optional[float] = None) -> bool:
        """True if the hold was still intact, False if it had been lost."""
        return self._c.release().wait(timeout)

    def __enter__(self) -> "Hold":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _hold(core: Any) -> Optional[Hold]:
    return Hold(core) if core is not None else None


class _LockBase(_Recipe):
    """acquire/try_acquire/release and ``with lock:`` (DistributedMutex, rwlock sides)."""

    @property
    def hold(self) -> Optional[Hold]:
        """The current hold, or None."""
        return _hold(self._c.hold)

    @property
    def is_held(self) -> bool:
        """True while this object holds the lock."""
        return self._c.is_held

    def on_lost(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with the reason if a hold is lost."""
        return _keep(self, self._c.on_lost(listener))


class _Lock(_LockBase):
    def acquire(self, timeout: Optional[float] = None) -> Hold:
        """Waits until held; Timeout when ``timeout`` ran out."""
        return Hold(self._c.acquire().wait(timeout))

    def try_acquire(self, timeout: Optional[float] = None) -> Optional[Hold]:
        """The hold if it can be had now (or within ``timeout``), else None."""
        if timeout is None:
            return _hold(self._c.try_acquire().wait(None))
        return _hold(self._c.acquire().wait_or_none(timeout))

    def release(self, *, timeout: Optional[float] = None) -> bool:
        """Releases the current hold; False if there was none."""
        return self._c.release().wait(timeout)

    def __enter__(self) -> Hold:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


class DistributedMutex(_Lock):
    """Mutual exclusion across processes, with fencing; interoperates with ``etcdctl lock``.

    ``with mutex as hold: write(hold.token)``.
    """

    def __init__(self, client: Client, name: str, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None,
                 layout: str = "go") -> None:
        """The mutex named ``name`` (a key prefix). client_id, session, session_ttl, metrics: the options every
        recipe takes (see the package's docstring). ``layout``: ``"go"`` (etcd's Go concurrency layout, that of
        ``etcdctl lock``; each acquisition costs etcd O(waiters)) or ``"ordered"`` (keys in commit order: the
        same cost at any number of waiters, mutexes may share a session; still excludes together with ``"go"``
        contenders and ``etcdctl lock``).
        """
        self._c = _core.DistributedMutex(client._c, name, **_opts(client_id, session, session_ttl, metrics, layout))


class LockView(_Lock):
    """One side of a DistributedReadWriteLock (``rw.read_lock`` / ``rw.write_lock``)."""

    def __init__(self, core: Any, owner: Any) -> None:
        """One side of ``owner`` (a DistributedReadWriteLock); made by it, not by you."""
        self._c = core
        self._owner = owner

    @property
    def _life(self) -> Any:
        return self._owner


class DistributedReadWriteLock(_Recipe):
    """Many readers or one writer, fair to writers: ``with rw.read_lock:`` / ``with rw.write_lock:``."""

    def __init__(self, client: Client, name: str, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None,
                 layout: str = "go") -> None:
        """The read-write lock named ``name``. client_id, session, session_ttl, metrics: the options every recipe
        takes (see the package's docstring). ``layout``: ``"go"`` or ``"ordered"``, as for DistributedMutex.
        """
        self._c = _core.DistributedReadWriteLock(client._c, name,
                                                 **_opts(client_id, session, session_ttl, metrics, layout))
        self._read_lock = self._lock_view(self._c.read_lock, self._c)
        self._write_lock = self._lock_view(self._c.write_lock, self._c)

    _lock_view = LockView

    @property
    def read_lock(self) -> LockView:
        """The shared side: any number of readers hold it at once, never with a writer."""
        return self._read_lock

    @property
    def write_lock(self) -> LockView:
        """The exclusive side: one writer, no readers."""
        return self._write_lock

    def downgrade(self, *, timeout: Optional[float] = None) -> None:
        """Turns the write hold into a read hold, atomically, keeping its place."""
        self._c.downgrade().wait(timeout)


class DistributedSemaphore(_Recipe):
    """At most ``permits`` holders across processes: ``with sem.acquire() as permit:`` or ``with sem:``."""

    def __init__(self, client: Client, name: str, permits: int, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The semaphore ``name`` with ``permits`` permits (every user must give the same number). client_id,
        session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _core.DistributedSemaphore(client._c, name, permits,
                                             **_opts(client_id, session, session_ttl, metrics))
        self._entered: List[Hold] = []

    @property
    def permits(self) -> int:
        """The number of permits."""
        return self._c.permits

    def acquire(self, timeout: Optional[float] = None) -> Hold:
        """Waits for a permit; Timeout when ``timeout`` ran out."""
        return Hold(self._c.acquire().wait(timeout))

    def try_acquire(self, timeout: Optional[float] = None) -> Optional[Hold]:
        """A permit if one is free now (None otherwise); with ``timeout``, waits up to that long."""
        if timeout is None:
            return _hold(self._c.try_acquire().wait(None))
        return _hold(self._c.acquire().wait_or_none(timeout))

    def available_permits(self, *, timeout: Optional[float] = None) -> int:
        """How many permits are free now (advisory)."""
        return self._c.available_permits().wait(timeout)

    def __enter__(self) -> Hold:
        permit = self.acquire()
        self._entered.append(permit)
        return permit

    def __exit__(self, *exc: Any) -> None:
        self._entered.pop().release()


# --- elections ------------------------------------------------------------------------


class LeaderTerm(Hold):
    """A leader's term: a Hold whose token is the term token."""

    @property
    def stop_requested(self) -> bool:
        """True once the term was asked to stop (lost, interrupted, resigned, closed)."""
        return self._c.stop_requested

    @property
    def end(self) -> Optional[str]:
        """Why the term is ending (lost, interrupted, resigned, closed), None while it goes on."""
        return self._c.end

    def proclaim(self, value: Bytes, *, timeout: Optional[float] = None) -> None:
        """Replaces the value the leader key carries while this term is current."""
        self._c.proclaim(value).wait(timeout)


class LeaderLatch(_Recipe):
    """Leader election: start() contends in the background; ``with latch:`` starts and closes."""

    def __init__(self, client: Client, name: str, value: Bytes = "", *, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None,
                 layout: str = "go") -> None:
        """A candidate for leadership of ``name``, proclaiming ``value`` while it leads. client_id, session,
        session_ttl, metrics: the options every recipe takes (see the package's docstring). ``layout``: ``"go"``
        (that of ``etcdctl elect``) or ``"ordered"`` (the same cost per term at any number of candidates; still one
        election with ``"go"`` candidates and ``etcdctl elect``).
        """
        self._c = _core.LeaderLatch(client._c, name, value, **_opts(client_id, session, session_ttl, metrics, layout))

    def await_leadership(self, timeout: Optional[float] = None) -> bool:
        """True once this object leads; False when ``timeout`` ran out."""
        return bool(self._c.await_leadership().wait_or_none(timeout))

    @property
    def is_leader(self) -> bool:
        """True while this object leads (no I/O)."""
        return self._c.is_held

    @property
    def hold(self) -> Optional[Hold]:
        """The leadership's Hold while leading (key, token, on_lost, guarded), else None."""
        return _hold(self._c.hold)

    def proclaim(self, value: Bytes, *, timeout: Optional[float] = None) -> None:
        """Replaces the value the leader key carries (while leading)."""
        self._c.proclaim(value).wait(timeout)

    def resign(self, *, timeout: Optional[float] = None) -> bool:
        """Gives up leadership and the candidacy; whether it led."""
        return self._c.resign().wait(timeout)

    def participants(self, *, timeout: Optional[float] = None) -> List[Participant]:
        """Every candidate, the leader first."""
        return self._c.participants().wait(timeout)

    def leader(self, *, timeout: Optional[float] = None) -> Optional[LeaderInfo]:
        """The current leader as etcd has it, or None."""
        return self._c.leader().wait(timeout)

    def on_is_leader(self, listener: Callable[[int], None]) -> Subscription:
        """Runs ``listener`` with the term (the leader key's create revision) when this object becomes leader."""
        return _keep(self, self._c.on_is_leader(listener))

    def on_not_leader(self, listener: Callable[[Optional[EtcdError]], None]) -> Subscription:
        """Runs ``listener`` (with the reason, or None for a resign) when this object stops leading."""
        return _keep(self, self._c.on_not_leader(listener))

    def on_lost(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with the reason when leadership is lost."""
        return _keep(self, self._c.on_lost(listener))

    def __enter__(self) -> "LeaderLatch":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Leadership:
    def __init__(self, selector: "LeaderSelector", timeout: Optional[float]) -> None:
        self._selector = selector
        self._timeout = timeout

    def __enter__(self) -> LeaderTerm:
        term = self._selector._c.wait_term(self._timeout)
        if term is None:
            raise Timeout("leadership: the timeout ran out", "DEADLINE_EXCEEDED", 4)
        return LeaderTerm(term)

    def __exit__(self, *exc: Any) -> None:
        self._selector._c.end_term()


class LeaderSelector(_Recipe):
    """Leader election by terms.

    Without a callback: ``with selector.leadership() as term: ...`` waits until this
    candidate leads, and the term ends (the leader key is deleted) when the block
    exits. With ``callback(term)``: start() runs it once per term on the selector's
    thread (with the GIL), re-queueing after each term.
    """

    def __init__(self, client: Client, name: str, value: Bytes = "",
                 callback: Optional[Callable[[Any], None]] = None, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None,
                 layout: str = "go") -> None:
        """Leadership of ``name`` with a callback: ``callback(term)`` runs while this object leads; the term
        ends when it returns. ``value``: what the leader key carries.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        ``layout``: ``"go"`` or ``"ordered"``, as for LeaderLatch.
        """
        wrapped = None if callback is None else (lambda term: callback(LeaderTerm(term)))
        self._c = _core.LeaderSelector(client._c, name, value, wrapped,
                                       **_opts(client_id, session, session_ttl, metrics, layout))

    def leadership(self, timeout: Optional[float] = None) -> _Leadership:
        """``with selector.leadership() as term:``: stands, waits up to ``timeout`` for a term, ends it on exit."""
        return _Leadership(self, timeout)

    def interrupt(self) -> None:
        """Requests the current term to stop (term.stop_requested becomes True)."""
        self._c.interrupt()

    def resign(self) -> None:
        """Ends the current term and the candidacy."""
        self._c.resign()

    def requeue(self) -> bool:
        """Stands again after the current term; False if closed."""
        return self._c.requeue()

    def set_auto_requeue(self, on: bool) -> None:
        """Whether to stand again after each term."""
        self._c.set_auto_requeue(on)

    @property
    def terms(self) -> int:
        """How many terms this object has led."""
        return self._c.terms

    @property
    def is_leader(self) -> bool:
        """True while a term of this object runs."""
        return self._c.is_held

    def on_term_end(self, listener: Callable[[str, Optional[EtcdError]], None]) -> Subscription:
        """Runs ``listener(how, error)`` when a term ends (how: "returned", "threw", "lost", ...)."""
        return _keep(self, self._c.on_term_end(listener))

    def participants(self, *, timeout: Optional[float] = None) -> List[Participant]:
        """Every candidate, the leader first."""
        return self._c.participants().wait(timeout)

    def leader(self, *, timeout: Optional[float] = None) -> Optional[LeaderInfo]:
        """The current leader as etcd has it, or None."""
        return self._c.leader().wait(timeout)


class LeaderObserver(_Recipe):
    """Follows an election's leader without taking part."""

    def __init__(self, client: Client, name: str, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """Follows the leader of election ``name`` without standing. client_id, session, session_ttl, metrics: the
        options every recipe takes (see the package's docstring).
        """
        self._c = _core.LeaderObserver(client._c, name, **_opts(client_id, session, session_ttl, metrics))

    def wait_initialized(self, timeout: Optional[float] = None) -> bool:
        """True once the first read is loaded; False when ``timeout`` ran out."""
        return bool(self._c.wait_initialized().wait_or_none(timeout))

    @property
    def current(self) -> Optional[LeaderInfo]:
        """The leader as last seen (no I/O), or None."""
        return self._c.current

    def on_change(self, listener: Callable[[Optional[LeaderInfo]], None]) -> Subscription:
        """Runs ``listener`` with the new leader (or None) at every change."""
        return _keep(self, self._c.on_change(listener))

    def leader(self, *, timeout: Optional[float] = None) -> Optional[LeaderInfo]:
        """The leader as etcd has it now, or None."""
        return self._c.leader().wait(timeout)

    def __enter__(self) -> "LeaderObserver":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# --- queues ---------------------------------------------------------------------------


class _QueueBase(_Recipe):
    def size(self, *, timeout: Optional[float] = None) -> int:
        """How many items there are (advisory: others enqueue and take meanwhile)."""
        return self._c.size().wait(timeout)


class _Queue(_QueueBase):
    """Values are bytes, or what the queue's codec decodes.

    With a codec, an item whose value does not decode (poison) is never taken:
    the dequeue that meets it raises DecodeFailed naming its key, the item stays
    in the queue (remove it with ``etcdctl del`` or a queue without the codec),
    this object skips it from then on, and on_poison listeners hear of it.
    """

    def dequeue(self, timeout: Optional[float] = None) -> Any:
        """Takes the head item; waits while empty. Timeout when ``timeout`` ran out."""
        return self._c.dequeue().wait(timeout)

    def try_dequeue(self, timeout: Optional[float] = None) -> Any:
        """The head item if there is one now (or within ``timeout``), else None."""
        if timeout is None:
            return self._c.try_dequeue().wait(None)
        return self._c.dequeue().wait_or_none(timeout)

    def __iter__(self) -> Iterator[Any]:
        """Items as they come, forever; ends when the queue is closed.

        A poison item raises DecodeFailed from the iteration (the queue skips it
        from then on: iterating again goes on with the next item).
        """
        while True:
            try:
                yield self._c.dequeue().wait(None)
            except Closed:
                return

    def on_poison(self, listener: Callable[[str, DecodeFailed], None]) -> Subscription:
        """Runs with (key, DecodeFailed) for each item whose value does not decode
        (never for a queue without a codec)."""
        return _keep(self, self._c.on_poison(listener))


class DistributedQueue(_Queue):
    """FIFO by commit order; each item to exactly one consumer."""

    def __init__(self, client: Client, name: str, *, codec: Optional[Codec] = None, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The FIFO queue under ``name``; ``codec`` for typed values. client_id, session, session_ttl, metrics: the
        options every recipe takes (see the package's docstring).
        """
        self._c = _queue_core(client, name, codec, _opts(client_id, session, session_ttl, metrics))

    def enqueue(self, value: Any, *, timeout: Optional[float] = None) -> Enqueued:
        """Adds ``value`` at the tail in one Txn."""
        return self._c.enqueue(value).wait(timeout)

    def enqueue_all(self, values: Sequence[Any], *, timeout: Optional[float] = None) -> Enqueued:
        """Adds every value, in order, in one Txn: all or nothing."""
        return self._c.enqueue_all(list(values)).wait(timeout)


class DistributedPriorityQueue(_Queue):
    """Lowest priority (0..65535) first, FIFO within a priority."""

    def __init__(self, client: Client, name: str, *, codec: Optional[Codec] = None, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The priority queue under ``name``; ``codec`` for typed values. client_id, session, session_ttl, metrics:
        the options every recipe takes (see the package's docstring).
        """
        self._c = _priority_queue_core(client, name, codec, _opts(client_id, session, session_ttl, metrics))

    def enqueue(self, value: Any, priority: int, *, timeout: Optional[float] = None) -> Enqueued:
        """Adds ``value`` at ``priority`` (0..65535, lower first) in one Txn."""
        return self._c.enqueue(value, priority).wait(timeout)

    def enqueue_all(self, values: Sequence[Any], priority: int, *,
                    timeout: Optional[float] = None) -> Enqueued:
        """Adds every value at ``priority``, in order, in one Txn: all or nothing."""
        return self._c.enqueue_all(list(values), priority).wait(timeout)


# The cores of the recipes that take a codec: the typed one (values through
# the codec, in C++'s typed recipe) or the bytes one. Shared with aio.
def _queue_core(client: Client, name: str, codec: Optional[Codec], opts: Dict[str, Any]) -> Any:
    typed = _typed(codec)
    if typed is None:
        return _core.DistributedQueue(client._c, name, **opts)
    return _core.TypedQueue(client._c, name, typed, **opts)


def _priority_queue_core(client: Client, name: str, codec: Optional[Codec], opts: Dict[str, Any]) -> Any:
    typed = _typed(codec)
    if typed is None:
        return _core.DistributedPriorityQueue(client._c, name, **opts)
    return _core.TypedPriorityQueue(client._c, name, typed, **opts)


def _work_queue_core(client: Client, name: str, codec: Optional[Codec], visibility_timeout: float,
                     max_deliveries: int, opts: Dict[str, Any]) -> Any:
    typed = _typed(codec)
    if typed is None:
        return _core.DistributedWorkQueue(client._c, name, visibility_timeout=visibility_timeout,
                                          max_deliveries=max_deliveries, **opts)
    return _core.TypedWorkQueue(client._c, name, typed, visibility_timeout=visibility_timeout,
                                max_deliveries=max_deliveries, **opts)


class _WorkItemBase:
    def __init__(self, core: Any) -> None:
        self._c = core
        self._settled = False

    @property
    def value(self) -> Any:
        """The payload: bytes, or what the queue's codec decoded."""
        return self._c.value

    @property
    def id(self) -> str:
        """The item's id (stable across deliveries)."""
        return self._c.id

    @property
    def key(self) -> str:
        """The item's key in etcd."""
        return self._c.key

    @property
    def attempt(self) -> int:
        """Which delivery this is (1 for the first)."""
        return self._c.attempt

    @property
    def lost(self) -> bool:
        """True once the claim was lost (the item may be redelivered to someone else)."""
        return self._c.lost


class WorkItem(_WorkItemBase):
    """A claimed item: ack() when done, requeue() to give it back.

    ``with item:`` acks when the block succeeds and requeues when it raises.
    """

    def ack(self, *, timeout: Optional[float] = None) -> bool:
        """True if acked under this claim; False if it was redelivered meanwhile."""
        self._settled = True
        return self._c.ack().wait(timeout)

    def requeue(self, delay: Optional[float] = None, *, timeout: Optional[float] = None) -> bool:
        """Gives the item back, delivered again after ``delay`` seconds; False if the claim was lost."""
        self._settled = True
        return self._c.requeue(delay).wait(timeout)

    def __enter__(self) -> "WorkItem":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if self._settled:
            return
        if exc_type is None:
            self.ack()
        else:
            self.requeue()


class _WorkQueueBase(_QueueBase):
    def dead_letters(self, *, timeout: Optional[float] = None) -> List[DeadLetter]:
        """The dead letters: items delivered max_deliveries times, with why."""
        return self._c.dead_letters().wait(timeout)


class DistributedWorkQueue(_WorkQueueBase):
    """At-least-once work: claims bound to the consumer's lease (the visibility timeout),
    dead letters after ``max_deliveries``.

    With a codec, an item whose value does not decode (poison) is not delivered:
    it goes to the dead letters at once (reason ``poison: ...`` naming the key),
    is recorded in errors() and told to on_error listeners; receive() waits on
    for the next item.
    """

    def __init__(self, client: Client, name: str, *, visibility_timeout: float = 30.0, max_deliveries: int = 5,
                 codec: Optional[Codec] = None, client_id: Optional[str] = None, session: Optional[Session] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The work queue under ``name``. ``visibility_timeout``: how long a dead consumer's items stay
        hidden (its lease TTL, seconds). ``max_deliveries``: deliveries before an item is dead-lettered.
        ``codec`` for typed values.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _work_queue_core(client, name, codec, visibility_timeout, max_deliveries,
                                   _opts(client_id, session, session_ttl, metrics))

    def enqueue(self, value: Any, *, delay: float = 0.0, timeout: Optional[float] = None) -> Enqueued:
        """Adds ``value``, delivered after ``delay`` seconds."""
        return self._c.enqueue(value, delay=delay).wait(timeout)

    def enqueue_all(self, values: Sequence[Any], *, delay: float = 0.0,
                    timeout: Optional[float] = None) -> Enqueued:
        """Adds every value, in order, in one Txn (all or nothing), delivered after ``delay``."""
        return self._c.enqueue_all(list(values), delay=delay).wait(timeout)

    def receive(self, *, timeout: Optional[float] = None) -> WorkItem:
        """Claims the next item; waits while none is ready. Timeout when ``timeout`` ran out."""
        return WorkItem(self._c.receive().wait(timeout))

    def try_receive(self, *, timeout: Optional[float] = None) -> Optional[WorkItem]:
        """Claims an item if one is ready now (None otherwise); with ``timeout``,
        waits up to that long for one."""
        if timeout is None:
            core = self._c.try_receive().wait(None)
        else:
            core = self._c.receive().wait_or_none(timeout)
        return WorkItem(core) if core is not None else None

    def items(self) -> Iterator[WorkItem]:
        """Claimed items as they come; ends when the queue is closed. Ack each one."""
        while True:
            try:
                yield WorkItem(self._c.receive().wait(None))
            except Closed:
                return

    __iter__ = items

    def requeue_dead(self, id: str, *, timeout: Optional[float] = None) -> bool:
        """Puts dead letter ``id`` back in the queue, its deliveries counted from 0; False if there was none."""
        return self._c.requeue_dead(id).wait(timeout)

    def purge_dead(self, id: str, *, timeout: Optional[float] = None) -> bool:
        """Deletes dead letter ``id``; False if there was none."""
        return self._c.purge_dead(id).wait(timeout)


# --- counter, barriers, transient keys -------------------------------------------------


class DistributedAtomicLong(_Recipe):
    """A 64-bit counter in one key; add() returns the value it committed."""

    def __init__(self, client: Client, name: str, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The counter at key ``name`` (decimal text; absent reads as 0). client_id, session, session_ttl, metrics:
        the options every recipe takes (see the package's docstring).
        """
        self._c = _core.DistributedAtomicLong(client._c, name, **_opts(client_id, session, session_ttl, metrics))

    def get(self, *, timeout: Optional[float] = None) -> int:
        """The current value (0 when the key is absent)."""
        return self._c.get().wait(timeout)

    def set(self, value: int, *, timeout: Optional[float] = None) -> None:
        """Sets the value unconditionally."""
        self._c.set(value).wait(timeout)

    def add(self, delta: int, *, timeout: Optional[float] = None) -> int:
        """Adds ``delta`` (one compare-and-swap, retried under contention); the value committed."""
        return self._c.add(delta).wait(timeout)

    def increment(self, *, timeout: Optional[float] = None) -> int:
        """add(1): the value committed."""
        return self._c.increment().wait(timeout)

    def decrement(self, *, timeout: Optional[float] = None) -> int:
        """add(-1): the value committed."""
        return self._c.decrement().wait(timeout)

    def compare_and_set(self, expected: int, desired: int, *, timeout: Optional[float] = None) -> bool:
        """Sets ``desired`` if the value is ``expected``; whether it did."""
        return self._c.compare_and_set(expected, desired).wait(timeout)


class DistributedBarrier(_Recipe):
    """A gate: set() closes it, remove() opens it, wait() blocks while it is set."""

    def __init__(self, client: Client, name: str, *, wait_until_set: bool = False, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The gate at key ``name``: closed while the key exists. ``wait_until_set``: wait() also waits
        for the gate to be closed first.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _core.DistributedBarrier(client._c, name, wait_until_set=wait_until_set,
                                           **_opts(client_id, session, session_ttl, metrics))

    def set(self, *, timeout: Optional[float] = None) -> bool:
        """Closes the gate under this object's lease; False if it was closed already."""
        return self._c.set().wait(timeout)

    def remove(self, *, timeout: Optional[float] = None) -> bool:
        """Opens the gate (deletes the key); False if it was open."""
        return self._c.remove().wait(timeout)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """True once the gate is open; False when ``timeout`` ran out."""
        return bool(self._c.wait().wait_or_none(timeout))

    @property
    def is_set_by_me(self) -> bool:
        """True while this object's set() holds the gate closed."""
        return self._c.is_set_by_me


class DistributedBarrierWithCount(_Recipe):
    """N parties: wait() returns once ``parties`` wait together."""

    def __init__(self, client: Client, name: str, parties: int, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """A barrier that releases ``parties`` waiters together, round after round under the one ``name``.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _core.DistributedBarrierWithCount(client._c, name, parties,
                                                    **_opts(client_id, session, session_ttl, metrics))

    @property
    def parties(self) -> int:
        """How many parties each round needs."""
        return self._c.parties

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Arrives and waits for the round to fill; False when ``timeout`` ran out (the arrival is withdrawn)."""
        return bool(self._c.wait().wait_or_none(timeout))

    def waiting(self, *, timeout: Optional[float] = None) -> int:
        """How many parties wait in the current round."""
        return self._c.waiting().wait(timeout)


class DistributedDoubleBarrier(_Recipe):
    """Enter and leave together: ``with barrier:`` enters, and leaves at the end."""

    def __init__(self, client: Client, name: str, parties: int, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """A double barrier: ``parties`` enter together and leave together. client_id, session, session_ttl,
        metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _core.DistributedDoubleBarrier(client._c, name, parties,
                                                 **_opts(client_id, session, session_ttl, metrics))

    @property
    def parties(self) -> int:
        """How many parties enter and leave together."""
        return self._c.parties

    @property
    def entered(self) -> bool:
        """True between a successful enter() and leave()."""
        return self._c.entered

    def enter(self, timeout: Optional[float] = None) -> bool:
        """Enters and waits until ``parties`` have; False when ``timeout`` ran out."""
        return bool(self._c.enter().wait_or_none(timeout))

    def leave(self, timeout: Optional[float] = None) -> bool:
        """Leaves and waits until every party has; False when ``timeout`` ran out."""
        return bool(self._c.leave().wait_or_none(timeout))

    def __enter__(self) -> "DistributedDoubleBarrier":
        self._c.enter().wait(None)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._c.leave().wait(None)


class TransientKeyValue(_Recipe):
    """A key that exists while its owner lives: ``with TransientKeyValue(c, key, value):``.

    With a codec, ``value`` is encoded with it; a value it cannot encode is
    InvalidArgument, nothing written (the constructor's: from every operation).
    """

    def __init__(self, client: Client, key: str, value: Any, *, codec: Optional[Codec] = None,
                 client_id: Optional[str] = None, session: Optional[Session] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The key ``key`` holding ``value`` while this object lives, under its lease; ``codec`` for typed
        values.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        opts = _opts(client_id, session, session_ttl, metrics)
        typed = _typed(codec)
        if typed is None:
            self._c = _core.TransientKeyValue(client._c, key, value, **opts)
        else:
            self._c = _core.TypedTransientKeyValue(client._c, key, value, typed, **opts)

    @property
    def key(self) -> str:
        """The key."""
        return self._c.key

    @property
    def value(self) -> Any:
        """The current value (the last one given, whether or not it is in etcd now)."""
        return self._c.value

    def set_value(self, value: Any, *, timeout: Optional[float] = None) -> None:
        """Replaces the value (in etcd too, while held)."""
        self._c.set_value(value).wait(timeout)

    def create(self, *, timeout: Optional[float] = None) -> None:
        """Creates the key only where absent (HoldLost-free: EtcdError if another owner has it)."""
        self._c.create().wait(timeout)

    def release(self, *, timeout: Optional[float] = None) -> bool:
        """Deletes the key; False if it was not ours."""
        return self._c.release().wait(timeout)

    @property
    def is_held(self) -> bool:
        """True while the key is this object's."""
        return self._c.is_held

    @property
    def lease(self) -> int:
        """The lease the key lives under (0 before create())."""
        return self._c.lease

    def on_lost(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with the reason when the key stops being ours."""
        return _keep(self, self._c.on_lost(listener))

    def on_restored(self, listener: Callable[[], None]) -> Subscription:
        """Runs ``listener`` when a lost key was re-created."""
        return _keep(self, self._c.on_restored(listener))

    def __enter__(self) -> "TransientKeyValue":
        self.create()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
        self.close()


# --- caches --------------------------------------------------------------------------


class _CacheBase(_Recipe):
    def wait_initialized(self, timeout: Optional[float] = None) -> bool:
        """True once the first read is loaded; False when ``timeout`` ran out."""
        return bool(self._c.wait_initialized().wait_or_none(timeout))

    @property
    def initialized(self) -> bool:
        """True once the first read is loaded."""
        return self._c.initialized

    @property
    def revision(self) -> int:
        """The revision the cache is current at."""
        return self._c.revision

    def __len__(self) -> int:
        return len(self._c)

    def __enter__(self) -> Any:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class PathChildrenCache(_CacheBase, Mapping[str, CachedNode]):
    """A local copy of the children of ``path``, kept current by a watch.

    A read-only mapping name -> CachedNode (``cache["a"].value``); snapshot() is a
    consistent copy; on_event(listener) hears ADDED/UPDATED/REMOVED/... in order.

    With a codec the nodes are TypedCachedNodes: ``value`` is decoded once per
    stored version, on the client's executor. A value that does not decode is
    cached all the same, as a node whose ``value`` raises DecodeFailed (naming
    the key) and whose ``error`` is that exception; it is recorded in errors()
    and the cache goes on.
    """

    def __init__(self, client: Client, path: str, *, start_mode: str = "normal", subtree: bool = False,
                 page_size: int = 1000, codec: Optional[Codec] = None, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None,
                 metrics: Any = None) -> None:
        """A local copy of the children of ``path`` (``subtree``: every key under it), kept current
        by a watch. ``start_mode``: "normal", "build_initial_cache" or "post_initialized_event";
        ``codec`` for typed values.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        opts = _opts(client_id, session, session_ttl, metrics)
        typed = _typed(codec)
        if typed is None:
            self._c = _core.PathChildrenCache(client._c, path, start_mode=start_mode, subtree=subtree,
                                              page_size=page_size, **opts)
        else:
            self._c = _core.TypedPathChildrenCache(client._c, path, typed, start_mode=start_mode, subtree=subtree,
                                                   page_size=page_size, **opts)

    @property
    def path(self) -> str:
        """The path whose children are cached."""
        return self._c.path

    def snapshot(self) -> Dict[str, CachedNode]:
        """Every child, by name (a copy; no I/O)."""
        return self._c.snapshot()[0]

    def snapshot_with_revision(self) -> Tuple[Dict[str, CachedNode], int]:
        """snapshot() and the revision it is current at."""
        return self._c.snapshot()

    def __getitem__(self, name: str) -> CachedNode:
        node = self._c.get(name)
        if node is None:
            raise KeyError(name)
        return node

    def __iter__(self) -> Iterator[str]:
        return iter(self.snapshot())

    def on_event(self, listener: Callable[[ChildEvent], None]) -> Subscription:
        """Runs ``listener`` with every change (a ChildEvent)."""
        return _keep(self, self._c.on_event(listener))


class NodeCache(_CacheBase):
    """A local copy of one key (with a codec: decoded, as PathChildrenCache's nodes)."""

    def __init__(self, client: Client, key: str, *, codec: Optional[Codec] = None, client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """A local copy of ``key``, kept current by a watch; ``codec`` for typed values. client_id, session,
        session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        opts = _opts(client_id, session, session_ttl, metrics)
        typed = _typed(codec)
        if typed is None:
            self._c = _core.NodeCache(client._c, key, **opts)
        else:
            self._c = _core.TypedNodeCache(client._c, key, typed, **opts)

    @property
    def current(self) -> Optional[CachedNode]:
        """The node as last seen (no I/O), or None when the key is absent."""
        return self._c.current

    @property
    def exists(self) -> bool:
        """True when the key exists (as last seen)."""
        return self._c.exists

    def on_change(self, listener: Callable[[NodeEvent], None]) -> Subscription:
        """Runs ``listener`` with every change (a NodeEvent)."""
        return _keep(self, self._c.on_change(listener))


# --- service discovery ----------------------------------------------------------------


class _Registrations(_Recipe):
    """Hears of this process's registrations (a ServiceRegistry's, a ServiceDiscovery's)."""

    def on_lost(self, listener: Callable[[ServiceInstance, EtcdError], None]) -> Subscription:
        """Runs with (instance, why) when a registration's key stops being ours
        (its lease was lost or revoked, or the key was deleted); it heals: the key
        is re-created where it is free, and on_restored listeners run."""
        return _keep(self, self._c.on_lost(listener))

    def on_restored(self, listener: Callable[[ServiceInstance], None]) -> Subscription:
        """Runs with the instance when a lost registration's key was re-created."""
        return _keep(self, self._c.on_restored(listener))


class ServiceRegistry(_Registrations):
    """Registrations as transient keys, healed after a lease loss only where free."""

    def __init__(self, client: Client, *, base_path: str = "/services", client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """Registrations under ``base_path``, each a transient key of this object's lease. client_id, session,
        session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _core.ServiceRegistry(client._c, base_path=base_path,
                                        **_opts(client_id, session, session_ttl, metrics))

    def register_instance(self, instance: ServiceInstance, *, timeout: Optional[float] = None) -> None:
        """Registers ``instance`` under this object's lease (AlreadyExists: another owner has the id)."""
        self._c.register_instance(instance).wait(timeout)

    def update(self, instance: ServiceInstance, *, timeout: Optional[float] = None) -> None:
        """Replaces a registered instance's record in place."""
        self._c.update(instance).wait(timeout)

    def unregister(self, service: str, id: str, *, timeout: Optional[float] = None) -> bool:
        """Deletes this object's registration of ``id``; False if it had none."""
        return self._c.unregister(service, id).wait(timeout)

    def registered(self) -> List[ServiceInstance]:
        """The instances this object has registered (no I/O)."""
        return self._c.registered()


class ServiceCache(_CacheBase):
    def __init__(self, client: Client, service: str, *, base_path: str = "/services",
                 client_id: Optional[str] = None, session: Optional[Session] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """A local copy of the instances of ``service`` under ``base_path``. client_id, session, session_ttl,
        metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _core.ServiceCache(client._c, service, base_path=base_path,
                                     **_opts(client_id, session, session_ttl, metrics))

    @classmethod
    def _wrap(cls, core: Any, owner: Any) -> "ServiceCache":
        cache = cls.__new__(cls)
        cache._c = core
        cache._owner = owner  # the provider the cache belongs to
        return cache

    def instances(self) -> List[ServiceInstance]:
        """Every cached instance that decodes, disabled ones included (no I/O)."""
        return self._c.instances()


class ServiceProvider(_Recipe):
    """Picks an instance of a service (round_robin, random or sticky), ejecting failing ones."""

    def __init__(self, client: Optional[Client], service: str, *, base_path: str = "/services",
                 strategy: str = "round_robin", errors_before_ejection: int = 2, ejection_time: float = 30.0,
                 client_id: Optional[str] = None, session: Optional[Session] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None,
                 _core_provider: Any = None) -> None:
        """Picks instances of ``service`` under ``base_path`` by ``strategy`` ("round_robin", "random",
        "sticky"); ``errors_before_ejection`` errors eject an instance for ``ejection_time`` seconds.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        if _core_provider is not None:
            self._c = _core_provider
        else:
            assert client is not None
            self._c = _core.ServiceProvider(client._c, service, base_path=base_path, strategy=strategy,
                                            errors_before_ejection=errors_before_ejection,
                                            ejection_time=ejection_time,
                                            **_opts(client_id, session, session_ttl, metrics))

    def wait_initialized(self, timeout: Optional[float] = None) -> bool:
        """True once the first read is loaded; False when ``timeout`` ran out."""
        return bool(self._c.wait_initialized().wait_or_none(timeout))

    def pick(self) -> Optional[ServiceInstance]:
        """An instance (no I/O), or None when there is none or the first read is not done."""
        return self._c.pick()

    def get_instance(self, *, timeout: Optional[float] = None) -> ServiceInstance:
        """Waits for the first read, then picks; NotFound when there is none to pick."""
        return self._c.get_instance().wait(timeout)

    def all_instances(self) -> List[ServiceInstance]:
        """Every cached instance, ejected and disabled ones included (no I/O)."""
        return self._c.all_instances()

    def candidates(self) -> List[ServiceInstance]:
        """The instances pick() chooses among now: enabled and not ejected (no I/O)."""
        return self._c.candidates()

    def cache(self) -> "ServiceCache":
        """The cache the provider picks from (its instances, initialized, revision)."""
        return self._cache_type._wrap(self._c.cache(), self)

    def note_error(self, instance: ServiceInstance) -> None:
        """A request to ``instance`` failed: enough of them eject it for a while."""
        self._c.note_error(instance)

    _cache_type = ServiceCache


class ServiceDiscovery(_Registrations):
    """The facade: register, query, providers."""

    def __init__(self, client: Client, *, base_path: str = "/services", client_id: Optional[str] = None,
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """Registration, queries and providers under ``base_path``. client_id, session, session_ttl, metrics: the
        options every recipe takes (see the package's docstring).
        """
        self._c = _core.ServiceDiscovery(client._c, base_path=base_path,
                                         **_opts(client_id, session, session_ttl, metrics))

    def register_instance(self, instance: ServiceInstance, *, timeout: Optional[float] = None) -> None:
        """Registers ``instance`` under this object's lease (AlreadyExists: another owner has the id)."""
        self._c.register_instance(instance).wait(timeout)

    def update(self, instance: ServiceInstance, *, timeout: Optional[float] = None) -> None:
        """Replaces a registered instance's record in place."""
        self._c.update(instance).wait(timeout)

    def unregister(self, service: str, id: str, *, timeout: Optional[float] = None) -> bool:
        """Deletes this object's registration of ``id``; False if it had none."""
        return self._c.unregister(service, id).wait(timeout)

    def query_names(self, *, timeout: Optional[float] = None) -> List[str]:
        """The names of the services registered."""
        return self._c.query_names().wait(timeout)

    def query_instances(self, service: str, *, timeout: Optional[float] = None) -> List[ServiceInstance]:
        """Every instance of ``service``, sorted by id (one Range)."""
        return self._c.query_instances(service).wait(timeout)

    def query_instance(self, service: str, id: str, *, timeout: Optional[float] = None) -> Optional[ServiceInstance]:
        """Instance ``id`` of ``service`` as etcd has it, or None."""
        return self._c.query_instance(service, id).wait(timeout)

    def provider(self, service: str, *, strategy: str = "round_robin") -> ServiceProvider:
        """A provider of ``service`` closed with this object (no I/O until used)."""
        return self._provider_type(None, service, _core_provider=self._c.provider(service, strategy=strategy))

    _provider_type = ServiceProvider

    def __enter__(self) -> "ServiceDiscovery":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# --- the facade ------------------------------------------------------------------------

# The options every recipe takes, which a Recipes states once.
_SHARED_OPTIONS = ("client_id", "session", "session_ttl", "metrics")


class Recipes:
    """One object over a client that makes every recipe with the same options:
    the C++ ``etcd::recipes::Recipes`` (recipes.h), with the same method names.

        recipes = etcd_recipes.Recipes(client, client_id="billing-7", metrics=etcd_recipes.PrometheusMetrics())
        with recipes.mutex("/locks/invoices") as hold: ...
        leader = recipes.leader_latch("/elections/billing", "billing-7")
        jobs = recipes.work_queue("/queues/invoices", codec=etcd_recipes.codecs.JSON)

    Each method constructs its recipe (no I/O) and returns the class you would
    build yourself, with the shared options; the method's own keyword arguments
    (``client_id=``, ``session=``, ``session_ttl=``, ``metrics=``) override them,
    None keeping the shared one. C++'s typed_queue<T, C>(...) and the other
    typed_* are these methods with ``codec=``.

    Unlike C++ — whose recipes are values, closed by their destructors when the
    owner's scope ends — a Python recipe lives until it is garbage collected. So
    close() (or the end of ``with recipes:``) closes every recipe made here that
    is still alive (one that was collected has been closed already), and the
    facade makes no more (Closed). It holds them weakly: making many short-lived
    recipes does not keep them. The client is the caller's and stays open.
    """

    def __init__(self, client: Client, *, client_id: Optional[str] = None, session: Optional[Session] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        # Checked now, as any recipe would: a negative session_ttl, a metrics
        # object without add/observe/set (a TTL below 1 s is the recipes' to
        # refuse, at their first operation, as in C++).
        """Makes recipes on ``client`` with these options stated once. client_id, session, session_ttl, metrics:
        the options every recipe takes (see the package's docstring).
        """
        _opts(client_id, session, session_ttl, metrics)
        self._client = client
        self._shared: Dict[str, Any] = {"client_id": client_id, "session": session, "session_ttl": session_ttl,
                                        "metrics": metrics}
        self._lock = threading.Lock()
        # id -> weak reference, each dropping itself when its recipe is
        # collected (not a WeakSet: a Mapping recipe, PathChildrenCache, is
        # unhashable).
        self._made: Dict[int, "weakref.ref[Any]"] = {}
        self._closed = False

    @property
    def client(self) -> Client:
        """The client the recipes use."""
        return self._client

    @property
    def options(self) -> Dict[str, Any]:
        """The shared options (client_id, session, session_ttl, metrics; None: the default)."""
        return dict(self._shared)

    def _make(self, kind: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        for option in _SHARED_OPTIONS:
            if kwargs.get(option) is None:
                kwargs[option] = self._shared[option]
        with self._lock:
            if self._closed:
                raise Closed("FAILED_PRECONDITION [closed]: Recipes is closed", "FAILED_PRECONDITION", 9,
                             "closed", "Recipes is closed")
            recipe = kind(self._client, *args, **kwargs)
            made, key = self._made, id(recipe)

            def forget(ref: "weakref.ref[Any]") -> None:
                # Runs when the recipe is collected, on whatever thread the
                # collection happens: single dict operations only.
                if made.get(key) is ref:
                    made.pop(key, None)

            made[key] = weakref.ref(recipe, forget)
        return recipe

    # The classes the methods make: this module's; aio.Recipes makes aio's.
    _kinds: Any = None

    # --- locks
    def mutex(self, name: str, **options: Any) -> DistributedMutex:
        """A DistributedMutex with these options."""
        return self._make(self._kinds.DistributedMutex, name, **options)

    def read_write_lock(self, name: str, **options: Any) -> DistributedReadWriteLock:
        """A DistributedReadWriteLock with these options."""
        return self._make(self._kinds.DistributedReadWriteLock, name, **options)

    def semaphore(self, name: str, permits: int, **options: Any) -> DistributedSemaphore:
        """A DistributedSemaphore with these options."""
        return self._make(self._kinds.DistributedSemaphore, name, permits, **options)

    # --- leader election
    def leader_latch(self, name: str, value: Bytes = "", **options: Any) -> LeaderLatch:
        """A LeaderLatch with these options."""
        return self._make(self._kinds.LeaderLatch, name, value, **options)

    def leader_selector(self, name: str, value: Bytes = "", callback: Optional[Callable[[Any], None]] = None,
                        **options: Any) -> LeaderSelector:
        """A LeaderSelector with these options."""
        return self._make(self._kinds.LeaderSelector, name, value, callback, **options)

    def leader_observer(self, name: str, **options: Any) -> LeaderObserver:
        """A LeaderObserver with these options."""
        return self._make(self._kinds.LeaderObserver, name, **options)

    # --- queues
    def queue(self, name: str, *, codec: Optional[Codec] = None, **options: Any) -> DistributedQueue:
        """A DistributedQueue with these options."""
        return self._make(self._kinds.DistributedQueue, name, codec=codec, **options)

    def priority_queue(self, name: str, *, codec: Optional[Codec] = None,
                       **options: Any) -> DistributedPriorityQueue:
        """A DistributedPriorityQueue with these options."""
        return self._make(self._kinds.DistributedPriorityQueue, name, codec=codec, **options)

    def work_queue(self, name: str, *, visibility_timeout: float = 30.0, max_deliveries: int = 5,
                   codec: Optional[Codec] = None, **options: Any) -> DistributedWorkQueue:
        """A DistributedWorkQueue with these options."""
        return self._make(self._kinds.DistributedWorkQueue, name, visibility_timeout=visibility_timeout,
                          max_deliveries=max_deliveries, codec=codec, **options)

    # --- barriers, counter, transient keys
    def barrier(self, name: str, *, wait_until_set: bool = False, **options: Any) -> DistributedBarrier:
        """A DistributedBarrier with these options."""
        return self._make(self._kinds.DistributedBarrier, name, wait_until_set=wait_until_set, **options)

    def barrier_with_count(self, name: str, parties: int, **options: Any) -> DistributedBarrierWithCount:
        """A DistributedBarrierWithCount with these options."""
        return self._make(self._kinds.DistributedBarrierWithCount, name, parties, **options)

    def double_barrier(self, name: str, parties: int, **options: Any) -> DistributedDoubleBarrier:
        """A DistributedDoubleBarrier with these options."""
        return self._make(self._kinds.DistributedDoubleBarrier, name, parties, **options)

    def counter(self, name: str, **options: Any) -> DistributedAtomicLong:
        """A DistributedAtomicLong with these options."""
        return self._make(self._kinds.DistributedAtomicLong, name, **options)

    def transient(self, key: str, value: Any, *, codec: Optional[Codec] = None,
                  **options: Any) -> TransientKeyValue:
        """A TransientKeyValue with these options."""
        return self._make(self._kinds.TransientKeyValue, key, value, codec=codec, **options)

    # --- caches, discovery
    def node_cache(self, key: str, *, codec: Optional[Codec] = None, **options: Any) -> NodeCache:
        """A NodeCache with these options."""
        return self._make(self._kinds.NodeCache, key, codec=codec, **options)

    def path_children_cache(self, path: str, *, start_mode: str = "normal", subtree: bool = False,
                            page_size: int = 1000, codec: Optional[Codec] = None,
                            **options: Any) -> PathChildrenCache:
        """A PathChildrenCache with these options."""
        return self._make(self._kinds.PathChildrenCache, path, start_mode=start_mode, subtree=subtree,
                          page_size=page_size, codec=codec, **options)

    def discovery(self, *, base_path: str = "/services", **options: Any) -> ServiceDiscovery:
        """A ServiceDiscovery with these options."""
        return self._make(self._kinds.ServiceDiscovery, base_path=base_path, **options)

    # --- lifecycle
    def close(self) -> None:
        """Closes every recipe made here that is still alive; then making one raises
        Closed. Idempotent. Each recipe's close() is its own (recipe.h): waiters end
        with Closed, holds are released without waiting."""
        with self._lock:
            self._closed = True
            # A copy to iterate: a collection during the loop drops entries
            # of self._made (forget above), never of the copy.
            made = self._made.copy()
            self._made.clear()
        for ref in made.values():
            recipe = ref()
            if recipe is not None:
                recipe.close()

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._closed

    def __enter__(self) -> "Recipes":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


Recipes._kinds = sys.modules[__name__]
