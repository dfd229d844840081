import asyncio
import os

import pytest

import etcd_recipes as er
import etcd_recipes.aio as aio


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_async_kv_and_mutex(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            await c.put(f"{name}-kv", "v")
            assert (await c.get(f"{name}-kv")).value == b"v"
            a = aio.DistributedMutex(c, name)
            b = aio.DistributedMutex(c, name)
            async with a as hold:
                assert hold.token > 0
                assert await b.try_acquire() is None
                assert await b.try_acquire(timeout=0.2) is None
                waiter = asyncio.ensure_future(b.acquire())
                await asyncio.sleep(0.2)
                assert not waiter.done()
            second = await waiter
            assert second.token > hold.token
            assert await b.release()
    run(main())


def test_cancelled_acquire_leaves_nothing_behind(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            holder = aio.DistributedMutex(c, name)
            await holder.acquire()
            waiter = aio.DistributedMutex(c, name)
            task = asyncio.ensure_future(waiter.acquire())
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await holder.release()
            third = aio.DistributedMutex(c, name)
            got = await third.acquire(timeout=5)  # the cancelled waiter's key is gone
            assert got.is_held
            await third.release()
    run(main())


def test_many_parked_waiters_use_no_thread_each(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            holder = aio.DistributedMutex(c, name)
            await holder.acquire()
            threads_before = len(os.listdir("/proc/self/task"))  # C++ threads included
            waiters = [aio.DistributedMutex(c, name) for _ in range(50)]
            tasks = [asyncio.ensure_future(w.acquire()) for w in waiters]
            await asyncio.sleep(1.0)
            assert not any(t.done() for t in tasks)
            # Not one thread per waiter (gRPC may add one or two of its own under load).
            assert len(os.listdir("/proc/self/task")) <= threads_before + 2
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for w in waiters:
                w.close()
            await holder.release()
    run(main())


def test_async_queue_iteration_and_watch(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            q = aio.DistributedQueue(c, f"{name}/q")
            w = c.watch(f"{name}/q/items/", prefix=True)  # the items only: not the queue's own records
            assert await w.wait_created(10)  # a put before the watch exists is not in it
            await q.enqueue("1")
            await q.enqueue("2")
            got = []
            async for item in q:
                got.append(item)
                if len(got) == 2:
                    break
            assert got == [b"1", b"2"]
            puts = []
            async for response in w:
                puts += [e.kv.value for e in response.events if e.type == "PUT" and e.kv.value]
                if len(puts) >= 2:
                    break
            assert puts == [b"1", b"2"]
            w.cancel()
    run(main())


def test_async_work_queue_and_leadership(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            wq = aio.DistributedWorkQueue(c, f"{name}/wq")
            await wq.enqueue("job")
            async for item in wq:
                async with item:
                    assert item.value == b"job"
                break
            assert await wq.size() == 0
            s = aio.LeaderSelector(c, f"{name}/el", "me")
            async with s.leadership(timeout=5) as term:
                assert term.token > 0
            s.close()
    run(main())


def test_async_errors_are_the_same_exceptions(cluster, name):
    async def main():
        c = aio.Client(cluster.endpoints)
        q = aio.DistributedQueue(c, name)
        with pytest.raises(er.Timeout):
            await q.dequeue(timeout=0.2)
        assert await q.try_dequeue(timeout=0.2) is None
        c.close()
        with pytest.raises(er.Closed):
            await c.get("k")
    run(main())


def test_async_work_queue_batches_and_dead_letters(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            wq = aio.DistributedWorkQueue(c, name, visibility_timeout=5, max_deliveries=1)
            enqueued = await wq.enqueue_all(["a", "b"])
            assert len(enqueued.keys) == 2
            first = await wq.receive(timeout=5)
            assert first.value == b"a"
            assert await first.requeue()  # its one delivery is spent: dead next time it is met
            second = await wq.receive(timeout=5)
            assert second.value == b"b" and await second.ack()
            assert await wq.try_receive(timeout=0.5) is None
            dead = []
            for _ in range(100):
                dead = await wq.dead_letters()
                if dead:
                    break
                await asyncio.sleep(0.05)
            assert [d.value for d in dead] == [b"a"]
            assert await wq.requeue_dead(dead[0].id)
            again = await wq.receive(timeout=5)
            assert again.value == b"a" and again.attempt == 1
            assert await again.requeue()
            assert await wq.try_receive(timeout=0.5) is None
            for _ in range(100):
                dead = await wq.dead_letters()
                if dead:
                    break
                await asyncio.sleep(0.05)
            assert await wq.purge_dead(dead[0].id)
            assert not await wq.purge_dead(dead[0].id)
            assert await wq.dead_letters() == []
            wq.close()
    run(main())


def test_async_priority_batches_counter_and_count_barrier(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            pq = aio.DistributedPriorityQueue(c, f"{name}/pq")
            await pq.enqueue("late", 9)
            await pq.enqueue_all(["x", "y"], 1)
            assert [await pq.dequeue(timeout=5) for _ in range(3)] == [b"x", b"y", b"late"]
            counter = aio.DistributedAtomicLong(c, f"{name}/n")
            assert await counter.increment() == 1
            assert await counter.decrement() == 0
            assert await counter.decrement() == -1
            barrier = aio.DistributedBarrierWithCount(c, f"{name}/b", 2)
            other = aio.DistributedBarrierWithCount(c, f"{name}/b", 2)
            assert barrier.parties == 2
            first = asyncio.ensure_future(barrier.wait(timeout=10))
            for _ in range(100):
                if await other.waiting() == 1:
                    break
                await asyncio.sleep(0.05)
            assert await other.waiting() == 1
            assert await other.wait(timeout=10) and await first
            for r in (pq, counter, barrier, other):
                r.close()
    run(main())


def test_provider_cache_and_candidates(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            discovery = aio.ServiceDiscovery(c, base_path=name)
            await discovery.register_instance(er.ServiceInstance("api", id="i1", address="10.0.0.1", port=80))
            await discovery.register_instance(er.ServiceInstance("api", id="i2", address="10.0.0.2", port=80))
            provider = discovery.provider("api")
            assert await provider.wait_initialized(timeout=5)
            assert sorted(i.id for i in provider.candidates()) == ["i1", "i2"]
            cache = provider.cache()
            assert isinstance(cache, aio.ServiceCache) and cache.initialized
            assert sorted(i.id for i in cache.instances()) == ["i1", "i2"]
            assert await cache.wait_initialized(timeout=1)
            bad = [i for i in provider.candidates() if i.id == "i1"][0]
            for _ in range(2):  # errors_before_ejection = 2
                provider.note_error(bad)
            assert [i.id for i in provider.candidates()] == ["i2"]
            assert len(cache.instances()) == 2  # ejected, still registered
            discovery.close()
    run(main())


def test_blocking_provider_cache_and_candidates(client, name):
    with er.ServiceDiscovery(client, base_path=name) as d:
        d.register_instance(er.ServiceInstance("api", id="i1", address="10.0.0.1", port=80))
        provider = d.provider("api")
        assert provider.wait_initialized(timeout=5)
        assert [i.id for i in provider.candidates()] == ["i1"]
        cache = provider.cache()
        assert isinstance(cache, er.ServiceCache) and not isinstance(cache, aio.ServiceCache)
        assert [i.id for i in cache.instances()] == ["i1"]
