"""A gap-free view of the keys under a prefix, and streams of events.

KeyspaceView keeps every key under a prefix (or in a [key, range_end) range)
in memory, current at one revision, and reports each change with the old and
the new value; after a gap in its watch (a compaction while cut off) it reads
again and reports exactly the differences as one RESET event. EventStream is
the pull form of an event source: ``stream.next(timeout)``, ``for e in
stream`` (blocking) or ``async for e in stream`` (asyncio), with a bounded
buffer. The asyncio twin of KeyspaceView is in :mod:`etcd_recipes.aio`.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, Iterator, List, Optional, Tuple, TypeVar

from . import _core
from ._base import _Forward, _Recipe, _home, _keep, _opts
from ._core import KeyValue, KeyspaceEvent, Subscription  # noqa: F401
from .client import Client, Session

__all__ = ["KeyspaceView", "KeyspaceEvent", "EventStream", "watch_stream"]

E = TypeVar("E")


class EventStream(Generic[E]):
    """Events pulled one at a time, in order (the C++ ``etcd::Stream``).

    ``next(timeout)`` gives the next event, or None once the stream ended (closed,
    or its source closed); it raises Timeout when ``timeout`` ran out (the stream
    loses nothing) and the stream's error when it failed. A full buffer
    (``capacity`` events) does what the source says: a view folds it into one
    RESET with the differences, a raw watch or a cache fails the stream.
    ``for e in stream`` blocks until the stream ends; the asyncio twin
    (etcd_recipes.aio.EventStream) has ``async for``.
    """

    def __init__(self, core: Any) -> None:
        """Wraps one of the C++ side's streams (made by events() or watch_stream(), not by hand)."""
        self._s = core

    def next(self, timeout: Optional[float] = None) -> Optional[E]:
        """The next event; None once the stream ended; Timeout when ``timeout`` ran out."""
        return self._s.next().wait(timeout)  # type: ignore[no-any-return]

    def close(self) -> None:
        """Ends the stream (idempotent); next() then gives None."""
        self._s.close()

    buffered = _Forward[int]("Events buffered now.", via="_s")
    overflows = _Forward[int]("How many times an event found the buffer full.", via="_s")

    def __iter__(self) -> Iterator[E]:
        while True:
            e = self.next()
            if e is None:
                return
            yield e

    def __enter__(self) -> "EventStream[E]":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def watch_stream(client: Client, key: str, *, prefix: bool = False, range_end: str = "", start_revision: int = 0,
                 prev_kv: bool = False, capacity: int = 1024) -> EventStream[Any]:
    """A raw watch as an EventStream of WatchResponses; a full buffer fails it (ResourceExhausted), and the error
    that ends a watch (a compacted start revision) ends it. A KeyspaceView closes such gaps for you."""
    return EventStream(_core.watch_stream(client._c, key, prefix=prefix, range_end=range_end,
                                          start_revision=start_revision, prev_kv=prev_kv, capacity=capacity))


class KeyspaceView(_Recipe):
    """Every key under ``key`` (a prefix; or [key, range_end)), kept current by a watch, gap-free.

    ``view["k"]`` is the KeyValue of key "k" (KeyError if absent); snapshot() a
    consistent copy; on_event(listener) and events() hear ADDED / UPDATED / REMOVED
    (with ``previous`` and ``current``), INITIALIZED, and RESET (``changes``: the
    differences after a gap, ``cause``). It holds every key in memory.
    """

    def __init__(self, client: Client, key: str, *, start: str = "from_now", start_revision: int = 0,
                 range_end: str = "", page_size: int = 1000, client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """A view of the keys under ``key``. ``start``: "from_now" (the first read fills it silently),
        "with_snapshot" (its keys arrive as ADDED events), "from_revision" (read at ``start_revision``, then
        every change since; a compacted revision fails wait_initialized). ``range_end``: view [key, range_end).
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        opts = _opts(client_id, session, session_ttl, metrics, session_factory=session_factory)
        self._c = _core.KeyspaceView(client._c, key, start=start, start_revision=start_revision,
                                     range_end=range_end, page_size=page_size, **opts)

    key = _Forward[str]("The prefix (or the start of the range).")
    initialized = _Forward[bool]("True once the first read is loaded.")
    revision = _Forward[int]("The revision the view is exact at.")
    resyncs = _Forward[int]("Resyncs done after a gap.")

    def wait_initialized(self, timeout: Optional[float] = None) -> bool:
        """True once the first read is loaded; False when ``timeout`` ran out."""
        return bool(self._c.wait_initialized().wait_or_none(timeout))

    def snapshot(self) -> Tuple[List[KeyValue], int]:
        """Every key, in key order, and the revision they are current at (a copy; no I/O)."""
        return self._c.snapshot()  # type: ignore[no-any-return]

    def get(self, key: str) -> Optional[KeyValue]:
        """The KeyValue of ``key``, or None (no I/O)."""
        return self._c.get(key)  # type: ignore[no-any-return]

    def __getitem__(self, key: str) -> KeyValue:
        kv = self._c.get(key)
        if kv is None:
            raise KeyError(key)
        return kv  # type: ignore[no-any-return]

    def __len__(self) -> int:
        return len(self._c)

    def resync(self) -> None:
        """Reads the range again now and reports the differences as a RESET."""
        self._c.resync()

    def on_event(self, listener: Callable[[KeyspaceEvent], None]) -> Subscription:
        """Runs ``listener`` with every event (a KeyspaceEvent), in revision order."""
        return _keep(self, self._c.on_event(listener))

    def events(self, capacity: int = 1024) -> EventStream[KeyspaceEvent]:
        """The events from now on as an EventStream (open it before start() to hear the first read's); a full
        buffer folds into one RESET with the differences. Closing the view ends it."""
        return self._stream(self._c.events(capacity))

    _stream = EventStream

    def __enter__(self) -> "KeyspaceView":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_home("etcd_recipes", globals(), __all__)
