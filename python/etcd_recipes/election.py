"""Leader election: a latch, a selector with terms, an observer.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.election import LeaderLatch``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from . import (  # noqa: F401
    LeaderLatch, LeaderSelector, LeaderTerm, LeaderObserver, Participant, LeaderInfo,
)

__all__ = ["LeaderLatch", "LeaderSelector", "LeaderTerm", "LeaderObserver", "Participant", "LeaderInfo"]
