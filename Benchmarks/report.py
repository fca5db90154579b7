#!/usr/bin/env python3
"""Runs every benchmark of `make bench` and prints ONE table.

    python3 Benchmarks/report.py [--runs R] [--scale F] [--only REGEX]

The pieces (built by `make bench` before this runs, release builds only):
  - the Swift workloads W1..W7: Benchmarks/Benchmarks/TurnstateBenchmarks, run
    with ordo-one's package-benchmark (`swift package benchmark`), exported as
    raw samples (histogramSamples) into .build-bench/results/;
  - the C workloads C1..C6, CP, CA, CU (issue 19: patch reducers, appends,
    actions no reducer's filter matches), memory and start-up:
    build/bench/bench (one process per workload), which prints
    "RESULT <id> <value> <unit>" lines;
  - P1: Benchmarks/python/bench_package.py (the turnstate package, Python
    reducer and listener, from build/bench-venv, see PY), and Benchmarks/python/bench_ctypes.py (bare
    ctypes: P1-ctypes, P1-raw), same RESULT lines. P1-add is P1 minus the
    median of C1: what the binding and Python callbacks add per dispatch.
  - PY: Benchmarks/python/bench_pydux.py, the package against pydux 0.2.2
    (PyPI) with the same reducers, interleaved rounds; it runs in the
    bench's own venv, build/bench-venv (made here: pydux and this
    repository's package, bundling build/lib; never committed). The
    "/pydux" rows are each round's ratio; instruction counts by callgrind
    (two runs, N and 6N dispatches: the difference over 5N).
  - REP: replicate.so across three processes on a Redis server started on
    loopback (Tests/replicate/run.sh --bench), ordered and optimistic mode,
    the latter also through a proxy adding 100 ms to every round trip; same
    RESULT lines; skipped with a note when redis-server or
    build/plugins/replicate.so is missing.
  - REP-JS: the same on a three-server NATS JetStream cluster on loopback, an
    R3 stream, ordered mode with 1, 2, 4 and 8 dispatching threads per
    process, then optimistic mode from one process
    (Tests/replicate/nats_run.py --bench); skipped with a note when
    nats-server is missing.
  - R1: the C1 loop from Rust, build/rust/release/examples/bench_r1 (cargo
    --release, bindings/rust/turnstate/examples/bench_r1.rs), same lines.
  - RP, RA, RU and XP, XA, XU: CP, CA and CU from Rust
    (build/rust/release/examples/bench_patch, examples/bench_patch.rs) and
    from C++ (build/bench/bench_cpp, Benchmarks/cpp/bench.cpp), same lines;
    their instructions per operation, and those of the C rows they are
    measured against, from callgrind (Benchmarks/callgrind.py) unless
    --no-callgrind.
Each workload gives several samples (one per run); the table shows their
median, min and max, the target, and whether the median meets it. This
script only reports: it never fails because a target is missed (the exit
status is non-zero only if a piece could not run).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# id, description, target (kind, value), in table order. Kinds:
#   "max": median <= value;  "min": median >= value;  "ratio": median <= value * median of another id;
#   "eq": median == value;   "flat": median <= value * median of another id;
#   None: no target (shown for information).
ROWS = [
    ("W1", "W1 Swift counter, 1 subscriber", ("max", 80)),
    ("W2", "W2 W1 + 3 pass-through Middleware", ("max", 120)),
    ("W2c", "W2c W1 + 3 ClosureMiddleware", ("max", 120)),
    ("W3", "W3 10 slots, 100 select subscribers", ("max", 1000)),
    ("W4", "W4 10k todos, 1 subscriber, 12 B titles", ("max", 1000)),
    ("W4-40", "W4 10k todos, 1 subscriber, 40 B titles", ("max", 1000)),
    ("W5", "W5 subscribe+unsubscribe, 1000 live", ("max", 500)),
    ("W7", "W7 unsubscribe 10k, newest first", ("ratio", 3.0, "W7-floor")),
]

# After each Swift workload, its floors (Sources/TurnstateWorkloads/Floors.swift)
# and ours / floor (samples of ours over the floor's median, same run).
def _with_floors(rows):
    out = []
    for row in rows:
        out.append(row)
        w = row[0]
        if re.fullmatch(r"W[0-9]c?(-40)?", w):
            out += [
                (w + "-floor", "  %s floor (least code, same work)" % w, None),
                (w + "-floor-api", "  %s floor, API shape (any Action, reducer closure)" % w, None),
                (w + "/floor", "  %s ours / floor" % w, None),
                (w + "/floor-api", "  %s ours / floor, API shape" % w, None),
            ]
    return out


ROWS = _with_floors(ROWS)
ROWS += [
    ("C1", "C1 ts_store_dispatch, 1 reducer, 1 listener", ("max", 500)),
    ("R1", "R1 C1 loop from Rust (closures, safe API)", ("ratio", 1.10, "C1")),
    ("R1-c", "R1 with dispatch_c (a &CStr action, no copy)", ("ratio", 1.10, "C1")),
    ("R1-sys", "R1 same through turnstate-sys (extern fns)", None),
    ("C1i-base", "C1i C1 shape, same process, alternating", None),
    ("C1i-pass", "C1i C1 + 1 pass-through plugin (.so)", None),
    ("C1i", "C1i C1 + inspector.so, no browser connected", ("ratio", 1.05, "C1i-base")),
    ("C1i-ratio", "C1i / C1i-base (pairs of runs)", ("max", 1.05)),
    ("C1i-vs-pass", "C1i / C1i-pass: the inspector's own cost", ("max", 1.05)),
    ("C1i-own", "C1i inspector run() alone, no-op next (ns/action)", None),
    ("C2", "C2 C1 + 3 middleware in code", None),
    ("C3", "C3 C1 + 3 pass-through plugins (.so)", ("max", 1000)),
    ("C4", "C4 C1 + 10 MB document in another slice", None),
    ("C4-C1", "C4 C1 shape, same process, alternating", None),
    ("C4-ratio", "C4 / C1 (pairs of runs)", ("max", 1.2)),
    ("C5-small", "C5 get_state small value in 10 MB slice", ("max", 2000)),
    ("C5-count", "C5 get_state /count (small slice)", None),
    ("C5-whole", "C5 get_state whole 10 MB state", None),
    ("C5-whole-changed", "C5 get_state whole state after a change", None),
    ("CP-10", "CP toggle 1 of 10 items: patch reducer, getters", None),
    ("CP-100k", "CP toggle 1 of 100,000 items (8 MB slice)", ("ratio", 2.0, "CP-10")),
    ("CP-ratio", "CP 100,000 / 10 items (pairs of runs)", ("max", 2.0)),
    ("CA-10", "CA append (patch add /items/-) to 10 items", None),
    ("CA-100k", "CA append to 100,000 items", ("ratio", 2.0, "CA-10")),
    ("CA-ratio", "CA 100,000 / 10 items (pairs of runs)", ("max", 2.0)),
    ("CU", "CU action no reducer's filter matches, 8 MB slice", ("ratio", 1.1, "CU-C1")),
    ("CU-C1", "CU C1 shape, same process, alternating", None),
    ("CU-ratio", "CU / C1 (pairs of runs)", ("max", 1.1)),
    ("RP-10", "RP CP-10 from Rust (closure, Patch, getters)", ("ratio", 1.2, "CP-10")),
    ("RP-100k", "RP CP-100k from Rust", ("ratio", 1.2, "CP-100k")),
    ("RA-10", "RA CA-10 from Rust", ("ratio", 1.2, "CA-10")),
    ("RA-100k", "RA CA-100k from Rust", ("ratio", 1.2, "CA-100k")),
    ("RU", "RU CU from Rust", ("ratio", 1.2, "CU")),
    ("XP-10", "XP CP-10 from C++ (lambda, patch, getters)", ("ratio", 1.2, "CP-10")),
    ("XP-100k", "XP CP-100k from C++", ("ratio", 1.2, "CP-100k")),
    ("XA-10", "XA CA-10 from C++", ("ratio", 1.2, "CA-10")),
    ("XA-100k", "XA CA-100k from C++", ("ratio", 1.2, "CA-100k")),
    ("XU", "XU CU from C++", ("ratio", 1.2, "CU")),
    ("C6", "C6 4 threads dispatching: throughput", None),
    ("C6-ns", "C6 4 threads: wall time per dispatch", None),
    ("C6-lost", "C6 4 threads: lost updates", ("eq", 0)),
    ("P1", "P1 C1 loop via the turnstate package, Python callbacks", ("max", 3000)),
    ("P1-add", "P1 - C1: what the Python binding adds", None),
    ("P1-ctypes", "P1 C1 loop from bare ctypes (C callbacks)", None),
    ("P1-raw", "P1 C1 loop from bare ctypes, Python callbacks", None),
    ("PY-k1", "PY k1 counter, 1 listener: turnstate package", ("ratio", 1.5, "PY-k1-pydux")),
    ("PY-k1-pydux", "PY k1: pydux 0.2.2, same reducers", None),
    ("PY-k1/pydux", "PY k1 turnstate / pydux (same rounds)", ("max", 1.5)),
    ("PY-k100", "PY k100 counter, 100 listeners", ("ratio", 1.0, "PY-k100-pydux")),
    ("PY-k100-pydux", "PY k100: pydux 0.2.2", None),
    ("PY-k100/pydux", "PY k100 turnstate / pydux", ("max", 1.0)),
    ("PY-big-other", "PY big-other: 10k todos in another slice", ("ratio", 1.0, "PY-big-other-pydux")),
    ("PY-big-other-pydux", "PY big-other: pydux 0.2.2", None),
    ("PY-big-other/pydux", "PY big-other turnstate / pydux", ("max", 1.0)),
    ("PY-big-other/k1", "PY big-other / turnstate's k1", ("max", 2.0)),
    ("PY-big-edit", "PY big-edit: toggle 1 of 10k, new list", ("ratio", 1.0, "PY-big-edit-pydux")),
    ("PY-big-edit-pydux", "PY big-edit: pydux 0.2.2", None),
    ("PY-big-edit/pydux", "PY big-edit turnstate / pydux", ("max", 1.0)),
    ("PY-big-edit-patch", "PY big-edit, the reducer returns a Patch", ("ratio", 0.1, "PY-big-edit-pydux")),
    ("PY-big-edit-patch/pydux", "PY big-edit-patch / pydux's big-edit", ("max", 0.1)),
    ("REP-rate", "REP replicated dispatches/s, 3 replicas in all", ("min", 20000)),
    ("REP-p50", "REP dispatch latency at the origin, p50", None),
    ("REP-p99", "REP dispatch latency at the origin, p99", ("max", 2000)),
    ("REP-diverge", "REP divergence, 1M actions, a replica killed", ("eq", 0)),
    ("REP-join", "REP join from a snapshot after 1M actions", None),
    ("REP-JS-rate", "REP-JS JetStream R3, ordered, 3 replicas x 1 thread: dispatches/s", None),
    ("REP-JS-p50", "REP-JS dispatch latency at the origin, p50", None),
    ("REP-JS-p99", "REP-JS dispatch latency at the origin, p99", ("max", 10000)),
    ("REP-JS-rate2", "REP-JS 3 replicas x 2 threads: dispatches/s", None),
    ("REP-JS-p992", "REP-JS 3 replicas x 2 threads: p99 at the origin", None),
    ("REP-JS-rate4", "REP-JS 3 replicas x 4 threads: dispatches/s", ("min", 5000)),
    ("REP-JS-p994", "REP-JS 3 replicas x 4 threads: p99 at the origin", ("max", 10000)),
    ("REP-JS-rate8", "REP-JS 3 replicas x 8 threads: dispatches/s", ("min", 5000)),
    ("REP-JS-p998", "REP-JS 3 replicas x 8 threads: p99 at the origin", ("max", 10000)),
    ("REP-JS-opt-rate", "REP-JS optimistic: replicated dispatches/s, 1 process", ("min", 50000)),
    ("REP-JS-opt-p50", "REP-JS optimistic local dispatch p50, 1 process", None),
    ("REP-JS-opt-p99", "REP-JS optimistic local dispatch p99, 1 process", ("max", 50)),
    ("REP-JS-opt-diverge", "REP-JS optimistic divergence once quiet (2 replicas)", ("eq", 0)),
    ("REP-opt-rate", "REP optimistic: replicated dispatches/s, 1 process", ("min", 50000)),
    ("REP-opt-p99", "REP optimistic local dispatch p99, 1 process", ("max", 50)),
    ("REP-opt-p99-3", "REP optimistic local dispatch p99, 3 at once", ("max", 50)),
    ("REP-opt-diverge", "REP optimistic divergence once quiet, 3 at once", ("eq", 0)),
    ("REP-opt-rebase-10MB", "REP optimistic: one rebase of a 10 MB state", None),
    ("REP-opt-proxy-p99", "REP optimistic local p99, +100 ms round trips", ("max", 50)),
    ("REP-ord-proxy-p50", "REP ordered dispatch p50, +100 ms round trips", None),
    ("STARTUP", "start-up: load, create, 1 plugin, 1 dispatch", ("max", 15)),
    ("MEM-1M", "memory: peak RSS after 1M dispatches", None),
    ("MEM-10M", "memory: peak RSS after 10M dispatches", ("flat", 1.10, "MEM-1M")),
]
# Big states (bench.c `big`): 100 MB always, 1 GB with --big (or
# TURNSTATE_BENCH_BIG=1): several GB of memory and a minute.
for _mb, _size in ((100, "100 MB"), (1024, "1 GB")):
    ROWS += [
        ("BIG%d-create" % _mb, "BIG %s state of 1 KB strings: ts_store_create" % _size, None),
        ("BIG%d-peak" % _mb, "BIG %s: peak RSS the store adds / state text" % _size, ("max", 2.0)),
        ("BIG%d-first" % _mb, "BIG %s: first pointer read below the big slice" % _size, None),
        ("BIG%d-read" % _mb, "BIG %s: pointer read, unchanged big slice" % _size, ("max", 10)),
        ("BIG%d-listen" % _mb, "BIG %s: C1 dispatch + pointer listener on it" % _size, None),
        ("BIG%d-whole" % _mb, "BIG %s: get_state of the whole state" % _size, None),
        ("BIG%d-whole-peak" % _mb, "BIG %s: peak RSS that read adds / state text" % _size, None),
    ]


def log(message):
    print("[bench] " + message, file=sys.stderr, flush=True)


class Progress:
    """Which piece runs and for how long, on stderr (the table goes to stdout).

    Each piece is announced as "[k/n] what"; while it runs, a status line
    shows its elapsed time, the time in all, and the last line it printed (the
    Swift benchmark tool names the benchmark it runs; the C program prints a
    RESULT line per sample). On a terminal the line is updated in place every
    second; otherwise a line is printed every PROGRESS_EVERY seconds."""

    PROGRESS_EVERY = 30

    def __init__(self):
        self.total = 0
        self.done = 0
        self.started = time.monotonic()
        self.tty = sys.stderr.isatty()

    def status(self, what, since, last):
        now = time.monotonic()
        text = "[bench] [%d/%d] %s: %s (%s in all)" % (self.done + 1, max(self.total, self.done + 1), what,
                                                    clock(now - since), clock(now - self.started))
        if last:
            text += " | " + last
        return text


def clock(seconds):
    seconds = int(seconds)
    return "%d:%02d" % (seconds // 60, seconds % 60) if seconds >= 60 else "%d s" % seconds


PROGRESS = Progress()


def run(command, env=None, what=None):
    """Runs a piece; returns its stdout. Shows progress while it runs, and its
    output if it fails."""
    what = what or command[0]
    log("[%d/%d] %s: %s" % (PROGRESS.done + 1, max(PROGRESS.total, PROGRESS.done + 1), what, " ".join(command)))
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, errors="replace")
    out, err, last = [], [], [""]

    def drain(stream, into):
        for line in stream:
            into.append(line)
            if line.strip():
                last[0] = " ".join(line.split())[:100]

    readers = [threading.Thread(target=drain, args=(process.stdout, out), daemon=True),
               threading.Thread(target=drain, args=(process.stderr, err), daemon=True)]
    for reader in readers:
        reader.start()
    width = 0
    next_line = started + Progress.PROGRESS_EVERY
    while True:
        try:
            process.wait(timeout=1)
            break
        except subprocess.TimeoutExpired:
            pass
        if PROGRESS.tty:
            text = PROGRESS.status(what, started, last[0])[:shutil.get_terminal_size().columns - 1]
            sys.stderr.write("\r" + text.ljust(width))
            sys.stderr.flush()
            width = len(text)
        elif time.monotonic() >= next_line:
            print(PROGRESS.status(what, started, last[0]), file=sys.stderr, flush=True)
            next_line += Progress.PROGRESS_EVERY
    for reader in readers:
        reader.join()
    if width:
        sys.stderr.write("\r" + " " * width + "\r")
    PROGRESS.done += 1
    log("  %s: %s" % (what, clock(time.monotonic() - started)))
    stdout, stderr = "".join(out), "".join(err)
    if process.returncode != 0:
        sys.stderr.write(stdout[-4000:])
        sys.stderr.write(stderr[-4000:])
        raise RuntimeError("%s failed with status %d" % (command[0], process.returncode))
    return stdout


def parse_results(text, samples, units, notes):
    for line in text.splitlines():
        fields = line.split("\t")
        if fields[0] == "RESULT" and len(fields) == 4:
            samples.setdefault(fields[1], []).append(float(fields[2]))
            units[fields[1]] = fields[3]
        elif fields[0] == "INFO" and len(fields) >= 2:
            notes.append(fields[1])


UNIT_NS = {"ns": 1, "us": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}


def swift_workloads(args, samples, units, notes):
    results = os.path.join(ROOT, ".build-bench", "results")
    shutil.rmtree(results, ignore_errors=True)
    os.makedirs(results)
    env = dict(os.environ, TURNSTATE_BENCH_SCALE=str(args.scale), TURNSTATE_BENCH_RUNS=str(args.runs))
    for name in ("CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS"):  # SwiftPM would build C targets with them
        env.pop(name, None)
    command = [args.swift, "package", "--package-path", "Benchmarks", "--scratch-path", ".build-bench",
               "--allow-writing-to-directory", results, "benchmark", "--format", "histogramSamples",
               "--path", results, "--no-progress"]
    if args.only:
        # package-benchmark matches the regex against the whole name.
        command += ["--filter", ".*(%s).*" % args.only]
    run(command, env=env, what="Swift W1..W7 (package-benchmark)")
    pattern = re.compile(r"^.*?\.TurnstateBenchmarks\.(?P<name>.*)\.wallClock\.histogram\.samples\.tsv$")
    for file in sorted(os.listdir(results)):
        match = pattern.match(file)
        if not match:
            continue
        name = match.group("name")
        workload = name.split("_")[0]
        count = re.search(r"\[n=(\d+)\]", name)
        if not count:
            continue
        operations = int(count.group(1))
        with open(os.path.join(results, file)) as handle:
            lines = handle.read().split("\n")
        unit = re.search(r"\((\w+)\)\s*$", lines[0])
        factor = UNIT_NS.get(unit.group(1) if unit else "ns", 1)
        values = [float(v) * factor / operations for v in lines[1:] if v.strip()]
        samples[workload] = values
        units[workload] = "ns"
    notes.append("Swift: package-benchmark, %d measured iterations per workload after 1 warm-up; "
                 "an iteration runs the whole workload, the table shows ns per operation" % args.runs)
    floor_ratios(samples, units)


def floor_ratios(samples, units):
    """<W>/floor and <W>/floor-api: each sample of ours over the median of
    the floor (same run)."""
    for key in list(samples):
        for suffix in ("-floor", "-floor-api"):
            floor = samples.get(key + suffix)
            if key.endswith(("-floor", "-floor-api")) or not floor or not samples[key]:
                continue
            base = statistics.median(floor)
            if base > 0:
                samples[key + "/" + suffix[1:]] = [value / base for value in samples[key]]
                units[key + "/" + suffix[1:]] = "x"


def swift_instructions(args, instructions, notes):
    """callgrind instructions per operation of the Swift workloads and their
    floors (Benchmarks/callgrind.py --swift); ratios as rows' notes."""
    sys.path.insert(0, HERE)
    import callgrind
    if not shutil.which("valgrind") or not os.path.exists(callgrind.PROFILE):
        notes.append("instructions per operation not counted: valgrind or %s is missing" % callgrind.PROFILE)
        return
    ids = [key for key, _, _ in ROWS if re.fullmatch(r"W[0-9c-]+?(-40)?(-floor(-api)?)?", key)
           and (not args.only or re.search(args.only, key))]
    log("callgrind: instructions per operation of %d Swift workloads" % len(ids))
    started = time.monotonic()
    for key in ids:
        instructions[key] = callgrind.swift_instructions(key)
    for key in list(instructions):
        for suffix in ("-floor", "-floor-api"):
            if key + suffix in instructions and instructions[key + suffix] > 0:
                instructions[key + "/" + suffix[1:]] = instructions[key] / instructions[key + suffix]
    log("  callgrind: %s" % clock(time.monotonic() - started))
    notes.append("instr/op: callgrind, instructions per operation (turnstate-profile with N and 6N operations); "
                 "on the ours/floor rows, the ratio of the instruction counts")


