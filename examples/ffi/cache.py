#!/usr/bin/env python3
"""A local copy of the keys under a path, kept current by a watch, from
Python through the C API (include/etcd_recipes.h) and ctypes.

    python3 cache.py --library build/src/c_api/libetcd_recipes_c.so 127.0.0.1:2379

It starts a children cache of --path, prints each event the library
delivers (on its own threads: ctypes takes the GIL for the callback), and
lists the cache. With --check it writes a few keys itself and asserts the
events and the listing (the project's ctest runs it that way against a
private etcd). The ctypes declarations it shares with lock.py come from
there.
"""
import argparse
import os
import sys
import threading
import time
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_int,
                    c_int32, c_int64, c_size_t, c_void_p, sizeof, string_at)

from lock import Error, Library, load

ETCDR_CACHE_ADDED, ETCDR_CACHE_UPDATED, ETCDR_CACHE_REMOVED, ETCDR_CACHE_INITIALIZED, ETCDR_CACHE_RESET = range(5)
ETCDR_CACHE_START_POST_INITIALIZED = 2
EVENT_NAMES = {0: "ADDED", 1: "UPDATED", 2: "REMOVED", 3: "INITIALIZED", 4: "RESET"}


class Node(Structure):
    """etcdr_node: filled by the library (its `size` says how much)."""
    _fields_ = [
        ("size", c_size_t),
        ("key", c_void_p), ("key_len", c_size_t),
        ("name", c_void_p), ("name_len", c_size_t),
        ("value", c_void_p), ("value_len", c_size_t),
        ("create_revision", c_int64), ("mod_revision", c_int64),
        ("version", c_int64), ("lease", c_int64),
    ]

    def name_bytes(self):
        return string_at(self.name, self.name_len) if self.name_len else b""

    def value_bytes(self):
        return string_at(self.value, self.value_len) if self.value_len else b""


class CacheEvent(Structure):
    """etcdr_cache_event: valid during the callback only."""
    _fields_ = [
        ("size", c_size_t),
        ("type", c_int32),
        ("previous", POINTER(Node)),
        ("current", POINTER(Node)),
        ("revision", c_int64),
        ("resync", c_int32),
        ("cause", POINTER(Error)),
    ]


class CacheOptions(Structure):
    """etcdr_path_children_cache_options."""
    _fields_ = [("size", c_size_t), ("start_mode", c_int32), ("subtree", c_int32), ("page_size", c_int64)]


# void (*)(void* user, const etcdr_cache_event* event)
CACHE_EVENT_CB = CFUNCTYPE(None, c_void_p, POINTER(CacheEvent))


