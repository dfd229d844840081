"""codec=: typed values in queues, work queues, transient keys and caches, and
what becomes of a value that does not decode (DecodeFailed naming the key)."""
import threading
import time

import pytest

import etcd_recipes as er
from etcd_recipes import codecs
from _support import eventually



def test_codecs_round_trip_and_refuse():
    assert codecs.JSON.encode({"a": [1, "é"]}) == '{"a":[1,"é"]}'.encode()
    assert codecs.JSON.decode(b'{"a":1}') == {"a": 1}
    assert codecs.UTF8.decode(codecs.UTF8.encode("héllo")) == "héllo"
    assert codecs.BYTES.encode("x") == b"x" and codecs.BYTES.decode(b"\xff") == b"\xff"
    with pytest.raises(UnicodeDecodeError):
        codecs.UTF8.decode(b"\xff")
    with pytest.raises(TypeError):
        codecs.UTF8.encode(b"bytes")


def test_queue_with_a_codec_gives_objects_and_skips_a_poison_item(client, name):
    q = er.DistributedQueue(client, name, codec=codecs.JSON)
    poison = []
    q.on_poison(lambda key, why: poison.append((key, why, threading.current_thread())))
    client.put(f"{name}/items/0-poison", b"{not json")  # any key under NAME/items/ is an item
    q.enqueue({"job": 1})
    q.enqueue_all([{"job": 2}, [3]])

    it = iter(q)
    with pytest.raises(er.DecodeFailed) as e:
        next(it)  # the iteration meets the poison item first...
    assert f"{name}/items/0-poison" in str(e.value)
    assert e.value.code == "DATA_LOSS" and e.value.reason == "decode_failed"
    assert eventually(lambda: len(poison) == 1)
    key, why, thread = poison[0]
    assert key == f"{name}/items/0-poison" and isinstance(why, er.DecodeFailed)
    assert thread is not threading.main_thread()
    # ... and iterating again goes on with the next items; the poison stays.
    got = []
    for value in q:
        got.append(value)
        if len(got) == 3:
            break
    assert got == [{"job": 1}, {"job": 2}, [3]]
    assert client.get(f"{name}/items/0-poison").value == b"{not json"
    assert any(isinstance(x, er.DecodeFailed) for x in q.errors())
    q.close()


def test_a_value_the_codec_cannot_encode_writes_nothing(client, name):
    q = er.DistributedQueue(client, name, codec=codecs.JSON)
    with pytest.raises(er.InvalidArgument) as e:
        q.enqueue({"a": {1, 2}})  # a set is not JSON
    assert "TypeError" in str(e.value)
    with pytest.raises(er.InvalidArgument):
        q.enqueue_all([{"ok": 1}, float("nan")])  # all or nothing
    assert q.size() == 0
    with pytest.raises(er.InvalidArgument):
        er.DistributedQueue(client, name, codec=object())
    q.close()


def test_priority_queue_with_utf8(client, name):
    q = er.DistributedPriorityQueue(client, name, codec=codecs.UTF8)
    q.enqueue("later", 5)
    q.enqueue("héllo", 1)
    assert q.dequeue(timeout=5) == "héllo"
    assert q.dequeue(timeout=5) == "later"
    assert q.try_dequeue() is None
    q.close()


def test_work_queue_with_a_codec_sends_poison_to_the_dead_letters(client, name):
    wq = er.DistributedWorkQueue(client, name, codec=codecs.JSON, visibility_timeout=5)
    client.put(f"{name}/items/0-poison", b"\x00 not json")
    wq.enqueue({"resize": 42})
    with wq.receive(timeout=5) as item:
        assert item.value == {"resize": 42}
    dead = wq.dead_letters()
    assert [d.id for d in dead] == ["0-poison"]
    assert dead[0].reason.startswith("poison") and f"{name}/items/0-poison" in dead[0].reason
    assert dead[0].value == b"\x00 not json"  # dead letters keep the payload as it was
    assert any(isinstance(x, er.DecodeFailed) for x in wq.errors())
    assert wq.size() == 0
    wq.close()


def test_transient_key_with_a_codec(client, name):
    t = er.TransientKeyValue(client, name, {"port": 8080}, codec=codecs.JSON)
    t.create()
    assert client.get(name).value == b'{"port":8080}'
    t.set_value({"port": 9090})
    assert t.value == {"port": 9090} and client.get(name).value == b'{"port":9090}'
    with pytest.raises(er.InvalidArgument):
        t.set_value(object())
    assert t.value == {"port": 9090}
    t.release()
    bad = er.TransientKeyValue(client, f"{name}-bad", object(), codec=codecs.JSON)
    with pytest.raises(er.InvalidArgument):
        bad.create()
    assert client.get(f"{name}-bad").value is None
    bad.close()


def test_caches_with_a_codec_keep_an_undecodable_node_with_its_error(client, name):
    client.put(f"{name}/good", b'{"limit": 10}')
    client.put(f"{name}/bad", b"{oops")
    events = []
    with er.PathChildrenCache(client, name, codec=codecs.JSON, start_mode="build_initial_cache") as cache:
        cache.on_event(lambda e: events.append((e.type, e.name, e.current)))
        assert cache.wait_initialized(timeout=5)
        assert cache["good"].value == {"limit": 10} and cache["good"].error is None
        bad = cache["bad"]
        assert isinstance(bad, er.TypedCachedNode) and not bad.decoded
        assert isinstance(bad.error, er.DecodeFailed) and f"{name}/bad" in bad.error.message
        with pytest.raises(er.DecodeFailed):
            bad.value
        assert sorted(cache) == ["bad", "good"]  # iterating never raises
        client.put(f"{name}/new", b"[1, 2]")
        assert eventually(lambda: any(t == "ADDED" and n == "new" for t, n, _ in events))
        assert [c.value for t, n, c in events if n == "new"] == [[1, 2]]
        assert any(isinstance(x, er.DecodeFailed) for x in cache.errors())

    client.put(f"{name}-node", b"\xff")
    with er.NodeCache(client, f"{name}-node", codec=codecs.UTF8) as node:
        assert node.wait_initialized(timeout=5)
        with pytest.raises(er.DecodeFailed):
            node.current.value
        client.put(f"{name}-node", "fine")
        assert eventually(lambda: node.current.decoded and node.current.value == "fine")


def test_without_a_codec_values_stay_bytes(client, name):
    q = er.DistributedQueue(client, name, codec=codecs.BYTES)
    q.enqueue("text")
    assert q.dequeue(timeout=5) == b"text"
    sub = q.on_poison(lambda key, why: None)  # a bytes queue has no poison: never runs
    sub.cancel()
    q.close()
