"""PresenceLease: a lease that heals, and the keys it owns.

A registration that must come back after a lease loss (a service instance, a
worker's heartbeat) lives on a presence lease: the lease is kept alive in the
background; when it is lost anyway (the process was cut off past its TTL),
a new one is granted and the keys are re-created on it — only where they are
still free, never over a key someone else created meanwhile::

    with etcd_recipes.PresenceLease(client, ttl=10, keys={"workers/w1": "10.0.0.7"}) as p:
        ...                                     # the key exists while p lives (healed after a loss)

Unlike a Session (a lease for exclusive holds, lost for good when it expires),
a presence lease is meant to come back. on_event(listener) hears
``("EXPIRED", error)``, ``("RESTORED", None)`` and ``("RESTORE_FAILED", error)``
(retried with a backoff), on the client's executor thread.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional, Union

from . import _core
from ._base import _home
from ._core import Subscription
from .client import Client
from .errors import EtcdError

__all__ = ["PresenceLease"]

_Bytes = Union[str, bytes]


class PresenceLease:
    """A self-healing lease and the keys it owns (see the module's docstring)."""

    def __init__(self, client: Client, *, ttl: float = 10.0, keys: Optional[Mapping[_Bytes, _Bytes]] = None) -> None:
        """A presence lease of ``ttl`` seconds owning ``keys`` (key -> value); nothing is granted or
        written until start() (or ``with``)."""
        self._c = _core.PresenceLease(client._c, ttl=ttl, keys=list((keys or {}).items()))

    def start(self, *, timeout: Optional[float] = None) -> None:
        """Grants the lease and creates the keys where absent. Raises EtcdError (ALREADY_EXISTS,
        naming them) if another owner holds any of them: those are left alone, the others are
        created, and the lease stays (close() it, or keep it: a taken key is re-tried after the next
        loss only)."""
        self._c.start().wait(timeout)
        if self._c.keys:
            _raise_taken(self._c.put_keys().wait(timeout))

    def close(self, *, timeout: Optional[float] = None) -> None:
        """Stops healing and revokes the lease: its keys go with it."""
        self._c.close().wait(timeout)

    def on_event(self, listener: Callable[[str, Optional[EtcdError]], None]) -> Subscription:
        """Runs ``listener(event, error)`` for every EXPIRED, RESTORED, RESTORE_FAILED, in order."""
        return self._c.on_event(listener)

    @property
    def lease_id(self) -> int:
        """The current lease (0 before start() and while healing after a loss)."""
        return self._c.lease_id

    @property
    def ttl(self) -> int:
        """The granted TTL once started, the requested one before (seconds)."""
        return self._c.ttl

    @property
    def alive(self) -> bool:
        """A current lease exists and is alive."""
        return self._c.alive

    @property
    def closed(self) -> bool:
        """close() was called."""
        return self._c.closed

    @property
    def keys(self) -> Dict[bytes, bytes]:
        """The keys this lease owns, and their values."""
        return self._c.keys

    def __enter__(self) -> "PresenceLease":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _raise_taken(result: Dict[str, Any]) -> None:
    if result["taken"]:
        names = ", ".join(k.decode(errors="replace") for k in result["taken"])
        raise EtcdError(f"held by another owner, left alone: {names}", "ALREADY_EXISTS", 6)


_home("etcd_recipes", globals(), __all__)