def load_cache(path):
    lib = load(path)
    P = c_void_p
    sig = {
        "etcdr_put": (c_int32, [P, c_char_p, c_size_t, c_char_p, c_size_t, c_int64, c_int64, P, POINTER(Error)]),
        "etcdr_delete": (c_int32, [P, c_char_p, c_size_t, c_int, c_int64, P, POINTER(Error)]),
        "etcdr_path_children_cache_options_init": (None, [POINTER(CacheOptions), c_size_t]),
        "etcdr_path_children_cache_create": (c_int32, [P, c_char_p, P, POINTER(CacheOptions), POINTER(P),
                                                       POINTER(Error)]),
        "etcdr_path_children_cache_on_event": (c_int32, [P, CACHE_EVENT_CB, P]),
        "etcdr_path_children_cache_start": (c_int32, [P, POINTER(Error)]),
        "etcdr_path_children_cache_wait_initialized": (c_int32, [P, c_int64, POINTER(Error)]),
        "etcdr_path_children_cache_list": (c_int32, [P, POINTER(P), POINTER(Error)]),
        "etcdr_path_children_cache_destroy": (None, [P]),
        "etcdr_node_list_count": (c_size_t, [P]),
        "etcdr_node_list_at": (POINTER(Node), [P, c_size_t]),
        "etcdr_node_list_free": (None, [P]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


class ChildrenCache:
    """The keys under `path`, as (name, value) events and listings."""

    def __init__(self, etcdr, client, path, on_event):
        self.etcdr = etcdr
        options = CacheOptions()
        etcdr.lib.etcdr_path_children_cache_options_init(byref(options), sizeof(options))
        options.start_mode = ETCDR_CACHE_START_POST_INITIALIZED
        self.handle = c_void_p()
        etcdr.call("etcdr_path_children_cache_create", client, path.encode(), None, byref(options),
                   byref(self.handle))

        # Keep the ctypes callback object alive as long as the cache.
        @CACHE_EVENT_CB
        def trampoline(_user, event):
            e = event.contents
            node = e.current or e.previous  # NULL pointers are false
            name = node.contents.name_bytes().decode() if node else None
            value = e.current.contents.value_bytes().decode() if e.current else None
            on_event(EVENT_NAMES.get(e.type, "?"), name, value)

        self._callback = trampoline
        etcdr.lib.etcdr_path_children_cache_on_event(self.handle, self._callback, None)
        etcdr.call("etcdr_path_children_cache_start", self.handle)

    def wait_initialized(self, timeout_ms):
        self.etcdr.call("etcdr_path_children_cache_wait_initialized", self.handle, timeout_ms)

    def items(self):
        lst = c_void_p()
        self.etcdr.call("etcdr_path_children_cache_list", self.handle, byref(lst))
        try:
            lib = self.etcdr.lib
            out = []
            for i in range(lib.etcdr_node_list_count(lst)):
                n = lib.etcdr_node_list_at(lst, i).contents
                out.append((n.name_bytes().decode(), n.value_bytes().decode()))
            return out
        finally:
            self.etcdr.lib.etcdr_node_list_free(lst)

    def close(self):
        # After destroy returns the callback never runs again.
        self.etcdr.lib.etcdr_path_children_cache_destroy(self.handle)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("endpoints", nargs="?", default="127.0.0.1:2379")
    parser.add_argument("--library", default=os.environ.get("ETCDR_LIBRARY", "libetcd_recipes_c.so"))
    parser.add_argument("--path", default=f"/examples/ffi/members-{os.getpid()}")
    parser.add_argument("--check", action="store_true", help="write keys and assert the events")
    args = parser.parse_args()

    etcdr = Library(load_cache(args.library))
    client = etcdr.client(args.endpoints)

    def put(name, value):
        key = f"{args.path}/{name}".encode()
        etcdr.call("etcdr_put", client, key, len(key), value.encode(), len(value), 0, 5000, None)

    def delete(name):
        key = f"{args.path}/{name}".encode()
        etcdr.call("etcdr_delete", client, key, len(key), 0, 5000, None)

    if args.check:
        put("a", "1")  # there before the cache starts: an ADDED of the first read

    events = []
    changed = threading.Condition()

    def on_event(kind, name, value):
        print(f"event: {kind} {name or ''} {value or ''}".rstrip())
        with changed:
            events.append((kind, name, value))
            changed.notify_all()

    def wait_for(n, seconds=10):
        deadline = time.monotonic() + seconds
        with changed:
            while len(events) < n:
                left = deadline - time.monotonic()
                assert left > 0, f"waited for {n} events, got {events}"
                changed.wait(left)

    cache = ChildrenCache(etcdr, client, args.path, on_event)
    cache.wait_initialized(5000)
    print("children:", cache.items())

    if args.check:
        wait_for(2)
        assert events[:2] == [("ADDED", "a", "1"), ("INITIALIZED", None, None)], events
        put("b", "2")
        put("a", "1.1")
        delete("b")
        wait_for(5)
        assert events[2:5] == [("ADDED", "b", "2"), ("UPDATED", "a", "1.1"), ("REMOVED", "b", None)], events
        assert cache.items() == [("a", "1.1")], cache.items()
        print("children:", cache.items())
        delete("a")
        wait_for(6)

    cache.close()
    etcdr.lib.etcdr_client_destroy(client)
    etcdr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
