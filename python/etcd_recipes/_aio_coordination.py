"""asyncio twins of :mod:`etcd_recipes.coordination`'s classes: the counter, the
barriers, transient keys (see :mod:`etcd_recipes.aio`)."""

from __future__ import annotations

from typing import Any, Optional

from . import coordination as _blocking
from ._aio_base import _use_async_with, run
from ._base import _home

__all__ = ["DistributedAtomicLong", "DistributedBarrier", "DistributedBarrierWithCount", "DistributedDoubleBarrier",
           "TransientKeyValue"]


class DistributedAtomicLong(_blocking.DistributedAtomicLong):
    async def get(self, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.get(), timeout)

    async def set(self, value: int, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.set(value), timeout)

    async def add(self, delta: int, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.add(delta), timeout)

    async def increment(self, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.increment(), timeout)

    async def decrement(self, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.decrement(), timeout)

    async def compare_and_set(self, expected: int, desired: int, *,  # type: ignore[override]
                              timeout: Optional[float] = None) -> bool:
        return await run(self._c.compare_and_set(expected, desired), timeout)


class DistributedBarrier(_blocking.DistributedBarrier):
    async def set(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.set(), timeout)

    async def remove(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.remove(), timeout)

    async def wait(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.wait(), timeout, or_none=True))


class DistributedBarrierWithCount(_blocking.DistributedBarrierWithCount):
    async def wait(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.wait(), timeout, or_none=True))

    async def waiting(self, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.waiting(), timeout)


class DistributedDoubleBarrier(_blocking.DistributedDoubleBarrier):
    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]

    async def enter(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.enter(), timeout, or_none=True))

    async def leave(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.leave(), timeout, or_none=True))

    async def __aenter__(self) -> "DistributedDoubleBarrier":
        await run(self._c.enter())
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await run(self._c.leave())


class TransientKeyValue(_blocking.TransientKeyValue):
    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]

    async def set_value(self, value: Any, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.set_value(value), timeout)

    async def create(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.create(), timeout)

    async def release(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.release(), timeout)

    async def __aenter__(self) -> "TransientKeyValue":
        await self.create()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.release()
        self.close()


_home("etcd_recipes.aio", globals(), __all__)
