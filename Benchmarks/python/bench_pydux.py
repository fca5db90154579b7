"""PY rows: the turnstate package against pydux 0.2.2 (the pure-Python Redux
on PyPI), the same reducer code, in interleaved rounds of one process.

    build/bench-venv/bin/python bench_pydux.py [--runs R] [--scale F] [--only REGEX]
    build/bench-venv/bin/python bench_pydux.py --count N --impl ours|pydux --only NAME

The second form (for callgrind, see report.py) sets up one store of one
workload, warms it up, and dispatches N actions, untimed.

Runs in the bench's own venv (report.py makes build/bench-venv: pydux==0.2.2
from PyPI and this repository's package, bundling build/lib). Workloads:

  k1              a counter slice, 1 listener
  k100            the same, 100 listeners
  big-other       a 10,000-item todo list in another slice; the action
                  changes only the counter
  big-edit        toggle one of the 10,000 todos; the reducer returns a new
                  list (its items shared with the old one but the toggled one)
  big-edit-patch  the same toggle, our reducer answering with a
                  turnstate.Patch (pydux has none: measured against big-edit)

Both stores run the same reducer functions (below): they read the action as
action["type"] and action["payload"], which a pydux action (a dict) and a
turnstate.Action both answer. pydux combines them with its
combine_reducers, turnstate adds one reducer per key. Each implementation
dispatches the way its users do: pydux a dict, turnstate
dispatch(type, payload). A round times N dispatches of each in turn (the
order alternating); each round prints one RESULT line per implementation
and workload ("PY-k1" ours, "PY-k1-pydux" theirs), in ns per dispatch (see
report.py). After the rounds both states must agree (else exit 1). Nothing
here asserts a timing.
"""

import argparse
import gc
import os
import re
import sys
import time

import pydux
import turnstate

TODOS = 10000


# ---- The reducers, shared by both ------------------------------------------------


def count(state, action):
    if state is None:
        return 0
    if action["type"] == "counter/add":
        return state + action["payload"]
    return state


def todos(state, action):
    if state is None:
        return []
    if action["type"] == "todos/toggle":
        index = action["payload"]
        new = list(state)
        item = new[index]
        new[index] = {**item, "done": not item["done"]}
        return new
    return state


def todos_patch(state, action):
    """big-edit-patch, ours only: the toggle as a JSON Patch."""
    if state is None:
        return []
    if action["type"] == "todos/toggle":
        index = action["payload"]
        return turnstate.Patch([{"op": "replace", "path": "/%d/done" % index, "value": not state[index]["done"]}])
    return state


def initial_todos():
    return [{"id": i, "title": "todo number %d" % i, "done": False} for i in range(TODOS)]


# ---- The stores ----------------------------------------------------------------------


class Pydux:
    def __init__(self, reducers, initial, listeners):
        self.store = pydux.create_store(pydux.combine_reducers(reducers), initial)
        self.calls = [0]
        calls = self.calls

        def listener():
            calls[0] += 1
        for _ in range(listeners):
            self.store.subscribe(listener)
        self.dispatch = self.store.dispatch

    def run(self, actions):
        dispatch = self.dispatch
        for action in actions:
            dispatch(action)

    def state(self):
        return self.store.get_state()


class Turnstate:
    def __init__(self, reducers, initial, listeners):
        self.store = turnstate.Store(initial)
        for key, fn in reducers.items():
            self.store.reducer(key, fn)
        self.calls = [0]
        calls = self.calls

        def listener(store):
            calls[0] += 1
        for _ in range(listeners):
            self.store.subscribe(listener)
        self.dispatch = self.store.dispatch

    def run(self, actions):
        dispatch = self.dispatch
        for action in actions:
            dispatch(action["type"], action["payload"])

    def state(self):
        return self.store.state


def workloads(scale):
    """name: (ours reducers, theirs reducers, initial, listeners, actions, label)"""
    def n(base):
        return max(10, int(base * scale))
    add = [{"type": "counter/add", "payload": 1}]
    toggles = [{"type": "todos/toggle", "payload": (i * 7919) % TODOS} for i in range(64)]
    return {
        "k1": ({"count": count}, {"count": count}, {"count": 0}, 1, add * n(20000)),
        "k100": ({"count": count}, {"count": count}, {"count": 0}, 100, add * n(2000)),
        "big-other": ({"count": count, "todos": todos}, {"count": count, "todos": todos}, "big", 1,
                      add * n(20000)),
        "big-edit": ({"count": count, "todos": todos}, {"count": count, "todos": todos}, "big", 1,
                     (toggles * (n(1000) // 64 + 1))[:n(1000)]),
        "big-edit-patch": ({"count": count, "todos": todos_patch}, None, "big", 1,
                           (toggles * (n(2000) // 64 + 1))[:n(2000)]),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", help="regex of workload names")
    parser.add_argument("--count", type=int, help="dispatch this many actions once, untimed (with --impl)")
    parser.add_argument("--impl", choices=("ours", "pydux"))
    args = parser.parse_args()
    if args.count is not None:
        name = args.only
        ours, theirs, initial, listeners, actions = workloads(1.0)[name]
        state = {"count": 0, "todos": initial_todos()} if initial == "big" else dict(initial)
        impl = Turnstate(ours, state, listeners) if args.impl == "ours" else Pydux(theirs, state, listeners)
        impl.run(actions[:64])
        impl.run((actions * (args.count // len(actions) + 1))[:args.count])
        return
    chosen = {name: spec for name, spec in workloads(args.scale).items()
              if not args.only or re.search(args.only, name)}
    failed = False
    for name, (ours, theirs, initial, listeners, actions) in chosen.items():
        make_initial = (lambda: {"count": 0, "todos": initial_todos()}) if initial == "big" else (lambda: dict(initial))
        impls = [("PY-" + name, Turnstate(ours, make_initial(), listeners))]
        if theirs is not None:
            impls.append(("PY-" + name + "-pydux", Pydux(theirs, make_initial(), listeners)))
        for _, impl in impls:  # warm up
            impl.run(actions[:max(1, len(actions) // 10)])
        gc.collect()
        for round_ in range(args.runs):
            order = impls if round_ % 2 == 0 else impls[::-1]
            for label, impl in order:
                gc.disable()
                start = time.perf_counter_ns()
                impl.run(actions)
                elapsed = time.perf_counter_ns() - start
                gc.enable()
                print("RESULT\t%s\t%.3f\tns" % (label, elapsed / len(actions)), flush=True)
        # Both ran the same actions the same number of times.
        states = [impl.state() for _, impl in impls]
        calls = [impl.calls[0] for _, impl in impls]
        if any(state != states[0] for state in states) or any(c != calls[0] for c in calls):
            print("bench_pydux: %s: the states or listener calls differ: %r" % (name, calls), file=sys.stderr)
            failed = True
        for label, impl in impls:
            if isinstance(impl, Turnstate):
                stats = {key: ctx.stats() for key, ctx in zip(ours, impl.store._keepalive)}
                print("INFO\t%s: reducer counters %s" % (label, stats))
                impl.store.close()
    print("INFO\tPY: turnstate %s (%s, library %s), pydux %s, Python %s" % (
        turnstate.__version__, os.path.dirname(turnstate.__file__), turnstate.library_path(),
        getattr(pydux, "__version__", "0.2.2"), sys.version.split()[0]))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
