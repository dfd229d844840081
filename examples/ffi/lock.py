#!/usr/bin/env python3
"""A distributed lock from Python, through the C API (include/etcd_recipes.h)
and ctypes: no compiler, no binding module.

    python3 lock.py --library build/src/c_api/libetcd_recipes_c.so 127.0.0.1:2379

The library comes from --library, else $ETCDR_LIBRARY, else the system's
search path (libetcd_recipes_c.so). With --check it also asserts what it
prints (the project's ctest runs it that way against a private etcd).
"""
import argparse
import ctypes
import os
import sys
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_int,
                    c_int32, c_int64, c_size_t, c_void_p, sizeof)


class Error(Structure):
    """etcdr_error: filled by every fallible call, freed by etcdr_error_clear."""
    _fields_ = [("code", c_int32), ("reason", c_int32), ("message", c_void_p)]


class ClientOptions(Structure):
    """etcdr_client_options, in the header's order. Fields may only be
    appended in later versions, so this prefix stays valid: the library
    reads no further than `size`."""
    _fields_ = [
        ("size", c_size_t),
        ("endpoints", c_char_p),
        ("user", c_char_p),
        ("password", c_char_p),
        ("ca_file", c_char_p),
        ("cert_file", c_char_p),
        ("key_file", c_char_p),
        ("server_name", c_char_p),
        ("namespace_prefix", c_char_p),
        ("default_timeout_ms", c_int64),
        ("callback_threads", c_int32),
    ]


ETCDR_OK = 0
ETCDR_DEADLINE_EXCEEDED = 4
# void (*)(void* user, const etcdr_error* result, int64_t token)
ACQUIRE_CB = CFUNCTYPE(None, c_void_p, POINTER(Error), c_int64)


class EtcdError(Exception):
    def __init__(self, lib, err):
        self.code = err.code
        self.reason = err.reason
        message = ctypes.string_at(err.message).decode() if err.message else ""
        name = lib.etcdr_code_name(err.code).decode()
        reason = lib.etcdr_reason_name(err.reason).decode()
        super().__init__(f"{name} [{reason}]: {message}")


def load(path):
    lib = ctypes.CDLL(path)
    P = c_void_p  # every handle is an opaque pointer
    sig = {
        "etcdr_version_string": (c_char_p, []),
        "etcdr_code_name": (c_char_p, [c_int32]),
        "etcdr_reason_name": (c_char_p, [c_int32]),
        "etcdr_error_clear": (None, [POINTER(Error)]),
        "etcdr_client_options_init": (None, [POINTER(ClientOptions), c_size_t]),
        "etcdr_client_create": (c_int32, [POINTER(ClientOptions), POINTER(P), POINTER(Error)]),
        "etcdr_client_destroy": (None, [P]),
        "etcdr_mutex_create": (c_int32, [P, c_char_p, P, POINTER(P), POINTER(Error)]),
        "etcdr_mutex_acquire": (c_int32, [P, c_int64, POINTER(c_int64), POINTER(Error)]),
        "etcdr_mutex_try_acquire": (c_int32, [P, POINTER(c_int), POINTER(c_int64), POINTER(Error)]),
        "etcdr_mutex_acquire_async": (c_int32, [P, c_int64, ACQUIRE_CB, P]),
        "etcdr_mutex_release": (c_int32, [P, POINTER(Error)]),
        "etcdr_mutex_destroy": (None, [P]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


class Library:
    """Calls that raise EtcdError instead of returning a code."""

    def __init__(self, lib):
        self.lib = lib
        self.err = Error()  # zeroed, as ETCDR_ERROR_INIT

    def call(self, name, *args):
        code = getattr(self.lib, name)(*args, byref(self.err))
        if code != ETCDR_OK:
            e = EtcdError(self.lib, self.err)
            self.lib.etcdr_error_clear(byref(self.err))
            raise e
        return code

    def client(self, endpoints):
        options = ClientOptions()
        self.lib.etcdr_client_options_init(byref(options), sizeof(options))
        options.endpoints = endpoints.encode()
        handle = c_void_p()
        self.call("etcdr_client_create", byref(options), byref(handle))
        return handle

    def mutex(self, client, name):
        handle = c_void_p()
        self.call("etcdr_mutex_create", client, name.encode(), None, byref(handle))
        return handle

    def acquire(self, mutex, timeout_ms):
        token = c_int64()
        self.call("etcdr_mutex_acquire", mutex, timeout_ms, byref(token))
        return token.value

    def try_acquire(self, mutex):
        acquired, token = c_int(), c_int64()
        self.call("etcdr_mutex_try_acquire", mutex, byref(acquired), byref(token))
        return token.value if acquired.value else None

    def release(self, mutex):
        self.call("etcdr_mutex_release", mutex)

    def close(self):
        self.lib.etcdr_error_clear(byref(self.err))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("endpoints", nargs="?", default="127.0.0.1:2379")
    parser.add_argument("--library", default=os.environ.get("ETCDR_LIBRARY", "libetcd_recipes_c.so"))
    parser.add_argument("--name", default=f"/examples/ffi/lock-{os.getpid()}")
    parser.add_argument("--check", action="store_true", help="assert what is printed")
    args = parser.parse_args()

    etcdr = Library(load(args.library))
    print("etcd-recipes", etcdr.lib.etcdr_version_string().decode())
    client = etcdr.client(args.endpoints)
    mutex = etcdr.mutex(client, args.name)

    token = etcdr.acquire(mutex, 5000)
    print(f"holding {args.name} with fencing token {token}")

    if args.check:
        # A second process's view, from a second client: the lock is taken.
        other_client = etcdr.client(args.endpoints)
        other = etcdr.mutex(other_client, args.name)
        assert etcdr.try_acquire(other) is None, "a second holder while the first holds"
        try:
            etcdr.acquire(other, 200)
            raise AssertionError("acquire with 200 ms should have timed out")
        except EtcdError as e:
            assert e.code == ETCDR_DEADLINE_EXCEEDED, e
            print(f"second client, 200 ms: {e}")

        # Async: the callback runs on a library thread once the lock is free.
        done = threading.Event()
        got = {}

        @ACQUIRE_CB
        def on_acquired(_user, result, second_token):
            got["code"], got["token"] = result.contents.code, second_token
            done.set()

        assert etcdr.lib.etcdr_mutex_acquire_async(other, 10000, on_acquired, None) == ETCDR_OK
        etcdr.release(mutex)
        assert done.wait(10), "the async acquire never completed"
        assert got["code"] == ETCDR_OK and got["token"] > token, got
        print(f"second client got it asynchronously with token {got['token']} > {token}")
        etcdr.release(other)
        etcdr.lib.etcdr_mutex_destroy(other)
        etcdr.lib.etcdr_client_destroy(other_client)
    else:
        etcdr.release(mutex)
    print("released")

    etcdr.lib.etcdr_mutex_destroy(mutex)
    etcdr.lib.etcdr_client_destroy(client)
    etcdr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
