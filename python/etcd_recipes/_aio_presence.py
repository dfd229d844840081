"""asyncio twin of :mod:`etcd_recipes.presence`' PresenceLease (see :mod:`etcd_recipes.aio`)."""

from __future__ import annotations

from typing import Any, Optional

from . import presence as _blocking
from ._aio_base import _use_async_with, run
from ._base import _home

__all__ = ["PresenceLease"]


class PresenceLease(_blocking.PresenceLease):
    """``async with PresenceLease(client, ttl=10, keys={...})``: the keys exist (healing) inside."""

    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]

    async def start(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.start(), timeout)
        if self._c.keys:
            _blocking._raise_taken(await run(self._c.put_keys(), timeout))

    async def close(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.close(), timeout)

    async def __aenter__(self) -> "PresenceLease":
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


_home("etcd_recipes.aio", globals(), __all__)
