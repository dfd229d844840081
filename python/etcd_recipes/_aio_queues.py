"""asyncio twins of :mod:`etcd_recipes.queues`' classes (see :mod:`etcd_recipes.aio`)."""

from __future__ import annotations

from typing import Any, AsyncIterator, List, Optional, Sequence

from . import queues as _blocking
from ._aio_base import _use_async_for, _use_async_with, run
from ._base import _home
from ._core import DeadLetter, Enqueued
from .errors import Closed

__all__ = ["DistributedQueue", "DistributedPriorityQueue", "WorkItem", "DistributedWorkQueue"]


class _AsyncQueue:
    """Values as in etcd_recipes.DistributedQueue (bytes, or decoded by the codec; a
    poison item raises DecodeFailed and stays in the queue)."""

    _c: Any
    __iter__ = _use_async_for

    async def dequeue(self, timeout: Optional[float] = None) -> Any:
        """Takes the next value; waits while the queue is empty."""
        return await run(self._c.dequeue(), timeout)

    async def try_dequeue(self, timeout: Optional[float] = None) -> Any:
        """The next value if there is one now (None otherwise); with ``timeout``, waits up to that long."""
        if timeout is None:
            return await run(self._c.try_dequeue())
        return await run(self._c.dequeue(), timeout, or_none=True)

    async def size(self, *, timeout: Optional[float] = None) -> int:
        """How many items there are (advisory: others enqueue and take meanwhile)."""
        return await run(self._c.size(), timeout)

    async def remove(self, id: str, *, timeout: Optional[float] = None) -> bool:
        """Removes item ``id`` without delivering it (see etcd_recipes.DistributedQueue.remove)."""
        return await run(self._c.remove(id), timeout)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._items()

    async def _items(self) -> AsyncIterator[Any]:
        while True:
            try:
                yield await run(self._c.dequeue())
            except Closed:
                return


class DistributedQueue(_AsyncQueue, _blocking.DistributedQueue):  # type: ignore[misc]
    async def enqueue(self, value: Any, *, timeout: Optional[float] = None) -> Enqueued:  # type: ignore[override]
        return await run(self._c.enqueue(value), timeout)

    async def enqueue_all(self, values: Sequence[Any], *,  # type: ignore[override]
                          timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue_all(list(values)), timeout)


class DistributedPriorityQueue(_AsyncQueue, _blocking.DistributedPriorityQueue):  # type: ignore[misc]
    async def enqueue(self, value: Any, priority: int, *,  # type: ignore[override]
                      timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue(value, priority), timeout)

    async def enqueue_all(self, values: Sequence[Any], priority: int, *,  # type: ignore[override]
                          timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue_all(list(values), priority), timeout)


class WorkItem(_blocking.WorkItem):
    """``async with item:`` acks on success, requeues on an exception."""

    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]

    async def ack(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        self._settled = True
        return await run(self._c.ack(), timeout)

    async def requeue(self, delay: Optional[float] = None, *,  # type: ignore[override]
                      timeout: Optional[float] = None) -> bool:
        self._settled = True
        return await run(self._c.requeue(delay), timeout)

    async def __aenter__(self) -> "WorkItem":
        return self

    async def __aexit__(self, exc_type: Any, *exc: Any) -> None:
        if self._settled:
            return
        if exc_type is None:
            await self.ack()
        else:
            await self.requeue()


class DistributedWorkQueue(_blocking.DistributedWorkQueue):
    __iter__ = _use_async_for  # type: ignore[assignment]

    async def enqueue(self, value: Any, *, delay: float = 0.0,  # type: ignore[override]
                      timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue(value, delay=delay), timeout)

    async def enqueue_all(self, values: Sequence[Any], *, delay: float = 0.0,  # type: ignore[override]
                          timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue_all(list(values), delay=delay), timeout)

    async def receive(self, *, timeout: Optional[float] = None) -> WorkItem:  # type: ignore[override]
        return WorkItem(await run(self._c.receive(), timeout))

    async def try_receive(self, *, timeout: Optional[float] = None) -> Optional[WorkItem]:  # type: ignore[override]
        if timeout is None:
            core = await run(self._c.try_receive())
        else:
            core = await run(self._c.receive(), timeout, or_none=True)
        return WorkItem(core) if core is not None else None

    async def size(self, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.size(), timeout)

    async def dead_letters(self, *, timeout: Optional[float] = None) -> List[DeadLetter]:  # type: ignore[override]
        return await run(self._c.dead_letters(), timeout)

    async def requeue_dead(self, id: str, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.requeue_dead(id), timeout)

    async def purge_dead(self, id: str, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.purge_dead(id), timeout)

    async def remove(self, id: str, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.remove(id), timeout)

    def __aiter__(self) -> AsyncIterator[WorkItem]:
        return self.items()

    async def items(self) -> AsyncIterator[WorkItem]:  # type: ignore[override]
        while True:
            try:
                yield WorkItem(await run(self._c.receive()))
            except Closed:
                return


_home("etcd_recipes.aio", globals(), __all__)
