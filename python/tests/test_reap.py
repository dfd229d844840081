"""reap(): a crashed producer's key is removed once idle, a key that moved
during the wait is kept, dry_run deletes nothing, bad input is refused
before any read."""
import asyncio

import pytest

import etcd_recipes as er
import etcd_recipes.aio as aio

# A producer key as a queue object writes it (NAME/producers/<p>, the
# sequence of its last enqueue), left behind by a process that crashed.
PRODUCER = "/jobs/producers/00000000000000aa"


def _exists(client, key):
    return len(client.get(key.encode()).kvs) == 1


def test_reap_removes_an_abandoned_producer_key_and_dry_run_only_reports(client, name):
    key = name + PRODUCER
    client.put(key.encode(), b"0000000000000001")
    dry = er.reap(client, name + "/", idle=0.1, dry_run=True, timeout=30)
    assert dry.reaped == 1 and _exists(client, key)
    [found] = dry.keys
    assert (found.key, found.recipe, found.kind, found.role) == (key, name + "/jobs", "queue", "producer")
    assert found.reaped and found.mod_revision > 0

    report = er.reap(client, name + "/", idle=0.1, timeout=30)
    assert report.reaped == 1 and report.keys[0].reaped
    assert not _exists(client, key)
    # Nothing left: a second pass finds nothing.
    assert er.reap(client, name + "/", idle=0, timeout=30).keys == []


def test_a_live_queue_loses_nothing_when_its_producer_key_is_reaped(client, name):
    q = er.DistributedQueue(client, f"{name}/q")
    q.enqueue("a")
    assert er.reap(client, name + "/", idle=0, timeout=30).reaped == 1
    q.enqueue("b")  # writes its guard key again
    assert [q.dequeue(timeout=5), q.dequeue(timeout=5)] == [b"a", b"b"]
    assert q.try_dequeue() is None
    q.close()


def test_bad_input_is_refused_before_any_read(client, name):
    with pytest.raises(er.InvalidArgument):
        er.reap(client, "", idle=0, timeout=30)
    with pytest.raises(er.InvalidArgument):
        er.reap(client, name + "/", idle=-1)


def test_asyncio_reap_keeps_a_key_that_moved_during_the_wait(client, name):
    key = name + PRODUCER

    async def main():
        client.put(key.encode(), b"0000000000000001")
        task = asyncio.ensure_future(aio.reap(client, name + "/", idle=1.0, timeout=30))
        # A live producer writes its key all along: whenever the scan read it,
        # the key moved during the wait that followed.
        seq = 2
        while not task.done():
            client.put(key.encode(), b"%016d" % seq)
            seq += 1
            await asyncio.wait([task], timeout=0.05)
        report = await task
        assert report.reaped == 0
        [kept] = report.keys
        assert kept.key == key and not kept.reaped and kept.kept_because
        assert _exists(client, key)
        gone = await aio.reap(client, name + "/", idle=0.1, timeout=30)
        assert gone.reaped == 1 and not _exists(client, key)

    asyncio.run(asyncio.wait_for(main(), 60))
