"""A watched, versioned value of one key (Curator's SharedValue / SharedCount).

The same classes as ``etcd_recipes`` has (``from etcd_recipes.shared_value import
SharedValue``); their asyncio twins are in :mod:`etcd_recipes.aio`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from . import _core
from ._base import _Forward, _Recipe, _home, _keep, _opts, _typed
from ._core import (  # noqa: F401  (with a codec, the values and events are the Typed ones: `value` decoded)
    SharedValueEvent, Subscription, TypedSharedValueEvent, TypedVersionedValue, VersionedValue,
)
from .client import Client, Session
from .codecs import Codec

__all__ = ["SharedValue", "VersionedValue", "SharedValueEvent", "TypedVersionedValue", "TypedSharedValueEvent"]


class SharedValue(_Recipe):
    """One key's value, kept current by a watch; set, compare_and_set and try_set change it.

    ``get()`` answers from memory (no I/O): a VersionedValue with ``value``,
    ``exists`` and ``mod_revision`` — the version compare_and_set() compares
    (0 for an absent key). start() (or ``with``) begins the watch; set and
    compare_and_set work without it. With a codec, ``value`` is decoded; a
    stored value that does not decode is a VersionedValue whose ``value``
    raises DecodeFailed (naming the key) and whose ``error`` is it.
    """

    def __init__(self, client: Client, key: str, *, codec: Optional[Codec] = None, client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The value of ``key``; ``codec`` for typed values (``codecs.INT64`` for Curator's SharedCount).
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        opts = _opts(client_id, session, session_ttl, metrics, session_factory=session_factory)
        typed = _typed(codec)
        if typed is None:
            self._c = _core.SharedValue(client._c, key, **opts)
        else:
            self._c = _core.TypedSharedValue(client._c, key, typed, **opts)

    key = _Forward[str]("The key.")
    initialized = _Forward[bool]("True once the first read is loaded.")
    resyncs = _Forward[int]("Reads after a gap in the watch (a compaction while cut off) since start().")

    def get(self) -> VersionedValue:
        """The newest value this object knows, with its version (no I/O)."""
        return self._c.get()

    def set(self, value: Any, *, timeout: Optional[float] = None) -> int:
        """Stores ``value`` whatever was there; the new version (mod revision)."""
        return self._c.set(value).wait(timeout)

    def compare_and_set(self, expected_revision: int, value: Any, *, timeout: Optional[float] = None) -> bool:
        """Stores ``value`` if the key's version is still ``expected_revision`` (0: absent); True if it did."""
        return self._c.compare_and_set(expected_revision, value).wait(timeout)

    def try_set(self, value: Any, *, timeout: Optional[float] = None) -> bool:
        """compare_and_set() against the newest version this object knows; True if it won."""
        return self._c.try_set(value).wait(timeout)

    def wait_initialized(self, timeout: Optional[float] = None) -> bool:
        """True once the first read is loaded; False when ``timeout`` ran out."""
        return bool(self._c.wait_initialized().wait_or_none(timeout))

    def on_change(self, listener: Callable[[SharedValueEvent], None]) -> Subscription:
        """Runs ``listener`` with every change the watch delivers (a SharedValueEvent: previous, current, resync)."""
        return _keep(self, self._c.on_change(listener))

    def __enter__(self) -> Any:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_home("etcd_recipes", globals(), __all__)
