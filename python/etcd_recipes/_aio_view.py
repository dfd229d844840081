"""asyncio twins of :mod:`etcd_recipes.view`'s classes (see :mod:`etcd_recipes.aio`)."""

from __future__ import annotations

from typing import Any, AsyncIterator, Optional, TypeVar

from . import view as _blocking
from ._aio_base import _use_async_for, _use_async_with, run
from ._base import _home
from .client import Client

__all__ = ["KeyspaceView", "EventStream", "watch_stream"]

E = TypeVar("E")


class EventStream(_blocking.EventStream[E]):
    """etcd_recipes.EventStream awaited: ``await stream.next(timeout)``, ``async for e in stream`` (ends when
    the stream ends)."""

    async def next(self, timeout: Optional[float] = None) -> Optional[E]:  # type: ignore[override]
        """The next event; None once the stream ended; Timeout when ``timeout`` ran out."""
        return await run(self._s.next(), timeout)  # type: ignore[no-any-return]

    def __aiter__(self) -> AsyncIterator[E]:
        return self._events()

    async def _events(self) -> AsyncIterator[E]:
        while True:
            e = await self.next()
            if e is None:
                return
            yield e

    __iter__ = _use_async_for  # type: ignore[assignment]
    __enter__ = _use_async_with  # type: ignore[assignment]

    async def __aenter__(self) -> "EventStream[E]":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


def watch_stream(client: Client, key: str, *, prefix: bool = False, range_end: str = "", start_revision: int = 0,
                 prev_kv: bool = False, capacity: int = 1024) -> EventStream[Any]:
    """etcd_recipes.watch_stream, as an asyncio EventStream."""
    s = _blocking.watch_stream(client, key, prefix=prefix, range_end=range_end, start_revision=start_revision,
                               prev_kv=prev_kv, capacity=capacity)
    return EventStream(s._s)


class KeyspaceView(_blocking.KeyspaceView):
    """etcd_recipes.KeyspaceView with coroutines: ``await view.wait_initialized()``, ``async with``, and
    ``async for e in view.events()``."""

    _stream = EventStream

    async def wait_initialized(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        """True once the first read is loaded; False when ``timeout`` ran out."""
        return bool(await run(self._c.wait_initialized(), timeout, or_none=True))

    async def __aenter__(self) -> "KeyspaceView":
        self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


_home("etcd_recipes.aio", globals(), __all__)