def c_pieces(args):
    """The C program's workloads to run (one process each), then "P1" and
    "P1-package" (two Python processes: bare ctypes, then the package)."""
    ids = {"c1": "C1", "c1i": "C1i", "c1i-own": "C1i-own", "c2": "C2", "c3": "C3", "c4": "C4", "c5": "C5",
           "cpatch": "CP", "cappend": "CA", "cunhandled": "CU",
           "c6": "C6", "memory": "MEM", "startup": "STARTUP", "big100": "BIG100"}
    if args.big:
        ids["big1024"] = "BIG1024"
    pieces = [workload for workload, prefix in ids.items() if not args.only or re.search(args.only, prefix)]
    if not args.only or re.search(args.only, "P1"):
        pieces += ["P1", "P1-package"]
    if not args.only or re.search(args.only, "PY"):
        pieces += ["PY"]
    if not args.only or re.search(args.only, "REP"):
        pieces += ["REP"]
    return pieces


def c_workloads(args, samples, units, notes):
    out = os.path.join(ROOT, "build", "bench")
    bench = os.path.join(out, "bench")
    common = [bench, "--runs", str(args.runs), "--scale", str(args.scale),
              "--plugin-dir", os.path.join(out, "plugins"),
              "--startup", os.path.join(out, "startup"),
              "--startup-plugin", os.path.join(out, "startup-plugin", "pass.so"),
              "--inspector", os.path.join(ROOT, "build", "plugins", "inspector.so")]
    pieces = c_pieces(args)
    for workload in pieces:
        if workload in ("P1", "P1-package", "REP", "PY"):
            continue
        # One process per workload: no workload sees another's heap (RSS).
        if workload.startswith("big"):
            command = common + ["--big-mb", workload[3:], "big"]
        else:
            command = common + [workload]
        parse_results(run(command, what="C " + workload), samples, units, notes)
    if "P1" in pieces:
        lib = os.path.join(ROOT, "build", "lib", "libturnstate.so")
        text = run([sys.executable, os.path.join(HERE, "python", "bench_ctypes.py"), lib,
                    os.path.join(out, "libtsbench_callbacks.so"), "--runs", str(args.runs), "--scale",
                    str(args.scale)], what="Python P1")
        parse_results(text, samples, units, notes)
        # The package is a compiled extension: it runs from the bench's venv,
        # where bench_venv() installs it (with this tree's library).
        python = bench_venv(notes)
        if python is not None:
            env = dict(os.environ, TURNSTATE_LIB=lib)
            text = run([python, os.path.join(HERE, "python", "bench_package.py"), "--runs", str(args.runs),
                        "--scale", str(args.scale)], env=env, what="Python P1 (turnstate package)")
            parse_results(text, samples, units, notes)
        if samples.get("C1") and samples.get("P1"):
            c1 = statistics.median(samples["C1"])
            samples["P1-add"] = [value - c1 for value in samples["P1"]]
            units["P1-add"] = units["P1"]
    if "PY" in pieces:
        python_vs_pydux(args, samples, units, notes)
    if "REP" in pieces:
        plugin = os.path.join(ROOT, "build", "plugins", "replicate.so")
        if shutil.which("redis-server") and os.path.exists(plugin):
            text = run([os.path.join(ROOT, "Tests", "replicate", "run.sh"), "--bench", "--scale", str(args.scale)],
                       what="replicate.so REP")
            parse_results(text, samples, units, notes)
        else:
            notes.append("REP not run: redis-server or %s is missing (make plugins; .ci/setup.sh test)" % plugin)
        if shutil.which("nats-server") and os.path.exists(plugin):
            text = run([sys.executable, os.path.join(ROOT, "Tests", "replicate", "nats_run.py"), "--bench", "--scale",
                        str(args.scale)], what="replicate.so REP-JS (NATS JetStream)")
            parse_results(text, samples, units, notes)
        else:
            notes.append("REP-JS not run: nats-server or %s is missing (make plugins; .ci/setup.sh test)" % plugin)
    if not args.only or re.search(args.only, "R1 R1-c R1-sys"):
        r1 = os.path.join(ROOT, "build", "rust", "release", "examples", "bench_r1")
        if os.path.exists(r1):
            env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(ROOT, "build", "lib"))
            text = run([r1, "--runs", str(args.runs), "--scale", str(args.scale)], env=env, what="Rust R1")
            parse_results(text, samples, units, notes)
        else:
            notes.append("R1 not run: %s is missing (make -C Benchmarks rust)" % r1)


