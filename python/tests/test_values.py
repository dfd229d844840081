"""SharedValue and GroupMember from Python, blocking and asyncio, against a real etcd."""

import asyncio

import pytest

import etcd_recipes as er
import etcd_recipes.aio as aio
from etcd_recipes import codecs
from _support import eventually


def test_shared_value_set_compare_and_set_try_set(client, name):
    changes = []
    with er.SharedValue(client, name) as v:
        v.on_change(lambda e: changes.append((e.previous.value, e.current.value, e.resync)))
        assert v.wait_initialized(timeout=5)
        now = v.get()
        assert not now.exists and now.value is None and now.mod_revision == 0
        rev = v.set(b"one")
        now = v.get()
        assert now.value == b"one" and now.mod_revision == rev and now.version == 1
        assert v.compare_and_set(rev, b"two")
        assert not v.compare_and_set(rev, b"three"), "a stale version loses"
        assert client.get(name).value == b"two"
        client.put(name, "theirs")
        assert eventually(lambda: v.get().value == b"theirs")
        assert v.try_set(b"mine")
        assert eventually(lambda: len(changes) == 4)
        assert changes == [(None, b"one", False), (b"one", b"two", False), (b"two", b"theirs", False),
                           (b"theirs", b"mine", False)]
        client.delete(name)
        assert eventually(lambda: not v.get().exists)
        # get() shows the delete before the listener that hears it has run.
        assert eventually(lambda: len(changes) == 5)
        assert changes[-1][1] is None


def test_shared_value_with_a_codec_and_a_value_of_another_type(client, name):
    client.put(name, "not json {")
    with er.SharedValue(client, name, codec=codecs.JSON) as v:
        assert v.wait_initialized(timeout=5)
        now = v.get()
        assert now.exists and not now.decoded
        assert isinstance(now.error, er.DecodeFailed) and name in str(now.error)
        with pytest.raises(er.DecodeFailed):
            now.value
        assert any(name in str(e) for e in v.errors())
        assert v.compare_and_set(now.mod_revision, {"workers": 3})
        assert eventually(lambda: v.get().decoded)
        assert v.get().value == {"workers": 3}
        with pytest.raises(er.InvalidArgument):
            v.set({1, 2})  # a set is not JSON: refused before any write
        assert client.get(name).value == b'{"workers":3}' or client.get(name).value == b'{"workers": 3}'
        with pytest.raises(er.InvalidArgument):
            v.compare_and_set(-1, {"workers": 4})


def test_group_member_join_list_update_leave(client, name):
    events = []
    with er.GroupMember(client, name, "a", b"pa") as a:
        a.on_change(lambda e: events.append((e.type, e.id, e.payload)))
        assert a.wait_initialized(timeout=5)
        assert eventually(lambda: a.members() == {"a": b"pa"})
        b = er.GroupMember(client, name, "b", b"pb")
        b.join()
        assert eventually(lambda: a.members() == {"a": b"pa", "b": b"pb"})
        b.set_payload(b"pb2")
        assert eventually(lambda: a.members().get("b") == b"pb2")
        taken = er.GroupMember(client, name, "b", b"other")
        with pytest.raises(er.EtcdError) as e:
            taken.join(timeout=5)
        assert e.value.code == "ALREADY_EXISTS"
        taken.close()
        assert b.leave()
        assert eventually(lambda: a.members() == {"a": b"pa"})
        # members() is the view; listeners hear the same change just after,
        # on the client's executor.
        assert eventually(lambda: ("LEFT", "b", b"pb2") in events)
        assert ("UPDATED", "b", b"pb2") in events
        with pytest.raises(er.InvalidArgument):
            er.GroupMember(client, name, "x/y", b"").join()
    assert client.get(f"{name}/a").value is None


def test_group_member_rejoins_after_its_lease_is_revoked(client, name):
    restored = []
    with er.GroupMember(client, name, "m", b"p", session_ttl=2) as m:
        m.on_restored(lambda: restored.append(True))
        lease = m.lease
        assert lease != 0
        client.lease_revoke(lease)
        assert eventually(lambda: restored == [True], timeout=20)
        assert m.is_member and m.lease != lease
        assert client.get(f"{name}/m").value == b"p"


def test_asyncio_shared_value_and_group(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            v = aio.SharedValue(c, f"{name}/value")
            async with v:
                assert await v.wait_initialized(timeout=5)
                rev = await v.set(b"x")
                assert await v.compare_and_set(rev, b"y")
                assert not await v.compare_and_set(rev, b"z")
                assert await v.try_set(b"w")
                assert v.get().value == b"w"
            async with aio.GroupMember(c, f"{name}/group", "me", b"hi") as me:
                assert await me.wait_initialized(timeout=5)
                await me.set_payload(b"there")
                for _ in range(100):
                    if me.members() == {"me": b"there"}:
                        break
                    await asyncio.sleep(0.05)
                assert me.members() == {"me": b"there"}
            assert (await c.get(f"{name}/group/me")).value is None
    asyncio.run(asyncio.wait_for(main(), 30))
