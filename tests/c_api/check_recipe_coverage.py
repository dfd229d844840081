#!/usr/bin/env python3
"""Every C++ recipe has a C handle.

Lists the recipe classes of the public headers (include/etcd/recipes/*.h:
the classes outside `namespace detail` that derive, directly or through a
base, from RecipeHandle) and checks that include/etcd_recipes.h declares
the handle type of each: `typedef struct etcdr_<name> etcdr_<name>;`.

<name> is the class name without a leading "Distributed", in snake case
(DistributedMutex -> etcdr_mutex, NodeCache -> etcdr_node_cache), unless
HANDLE_OF below says otherwise. A new recipe class without a C handle fails
this check: give it a C binding (docs/c_api.md), or, if an existing handle
covers it, add it to HANDLE_OF with the reason.

  check_recipe_coverage.py [--headers DIR] [--c-header FILE]
  check_recipe_coverage.py --self-test    # the check fails on a recipe without a handle
"""
import argparse
import os
import re
import sys
import tempfile

# Recipe classes whose C handle is not the one their name gives, and why.
HANDLE_OF = {
    # The C read-write lock: one handle, both sides (etcdr_rwlock_acquire(rw, ETCDR_READ | ETCDR_WRITE, ...)).
    "DistributedReadWriteLock": "rwlock",
    # The C counter is the atomic long under its everyday name.
    "DistributedAtomicLong": "counter",
    # The election handle is a LeaderLatch; a selector's "run while leading"
    # is etcdr_election_on_change, an observer's "who leads" is
    # etcdr_election_leader.
    "LeaderLatch": "election",
    "LeaderSelector": "election",
    "LeaderObserver": "election",
    # Service discovery: one handle registers (ServiceRegistry) and queries
    # (ServiceDiscovery); a provider follows its service with a ServiceCache.
    "ServiceDiscovery": "discovery",
    "ServiceRegistry": "discovery",
    "ServiceProvider": "provider",
    "ServiceCache": "provider",
    # Typed variants: C deals in bytes, so the byte recipe's handle serves
    # (the caller encodes and decodes).
    "TypedQueue": "queue",
    "TypedPriorityQueue": "priority_queue",
    "TypedWorkQueue": "work_queue",
    "TypedPathChildrenCache": "path_children_cache",  # PathChildrenCache is TypedPathChildrenCache<std::string>
    "TypedTransientKeyValue": "transient",
    "TransientKeyValue": "transient",
    # Recipes being added on other branches: their C handles land with them.
    "MultiLock": "multi_lock",
    "KeyspaceView": "view",
    "SharedValue": "shared_value",
    "GroupMember": "group_member",
}

ROOT_BASE = "RecipeHandle"

CLASS_RE = re.compile(r"^\s*class\s+(\w+)(?:\s+final)?\s*:\s*([^{]*)\{", re.M)


def snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def default_handle(cls):
    return snake(cls[len("Distributed"):] if cls.startswith("Distributed") else cls)


def base_names(bases):
    out = []
    depth = 0
    cur = ""
    for ch in bases:  # split at top-level commas (templates have their own)
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    names = []
    for b in out:
        b = re.sub(r"<.*", "", b).strip()
        b = re.sub(r"^(public|protected|private|virtual)\s+", "", b).strip()
        b = b.split("::")[-1].strip()
        if b:
            names.append(b)
    return names


def detail_spans(text):
    """Character ranges of `namespace detail { ... }` blocks."""
    spans = []
    for m in re.finditer(r"namespace\s+detail\s*\{", text):
        depth = 1
        i = m.end()
        while i < len(text) and depth:
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
            i += 1
        spans.append((m.start(), i))
    return spans


def recipe_classes(headers_dir):
    bases = {}  # class -> its bases
    public = {}  # class -> header, for classes outside namespace detail
    for fn in sorted(os.listdir(headers_dir)):
        if not fn.endswith(".h"):
            continue
        text = open(os.path.join(headers_dir, fn), encoding="utf-8").read()
        text = re.sub(r"//[^\n]*", "", text)  # comments mention classes too
        spans = detail_spans(text)
        for m in CLASS_RE.finditer(text):
            cls = m.group(1)
            bases[cls] = base_names(m.group(2))
            if not any(a <= m.start() < b for a, b in spans):
                public.setdefault(cls, fn)

    def is_recipe(cls, seen=()):
        if cls in seen:
            return False
        return any(b == ROOT_BASE or is_recipe(b, seen + (cls,)) for b in bases.get(cls, []))

    return {cls: fn for cls, fn in public.items() if is_recipe(cls)}


def c_handles(c_header):
    text = open(c_header, encoding="utf-8").read()
    return set(re.findall(r"typedef\s+struct\s+etcdr_(\w+)\s+etcdr_\1\s*;", text))


def check(headers_dir, c_header, out=sys.stdout):
    recipes = recipe_classes(headers_dir)
    handles = c_handles(c_header)
    if not recipes:
        print(f"no recipe classes found under {headers_dir}", file=out)
        return 1
    missing = 0
    for cls in sorted(recipes):
        handle = HANDLE_OF.get(cls, default_handle(cls))
        if handle in handles:
            print(f"ok: {cls} ({recipes[cls]}) -> etcdr_{handle}", file=out)
        else:
            print(f"MISSING: {cls} ({recipes[cls]}) has no C handle etcdr_{handle} in {c_header}: add its C "
                  f"binding (docs/c_api.md) or map it in {os.path.basename(__file__)}'s HANDLE_OF", file=out)
            missing += 1
    stale = sorted(c for c in HANDLE_OF if c not in recipes)
    for cls in stale:
        print(f"STALE: HANDLE_OF maps {cls}, which is no recipe class of {headers_dir}", file=out)
    print(f"{len(recipes)} recipe classes, {missing} without a C handle, {len(stale)} stale mappings", file=out)
    return 1 if missing or stale else 0


def self_test(headers_dir, c_header):
    """A copy of the headers plus a new recipe class must fail the check,
    and the copy alone must pass it."""
    import io
    import shutil

    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "recipes")
        shutil.copytree(headers_dir, copy)
        quiet = io.StringIO()
        if check(copy, c_header, quiet) != 0:
            print("self-test: the unchanged headers fail the check:\n" + quiet.getvalue())
            return 1
        with open(os.path.join(copy, "frobnicator.h"), "w", encoding="utf-8") as f:
            f.write("namespace etcd::recipes {\n"
                    "namespace detail {\nclass FrobBase : public RecipeHandle {};\n}  // namespace detail\n"
                    "class DistributedFrobnicator : public detail::FrobBase<int> {\n public:\n};\n}\n")
        report = io.StringIO()
        if check(copy, c_header, report) == 0 or "DistributedFrobnicator" not in report.getvalue():
            print("self-test: a recipe without a C handle passed the check:\n" + report.getvalue())
            return 1
        if "FrobBase" in report.getvalue():
            print("self-test: a detail base was taken for a recipe:\n" + report.getvalue())
            return 1
    print("self-test: a recipe class without a C handle fails the check; a detail base is not a recipe")
    return 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    p = argparse.ArgumentParser()
    p.add_argument("--headers", default=os.path.join(root, "include", "etcd", "recipes"))
    p.add_argument("--c-header", default=os.path.join(root, "include", "etcd_recipes.h"))
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    if a.self_test:
        return self_test(a.headers, a.c_header)
    return check(a.headers, a.c_header)


if __name__ == "__main__":
    sys.exit(main())
