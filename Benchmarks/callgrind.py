#!/usr/bin/env python3
"""Instructions per operation (callgrind) of the C workloads of `make bench`.

    python3 Benchmarks/callgrind.py [--lib DIR] [--scale F] [workload...]

Runs build/bench/bench once per workload under callgrind with collection off
at start; bench.c turns it on around its measured loops only (the
CALLGRIND_TOGGLE_COLLECT macros) and prints "COUNTED id ops" after each, so
the figure is the loop's instructions over its operations: no set-up, no
warm-up. --lib runs against another build of the library (LD_LIBRARY_PATH),
to compare before and after a change. Prints "id<TAB>instructions per op".
Instruction counts do not depend on what else the machine is doing.
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

DEFAULT = ["c1", "c2", "c3", "c4", "c5", "c6"]


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
        total = sum(ops.values())
        if not total:
            raise RuntimeError("%s counted no operations" % workload)
        # One counted loop per workload process (bench.c counts one id each).
        ir = instructions(out)
        return {key: ir / total for key in ops}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lib", help="directory of another libturnstate.so (LD_LIBRARY_PATH)")
    parser.add_argument("--scale", type=float, default=0.05, help="loop counts (default 0.05: 10,000 dispatches)")
    parser.add_argument("--big-mb", help="the size of `big`'s state")
    parser.add_argument("workloads", nargs="*", default=DEFAULT)
    args = parser.parse_args()
    extra = ["--big-mb", args.big_mb] if args.big_mb else []
    for workload in args.workloads:
        for key, value in measure(workload, args.scale, args.lib, extra).items():
            print("%s\t%.0f" % (key, value), flush=True)


if __name__ == "__main__":
    main()
