#!/usr/bin/env python3
"""Every peer side by side: one private etcd member, one run, one table.

    PYTHONPATH=build/python python3 python/bench/peers.py \\
        --cpp-bench build-release/tools/bench/etcd-recipes-bench \\
        --cli build-release/tools/etcd-recipes/etcd-recipes [--duration 3] [--json out.json]

For each operation (put, lock cycle, election cycle, queue cycle) it
measures, against the same member and in the same run:
  * etcd-recipes from C++ (etcd-recipes-bench --endpoints, its Go peer too:
    etcd's clientv3 with concurrency.Mutex / Election and recipe.Queue);
  * etcd-recipes from Python, and python-etcd3 (Debian's python3-etcd3);
  * the command-line tools, one process per operation: `etcd-recipes` and
    `etcdctl` (what a shell script pays: process start, connect, the RPCs).
Every rate is also given as a ratio to the C++ put_seq of the run, the one
base that drifts with the machine as every other number does.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import etcd_recipes as er
from bench import rate  # bench.py, beside this file
from etcd_recipes.testing import EtcdCluster

# The C++ bench's metrics: ours, then the Go peer's, for each row.
CPP_METRICS = {
    "put": ("put_seq", "go_put_seq"),
    "lock cycle": ("lock_cycle_seq", "go_mutex_cycle_seq"),
    "election cycle": ("elect_cycle_seq", "go_elect_cycle_seq"),
    "queue cycle": ("queue_cycle_seq", "go_queue_cycle_seq"),
}


def cpp_and_go(bench, go_src, endpoint, duration):
    metrics = [m for pair in CPP_METRICS.values() for m in pair]
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [bench, "--endpoints", endpoint, "--go-peer", "--only", ",".join(metrics),
               "--duration-per-metric", str(duration), "--json", out.name]
        if go_src:
            cmd += ["--go-peer-src", go_src]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        data = json.load(open(out.name))
    return {m: float(data[m]["value"]) for m in metrics if isinstance(data.get(m), dict) and "value" in data[m]}


def python_rates(endpoint, duration):
    results = {}
    client = er.Client([endpoint])
    results["put"] = rate(lambda: client.put("/peers/py/put", "v"), duration)
    mutex = er.DistributedMutex(client, "/peers/py/lock")

    def lock_cycle():
        mutex.acquire()
        mutex.release()

    results["lock cycle"] = rate(lock_cycle, duration)
    selector = er.LeaderSelector(client, "/peers/py/elect", value="me")

    def elect_cycle():
        with selector.leadership():
            pass

    results["election cycle"] = rate(elect_cycle, duration)
    queue = er.DistributedQueue(client, "/peers/py/queue")

    def queue_cycle():
        queue.enqueue("item")
        queue.dequeue()

    results["queue cycle"] = rate(queue_cycle, duration)
    for r in (mutex, selector, queue):
        r.close()
    client.close()
    return results


def etcd3_rates(endpoint, duration):
    try:
        import etcd3  # Debian's python3-etcd3
    except ImportError:
        return {}
    host, port = endpoint.rsplit(":", 1)
    e3 = etcd3.client(host=host, port=int(port))
    results = {"put": rate(lambda: e3.put("/peers/etcd3/put", "v"), duration)}
    lock = e3.lock("peers-etcd3-lock", ttl=10)

    def lock_cycle():
        lock.acquire()
        lock.release()

    results["lock cycle"] = rate(lock_cycle, duration)
    e3.close()
    return results


def cli_rates(cli, endpoint, duration):
    """One process per operation, as a shell script runs them."""
    env = dict(os.environ, ETCDCTL_API="3")
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    ours = {
        "put": [cli, "--endpoints", endpoint, "kv", "put", "/peers/cli/put", "v"],
        "lock cycle": [cli, "--endpoints", endpoint, "lock", "/peers/cli/lock", "--", "true"],
        "election cycle": [cli, "--endpoints", endpoint, "elect", "--value", "me", "/peers/cli/elect", "--", "true"],
    }
    etcdctl = shutil.which("etcdctl")
    theirs = {} if etcdctl is None else {
        "put": [etcdctl, "--endpoints", endpoint, "put", "/peers/ctl/put", "v"],
        "lock cycle": [etcdctl, "--endpoints", endpoint, "lock", "/peers/ctl/lock", "true"],
    }
    results = {"cli": {}, "etcdctl": {}}
    for label, commands in (("cli", ours), ("etcdctl", theirs)):
        for op, cmd in commands.items():
            results[label][op] = rate(lambda c=cmd: subprocess.run(c, **quiet), duration)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per metric")
    ap.add_argument("--cpp-bench", required=True, help="etcd-recipes-bench (a Release build)")
    ap.add_argument("--go-peer-src", help="tools/bench/go-peer (found next to the bench by default)")
    ap.add_argument("--cli", help="the etcd-recipes CLI, for the one-process-per-operation column")
    ap.add_argument("--json", help="write the numbers here too")
    args = ap.parse_args()

    with EtcdCluster.start(heartbeat=0.1, election_timeout=1.0) as cluster:
        endpoint = cluster.endpoint(0)
        cpp = cpp_and_go(args.cpp_bench, args.go_peer_src, endpoint, args.duration)
        py = python_rates(endpoint, args.duration)
        e3 = etcd3_rates(endpoint, args.duration)
        cli = cli_rates(args.cli, endpoint, args.duration) if args.cli else {"cli": {}, "etcdctl": {}}

    base = cpp.get("put_seq")
    columns = [
        ("etcd-recipes C++", {op: cpp.get(m[0]) for op, m in CPP_METRICS.items()}),
        ("Go clientv3 / concurrency / recipe", {op: cpp.get(m[1]) for op, m in CPP_METRICS.items()}),
        ("etcd-recipes Python", py),
        ("python-etcd3", e3),
        ("etcd-recipes CLI (process per op)", cli["cli"]),
        ("etcdctl (process per op)", cli["etcdctl"]),
    ]

    def cell(value):
        if value is None:
            return "—"
        return f"{value:.0f} ({value / base:.2f})" if base else f"{value:.0f}"

    print(f"base: etcd-recipes C++ put_seq = {base:.0f}/s on {endpoint}; cells: ops/s (ratio to that base)")
    print("| operation | " + " | ".join(name for name, _ in columns) + " |")
    print("| --- |" + " ---: |" * len(columns))
    for op in CPP_METRICS:
        print(f"| {op} | " + " | ".join(cell(values.get(op)) for _, values in columns) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({name: values for name, values in columns} | {"base_put_seq": base}, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
