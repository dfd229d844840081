"""What the asyncio twins (:mod:`etcd_recipes.aio`) share: awaiting the C++
side's calls (run), parking until it wakes us, the refusals of a blocking
``with``/``for``, and the asyncio Hold.

Private: users import these names from :mod:`etcd_recipes.aio`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Optional

from . import _base as _blocking
from ._base import _home
from ._core import Txn, TxnResponse
from .errors import Timeout

__all__ = ["run", "Hold"]


def _settle(fut: "asyncio.Future[Any]", ok: bool, value: Any) -> None:
    if fut.done():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)


async def run(call: Any, timeout: Optional[float] = None, *, or_none: bool = False) -> Any:
    """Awaits one of the C++ side's pending calls (``_core.PendingCall``).

    With ``or_none``, running out of time gives None instead of raising Timeout.
    """
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()

    def resolve(ok: bool, value: Any) -> None:  # on the client's executor, with the GIL
        try:
            loop.call_soon_threadsafe(_settle, fut, ok, value)
        except RuntimeError:
            pass  # the loop was closed: nobody awaits this any more

    op = call.start(resolve, timeout)
    try:
        result = await fut
    except asyncio.CancelledError:
        op.cancel()
        raise
    except Timeout as e:
        if or_none and e.reason != "outcome_unknown":
            return None
        raise
    return True if (or_none and result is None) else result


async def _wait_armed(arm: Callable[[Callable[[], None]], bool]) -> None:
    """Parks until the C++ side calls the waker that ``arm`` registered
    (returns at once when ``arm`` says something is already there)."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        try:
            loop.call_soon_threadsafe(_settle, fut, True, None)
        except RuntimeError:
            pass

    if arm(wake):
        await fut


def _use_async_with(self: Any, *exc: Any) -> None:
    raise TypeError(f"etcd_recipes.aio.{type(self).__name__}: use `async with` (its waits are coroutines)")


def _use_async_for(self: Any) -> None:
    raise TypeError(f"etcd_recipes.aio.{type(self).__name__}: use `async for` (its waits are coroutines)")


# --- the hold -------------------------------------------------------------------------------


class Hold(_blocking.Hold):
    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]

    async def guarded(self, txn: Txn, *, timeout: Optional[float] = None) -> TxnResponse:  # type: ignore[override]
        return await run(self._c.guarded(txn), timeout)

    async def release(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.release(), timeout)

    async def __aenter__(self) -> "Hold":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.release()


def _hold(core: Any) -> Optional[Hold]:
    return Hold(core) if core is not None else None


_home("etcd_recipes.aio", globals(), __all__)