BENCH_VENV = os.path.join(ROOT, "build", "bench-venv")
PY_WORKLOADS = ("k1", "k100", "big-other", "big-edit", "big-edit-patch")


_bench_venv_made = []


def bench_venv(notes):
    """build/bench-venv with pydux 0.2.2 and this repository's package
    (bundling build/lib), or None (with a note) when it cannot be made.
    Installs the package once per run."""
    python = os.path.join(BENCH_VENV, "bin", "python")
    if _bench_venv_made:
        return _bench_venv_made[0]
    env = dict(os.environ, TURNSTATE_BUILD=os.path.join(ROOT, "build"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    try:
        if not os.path.exists(python):
            subprocess.run([sys.executable, "-m", "venv", BENCH_VENV], check=True, capture_output=True)
        if subprocess.run([python, "-c", "import pydux"], capture_output=True).returncode != 0:
            subprocess.run([python, "-m", "pip", "install", "-q", "pydux==0.2.2"], check=True, capture_output=True,
                           env=env)
        # The package as it is now (the extension and the library of this tree).
        subprocess.run([python, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps",
                        os.path.join(ROOT, "bindings", "python")], check=True, capture_output=True, env=env)
        subprocess.run([python, "-m", "pip", "install", "-q", "orjson"], check=True, capture_output=True, env=env)
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", b"") or b""
        notes.append("PY and P1 (package) not run: could not make %s (%s %s)"
                     % (BENCH_VENV, error, detail.decode()[-300:]))
        _bench_venv_made.append(None)
        return None
    _bench_venv_made.append(python)
    return python


def python_vs_pydux(args, samples, units, notes):
    python = bench_venv(notes)
    if python is None:
        return
    script = os.path.join(HERE, "python", "bench_pydux.py")
    only = None if not args.only else "|".join(w for w in PY_WORKLOADS if re.search(args.only, "PY-" + w))
    command = [python, script, "--runs", str(args.runs), "--scale", str(args.scale)]
    if only:
        command += ["--only", "^(%s)$" % only]
    parse_results(run(command, what="Python PY (turnstate package against pydux)"), samples, units, notes)
    for workload in PY_WORKLOADS:
        ours = samples.get("PY-" + workload)
        theirs = samples.get("PY-" + ("big-edit" if workload == "big-edit-patch" else workload) + "-pydux")
        if ours and theirs:
            samples["PY-%s/pydux" % workload] = [a / b for a, b in zip(ours, theirs)]
            units["PY-%s/pydux" % workload] = "x"
    if samples.get("PY-big-other") and samples.get("PY-k1"):
        samples["PY-big-other/k1"] = [a / b for a, b in zip(samples["PY-big-other"], samples["PY-k1"])]
        units["PY-big-other/k1"] = "x"


def python_instructions(args, instructions, notes):
    """callgrind instructions per dispatch of the PY rows: bench_pydux.py
    --count N and 6N under callgrind; the difference over 5N."""
    python = os.path.join(BENCH_VENV, "bin", "python")
    if not shutil.which("valgrind") or not os.path.exists(python):
        return
    script = os.path.join(HERE, "python", "bench_pydux.py")
    counts = {"k1": 2000, "k100": 200, "big-other": 2000, "big-edit": 40, "big-edit-patch": 40}
    started = time.monotonic()
    for workload in PY_WORKLOADS:
        if args.only and not re.search(args.only, "PY-" + workload):
            continue
        for impl in ("ours", "pydux"):
            if impl == "pydux" and workload == "big-edit-patch":
                continue
            totals = []
            for n in (counts[workload], 6 * counts[workload]):
                with tempfile.TemporaryDirectory() as tmp:
                    out = os.path.join(tmp, "cg.out")
                    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, python, script,
                                           "--count", str(n), "--impl", impl, "--only", workload],
                                          cwd=ROOT, capture_output=True, text=True)
                    if done.returncode != 0:
                        notes.append("PY instructions of %s (%s) not counted: %s" % (workload, impl, done.stderr[-200:]))
                        break
                    with open(out) as handle:
                        totals.append(next(int(line.split()[1]) for line in handle
                                           if line.startswith(("summary:", "totals:"))))
            if len(totals) == 2:
                key = "PY-" + workload + ("-pydux" if impl == "pydux" else "")
                instructions[key] = (totals[1] - totals[0]) / (5 * counts[workload])
    for workload in PY_WORKLOADS:
        ours = instructions.get("PY-" + workload)
        theirs = instructions.get("PY-" + ("big-edit" if workload == "big-edit-patch" else workload) + "-pydux")
        if ours and theirs:
            instructions["PY-%s/pydux" % workload] = ours / theirs
    log("  callgrind PY: %s" % clock(time.monotonic() - started))
    notes.append("PY instr/op: callgrind, instructions per dispatch (N and 6N dispatches; /pydux rows: the ratio)")


