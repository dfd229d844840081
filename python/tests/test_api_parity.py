"""The blocking classes, their asyncio twins and the C++ classes offer the same
public methods, with the same keyword arguments, each documented.

No etcd needed: this reads the classes only.
"""

import inspect

import pytest

import etcd_recipes
import etcd_recipes.aio as aio

# Every blocking class that has an asyncio twin of the same name.
TWINS = [
    "Client", "Lease", "Session", "Watch", "Hold", "LeaderTerm", "DistributedMutex", "DistributedReadWriteLock",
    "LockView", "DistributedSemaphore", "MultiLock", "MultiHold", "LeaderLatch", "LeaderSelector", "LeaderObserver",
    "DistributedQueue",
    "DistributedPriorityQueue", "DistributedWorkQueue", "WorkItem", "DistributedAtomicLong", "DistributedBarrier",
    "DistributedBarrierWithCount", "DistributedDoubleBarrier", "TransientKeyValue", "PathChildrenCache",
    "NodeCache", "ServiceRegistry", "ServiceCache", "ServiceProvider", "ServiceDiscovery", "Recipes",
    "KeyspaceView", "EventStream",
    "SharedValue", "GroupMember",
    "PresenceLease",
]

# The C++ classes' public members (include/etcd/recipes/*.h), in Python's
# spelling, that each Python class must offer. Kept here, in one place: a
# method added in C++ is added here and then to both Python classes.
# Left out everywhere on purpose: the C++ lifecycle of RecipeHandle (Python's
# _Recipe has start/close/closed/state/errors/on_state_change/on_error),
# operator overloads, the typed forms (Python takes codec= instead),
# std::stop_token accessors (Python has is_held/lost and on_lost).
CPP_METHODS = {
    "DistributedMutex": {"acquire", "try_acquire", "release", "hold", "is_held", "on_lost", "request_release",
                         "on_release_requested"},
    "MultiLock": {"acquire", "try_acquire", "release", "hold", "is_held", "on_lost", "on_release_requested",
                  "names"},
    "MultiHold": {"names", "holds", "hold", "tokens", "token", "is_held", "on_lost", "release_requested",
                  "on_release_requested", "guarded", "release"},
    "DistributedSemaphore": {"acquire", "try_acquire", "available_permits", "permits", "resize"},
    "DistributedReadWriteLock": {"read_lock", "write_lock", "downgrade"},
    "LeaderLatch": {"await_leadership", "is_leader", "hold", "proclaim", "resign", "participants", "leader",
                    "on_is_leader", "on_not_leader", "on_lost"},
    "LeaderSelector": {"interrupt", "requeue", "set_auto_requeue", "terms", "is_leader", "on_term_end",
                       "participants", "leader", "resign"},
    "LeaderObserver": {"wait_initialized", "current", "on_change", "leader"},
    "DistributedQueue": {"enqueue", "enqueue_all", "dequeue", "try_dequeue", "size", "remove", "on_poison"},
    "DistributedPriorityQueue": {"enqueue", "enqueue_all", "dequeue", "try_dequeue", "size", "remove",
                                 "on_poison"},
    "DistributedWorkQueue": {"enqueue", "enqueue_all", "receive", "try_receive", "size", "dead_letters",
                             "requeue_dead", "purge_dead", "remove"},
    "WorkItem": {"value", "id", "key", "attempt", "ack", "requeue", "lost"},
    "DistributedAtomicLong": {"get", "set", "add", "increment", "decrement", "compare_and_set"},
    "DistributedBarrier": {"set", "remove", "wait", "is_set_by_me"},
    "DistributedBarrierWithCount": {"parties", "wait", "waiting"},
    "DistributedDoubleBarrier": {"parties", "enter", "leave", "entered"},
    "TransientKeyValue": {"key", "value", "set_value", "create", "release", "is_held", "lease", "on_lost",
                          "on_restored"},
    "PathChildrenCache": {"wait_initialized", "initialized", "revision", "snapshot", "snapshot_with_revision",
                          "on_event", "path", "events"},
    "NodeCache": {"wait_initialized", "initialized", "revision", "current", "exists", "on_change", "events"},
    "KeyspaceView": {"key", "wait_initialized", "initialized", "revision", "get", "snapshot", "resync", "resyncs",
                     "on_event", "events"},
    "EventStream": {"next", "close", "buffered", "overflows"},
    "ServiceRegistry": {"register_instance", "update", "unregister", "registered", "on_lost", "on_restored"},
    "ServiceCache": {"wait_initialized", "initialized", "instances"},
    "ServiceProvider": {"wait_initialized", "pick", "get_instance", "all_instances", "candidates", "note_error",
                        "cache"},
    "ServiceDiscovery": {"register_instance", "update", "unregister", "query_names", "query_instances",
                         "query_instance", "provider", "on_lost", "on_restored"},
    "SharedValue": {"key", "get", "set", "compare_and_set", "try_set", "on_change", "wait_initialized",
                    "initialized", "resyncs"},
    "GroupMember": {"group", "id", "member_key", "join", "set_payload", "payload", "leave", "is_member", "lease",
                    "members", "revision", "wait_initialized", "resyncs", "on_change", "on_lost", "on_restored"},
    "PresenceLease": {"start", "close", "lease_id", "ttl", "alive", "closed", "on_event"},
}


