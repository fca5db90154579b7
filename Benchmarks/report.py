#!/usr/bin/env python3
"""Runs every benchmark of `make bench` and prints ONE table.

    python3 Benchmarks/report.py [--runs R] [--scale F] [--only REGEX]

The pieces (built by `make bench` before this runs, release builds only):
  - the Swift workloads W1..W7: Benchmarks/Benchmarks/TurnstateBenchmarks, run
    with ordo-one's package-benchmark (`swift package benchmark`), exported as
    raw samples (histogramSamples) into .build-bench/results/;
  - the C workloads C1..C6, memory and start-up: build/bench/bench (one process
    per workload), which prints "RESULT <id> <value> <unit>" lines;
  - P1: Benchmarks/python/bench_package.py (the turnstate package, Python
    reducer and listener), and Benchmarks/python/bench_ctypes.py (bare
    ctypes: P1-ctypes, P1-raw), same RESULT lines. P1-add is P1 minus the
    median of C1: what the binding and Python callbacks add per dispatch.
  - REP: replicate.so across three processes on a Redis server started on
    loopback (Tests/replicate/run.sh --bench), ordered and optimistic mode,
    the latter also through a proxy adding 100 ms to every round trip; same
    RESULT lines; skipped with a note when redis-server or
    build/plugins/replicate.so is missing.
  - R1: the C1 loop from Rust, build/rust/release/examples/bench_r1 (cargo
    --release, bindings/rust/turnstate/examples/bench_r1.rs), same lines.
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
    ("C6", "C6 4 threads dispatching: throughput", None),
    ("C6-ns", "C6 4 threads: wall time per dispatch", None),
    ("C6-lost", "C6 4 threads: lost updates", ("eq", 0)),
    ("P1", "P1 C1 loop via the turnstate package, Python callbacks", ("max", 3000)),
    ("P1-add", "P1 - C1: what the Python binding adds", None),
    ("P1-ctypes", "P1 C1 loop from bare ctypes (C callbacks)", None),
    ("P1-raw", "P1 C1 loop from bare ctypes, Python callbacks", None),
    ("REP-rate", "REP replicated dispatches/s, 3 replicas in all", ("min", 20000)),
    ("REP-p50", "REP dispatch latency at the origin, p50", None),
    ("REP-p99", "REP dispatch latency at the origin, p99", ("max", 2000)),
    ("REP-diverge", "REP divergence, 1M actions, a replica killed", ("eq", 0)),
    ("REP-join", "REP join from a snapshot after 1M actions", None),
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
           "c6": "C6", "memory": "MEM", "startup": "STARTUP", "big100": "BIG100"}
    if args.big:
        ids["big1024"] = "BIG1024"
    pieces = [workload for workload, prefix in ids.items() if not args.only or re.search(args.only, prefix)]
    if not args.only or re.search(args.only, "P1"):
        pieces += ["P1", "P1-package"]
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
        if workload in ("P1", "P1-package", "REP"):
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
        env = dict(os.environ, TURNSTATE_LIB=lib, PYTHONPATH=os.path.join(ROOT, "bindings", "python", "src"))
        text = run([sys.executable, os.path.join(HERE, "python", "bench_package.py"), "--runs", str(args.runs),
                    "--scale", str(args.scale)], env=env, what="Python P1 (turnstate package)")
        parse_results(text, samples, units, notes)
        if samples.get("C1") and samples.get("P1"):
            c1 = statistics.median(samples["C1"])
            samples["P1-add"] = [value - c1 for value in samples["P1"]]
            units["P1-add"] = units["P1"]
    if "REP" in pieces:
        plugin = os.path.join(ROOT, "build", "plugins", "replicate.so")
        if shutil.which("redis-server") and os.path.exists(plugin):
            text = run([os.path.join(ROOT, "Tests", "replicate", "run.sh"), "--bench", "--scale", str(args.scale)],
                       what="replicate.so REP")
            parse_results(text, samples, units, notes)
        else:
            notes.append("REP not run: redis-server or %s is missing (make plugins; .ci/setup.sh)" % plugin)
    if not args.only or re.search(args.only, "R1 R1-c R1-sys"):
        r1 = os.path.join(ROOT, "build", "rust", "release", "examples", "bench_r1")
        if os.path.exists(r1):
            env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(ROOT, "build", "lib"))
            text = run([r1, "--runs", str(args.runs), "--scale", str(args.scale)], env=env, what="Rust R1")
            parse_results(text, samples, units, notes)
        else:
            notes.append("R1 not run: %s is missing (make -C Benchmarks rust)" % r1)


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
    parser.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts of the Swift rows")
    args = parser.parse_args()

    samples, units, notes, instructions = {}, {}, [], {}
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    swift = not args.no_swift and (not args.only or re.search(args.only, "W1 W2 W2c W3 W4 W4-40 W5 W7 -floor"))
    PROGRESS.total = (1 if swift else 0) + (0 if args.no_c else len(c_pieces(args)))
    if swift:
        swift_workloads(args, samples, units, notes)
        if not args.no_callgrind:
            swift_instructions(args, instructions, notes)
    if not args.no_c:
        c_workloads(args, samples, units, notes)
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