# The Rust and C++ rows of issue 19, and the C row each is measured against.
BINDING_ROWS = {"RP-10": "CP-10", "RP-100k": "CP-100k", "RA-10": "CA-10", "RA-100k": "CA-100k", "RU": "CU",
                "XP-10": "CP-10", "XP-100k": "CP-100k", "XA-10": "CA-10", "XA-100k": "CA-100k", "XU": "CU"}
# The C workload of bench.c that gives each of those C rows.
C_WORKLOAD = {"CP": "cpatch", "CA": "cappend", "CU": "cunhandled"}


def binding_pieces(args):
    """The Rust and C++ programs to run: ("Rust", path) and ("C++", path)."""
    pieces = []
    for name, prefix, path in (("Rust", "RP RA RU", os.path.join(ROOT, "build", "rust", "release", "examples",
                                                                   "bench_patch")),
                               ("C++", "XP XA XU", os.path.join(ROOT, "build", "bench", "bench_cpp"))):
        if not args.only or re.search(args.only, prefix):
            pieces.append((name, path))
    return pieces


def binding_workloads(args, samples, units, notes):
    """RP, RA, RU (Rust) and XP, XA, XU (C++): bench.c's CP, CA, CU through the bindings."""
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(ROOT, "build", "lib"))
    for name, path in binding_pieces(args):
        if not os.path.exists(path):
            notes.append("%s rows not run: %s is missing (make -C Benchmarks rust cpp)" % (name, path))
            continue
        text = run([path, "--runs", str(args.runs), "--scale", str(args.scale)], env=env,
                   what="%s CP, CA, CU" % name)
        parse_results(text, samples, units, notes)


