#!/usr/bin/env python3
"""Markdown tables from etcd-recipes-bench JSON files (`--json PATH`).

    python3 tools/bench/tables.py run-3.4.json run-3.6.json ... > tables.md

For each file (one run, one etcd release): a heading naming the release and
the run, a table of every metric (value, unit, the ratio the bench computed
and the metric it is a ratio to), and, when the run had peers, a table that
puts each of our metrics beside its Go (`go_*`) and Kotlin (`kt_*`) twin,
with the same-run ratios of the raw values (`ours / theirs` for rates,
`theirs / ours` for latencies and resources, so that above 1 always means
ours is ahead).
"""

import argparse
import json
import sys


def fmt(v):
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


# Rows follow the order of docs/benchmarks.md: the base rates, then the
# recipes family by family, then the client's own resources and faults.
ORDER = ("put_", "txn_", "range_", "watch_", "lock_", "rwlock_", "semaphore_", "elect_", "queue_", "priority_",
         "workqueue_", "counter_", "barrier_", "cache_", "discovery_", "provider_", "client_", "waiters_",
         "failover_", "sessions_", "capacity_")


def rank(name):
    base = name[3:] if name.startswith(("go_", "kt_")) else name
    for i, prefix in enumerate(ORDER):
        if base.startswith(prefix):
            return (i, base, name)
    return (len(ORDER), base, name)


def lower_is_better(unit):
    return unit in ("ms", "ns", "s", "threads", "MB", "bytes", "events", "wake-ups")


def peer_table(run):
    rows = []
    for name, m in sorted(run.items(), key=lambda kv: rank(kv[0])):
        if name.startswith(("_", "go_", "kt_")) or not isinstance(m, dict) or m.get("value") is None:
            continue
        twins = {}
        for prefix, alias in (("go_", ("go_" + name, "go_" + name.replace("lock_", "mutex_"))), ("kt_", ("kt_" + name,))):
            for t in alias:
                if isinstance(run.get(t), dict) and run[t].get("value") is not None:
                    twins[prefix] = run[t]["value"]
                    break
        if not twins:
            continue
        ours = m["value"]
        cells = [name, m.get("unit", ""), fmt(ours)]
        for prefix in ("go_", "kt_"):
            theirs = twins.get(prefix)
            cells.append(fmt(theirs))
            if theirs is None or theirs == 0 or ours == 0:
                cells.append("—")
            else:
                cells.append(f"{(theirs / ours if lower_is_better(m.get('unit', '')) else ours / theirs):.2f}")
        rows.append(cells)
    # Memory with parked waiters: reported by the Kotlin peer only.
    kt = run.get("kt_waiters_rss_mb")
    if isinstance(kt, dict) and kt.get("value") is not None:
        rows.append(["waiters_rss_mb", kt.get("unit", ""), "—", "—", "—", fmt(kt["value"]), "—"])
    return rows


def render(path, out):
    with open(path) as f:
        run = json.load(f)
    meta = run.get("_meta", {})
    members = meta.get("members", "?")
    out.write(f"### etcd {meta.get('etcd_version', '?')}, {members} member{'s' if members != 1 else ''}\n\n")
    peers = [p for p, on in (("Go client", meta.get("go_peer")), ("Kotlin library", meta.get("kotlin_peer"))) if on]
    out.write(
        f"Run of {meta.get('date', '?')}: {fmt(meta.get('duration_per_metric_s'))} s per metric"
        + (", quick" if meta.get("quick") else "")
        + (f", peers: {', '.join(peers)}" if peers else "")
        + f", heartbeat {meta.get('heartbeat_ms', '?')} ms, election timeout {meta.get('election_ms', '?')} ms.\n\n"
    )
    out.write("| metric | value | unit | ratio | to |\n| --- | ---: | --- | ---: | --- |\n")
    skipped = []
    for name, m in sorted(run.items(), key=lambda kv: rank(kv[0])):
        if name.startswith("_") or not isinstance(m, dict):
            continue
        if m.get("value") is None:
            skipped.append(f"`{name}` ({m.get('skipped') or m.get('error') or 'no value'})")
            continue
        ratio = m.get("ratio")
        out.write(
            f"| `{name}` | {fmt(m['value'])} | {m.get('unit', '')} | "
            f"{fmt(ratio) if ratio is not None else ''} | {m.get('ratio_to', '') if ratio is not None else ''} |\n"
        )
    out.write("\n")
    rows = peer_table(run)
    if rows:
        out.write(
            "Beside the peers (same run, same member; ×: ours over theirs for rates, theirs over ours for latencies and resources; above 1, ours is ahead):\n\n"
            "| metric | unit | etcd-recipes | Go | × Go | Kotlin | × Kotlin |\n"
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |\n"
        )
        for r in rows:
            out.write("| `" + r[0] + "` | " + " | ".join(r[1:]) + " |\n")
        out.write("\n")
    if skipped:
        out.write("Not measured in this run: " + "; ".join(skipped) + ".\n\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="JSON files written by etcd-recipes-bench --json")
    args = ap.parse_args()
    for path in args.runs:
        render(path, sys.stdout)


if __name__ == "__main__":
    main()