_PYTHON_MODULES = ("etcd_recipes", "etcd_recipes.aio", "etcd_recipes.errors", "etcd_recipes.codecs")


def public(cls):
    return {n for n in dir(cls) if not n.startswith("_")}


def own_public_functions(cls):
    """The public methods and properties defined by the package (not object's)."""
    out = {}
    for n in public(cls):
        attr = inspect.getattr_static(cls, n)
        if isinstance(attr, (staticmethod, classmethod)):
            attr = attr.__func__
        if isinstance(attr, property):
            attr = attr.fget
        if inspect.isfunction(attr):
            out[n] = attr
    return out


def keywords(fn):
    return {p.name: p.kind for p in inspect.signature(fn).parameters.values() if p.name != "self"}


@pytest.mark.parametrize("name", TWINS)
def test_the_asyncio_twin_has_the_same_public_methods(name):
    blocking, twin = getattr(etcd_recipes, name), getattr(aio, name)
    assert public(blocking) == public(twin), (
        f"only in etcd_recipes.{name}: {sorted(public(blocking) - public(twin))}; "
        f"only in etcd_recipes.aio.{name}: {sorted(public(twin) - public(blocking))}")


@pytest.mark.parametrize("name", TWINS)
def test_the_asyncio_twin_awaits_what_the_blocking_class_waits_for(name):
    """A blocking method with a timeout waits for etcd: its twin is a coroutine
    (or an async iterator), never the blocking method inherited."""
    blocking, twin = getattr(etcd_recipes, name), getattr(aio, name)
    for method, fn in own_public_functions(blocking).items():
        if "timeout" not in keywords(fn) or method in ("leadership",):
            continue
        other = inspect.getattr_static(twin, method)
        assert other is not inspect.getattr_static(blocking, method), f"aio.{name}.{method} is the blocking one"
        assert inspect.iscoroutinefunction(other) or inspect.isasyncgenfunction(other), \
            f"aio.{name}.{method} does not await"


@pytest.mark.parametrize("name", TWINS)
def test_the_asyncio_twin_takes_the_same_arguments(name):
    blocking, twin = getattr(etcd_recipes, name), getattr(aio, name)
    for method, fn in own_public_functions(blocking).items():
        other = own_public_functions(twin).get(method)
        if other is None:
            continue
        assert keywords(fn) == keywords(other), f"{name}.{method}: {keywords(fn)} != {keywords(other)}"
    assert keywords(blocking.__init__) == keywords(twin.__init__), f"{name}.__init__"
    assert not any(kind is inspect.Parameter.VAR_KEYWORD for kind in keywords(twin.__init__).values()) \
        or any(kind is inspect.Parameter.VAR_KEYWORD for kind in keywords(blocking.__init__).values()), \
        f"aio.{name}.__init__ takes **options"


@pytest.mark.parametrize("name", sorted(CPP_METHODS))
def test_every_cpp_method_is_offered_by_both(name):
    for module in (etcd_recipes, aio):
        missing = CPP_METHODS[name] - public(getattr(module, name))
        assert not missing, f"{module.__name__}.{name} lacks {sorted(missing)}"


@pytest.mark.parametrize("module", [etcd_recipes, aio], ids=["blocking", "asyncio"])
def test_every_public_method_has_a_docstring(module):
    undocumented = []
    for name in module.__all__:
        cls = getattr(module, name)
        # The classes written in Python (the plain data classes of _core carry
        # pybind11's signatures instead).
        if not inspect.isclass(cls) or cls.__module__ not in _PYTHON_MODULES:
            continue
        if not inspect.getdoc(cls):
            undocumented.append(name)
        init = cls.__dict__.get("__init__")
        if init is not None and (inspect.getdoc(init) or "").startswith("Initialize self"):
            undocumented.append(f"{name}.__init__")
        for method, fn in own_public_functions(cls).items():
            if not inspect.getdoc(fn):
                undocumented.append(f"{name}.{method}")
    assert not undocumented, f"no docstring in {module.__name__}: {undocumented}"


