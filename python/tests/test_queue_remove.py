"""remove(id) of the queues: a removed item is never delivered, a taken (or
claimed) one is never removed, bad ids are refused before any write."""

import asyncio

import pytest

import etcd_recipes as er
import etcd_recipes.aio as aio


def test_queue_remove_by_key_and_by_id(client, name):
    q = er.DistributedQueue(client, name)
    keys = [q.enqueue(v).keys[0] for v in ["a", "b", "c"]]
    assert q.remove(keys[1])
    assert not q.remove(keys[1])  # already gone
    assert q.remove(keys[2].rsplit("/", 1)[1])  # the id: the key's last segment
    assert q.dequeue(timeout=5) == b"a"
    assert not q.remove(keys[0])  # taken: not removed
    assert q.try_dequeue() is None
    with pytest.raises(er.InvalidArgument):
        q.remove("a/b")
    with pytest.raises(er.InvalidArgument):
        q.remove("")


def test_priority_and_typed_queues_remove(client, name):
    pq = er.DistributedPriorityQueue(client, f"{name}/pq")
    urgent = pq.enqueue("urgent", 0).keys[0]
    pq.enqueue("later", 5)
    assert pq.remove(urgent)
    assert pq.dequeue(timeout=5) == b"later"
    typed = er.DistributedQueue(client, f"{name}/typed", codec=er.codecs.JSON)
    k = typed.enqueue({"job": 1}).keys[0]
    typed.enqueue({"job": 2})
    assert typed.remove(k)
    assert typed.dequeue(timeout=5) == {"job": 2}


def test_work_queue_removes_pending_items_only(client, name):
    wq = er.DistributedWorkQueue(client, name, visibility_timeout=5)
    first = wq.enqueue("first").keys[0]
    delayed = wq.enqueue("delayed", delay=3600).keys[0]
    item = wq.receive(timeout=5)
    assert item.key == first
    assert not wq.remove(first)  # claimed: its consumer decides
    assert item.ack()
    assert wq.remove(delayed)
    assert wq.size() == 0


def test_async_remove(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            q = aio.DistributedQueue(c, f"{name}/q")
            e = await q.enqueue("x")
            assert await q.remove(e.keys[0])
            assert not await q.remove(e.keys[0])
            assert await q.try_dequeue() is None
            wq = aio.DistributedWorkQueue(c, f"{name}/wq", visibility_timeout=5)
            e = await wq.enqueue("y")
            assert await wq.remove(e.keys[0])
            assert await wq.size() == 0
            q.close()
            wq.close()
    asyncio.run(asyncio.wait_for(main(), 30))
