#!/usr/bin/env python3
"""Checks the files docs/exporter.md offers next to `etcd-recipes exporter`:
the Grafana dashboard (docs/grafana/etcd-recipes-dashboard.json) parses as
JSON and is a dashboard whose panels query the exporter's metrics; the alert
rules (docs/prometheus/alerts.yml) parse as YAML (python3-yaml) and are
Prometheus rule groups covering a growing backlog, dead letters, lock
waiters, an election without a leader and the exporter down. Every metric
name either file uses, and every one the exporter writes, must be one that
tools/etcd-recipes/metrics_text.cpp defines and docs/exporter.md explains.

    check_exporter_files.py ROOT

Exit 0 when all holds, 1 naming each problem, 77 when python3-yaml is
missing (the dashboard is checked all the same).
"""
import json
import pathlib
import re
import sys

NAME = re.compile(r"\betcd_recipes_[a-z_]+\b")
# The recipe metrics the rules must cover, by what they watch.
ALERTS_NEEDED = {
    "a growing backlog": "etcd_recipes_queue_depth",
    "dead letters": "etcd_recipes_workqueue_dead_letters",
    "lock waiters": "etcd_recipes_lock_waiters",
    "an election without a leader": "etcd_recipes_election_leader_info",
    "the exporter down": "etcd_recipes_exporter_up",
}


def defined_metrics(root):
    source = (root / "tools/etcd-recipes/metrics_text.cpp").read_text(encoding="utf-8")
    return set(re.findall(r'\{"(etcd_recipes_[a-z_]+)",', source))


def check_dashboard(path, known, problems):
    try:
        dash = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        problems.append(f"{path}: not JSON: {e}")
        return set()
    for field in ("title", "uid", "panels", "schemaVersion"):
        if field not in dash:
            problems.append(f"{path}: no {field!r}: not a Grafana dashboard")
    used, ids = set(), set()
    for panel in dash.get("panels", []):
        if panel.get("id") in ids:
            problems.append(f"{path}: panel id {panel.get('id')} twice")
        ids.add(panel.get("id"))
        if panel.get("type") == "row":
            continue
        for key in ("title", "type", "gridPos", "targets"):
            if key not in panel:
                problems.append(f"{path}: panel {panel.get('title')!r} has no {key!r}")
        for target in panel.get("targets", []):
            names = set(NAME.findall(target.get("expr", "")))
            if not names:
                problems.append(f"{path}: panel {panel.get('title')!r}: a query of no etcd_recipes_ metric")
            used |= names
    for name in sorted(used - known):
        problems.append(f"{path}: {name} is no metric of the exporter")
    return used


def check_alerts(path, known, problems):
    try:
        import yaml
    except ImportError:
        print(f"{path}: not checked: python3-yaml is not installed")
        return None
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        problems.append(f"{path}: not YAML: {e}")
        return set()
    used = set()
    groups = doc.get("groups") if isinstance(doc, dict) else None
    if not groups:
        problems.append(f"{path}: no rule groups")
        return used
    for group in groups:
        for rule in group.get("rules", []):
            name = rule.get("alert")
            if not name or not isinstance(rule.get("expr"), str):
                problems.append(f"{path}: a rule without alert or expr: {rule}")
                continue
            if "severity" not in rule.get("labels", {}) or "summary" not in rule.get("annotations", {}):
                problems.append(f"{path}: {name}: no severity label or summary annotation")
            if "for" in rule and not re.fullmatch(r"\d+[smhd]", str(rule["for"])):
                problems.append(f"{path}: {name}: for {rule['for']!r} is not a duration")
            if rule["expr"].count("(") != rule["expr"].count(")"):
                problems.append(f"{path}: {name}: unbalanced parentheses")
            used |= set(NAME.findall(rule["expr"]))
    for name in sorted(used - known):
        problems.append(f"{path}: {name} is no metric of the exporter")
    for what, metric in ALERTS_NEEDED.items():
        if metric not in used:
            problems.append(f"{path}: no rule for {what} ({metric})")
    return used


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = pathlib.Path(sys.argv[1])
    problems = []
    known = defined_metrics(root)
    if len(known) < 10:
        problems.append(f"tools/etcd-recipes/metrics_text.cpp: found only {sorted(known)}")
    page = (root / "docs/exporter.md").read_text(encoding="utf-8")
    for name in sorted(known):
        if f"`{name}" not in page:
            problems.append(f"docs/exporter.md: {name} is not explained")
    check_dashboard(root / "docs/grafana/etcd-recipes-dashboard.json", known, problems)
    alerts = check_alerts(root / "docs/prometheus/alerts.yml", known, problems)
    for p in problems:
        print(p)
    if problems:
        return 1
    return 77 if alerts is None else 0


if __name__ == "__main__":
    sys.exit(main())
