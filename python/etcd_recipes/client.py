"""The etcd v3 client: KV, Txn, leases, watches, and the sessions recipes share.

The same classes as ``etcd_recipes`` has (``from etcd_recipes.client import
Client``); their asyncio twins are in :mod:`etcd_recipes.aio`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

from . import _core
from ._base import Bytes, _Forward, _ForwardCall, _home, _keep
from ._core import (  # noqa: F401  (plain data the C++ side returns as is)
    Compare, DeleteResponse, Event, GetResponse, KeyValue, LeaseGrantResponse, LeaseTimeToLiveResponse, Member,
    MemberListResponse, Op, PutResponse, ResponseHeader, StatusResponse, Subscription, Txn, TxnResponse,
    WatchResponse,
)
from .errors import EtcdError

__all__ = [
    "Client", "Lease", "Session", "Watch", "Compare", "Op", "Txn", "Subscription", "KeyValue", "ResponseHeader",
    "GetResponse", "PutResponse", "DeleteResponse", "TxnResponse", "LeaseGrantResponse", "LeaseTimeToLiveResponse",
    "WatchResponse", "Event", "StatusResponse", "MemberListResponse", "Member",
]


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

    state = _Forward[str]("CONNECTED, SUSPENDED, RECONNECTED or LOST.")

    def on_state_change(self, listener: Callable[[str], None]) -> Subscription:
        """Runs ``listener`` with the connection's new state ("CONNECTED", "SUSPENDED", ...) at every change."""
        return _keep(self, self._c.on_state_change(listener))

    @property
    def endpoints(self) -> List[str]:
        """The endpoints given, in order."""
        return list(self._c.endpoints)

    namespace = _Forward[str]('The key prefix every call lives under ("" for none).')
    stats = _ForwardCall[Dict[str, int]]("The client's counters (RPCs, retries, failovers, watches, leases).")
    close = _ForwardCall[None]("Refuses new calls (Closed), cancels watches and keep-alives. Idempotent.")
    closed = _Forward[bool]("True once close() was called.")

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Lease:
    """A granted lease, kept alive over the client's one keep-alive stream."""

    def __init__(self, core: Any) -> None:
        """A kept-alive lease, as Client.lease() returns it."""
        self._c = core

    id = _Forward[int]("The lease id.")
    ttl = _Forward[int]("The TTL granted, in seconds.")
    alive = _Forward[bool]("True while renewals succeed.")

    def on_lost(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with the reason when the lease is lost (expired, revoked)."""
        return _keep(self, self._c.on_lost(listener))

    def revoke(self, *, timeout: Optional[float] = None) -> None:
        """Revokes the lease: its keys are deleted."""
        self._c.revoke().wait(timeout)

    detach = _ForwardCall[None]("Stops renewing without revoking: the lease expires after its TTL.")

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

    lease_id = _Forward[int]("The lease id (0 before it is granted).")
    alive = _Forward[bool]("True while the lease is kept alive.")


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

    cancel = _ForwardCall[None]("Ends the watch: the iteration stops.")
    delivered_revision = _Forward[int]("Every event up to this revision has been delivered.")

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cancel()


Client._watch_type = Watch  # the asyncio Client makes asyncio Watches


_home("etcd_recipes", globals(), __all__)