def test_waits_take_the_timeout_as_a_keyword():
    for cls in (etcd_recipes.DistributedWorkQueue, aio.DistributedWorkQueue):
        for method in ("receive", "try_receive"):
            kind = keywords(getattr(cls, method))["timeout"]
            assert kind is inspect.Parameter.KEYWORD_ONLY, f"{cls.__module__}.{cls.__name__}.{method}"



@pytest.mark.parametrize("name", ["DistributedMutex", "DistributedSemaphore", "Hold", "MultiLock", "MultiHold",
                                  "WorkItem", "DistributedDoubleBarrier", "TransientKeyValue", "GroupMember"])
def test_an_asyncio_object_refuses_a_blocking_with(name):
    obj = getattr(aio, name).__new__(getattr(aio, name))
    with pytest.raises(TypeError, match="async with"):
        with obj:
            pass


@pytest.mark.parametrize("name", ["DistributedQueue", "DistributedPriorityQueue", "DistributedWorkQueue", "Watch",
                                  "EventStream"])
def test_an_asyncio_object_refuses_a_blocking_for(name):
    obj = getattr(aio, name).__new__(getattr(aio, name))
    with pytest.raises(TypeError, match="async for"):
        for _ in obj:
            pass


FAMILIES = {
    "locks": ["DistributedMutex", "DistributedReadWriteLock", "LockView", "DistributedSemaphore", "Hold", "MultiLock",
              "MultiHold"],
    "election": ["LeaderLatch", "LeaderSelector", "LeaderTerm", "LeaderObserver", "Participant", "LeaderInfo"],
    "queues": ["DistributedQueue", "DistributedPriorityQueue", "DistributedWorkQueue", "WorkItem", "Enqueued",
               "DeadLetter"],
    "barriers": ["DistributedBarrier", "DistributedBarrierWithCount", "DistributedDoubleBarrier"],
    "counter": ["DistributedAtomicLong"],
    "transient": ["TransientKeyValue"],
    "caches": ["PathChildrenCache", "NodeCache", "CachedNode", "ChildEvent", "NodeEvent", "TypedCachedNode",
               "TypedChildEvent", "TypedNodeEvent"],
    "discovery": ["ServiceDiscovery", "ServiceRegistry", "ServiceCache", "ServiceProvider", "ServiceInstance"],
    "view": ["KeyspaceView", "KeyspaceEvent", "EventStream", "watch_stream"],
    "shared_value": ["SharedValue", "VersionedValue", "SharedValueEvent", "TypedVersionedValue",
                     "TypedSharedValueEvent"],
    "group": ["GroupMember", "GroupEvent"],
    "reaper": ["reap", "ReapReport", "ReapedKey"],
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_module_per_recipe_family_has_the_packages_classes(family):
    import importlib
    module = importlib.import_module(f"etcd_recipes.{family}")
    assert sorted(module.__all__) == sorted(FAMILIES[family])
    for name in FAMILIES[family]:
        assert getattr(module, name) is getattr(etcd_recipes, name)


def test_every_recipe_class_is_in_a_family():
    recipes = {n for n in etcd_recipes.__all__ if n.startswith(("Distributed", "Leader", "Service", "Path", "Node"))}
    recipes |= {"TransientKeyValue", "SharedValue", "GroupMember"}
    placed = {n for names in FAMILIES.values() for n in names}
    assert recipes <= placed, sorted(recipes - placed)


def test_reap_takes_the_same_keywords_in_both():
    assert keywords(etcd_recipes.reap) == keywords(aio.reap)
    assert inspect.iscoroutinefunction(aio.reap) and inspect.getdoc(etcd_recipes.reap)


@pytest.mark.parametrize("name", TWINS)
def test_a_recipe_that_takes_a_session_takes_a_session_factory(name):
    for module in (etcd_recipes, aio):
        init = getattr(getattr(module, name), "__init__")
        try:
            params = inspect.signature(init).parameters
        except (TypeError, ValueError):
            continue
        if "session" in params:
            assert "session_factory" in params, f"{module.__name__}.{name}"
            assert params["session_factory"].kind is inspect.Parameter.KEYWORD_ONLY
