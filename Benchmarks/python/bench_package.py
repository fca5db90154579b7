"""P1: the C1 loop (a counter slice, one listener called after every
dispatch, dispatch in a loop) driven through the Python package `turnstate`
(bindings/python), with the reducer and the listener written in Python:

    store.reducer("count", lambda state, action: state + action.payload, initial=0)
    store.subscribe(listener)
    for _ in range(n): store.dispatch("counter/add", 1)

    python3 bench_package.py [--runs R] [--scale F]

Imports the installed package (report.py runs it from build/bench-venv, where
it installs this tree's package; bindings/python/src only when it holds a
compiled extension), and loads the library the package finds (report.py sets
TURNSTATE_LIB to build/lib). Prints one "RESULT P1 <ns per dispatch> ns" line per timed run
(see report.py). Nothing here asserts a timing; a lost update exits non-zero.
"""

import argparse
import os
import sys
import time

try:
    import turnstate
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python",
                                    "src"))
    import turnstate


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    n = max(10, int(50000 * args.scale))

    calls = [0]

    def listener(store):
        calls[0] += 1

    with turnstate.Store() as store:
        @store.reducer("count", initial=0)
        def count(state, action):
            if action.type == "counter/add":
                return state + action.payload
            return None

        store.subscribe(listener)
        dispatch = store.dispatch
        for _ in range(n // 10):
            dispatch("counter/add", 1)
        for _ in range(args.runs):
            before, calls_before = store.get("/count"), calls[0]
            start = time.perf_counter_ns()
            for _ in range(n):
                dispatch("counter/add", 1)
            elapsed = time.perf_counter_ns() - start
            if store.get("/count") - before != n or calls[0] - calls_before != n:
                sys.exit("bench_package: lost updates")
            print("RESULT\tP1\t%.3f\tns" % (elapsed / n), flush=True)
    print("INFO\tP1: the turnstate package (%s), library %s" % (turnstate.__file__, turnstate.library_path()))


if __name__ == "__main__":
    main()
