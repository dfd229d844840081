"""The library's log records in Python: set_log_sink(callable) and
log_to_logging() (the logger "etcd_recipes")."""

import logging
import time

import pytest

import etcd_recipes as er


@pytest.fixture(autouse=True)
def _silent_after():
    yield
    er.set_log_sink(None)


def _dead_letter(client, name):
    wq = er.DistributedWorkQueue(client, name, visibility_timeout=5, max_deliveries=1)
    wq.enqueue("job")
    assert wq.receive(timeout=5).requeue()
    assert wq.try_receive(timeout=1.5) is None  # delivered once already: dead-lettered
    return wq


def _eventually(pred, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def test_a_dead_letter_reaches_a_python_sink(client, name):
    records = []
    er.set_log_sink(records.append, level="warning")
    wq = _dead_letter(client, name)
    assert _eventually(lambda: any("dead letters" in r.message for r in records)), [str(r) for r in records]
    r = next(r for r in records if "dead letters" in r.message)
    assert r.level == "warning" and r.source_kind == "DistributedWorkQueue" and r.source_name == name
    assert r.time > 0 and "dead letters" in str(r)
    wq.close()


def test_records_reach_the_etcd_recipes_logger(client, name):
    seen = []

    class Collect(logging.Handler):
        def emit(self, record):
            seen.append(record)

    logger = er.log_to_logging("info")
    assert logger is logging.getLogger("etcd_recipes")
    handler = Collect(level=logging.DEBUG)
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        wq = _dead_letter(client, name)
        assert _eventually(lambda: any("dead letters" in r.getMessage() for r in seen))
        rec = next(r for r in seen if "dead letters" in r.getMessage())
        assert rec.levelno == logging.WARNING and rec.name == "etcd_recipes"
        assert rec.etcd_record.source_kind == "DistributedWorkQueue"
        wq.close()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def test_a_raising_sink_is_contained_and_bad_levels_refused(client, name, monkeypatch):
    import sys
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    def boom(record):
        raise RuntimeError("sink bug")

    er.set_log_sink(boom, level="warning")
    wq = _dead_letter(client, name)
    assert _eventually(lambda: len(unraisable) >= 1)
    assert isinstance(unraisable[0].exc_value, RuntimeError)
    assert wq.size() == 0  # the library went on
    wq.close()
    er.set_log_sink(None)  # before the hook is put back
    with pytest.raises(ValueError):
        er.set_log_sink(print, level="loud")
