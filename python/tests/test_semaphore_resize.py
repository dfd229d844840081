import asyncio
import threading

import pytest

import etcd_recipes as er
import etcd_recipes.aio as aio


@pytest.mark.parametrize("layout", ["go", "ordered"])
def test_resize_grows_and_shrinks_a_live_semaphore(client, name, layout):
    sem = er.DistributedSemaphore(client, name, 1, layout=layout)
    first = sem.acquire(timeout=5)
    got = []
    waiter = threading.Thread(target=lambda: got.append(sem.acquire(timeout=10)))
    waiter.start()
    sem.resize(2)                                      # the parked waiter gets the new permit
    waiter.join(10)
    assert not waiter.is_alive() and got and got[0].is_held
    assert sem.permits == 2

    late = er.DistributedSemaphore(client, name, 1, layout=layout)   # adopts 2
    assert late.available_permits() == 0

    sem.resize(1)                                      # a shrink takes nothing back
    assert first.is_held and got[0].is_held
    first.release()
    assert late.try_acquire() is None                  # one holds, the count is 1
    got[0].release()
    assert late.try_acquire(timeout=5) is not None


def test_resize_refuses_bad_input(client, name):
    sem = er.DistributedSemaphore(client, name, 2)
    with pytest.raises(er.InvalidArgument):
        sem.resize(0)
    assert not client.get(f"{name}/permits").kvs       # nothing written


def test_asyncio_resize_admits_a_waiter(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            sem = aio.DistributedSemaphore(c, name, 1)
            held = await sem.acquire(timeout=5)
            waiting = asyncio.ensure_future(sem.acquire(timeout=10))
            await asyncio.sleep(0)
            await sem.resize(2)
            second = await asyncio.wait_for(waiting, 10)
            assert held.is_held and second.is_held

    asyncio.run(asyncio.wait_for(main(), 30))
