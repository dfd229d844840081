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
