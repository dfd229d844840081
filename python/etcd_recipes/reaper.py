"""reap(): removes the bookkeeping keys that a crashed process leaves behind
(a queue's producer key, a counter's receipt, a semaphore's permit count),
each only where no live process can need it (etcd/recipes/reaper.h)."""

from typing import Optional

from . import _core
from ._core import ReapedKey, ReapReport
from .client import Client

__all__ = ["reap", "ReapedKey", "ReapReport"]


def reap(client: Client, prefix: str, *, idle: float = 600.0, dry_run: bool = False,
         timeout: Optional[float] = None) -> ReapReport:
    """Finds the bookkeeping keys under ``prefix`` (a key prefix such as ``"/app/"``; empty is InvalidArgument)
    and removes, each with a guarded delete, a producer key or counter receipt unchanged for ``idle`` seconds
    (keep it far above your enqueue and add deadlines) and a permit count nobody holds or waits on. The call
    waits ``idle`` before deleting. ``dry_run``: the same reads and guards, nothing deleted. The ReapReport
    lists each key found (``key``, ``recipe``, ``kind``, ``role``, ``reaped``, ``kept_because``); ``reaped``
    counts the keys removed (with dry_run: that would have been)."""
    return _core.reap(client._c, prefix, idle=idle, dry_run=dry_run).wait(timeout)
