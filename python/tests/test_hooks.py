"""The metrics hooks (metrics=), against real etcd."""
import threading
import time

import pytest

import etcd_recipes as er


def _eventually(pred, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


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

    assert _eventually(lambda: "etcd_recipes_lock_released_total" in names())
    assert names().index("etcd_recipes_lock_acquired_total") < names().index("etcd_recipes_lock_released_total")
    assert all(s[4] is not threading.main_thread() for s in sink.seen)
    acquired = next(s for s in sink.seen if s[1] == "etcd_recipes_lock_acquired_total")
    assert acquired[0] == "add" and acquired[3] == 1


def test_a_metrics_object_without_add_observe_set_is_refused(client, name):
    with pytest.raises(er.InvalidArgument):
        er.DistributedMutex(client, name, metrics=object())
