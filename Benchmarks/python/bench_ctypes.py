"""P1-ctypes and P1-raw: the C1 loop (a counter slice, one listener,
ts_store_dispatch in a loop) driven from Python through bare ctypes, standard
library only: the floor under P1 (bench_package.py, the turnstate package).

    python3 bench_ctypes.py LIBTURNSTATE.so CALLBACKS.so [--runs R] [--scale F]

Two variants, each printed as one RESULT line per timed run (see report.py):
  P1-ctypes  the loop in Python; the reducer and listener are the same C
             functions as in bench.c (from the helper library CALLBACKS.so),
             so this is the cost of calling ts_store_dispatch from Python.
  P1-raw     the reducer and listener written in Python as well (bare ctypes
             callbacks taking and returning JSON text).
Nothing here asserts a timing; a failed call or a lost update exits non-zero.
"""

import argparse
import ctypes
import sys
import time
from ctypes import POINTER, c_char_p, c_int32, c_uint64, c_void_p


class TsAction(ctypes.Structure):
    _fields_ = [("type", c_char_p), ("payload", c_char_p), ("json", c_char_p)]


REDUCER_FN = ctypes.CFUNCTYPE(c_void_p, c_char_p, POINTER(TsAction), c_void_p)
LISTENER_FN = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)
ACTION = b'{"type":"counter/add","payload":1}'


def load(path):
    lib = ctypes.CDLL(path)
    lib.ts_store_create.argtypes = [c_char_p, POINTER(c_void_p)]
    lib.ts_store_create.restype = c_int32
    lib.ts_store_destroy.argtypes = [c_void_p]
    lib.ts_store_destroy.restype = None
    lib.ts_store_add_reducer.argtypes = [c_void_p, c_char_p, c_void_p, c_void_p]
    lib.ts_store_add_reducer.restype = c_int32
    lib.ts_store_subscribe.argtypes = [c_void_p, c_char_p, c_void_p, c_void_p, POINTER(c_uint64)]
    lib.ts_store_subscribe.restype = c_int32
    lib.ts_store_dispatch.argtypes = [c_void_p, c_char_p]
    lib.ts_store_dispatch.restype = c_int32
    lib.ts_store_get_state.argtypes = [c_void_p, c_char_p, POINTER(c_void_p)]
    lib.ts_store_get_state.restype = c_int32
    lib.ts_free.argtypes = [c_void_p]
    lib.ts_free.restype = None
    # A reducer's result: memory the store takes over (no need to bind libc).
    lib.ts_strdup.argtypes = [c_char_p]
    lib.ts_strdup.restype = c_void_p
    lib.ts_last_error.argtypes = []
    lib.ts_last_error.restype = c_char_p
    return lib


def check(lib, status, what):
    if status != 0:
        sys.exit("bench_ctypes: %s failed (%d): %s" % (what, status, lib.ts_last_error().decode()))


def read_count(lib, store):
    out = c_void_p()
    check(lib, lib.ts_store_get_state(store, b"/count", ctypes.byref(out)), "ts_store_get_state")
    value = int(ctypes.string_at(out.value))
    lib.ts_free(out)
    return value


def run(lib, store, calls, label, runs, n):
    dispatch = lib.ts_store_dispatch
    for _ in range(n // 10):
        dispatch(store, ACTION)
    for _ in range(runs):
        before, calls_before = read_count(lib, store), calls()
        start = time.perf_counter_ns()
        for _ in range(n):
            status = dispatch(store, ACTION)
            if status:
                check(lib, status, "ts_store_dispatch")
        elapsed = time.perf_counter_ns() - start
        if read_count(lib, store) - before != n or calls() - calls_before != n:
            sys.exit("bench_ctypes: %s lost updates" % label)
        print("RESULT\t%s\t%.3f\tns" % (label, elapsed / n), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("lib")
    parser.add_argument("callbacks")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    lib = load(args.lib)
    n = max(10, int(100000 * args.scale))

    # P1: C callbacks from the helper library.
    helper = ctypes.CDLL(args.callbacks)
    count = c_uint64(0)
    store = c_void_p()
    token = c_uint64()
    check(lib, lib.ts_store_create(None, ctypes.byref(store)), "ts_store_create")
    reducer = ctypes.cast(helper.tsb_counter_reducer, c_void_p)
    listener = ctypes.cast(helper.tsb_counting_listener, c_void_p)
    check(lib, lib.ts_store_add_reducer(store, b"count", reducer, None), "ts_store_add_reducer")
    check(lib, lib.ts_store_subscribe(store, None, listener, ctypes.addressof(count), ctypes.byref(token)),
          "ts_store_subscribe")
    run(lib, store, lambda: count.value, "P1-ctypes", args.runs, n)
    lib.ts_store_destroy(store)

    # P1-raw: the reducer and listener in Python; results from ts_strdup.
    calls = [0]

    def py_reducer(slice_json, action, ctx):
        if slice_json is None:
            return lib.ts_strdup(b"0")
        action = action.contents
        if action.type != b"counter/add":
            return None
        return lib.ts_strdup(b"%d" % (int(slice_json) + (int(action.payload) if action.payload else 1)))

    def py_listener(store, ctx):
        calls[0] += 1

    reducer_fn = REDUCER_FN(py_reducer)
    listener_fn = LISTENER_FN(py_listener)
    store = c_void_p()
    check(lib, lib.ts_store_create(None, ctypes.byref(store)), "ts_store_create")
    check(lib, lib.ts_store_add_reducer(store, b"count", ctypes.cast(reducer_fn, c_void_p), None),
          "ts_store_add_reducer")
    check(lib, lib.ts_store_subscribe(store, None, ctypes.cast(listener_fn, c_void_p), None, ctypes.byref(token)),
          "ts_store_subscribe")
    run(lib, store, lambda: calls[0], "P1-raw", args.runs, max(10, n // 4))
    lib.ts_store_destroy(store)


if __name__ == "__main__":
    main()
