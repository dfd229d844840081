"""asyncio twins of :mod:`etcd_recipes.shared_value`'s and :mod:`etcd_recipes.group`'s
classes (see :mod:`etcd_recipes.aio`)."""

from __future__ import annotations

from typing import Any, Optional

from . import group as _group
from . import shared_value as _shared_value
from ._aio_base import _use_async_with, run
from ._base import _home

__all__ = ["SharedValue", "GroupMember"]


class SharedValue(_shared_value.SharedValue):
    async def set(self, value: Any, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.set(value), timeout)

    async def compare_and_set(self, expected_revision: int, value: Any, *,  # type: ignore[override]
                              timeout: Optional[float] = None) -> bool:
        return await run(self._c.compare_and_set(expected_revision, value), timeout)

    async def try_set(self, value: Any, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.try_set(value), timeout)

    async def wait_initialized(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.wait_initialized(), timeout, or_none=True))

    async def __aenter__(self) -> "SharedValue":
        self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


class GroupMember(_group.GroupMember):
    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]

    async def join(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.join(), timeout)

    async def set_payload(self, payload: bytes, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.set_payload(payload), timeout)

    async def leave(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.leave(), timeout)

    async def wait_initialized(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.wait_initialized(), timeout, or_none=True))

    async def __aenter__(self) -> "GroupMember":
        self.start()
        await self.join()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.leave()
        self.close()


_home("etcd_recipes.aio", globals(), __all__)