def binding_instructions(args, samples, instructions, notes):
    """callgrind instructions per operation of the Rust and C++ rows and of
    the C rows they are measured against (same loop counts, scale 0.01)."""
    sys.path.insert(0, HERE)
    import callgrind
    rows = [row for row in BINDING_ROWS if row in samples]
    if not rows:
        return
    if not shutil.which("valgrind"):
        notes.append("instructions of the Rust and C++ rows not counted: valgrind is missing")
        return
    scale = 0.01
    log("callgrind: instructions per operation of %d Rust and C++ rows and their C rows" % len(rows))
    started = time.monotonic()
    for workload in sorted({C_WORKLOAD[BINDING_ROWS[row][:2]] for row in rows}):
        for key, value in callgrind.measure(workload, scale).items():
            instructions[key] = value
    for row in rows:
        instructions[row] = callgrind.binding_instructions(row, scale)
    log("  callgrind: %s" % clock(time.monotonic() - started))
    ratios = ["%s %.2fx" % (row, instructions[row] / instructions[BINDING_ROWS[row]]) for row in rows
              if instructions.get(BINDING_ROWS[row])]
    notes.append("instructions of the Rust and C++ rows over their C rows' (callgrind, loops scaled by %g): %s" %
                 (scale, ", ".join(ratios)))


