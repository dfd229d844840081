"""asyncio twins of etcd_recipes' classes: the same names, methods and arguments,
with ``await``, ``async with`` and ``async for``. Each twin is a subclass of the
blocking class: what does no I/O (properties, listeners, pick()) is the same
method, and every method that waits for etcd is a coroutine here
(tests/test_api_parity.py keeps them equal).

No thread waits on your behalf: each call is started on the C++ async core, and
its completion (on the client's executor thread) hands the result to your event
loop with ``loop.call_soon_threadsafe``. Cancelling the awaiting task cancels the
C++ call; a hold or work item granted in that same instant is released/requeued.

    async with etcd_recipes.aio.Client(endpoints) as client:
        mutex = etcd_recipes.aio.DistributedMutex(client, "/locks/orders")
        async with mutex as hold:
            ...
        async for item in etcd_recipes.aio.DistributedQueue(client, "/q"):
            ...
        async with etcd_recipes.aio.Recipes(client, client_id="billing-7") as recipes:
            async with recipes.mutex("/locks/orders") as hold:
                ...
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, AsyncIterator, Callable, List, Optional, Sequence

from . import _core
from . import Bytes, Closed, Codec, DecodeFailed, Timeout
from . import (  # noqa: F401  (plain data, shared with the blocking API)
    CachedNode, ChildEvent, Compare, DeadLetter, Enqueued, Event, GetResponse, LeaderInfo, NodeEvent, Op,
    Participant, PrometheusMetrics, PutResponse, DeleteResponse, ServiceInstance, Subscription, Txn, TxnResponse,
    TypedCachedNode, TypedChildEvent, TypedNodeEvent, WatchResponse, codecs,
)
import etcd_recipes as _blocking

__all__ = [
    "Client", "Lease", "Watch", "Hold", "LeaderTerm", "DistributedMutex", "DistributedReadWriteLock", "LockView",
    "DistributedSemaphore", "LeaderLatch", "LeaderSelector", "LeaderObserver", "DistributedQueue",
    "DistributedPriorityQueue", "DistributedWorkQueue", "WorkItem", "DistributedAtomicLong", "DistributedBarrier",
    "DistributedBarrierWithCount", "DistributedDoubleBarrier", "TransientKeyValue", "PathChildrenCache",
    "NodeCache", "ServiceRegistry", "ServiceCache", "ServiceDiscovery", "ServiceProvider", "Recipes", "Session",
    "run",
]


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


# --- client --------------------------------------------------------------------------


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

    _watch_type: Any = None  # Watch, below

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


# --- holds and locks ---------------------------------------------------------------------


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


class _AsyncLock:
    _c: Any
    __enter__ = __exit__ = _use_async_with

    @property
    def hold(self) -> Optional[Hold]:
        """The current hold (an aio Hold), or None."""
        return _hold(self._c.hold)

    async def acquire(self, timeout: Optional[float] = None) -> Hold:
        """Waits for the lock; Timeout when ``timeout`` ran out."""
        return Hold(await run(self._c.acquire(), timeout))

    async def try_acquire(self, timeout: Optional[float] = None) -> Optional[Hold]:
        """The hold if free now (None otherwise); with ``timeout``, waits up to that long."""
        if timeout is None:
            return _hold(await run(self._c.try_acquire()))
        return _hold(await run(self._c.acquire(), timeout, or_none=True))

    async def release(self, *, timeout: Optional[float] = None) -> bool:
        """Releases the current hold; False if there was none."""
        return await run(self._c.release(), timeout)

    async def __aenter__(self) -> Hold:
        return await self.acquire()

    async def __aexit__(self, *exc: Any) -> None:
        await self.release()


class DistributedMutex(_AsyncLock, _blocking.DistributedMutex):  # type: ignore[misc]
    pass


class LockView(_AsyncLock, _blocking.LockView):  # type: ignore[misc]
    pass


class DistributedReadWriteLock(_blocking.DistributedReadWriteLock):
    _lock_view = LockView

    async def downgrade(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.downgrade(), timeout)


class DistributedSemaphore(_blocking.DistributedSemaphore):
    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]

    async def acquire(self, timeout: Optional[float] = None) -> Hold:  # type: ignore[override]
        return Hold(await run(self._c.acquire(), timeout))

    async def try_acquire(self, timeout: Optional[float] = None) -> Optional[Hold]:  # type: ignore[override]
        if timeout is None:
            return _hold(await run(self._c.try_acquire()))
        return _hold(await run(self._c.acquire(), timeout, or_none=True))

    async def available_permits(self, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.available_permits(), timeout)

    async def __aenter__(self) -> Hold:
        permit = await self.acquire()
        self._entered.append(permit)
        return permit

    async def __aexit__(self, *exc: Any) -> None:
        await self._entered.pop().release()


# --- elections -----------------------------------------------------------------------------


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


# --- queues --------------------------------------------------------------------------------


class _AsyncQueue:
    """Values as in etcd_recipes.DistributedQueue (bytes, or decoded by the codec; a
    poison item raises DecodeFailed and stays in the queue)."""

    _c: Any
    __iter__ = _use_async_for

    async def dequeue(self, timeout: Optional[float] = None) -> Any:
        """Takes the next value; waits while the queue is empty."""
        return await run(self._c.dequeue(), timeout)

    async def try_dequeue(self, timeout: Optional[float] = None) -> Any:
        """The next value if there is one now (None otherwise); with ``timeout``, waits up to that long."""
        if timeout is None:
            return await run(self._c.try_dequeue())
        return await run(self._c.dequeue(), timeout, or_none=True)

    async def size(self, *, timeout: Optional[float] = None) -> int:
        """How many items there are (advisory: others enqueue and take meanwhile)."""
        return await run(self._c.size(), timeout)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._items()

    async def _items(self) -> AsyncIterator[Any]:
        while True:
            try:
                yield await run(self._c.dequeue())
            except Closed:
                return


class DistributedQueue(_AsyncQueue, _blocking.DistributedQueue):  # type: ignore[misc]
    async def enqueue(self, value: Any, *, timeout: Optional[float] = None) -> Enqueued:  # type: ignore[override]
        return await run(self._c.enqueue(value), timeout)

    async def enqueue_all(self, values: Sequence[Any], *,  # type: ignore[override]
                          timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue_all(list(values)), timeout)


class DistributedPriorityQueue(_AsyncQueue, _blocking.DistributedPriorityQueue):  # type: ignore[misc]
    async def enqueue(self, value: Any, priority: int, *,  # type: ignore[override]
                      timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue(value, priority), timeout)

    async def enqueue_all(self, values: Sequence[Any], priority: int, *,  # type: ignore[override]
                          timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue_all(list(values), priority), timeout)


class WorkItem(_blocking.WorkItem):
    """``async with item:`` acks on success, requeues on an exception."""

    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]

    async def ack(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        self._settled = True
        return await run(self._c.ack(), timeout)

    async def requeue(self, delay: Optional[float] = None, *,  # type: ignore[override]
                      timeout: Optional[float] = None) -> bool:
        self._settled = True
        return await run(self._c.requeue(delay), timeout)

    async def __aenter__(self) -> "WorkItem":
        return self

    async def __aexit__(self, exc_type: Any, *exc: Any) -> None:
        if self._settled:
            return
        if exc_type is None:
            await self.ack()
        else:
            await self.requeue()


class DistributedWorkQueue(_blocking.DistributedWorkQueue):
    __iter__ = _use_async_for  # type: ignore[assignment]

    async def enqueue(self, value: Any, *, delay: float = 0.0,  # type: ignore[override]
                      timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue(value, delay=delay), timeout)

    async def enqueue_all(self, values: Sequence[Any], *, delay: float = 0.0,  # type: ignore[override]
                          timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue_all(list(values), delay=delay), timeout)

    async def receive(self, *, timeout: Optional[float] = None) -> WorkItem:  # type: ignore[override]
        return WorkItem(await run(self._c.receive(), timeout))

    async def try_receive(self, *, timeout: Optional[float] = None) -> Optional[WorkItem]:  # type: ignore[override]
        if timeout is None:
            core = await run(self._c.try_receive())
        else:
            core = await run(self._c.receive(), timeout, or_none=True)
        return WorkItem(core) if core is not None else None

    async def size(self, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.size(), timeout)

    async def dead_letters(self, *, timeout: Optional[float] = None) -> List[DeadLetter]:  # type: ignore[override]
        return await run(self._c.dead_letters(), timeout)

    async def requeue_dead(self, id: str, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.requeue_dead(id), timeout)

    async def purge_dead(self, id: str, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.purge_dead(id), timeout)

    def __aiter__(self) -> AsyncIterator[WorkItem]:
        return self.items()

    async def items(self) -> AsyncIterator[WorkItem]:  # type: ignore[override]
        while True:
            try:
                yield WorkItem(await run(self._c.receive()))
            except Closed:
                return


# --- counter, barriers, transient keys, caches, discovery -----------------------------------


class DistributedAtomicLong(_blocking.DistributedAtomicLong):
    async def get(self, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.get(), timeout)

    async def set(self, value: int, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.set(value), timeout)

    async def add(self, delta: int, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.add(delta), timeout)

    async def increment(self, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.increment(), timeout)

    async def decrement(self, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.decrement(), timeout)

    async def compare_and_set(self, expected: int, desired: int, *,  # type: ignore[override]
                              timeout: Optional[float] = None) -> bool:
        return await run(self._c.compare_and_set(expected, desired), timeout)


class DistributedBarrier(_blocking.DistributedBarrier):
    async def set(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.set(), timeout)

    async def remove(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.remove(), timeout)

    async def wait(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.wait(), timeout, or_none=True))


class DistributedBarrierWithCount(_blocking.DistributedBarrierWithCount):
    async def wait(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.wait(), timeout, or_none=True))

    async def waiting(self, *, timeout: Optional[float] = None) -> int:  # type: ignore[override]
        return await run(self._c.waiting(), timeout)


class DistributedDoubleBarrier(_blocking.DistributedDoubleBarrier):
    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]

    async def enter(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.enter(), timeout, or_none=True))

    async def leave(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.leave(), timeout, or_none=True))

    async def __aenter__(self) -> "DistributedDoubleBarrier":
        await run(self._c.enter())
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await run(self._c.leave())


class TransientKeyValue(_blocking.TransientKeyValue):
    __enter__ = __exit__ = _use_async_with  # type: ignore[assignment]

    async def set_value(self, value: Any, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.set_value(value), timeout)

    async def create(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.create(), timeout)

    async def release(self, *, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return await run(self._c.release(), timeout)

    async def __aenter__(self) -> "TransientKeyValue":
        await self.create()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.release()
        self.close()


class _AsyncCache:
    _c: Any

    async def wait_initialized(self, timeout: Optional[float] = None) -> bool:
        """True once the first read is loaded; False when ``timeout`` ran out."""
        return bool(await run(self._c.wait_initialized(), timeout, or_none=True))


class PathChildrenCache(_AsyncCache, _blocking.PathChildrenCache):  # type: ignore[misc]
    pass


class NodeCache(_AsyncCache, _blocking.NodeCache):  # type: ignore[misc]
    pass


class ServiceCache(_AsyncCache, _blocking.ServiceCache):  # type: ignore[misc]
    pass


class ServiceProvider(_blocking.ServiceProvider):
    _cache_type = ServiceCache

    async def wait_initialized(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.wait_initialized(), timeout, or_none=True))

    async def get_instance(self, *, timeout: Optional[float] = None) -> ServiceInstance:  # type: ignore[override]
        return await run(self._c.get_instance(), timeout)


class _AsyncRegistrations:
    _c: Any

    async def register_instance(self, instance: ServiceInstance, *, timeout: Optional[float] = None) -> None:
        """Registers ``instance`` under a lease of this object's (AlreadyExists: another owner has the id)."""
        await run(self._c.register_instance(instance), timeout)

    async def update(self, instance: ServiceInstance, *, timeout: Optional[float] = None) -> None:
        """Replaces a registered instance's record in place."""
        await run(self._c.update(instance), timeout)

    async def unregister(self, service: str, id: str, *, timeout: Optional[float] = None) -> bool:
        """Deletes this object's registration; False if it had none."""
        return await run(self._c.unregister(service, id), timeout)


class ServiceRegistry(_AsyncRegistrations, _blocking.ServiceRegistry):  # type: ignore[misc]
    pass


class ServiceDiscovery(_AsyncRegistrations, _blocking.ServiceDiscovery):  # type: ignore[misc]
    _provider_type = ServiceProvider

    async def query_names(self, *, timeout: Optional[float] = None) -> List[str]:  # type: ignore[override]
        return await run(self._c.query_names(), timeout)

    async def query_instances(self, service: str, *,  # type: ignore[override]
                              timeout: Optional[float] = None) -> List[ServiceInstance]:
        return await run(self._c.query_instances(service), timeout)

    async def query_instance(self, service: str, id: str, *,  # type: ignore[override]
                             timeout: Optional[float] = None) -> Optional[ServiceInstance]:
        return await run(self._c.query_instance(service, id), timeout)


class Recipes(_blocking.Recipes):
    """etcd_recipes.Recipes making the asyncio twins (``recipes.mutex(name)`` is an
    etcd_recipes.aio.DistributedMutex, ...), with ``async with`` besides ``with``."""

    async def __aenter__(self) -> "Recipes":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


Recipes._kinds = sys.modules[__name__]
