"""Queues: FIFO, priority, and the at-least-once work queue.

The same classes as ``etcd_recipes`` has (one module per recipe family, as
``from etcd_recipes.queues import DistributedQueue``); their asyncio twins are in
:mod:`etcd_recipes.aio`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from . import _core
from ._base import _Forward, _Recipe, _home, _keep, _opts, _typed
from ._core import DeadLetter, Enqueued, Subscription
from .client import Client, Session
from .codecs import Codec
from .errors import Closed, DecodeFailed

__all__ = ["DistributedQueue", "DistributedPriorityQueue", "DistributedWorkQueue", "WorkItem", "Enqueued", "DeadLetter"]


class _QueueBase(_Recipe):
    def size(self, *, timeout: Optional[float] = None) -> int:
        """How many items there are (advisory: others enqueue and take meanwhile)."""
        return self._c.size().wait(timeout)

    def remove(self, id: str, *, timeout: Optional[float] = None) -> bool:
        """Removes item ``id`` without delivering it: True if this call deleted it, False
        if it was not there (taken, removed, never enqueued; for a work queue, also
        while a consumer holds it). ``id`` is a key of ``Enqueued.keys`` or its last
        segment; anything else raises InvalidArgument, nothing written. Of a remove and
        the takes of one item exactly one gets it."""
        return self._c.remove(id).wait(timeout)


class _Queue(_QueueBase):
    """Values are bytes, or what the queue's codec decodes.

    With a codec, an item whose value does not decode (poison) is never taken:
    the dequeue that meets it raises DecodeFailed naming its key, the item stays
    in the queue (remove it with ``remove(key)``),
    this object skips it from then on, and on_poison listeners hear of it.
    """

    def dequeue(self, timeout: Optional[float] = None) -> Any:
        """Takes the head item; waits while empty. Timeout when ``timeout`` ran out."""
        return self._c.dequeue().wait(timeout)

    def try_dequeue(self, timeout: Optional[float] = None) -> Any:
        """The head item if there is one now (or within ``timeout``), else None."""
        if timeout is None:
            return self._c.try_dequeue().wait(None)
        return self._c.dequeue().wait_or_none(timeout)

    def __iter__(self) -> Iterator[Any]:
        """Items as they come, forever; ends when the queue is closed.

        A poison item raises DecodeFailed from the iteration (the queue skips it
        from then on: iterating again goes on with the next item).
        """
        while True:
            try:
                yield self._c.dequeue().wait(None)
            except Closed:
                return

    def on_poison(self, listener: Callable[[str, DecodeFailed], None]) -> Subscription:
        """Runs with (key, DecodeFailed) for each item whose value does not decode
        (never for a queue without a codec)."""
        return _keep(self, self._c.on_poison(listener))


class DistributedQueue(_Queue):
    """FIFO by commit order; each item to exactly one consumer."""

    def __init__(self, client: Client, name: str, *, codec: Optional[Codec] = None, client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The FIFO queue under ``name``; ``codec`` for typed values. client_id, session, session_ttl, metrics: the
        options every recipe takes (see the package's docstring).
        """
        self._c = _queue_core(client, name, codec, _opts(client_id, session, session_ttl, metrics,
                                                         session_factory=session_factory))

    def enqueue(self, value: Any, *, timeout: Optional[float] = None) -> Enqueued:
        """Adds ``value`` at the tail in one Txn."""
        return self._c.enqueue(value).wait(timeout)

    def enqueue_all(self, values: Sequence[Any], *, timeout: Optional[float] = None) -> Enqueued:
        """Adds every value, in order, in one Txn: all or nothing."""
        return self._c.enqueue_all(list(values)).wait(timeout)


