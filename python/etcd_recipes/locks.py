"""Locks: a mutex, a read-write lock, a semaphore, and the Hold each grants.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.locks import DistributedMutex``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from . import (  # noqa: F401
    DistributedMutex, DistributedReadWriteLock, LockView, DistributedSemaphore, Hold,
)

__all__ = ["DistributedMutex", "DistributedReadWriteLock", "LockView", "DistributedSemaphore", "Hold"]
