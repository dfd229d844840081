"""Ctrl-C during a blocking wait, and one lock shared by two Python processes
and `etcdctl lock` (the same key layout as etcd's own lock)."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import etcd_recipes as er

HERE = os.path.dirname(os.path.abspath(__file__))


def _python(code, *args):
    env = dict(os.environ)
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_ctrl_c_interrupts_a_blocking_acquire(client, cluster, name):
    holder = er.DistributedMutex(client, name)
    holder.acquire()
    child = _python("""
        import sys, time, etcd_recipes as er
        c = er.Client(sys.argv[1].split(","))
        m = er.DistributedMutex(c, sys.argv[2])
        print("waiting", flush=True)
        try:
            m.acquire()
            print("acquired", flush=True)
        except KeyboardInterrupt:
            # The C++ acquisition was cancelled: the object is usable again.
            print("interrupted", m.is_held, m.try_acquire() is None, flush=True)
    """, cluster.endpoints_csv, name)
    assert child.stdout.readline().strip() == "waiting"
    time.sleep(0.5)
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=10)
    assert time.monotonic() - sent < 2, "Ctrl-C took too long"
    assert out.strip() == "interrupted False True", err
    assert child.returncode == 0, err
    assert holder.release()


def test_ctrl_c_interrupts_an_asyncio_wait(cluster, name):
    child = _python("""
        import asyncio, sys, etcd_recipes.aio as aio
        async def main():
            c = aio.Client(sys.argv[1].split(","))
            q = aio.DistributedQueue(c, sys.argv[2])
            print("waiting", flush=True)
            await q.dequeue()
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """, cluster.endpoints_csv, name)
    assert child.stdout.readline().strip() == "waiting"
    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=10)
    assert out.strip() == "interrupted", err


def test_one_lock_two_python_processes_and_etcdctl(cluster, name, tmp_path):
    etcdctl = cluster.etcdctl  # the one that goes with the cluster's etcd
    if not etcdctl:
        pytest.skip("no etcdctl (set ETCD_RECIPES_ETCDCTL, or install etcd-client)")
    log = tmp_path / "log"
    log.touch()
    worker = """
        import sys, time, etcd_recipes as er
        c = er.Client(sys.argv[1].split(","))
        m = er.DistributedMutex(c, sys.argv[2])
        for _ in range(3):
            with m:
                with open(sys.argv[3], "a") as f: f.write(f"in {sys.argv[4]}\\n")
                time.sleep(0.1)
                with open(sys.argv[3], "a") as f: f.write(f"out {sys.argv[4]}\\n")
    """
    procs = [_python(worker, cluster.endpoints_csv, name, str(log), f"py{i}") for i in range(2)]
    env = dict(os.environ, ETCDCTL_API="3")
    shell = f"echo in etcdctl >> {log}; sleep 0.1; echo out etcdctl >> {log}"
    ctl = [subprocess.Popen([etcdctl, f"--endpoints={cluster.endpoints_csv}", "lock", name, "--", "sh", "-c", shell],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    for p in ctl:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    words = log.read_text().split()
    entries = list(zip(words[0::2], words[1::2]))  # ("in" | "out", who), one per line
    assert len(entries) == 16  # 3 + 3 Python holds and 2 etcdctl holds, each an "in" and an "out"
    for i in range(0, len(entries), 2):
        (a, who_in), (b, who_out) = entries[i], entries[i + 1]
        assert (a, b) == ("in", "out") and who_in == who_out, f"overlapping holds: {entries}"
    assert {who for _, who in entries} == {"py0", "py1", "etcdctl"}
