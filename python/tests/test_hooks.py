"""The hooks: metrics (metrics=) and the registrations' on_lost / on_restored, against real etcd."""
import threading
import time

import pytest

import etcd_recipes as er
from _support import eventually



def test_prometheus_metrics_count_what_the_recipes_did(client, name):
    metrics = er.PrometheusMetrics()
    mutex = er.DistributedMutex(client, name, metrics=metrics)
    for _ in range(2):
        with mutex:
            pass
    mutex.close()
    assert metrics.value("etcd_recipes_lock_acquired_total", {"lock": name}) == 2
    assert metrics.value("etcd_recipes_lock_released_total", {"lock": name}) == 2
    assert f'etcd_recipes_lock_acquired_total{{lock="{name}"}} 2' in metrics.render()


def test_a_python_metrics_sink_hears_in_order_off_the_callers_thread(client, name):
    class Sink:
        def __init__(self):
            self.seen = []

        def add(self, metric, labels, delta):
            self.seen.append(("add", metric, labels, delta, threading.current_thread()))

        def observe(self, metric, labels, value):
            self.seen.append(("observe", metric, labels, value, threading.current_thread()))

        def set(self, metric, labels, value):
            self.seen.append(("set", metric, labels, value, threading.current_thread()))

    sink = Sink()
    mutex = er.DistributedMutex(client, name, metrics=sink)
    with mutex:
        pass
    mutex.close()

    def names():
        return [s[1] for s in sink.seen if s[2] == {"lock": name}]

    assert eventually(lambda: "etcd_recipes_lock_released_total" in names())
    assert names().index("etcd_recipes_lock_acquired_total") < names().index("etcd_recipes_lock_released_total")
    assert all(s[4] is not threading.main_thread() for s in sink.seen)
    acquired = next(s for s in sink.seen if s[1] == "etcd_recipes_lock_acquired_total")
    assert acquired[0] == "add" and acquired[3] == 1


def test_a_metrics_object_without_add_observe_set_is_refused(client, name):
    with pytest.raises(er.InvalidArgument):
        er.DistributedMutex(client, name, metrics=object())


def _lose_and_heal(client, owner, key):
    """Revokes the registration's lease: it is lost, then re-created under a new one."""
    lost, restored = [], []
    owner.on_lost(lambda instance, why: lost.append((instance, why, threading.current_thread())))
    owner.on_restored(lambda instance: restored.append(instance))
    lease = client.get(key).kvs[0].lease
    client.lease_revoke(lease)
    assert eventually(lambda: lost and restored, timeout=10), (lost, restored)
    instance, why, thread = lost[0]
    assert isinstance(why, er.EtcdError)
    assert thread is not threading.main_thread()
    healed = client.get(key).kvs[0]
    assert healed.lease not in (0, lease)
    return instance, restored[0]


def test_registry_hears_a_lost_registration_and_its_restoration(client, name):
    # session_ttl is the registration's lease TTL: short, so that the loss is
    # noticed by the next keep-alive (every TTL/3).
    registry = er.ServiceRegistry(client, base_path=name, session_ttl=2)
    mine = er.ServiceInstance("api", id="a1", address="10.0.0.1", port=80)
    registry.register_instance(mine)
    lost, restored = _lose_and_heal(client, registry, f"{name}/api/a1")
    assert lost.id == "a1" and restored.id == "a1" and restored.endpoint == "10.0.0.1:80"
    registry.close()


def test_discovery_hears_its_own_registrations(client, name):
    with er.ServiceDiscovery(client, base_path=name, session_ttl=2) as discovery:
        discovery.register_instance(er.ServiceInstance("api", id="d1", address="10.0.0.2", port=81))
        lost, restored = _lose_and_heal(client, discovery, f"{name}/api/d1")
        assert lost.name == "api" and restored.id == "d1"
        assert [i.id for i in discovery.query_instances("api")] == ["d1"]
