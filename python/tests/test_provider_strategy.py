"""A ServiceProvider strategy written in Python: a callable given the
candidates that returns an index or None."""

import sys
import threading

import etcd_recipes as er


def _register(d, *ids):
    for i, id_ in enumerate(ids):
        d.register_instance(er.ServiceInstance("api", id=id_, address=f"10.0.0.{i + 1}", port=80))


def test_a_python_strategy_picks_by_index(client, name):
    seen = []

    def last(candidates):
        seen.append([c.id for c in candidates])
        return len(candidates) - 1

    with er.ServiceDiscovery(client, base_path=name) as d:
        _register(d, "i1", "i2", "i3")
        provider = er.ServiceProvider(client, "api", base_path=name, strategy=last)
        assert provider.wait_initialized(timeout=5)
        assert provider.pick().id == "i3"
        assert seen[-1] == ["i1", "i2", "i3"]  # sorted by id
        provider.note_error(provider.pick())
        provider.note_error(provider.pick())  # ejected: no longer a candidate
        assert provider.pick().id == "i2"
        assert provider.get_instance(timeout=5).id == "i2"  # the strategy on the client's thread too
        provider.close()
        # The facade's provider takes one as well.
        first = d.provider("api", strategy=lambda candidates: 0)
        assert first.wait_initialized(timeout=5)
        assert first.pick().id == "i1"


def test_none_or_a_failing_strategy_picks_nothing(client, name, monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    with er.ServiceDiscovery(client, base_path=name) as d:
        _register(d, "i1")
        none = er.ServiceProvider(client, "api", base_path=name, strategy=lambda candidates: None)
        assert none.wait_initialized(timeout=5)
        assert none.pick() is None
        assert unraisable == []

        def broken(candidates):
            raise RuntimeError("strategy bug")

        failing = er.ServiceProvider(client, "api", base_path=name, strategy=broken)
        assert failing.wait_initialized(timeout=5)
        assert failing.pick() is None
        out_of_range = er.ServiceProvider(client, "api", base_path=name, strategy=lambda candidates: 5)
        assert out_of_range.wait_initialized(timeout=5)
        assert out_of_range.pick() is None
        assert [type(u.exc_value) for u in unraisable] == [RuntimeError, IndexError]
        for p in (none, failing, out_of_range):
            p.close()


def test_python_strategies_from_many_threads_do_not_deadlock(client, name):
    lock = threading.Lock()
    calls = []

    def counting(candidates):
        with lock:
            calls.append(1)
        return 0

    with er.ServiceDiscovery(client, base_path=name) as d:
        _register(d, "i1", "i2")
        provider = er.ServiceProvider(client, "api", base_path=name, strategy=counting)
        assert provider.wait_initialized(timeout=5)
        picked = []

        def worker():
            for _ in range(500):
                picked.append(provider.pick().id)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in threads), "pick() deadlocked"
        assert len(picked) == 2000 and set(picked) == {"i1"} and len(calls) == 2000
        provider.close()


def test_a_bad_strategy_is_refused(client, name):
    try:
        er.ServiceProvider(client, "api", base_path=name, strategy=42)
    except er.InvalidArgument:
        return
    raise AssertionError("a strategy that is neither a name nor a callable was accepted")
