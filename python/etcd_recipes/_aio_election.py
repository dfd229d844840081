"""asyncio twins of :mod:`etcd_recipes.election`'s classes (see :mod:`etcd_recipes.aio`)."""

from __future__ import annotations

import asyncio
from typing import Any, List, Optional

from . import election as _blocking
from ._aio_base import Hold, _hold, _wait_armed, run
from ._base import Bytes, _home
from ._core import LeaderInfo, Participant
from .errors import Timeout

__all__ = ["LeaderTerm", "LeaderLatch", "LeaderSelector", "LeaderObserver"]


class LeaderTerm(Hold, _blocking.LeaderTerm):  # type: ignore[misc]
    async def proclaim(self, value: Bytes, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.proclaim(value), timeout)


class LeaderLatch(_blocking.LeaderLatch):
    async def await_leadership(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.await_leadership(), timeout, or_none=True))

    @property
    def hold(self) -> Optional[Hold]:  # type: ignore[override]
        """The leadership's Hold (an aio Hold) while leading, else None."""
        return _hold(self._c.hold)

    async def resign(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.resign(), timeout)

    async def proclaim(self, value: Bytes, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.proclaim(value), timeout)

    async def participants(self, *, timeout: Optional[float] = None) -> List[Participant]:  # type: ignore[override]
        return await run(self._c.participants(), timeout)

    async def leader(self, *, timeout: Optional[float] = None) -> Optional[LeaderInfo]:  # type: ignore[override]
        return await run(self._c.leader(), timeout)

    async def __aenter__(self) -> "LeaderLatch":
        self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


class _AsyncLeadership:
    def __init__(self, selector: "LeaderSelector", timeout: Optional[float]) -> None:
        self._selector = selector
        self._timeout = timeout

    async def _wait(self) -> LeaderTerm:
        core = self._selector._c
        core.join()
        while True:
            term = core.poll_term()
            if term is not None:
                return LeaderTerm(term)
            await _wait_armed(core.arm)

    async def __aenter__(self) -> LeaderTerm:
        try:
            return await asyncio.wait_for(self._wait(), self._timeout)
        except asyncio.TimeoutError:
            self._selector._c.resign()
            raise Timeout("leadership: the timeout ran out", "DEADLINE_EXCEEDED", 4) from None
        except asyncio.CancelledError:
            self._selector._c.resign()
            raise

    async def __aexit__(self, *exc: Any) -> None:
        # end_term waits (bounded) for the term's callback to return: not on the loop.
        await asyncio.get_running_loop().run_in_executor(None, self._selector._c.end_term)


class LeaderSelector(_blocking.LeaderSelector):
    """``async with selector.leadership() as term:`` (no callback)."""

    def leadership(self, timeout: Optional[float] = None) -> _AsyncLeadership:  # type: ignore[override]
        return _AsyncLeadership(self, timeout)

    async def participants(self, *, timeout: Optional[float] = None) -> List[Participant]:  # type: ignore[override]
        return await run(self._c.participants(), timeout)

    async def leader(self, *, timeout: Optional[float] = None) -> Optional[LeaderInfo]:  # type: ignore[override]
        return await run(self._c.leader(), timeout)


class LeaderObserver(_blocking.LeaderObserver):
    async def wait_initialized(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.wait_initialized(), timeout, or_none=True))

    async def leader(self, *, timeout: Optional[float] = None) -> Optional[LeaderInfo]:  # type: ignore[override]
        return await run(self._c.leader(), timeout)


_home("etcd_recipes.aio", globals(), __all__)
