"""session_factory=: a recipe's holds live on the sessions the factory gives,
the factory runs with no lock of the recipe held (a Python factory needs the
GIL), and a factory that raises fails the operation with its message."""
import asyncio
import os
import subprocess
import sys
import textwrap

import pytest

import etcd_recipes as er
import etcd_recipes.aio as aio


def _key_leases(client, name):
    return [kv.lease for kv in client.get(name.encode(), prefix=True).kvs]


def test_a_mutex_holds_its_key_on_the_factory_session(client, name):
    made = []

    def factory():
        s = er.Session(client, ttl=5)
        made.append(s)
        return s

    m = er.DistributedMutex(client, name, session_factory=factory)
    with m.acquire(timeout=10):
        assert len(made) == 1
        leases = _key_leases(client, name)
        assert leases == [made[0].lease_id] and leases[0] != 0
    # The session stays the recipe's: the next acquisition does not make another.
    m.acquire(timeout=10).release()
    assert len(made) == 1
    m.close()


def test_a_lost_factory_session_is_replaced_by_the_factory(client, name):
    made = []

    def factory():
        made.append(er.Session(client, ttl=5))
        return made[-1]

    m = er.DistributedMutex(client, name, session_factory=factory)
    m.acquire(timeout=10).release()
    made[0].close(timeout=10)  # the lease is revoked: the session is lost
    with m.acquire(timeout=10):
        assert len(made) == 2
        assert _key_leases(client, name) == [made[1].lease_id]
    m.close()


def test_a_factory_that_raises_fails_the_operation_with_its_message(client, name):
    def factory():
        raise RuntimeError("no lease for this tenant")

    m = er.DistributedMutex(client, name, session_factory=factory)
    with pytest.raises(er.EtcdError, match="session factory failed.*no lease for this tenant"):
        m.acquire(timeout=10)
    assert _key_leases(client, name) == []  # nothing written
    m.close()


def test_a_factory_returning_something_else_is_a_clear_error(client, name):
    m = er.DistributedMutex(client, name, session_factory=lambda: 42)
    with pytest.raises(er.EtcdError, match="not a Session"):
        m.acquire(timeout=10)
    assert _key_leases(client, name) == []
    m.close()


def test_a_factory_that_is_not_callable_is_refused_at_once(client, name):
    with pytest.raises(er.InvalidArgument, match="session_factory must be callable"):
        er.DistributedMutex(client, name, session_factory="not a factory")


def test_the_factory_runs_with_no_lock_of_the_recipe_held(cluster, name):
    # The factory sleeps (the GIL released) while the main thread keeps
    # calling errors() (which takes the recipe's lock, the GIL held): were
    # the factory called under the recipe's lock, neither could go on. In a
    # child process, so that a deadlock fails the test instead of hanging it.
    code = """
        import sys, threading, time, etcd_recipes as er
        c = er.Client(sys.argv[1].split(","))
        made = []
        def factory():
            time.sleep(0.5)
            made.append(er.Session(c, ttl=5))
            return made[-1]
        m = er.DistributedMutex(c, sys.argv[2], session_factory=factory)
        done = threading.Event()
        def take():
            m.acquire(timeout=10)
            done.set()
        threading.Thread(target=take, daemon=True).start()
        deadline = time.monotonic() + 10
        while not done.is_set() and time.monotonic() < deadline:
            m.errors()
        print("acquired" if done.is_set() else "not acquired", len(made), flush=True)
        m.release()
        m.close()
        c.close()
    """
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), cluster.endpoints_csv, name],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail("the recipe and its session factory deadlocked")
    assert child.returncode == 0, err
    assert out.split() == ["acquired", "1"]


def test_asyncio_recipes_take_a_session_factory(cluster, name):
    async def main():
        async with aio.Client(cluster.endpoints) as c:
            made = []

            def factory():
                made.append(aio.Session(c, ttl=5))
                return made[-1]

            m = aio.DistributedMutex(c, name, session_factory=factory)
            async with m:
                leases = [kv.lease for kv in (await c.get(name, prefix=True)).kvs]
                assert leases == [made[0].lease_id]
            bad = aio.DistributedMutex(c, f"{name}/bad", session_factory=lambda: 1 / 0)
            with pytest.raises(er.EtcdError, match="session factory failed.*division by zero"):
                await bad.acquire(timeout=10)
            m.close()
            bad.close()

    asyncio.run(asyncio.wait_for(main(), 60))
