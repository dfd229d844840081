import threading
import time

import pytest

import etcd_recipes as er
from _support import eventually



def test_barrier_gate(client, name):
    setter = er.DistributedBarrier(client, name)
    waiter = er.DistributedBarrier(client, name)
    assert setter.set()
    assert setter.is_set_by_me
    assert not waiter.wait(timeout=0.3)
    threading.Timer(0.3, lambda: setter.remove()).start()
    assert waiter.wait(timeout=5)


def test_barrier_with_count(client, name):
    results = []

    def party():
        results.append(er.DistributedBarrierWithCount(client, name, 3).wait(timeout=10))

    threads = [threading.Thread(target=party) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    assert results == []  # two of three parties: nobody passes yet
    party()
    for t in threads:
        t.join(10)
    assert results == [True, True, True]


def test_double_barrier(client, name):
    log = []

    def party(i):
        with er.DistributedDoubleBarrier(client, name, 2):
            log.append(("in", i))
        log.append(("out", i))

    t = threading.Thread(target=party, args=(1,))
    t.start()
    time.sleep(0.3)
    assert log == []
    party(2)
    t.join(10)
    assert {e for e in log[:2]} == {("in", 1), ("in", 2)}


def test_transient_key_value(client, name):
    with er.TransientKeyValue(client, name, "mine") as t:
        assert t.is_held and client.get(name).value == b"mine"
        t.set_value("changed")
        assert client.get(name).value == b"changed"
        other = er.TransientKeyValue(client, name, "theirs")
        with pytest.raises(er.EtcdError):
            other.create(timeout=2)
        other.close()
    assert client.get(name).value is None


def test_path_children_cache_events_and_mapping(client, name):
    client.put(f"{name}/a", "1")
    events = []
    with er.PathChildrenCache(client, name) as cache:
        cache.on_event(lambda e: events.append((e.type, e.name)))
        assert cache.wait_initialized(timeout=5)
        client.put(f"{name}/b", "2")
        client.put(f"{name}/a", "3")
        client.delete(f"{name}/b")
        assert eventually(lambda: ("REMOVED", "b") in events)
        assert events[-3:] == [("ADDED", "b"), ("UPDATED", "a"), ("REMOVED", "b")]
        assert dict((k, n.value) for k, n in cache.snapshot().items()) == {"a": b"3"}
        assert cache["a"].value == b"3" and "b" not in cache and len(cache) == 1
        with pytest.raises(KeyError):
            cache["b"]


def test_node_cache(client, name):
    seen = []
    with er.NodeCache(client, name) as cache:
        sub = cache.on_change(lambda e: seen.append(e.type))
        assert cache.wait_initialized(timeout=5)
        assert not cache.exists
        client.put(name, "v")
        assert eventually(lambda: cache.exists)
        assert cache.current.value == b"v"
        # The cache shows the change before its listeners run (they run on
        # the client's executor, after the state is applied).
        assert eventually(lambda: "CREATED" in seen)
        sub.cancel()
    assert seen == ["INITIALIZED", "CREATED"]


def test_discovery_register_query_pick(client, name):
    with er.ServiceDiscovery(client, base_path=name) as d:
        d.register_instance(er.ServiceInstance("api", id="i1", address="10.0.0.1", port=80))
        d.register_instance(er.ServiceInstance("api", id="i2", address="10.0.0.2", port=80))
        assert d.query_names() == ["api"]
        assert sorted(i.id for i in d.query_instances("api")) == ["i1", "i2"]
        provider = d.provider("api")
        assert provider.wait_initialized(timeout=5)
        picks = {provider.pick().id for _ in range(4)}
        assert picks == {"i1", "i2"}
        assert d.unregister("api", "i1")
        assert eventually(lambda: [i.id for i in provider.all_instances()] == ["i2"])
        assert d.query_instance("api", "i2").endpoint == "10.0.0.2:80"
