"""asyncio twin of :func:`etcd_recipes.reap` (see :mod:`etcd_recipes.aio`)."""

from typing import Optional

from . import _core
from ._aio_base import run
from ._core import ReapReport
from .client import Client

__all__ = ["reap"]


async def reap(client: Client, prefix: str, *, idle: float = 600.0, dry_run: bool = False,
               timeout: Optional[float] = None) -> ReapReport:
    """etcd_recipes.reap, awaited: the wait of ``idle`` holds no thread."""
    return await run(_core.reap(client._c, prefix, idle=idle, dry_run=dry_run), timeout)
