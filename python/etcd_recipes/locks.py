"""Locks: a mutex, a read-write lock, a semaphore, and the Hold each grants.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.locks import DistributedMutex``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from . import _core
from ._base import Hold, _Forward, _Recipe, _home, _hold, _keep, _opts
from ._core import Subscription
from .client import Client, Session
from .errors import EtcdError

__all__ = ["DistributedMutex", "DistributedReadWriteLock", "LockView", "DistributedSemaphore", "Hold"]


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
                 session: Optional[Session] = None, session_ttl: Optional[float] = None, metrics: Any = None,
                 layout: str = "go") -> None:
        """The semaphore ``name`` with ``permits`` permits (every user must give the same number and layout).
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        ``layout``: ``"go"`` (the default: a key per holder and waiter, each acquisition costs etcd O(waiters)) or
        ``"ordered"`` (a queue in commit order and ``permits`` slot keys: the same cost at any number of waiters).
        """
        self._c = _core.DistributedSemaphore(client._c, name, permits,
                                             **_opts(client_id, session, session_ttl, metrics, layout))
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

    def __enter__(self) -> Hold:
        permit = self.acquire()
        self._entered.append(permit)
        return permit

    def __exit__(self, *exc: Any) -> None:
        self._entered.pop().release()


_home("etcd_recipes", globals(), __all__)
