"""The facade: :class:`Recipes`, one object over a client that makes every
recipe with the same options (the C++ ``etcd::recipes::Recipes``).

The same class as ``etcd_recipes.Recipes``; its asyncio twin, which makes the
asyncio recipes, is ``etcd_recipes.aio.Recipes``.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any, Callable, Dict, Optional

from ._base import Bytes, _home, _opts
from .caches import NodeCache, PathChildrenCache
from .client import Client, Session
from .codecs import Codec
from .coordination import (
    DistributedAtomicLong, DistributedBarrier, DistributedBarrierWithCount, DistributedDoubleBarrier, TransientKeyValue,
)
from .discovery import ServiceDiscovery
from .group import GroupMember
from .election import LeaderLatch, LeaderObserver, LeaderSelector
from .errors import Closed
from .locks import DistributedMutex, DistributedReadWriteLock, DistributedSemaphore
from .queues import DistributedPriorityQueue, DistributedQueue, DistributedWorkQueue
from .shared_value import SharedValue

__all__ = ["Recipes"]

# The options every recipe takes, which a Recipes states once.
_SHARED_OPTIONS = ("client_id", "session", "session_ttl", "metrics")


class Recipes:
    """One object over a client that makes every recipe with the same options:
    the C++ ``etcd::recipes::Recipes`` (recipes.h), with the same method names.

        recipes = etcd_recipes.Recipes(client, client_id="billing-7", metrics=etcd_recipes.PrometheusMetrics())
        with recipes.mutex("/locks/invoices") as hold: ...
        leader = recipes.leader_latch("/elections/billing", "billing-7")
        jobs = recipes.work_queue("/queues/invoices", codec=etcd_recipes.codecs.JSON)

    Each method constructs its recipe (no I/O) and returns the class you would
    build yourself, with the shared options; the method's own keyword arguments
    (``client_id=``, ``session=``, ``session_ttl=``, ``metrics=``) override them,
    None keeping the shared one. C++'s typed_queue<T, C>(...) and the other
    typed_* are these methods with ``codec=``.

    Unlike C++ — whose recipes are values, closed by their destructors when the
    owner's scope ends — a Python recipe lives until it is garbage collected. So
    close() (or the end of ``with recipes:``) closes every recipe made here that
    is still alive (one that was collected has been closed already), and the
    facade makes no more (Closed). It holds them weakly: making many short-lived
    recipes does not keep them. The client is the caller's and stays open.
    """

    def __init__(self, client: Client, *, client_id: Optional[str] = None, session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        # Checked now, as any recipe would: a negative session_ttl, a metrics
        # object without add/observe/set (a TTL below 1 s is the recipes' to
        # refuse, at their first operation, as in C++).
        """Makes recipes on ``client`` with these options stated once. client_id, session, session_ttl, metrics:
        the options every recipe takes (see the package's docstring).
        """
        _opts(client_id, session, session_ttl, metrics, session_factory=session_factory)
        self._client = client
        self._shared: Dict[str, Any] = {"client_id": client_id, "session": session, "session_ttl": session_ttl,
                                        "metrics": metrics, "session_factory": session_factory}
        self._lock = threading.Lock()
        # id -> weak reference, each dropping itself when its recipe is
        # collected (not a WeakSet: a Mapping recipe, PathChildrenCache, is
        # unhashable).
        self._made: Dict[int, "weakref.ref[Any]"] = {}
        self._closed = False

    @property
    def client(self) -> Client:
        """The client the recipes use."""
        return self._client

    @property
    def options(self) -> Dict[str, Any]:
        """The shared options (client_id, session, session_ttl, metrics; None: the default)."""
        return dict(self._shared)

    def _make(self, kind: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        for option in _SHARED_OPTIONS:
            if kwargs.get(option) is None:
                kwargs[option] = self._shared[option]
        with self._lock:
            if self._closed:
                raise Closed("FAILED_PRECONDITION [closed]: Recipes is closed", "FAILED_PRECONDITION", 9,
                             "closed", "Recipes is closed")
            recipe = kind(self._client, *args, **kwargs)
            made, key = self._made, id(recipe)

            def forget(ref: "weakref.ref[Any]") -> None:
                # Runs when the recipe is collected, on whatever thread the
                # collection happens: single dict operations only.
                if made.get(key) is ref:
                    made.pop(key, None)

            made[key] = weakref.ref(recipe, forget)
        return recipe

    # The classes the methods make: the package's (etcd_recipes.X); aio.Recipes
    # makes aio's.
    _kinds = None  # type: Any

    # --- locks
    def mutex(self, name: str, **options: Any) -> DistributedMutex:
        """A DistributedMutex with these options."""
        return self._make(self._kinds.DistributedMutex, name, **options)

    def read_write_lock(self, name: str, **options: Any) -> DistributedReadWriteLock:
        """A DistributedReadWriteLock with these options."""
        return self._make(self._kinds.DistributedReadWriteLock, name, **options)

    def semaphore(self, name: str, permits: int, **options: Any) -> DistributedSemaphore:
        """A DistributedSemaphore with these options."""
        return self._make(self._kinds.DistributedSemaphore, name, permits, **options)

    # --- leader election
    def leader_latch(self, name: str, value: Bytes = "", **options: Any) -> LeaderLatch:
        """A LeaderLatch with these options."""
        return self._make(self._kinds.LeaderLatch, name, value, **options)

    def leader_selector(self, name: str, value: Bytes = "", callback: Optional[Callable[[Any], None]] = None,
                        **options: Any) -> LeaderSelector:
        """A LeaderSelector with these options."""
        return self._make(self._kinds.LeaderSelector, name, value, callback, **options)

    def leader_observer(self, name: str, **options: Any) -> LeaderObserver:
        """A LeaderObserver with these options."""
        return self._make(self._kinds.LeaderObserver, name, **options)

    # --- queues
    def queue(self, name: str, *, codec: Optional[Codec] = None, **options: Any) -> DistributedQueue:
        """A DistributedQueue with these options."""
        return self._make(self._kinds.DistributedQueue, name, codec=codec, **options)

    def priority_queue(self, name: str, *, codec: Optional[Codec] = None,
                       **options: Any) -> DistributedPriorityQueue:
        """A DistributedPriorityQueue with these options."""
        return self._make(self._kinds.DistributedPriorityQueue, name, codec=codec, **options)

    def work_queue(self, name: str, *, visibility_timeout: float = 30.0, max_deliveries: int = 5,
                   codec: Optional[Codec] = None, **options: Any) -> DistributedWorkQueue:
        """A DistributedWorkQueue with these options."""
        return self._make(self._kinds.DistributedWorkQueue, name, visibility_timeout=visibility_timeout,
                          max_deliveries=max_deliveries, codec=codec, **options)

    # --- barriers, counter, transient keys
    def barrier(self, name: str, *, wait_until_set: bool = False, **options: Any) -> DistributedBarrier:
        """A DistributedBarrier with these options."""
        return self._make(self._kinds.DistributedBarrier, name, wait_until_set=wait_until_set, **options)

    def barrier_with_count(self, name: str, parties: int, **options: Any) -> DistributedBarrierWithCount:
        """A DistributedBarrierWithCount with these options."""
        return self._make(self._kinds.DistributedBarrierWithCount, name, parties, **options)

    def double_barrier(self, name: str, parties: int, **options: Any) -> DistributedDoubleBarrier:
        """A DistributedDoubleBarrier with these options."""
        return self._make(self._kinds.DistributedDoubleBarrier, name, parties, **options)

    def counter(self, name: str, **options: Any) -> DistributedAtomicLong:
        """A DistributedAtomicLong with these options."""
        return self._make(self._kinds.DistributedAtomicLong, name, **options)

    def transient(self, key: str, value: Any, *, codec: Optional[Codec] = None,
                  **options: Any) -> TransientKeyValue:
        """A TransientKeyValue with these options."""
        return self._make(self._kinds.TransientKeyValue, key, value, codec=codec, **options)

    # --- caches, discovery
    def node_cache(self, key: str, *, codec: Optional[Codec] = None, **options: Any) -> NodeCache:
        """A NodeCache with these options."""
        return self._make(self._kinds.NodeCache, key, codec=codec, **options)

    def path_children_cache(self, path: str, *, start_mode: str = "normal", subtree: bool = False,
                            page_size: int = 1000, codec: Optional[Codec] = None,
                            **options: Any) -> PathChildrenCache:
        """A PathChildrenCache with these options."""
        return self._make(self._kinds.PathChildrenCache, path, start_mode=start_mode, subtree=subtree,
                          page_size=page_size, codec=codec, **options)

    def keyspace_view(self, key: str, *, start: str = "from_now", start_revision: int = 0, range_end: str = "",
                      page_size: int = 1000, **options: Any) -> Any:
        """A KeyspaceView with these options."""
        return self._make(self._kinds.KeyspaceView, key, start=start, start_revision=start_revision,
                          range_end=range_end, page_size=page_size, **options)

    def discovery(self, *, base_path: str = "/services", **options: Any) -> ServiceDiscovery:
        """A ServiceDiscovery with these options."""
        return self._make(self._kinds.ServiceDiscovery, base_path=base_path, **options)

    # --- shared value, group membership
    def shared_value(self, key: str, *, codec: Optional[Codec] = None, **options: Any) -> SharedValue:
        """A SharedValue with these options."""
        return self._make(self._kinds.SharedValue, key, codec=codec, **options)

    def group_member(self, group: str, id: str, payload: bytes = b"", **options: Any) -> GroupMember:
        """A GroupMember with these options."""
        return self._make(self._kinds.GroupMember, group, id, payload, **options)

    # --- lifecycle
    def close(self) -> None:
        """Closes every recipe made here that is still alive; then making one raises
        Closed. Idempotent. Each recipe's close() is its own (recipe.h): waiters end
        with Closed, holds are released without waiting."""
        with self._lock:
            self._closed = True
            # A copy to iterate: a collection during the loop drops entries
            # of self._made (forget above), never of the copy.
            made = self._made.copy()
            self._made.clear()
        for ref in made.values():
            recipe = ref()
            if recipe is not None:
                recipe.close()

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._closed

    def __enter__(self) -> "Recipes":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


Recipes._kinds = sys.modules[__package__]  # etcd_recipes, which imports this module

_home("etcd_recipes", globals(), __all__)
