"""PresenceLease: a lease that heals, with the keys it owns (blocking and asyncio)."""

import asyncio
import threading

import pytest

import etcd_recipes as er
import etcd_recipes.aio as aio


def _lease_of(client, key):
    kvs = client.get(key).kvs
    return kvs[0].lease if kvs else None


def test_the_keys_exist_on_the_lease_and_come_back_after_a_loss(client, name):
    key = f"{name}/workers/w1"
    events = []
    restored = threading.Event()

    def on_event(event, error):
        events.append((event, error))
        if event == "RESTORED":
            restored.set()

    with er.PresenceLease(client, ttl=5, keys={key: "10.0.0.7"}) as p:
        sub = p.on_event(on_event)
        first = p.lease_id
        assert first != 0 and p.alive and not p.closed and p.ttl >= 5
        assert _lease_of(client, key) == first
        assert p.keys == {key.encode(): b"10.0.0.7"}
        client.lease_revoke(first)  # lost (as when cut off past its TTL): it heals
        assert restored.wait(15), events
        assert events[0][0] == "EXPIRED" and events[0][1] is not None
        assert p.lease_id not in (0, first)
        assert _lease_of(client, key) == p.lease_id
        assert client.get(key).kvs[0].value == b"10.0.0.7"
        sub.cancel()
    assert p.closed
    assert client.get(key).kvs == []  # revoked with its lease


def test_a_key_held_by_another_owner_is_left_alone(client, name):
    taken = f"{name}/taken"
    free = f"{name}/free"
    client.put(taken, "someone else's")
    p = er.PresenceLease(client, ttl=5, keys={taken: "mine", free: "mine"})
    with pytest.raises(er.EtcdError) as e:
        p.start()
    assert e.value.code == "ALREADY_EXISTS" and taken in str(e.value)
    assert client.get(taken).kvs[0].value == b"someone else's"
    assert _lease_of(client, free) == p.lease_id  # the free one was created
    p.close()


def test_asyncio_presence_lease(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            key = f"{name}/a"
            async with aio.PresenceLease(c, ttl=5, keys={key: "x"}) as p:
                assert p.alive
                got = await c.get(key)
                assert got.kvs[0].lease == p.lease_id
            got = await c.get(key)
            assert got.kvs == []
            with pytest.raises(TypeError, match="async with"):
                with aio.PresenceLease(c, keys={}):
                    pass
    asyncio.run(asyncio.wait_for(main(), 30))
