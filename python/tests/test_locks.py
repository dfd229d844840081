import threading
import time

import pytest

import etcd_recipes as er
from etcd_recipes import Op, Txn


def _overlap_checker():
    state = {"inside": 0, "max": 0}
    lock = threading.Lock()

    def body():
        with lock:
            state["inside"] += 1
            state["max"] = max(state["max"], state["inside"])
        time.sleep(0.02)
        with lock:
            state["inside"] -= 1

    return state, body


def test_mutex_excludes_and_tokens_increase(client, name):
    state, body = _overlap_checker()
    tokens = []

    def worker():
        m = er.DistributedMutex(client, name)
        for _ in range(3):
            with m as hold:
                tokens.append(hold.token)
                body()
        m.close()

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert state["max"] == 1
    assert len(tokens) == 9
    assert tokens == sorted(tokens) and len(set(tokens)) == 9


def test_ordered_mutexes_share_a_session_and_exclude_with_the_go_layout(client, name):
    state, body = _overlap_checker()
    session = er.Session(client)
    mutexes = [er.DistributedMutex(client, name, session=session, layout="ordered") for _ in range(4)]

    def worker(m):
        for _ in range(3):
            with m as hold:
                assert hold.key.startswith(name + "/~")
                body()

    threads = [threading.Thread(target=worker, args=(m,)) for m in mutexes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert state["max"] == 1
    go = er.DistributedMutex(client, name)
    ordered = mutexes[0]
    with ordered:
        assert go.try_acquire() is None
    with go:
        assert ordered.try_acquire() is None
    with pytest.raises(ValueError):
        er.DistributedMutex(client, name, layout="sorted")
    for m in mutexes:
        m.close()
    session.close()


def test_try_acquire_and_timeouts(client, name):
    a = er.DistributedMutex(client, name)
    b = er.DistributedMutex(client, name)
    hold = a.acquire()
    assert a.is_held and a.hold.token == hold.token
    assert b.try_acquire() is None
    assert b.try_acquire(timeout=0.2) is None
    with pytest.raises(er.Timeout):
        b.acquire(timeout=0.2)
    assert a.release() is True
    got = b.try_acquire(timeout=2)
    assert got is not None and got.token > hold.token
    assert b.release()


def test_guarded_write_and_hold_lost(client, name):
    m = er.DistributedMutex(client, name)
    lost = []
    with m as hold:
        hold.guarded(Txn().then(Op.put(f"{name}-owner", "me")))
        assert client.get(f"{name}-owner").value == b"me"
        sub = hold.on_lost(lambda why: lost.append(why))
        client.delete(hold.key)  # someone else deletes our key: the hold is lost
        deadline = time.monotonic() + 5
        while not lost and time.monotonic() < deadline:
            time.sleep(0.01)
        assert lost and isinstance(lost[0], er.HoldLost)
        assert hold.ended and not hold.is_held
        with pytest.raises(er.HoldLost) as e:
            hold.guarded(Txn().then(Op.put(f"{name}-owner", "late")))
        assert e.value.reason == "hold_lost"
        sub.cancel()
    assert client.get(f"{name}-owner").value == b"me"


@pytest.mark.parametrize("layout", ["go", "ordered"])
def test_rwlock_readers_share_writer_excludes(client, name, layout):
    r1 = er.DistributedReadWriteLock(client, name, layout=layout)
    r2 = er.DistributedReadWriteLock(client, name, layout=layout)
    w = er.DistributedReadWriteLock(client, name, layout=layout)
    with r1.read_lock, r2.read_lock:
        assert r1.read_lock.is_held and r2.read_lock.is_held
        assert w.write_lock.try_acquire() is None
    with w.write_lock as hold:
        assert r1.read_lock.try_acquire() is None
        w.downgrade()
        assert w.read_lock.is_held and w.read_lock.hold.token == hold.token
        assert r1.read_lock.try_acquire(timeout=2) is not None
        assert r1.read_lock.release()
        assert w.read_lock.release()


def test_semaphore_permits(client, name):
    sems = [er.DistributedSemaphore(client, name, 2) for _ in range(3)]
    p1 = sems[0].acquire()
    with sems[1] as p2:
        assert p1.token != p2.token
        assert sems[2].try_acquire() is None
        assert sems[2].available_permits() == 0
    with sems[2].acquire(timeout=2) as p3:
        assert p3.is_held
    assert p1.release()
    with pytest.raises(er.EtcdError) as e:  # another permit count for the same name
        er.DistributedSemaphore(client, name, 5).acquire(timeout=2)
    assert e.value.reason == "mismatch"


def test_invalid_name_is_invalid_argument(client):
    with pytest.raises(er.InvalidArgument):
        er.DistributedMutex(client, "").acquire()
    with pytest.raises(er.InvalidArgument):
        er.DistributedSemaphore(client, "/sem/x", 0).acquire()


def test_closed_recipe_raises_closed(client, name):
    m = er.DistributedMutex(client, name)
    m.close()
    with pytest.raises(er.Closed):
        m.acquire()


@pytest.mark.parametrize("layout", ["go", "ordered"])
def test_semaphore_never_grants_more_than_its_permits(client, name, layout):
    sems = [er.DistributedSemaphore(client, name, 2, layout=layout) for _ in range(3)]
    a = sems[0].acquire(timeout=10)
    b = sems[1].acquire(timeout=10)
    assert sems[2].try_acquire() is None
    assert sems[2].available_permits() == 0
    a.release()
    c = sems[2].acquire(timeout=10)
    assert c.is_held
    if layout == "ordered":
        assert c.key.startswith(name + "/slots/")
        assert client.get(name + "/permits").kvs[0].value == b"2 ordered"
    b.release()
    c.release()


def test_semaphore_layouts_refuse_each_other(client, name):
    er.DistributedSemaphore(client, name, 2, layout="ordered").acquire(timeout=10).release()
    with pytest.raises(er.EtcdError):
        er.DistributedSemaphore(client, name, 2).acquire(timeout=10)
