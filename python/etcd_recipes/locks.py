"""Locks: a mutex, a read-write lock, a semaphore, and the Hold each grants.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.locks import DistributedMutex``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from . import _core
from ._base import Hold, _Forward, _Recipe, _home, _hold, _keep, _opts
from ._core import Subscription
from .client import Client, Session, Txn, TxnResponse
from .errors import EtcdError

__all__ = ["DistributedMutex", "DistributedReadWriteLock", "LockView", "DistributedSemaphore", "Hold", "MultiLock",
           "MultiHold"]


class _LockBase(_Recipe):
    """acquire/try_acquire/release and ``with lock:`` (DistributedMutex, rwlock sides)."""

    @property
    def hold(self) -> Optional[Hold]:
        """The current hold, or None."""
        return _hold(self._c.hold)

    is_held = _Forward[bool]("True while this object holds the lock.")

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
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None,
                 layout: str = "go") -> None:
        """The mutex named ``name`` (a key prefix). client_id, session, session_ttl, metrics: the options every
        recipe takes (see the package's docstring). ``layout``: ``"go"`` (etcd's Go concurrency layout, that of
        ``etcdctl lock``; each acquisition costs etcd O(waiters)) or ``"ordered"`` (keys in commit order: the
        same cost at any number of waiters, mutexes may share a session; still excludes together with ``"go"``
        contenders and ``etcdctl lock``).
        """
        self._c = _core.DistributedMutex(client._c, name, **_opts(client_id, session, session_ttl, metrics, layout,
                                                                  session_factory=session_factory))

    def request_release(self, *, timeout: Optional[float] = None) -> bool:
        """Asks the current holder of the name (any process) to release: True if a holder was asked, False if the
        name is free. The holder hears of it through on_release_requested / Hold.release_requested."""
        return self._c.request_release().wait(timeout)

    def on_release_requested(self, listener: Callable[[], None]) -> Subscription:
        """Runs ``listener`` whenever a hold of this object is asked to release."""
        return _keep(self, self._c.on_release_requested(listener))


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
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None,
                 layout: str = "go") -> None:
        """The read-write lock named ``name``. client_id, session, session_ttl, metrics: the options every recipe
        takes (see the package's docstring). ``layout``: ``"go"`` or ``"ordered"``, as for DistributedMutex.
        """
        self._c = _core.DistributedReadWriteLock(client._c, name,
                                                 **_opts(client_id, session, session_ttl, metrics, layout,
                                                         session_factory=session_factory))
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
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None,
                 layout: str = "go") -> None:
        """The semaphore ``name`` with ``permits`` permits (every user must give the same number and layout).
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        ``layout``: ``"go"`` (the default: a key per holder and waiter, each acquisition costs etcd O(waiters)) or
        ``"ordered"`` (a queue in commit order and ``permits`` slot keys: the same cost at any number of waiters).
        """
        self._c = _core.DistributedSemaphore(client._c, name, permits,
                                             **_opts(client_id, session, session_ttl, metrics, layout,
                                                     session_factory=session_factory))
        self._entered: List[Hold] = []

    permits = _Forward[int]("The number of permits.")

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

    def resize(self, permits: int, *, timeout: Optional[float] = None) -> None:
        """Changes the number of permits for every user of the semaphore.

        Growing admits waiters at once; shrinking takes no permit back but admits nobody until
        fewer than ``permits`` are held. ``permits < 1`` raises before anything is written.
        """
        self._c.resize(permits).wait(timeout)

    def __enter__(self) -> Hold:
        permit = self.acquire()
        self._entered.append(permit)
        return permit

    def __exit__(self, *exc: Any) -> None:
        self._entered.pop().release()


class MultiHold:
    """The hold of a MultiLock: one Hold per name, held and lost together. Falsy when empty."""

    def __init__(self, core: Any) -> None:
        """Wraps a multi-hold that MultiLock made; not made by you."""
        self._c = core

    names = _Forward[List[str]]("The names, sorted and de-duplicated (the order they were taken in).")
    tokens = _Forward[Dict[str, int]]("The fencing token of each name.")
    is_held = _Forward[bool]("True until the hold ends (released, or any name lost).")
    ended = _Forward[bool]("True once the hold was lost or released.")

    @property
    def holds(self) -> List[Hold]:
        """One Hold per name, in ``names`` order."""
        return [Hold(h) for h in self._c.holds]

    def hold(self, name: str) -> Optional[Hold]:
        """The Hold of ``name`` (None if it is not one of the names)."""
        return _hold(self._c.hold(name))

    def token(self, name: str) -> int:
        """The fencing token of ``name`` (0 if it is not one of the names)."""
        return self._c.token(name)

    def on_lost(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with the reason once any name is lost."""
        return _keep(self, self._c.on_lost(listener))

    @property
    def release_requested(self) -> bool:
        """True once someone asked the holder of any of the names to release; the hold goes on."""
        return self._c.release_requested()

    def on_release_requested(self, listener: Callable[[], None]) -> Subscription:
        """Runs ``listener`` once, at the first request to release any of the names."""
        return _keep(self, self._c.on_release_requested(listener))

    def guarded(self, txn: Txn, *, timeout: Optional[float] = None) -> TxnResponse:
        """Runs ``txn`` only while every name is held, atomically (one Txn); HoldLost otherwise."""
        return self._c.guarded(txn).wait(timeout)

    def release(self, *, timeout: Optional[float] = None) -> bool:
        """Releases every name: True if all were still intact."""
        return self._c.release().wait(timeout)

    def __bool__(self) -> bool:
        return self._c.valid

    def __repr__(self) -> str:
        return repr(self._c)


def _multi_hold(core: Any, cls: Any = MultiHold) -> Any:
    return cls(core) if core is not None else None


class MultiLock(_Recipe):
    """Several mutex names held as one, deadlock-free in any order: ``with MultiLock(client, [a, b]) as hold:``."""

    _hold_cls: Any = MultiHold

    def __init__(self, client: Client, names: List[str], *, client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None,
                 layout: str = "go") -> None:
        """The names (each a DistributedMutex name), taken sorted and de-duplicated. client_id, session,
        session_ttl, metrics: the options every recipe takes (see the package's docstring). ``layout``: the key
        layout of every name's mutex, as for DistributedMutex.
        """
        self._c = _core.MultiLock(client._c, list(names), **_opts(client_id, session, session_ttl, metrics, layout,
                                                                  session_factory=session_factory))

    names = _Forward[List[str]]("The names in the order they are taken (sorted, de-duplicated).")
    is_held = _Forward[bool]("True while this object holds every name.")

    @property
    def hold(self) -> Optional[MultiHold]:
        """The current multi-hold, or None."""
        return _multi_hold(self._c.hold, self._hold_cls)

    def on_lost(self, listener: Callable[[EtcdError], None]) -> Subscription:
        """Runs ``listener`` with the reason whenever a multi-hold of this object is lost."""
        return _keep(self, self._c.on_lost(listener))

    def on_release_requested(self, listener: Callable[[], None]) -> Subscription:
        """Runs ``listener`` whenever a multi-hold of this object is first asked to release."""
        return _keep(self, self._c.on_release_requested(listener))

    def acquire(self, timeout: Optional[float] = None) -> MultiHold:
        """Waits until every name is held; Timeout when ``timeout`` ran out (nothing stays held)."""
        return self._hold_cls(self._c.acquire().wait(timeout))

    def try_acquire(self, timeout: Optional[float] = None) -> Optional[MultiHold]:
        """The hold if every name can be had now (or within ``timeout``), else None, holding nothing."""
        if timeout is None:
            return _multi_hold(self._c.try_acquire().wait(None), self._hold_cls)
        return _multi_hold(self._c.acquire().wait_or_none(timeout), self._hold_cls)

    def release(self, *, timeout: Optional[float] = None) -> bool:
        """Releases every name; False if one had been lost (or nothing was held)."""
        return self._c.release().wait(timeout)

    def __enter__(self) -> MultiHold:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


_home("etcd_recipes", globals(), __all__)
