import threading
import time

import pytest

import etcd_recipes as er
from etcd_recipes import Compare, Op, Txn
from etcd_recipes.testing import FaultProxy


def test_kv_round_trip_bytes_and_prefix(client, name):
    client.put(f"{name}/a", "1")
    client.put(f"{name}/b", b"\xff\x00")
    assert client.get(f"{name}/a").value == b"1"
    r = client.get(f"{name}/", prefix=True)
    assert [kv.key for kv in r.kvs] == [f"{name}/a".encode(), f"{name}/b".encode()]
    assert r.kvs[1].value == b"\xff\x00"
    assert client.get(f"{name}/missing").value is None
    assert client.delete(f"{name}/", prefix=True).deleted == 2
    assert client.get(f"{name}/", prefix=True, count_only=True).count == 0


def test_txn_compare_then_otherwise(client, name):
    t = Txn().when(Compare.absent(f"{name}/job")).then(Op.put(f"{name}/job", "queued")).otherwise(
        Op.get(f"{name}/job"))
    assert client.txn(t).succeeded
    again = client.txn(t)
    assert not again.succeeded
    assert again.responses[0].kvs[0].value == b"queued"
    guarded = Txn().when(Compare.value(f"{name}/job") == "queued").then(Op.put(f"{name}/job", "running"))
    assert client.txn(guarded).succeeded
    assert client.get(f"{name}/job").value == b"running"


def test_lease_keeps_key_until_revoked(client, name):
    with client.lease(2) as lease:
        assert lease.alive and lease.id != 0
        client.put(f"{name}/k", "v", lease=lease.id)
        time.sleep(3)  # longer than the TTL: only the keep-alive keeps it
        assert client.get(f"{name}/k").value == b"v"
        assert client.lease_time_to_live(lease.id).ttl > 0
    assert client.get(f"{name}/k").value is None


def test_watch_iterates_events_in_order(client, name):
    with client.watch(f"{name}/", prefix=True) as w:
        assert w.wait_created(5)
        client.put(f"{name}/x", "1")
        client.put(f"{name}/x", "2")
        client.delete(f"{name}/x")
        seen = []
        for response in w:
            seen += [(e.type, e.kv.value) for e in response.events]
            if len(seen) >= 3:
                break
    assert seen == [("PUT", b"1"), ("PUT", b"2"), ("DELETE", b"")]
    with pytest.raises(StopIteration):  # cancelled on leaving `with`
        w.get(timeout=0.1)


def test_watch_get_times_out_then_stops_after_cancel(client, name):
    w = client.watch(f"{name}/nothing")
    assert w.get(timeout=0.2) is None
    w.cancel()
    with pytest.raises(StopIteration):
        next(w)


def test_bad_endpoint_is_invalid_argument():
    with pytest.raises(er.InvalidArgument) as e:
        er.Client(["no-port-here"])
    assert e.value.code == "INVALID_ARGUMENT"
    assert "no-port-here" in str(e.value)


def test_timeout_carries_code_and_message(cluster, name):
    with FaultProxy.start(cluster.endpoint(0)) as proxy:
        c = er.Client([proxy.endpoint])
        c.put(f"{name}/k", "v")
        proxy.blackhole()
        started = time.monotonic()
        with pytest.raises(er.Timeout) as e:
            c.get(f"{name}/k", timeout=0.5)
        assert time.monotonic() - started < 3
        assert isinstance(e.value, TimeoutError)
        assert e.value.code == "DEADLINE_EXCEEDED" and e.value.code_value == 4
        assert e.value.message
        c.close()


def test_closed_client_raises_closed(cluster, name):
    c = er.Client(cluster.endpoints)
    c.close()
    with pytest.raises(er.Closed) as e:
        c.get(f"{name}/k")
    assert e.value.reason == "closed"
    assert isinstance(e.value, er.EtcdError)


def test_the_gil_is_released_while_waiting(client, name):
    """A thread blocked in a dequeue does not stop this thread from running Python."""
    q = er.DistributedQueue(client, name)
    got = []
    t = threading.Thread(target=lambda: got.append(q.dequeue(timeout=10)))
    t.start()
    spins = 0
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        spins += 1
    q.enqueue("x")
    t.join(5)
    assert got == [b"x"]
    assert spins > 10000