class DistributedPriorityQueue(_Queue):
    """Lowest priority (0..65535) first, FIFO within a priority."""

    def __init__(self, client: Client, name: str, *, codec: Optional[Codec] = None, client_id: Optional[str] = None,
                 session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The priority queue under ``name``; ``codec`` for typed values. client_id, session, session_ttl, metrics:
        the options every recipe takes (see the package's docstring).
        """
        self._c = _priority_queue_core(client, name, codec, _opts(client_id, session, session_ttl, metrics,
                                                                  session_factory=session_factory))

    def enqueue(self, value: Any, priority: int, *, timeout: Optional[float] = None) -> Enqueued:
        """Adds ``value`` at ``priority`` (0..65535, lower first) in one Txn."""
        return self._c.enqueue(value, priority).wait(timeout)

    def enqueue_all(self, values: Sequence[Any], priority: int, *,
                    timeout: Optional[float] = None) -> Enqueued:
        """Adds every value at ``priority``, in order, in one Txn: all or nothing."""
        return self._c.enqueue_all(list(values), priority).wait(timeout)


# The cores of the recipes that take a codec: the typed one (values through
# the codec, in C++'s typed recipe) or the bytes one. Shared with aio.
def _queue_core(client: Client, name: str, codec: Optional[Codec], opts: Dict[str, Any]) -> Any:
    typed = _typed(codec)
    if typed is None:
        return _core.DistributedQueue(client._c, name, **opts)
    return _core.TypedQueue(client._c, name, typed, **opts)


def _priority_queue_core(client: Client, name: str, codec: Optional[Codec], opts: Dict[str, Any]) -> Any:
    typed = _typed(codec)
    if typed is None:
        return _core.DistributedPriorityQueue(client._c, name, **opts)
    return _core.TypedPriorityQueue(client._c, name, typed, **opts)


def _work_queue_core(client: Client, name: str, codec: Optional[Codec], visibility_timeout: float,
                     max_deliveries: int, opts: Dict[str, Any]) -> Any:
    typed = _typed(codec)
    if typed is None:
        return _core.DistributedWorkQueue(client._c, name, visibility_timeout=visibility_timeout,
                                          max_deliveries=max_deliveries, **opts)
    return _core.TypedWorkQueue(client._c, name, typed, visibility_timeout=visibility_timeout,
                                max_deliveries=max_deliveries, **opts)


class _WorkItemBase:
    def __init__(self, core: Any) -> None:
        self._c = core
        self._settled = False

    value = _Forward[Any]("The payload: bytes, or what the queue's codec decoded.")
    id = _Forward[str]("The item's id (stable across deliveries).")
    key = _Forward[str]("The item's key in etcd.")
    attempt = _Forward[int]("Which delivery this is (1 for the first).")
    lost = _Forward[bool]("True once the claim was lost (the item may be redelivered to someone else).")


class WorkItem(_WorkItemBase):
    """A claimed item: ack() when done, requeue() to give it back.

    ``with item:`` acks when the block succeeds and requeues when it raises.
    """

    def ack(self, *, timeout: Optional[float] = None) -> bool:
        """True if acked under this claim; False if it was redelivered meanwhile."""
        self._settled = True
        return self._c.ack().wait(timeout)

    def requeue(self, delay: Optional[float] = None, *, timeout: Optional[float] = None) -> bool:
        """Gives the item back, delivered again after ``delay`` seconds; False if the claim was lost."""
        self._settled = True
        return self._c.requeue(delay).wait(timeout)

    def __enter__(self) -> "WorkItem":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if self._settled:
            return
        if exc_type is None:
            self.ack()
        else:
            self.requeue()


class _WorkQueueBase(_QueueBase):
    def dead_letters(self, *, timeout: Optional[float] = None) -> List[DeadLetter]:
        """The dead letters: items delivered max_deliveries times, with why."""
        return self._c.dead_letters().wait(timeout)


class DistributedWorkQueue(_WorkQueueBase):
    """At-least-once work: claims bound to the consumer's lease (the visibility timeout),
    dead letters after ``max_deliveries``.

    With a codec, an item whose value does not decode (poison) is not delivered:
    it goes to the dead letters at once (reason ``poison: ...`` naming the key),
    is recorded in errors() and told to on_error listeners; receive() waits on
    for the next item.
    """

    def __init__(self, client: Client, name: str, *, visibility_timeout: float = 30.0, max_deliveries: int = 5,
                 codec: Optional[Codec] = None, client_id: Optional[str] = None, session: Optional[Session] = None,
                 session_factory: Optional[Callable[[], Session]] = None,
                 session_ttl: Optional[float] = None, metrics: Any = None) -> None:
        """The work queue under ``name``. ``visibility_timeout``: how long a dead consumer's items stay
        hidden (its lease TTL, seconds). ``max_deliveries``: deliveries before an item is dead-lettered.
        ``codec`` for typed values.
        client_id, session, session_ttl, metrics: the options every recipe takes (see the package's docstring).
        """
        self._c = _work_queue_core(client, name, codec, visibility_timeout, max_deliveries,
                                   _opts(client_id, session, session_ttl, metrics, session_factory=session_factory))

    def enqueue(self, value: Any, *, delay: float = 0.0, timeout: Optional[float] = None) -> Enqueued:
        """Adds ``value``, delivered after ``delay`` seconds."""
        return self._c.enqueue(value, delay=delay).wait(timeout)

    def enqueue_all(self, values: Sequence[Any], *, delay: float = 0.0,
                    timeout: Optional[float] = None) -> Enqueued:
        """Adds every value, in order, in one Txn (all or nothing), delivered after ``delay``."""
        return self._c.enqueue_all(list(values), delay=delay).wait(timeout)

    def receive(self, *, timeout: Optional[float] = None) -> WorkItem:
        """Claims the next item; waits while none is ready. Timeout when ``timeout`` ran out."""
        return WorkItem(self._c.receive().wait(timeout))

    def try_receive(self, *, timeout: Optional[float] = None) -> Optional[WorkItem]:
        """Claims an item if one is ready now (None otherwise); with ``timeout``,
        waits up to that long for one."""
        if timeout is None:
            core = self._c.try_receive().wait(None)
        else:
            core = self._c.receive().wait_or_none(timeout)
        return WorkItem(core) if core is not None else None

    def items(self) -> Iterator[WorkItem]:
        """Claimed items as they come; ends when the queue is closed. Ack each one."""
        while True:
            try:
                yield WorkItem(self._c.receive().wait(None))
            except Closed:
                return

    __iter__ = items

    def requeue_dead(self, id: str, *, timeout: Optional[float] = None) -> bool:
        """Puts dead letter ``id`` back in the queue, its deliveries counted from 0; False if there was none."""
        return self._c.requeue_dead(id).wait(timeout)

    def purge_dead(self, id: str, *, timeout: Optional[float] = None) -> bool:
        """Deletes dead letter ``id``; False if there was none."""
        return self._c.purge_dead(id).wait(timeout)


_home("etcd_recipes", globals(), __all__)
