"""asyncio twins of :mod:`etcd_recipes.client`'s classes (see :mod:`etcd_recipes.aio`)."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, List, Optional

from . import client as _blocking
from ._aio_base import _use_async_for, _wait_armed, run
from ._base import Bytes, _home
from ._core import DeleteResponse, Event, GetResponse, PutResponse, Txn, TxnResponse, WatchResponse

__all__ = ["Client", "Lease", "Session", "Watch"]


class Client(_blocking.Client):
    """etcd_recipes.Client with awaitable calls (``await client.get("k")``)."""

    async def get(self, key: Bytes, *, prefix: bool = False, range_end: Bytes = b"",  # type: ignore[override]
                  limit: int = 0, revision: int = 0, keys_only: bool = False, count_only: bool = False,
                  serializable: bool = False, sort_order: int = 0, sort_target: int = 0,
                  timeout: Optional[float] = None) -> GetResponse:
        return await run(self._c.get(key, prefix=prefix, range_end=range_end, limit=limit, revision=revision,
                                     keys_only=keys_only, count_only=count_only, serializable=serializable,
                                     sort_order=sort_order, sort_target=sort_target), timeout)

    async def put(self, key: Bytes, value: Bytes, *, lease: int = 0, prev_kv: bool = False,  # type: ignore[override]
                  ignore_value: bool = False, ignore_lease: bool = False,
                  timeout: Optional[float] = None) -> PutResponse:
        return await run(self._c.put(key, value, lease=lease, prev_kv=prev_kv, ignore_value=ignore_value,
                                     ignore_lease=ignore_lease), timeout)

    async def delete(self, key: Bytes, *, prefix: bool = False, range_end: Bytes = b"",  # type: ignore[override]
                     prev_kv: bool = False, timeout: Optional[float] = None) -> DeleteResponse:
        return await run(self._c.delete(key, prefix=prefix, range_end=range_end, prev_kv=prev_kv), timeout)

    async def txn(self, txn: Txn, *, timeout: Optional[float] = None) -> TxnResponse:  # type: ignore[override]
        return await run(self._c.txn(txn), timeout)

    async def compact(self, revision: int, *, physical: bool = False,  # type: ignore[override]
                      timeout: Optional[float] = None) -> Any:
        return await run(self._c.compact(revision, physical=physical), timeout)

    async def lease_grant(self, ttl: float, *, id: int = 0, timeout: Optional[float] = None) -> Any:  # type: ignore[override]
        return await run(self._c.lease_grant(ttl, id=id), timeout)

    async def lease_revoke(self, id: int, *, timeout: Optional[float] = None) -> Any:  # type: ignore[override]
        return await run(self._c.lease_revoke(id), timeout)

    async def lease_time_to_live(self, id: int, *, keys: bool = False,  # type: ignore[override]
                                 timeout: Optional[float] = None) -> Any:
        return await run(self._c.lease_time_to_live(id, keys=keys), timeout)

    async def lease_leases(self, *, timeout: Optional[float] = None) -> List[int]:  # type: ignore[override]
        return await run(self._c.lease_leases(), timeout)

    async def lease(self, ttl: float, *, timeout: Optional[float] = None) -> "Lease":  # type: ignore[override]
        return Lease(await run(self._c.lease(ttl), timeout))

    _watch_type = None  # type: Any  # Watch, below

    async def status(self, endpoint: str = "", *, timeout: Optional[float] = None) -> Any:  # type: ignore[override]
        return await run(self._c.status(endpoint), timeout)

    async def member_list(self, *, timeout: Optional[float] = None) -> Any:  # type: ignore[override]
        return await run(self._c.member_list(), timeout)

    async def ping(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.ping(), timeout)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


class Lease(_blocking.Lease):
    async def revoke(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.revoke(), timeout)


class Session(_blocking.Session):
    async def start(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.start(), timeout)

    async def close(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.close(), timeout)


class Watch(_blocking.Watch):
    """``async for response in watch``; cancel() ends the iteration."""

    __iter__ = __next__ = _use_async_for  # type: ignore[assignment]

    def __aiter__(self) -> "Watch":
        return self

    async def __anext__(self) -> WatchResponse:
        while True:
            try:
                response = self._c.poll()
            except StopIteration:
                raise StopAsyncIteration from None
            if response is not None:
                return response
            await _wait_armed(self._c.arm)

    async def get(self, timeout: Optional[float] = None) -> Optional[WatchResponse]:  # type: ignore[override]
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except asyncio.TimeoutError:
            return None
        except StopAsyncIteration:
            raise StopIteration from None

    async def events(self) -> AsyncIterator[Event]:  # type: ignore[override]
        async for response in self:
            for event in response.events:
                yield event

    async def wait_created(self, timeout: float = 5.0) -> bool:  # type: ignore[override]
        # The C++ wait is a bounded block: on a thread of the default executor, not the loop.
        return await asyncio.get_running_loop().run_in_executor(None, self._c.wait_created, timeout)


Client._watch_type = Watch


_home("etcd_recipes.aio", globals(), __all__)
