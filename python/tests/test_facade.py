"""etcd_recipes.Recipes (the facade) and the metrics hooks, against real etcd."""
import asyncio
import gc
import threading
import time
import weakref

import pytest

import etcd_recipes as er
import etcd_recipes.aio as aio
from _support import eventually



def test_shared_client_id_is_in_the_holders_keys_and_a_call_overrides_it(client, name):
    with er.Recipes(client, client_id="billing-7") as recipes:
        mutex = recipes.mutex(f"{name}/m")
        assert type(mutex) is er.DistributedMutex
        with mutex as hold:
            assert client.get(hold.key).value == b"billing-7"
        with recipes.semaphore(f"{name}/s", 2) as permit:
            assert client.get(permit.key).value == b"billing-7"
        with recipes.mutex(f"{name}/m2", client_id="billing-7-batch") as hold:
            assert client.get(hold.key).value == b"billing-7-batch"
        assert recipes.options["client_id"] == "billing-7"


# Every kind the facade makes, with its first operation: a bad shared
# session_ttl must be refused by each, before it writes anything.
_KINDS = [
    ("mutex", lambda r, n: r.mutex(n), lambda x: x.acquire(timeout=2)),
    ("read_write_lock", lambda r, n: r.read_write_lock(n), lambda x: x.write_lock.acquire(timeout=2)),
    ("semaphore", lambda r, n: r.semaphore(n, 2), lambda x: x.acquire(timeout=2)),
    ("leader_latch", lambda r, n: r.leader_latch(n, "me"), lambda x: x.await_leadership(timeout=2)),
    ("leader_selector", lambda r, n: r.leader_selector(n, "me"), lambda x: x.leadership(timeout=2).__enter__()),
    ("leader_observer", lambda r, n: r.leader_observer(n), lambda x: x.leader(timeout=2)),
    ("queue", lambda r, n: r.queue(n), lambda x: x.enqueue("v", timeout=2)),
    ("priority_queue", lambda r, n: r.priority_queue(n), lambda x: x.enqueue("v", 1, timeout=2)),
    ("work_queue", lambda r, n: r.work_queue(n), lambda x: x.enqueue("v", timeout=2)),
    ("barrier", lambda r, n: r.barrier(n), lambda x: x.set(timeout=2)),
    ("barrier_with_count", lambda r, n: r.barrier_with_count(n, 2), lambda x: x.wait(timeout=2)),
    ("double_barrier", lambda r, n: r.double_barrier(n, 2), lambda x: x.enter(timeout=2)),
    ("counter", lambda r, n: r.counter(n), lambda x: x.increment(timeout=2)),
    ("transient", lambda r, n: r.transient(n, "v"), lambda x: x.create(timeout=2)),
    ("node_cache", lambda r, n: r.node_cache(n), lambda x: x.wait_initialized(timeout=2)),
    ("path_children_cache", lambda r, n: r.path_children_cache(n), lambda x: x.wait_initialized(timeout=2)),
    ("keyspace_view", lambda r, n: r.keyspace_view(n + "/"), lambda x: x.wait_initialized(timeout=2)),
    ("discovery", lambda r, n: r.discovery(base_path=n),
     lambda x: x.register_instance(er.ServiceInstance("api", id="i1", address="10.0.0.1", port=80), timeout=2)),
    ("shared_value", lambda r, n: r.shared_value(n), lambda x: x.set(b"v", timeout=2)),
    ("group_member", lambda r, n: r.group_member(n, "m", b"p"), lambda x: x.join(timeout=2)),
]


def test_a_ttl_below_one_second_is_refused_by_every_kind_before_any_write(client, name):
    with er.Recipes(client, session_ttl=0.5) as recipes:
        refused = {}
        for kind, make, first_use in _KINDS:
            recipe = make(recipes, f"{name}/{kind}")
            for step, run in (("start", lambda: recipe.start()), ("use", lambda: first_use(recipe))):
                try:
                    run()
                    refused[(kind, step)] = None
                except er.InvalidArgument as e:
                    refused[(kind, step)] = e
        assert [k for k, e in refused.items() if e is None] == []
        assert all("session_ttl" in e.message or "TTL" in e.message for e in refused.values()), refused
    assert client.get(name, prefix=True, count_only=True).count == 0


def test_a_negative_ttl_or_a_bad_metrics_object_is_refused_at_once(client):
    with pytest.raises(er.InvalidArgument):
        er.Recipes(client, session_ttl=-1)
    with pytest.raises(er.InvalidArgument):
        er.Recipes(client, metrics=object())


def test_closing_the_facade_closes_the_recipes_it_made(client, name):
    recipes = er.Recipes(client)
    mutex = recipes.mutex(f"{name}/m")
    hold = mutex.acquire(timeout=5)
    queue = recipes.queue(f"{name}/q")
    latch = recipes.leader_latch(f"{name}/e", "me")
    latch.start()
    assert latch.await_leadership(timeout=5)
    outcome = []

    def consume():
        try:
            queue.dequeue()
        except er.Closed as e:
            outcome.append(e)

    waiter = threading.Thread(target=consume)
    waiter.start()
    time.sleep(0.2)  # parked in dequeue

    # A recipe the caller dropped is not kept alive by the facade.
    dropped = weakref.ref(recipes.counter(f"{name}/c"))
    gc.collect()
    assert dropped() is None

    recipes.close()
    waiter.join(5)
    assert outcome and isinstance(outcome[0], er.Closed)
    assert mutex.closed and queue.closed and latch.closed
    # What they held is let go: the lock and the leadership are free for others.
    assert eventually(lambda: client.get(hold.key).value is None)
    other = er.DistributedMutex(client, f"{name}/m")
    assert other.try_acquire(timeout=5) is not None
    other.release()
    other.close()
    with pytest.raises(er.Closed):
        recipes.mutex(f"{name}/late")
    recipes.close()  # idempotent


def test_shared_metrics_hear_every_recipe_made(client, name):
    metrics = er.PrometheusMetrics()
    with er.Recipes(client, metrics=metrics) as recipes:
        with recipes.mutex(f"{name}/a"):
            pass
        with recipes.mutex(f"{name}/b", metrics=None):  # None keeps the shared one
            pass
        own = er.PrometheusMetrics()
        with recipes.mutex(f"{name}/c", metrics=own):
            pass
    assert metrics.value("etcd_recipes_lock_acquired_total", {"lock": f"{name}/a"}) == 1
    assert metrics.value("etcd_recipes_lock_acquired_total", {"lock": f"{name}/b"}) == 1
    assert metrics.value("etcd_recipes_lock_acquired_total", {"lock": f"{name}/c"}) == 0
    assert own.value("etcd_recipes_lock_acquired_total", {"lock": f"{name}/c"}) == 1


def test_asyncio_facade_makes_the_asyncio_twins(client, name):
    async def main():
        async with aio.Recipes(client, client_id="async-7") as recipes:
            mutex = recipes.mutex(f"{name}/m")
            assert isinstance(mutex, aio.DistributedMutex)
            async with mutex as hold:
                assert client.get(hold.key).value == b"async-7"
            queue = recipes.queue(f"{name}/q", codec=er.codecs.JSON)
            assert isinstance(queue, aio.DistributedQueue)
            await queue.enqueue({"n": 1})
            assert await queue.dequeue(timeout=5) == {"n": 1}
        assert mutex.closed and queue.closed

    asyncio.run(main())
