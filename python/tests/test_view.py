"""KeyspaceView and the streams from Python, against a real etcd: events with
the old and new value, blocking and ``async for`` pulls, a compacted start
revision, the streams of a raw watch and a cache, bad input."""

import asyncio

import pytest

import etcd_recipes as er
import etcd_recipes.aio as aio
from _support import eventually


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_view_events_snapshot_and_mapping(client, name):
    client.put(f"{name}/a", "1")
    heard = []
    view = er.KeyspaceView(client, f"{name}/", start="with_snapshot")
    view.on_event(lambda e: heard.append((e.type, e.key)))
    events = view.events(capacity=64)  # before start(): hears the first read too
    with view:
        assert view.wait_initialized(timeout=5)
        first = events.next(timeout=5)
        assert (first.type, first.key, first.current.value) == ("ADDED", f"{name}/a", b"1")
        assert events.next(timeout=5).type == "INITIALIZED"
        assert view[f"{name}/a"].value == b"1" and len(view) == 1
        kvs, revision = view.snapshot()
        assert [kv.key for kv in kvs] == [f"{name}/a".encode()] and revision == view.revision > 0
        client.put(f"{name}/a", "2")
        e = events.next(timeout=5)
        assert e.type == "UPDATED" and e.key == f"{name}/a"
        assert e.previous.value == b"1" and e.current.value == b"2"
        assert e.revision == e.current.mod_revision
        with pytest.raises(er.Timeout):
            events.next(timeout=0.1)  # nothing more; the stream goes on
        client.delete(f"{name}/a")
        removed = events.next(timeout=5)
        assert removed.type == "REMOVED" and removed.previous.value == b"2" and removed.current is None
        with pytest.raises(KeyError):
            view[f"{name}/a"]
    assert events.next(timeout=5) is None  # closing the view ended the stream
    assert heard[:2] == [("ADDED", f"{name}/a"), ("INITIALIZED", "")]


def test_view_async_for_sees_every_event_in_revision_order(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            await c.put(f"{name}/a", "0")
            view = aio.KeyspaceView(c, f"{name}/", start="with_snapshot")
            events = view.events()
            async with view:
                for i in range(1, 6):
                    await c.put(f"{name}/k{i}", str(i))
                seen = []
                async for e in events:
                    seen.append(e)
                    if len([x for x in seen if x.type == "ADDED"]) == 6:
                        break
                revisions = [e.revision for e in seen]
                assert revisions == sorted(revisions)
                assert [e.key for e in seen if e.type == "ADDED"] == [f"{name}/a"] + [f"{name}/k{i}" for i in
                                                                                     range(1, 6)]
            assert await events.next(timeout=5) is None  # the view was closed: the stream ended
    run(main())


def test_a_compacted_start_revision_fails_clearly(client, name):
    first = client.put(f"{name}/x", "1").header.revision
    last = client.put(f"{name}/x", "2").header.revision
    client.compact(last)
    with er.KeyspaceView(client, f"{name}/", start="from_revision", start_revision=first) as view:
        with pytest.raises(er.EtcdError) as e:
            view.wait_initialized(timeout=5)
        assert e.value.reason == "compacted", e.value


def test_bad_input_is_refused_before_any_io(client):
    with pytest.raises(er.InvalidArgument):
        er.KeyspaceView(client, "/v/", start="sideways")
    view = er.KeyspaceView(client, "/v/", start="from_revision")  # no start_revision
    with pytest.raises(er.InvalidArgument):
        view.start()


def test_watch_and_cache_streams(client, name):
    rev = client.put(f"{name}/w/a", "1").header.revision
    stream = er.watch_stream(client, f"{name}/w/", prefix=True, start_revision=rev, capacity=16)
    response = stream.next(timeout=5)
    assert response.events[0].kv.key == f"{name}/w/a".encode()
    stream.close()
    assert stream.next(timeout=1) is None

    cache = er.PathChildrenCache(client, f"{name}/c")
    events = cache.events()
    with cache:
        assert cache.wait_initialized(timeout=5)
        client.put(f"{name}/c/x", "1")
        e = events.next(timeout=5)
        assert (e.type, e.name) == ("ADDED", "x")
    assert eventually(lambda: events.next(timeout=1) is None)
