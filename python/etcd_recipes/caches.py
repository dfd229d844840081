"""Local copies of keys, kept current by a watch.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.caches import PathChildrenCache``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Tuple

from . import _core
from ._base import _Forward, _Recipe, _home, _keep, _opts, _typed
from ._core import (  # noqa: F401  (with a codec, the nodes and events are the Typed ones: `value` decoded)
    CachedNode, ChildEvent, NodeEvent, Subscription, TypedCachedNode, TypedChildEvent, TypedNodeEvent,
)
from .client import Client, Session
from .codecs import Codec

__all__ = [
    "PathChildrenCache",
    "NodeCache",
    "CachedNode",
    "ChildEvent",
    "NodeEvent",
    "TypedCachedNode",
    "TypedChildEvent",
    "TypedNodeEvent",
]


class _CacheBase(_Recipe):
    @staticmethod
    def _stream(core: Any) -> Any:
        from .view import EventStream

        return EventStream(core)

    def wait_initialized(self, timeout: Optional[float] = None) -> bool:
        """True once the first read is loaded; False when ``timeout`` ran out."""
        return bool(self._c.wait_initialized().wait_or_none(timeout))

    initialized = _Forward[bool]("True once the first read is loaded.")
    revision = _Forward[int]("The revision the cache is current at.")

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
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None, session_ttl: Optional[float] = None,
                 metrics: Any = None) -> None:
        """A local copy of the children of ``path`` (``subtree``: every key under it), kept current
        by a watch. ``start_mode``: "normal", "build_initial_cache" or "post_initialized_event";
        ``codec`` for typed values.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        opts = _opts(client_id, session, session_ttl, metrics, session_factory=session_factory)
        typed = _typed(codec)
        if typed is None:
            self._c = _core.PathChildrenCache(client._c, path, start_mode=start_mode, subtree=subtree,
                                              page_size=page_size, **opts)
        else:
            self._c = _core.TypedPathChildrenCache(client._c, path, typed, start_mode=start_mode, subtree=subtree,
                                                   page_size=page_size, **opts)

    path = _Forward[str]("The path whose children are cached.")

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

    def events(self, capacity: int = 1024) -> Any:
        """The events from now on as an EventStream (a cache without a codec); a full buffer fails it
        (ResourceExhausted: snapshot() has the state). Closing the cache ends it."""
        if not isinstance(self._c, _core.PathChildrenCache):
            raise TypeError("PathChildrenCache.events(): only for a cache without a codec (use on_event)")
        return self._stream(_core.path_children_cache_events(self._c, capacity))


class NodeCache(_CacheBase):
    """A local copy of one key (with a codec: decoded, as PathChildrenCache's nodes)."""

    def __init__(self, client: Client, key: str, *, codec: Optional[Codec] = None, client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """A local copy of ``key``, kept current by a watch; ``codec`` for typed values. client_id, session,
        session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        opts = _opts(client_id, session, session_ttl, metrics, session_factory=session_factory)
        typed = _typed(codec)
        if typed is None:
            self._c = _core.NodeCache(client._c, key, **opts)
        else:
            self._c = _core.TypedNodeCache(client._c, key, typed, **opts)

    current = _Forward[Optional[CachedNode]]("The node as last seen (no I/O), or None when the key is absent.")
    exists = _Forward[bool]("True when the key exists (as last seen).")

    def on_change(self, listener: Callable[[NodeEvent], None]) -> Subscription:
        """Runs ``listener`` with every change (a NodeEvent)."""
        return _keep(self, self._c.on_change(listener))

    def events(self, capacity: int = 1024) -> Any:
        """The events from now on as an EventStream (a cache without a codec); a full buffer fails it
        (ResourceExhausted: ``current`` has the state). Closing the cache ends it."""
        if not isinstance(self._c, _core.NodeCache):
            raise TypeError("NodeCache.events(): only for a cache without a codec (use on_change)")
        return self._stream(_core.node_cache_events(self._c, capacity))


_home("etcd_recipes", globals(), __all__)
