import asyncio
import threading
import time

import pytest

import etcd_recipes as er
import etcd_recipes.aio as aio
from etcd_recipes import Op, Txn


def test_multi_lock_holds_every_name_with_a_token_each(client, name):
    a, b, c = f"{name}/a", f"{name}/b", f"{name}/c"
    lock = er.MultiLock(client, [c, a, b, a])
    assert lock.names == [a, b, c]
    with lock as hold:
        assert lock.is_held and hold.is_held
        assert hold.names == [a, b, c]
        assert set(hold.tokens) == {a, b, c}
        assert 0 < hold.token(a) < hold.token(b) < hold.token(c)
        assert hold.hold(b).token == hold.token(b)
        assert hold.hold(f"{name}/other") is None
        assert len(hold.holds) == 3
        hold.guarded(Txn().then(Op.put(f"{name}-res", "v")))
        other = er.DistributedMutex(client, b)
        assert other.try_acquire() is None                    # a name of the multi-lock is held
    assert not lock.is_held and lock.hold is None
    assert hold.ended
    with pytest.raises(er.HoldLost):
        hold.guarded(Txn().then(Op.put(f"{name}-res", "late")))
    assert other.try_acquire() is not None
    other.release()


def test_multi_lock_bad_input_is_refused_before_any_write(client, name):
    for names in ([], [f"{name}/d", f"{name}/d/sub"], [f"{name}/x", ""]):
        lock = er.MultiLock(client, names)
        with pytest.raises(er.InvalidArgument):
            lock.acquire(timeout=5)
    assert client.get(name, prefix=True).count == 0


def test_multi_lock_try_and_timeout_leave_nothing_held(client, name):
    other = er.DistributedMutex(client, f"{name}/z")
    other.acquire(timeout=5)
    lock = er.MultiLock(client, [f"{name}/z", f"{name}/a"])
    assert lock.try_acquire() is None
    assert lock.try_acquire(timeout=0.3) is None
    with pytest.raises(er.Timeout):
        lock.acquire(timeout=0.3)
    assert client.get(f"{name}/a/", prefix=True).count == 0
    other.release()
    assert lock.try_acquire(timeout=5) is not None
    assert lock.release() is True


def test_multi_lock_losing_a_name_loses_the_hold(client, name):
    lock = er.MultiLock(client, [f"{name}/l1", f"{name}/l2"])
    heard = threading.Event()
    sub = lock.on_lost(lambda e: heard.set())
    hold = lock.acquire(timeout=5)
    client.delete(hold.hold(f"{name}/l2").key)
    assert heard.wait(10)
    deadline = time.monotonic() + 10
    while client.get(f"{name}/l1/", prefix=True).count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.get(f"{name}/l1/", prefix=True).count == 0   # the other name was let go
    assert lock.release() is False
    sub.cancel()


def test_release_request_reaches_the_holder(client, name):
    holder = er.DistributedMutex(client, name)
    asker = er.DistributedMutex(client, name)
    assert asker.request_release(timeout=5) is False           # nobody holds
    asked = threading.Event()
    sub = holder.on_release_requested(asked.set)
    hold = holder.acquire(timeout=5)
    assert not hold.release_requested
    assert asker.request_release(timeout=5) is True
    assert asked.wait(10)
    assert hold.release_requested and hold.is_held            # a request, not a loss
    holder.release()
    sub.cancel()


def test_a_request_for_one_name_asks_the_whole_multi_hold(client, name):
    lock = er.MultiLock(client, [f"{name}/a", f"{name}/b"])
    heard_by_lock, heard_by_hold = threading.Event(), threading.Event()
    calls = []
    lock_sub = lock.on_release_requested(lambda: (calls.append("lock"), heard_by_lock.set()))
    hold = lock.acquire(timeout=5)
    hold_sub = hold.on_release_requested(lambda: (calls.append("hold"), heard_by_hold.set()))
    assert not hold.release_requested
    assert er.DistributedMutex(client, f"{name}/b").request_release(timeout=5) is True
    assert heard_by_lock.wait(10) and heard_by_hold.wait(10)
    assert hold.release_requested and hold.is_held             # a request, not a loss
    assert er.DistributedMutex(client, f"{name}/a").request_release(timeout=5) is True
    late = threading.Event()
    late_sub = hold.on_release_requested(late.set)             # added after the request: runs at once
    assert late.wait(10)
    assert sorted(calls) == ["hold", "lock"]                   # once, for the first request only
    assert hold.release() is True
    for sub in (lock_sub, hold_sub, late_sub):
        sub.cancel()


def test_asyncio_multi_lock_and_release_request(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            lock = aio.MultiLock(c, [f"{name}/q", f"{name}/p"])
            async with lock as hold:
                assert hold.names == [f"{name}/p", f"{name}/q"]
                await hold.guarded(Txn().then(Op.put(f"{name}-res", "v")))
                rival = aio.MultiLock(c, [f"{name}/p"])
                assert await rival.try_acquire(timeout=0.2) is None
            assert await rival.try_acquire(timeout=5) is not None
            assert await rival.release() is True
            m = aio.DistributedMutex(c, f"{name}/m")
            assert await m.request_release(timeout=5) is False

    asyncio.run(asyncio.wait_for(main(), 30))
