#!/usr/bin/env python3
"""Python benchmark of etcd_recipes, on a private etcd started with etcd_recipes.testing.

    PYTHONPATH=build/python python3 python/bench/bench.py [--duration 5] [--waiters 10000]
        [--cpp-bench build-release/tools/bench/etcd-recipes-bench]

Prints, for the same member in the same run:
  py_put_seq               client.put, one at a time (the base rate)
  py_lock_cycle_seq        DistributedMutex acquire + release, one at a time
  py_etcd3_lock_cycle_seq  python-etcd3's Lock acquire + release (Debian python3-etcd3)
  py_queue_cycle_seq       DistributedQueue enqueue + dequeue
  lock_cycle_seq (C++)     with --cpp-bench: the C++ bench's metric against the same member
  asyncio_waiters_threads  threads of this process with N asyncio acquisitions parked
and the ratios of ours to python-etcd3's and to the C++ bench's.
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import etcd_recipes as er
import etcd_recipes.aio as aio
from etcd_recipes.testing import EtcdCluster


def rate(fn, duration):
    fn()  # warm up: sessions, connections
    n = 0
    start = time.perf_counter()
    end = start + duration
    while time.perf_counter() < end:
        fn()
        n += 1
    return n / (time.perf_counter() - start)


def threads_now():
    return len(os.listdir("/proc/self/task"))


async def park_waiters(endpoints, total, names=200, batch=1000):
    """`total` DistributedMutex acquisitions parked behind `names` held locks,
    as the C++ bench does it: waiter j of every name shares session j."""
    client = aio.Client(endpoints)
    per_name = total // names
    sessions = [er.Session(client) for _ in range(per_name + 1)]
    for s in sessions:
        s.start()
    holders = [aio.DistributedMutex(client, f"/bench/park/{n}", session=sessions[0]) for n in range(names)]
    await asyncio.gather(*(h.acquire() for h in holders))
    watches_before = client.stats()["watches_open"]
    waiters, tasks = [], []
    started = time.perf_counter()
    for j in range(1, per_name + 1):
        for n in range(names):
            w = aio.DistributedMutex(client, f"/bench/park/{n}", session=sessions[j])
            waiters.append(w)
            tasks.append(asyncio.ensure_future(w.acquire()))
        if len(tasks) % batch == 0 or j == per_name:
            while client.stats()["watches_open"] < watches_before + len(tasks):
                if any(t.done() for t in tasks):
                    raise RuntimeError("a parked waiter finished early")
                await asyncio.sleep(0.01)
    parked_s = time.perf_counter() - started
    threads = threads_now()
    for w in waiters:
        w.close()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(r, er.Closed) for r in results), "waiters must end with Closed"
    for h in holders:
        h.close()
    for s in sessions:
        s.close()
    client.close()
    return threads, len(tasks), parked_s


def cpp_lock_cycle(bench, endpoint, duration):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([bench, "--endpoints", endpoint, "--only", "lock_cycle_seq", "--duration-per-metric",
                        str(duration), "--json", out.name], check=True, stdout=subprocess.DEVNULL)
        data = json.load(open(out.name))
    value = data.get("lock_cycle_seq", {}).get("value")
    if value is None:
        raise RuntimeError(f"lock_cycle_seq not in the C++ bench's JSON: {str(data)[:300]}")
    return float(value)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per metric (the lock comparisons: split into --rounds windows)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating windows for the lock comparisons")
    ap.add_argument("--waiters", type=int, default=10000, help="parked asyncio waiters (0: skip)")
    ap.add_argument("--cpp-bench", help="path of etcd-recipes-bench (Release) to measure lock_cycle_seq too")
    args = ap.parse_args()

    with EtcdCluster.start(heartbeat=0.1, election_timeout=1.0) as cluster:
        endpoint = cluster.endpoint(0)
        results = {}
        client = er.Client([endpoint])
        results["py_put_seq"] = rate(lambda: client.put("/bench/put", "v"), args.duration)

        mutex = er.DistributedMutex(client, "/bench/lock")

        def lock_cycle():
            mutex.acquire()
            mutex.release()

        # The machine's load moves between windows: the lock rates are
        # measured in alternating windows, and each ratio is the median of the
        # per-round ratios (paired, as the C++ bench pairs with put_seq).
        try:
            import etcd3  # Debian's python3-etcd3
        except ImportError:
            etcd3 = None
        etcd3_cycle = None
        if etcd3 is not None:
            host, port = endpoint.rsplit(":", 1)
            e3 = etcd3.client(host=host, port=int(port))
            e3_lock = e3.lock("bench-etcd3-lock", ttl=10)

            def etcd3_cycle():
                e3_lock.acquire()
                e3_lock.release()

        window = args.duration / args.rounds
        rounds = {"py_lock_cycle_seq": [], "py_etcd3_lock_cycle_seq": [], "lock_cycle_seq (C++)": []}
        for _ in range(args.rounds):
            rounds["py_lock_cycle_seq"].append(rate(lock_cycle, window))
            if etcd3_cycle is not None:
                rounds["py_etcd3_lock_cycle_seq"].append(rate(etcd3_cycle, window))
            if args.cpp_bench:
                rounds["lock_cycle_seq (C++)"].append(cpp_lock_cycle(args.cpp_bench, endpoint, window))
        for k, v in rounds.items():
            if v:
                results[k] = sum(v) / len(v)
        if etcd3_cycle is not None:
            e3.close()

        queue = er.DistributedQueue(client, "/bench/queue")

        def queue_cycle():
            queue.enqueue("item")
            queue.dequeue()

        results["py_queue_cycle_seq"] = rate(queue_cycle, args.duration)
        mutex.close()
        queue.close()
        client.close()

        if args.waiters:
            threads, parked, parked_s = asyncio.run(park_waiters([endpoint], args.waiters))
            results["asyncio_waiters_threads"] = threads
            print(f"# {parked} asyncio waiters parked in {parked_s:.1f} s", file=sys.stderr)

    for k, v in results.items():
        print(f"{k:28s} {v:10.1f}")
    lock = results["py_lock_cycle_seq"]
    print(f"{'py_lock_cycle_seq / py_put_seq':40s} {lock / results['py_put_seq']:.2f}")

    def paired(other):
        return statistics.median(a / b for a, b in zip(rounds["py_lock_cycle_seq"], rounds[other]))

    if rounds["py_etcd3_lock_cycle_seq"]:
        print(f"{'py_lock_cycle_seq / python-etcd3 Lock':40s} {paired('py_etcd3_lock_cycle_seq'):.2f}"
              f"  (median of {args.rounds} paired rounds; bar: >= 1.5)")
    if rounds["lock_cycle_seq (C++)"]:
        print(f"{'py_lock_cycle_seq / C++ lock_cycle_seq':40s} {paired('lock_cycle_seq (C++)'):.2f}"
              f"  (median of {args.rounds} paired rounds; bar: >= 0.9)")
    if "asyncio_waiters_threads" in results:
        print(f"{'threads with parked asyncio waiters':40s} {results['asyncio_waiters_threads']}  (bar: <= 16)")


if __name__ == "__main__":
    main()
