import threading
import time

import pytest

import etcd_recipes as er


@pytest.mark.parametrize("layout", ["go", "ordered"])
def test_leader_latch_one_leader_then_handover(client, name, layout):
    a = er.LeaderLatch(client, name, "a", layout=layout)
    b = er.LeaderLatch(client, name, "b", layout=layout)
    terms = []
    sub = b.on_is_leader(lambda term: terms.append(term))
    with a:
        assert a.await_leadership(timeout=5)
        with b:
            assert not b.await_leadership(timeout=0.3)
            assert a.leader().value == b"a"
            deadline = time.monotonic() + 5
            while len(a.participants()) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert [p.value for p in a.participants()] == [b"a", b"b"]
            assert a.resign()
            assert b.await_leadership(timeout=5)
            assert b.is_leader and b.hold.token > 0
            deadline = time.monotonic() + 2
            while not terms and time.monotonic() < deadline:
                time.sleep(0.01)
            assert terms == [b.hold.token]
    sub.cancel()


def test_leader_selector_leadership_is_exclusive(client, name):
    state = {"inside": 0, "max": 0, "terms": []}
    lock = threading.Lock()

    def candidate(i):
        s = er.LeaderSelector(client, name, f"c{i}")
        for _ in range(2):
            with s.leadership(timeout=20) as term:
                with lock:
                    state["inside"] += 1
                    state["max"] = max(state["max"], state["inside"])
                    state["terms"].append(term.token)
                time.sleep(0.05)
                with lock:
                    state["inside"] -= 1
        s.close()

    threads = [threading.Thread(target=candidate, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert state["max"] == 1
    assert len(state["terms"]) == 6 and len(set(state["terms"])) == 6


def test_leader_selector_callback_runs_per_term(client, name):
    seen = []
    done = threading.Event()

    def lead(term):
        seen.append(term.token)
        done.set()

    s = er.LeaderSelector(client, name, "cb", lead)
    s.set_auto_requeue(False)
    s.start()
    assert done.wait(5)
    s.close()
    assert len(seen) == 1 and seen[0] > 0


def test_leadership_timeout_raises(client, name):
    holder = er.LeaderLatch(client, name, "holder")
    with holder:
        assert holder.await_leadership(timeout=5)
        s = er.LeaderSelector(client, name, "late")
        with pytest.raises(er.Timeout):
            with s.leadership(timeout=0.3):
                pass
        s.close()


def test_queue_fifo_and_iteration(client, name):
    q = er.DistributedQueue(client, name)
    q.enqueue_all(["1", "2"])
    q.enqueue(b"3")
    assert q.size() == 3
    out = []
    for item in q:
        out.append(item)
        if len(out) == 3:
            break
    assert out == [b"1", b"2", b"3"]
    assert q.try_dequeue() is None
    threading.Timer(0.5, q.close).start()
    assert list(q) == []  # the iteration ends when the queue is closed


def test_priority_queue_lowest_first(client, name):
    q = er.DistributedPriorityQueue(client, name)
    q.enqueue("low", 10)
    q.enqueue("urgent", 0)
    q.enqueue("low2", 10)
    assert [q.dequeue(), q.dequeue(), q.dequeue()] == [b"urgent", b"low", b"low2"]
    with pytest.raises(er.InvalidArgument):
        q.enqueue("x", 70000)


def test_work_queue_ack_requeue_and_items(client, name):
    wq = er.DistributedWorkQueue(client, name, visibility_timeout=5, max_deliveries=2)
    wq.enqueue_all(["a", "b"])
    item = wq.receive(timeout=5)
    assert item.value == b"a" and item.attempt == 1
    assert item.requeue()
    again = wq.receive(timeout=5)
    assert again.value == b"a" and again.attempt == 2
    assert again.ack()
    seen = []
    for it in wq.items():
        with it:
            seen.append(it.value)
        break
    assert seen == [b"b"]
    assert wq.size() == 0
    wq.enqueue("boom")
    with pytest.raises(RuntimeError):
        with wq.receive(timeout=5):
            raise RuntimeError("handler failed")  # the item is requeued
    redelivered = wq.receive(timeout=5)
    assert redelivered.value == b"boom" and redelivered.attempt == 2
    assert redelivered.requeue()
    # Delivered max_deliveries times: the consumer that meets it next moves
    # it to the dead letters instead of delivering it.
    assert wq.try_receive(timeout=0.5) is None
    deadline = time.monotonic() + 5
    while not wq.dead_letters() and time.monotonic() < deadline:
        time.sleep(0.05)
    dead = wq.dead_letters()
    assert [d.value for d in dead] == [b"boom"]
    assert wq.purge_dead(dead[0].id)


def test_counter(client, name):
    c = er.DistributedAtomicLong(client, name)
    assert c.get() == 0
    assert c.add(5) == 5
    assert c.increment() == 6
    assert c.decrement() == 5
    assert not c.compare_and_set(4, 9)
    assert c.compare_and_set(5, 9)
    c.set(-3)
    assert c.get() == -3
    total = []

    def adder():
        mine = er.DistributedAtomicLong(client, name)
        for _ in range(10):
            total.append(mine.increment())

    threads = [threading.Thread(target=adder) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(total) == list(range(-2, 28))
