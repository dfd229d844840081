"""Coordination: the 64-bit counter; the barriers (the gate, the count barrier,
the double barrier); a key that lives as long as its owner.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.coordination import DistributedBarrier``; the older
:mod:`etcd_recipes.barriers`, :mod:`etcd_recipes.counter` and
:mod:`etcd_recipes.transient` name them too); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from . import _core
from ._base import _Forward, _Recipe, _home, _keep, _opts, _typed
from ._core import Subscription
from .client import Client, Session
from .codecs import Codec
from .errors import EtcdError

__all__ = ["DistributedAtomicLong", "DistributedBarrier", "DistributedBarrierWithCount", "DistributedDoubleBarrier",
           "TransientKeyValue"]


class DistributedAtomicLong(_Recipe):
    """A 64-bit counter in one key; add() returns the value it committed."""

    def __init__(self, client: Client, name: str, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The counter at key ``name`` (decimal text; absent reads as 0). client_id, session, session_ttl, metrics:
        the options every recipe takes (see the package's docstring).
        """
        self._c = _core.DistributedAtomicLong(client._c, name, **_opts(client_id, session, session_ttl, metrics,
                                                                       session_factory=session_factory))

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
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The gate at key ``name``: closed while the key exists. ``wait_until_set``: wait() also waits
        for the gate to be closed first.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _core.DistributedBarrier(client._c, name, wait_until_set=wait_until_set,
                                           **_opts(client_id, session, session_ttl, metrics,
                                                   session_factory=session_factory))

    def set(self, *, timeout: Optional[float] = None) -> bool:
        """Closes the gate under this object's lease; False if it was closed already."""
        return self._c.set().wait(timeout)

    def remove(self, *, timeout: Optional[float] = None) -> bool:
        """Opens the gate (deletes the key); False if it was open."""
        return self._c.remove().wait(timeout)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """True once the gate is open; False when ``timeout`` ran out."""
        return bool(self._c.wait().wait_or_none(timeout))

    is_set_by_me = _Forward[bool]("True while this object's set() holds the gate closed.")


class DistributedBarrierWithCount(_Recipe):
    """N parties: wait() returns once ``parties`` wait together."""

    def __init__(self, client: Client, name: str, parties: int, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """A barrier that releases ``parties`` waiters together, round after round under the one ``name``.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _core.DistributedBarrierWithCount(client._c, name, parties,
                                                    **_opts(client_id, session, session_ttl, metrics,
                                                            session_factory=session_factory))

    parties = _Forward[int]("How many parties each round needs.")

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Arrives and waits for the round to fill; False when ``timeout`` ran out (the arrival is withdrawn)."""
        return bool(self._c.wait().wait_or_none(timeout))

    def waiting(self, *, timeout: Optional[float] = None) -> int:
        """How many parties wait in the current round."""
        return self._c.waiting().wait(timeout)


class DistributedDoubleBarrier(_Recipe):
    """Enter and leave together: ``with barrier:`` enters, and leaves at the end."""

    def __init__(self, client: Client, name: str, parties: int, *, client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """A double barrier: ``parties`` enter together and leave together. client_id, session, session_ttl,
        metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _core.DistributedDoubleBarrier(client._c, name, parties,
                                                 **_opts(client_id, session, session_ttl, metrics,
                                                         session_factory=session_factory))

    parties = _Forward[int]("How many parties enter and leave together.")
    entered = _Forward[bool]("True between a successful enter() and leave().")

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
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The key ``key`` holding ``value`` while this object lives, under its lease; ``codec`` for typed
        values.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        opts = _opts(client_id, session, session_ttl, metrics, session_factory=session_factory)
        typed = _typed(codec)
        if typed is None:
            self._c = _core.TransientKeyValue(client._c, key, value, **opts)
        else:
            self._c = _core.TypedTransientKeyValue(client._c, key, value, typed, **opts)

    key = _Forward[str]("The key.")
    value = _Forward[Any]("The current value (the last one given, whether or not it is in etcd now).")

    def set_value(self, value: Any, *, timeout: Optional[float] = None) -> None:
        """Replaces the value (in etcd too, while held)."""
        self._c.set_value(value).wait(timeout)

    def create(self, *, timeout: Optional[float] = None) -> None:
        """Creates the key only where absent (HoldLost-free: EtcdError if another owner has it)."""
        self._c.create().wait(timeout)

    def release(self, *, timeout: Optional[float] = None) -> bool:
        """Deletes the key; False if it was not ours."""
        return self._c.release().wait(timeout)

    is_held = _Forward[bool]("True while the key is this object's.")
    lease = _Forward[int]("The lease the key lives under (0 before create()).")

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


_home("etcd_recipes", globals(), __all__)
