"""asyncio twins of :mod:`etcd_recipes.caches`' classes (see :mod:`etcd_recipes.aio`)."""

from __future__ import annotations

from typing import Any, Optional

from . import caches as _blocking
from ._aio_base import run
from ._base import _home

__all__ = ["PathChildrenCache", "NodeCache"]


class _AsyncCache:
    _c: Any

    @staticmethod
    def _stream(core: Any) -> Any:
        from ._aio_view import EventStream

        return EventStream(core)

    async def wait_initialized(self, timeout: Optional[float] = None) -> bool:
        """True once the first read is loaded; False when ``timeout`` ran out."""
        return bool(await run(self._c.wait_initialized(), timeout, or_none=True))


class PathChildrenCache(_AsyncCache, _blocking.PathChildrenCache):  # type: ignore[misc]
    pass


class NodeCache(_AsyncCache, _blocking.NodeCache):  # type: ignore[misc]
    pass


_home("etcd_recipes.aio", globals(), __all__)