def fmt(value):
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return "{:,.0f}".format(value)
    if abs(value) >= 10:
        return "%.1f" % value
    return "%.2f" % value


def judge(target, median, medians, unit):
    """The target's text and whether the median meets it."""
    if target is None:
        return "-", "-"
    kind = target[0]
    if kind == "max":
        return "<= %s %s" % (fmt(target[1]), unit), "yes" if median <= target[1] else "NO"
    if kind == "min":
        return ">= %s %s" % (fmt(target[1]), unit), "yes" if median >= target[1] else "NO"
    if kind == "eq":
        return "= %s" % fmt(target[1]), "yes" if median == target[1] else "NO"
    if kind in ("ratio", "flat"):
        reference = medians.get(target[2])
        if reference is None:
            return "<= %.2f x %s" % (target[1], target[2]), "?"
        limit = target[1] * reference
        text = "<= %.2f x %s = %s %s" % (target[1], target[2], fmt(limit), unit)
        return text, "yes" if median <= limit else "NO"
    return "?", "?"


def table(samples, units, instructions=None):
    instructions = instructions or {}
    medians = {key: statistics.median(values) for key, values in samples.items() if values}
    header = ("workload", "median", "min", "max", "unit", "target", "met", "instr/op")
    rows = []
    for key, description, target in ROWS:
        values = samples.get(key)
        if not values:
            continue
        median = medians[key]
        unit = units.get(key, "")
        target_text, met = judge(target, median, medians, unit)
        count = instructions.get(key)
        count_text = "-" if count is None else (("%.2f x" % count) if "/" in key else "{:,.0f}".format(count))
        rows.append((description, fmt(median), fmt(min(values)), fmt(max(values)), unit, target_text, met,
                     count_text))
    widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(len(header))]
    right = {1, 2, 3, 7}

    def line(row):
        cells = [str(cell).rjust(widths[i]) if i in right else str(cell).ljust(widths[i]) for i, cell in enumerate(row)]
        return "| " + " | ".join(cells) + " |"

    print(line(header))
    print("|" + "|".join(("-" * (w + 1) + ":") if i in right else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|")
    for row in rows:
        print(line(row))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="timed runs (samples) per workload, default 7")
    parser.add_argument("--scale", type=float, default=1.0, help="scale every loop count (0.01: smoke test)")
    parser.add_argument("--only", help="regex of workload ids to run (W1, C4, P1, STARTUP, MEM...)")
    parser.add_argument("--no-swift", action="store_true", help="skip the Swift workloads")
    parser.add_argument("--no-c", action="store_true", help="skip the C and Python workloads")
    parser.add_argument("--swift", default=os.environ.get("SWIFT", "swift"))
    parser.add_argument("--big", action="store_true", default=os.environ.get("TURNSTATE_BENCH_BIG") == "1",
                        help="also the 1 GB state (BIG1024; several GB of memory; TURNSTATE_BENCH_BIG=1)")
    parser.add_argument("--no-callgrind", action="store_true",
                        help="skip the instruction counts of the Swift rows, the PY rows and the Rust and C++ rows")
    args = parser.parse_args()

    samples, units, notes, instructions = {}, {}, [], {}
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    swift = not args.no_swift and (not args.only or re.search(args.only, "W1 W2 W2c W3 W4 W4-40 W5 W7 -floor"))
    PROGRESS.total = (1 if swift else 0) + (0 if args.no_c else len(c_pieces(args)) + len(binding_pieces(args)))
    if swift:
        swift_workloads(args, samples, units, notes)
        if not args.no_callgrind:
            swift_instructions(args, instructions, notes)
    if not args.no_c:
        c_workloads(args, samples, units, notes)
        if not args.no_callgrind and "PY" in c_pieces(args):
            python_instructions(args, instructions, notes)
        binding_workloads(args, samples, units, notes)
        if not args.no_callgrind:
            binding_instructions(args, samples, instructions, notes)
    load_after = os.getloadavg()[0]

    print()
    print("Turnstate benchmarks (release builds; medians of %d runs%s)" %
          (args.runs, "" if args.scale == 1 else ", loops scaled by %g: NOT comparable to the targets" % args.scale))
    print()
    rows = table(samples, units, instructions)
    print()
    missed = [row[0] for row in rows if row[6] == "NO"]
    print("targets: %d met, %d missed%s" % (sum(1 for r in rows if r[6] == "yes"), len(missed),
                                            (": " + "; ".join(missed)) if missed else ""))
    for note in dict.fromkeys(notes):  # in order, each once
        print("note: " + note)
    print("note: %d CPUs, load average %.2f before and %.2f after; %.0f s in all" %
          (os.cpu_count() or 0, load_before, load_after, time.monotonic() - started))
    if max(load_before, load_after) > 0.5 * (os.cpu_count() or 1):
        print("note: the machine was busy with other work: timings are noisier than usual (see min and max)")


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as error:
        print("bench: %s" % error, file=sys.stderr)
        sys.exit(1)
