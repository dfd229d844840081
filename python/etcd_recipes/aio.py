"""asyncio twins of etcd_recipes' classes: the same names and arguments, with
``await``, ``async with`` and ``async for``.

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
    "NodeCache", "ServiceDiscovery", "ServiceProvider", "Recipes", "run",
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


# --- client --------------------------------------------------------------------------


class Client(_blocking.Client):
    """etcd_recipes.Client with awaitable calls (``await client.get("k")``)."""

    async def get(self, key: Bytes, *, timeout: Optional[float] = None, **options: Any) -> GetResponse:  # type: ignore[override]
        return await run(self._c.get(key, **options), timeout)

    async def put(self, key: Bytes, value: Bytes, *, timeout: Optional[float] = None,  # type: ignore[override]
                  **options: Any) -> PutResponse:
        return await run(self._c.put(key, value, **options), timeout)

    async def delete(self, key: Bytes, *, timeout: Optional[float] = None,  # type: ignore[override]
                     **options: Any) -> DeleteResponse:
        return await run(self._c.delete(key, **options), timeout)

    async def txn(self, txn: Txn, *, timeout: Optional[float] = None) -> TxnResponse:  # type: ignore[override]
        return await run(self._c.txn(txn), timeout)

    async def lease_grant(self, ttl: float, *, id: int = 0, timeout: Optional[float] = None) -> Any:  # type: ignore[override]
        return await run(self._c.lease_grant(ttl, id=id), timeout)

    async def lease_revoke(self, id: int, *, timeout: Optional[float] = None) -> Any:  # type: ignore[override]
        return await run(self._c.lease_revoke(id), timeout)

    async def lease_time_to_live(self, id: int, *, keys: bool = False,  # type: ignore[override]
                                 timeout: Optional[float] = None) -> Any:
        return await run(self._c.lease_time_to_live(id, keys=keys), timeout)

    async def lease(self, ttl: float, *, timeout: Optional[float] = None) -> "Lease":  # type: ignore[override]
        return Lease(await run(self._c.lease(ttl), timeout))

    def watch(self, key: Bytes, **options: Any) -> "Watch":  # type: ignore[override]
        return Watch(self._c.watch(key, **options))

    async def status(self, endpoint: str = "", *, timeout: Optional[float] = None) -> Any:  # type: ignore[override]
        return await run(self._c.status(endpoint), timeout)

    async def ping(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.ping(), timeout)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


class Lease(_blocking.Lease):
    async def revoke(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await run(self._c.revoke(), timeout)


class Watch(_blocking.Watch):
    """``async for response in watch``; cancel() ends the iteration."""

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


# --- holds and locks ---------------------------------------------------------------------


class Hold(_blocking._HoldBase):
    async def guarded(self, txn: Txn, *, timeout: Optional[float] = None) -> TxnResponse:
        return await run(self._c.guarded(txn), timeout)

    async def release(self, *, timeout: Optional[float] = None) -> bool:
        return await run(self._c.release(), timeout)

    async def __aenter__(self) -> "Hold":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.release()


def _hold(core: Any) -> Optional[Hold]:
    return Hold(core) if core is not None else None


class _AsyncLock:
    _c: Any

    @property
    def hold(self) -> Optional[Hold]:
        return _hold(self._c.hold)

    async def acquire(self, timeout: Optional[float] = None) -> Hold:
        return Hold(await run(self._c.acquire(), timeout))

    async def try_acquire(self, timeout: Optional[float] = None) -> Optional[Hold]:
        if timeout is None:
            return _hold(await run(self._c.try_acquire()))
        return _hold(await run(self._c.acquire(), timeout, or_none=True))

    async def release(self, *, timeout: Optional[float] = None) -> bool:
        return await run(self._c.release(), timeout)

    async def __aenter__(self) -> Hold:
        return await self.acquire()

    async def __aexit__(self, *exc: Any) -> None:
        await self.release()


class DistributedMutex(_AsyncLock, _blocking._LockBase):  # type: ignore[misc]
    def __init__(self, client: _blocking.Client, name: str, **options: Any) -> None:
        self._c = _core.DistributedMutex(client._c, name, **_blocking._opts(**_split(options)))


def _split(options: Any) -> Any:
    """The recipe keyword arguments (client_id, session, session_ttl, metrics); a typo is an error."""
    unknown = set(options) - set(_blocking._SHARED_OPTIONS)
    if unknown:
        raise TypeError(f"unexpected keyword arguments: {sorted(unknown)}")
    return {k: options.get(k) for k in _blocking._SHARED_OPTIONS}


class LockView(_AsyncLock, _blocking.LockView):  # type: ignore[misc]
    pass


class DistributedReadWriteLock(_blocking._Recipe):
    def __init__(self, client: _blocking.Client, name: str, **options: Any) -> None:
        self._c = _core.DistributedReadWriteLock(client._c, name, **_blocking._opts(**_split(options)))
        self.read_lock = LockView(self._c.read_lock, self._c)
        self.write_lock = LockView(self._c.write_lock, self._c)

    async def downgrade(self, *, timeout: Optional[float] = None) -> None:
        await run(self._c.downgrade(), timeout)


class DistributedSemaphore(_blocking._Recipe):
    def __init__(self, client: _blocking.Client, name: str, permits: int, **options: Any) -> None:
        self._c = _core.DistributedSemaphore(client._c, name, permits, **_blocking._opts(**_split(options)))
        self._entered: List[Hold] = []

    async def acquire(self, timeout: Optional[float] = None) -> Hold:
        return Hold(await run(self._c.acquire(), timeout))

    async def try_acquire(self, timeout: Optional[float] = None) -> Optional[Hold]:
        if timeout is None:
            return _hold(await run(self._c.try_acquire()))
        return _hold(await run(self._c.acquire(), timeout, or_none=True))

    async def available_permits(self, *, timeout: Optional[float] = None) -> int:
        return await run(self._c.available_permits(), timeout)

    async def __aenter__(self) -> Hold:
        permit = await self.acquire()
        self._entered.append(permit)
        return permit

    async def __aexit__(self, *exc: Any) -> None:
        await self._entered.pop().release()


# --- elections -----------------------------------------------------------------------------


class LeaderTerm(Hold):
    @property
    def stop_requested(self) -> bool:
        return self._c.stop_requested

    @property
    def end(self) -> Optional[str]:
        return self._c.end

    async def proclaim(self, value: Bytes, *, timeout: Optional[float] = None) -> None:
        await run(self._c.proclaim(value), timeout)


class LeaderLatch(_blocking.LeaderLatch):
    async def await_leadership(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.await_leadership(), timeout, or_none=True))

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

    async def dequeue(self, timeout: Optional[float] = None) -> Any:
        return await run(self._c.dequeue(), timeout)

    async def try_dequeue(self, timeout: Optional[float] = None) -> Any:
        if timeout is None:
            return await run(self._c.try_dequeue())
        return await run(self._c.dequeue(), timeout, or_none=True)

    async def size(self, *, timeout: Optional[float] = None) -> int:
        return await run(self._c.size(), timeout)

    def on_poison(self, listener: Callable[[str, DecodeFailed], None]) -> Subscription:
        return _blocking._keep(self, self._c.on_poison(listener))

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._items()

    async def _items(self) -> AsyncIterator[Any]:
        while True:
            try:
                yield await run(self._c.dequeue())
            except Closed:
                return


class DistributedQueue(_AsyncQueue, _blocking._Recipe):
    def __init__(self, client: _blocking.Client, name: str, *, codec: Optional[Codec] = None,
                 **options: Any) -> None:
        self._c = _blocking._queue_core(client, name, codec, _blocking._opts(**_split(options)))

    async def enqueue(self, value: Any, *, timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue(value), timeout)

    async def enqueue_all(self, values: Sequence[Any], *, timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue_all(list(values)), timeout)


class DistributedPriorityQueue(_AsyncQueue, _blocking._Recipe):
    def __init__(self, client: _blocking.Client, name: str, *, codec: Optional[Codec] = None,
                 **options: Any) -> None:
        self._c = _blocking._priority_queue_core(client, name, codec, _blocking._opts(**_split(options)))

    async def enqueue(self, value: Any, priority: int, *, timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue(value, priority), timeout)


class WorkItem(_blocking._WorkItemBase):
    """``async with item:`` acks on success, requeues on an exception."""

    async def ack(self, *, timeout: Optional[float] = None) -> bool:
        self._settled = True
        return await run(self._c.ack(), timeout)

    async def requeue(self, delay: Optional[float] = None, *, timeout: Optional[float] = None) -> bool:
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


class DistributedWorkQueue(_blocking._Recipe):
    def __init__(self, client: _blocking.Client, name: str, *, visibility_timeout: float = 30.0,
                 max_deliveries: int = 5, codec: Optional[Codec] = None, **options: Any) -> None:
        self._c = _blocking._work_queue_core(client, name, codec, visibility_timeout, max_deliveries,
                                             _blocking._opts(**_split(options)))

    async def enqueue(self, value: Any, *, delay: float = 0.0, timeout: Optional[float] = None) -> Enqueued:
        return await run(self._c.enqueue(value, delay=delay), timeout)

    async def receive(self, timeout: Optional[float] = None) -> WorkItem:
        return WorkItem(await run(self._c.receive(), timeout))

    async def try_receive(self, timeout: Optional[float] = None) -> Optional[WorkItem]:
        if timeout is None:
            core = await run(self._c.try_receive())
        else:
            core = await run(self._c.receive(), timeout, or_none=True)
        return WorkItem(core) if core is not None else None

    async def size(self, *, timeout: Optional[float] = None) -> int:
        return await run(self._c.size(), timeout)

    def __aiter__(self) -> AsyncIterator[WorkItem]:
        return self.items()

    async def items(self) -> AsyncIterator[WorkItem]:
        while True:
            try:
                yield WorkItem(await run(self._c.receive()))
            except Closed:
                return


# --- counter, barriers, transient keys, caches, discovery -----------------------------------


class DistributedAtomicLong(_blocking._Recipe):
    def __init__(self, client: _blocking.Client, name: str, **options: Any) -> None:
        self._c = _core.DistributedAtomicLong(client._c, name, **_blocking._opts(**_split(options)))

    async def get(self, *, timeout: Optional[float] = None) -> int:
        return await run(self._c.get(), timeout)

    async def set(self, value: int, *, timeout: Optional[float] = None) -> None:
        await run(self._c.set(value), timeout)

    async def add(self, delta: int, *, timeout: Optional[float] = None) -> int:
        return await run(self._c.add(delta), timeout)

    async def increment(self, *, timeout: Optional[float] = None) -> int:
        return await run(self._c.increment(), timeout)

    async def compare_and_set(self, expected: int, desired: int, *, timeout: Optional[float] = None) -> bool:
        return await run(self._c.compare_and_set(expected, desired), timeout)


class DistributedBarrier(_blocking._Recipe):
    def __init__(self, client: _blocking.Client, name: str, *, wait_until_set: bool = False, **options: Any) -> None:
        self._c = _core.DistributedBarrier(client._c, name, wait_until_set=wait_until_set,
                                           **_blocking._opts(**_split(options)))

    async def set(self, *, timeout: Optional[float] = None) -> bool:
        return await run(self._c.set(), timeout)

    async def remove(self, *, timeout: Optional[float] = None) -> bool:
        return await run(self._c.remove(), timeout)

    async def wait(self, timeout: Optional[float] = None) -> bool:
        return bool(await run(self._c.wait(), timeout, or_none=True))


class DistributedBarrierWithCount(_blocking._Recipe):
    def __init__(self, client: _blocking.Client, name: str, parties: int, **options: Any) -> None:
        self._c = _core.DistributedBarrierWithCount(client._c, name, parties, **_blocking._opts(**_split(options)))

    async def wait(self, timeout: Optional[float] = None) -> bool:
        return bool(await run(self._c.wait(), timeout, or_none=True))


class DistributedDoubleBarrier(_blocking._Recipe):
    def __init__(self, client: _blocking.Client, name: str, parties: int, **options: Any) -> None:
        self._c = _core.DistributedDoubleBarrier(client._c, name, parties, **_blocking._opts(**_split(options)))

    async def enter(self, timeout: Optional[float] = None) -> bool:
        return bool(await run(self._c.enter(), timeout, or_none=True))

    async def leave(self, timeout: Optional[float] = None) -> bool:
        return bool(await run(self._c.leave(), timeout, or_none=True))

    async def __aenter__(self) -> "DistributedDoubleBarrier":
        await run(self._c.enter())
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await run(self._c.leave())


class TransientKeyValue(_blocking.TransientKeyValue):
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


class PathChildrenCache(_blocking.PathChildrenCache):
    async def wait_initialized(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.wait_initialized(), timeout, or_none=True))


class NodeCache(_blocking.NodeCache):
    async def wait_initialized(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.wait_initialized(), timeout, or_none=True))


class ServiceProvider(_blocking.ServiceProvider):
    async def wait_initialized(self, timeout: Optional[float] = None) -> bool:  # type: ignore[override]
        return bool(await run(self._c.wait_initialized(), timeout, or_none=True))

    async def get_instance(self, *, timeout: Optional[float] = None) -> ServiceInstance:  # type: ignore[override]
        return await run(self._c.get_instance(), timeout)


class ServiceDiscovery(_blocking.ServiceDiscovery):
    async def register_instance(self, instance: ServiceInstance, *,  # type: ignore[override]
                                timeout: Optional[float] = None) -> None:
        await run(self._c.register_instance(instance), timeout)

    async def unregister(self, service: str, id: str, *,  # type: ignore[override]
                         timeout: Optional[float] = None) -> bool:
        return await run(self._c.unregister(service, id), timeout)

    async def query_instances(self, service: str, *,  # type: ignore[override]
                              timeout: Optional[float] = None) -> List[ServiceInstance]:
        return await run(self._c.query_instances(service), timeout)

    def provider(self, service: str, *, strategy: str = "round_robin") -> ServiceProvider:
        return ServiceProvider(None, service, _core_provider=self._c.provider(service, strategy=strategy))


class Recipes(_blocking.Recipes):
    """etcd_recipes.Recipes making the asyncio twins (``recipes.mutex(name)`` is an
    etcd_recipes.aio.DistributedMutex, ...), with ``async with`` besides ``with``."""

    async def __aenter__(self) -> "Recipes":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


Recipes._kinds = sys.modules[__name__]
