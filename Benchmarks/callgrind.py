#!/usr/bin/env python3
"""Instructions per operation (callgrind) of the workloads of `make bench`.

    python3 Benchmarks/callgrind.py [--lib DIR] [--scale F] [workload...]
    python3 Benchmarks/callgrind.py --swift [W1 W1-floor ...]
    python3 Benchmarks/callgrind.py --bindings [RP-10 XU ...]

Swift workloads (W1.., their floors W1-floor, W1-floor-api..): runs
.build-bench/release/turnstate-profile under callgrind twice, with N and
6N operations; the difference over 5N is the cost of one operation (set-up
and start-up cancel out).

Runs build/bench/bench once per workload under callgrind with collection off
at start; bench.c turns it on around its measured loops only (the
CALLGRIND_TOGGLE_COLLECT macros) and prints "COUNTED id ops" after each, so
the figure is the loop's instructions over its operations: no set-up, no
warm-up. --lib runs against another build of the library (LD_LIBRARY_PATH),
to compare before and after a change. Prints "id<TAB>instructions per op".
Instruction counts do not depend on what else the machine is doing.

--bindings [RP-10 XP-10 ...]: the rows of bench.c's CP, CA and CU run from
Rust (build/rust/release/examples/bench_patch: RP, RA, RU) and from C++
(build/bench/bench_cpp: XP, XA, XU), one process per row (--only ROW), with
collection only inside their timed loop, the function counted_loop
(--toggle-collect); each prints "COUNTED id ops" after it.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "build", "bench")

DEFAULT = ["c1", "c2", "c3", "c4", "c5", "c6", "cpatch", "cappend", "cunhandled"]


def instructions(path):
    """The Ir total of a callgrind output file."""
    with open(path) as handle:
        for line in handle:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError("no totals in %s" % path)


def measure(workload, scale, lib=None, extra=()):
    """{id: instructions per operation} of one bench workload."""
    env = dict(os.environ)
    if lib:
        env["LD_LIBRARY_PATH"] = lib
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        command = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--callgrind-out-file=" + out,
                   os.path.join(OUT, "bench"), "--runs", "1", "--scale", str(scale),
                   "--plugin-dir", os.path.join(OUT, "plugins"), *extra, workload]
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stderr[-3000:])
            raise RuntimeError("%s under callgrind failed" % workload)
        ops = {}
        for line in done.stdout.splitlines():
            fields = line.split("\t")
            if fields[0] == "COUNTED" and len(fields) == 3:
                ops[fields[1]] = ops.get(fields[1], 0) + int(fields[2])
        if not ops:
            raise RuntimeError("%s counted no operations" % workload)
        # bench.c dumps the counters after each measured loop, named by
        # its id (cg.out.1, cg.out.2, ...: "desc: Trigger: Client Request: C1").
        counts = {}
        for name in os.listdir(tmp):
            if not name.startswith("cg.out."):
                continue
            path = os.path.join(tmp, name)
            with open(path) as handle:
                trigger = next((line.split("Client Request:", 1)[1].strip() for line in handle
                                if line.startswith("desc: Trigger: Client Request:")), None)
            if trigger in ops:
                counts[trigger] = counts.get(trigger, 0) + instructions(path)
        return {key: counts.get(key, 0) / ops[key] for key in ops}


PROFILE = os.path.join(ROOT, ".build-bench", "release", "turnstate-profile")

SWIFT_DEFAULT = ["W1", "W2", "W2c", "W3", "W4", "W4-40", "W5", "W7"]


def swift_instructions(workload, operations=2000, lib=None):
    """Instructions per operation of one Swift workload (turnstate-profile)."""
    env = dict(os.environ)
    if lib:
        env["LD_LIBRARY_PATH"] = lib
    totals = []
    for n in (operations, 6 * operations):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "cg.out")
            done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, PROFILE, workload,
                                   str(n)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                sys.stderr.write(done.stderr[-3000:])
                raise RuntimeError("turnstate-profile %s under callgrind failed" % workload)
            totals.append(instructions(out))
    return (totals[1] - totals[0]) / (5 * operations)


RUST_PATCH = os.path.join(ROOT, "build", "rust", "release", "examples", "bench_patch")
CPP_PATCH = os.path.join(OUT, "bench_cpp")
BINDINGS_DEFAULT = ["RP-10", "RP-100k", "RA-10", "RA-100k", "RU", "XP-10", "XP-100k", "XA-10", "XA-100k", "XU"]


def binding_program(row):
    """The program of a Rust (R...) or C++ (X...) row."""
    return RUST_PATCH if row.startswith("R") else CPP_PATCH


def binding_instructions(row, scale, lib=None):
    """Instructions per operation of one row of the Rust or C++ program."""
    env = dict(os.environ, LD_LIBRARY_PATH=lib or os.path.join(ROOT, "build", "lib"))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        command = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=*counted_loop*",
                   "--callgrind-out-file=" + out, binding_program(row), "--runs", "1", "--scale", str(scale),
                   "--only", row]
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stderr[-3000:])
            raise RuntimeError("%s under callgrind failed" % row)
        ops = sum(int(fields[2]) for fields in (line.split("\t") for line in done.stdout.splitlines())
                  if fields[0] == "COUNTED" and len(fields) == 3 and fields[1] == row)
        if not ops:
            raise RuntimeError("%s counted no operations" % row)
        return instructions(out) / ops


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lib", help="directory of another libturnstate.so (LD_LIBRARY_PATH)")
    parser.add_argument("--scale", type=float, default=0.05, help="loop counts (default 0.05: 10,000 dispatches)")
    parser.add_argument("--big-mb", help="the size of `big`'s state")
    parser.add_argument("--swift", action="store_true", help="Swift workloads (turnstate-profile)")
    parser.add_argument("--floors", action="store_true", help="with --swift and no workloads: each with its floors")
    parser.add_argument("--bindings", action="store_true", help="rows of the Rust and C++ programs (RP-10, XU...)")
    parser.add_argument("workloads", nargs="*")
    args = parser.parse_args()
    if args.bindings:
        for row in args.workloads or BINDINGS_DEFAULT:
            print("%s\t%.0f" % (row, binding_instructions(row, args.scale, args.lib)), flush=True)
        return
    if args.swift:
        ids = args.workloads or [w + suffix for w in SWIFT_DEFAULT
                                 for suffix in (("", "-floor", "-floor-api") if args.floors else ("",))]
        for workload in ids:
            print("%s\t%.0f" % (workload, swift_instructions(workload)), flush=True)
        return
    args.workloads = args.workloads or DEFAULT
    extra = ["--big-mb", args.big_mb] if args.big_mb else []
    for workload in args.workloads:
        for key, value in measure(workload, args.scale, args.lib, extra).items():
            print("%s\t%.0f" % (key, value), flush=True)


if __name__ == "__main__":
    main()
