"""asyncio twins of :mod:`etcd_recipes.locks`' classes (see :mod:`etcd_recipes.aio`)."""

from __future__ import annotations

from typing import Any, Optional

from .client import Txn, TxnResponse

from . import locks as _blocking
from ._aio_base import Hold, _hold, _use_async_with, run
from ._base import _home

__all__ = ["DistributedMutex", "LockView", "DistributedReadWriteLock", "DistributedSemaphore", "MultiLock", "MultiHold"]


class _AsyncLock:
    _c: Any
    __enter__ = __exit__ = _use_async_with

    @property
    def hold(self) -> Optional[Hold]:
        """The current hold (an aio Hold), or None."""
        return _hold(self._c.hold)

    async def acquire(self, timeout: Optional[float] = None) -> Hold:
        """Waits for the lock; Timeout when ``timeout`` ran out."""
        return Hold(await run(self._c.acquire(), timeout))

    async def try_acquire(self, timeout: Optional[float] = None) -> Optional[Hold]:
        """The hold if free now (None otherwise); with ``timeout``, waits up to that long."""
        if timeout is None:
            return _hold(await run(self._c.try_acquire()))
        return _hold(await run(self._c.acquire(), timeout, or_none=True))

    async def release(self, *, timeout: Optional[float] = None) -> bool:
        """Releases the current hold; False if there was none."""
        return await run(self._c.release(), timeout)

    async def __aenter__(self) -> Hold:
        return await self.acquire()

    async def __aexit__(self, *exc: Any) -> None:
        await self.release()


class DistributedMutex(_AsyncLock, _blocking.DistributedMutex):  # type: ignore[misc]
    async def request_release(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.request_release(), timeout)


class LockView(_AsyncLock, _blocking.LockView):  # type: ignore[misc]
    pass


class DistributedReadWriteLock(_blocking.DistributedReadWriteLock):
    _lock_view = LockView

    async def downgrade(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.downgrade(), timeout)


class DistributedSemaphore(_blocking.DistributedSemaphore):
    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]

    async def acquire(self, timeout: Optional[float] = None) -> Hold:  # type: ignore[override]
        return Hold(await run(self._c.acquire(), timeout))

    async def try_acquire(self, timeout: Optional[float] = None) -> Optional[Hold]:  # type: ignore[override]
        if timeout is None:
            return _hold(await run(self._c.try_acquire()))
        return _hold(await run(self._c.acquire(), timeout, or_none=True))

    async def available_permits(self, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.available_permits(), timeout)

    async def resize(self, permits: int, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.resize(permits), timeout)

    async def __aenter__(self) -> Hold:
        permit = await self.acquire()
        self._entered.append(permit)
        return permit

    async def __aexit__(self, *exc: Any) -> None:
        await self._entered.pop().release()


class MultiHold(_blocking.MultiHold):
    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]

    @property
    def holds(self) -> Any:
        """One aio Hold per name, in ``names`` order."""
        return [Hold(h) for h in self._c.holds]

    def hold(self, name: str) -> Optional[Hold]:
        return _hold(self._c.hold(name))

    async def guarded(self, txn: Txn, *, timeout: Optional[float] = None) -> TxnResponse:  # type: ignore[override]
        return await run(self._c.guarded(txn), timeout)

    async def release(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.release(), timeout)

    async def __aenter__(self) -> "MultiHold":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.release()


class MultiLock(_blocking.MultiLock):
    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]
    _hold_cls = MultiHold

    async def acquire(self, timeout: Optional[float] = None) -> MultiHold:  # type: ignore[override]
        return MultiHold(await run(self._c.acquire(), timeout))

    async def try_acquire(self, timeout: Optional[float] = None) -> Optional[MultiHold]:  # type: ignore[override]
        if timeout is None:
            core = await run(self._c.try_acquire())
        else:
            core = await run(self._c.acquire(), timeout, or_none=True)
        return MultiHold(core) if core is not None else None

    async def release(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.release(), timeout)

    async def __aenter__(self) -> MultiHold:
        return await self.acquire()

    async def __aexit__(self, *exc: Any) -> None:
        await self.release()


_home("etcd_recipes.aio", globals(), __all__)
