#!/usr/bin/env python3
"""Tests/replicate/nats_run.py [--bench [--scale F]] - replicate.so on NATS
JetStream, against servers this script starts on loopback (free ports, a
temporary folder; every server stopped at the end; each wait bounded):

  1. a three-server JetStream cluster (R3 stream): three replica processes x
     2 threads converge; the history checker: every replica records what it
     applied, in order (Tests/replicate/replica.c --history); all applied one
     common order, each acknowledged action exactly once, no action twice,
     and each replica's state equals a fresh store folding that order
  2. the stream leader's server SIGKILLed mid-run and restarted: 0
     acknowledged dispatches lost, 0 applied twice, 0 divergence (the history
     checker again)
  3. two of three servers down (the stream leader and another): ordered
     dispatches fail with TS_E_IO and apply nothing; once they are back (a
     quorum) the next dispatch goes through, applied once; bad configs
     (Tests/replicate/faults.c)
  4. TLS (tls://, a CA made by Tests/replicate/certs.sh, mutual TLS): the
     right CA and client certificate connect; another CA, no client
     certificate, plain text to the TLS port, TLS to a plain port, a CA file
     others can write and a key others can read are refused, each with a
     message
  5. credentials: user and password, token; wrong ones refused with a
     message that never shows them
  6. a damaged log (Tests/replicate/tamper_nats.c, a second client on a
     server of its own): refused with a message, never applied, no hang
  7. optimistic mode on the R3 cluster: three replica processes x 2 threads
     dispatch at once (every 7th a "take" of a stock that runs out); once
     quiet, every replica's state equals a fresh store folding the stream's
     entries in order (read back by stream_texts(), a bare NATS client), no
     ORIGIN:N and no action in the stream twice, each origin's numbers in
     order without a gap, every acknowledged action
     in it, and each replica's drops equal the takes the fold refuses
  8. optimistic mode, the stream leader's server SIGKILLed while three
     replicas dispatch (2,000/s each) and restarted: no dispatch fails,
     pending rises and drains; the same checker (stream_checks): 0
     acknowledged lost, 0 twice, 0 divergence (an origin's entries may land
     out of order: counted and printed, see opt_leader_kill)
  9. optimistic mode, a replica SIGKILLed with actions pending (its link
     through Tests/replicate/delay_proxy.py, +100 ms): the stream holds a
     prefix of its actions, at least what it was told was confirmed; the
     rest is lost; a new replica joins; the others' acknowledged actions all
     in the stream once, states equal to the fold
 10. optimistic mode, two of three servers down: Tests/replicate/optimistic.c's
     offline scenario (dispatches return at once and queue up to
     max_pending, the status says why; all appended once with a quorum)
 11. the figures: one process's local dispatch p50/p99 and replicated
     dispatches/s (20,000 optimistic dispatches); then 100 ms added to every
     round trip: optimistic local p50/p99 (no dispatch waits a round trip),
     ordered mode (each dispatch at least one)

Prints "checks: N passed, M failed". With --bench: the REP-JS rows of `make
bench` as "RESULT<tab>ID<tab>VALUE<tab>UNIT" lines: ordered mode on the R3
cluster, three replica processes, 1 dispatching thread each (REP-JS-rate,
REP-JS-p50, REP-JS-p99), 2 threads each (REP-JS-rate2, REP-JS-p992), 4
(REP-JS-rate4, REP-JS-p994) and 8 (REP-JS-rate8, REP-JS-p998), with INFO
lines: dispatches per append, and per dispatch the replicas' CPU time and
context switches and the servers' CPU time (TS_BENCH_THREADS: the thread
counts to run, "1 2 4 8" by default); then optimistic mode, one process
dispatching unpaced with a second replica following (REP-JS-opt-rate: the
dispatches / the time until the stream confirmed the last; REP-JS-opt-p50,
REP-JS-opt-p99: local dispatch; REP-JS-opt-diverge: replicas whose state
differs from a fresh store folding the stream, 0 expected).
Env: TS_BUILD (build/), NATS_SERVER (nats-server), TS_ONLY (the scenarios
to run, by their names in main(); all by default), TS_KEEP (keep the
temporary folder).
"""
import json
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.environ.get("TS_BUILD", os.path.join(ROOT, "build"))
PLUGIN = os.path.join(BUILD, "plugins", "replicate.so")
NATS_SERVER = os.environ.get("NATS_SERVER", "nats-server")
REPLICA = os.path.join(BUILD, "tests", "replicate_replica")
FAULTS = os.path.join(BUILD, "tests", "replicate_faults")
TAMPER = os.path.join(BUILD, "tests", "replicate_tamper_nats")
OPTIMISTIC = os.path.join(BUILD, "tests", "replicate_optimistic")

passed = failed = 0
BENCH = False


def ok(what):
    global passed
    passed += 1
    if not BENCH:
        print("ok: " + what, flush=True)


def bad(what, detail=""):
    global failed
    failed += 1
    print("FAIL: %s%s" % (what, (" (%s)" % detail) if detail else ""), flush=True)


def check(condition, what, detail=""):
    (ok if condition else bad)(*((what,) if condition else (what, detail)))
    return condition


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(port, path, timeout=1.0):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
        return json.loads(r.read().decode())


# ---- Servers -------------------------------------------------------------


class Server:
    """One nats-server, its config in DIR/NAME.conf, its pid in DIR/NAME.pid."""

    def __init__(self, base, name, extra="", cluster=None):
        self.name, self.dir = name, os.path.join(base, name)
        os.makedirs(self.dir, exist_ok=True)
        self.port, self.monitor = free_port(), free_port()
        self.conf = os.path.join(base, name + ".conf")
        self.pid_file = os.path.join(base, name + ".pid")
        self.log = os.path.join(base, name + ".log")
        self.extra, self.cluster = extra, cluster

    def write_conf(self, routes=None):
        lines = [
            "server_name: %s" % self.name,
            "listen: 127.0.0.1:%d" % self.port,
            "http: 127.0.0.1:%d" % self.monitor,
            "pid_file: %s" % json.dumps(self.pid_file),
            "jetstream { store_dir: %s, max_memory_store: 256MB, max_file_store: 4GB }" % json.dumps(self.dir),
        ]
        if routes is not None:
            lines.append("cluster { name: tsr, listen: 127.0.0.1:%d, routes: [%s] }"
                         % (self.cluster, ", ".join("nats-route://127.0.0.1:%d" % r for r in routes)))
        lines.append(self.extra)
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def start(self):
        with open(self.log, "ab") as log:
            subprocess.Popen([NATS_SERVER, "-c", self.conf], stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                             start_new_session=True)

    def pid(self):
        try:
            with open(self.pid_file) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def kill(self):
        pid = self.pid()
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            for _ in range(100):  # gone (a zombie of no one: start_new_session, reparented)
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.02)
            try:
                os.unlink(self.pid_file)
            except OSError:
                pass

    def healthy(self):
        """Serving, and (in a cluster) knowing the JetStream meta leader."""
        try:
            if http_json(self.monitor, "/healthz").get("status") != "ok":
                return False
            return self.cluster is None or bool((http_json(self.monitor, "/jsz").get("meta_cluster") or {}).get("leader"))
        except Exception:
            return False

    def url(self, scheme="nats"):
        return "%s://127.0.0.1:%d" % (scheme, self.port)


def wait_healthy(servers, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if all(s.healthy() for s in servers):
            return True
        time.sleep(0.1)
    return False


class Cluster:
    """Three servers in one JetStream cluster; its state in BASE/cluster.json
    for the helpers that faults.c runs (stop-two, start-all)."""

    def __init__(self, base, load=False):
        self.base = base
        if load:
            with open(os.path.join(base, "cluster.json")) as f:
                state = json.load(f)
            self.servers = []
            for s in state:
                server = Server(base, s["name"])
                server.__dict__.update(s)
                self.servers.append(server)
            return
        self.servers = [Server(base, "n%d" % i, cluster=free_port()) for i in range(3)]
        for s in self.servers:
            s.write_conf([o.cluster for o in self.servers if o is not s])
        with open(os.path.join(base, "cluster.json"), "w") as f:
            json.dump([s.__dict__ for s in self.servers], f)

    def url(self):
        return "nats://" + ",".join("127.0.0.1:%d" % s.port for s in self.servers)

    def start(self, which=None):
        for s in which or self.servers:
            s.start()

    def wait_healthy(self, seconds=30, which=None):
        return wait_healthy(which or self.servers, seconds)

    def stream_details(self, stream):
        """(server, `stream`'s detail in that server's /jsz), for each server
        that answers and tells of `stream`, in order."""
        for s in self.servers:
            try:
                jsz = http_json(s.monitor, "/jsz?accounts=true&streams=true")
            except Exception:
                continue
            for account in jsz.get("account_details") or []:
                for detail in account.get("stream_detail") or []:
                    if detail.get("name") == stream:
                        yield s, detail

    def leader(self, stream):
        """The server that leads `stream` (None: none now)."""
        for _, detail in self.stream_details(stream):
            name = (detail.get("cluster") or {}).get("leader")
            for o in self.servers:
                if o.name == name:
                    return o
        return None

    def last_seq(self, stream):
        for s, detail in self.stream_details(stream):
            if (detail.get("cluster") or {}).get("leader") == s.name:
                return detail["state"]["last_seq"]
        return None

    def wait_leader(self, stream, seconds=30):
        deadline = time.time() + seconds
        while time.time() < deadline:
            leader = self.leader(stream)
            if leader is not None and leader.pid() is not None:
                return leader
            time.sleep(0.1)
        return None

    def stop_all(self):
        for s in self.servers:
            s.kill()


def helper(argv):
    """faults.c's STOP and START commands: stop-two BASE STREAM (the stream's
    leader and one more), start-all BASE STREAM (and wait for a leader)."""
    what, base, stream = argv
    cluster = Cluster(base, load=True)
    if what == "stop-two":
        leader = cluster.leader(stream) or cluster.servers[0]
        other = next(s for s in cluster.servers if s is not leader)
        leader.kill()
        other.kill()
        with open(os.path.join(base, "stopped"), "w") as f:
            f.write("%s %s\n" % (leader.name, other.name))
        return 0
    if what == "start-all":
        stopped = [s for s in cluster.servers if s.pid() is None]
        cluster.start(stopped)
        if not cluster.wait_healthy(30):
            return 1
        return 0 if cluster.wait_leader(stream, 30) else 1
    return 2


# ---- Replicas ---------------------------------------------------------------


class Replicas:
    """Replica processes of one run: DIR/ORIGIN.{log,json,history,acked}."""

    def __init__(self, base, name):
        self.dir = os.path.join(base, name)
        os.makedirs(self.dir, exist_ok=True)
        self.procs = {}

    def start(self, origin, url, stream, count, threads=2, extra=(), history=True):
        d = self.dir
        args = [REPLICA, "--plugin", PLUGIN, "--url", url, "--stream", stream, "--origin", origin, "--count",
                str(count), "--threads", str(threads), "--go", os.path.join(d, "go"), "--total-file",
                os.path.join(d, "total"), "--out", os.path.join(d, origin + ".json")] + list(extra)
        if history:
            args += ["--history", os.path.join(d, origin + ".history"), "--acked", os.path.join(d, origin + ".acked")]
        log = open(os.path.join(d, origin + ".log"), "ab")
        self.procs[origin] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()

    def joined(self, origin, seconds=60):
        """Waits until `origin` has joined (or ended). Replicas that open a new
        stream at the same moment race to make it (see the replicate README:
        a known limit), so the tests let the first replica make the stream,
        then start the others."""
        deadline = time.time() + seconds
        while time.time() < deadline and "join_ms=" not in self.log(origin) and self.procs[origin].poll() is None:
            time.sleep(0.05)

    def log(self, origin):
        try:
            with open(os.path.join(self.dir, origin + ".log")) as f:
                return f.read()
        except OSError:
            return ""

    def acked(self, origin):
        values = [int(line[6:]) for line in self.log(origin).splitlines() if line.startswith("acked=")]
        return values[-1] if values else 0

    def go(self, seconds=60):
        """Once every replica has joined (what a replica applies while it
        joins is not in its history), start them together."""
        deadline = time.time() + seconds
        while time.time() < deadline and not all("join_ms=" in self.log(o) or p.poll() is not None
                                                  for o, p in self.procs.items()):
            time.sleep(0.05)
        open(os.path.join(self.dir, "go"), "w").close()

    def wait_dispatchers(self, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if all("failed=" in self.log(o) for o in self.procs) or any(p.poll() not in (None, 0)
                                                                       for p in self.procs.values()):
                return True
            time.sleep(0.05)
        return False

    def finish(self, total, seconds=90):
        path = os.path.join(self.dir, "total")
        with open(path + ".tmp", "w") as f:
            f.write("%d\n" % total)
        os.rename(path + ".tmp", path)
        deadline = time.time() + seconds
        codes = {}
        for origin, p in self.procs.items():
            try:
                codes[origin] = p.wait(max(1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                codes[origin] = "killed (no end within %d s)" % seconds
        return codes

    def kill_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()

    def read(self, origin, suffix):
        try:
            with open(os.path.join(self.dir, origin + suffix)) as f:
                return f.read()
        except OSError:
            return ""


def history_checks(label, reps, origins, total):
    """The history checker (see the module's comment)."""
    histories = {}
    for o in origins:
        if not os.path.exists(os.path.join(reps.dir, o + ".history")):
            bad("%s: %s wrote its history" % (label, o), reps.log(o).strip()[-300:])
            return
        histories[o] = reps.read(o, ".history").splitlines()
    first = histories[origins[0]]
    check(all(histories[o] == first for o in origins),
          "%s: all %d replicas applied one common order (%d actions)" % (label, len(origins), len(first)),
          ", ".join("%s: %d" % (o, len(histories[o])) for o in origins))
    ids = [json.loads(line)["id"] for line in first]
    seen = {}
    for i in ids:
        seen[i] = seen.get(i, 0) + 1
    twice = [i for i, n in seen.items() if n > 1]
    check(not twice, "%s: no action applied twice" % label, "%d twice, e.g. %s" % (len(twice), twice[:3]))
    acked = []
    for o in origins:
        acked += reps.read(o, ".acked").split()
    lost = [i for i in acked if i not in seen]
    check(not lost and len(acked) == len(set(acked)),
          "%s: every acknowledged action (%d) applied exactly once" % (label, len(acked)),
          "%d lost, e.g. %s" % (len(lost), lost[:3]))
    check(len(first) == total, "%s: the history holds every entry of the stream (%d)" % (label, total),
          "%d in the history" % len(first))
    # A fresh store folding that order.
    path = os.path.join(reps.dir, "common.history")
    with open(path, "w") as f:
        f.write("\n".join(first) + ("\n" if first else ""))
    folded = os.path.join(reps.dir, "folded.json")
    r = subprocess.run([REPLICA, "--fold", path, "--out", folded], capture_output=True, text=True, timeout=60)
    if not check(r.returncode == 0, "%s: the history folds in a fresh store" % label, r.stderr.strip()):
        return
    want = open(folded).read()
    differ = [o for o in origins if reps.read(o, ".json") != want]
    check(not differ, "%s: each replica's state equals the fold of that order" % label,
          "differ: %s; fold %s" % (differ, want.strip()))
    return len(acked), len(first)


# ---- Scenarios ----------------------------------------------------------------


def extra_entries(reps, label, total, acked):
    """Every entry is an acknowledged dispatch or one that answered TS_E_IO
    (no answer within timeout_ms: it may still reach the log, and is then
    applied everywhere; replica.c retries it under a new id)."""
    errors = sum(reps.log(o).count("dispatch failed (TS_E_IO)") for o in "abc")
    failed_lines = [int(line[7:]) for o in "abc" for line in reps.log(o).splitlines() if line.startswith("failed=")]
    refused = sum(failed_lines)
    check(acked <= total <= acked + refused,
          "%s: the stream holds the %d acknowledged entries and at most the %d that answered TS_E_IO (%d)"
          % (label, acked, refused, total - acked), "%d entries" % total)
    state = reps.read("a", ".json").strip()
    check(state.startswith('{"counter":%d,' % total), "%s: counter = the stream's %d entries" % (label, total), state)
    return errors


def converge(base, cluster):
    reps = Replicas(base, "converge")
    for o in "abc":
        reps.start(o, cluster.url(), "conv", 1500, extra=["--latency"])
        if o == "a":
            reps.joined("a")
    time.sleep(0.3)
    start = time.time()
    reps.go()
    if not check(reps.wait_dispatchers(120), "converge: the dispatchers end"):
        reps.kill_all()
        return
    elapsed = time.time() - start
    total = cluster.last_seq("conv")
    codes = reps.finish(total or 0)
    p99 = [line.split("=")[1] for o in "abc" for line in reps.log(o).splitlines() if line.startswith("dispatch_p99_us=")]
    print("  R3 cluster, three replicas x 2 threads: %s entries in %.2f s (%.0f/s); p99 at the origin (us): %s"
          % (total, elapsed, (total or 0) / elapsed, " ".join(p99)), flush=True)
    check(all(c == 0 for c in codes.values()), "converge: the replicas end cleanly", str(codes))
    check(all(reps.acked(o) == 1500 for o in "abc"), "converge: every dispatch acknowledged",
          " ".join(str(reps.acked(o)) for o in "abc"))
    messages, total = total, stream_entries(cluster, "conv", total)
    print("  converge: %d entries in %s messages" % (total, messages), flush=True)
    extra_entries(reps, "converge", total, 4500)
    history_checks("converge", reps, "abc", total)


def batched(base, cluster):
    """Ordered mode with 4 dispatching threads per process: the threads'
    dispatches share append round trips (the status's appends < appended:
    a dispatch waits for the log without holding the store, and the first
    waiting thread appends what all of them queued, after waiting briefly
    for the threads just answered: more than 2.5 dispatches an append), and
    the history checker still finds one common order, each acknowledged
    action once."""
    reps = Replicas(base, "batched")
    for o in "abc":
        reps.start(o, cluster.url(), "batched", 800, threads=4)
        if o == "a":
            reps.joined("a")
    time.sleep(0.3)
    reps.go()
    if not check(reps.wait_dispatchers(120), "batched: the dispatchers end"):
        reps.kill_all()
        return
    total = cluster.last_seq("batched")
    codes = reps.finish(total or 0)
    check(all(c == 0 for c in codes.values()), "batched: the replicas end cleanly", str(codes))
    check(all(reps.acked(o) == 800 for o in "abc"), "batched: every dispatch acknowledged",
          " ".join(str(reps.acked(o)) for o in "abc"))
    shared = {}
    for o in "abc":
        for line in reps.log(o).splitlines():
            m = re.search(r'"appends":(\d+),"appended":(\d+)', line) if line.startswith("status=") else None
            if m:
                shared[o] = (int(m.group(1)), int(m.group(2)))
    print("  batched: (appends, dispatches they carried) per replica: %s" % shared, flush=True)
    check(len(shared) == 3 and all(0 < a < n for a, n in shared.values()),
          "batched: each replica's 4 threads shared append round trips (fewer appends than dispatches)", str(shared))
    # The threads whose appends were just answered dispatch again at once:
    # the next append waits for them (ORDERED_LINGER_US in replicate.c)
    # instead of leaving with the half of the threads that queued meanwhile
    # (about 2 dispatches an append with 4 threads without that wait).
    check(len(shared) == 3 and sum(n for a, n in shared.values()) > 2.5 * sum(a for a, n in shared.values()),
          "batched: an append carries more than 2.5 of the 4 threads' dispatches on average",
          " ".join("%.2f" % (n / a) for a, n in shared.values() if a))
    messages, total = total, stream_entries(cluster, "batched", total)
    print("  batched: %d entries in %s messages" % (total, messages), flush=True)
    check(0 < messages < total, "batched: an append's actions share one message (%d entries in %s messages)"
          % (total, messages))
    extra_entries(reps, "batched", total, 2400)
    history_checks("batched", reps, "abc", total)


def leader_kill(base, cluster):
    reps = Replicas(base, "kill")
    for o in "abc":
        reps.start(o, cluster.url(), "kill", 2000)
        if o == "a":
            reps.joined("a")
    time.sleep(0.3)
    reps.go()
    deadline = time.time() + 60
    while time.time() < deadline and sum(reps.acked(o) for o in "abc") < 1500:
        time.sleep(0.02)
    leader = cluster.leader("kill")
    if not check(leader is not None, "leader kill: the stream has a leader"):
        reps.kill_all()
        return
    before = sum(reps.acked(o) for o in "abc")
    leader.kill()
    killed_at = time.time()
    time.sleep(1.0)
    leader.start()
    print("  leader %s SIGKILLed after >= %d acknowledged dispatches, restarted after 1 s" % (leader.name, before),
          flush=True)
    if not check(reps.wait_dispatchers(120), "leader kill: the dispatchers end"):
        reps.kill_all()
        return
    resumed = time.time() - killed_at
    check(cluster.wait_healthy(90), "leader kill: the restarted server rejoins (healthy)")
    total = cluster.last_seq("kill")
    codes = reps.finish(total or 0)
    errors = sum(reps.log(o).count("dispatch failed (TS_E_IO)") for o in "abc")
    print("  leader kill: %s entries; %d dispatches answered TS_E_IO while the leader was away (retried); the "
          "dispatchers ended %.1f s after the kill" % (total, errors, resumed), flush=True)
    check(all(c == 0 for c in codes.values()), "leader kill: the replicas end cleanly", str(codes))
    check(all(reps.acked(o) == 2000 for o in "abc"), "leader kill: every dispatch acknowledged in the end",
          " ".join(str(reps.acked(o)) for o in "abc"))
    messages, total = total, stream_entries(cluster, "kill", total)
    print("  leader kill: %d entries in %s messages" % (total, messages), flush=True)
    extra_entries(reps, "leader kill", total, 6000)
    counts = history_checks("leader kill", reps, "abc", total)
    if counts:
        print("  leader kill: %d acknowledged, %d entries, 0 lost, 0 applied twice, 0 divergence (if the checks "
              "above passed)" % counts, flush=True)


def stream_texts(server, stream, last):
    """The data of messages 1..last of `stream`, in order, read through
    JetStream's API ($JS.API.STREAM.MSG.GET) by a bare NATS protocol client
    (no NATS library for Python here). None for a message it did not get."""
    import base64
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    buf = b""

    def line():
        nonlocal buf
        while b"\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            buf += chunk
        head, buf = buf.split(b"\r\n", 1)
        return head.decode()

    def body(n):
        nonlocal buf
        while len(buf) < n + 2:
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            buf += chunk
        data, buf = buf[:n], buf[n + 2:]
        return data

    line()  # INFO
    out = [b"CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true}\r\nSUB _INBOX.dump 1\r\n"]
    for seq in range(1, last + 1):
        req = json.dumps({"seq": seq}).encode()
        out.append(b"PUB $JS.API.STREAM.MSG.GET.%s _INBOX.dump %d\r\n%s\r\n" % (stream.encode(), len(req), req))
    sock.sendall(b"".join(out))
    texts = [None] * last
    got = 0
    while got < last:
        head = line()
        if head.startswith("PING"):
            sock.sendall(b"PONG\r\n")
            continue
        if head.startswith("MSG "):
            reply = json.loads(body(int(head.split()[-1])))
        elif head.startswith("HMSG "):
            parts = head.split()
            raw = body(int(parts[-1]))
            reply = json.loads(raw[int(parts[-2]):])
        else:
            continue
        got += 1
        message = reply.get("message")
        if message and 1 <= message.get("seq", 0) <= last:
            texts[message["seq"] - 1] = base64.b64decode(message.get("data", "")).decode()
    sock.close()
    return texts


def stream_entries(cluster, stream, last):
    """The entries (actions) in messages 1..last of `stream`: a message may
    carry several, separated by NUL bytes (entry.h, "Ts-Parts"); 0 when the
    stream could not be read back."""
    if not last:
        return 0
    try:
        texts = stream_texts(cluster.leader(stream) or cluster.servers[0], stream, last)
    except (OSError, ValueError):
        return 0
    return sum(t.count("\0") + 1 for t in texts if t is not None)


HOLD_WINDOW = 100000  # replicate.c's: a held entry is applied at the latest this many entries after it


def applied_order(texts):
    """The order in which every replica applies the log's `texts` ((message
    sequence, entry text) pairs: a message of several actions gives one
    pair each, with its sequence)
    (replicate.c, "Per-origin order"): an entry of an optimistic origin
    ("#pORIGIN:N") once every number of that origin below N is applied or
    abandoned (held back until then; one below that is late, never
    applied); when a held entry's window ends (HOLD_WINDOW entries after
    it), its origin's numbers below the lowest it holds are abandoned and
    its held entries go on in number order; every other entry where it is.
    Returns (texts in that order, entries held, late, abandoned)."""
    nxt, held, out, below = {}, [], [], {}
    held_total = late = abandoned = 0

    def applied(text):
        """An entry applied; an abandon marker (replicate.c's hold_mark) of
        an optimistic origin abandons the numbers below its "below"."""
        out.append(text)
        body = text.split(" ", 1)[1] if text.startswith("#p") else ""
        if body.startswith('{"type":"@@replicate/abandon"'):
            payload = json.loads(body)["payload"]
            below[payload["origin"]] = max(below.get(payload["origin"], 0), payload["below"])

    for seq, t in texts:
        origin, n = None, 0
        if t.startswith("#p") and " " in t:
            origin, _, number = t[1:].split(" ", 1)[0].rpartition(":")
            n = int(number)
        if origin is None:
            out.append(t)
        else:
            expect = nxt.setdefault(origin, 1)
            if n < expect or any(h[0] == origin and h[1] == n for h in held):
                late += 1
            elif n > expect:
                held.append((origin, n, seq, t))
                held_total += 1
            else:
                nxt[origin] = n + 1
                applied(t)
        i = 0
        while i < len(held):
            o, n, landed, text = held[i]
            if n != nxt[o]:
                if seq < landed + HOLD_WINDOW and n > below.get(o, 0):
                    i += 1
                    continue
                # The window ended: the origin's numbers below the lowest it holds are abandoned.
                i = min((j for j in range(len(held)) if held[j][0] == o), key=lambda j: held[j][1])
                o, n, landed, text = held[i]
                abandoned += n - nxt[o]
            del held[i]
            nxt[o] = n + 1
            applied(text)
            i = 0
    return out, held_total, late, abandoned


def stream_checks(label, reps, cluster, stream, origins, total, stock=1000000000, acked=None, in_order=True,
                  whole=None):
    """The history checker for optimistic mode (replica.c's --history also
    sees pending actions and their replays there): the stream's `total`
    entries read back by stream_texts(), each "#ORIGIN:N ACTION", no
    ORIGIN:N and no action twice, each origin's numbers 1, 2, 3 ... without
    a gap, in order (unless not `in_order`: a known limit of JetStream, see
    opt_leader_kill), every action of `acked` ({origin: dispatches that
    returned TS_OK}) in the stream, and each replica of `origins` in the
    state of a fresh store folding the stream in the order every replica
    applies it (applied_order: each origin's entries in their origin's
    order, whatever the stream's), whose each origin's numbers must go up,
    and each replica of `whole` (those that read the stream from its first
    entry, not from a snapshot: `origins` by default) holding back as many
    entries as that order does.
    Returns {"payloads": the actions' payloads in the stream's order,
    "fold": the fold's output, "lost": acknowledged but not in the stream,
    "twice", "divergence": replicas whose state differs, "held": entries
    held back}, or None."""
    leader = cluster.leader(stream) or cluster.servers[0]
    try:
        texts = stream_texts(leader, stream, total)
    except (OSError, ValueError) as e:
        bad("%s: the stream read back" % label, str(e))
        return None
    check(None not in texts and len(texts) == total, "%s: the stream's %d messages read back" % (label, total),
          "%d missing" % texts.count(None))
    # A message of several actions (Ts-Parts: entry.h) holds them separated by NUL bytes.
    entries = [(seq, part) for seq, t in enumerate(texts, 1) if t is not None for part in t.split("\0")]
    bundled = sum(1 for t in texts if t is not None and "\0" in t)
    texts = [t for _, t in entries]
    tags = [t.split(" ", 1)[0] for t in texts if t.startswith("#")]
    # An action resent in a message cut otherwise (an append that failed and
    # was sent again) is in the stream twice, under one ORIGIN:N, with the
    # same text; every replica skips the copy (late). Never two texts for one.
    first_text = {}
    copies = 0
    for tag, t in zip(tags, texts):
        if tag in first_text:
            copies += 1
        first_text.setdefault(tag, t)
    check(len(tags) == len(texts) and all(first_text[tag] == t for tag, t in zip(tags, texts)),
          "%s: every entry carries #ORIGIN:N, none with two actions (%d entries in %d messages, %d of them of "
          "several actions; %d copies of an earlier entry)" % (label, len(tags), total, bundled, copies),
          "%d tags, %d distinct" % (len(tags), len(set(tags))))
    numbers = {}
    seen_tags = set()
    for t in tags:
        if t in seen_tags:
            continue
        seen_tags.add(t)
        o, n = t[1:].rsplit(":", 1)
        numbers.setdefault(o, []).append(int(n))
    with open(os.path.join(reps.dir, "log.txt"), "w") as f:
        f.write("\n".join(texts) + ("\n" if texts else ""))
    disorder = {o: next(("%d then %d (at %d)" % (ns[i - 1], ns[i], i + 1) for i in range(len(ns))
                         if ns[i] != i + 1), None) for o, ns in numbers.items()}
    if in_order:
        check(all(ns == list(range(1, len(ns) + 1)) for ns in numbers.values()),
              "%s: each replica's entries in the stream numbered 1, 2, 3 ... in order (%d origins)"
              % (label, len(numbers)), "first out of order: %s" % {o: d for o, d in disorder.items() if d})
    else:
        check(all(sorted(ns) == list(range(1, len(ns) + 1)) for ns in numbers.values()),
              "%s: each replica's entries in the stream numbered 1, 2, 3 ... without a gap (%d origins)"
              % (label, len(numbers)))
        late = sum(1 for ns in numbers.values() for i in range(1, len(ns)) if ns[i] < max(ns[:i]))
        print("  %s: %d entries in the stream after a later one of their origin (first: %s)"
              % (label, late, {o: d for o, d in disorder.items() if d}), flush=True)
    order, held_total, late, abandoned = applied_order(entries)
    applied_numbers = {}
    for t in order:
        if t.startswith("#"):
            o, n = t[1:].split(" ", 1)[0].rsplit(":", 1)
            applied_numbers.setdefault(o, []).append(int(n))
    check(all(ns == sorted(ns) for ns in applied_numbers.values()),
          "%s: the order every replica applies keeps each origin's numbers increasing (%d held back until their "
          "origin's earlier ones came, %d late, %d abandoned)" % (label, held_total, late, abandoned))
    statuses = {o: [json.loads(l[7:]) for l in reps.log(o).splitlines() if l.startswith("status={")]
                for o in (origins if whole is None else whole)}
    counted = {o: st[-1].get("held_total") if st else None for o, st in statuses.items()}
    check(all(v == held_total for v in counted.values()),
          "%s: each replica held back the entries the rule holds (status held_total %d)" % (label, held_total),
          "held_total %s" % counted)
    # Each action applied once: the copies of resends are late, never applied.
    payloads = [json.loads(t.split(" ", 1)[1] if t.startswith("#") else t)["payload"] for t in order]
    twice = len(payloads) - len(set(payloads))
    check(not twice, "%s: no action applied twice (%d copies in the stream skipped as late)" % (label, copies),
          "%d twice" % twice)
    lost = 0
    if acked is not None:
        held = {o: sum(1 for p in payloads if p.startswith(o)) for o in acked}
        lost = sum(max(0, acked[o] - held[o]) for o in acked)
        check(held == acked, "%s: the stream holds every acknowledged action (%d)" % (label, sum(acked.values())),
              "acknowledged %s, in the stream %s" % (acked, held))
    path = os.path.join(reps.dir, "actions.txt")
    applied = [t.split(" ", 1)[1] if t.startswith("#") else t for t in order]
    with open(path, "w") as f:
        f.write("\n".join(applied) + ("\n" if applied else ""))
    folded = os.path.join(reps.dir, "folded.json")
    r = subprocess.run([REPLICA, "--fold", path, "--stock", str(stock), "--out", folded], capture_output=True,
                       text=True, timeout=60)
    if not check(r.returncode == 0, "%s: the stream folds in a fresh store" % label, r.stderr.strip()):
        return None
    want = open(folded).read()
    differ = [o for o in origins if reps.read(o, ".json") != want]
    check(not differ, "%s: 0 divergence: each replica's state (its order hash chain included) equals the fold of "
          "the stream in that order (%d entries)" % (label, len(applied)), "differ: %s; fold %s; %s" % (differ, want.strip(),
                                                               [reps.read(o, ".json").strip() for o in differ]))
    return {"payloads": payloads, "fold": r.stdout, "lost": lost, "twice": twice, "divergence": len(differ),
            "held": held_total, "bundled": bundled, "entries": len(texts)}


def optimistic(base, cluster):
    """Optimistic mode on the R3 stream: three processes at once, then the
    stream folded by a fresh store (see the module's comment, 7)."""
    reps = Replicas(base, "optimistic")
    count, stock = 1500, 300
    for o in "abc":
        reps.start(o, cluster.url(), "opt", count, history=False,
                   extra=["--mode", "optimistic", "--take-every", "7", "--stock", str(stock), "--status-ms", "200"])
        if o == "a":
            reps.joined("a")
    time.sleep(0.3)
    reps.go()
    if not check(reps.wait_dispatchers(120), "optimistic: the dispatchers end"):
        reps.kill_all()
        return
    # Until every replica's pending list is empty (replica.c prints confirmed_s then).
    deadline = time.time() + 90
    while time.time() < deadline and not all("confirmed_s=" in reps.log(o) for o in "abc"):
        time.sleep(0.1)
    total = None
    for _ in range(50):  # the stream's leader, once quiet
        total = cluster.last_seq("opt")
        if total is not None:
            break
        time.sleep(0.1)
    codes = reps.finish(total or 0)
    check(all(c == 0 for c in codes.values()), "optimistic: the replicas end cleanly", str(codes))
    acked = {o: reps.acked(o) for o in "abc"}
    refused = {o: sum(int(l[8:]) for l in reps.log(o).splitlines() if l.startswith("refused=")) for o in "abc"}
    check(all(acked[o] + refused[o] == count for o in "abc"),
          "optimistic: every dispatch answered at once (TS_OK, or a take refused locally)", str((acked, refused)))
    result = stream_checks("optimistic", reps, cluster, "opt", "abc", total or 0, stock, acked)
    if result is not None:
        # The sender appends what is pending in one go, several actions a
        # message (entry.h): the servers' work is per message.
        check(result["bundled"] > 0 and total < result["entries"],
              "optimistic: appends carry several actions a message (%d entries in %d messages, %d of several)"
              % (result["entries"], total or 0, result["bundled"]))
    if result is None:
        return
    fold_refused = {o: int(l.split("=")[1]) for l in result["fold"].splitlines() for o in "abc"
                    if l.startswith("refused_%s=" % o)}
    dropped = {o: [int(l[8:]) for l in reps.log(o).splitlines() if l.startswith("dropped=")] for o in "abc"}
    check(all(dropped[o] and dropped[o][-1] == fold_refused.get(o) for o in "abc"),
          "optimistic: each replica's drops (@@replicate/dropped) = the takes the fold refuses",
          "dropped %s, fold %s" % ({o: dropped[o][-1:] for o in "abc"}, fold_refused))


def run_program(label, args, timeout=180):
    """A C test program; its "N passed, M failed" added to ours."""
    global passed, failed
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        out, code = r.stdout + r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, code = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), -1
        out += "\n(no end within %d s)" % timeout
    n = None
    for line in out.splitlines():
        if line.endswith(" failed") and " passed, " in line:
            n = line
        elif line.strip():
            print("  %s: %s" % (label, line), flush=True)
    if n is None:
        bad("%s: no summary (exit status %s)" % (label, code))
        return
    p, f = n.split(" passed, ")
    passed += int(p)
    failed += int(f.split()[0])
    if code != 0 and int(f.split()[0]) == 0:
        bad("%s: exit status %s" % (label, code))
    elif code == 0:
        print("ok: %s: %s checks" % (label, p), flush=True)


def quorum(base, cluster):
    me = os.path.abspath(__file__)
    stop = "%s %s --helper stop-two %s faults" % (sys.executable, me, base)
    start = "%s %s --helper start-all %s faults" % (sys.executable, me, base)
    run_program("faults (two of three servers down)", [FAULTS, PLUGIN, cluster.url(), stop, start, ',"replicas":3'])
    try:
        stopped = open(os.path.join(base, "stopped")).read().split()
        print("  quorum: stopped %s (the stream's leader) and %s, then restarted them" % tuple(stopped), flush=True)
    except (OSError, TypeError):
        pass


def one_replica(url, stream, log, extra=(), count=10, timeout_ms=3000):
    args = [REPLICA, "--plugin", PLUGIN, "--url", url, "--stream", stream, "--origin", "a", "--count", str(count),
            "--threads", "1", "--timeout-ms", str(timeout_ms), "--extra", "".join(extra)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    with open(log, "w") as f:
        f.write(r.stdout + r.stderr)
    return r.stdout + r.stderr


def tls(base):
    certs = os.path.join(base, "certs")
    subprocess.run([os.path.join(ROOT, "Tests", "replicate", "certs.sh"), certs], check=True, timeout=60)
    c = lambda name: os.path.join(certs, name)
    server = Server(base, "tls", extra="tls { cert_file: %s, key_file: %s, ca_file: %s, verify: true, timeout: 2 }"
                    % (json.dumps(c("server.pem")), json.dumps(c("server.key")), json.dumps(c("ca.pem"))))
    server.write_conf()
    server.start()
    plain = Server(base, "plain")
    plain.write_conf()
    plain.start()
    if not check(wait_healthy([server, plain], 20), "tls: the servers start"):
        return [server, plain]
    R1 = ',"replicas":1'
    files = lambda ca, cert=True: (R1, ',"tls_ca":%s' % json.dumps(c(ca)),
                                   ',"tls_cert":%s,"tls_key":%s' % (json.dumps(c("client.pem")),
                                                                     json.dumps(c("client.key"))) if cert else "")
    d = os.path.join(base, "tlslogs")
    os.makedirs(d, exist_ok=True)
    out = one_replica(server.url("tls"), "t1", os.path.join(d, "right.log"), files("ca.pem"))
    check("acked=10\n" in out, "tls: the right CA and client certificate: loads and dispatches", out.strip()[-300:])
    out = one_replica(server.url("tls"), "t1", os.path.join(d, "other.log"), files("other-ca.pem"))
    check("cannot load" in out and "TLS" in out and "certificate" in out,
          "tls: another CA: the load is refused (the server's certificate)", out.strip()[-300:])
    out = one_replica(server.url("tls"), "t1", os.path.join(d, "nocert.log"), files("ca.pem", cert=False))
    check("cannot load" in out and "cannot connect to tls://" in out,
          "tls: no client certificate (the server verifies clients): refused", out.strip()[-300:])
    out = one_replica(server.url("nats"), "t1", os.path.join(d, "plain.log"), (R1,))
    check("cannot load" in out and "requires TLS" in out, "tls: plain text to the TLS port: refused, use tls://",
          out.strip()[-300:])
    out = one_replica(plain.url("tls"), "t1", os.path.join(d, "noTLS.log"), files("ca.pem"), timeout_ms=1500)
    check("cannot load" in out and "cannot connect to tls://" in out, "tls: TLS to a plain-text server: refused",
          out.strip()[-300:])
    # Files the loader would not trust.
    shutil.copy(c("ca.pem"), c("open-ca.pem"))
    os.chmod(c("open-ca.pem"), 0o666)
    out = one_replica(server.url("tls"), "t1", os.path.join(d, "openca.log"), files("open-ca.pem"))
    check("can be written by other users" in out and "chmod go-w" in out,
          "tls: a CA file that others can write: refused, and the message says how to fix it", out.strip()[-300:])
    os.chmod(c("client.key"), 0o644)
    out = one_replica(server.url("tls"), "t1", os.path.join(d, "openkey.log"), files("ca.pem"))
    check("can be read by other users" in out, "tls: a private key that others can read: refused",
          out.strip()[-300:])
    os.chmod(c("client.key"), 0o600)
    return [server, plain]


def credentials(base):
    user = Server(base, "auth", extra='authorization { users: [ { user: "app", password: "pw-s3cret" } ] }')
    user.write_conf()
    user.start()
    token = Server(base, "token", extra='authorization { token: "tok-s3cret" }')
    token.write_conf()
    token.start()
    check(wait_healthy([user, token], 20), "credentials: the servers start")
    d = os.path.join(base, "authlogs")
    os.makedirs(d, exist_ok=True)
    R1 = (',"replicas":1',)
    out = one_replica("nats://app:pw-s3cret@127.0.0.1:%d" % user.port, "c1", os.path.join(d, "right.log"), R1)
    check("acked=10\n" in out, "credentials: the right user and password load and dispatch", out.strip()[-300:])
    out = one_replica("nats://app:wrong-pw-s3cret@127.0.0.1:%d" % user.port, "c1", os.path.join(d, "wrong.log"), R1)
    check("cannot load" in out and "refused the credentials" in out, "credentials: a wrong password is refused",
          out.strip()[-300:])
    out = one_replica("nats://127.0.0.1:%d" % user.port, "c1", os.path.join(d, "none.log"), R1)
    check("cannot load" in out and "refused the credentials" in out, "credentials: none is refused",
          out.strip()[-300:])
    out = one_replica("nats://tok-s3cret@127.0.0.1:%d" % token.port, "c2", os.path.join(d, "token.log"), R1)
    check("acked=10\n" in out, "credentials: the right token loads and dispatches", out.strip()[-300:])
    out = one_replica("nats://wrong-tok-s3cret@127.0.0.1:%d" % token.port, "c2", os.path.join(d, "badtoken.log"), R1)
    check("cannot load" in out and "refused the credentials" in out, "credentials: a wrong token is refused",
          out.strip()[-300:])
    shown = [n for n in os.listdir(d) if "s3cret" in open(os.path.join(d, n)).read()]
    check(not shown, "credentials: no message shows a password or token", str(shown))
    return [user, token]


def tamper(base):
    server = Server(base, "tamper")
    server.write_conf()
    server.start()
    if check(wait_healthy([server], 20), "tamper: the server starts"):
        run_program("tamper", [TAMPER, PLUGIN, server.url()])
    # A server whose max_payload (64 KiB) is below a message of several
    # actions' 256 KiB: the appends cut their messages to it.
    small = Server(base, "small", extra="max_payload: 65536")
    small.write_conf()
    small.start()
    if check(wait_healthy([small], 20), "tamper: a server with max_payload 64 KiB starts"):
        run_program("small max_payload", [TAMPER, PLUGIN, small.url(), "payload"])
    return [server, small]


def servers_cpu(cluster):
    """The CPU time (s) the cluster's servers have used, from /proc (0 where
    it cannot be read)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for s in cluster.servers:
        try:
            with open("/proc/%d/stat" % s.pid()) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, TypeError, ValueError, IndexError):
            pass
    return total


def bench(base, cluster, scale):
    def result(name, value, unit):
        print("RESULT\t%s\t%s\t%s" % (name, value, unit), flush=True)

    figures = {}
    counts = [int(t) for t in os.environ.get("TS_BENCH_THREADS", "1 2 4 8").split()]
    for threads in counts:
        label = "" if threads == 1 else str(threads)
        reps = Replicas(base, "bench%d" % threads)
        n = max(100, int(6000 * scale))
        stream = "bench%d" % threads
        for o in "abc":
            reps.start(o, cluster.url(), stream, n, threads=threads, extra=["--latency"], history=False)
            if o == "a":
                reps.joined("a")
        time.sleep(0.5)
        servers_before = servers_cpu(cluster)
        start = time.time()
        reps.go()
        reps.wait_dispatchers(300)
        elapsed = time.time() - start
        servers_after = servers_cpu(cluster)
        total = cluster.last_seq(stream) or 0  # messages: an append's actions may share one (entry.h)
        dispatches = sum(reps.acked(o) for o in "abc")  # acknowledged (TS_OK)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        reps.finish(total)
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        # What each dispatch cost the machine: the replica processes' CPU
        # time and context switches (all their life: joining, dispatching,
        # catching up) and the servers' CPU time while they dispatched.
        if total:
            print("INFO\treplicate: REP-JS %d thread(s) each: per dispatch, the replicas used %.0f us of CPU and %.1f "
                  "context switches (%.1f involuntary), the servers %.0f us of CPU (load average %.1f); %d messages"
                  % (threads, (used.ru_utime + used.ru_stime - children.ru_utime - children.ru_stime) * 1e6 / dispatches,
                     (used.ru_nvcsw + used.ru_nivcsw - children.ru_nvcsw - children.ru_nivcsw) / dispatches,
                     (used.ru_nivcsw - children.ru_nivcsw) / dispatches,
                     (servers_after - servers_before) * 1e6 / dispatches, os.getloadavg()[0], total), flush=True)
        p50 = max(float(line.split("=")[1]) for o in "abc" for line in reps.log(o).splitlines()
                  if line.startswith("dispatch_p50_us="))
        p99 = max(float(line.split("=")[1]) for o in "abc" for line in reps.log(o).splitlines()
                  if line.startswith("dispatch_p99_us="))
        figures[threads] = (dispatches / elapsed, p50, p99)
        appends = appended = 0
        for o in "abc":
            for line in reps.log(o).splitlines():
                if line.startswith("status="):
                    m = re.search(r'"appends":(\d+),"appended":(\d+)', line)
                    if m:
                        appends += int(m.group(1))
                        appended += int(m.group(2))
        if appends:
            print("INFO\treplicate: REP-JS %d thread(s) each: %d dispatches in %d appends (%.2f a batch)"
                  % (threads, appended, appends, appended / appends), flush=True)
        result("REP-JS-rate" + label, "%.0f" % (dispatches / elapsed), "dispatches/s")
        if threads == 1:
            result("REP-JS-p50", "%.0f" % p50, "us")
            result("REP-JS-p99", "%.0f" % p99, "us")
        else:
            result("REP-JS-p99" + label, "%.0f" % p99, "us")
    print("INFO\treplicate: NATS JetStream, a three-server cluster on loopback, an R3 stream (file storage), three "
          "replica processes in ordered mode (%s dispatching threads each); one sample per figure"
          % ", ".join(map(str, counts)), flush=True)
    # Optimistic mode: one process dispatching unpaced, a second replica
    # following; the divergence by the history checker (both replicas
    # against a fresh store folding the stream).
    count = max(2000, int(200000 * scale))
    got = opt_figures(base, cluster, "REP-JS-opt", "benchopt", count, fold=True)
    if got is None:
        print("INFO\treplicate: REP-JS-opt did not complete (see the FAIL lines above)", flush=True)
    else:
        result("REP-JS-opt-rate", "%.0f" % got["rate"], "dispatches/s")
        result("REP-JS-opt-p50", "%.1f" % got["p50"], "us")
        result("REP-JS-opt-p99", "%.1f" % got["p99"], "us")
        if got["divergence"] is not None:
            result("REP-JS-opt-diverge", "%d" % got["divergence"], "replicas")
        print("INFO\treplicate: REP-JS-opt: one process, %d optimistic dispatches unpaced on the R3 stream, a second "
              "replica following; rate = the dispatches / the time until the stream confirmed the last" % count,
              flush=True)


# ---- Optimistic mode under faults (the Redis suite's: Tests/replicate/run.sh, 8) ----


def start_proxy(base, target_port, rtt_ms):
    """Tests/replicate/delay_proxy.py between a replica and a server: (its
    process, its port), or (None, None) when it did not start."""
    port = free_port()
    out = os.path.join(base, "proxy-%d.out" % port)
    with open(out, "wb") as f:
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests", "replicate", "delay_proxy.py"), str(port),
                                 str(target_port), str(rtt_ms)], stdout=f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline and proc.poll() is None:
        if "ready" in open(out).read():
            return proc, port
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    return None, None


def stop_proxy(proc):
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def last_values(reps, origin, key):
    return [float(line.split("=", 1)[1]) for line in reps.log(origin).splitlines() if line.startswith(key + "=")]


def most_pending(reps, origins):
    """The most actions pending in one replica that its "pending=N
    confirmed=N" lines (each 1,000 dispatches) tell."""
    return max([int(line.split()[0][8:]) for o in origins for line in reps.log(o).splitlines()
                if line.startswith("pending=")] or [0])


def opt_settle(label, reps, cluster, stream, origins, seconds=90):
    """Once each replica of `origins` has dispatched everything and the log
    confirmed it (replica.c prints confirmed_s), tells them the stream's
    total and waits for their end: the total, or None."""
    if not check(reps.wait_dispatchers(seconds), "%s: the dispatchers end" % label):
        reps.kill_all()
        return None
    # (replica.c prints rate= with failed= when it dispatched, and then
    # confirmed_s= once the log confirmed them all.)
    deadline = time.time() + seconds
    while time.time() < deadline and not all("confirmed_s=" in reps.log(o) or "rate=" not in reps.log(o)
                                             for o in origins):
        time.sleep(0.05)
    # The stream's last entry once every server tells the same (a server
    # restarted a moment ago may still take itself for the leader, behind).
    total, deadline = None, time.time() + 30
    while time.time() < deadline:
        seqs = [d["state"]["last_seq"] for _, d in cluster.stream_details(stream)]
        total = max(seqs) if seqs else None
        if len(seqs) == len(cluster.servers) and len(set(seqs)) == 1:
            break
        time.sleep(0.1)
    codes = reps.finish(total or 0)
    check(all(c == 0 for c in codes.values()), "%s: the replicas end cleanly" % label, str(codes))
    check(all(reps.log(o).count('"pending":0,') >= 1 for o in origins),
          "%s: nothing pending once quiet (the final status)" % label,
          " ".join(reps.log(o).strip()[-200:] for o in origins))
    return total


def opt_leader_kill(base, cluster):
    """The stream leader's server SIGKILLed while three optimistic replicas
    dispatch (2,000/s each), restarted 0.5 s later: dispatches go on at once
    (pending rises while no leader takes appends), then drain; 0
    acknowledged lost, 0 twice, 0 divergence."""
    label, count = "optimistic leader kill", 4000
    reps = Replicas(base, "optkill")
    for o in "abc":
        reps.start(o, cluster.url(), "optkill", count, threads=1, history=False,
                   extra=["--mode", "optimistic", "--rate", "2000"])
        if o == "a":
            reps.joined("a")
    reps.go()
    deadline = time.time() + 30
    while time.time() < deadline and reps.acked("a") < 1000:
        time.sleep(0.01)
    leader = cluster.leader("optkill")
    if not check(leader is not None, "%s: the stream has a leader" % label):
        reps.kill_all()
        return
    before = sum(reps.acked(o) for o in "abc")
    leader.kill()
    time.sleep(0.5)
    leader.start()
    total = opt_settle(label, reps, cluster, "optkill", "abc")
    check(cluster.wait_healthy(60), "%s: the restarted server rejoins (healthy)" % label)
    if total is None:
        return
    acked = {o: reps.acked(o) for o in "abc"}
    failed = sum(int(v) for o in "abc" for v in last_values(reps, o, "failed"))
    most = most_pending(reps, "abc")
    check(failed == 0 and all(n == count for n in acked.values()),
          "%s: every dispatch returned TS_OK at once, none failed" % label, "%s, %d failed" % (acked, failed))
    check(most >= 100, "%s: pending rose while the stream had no leader (%d)" % (label, most))
    # The stream may hold an origin's entries out of order: an append the
    # stream refused (no leader yet) while a later one of the same batch was
    # stored lands after it when sent again (nats_append_many; JetStream 2.9
    # has no per-origin precondition for pipelined appends). Every replica
    # holds such an entry back until its origin's earlier ones came
    # (replicate.c, "Per-origin order"): stream_checks folds that order.
    result = stream_checks(label, reps, cluster, "optkill", "abc", total, acked=acked, in_order=False)
    if result:
        print("  %s: %s SIGKILLed after >= %d dispatches, restarted 0.5 s later; up to %d pending in one replica, "
              "then drained; %d acknowledged, %d entries in %d messages: %d lost, %d twice, %d diverging; %d held back "
              "to keep their origin's order" % (label, leader.name, before, most, sum(acked.values()), result["entries"],
                                                total, result["lost"],
                                        result["twice"], result["divergence"], result["held"]), flush=True)


def opt_replica_kill(base, cluster):
    """A replica (b) SIGKILLed with actions pending: its link to the log goes
    through a proxy adding 100 ms to every round trip, so about 200 wait
    when it dies. What the log confirmed to b survives; the log holds a
    prefix b1..bN of b's actions, each whole (the fold reads every entry);
    the rest, pending only in b, is lost. Another replica (d) joins in its
    place; a, c, d agree with the fold of the stream."""
    label, count = "optimistic replica kill", 5000
    proxy, port = start_proxy(base, cluster.servers[0].port, 100)
    if not check(proxy is not None, "%s: the 100 ms proxy starts" % label):
        return
    reps = Replicas(base, "optreplica")
    try:
        for o in "abc":
            url = "nats://127.0.0.1:%d" % port if o == "b" else cluster.url()
            reps.start(o, url, "optrep", count, threads=1, history=False,
                       extra=["--mode", "optimistic", "--rate", "2000"])
            if o == "a":
                reps.joined("a")
        reps.go()
        deadline = time.time() + 30
        # Killed once b has reported actions pending (at its 2,000th
        # acknowledgment or a later thousand): a starved b may have had
        # none pending at one report, which would test nothing.
        def b_last_pending():
            pend = [line.split() for line in reps.log("b").splitlines() if line.startswith("pending=")]
            return int(pend[-1][0][8:]) if pend else 0
        while time.time() < deadline and (reps.acked("b") < 2000 or b_last_pending() == 0):
            time.sleep(0.01)
        b = reps.procs.pop("b")
        b.kill()
        b.wait()
        b_acked = reps.acked("b")
        pend = [line.split() for line in reps.log("b").splitlines() if line.startswith("pending=")]
        b_pending, b_confirmed = (int(pend[-1][0][8:]), int(pend[-1][1][10:])) if pend else (0, 0)
        reps.start("d", cluster.url(), "optrep", 1000, threads=1, history=False, extra=["--mode", "optimistic"])
        total = opt_settle(label, reps, cluster, "optrep", "acd")
    finally:
        stop_proxy(proxy)
    if total is None:
        return
    check(b_pending > 0, "%s: b had actions pending when killed (%d at its last report, after %d acknowledged)"
          % (label, b_pending, b_acked))
    acked = {o: reps.acked(o) for o in "acd"}
    result = stream_checks(label, reps, cluster, "optrep", "acd", total, acked=acked, whole="ac")
    if result is None:
        return
    mine = sorted(int(p[1:]) for p in result["payloads"] if p.startswith("b"))
    check(mine == list(range(1, len(mine) + 1)), "%s: b's actions in the stream are its first %d, none missing between"
          % (label, len(mine)), str(mine[:5]))
    check(len(mine) >= b_confirmed, "%s: what the log confirmed to b survives (%d >= %d)" % (label, len(mine), b_confirmed))
    print("  %s: b SIGKILLed after >= %d dispatches (%d pending, %d confirmed at its last report); the stream holds "
          "b1..b%d, the rest (pending only in b) lost; a, c, d: %d acknowledged, %d entries in %d messages: %d lost, "
          "%d twice, %d diverging" % (label, b_acked, b_pending, b_confirmed, len(mine), sum(acked.values()),
                                      result["entries"], total, result["lost"], result["twice"], result["divergence"]),
          flush=True)


def opt_figures(base, cluster, label, stream, count, fold=False):
    """One process dispatches `count` optimistic actions unpaced straight to
    the cluster (local dispatch p50/p99; replicated throughput: the actions
    / the time until the log confirmed the last), a second replica follows.
    Returns {"p50", "p99", "rate", "divergence"} or None; with `fold`, the
    divergence is the history checker's (stream_checks: both replicas
    against a fresh store folding the stream), else the follower's state
    against the dispatcher's."""
    reps = Replicas(base, stream)
    reps.start("a", cluster.url(), stream, count, threads=1, history=False,
               extra=["--mode", "optimistic", "--latency"])
    reps.joined("a")
    reps.start("c", cluster.url(), stream, 0, history=False, extra=["--mode", "optimistic"])
    reps.go()
    total = opt_settle(label, reps, cluster, stream, "ac")
    if total is None:
        return None
    p50, p99 = last_values(reps, "a", "dispatch_p50_us"), last_values(reps, "a", "dispatch_p99_us")
    confirmed = last_values(reps, "a", "confirmed_s")
    # The stream's messages may each carry several actions (entry.h): the
    # count is the dispatcher's, confirmed by the log.
    statuses = [json.loads(line[7:]) for line in reps.log("a").splitlines() if line.startswith("status={")]
    done = statuses[-1].get("confirmed") if statuses else None
    if not check(p50 and p99 and confirmed and done == count and total,
                 "%s: %d dispatches, all confirmed by the stream (in %s messages)" % (label, count, total),
                 "%s confirmed" % done):
        return None
    print("  %s: one process, %d optimistic dispatches: local p50 %.1f us, p99 %.1f us; replicated %.0f "
          "dispatches/s (all confirmed by the R3 stream after %.2f s)"
          % (label, count, p50[-1], p99[-1], count / confirmed[-1], confirmed[-1]), flush=True)
    same = check(reps.read("a", ".json") == reps.read("c", ".json") and reps.read("a", ".json").startswith(
        '{"counter":%d,' % count), "%s: the follower's state equals the dispatcher's" % label,
                 reps.read("c", ".json").strip())
    divergence = 0 if same else 1
    if fold:
        result = stream_checks(label, reps, cluster, stream, "ac", total, acked={"a": count})
        divergence = result["divergence"] if result else None
    return {"p50": p50[-1], "p99": p99[-1], "rate": count / confirmed[-1], "divergence": divergence}


def opt_proxy(base, cluster):
    """The figures, then 100 ms added to every round trip. One process
    dispatches 20,000 optimistic actions unpaced straight to the cluster
    (local dispatch p50/p99; replicated throughput: the actions / the time
    until the log confirmed the last), a second replica follows; then one
    process behind delay_proxy.py (100 ms round trips) dispatches 3,000 at
    3,000/s (local p50/p99: no dispatch waits for the network, so each is
    far below one round trip), and ordered mode through the same proxy (each
    dispatch at least one round trip)."""
    opt_figures(base, cluster, "optimistic figures", "optrate", 20000)
    label = "+100 ms"
    proxy, port = start_proxy(base, cluster.servers[1].port, 100)
    if not check(proxy is not None, "%s: the proxy starts" % label):
        return
    try:
        reps = Replicas(base, "optproxy")
        reps.start("a", "nats://127.0.0.1:%d" % port, "optproxy", 3000, threads=1, history=False,
                   extra=["--mode", "optimistic", "--rate", "3000", "--latency"])
        reps.joined("a")
        reps.start("c", cluster.url(), "optproxy", 0, history=False, extra=["--mode", "optimistic"])
        reps.go()
        total = opt_settle(label, reps, cluster, "optproxy", "ac")
        r = subprocess.run([REPLICA, "--plugin", PLUGIN, "--url", "nats://127.0.0.1:%d" % port, "--stream",
                            "ordproxy", "--origin", "a", "--count", "10", "--threads", "1", "--latency"],
                           capture_output=True, text=True, timeout=60)
        ordered = r.stdout + r.stderr
    finally:
        stop_proxy(proxy)
    if total is None:
        return
    p50, p99 = last_values(reps, "a", "dispatch_p50_us"), last_values(reps, "a", "dispatch_p99_us")
    confirmed = last_values(reps, "a", "confirmed_s")
    o50 = [float(l.split("=")[1]) for l in ordered.splitlines() if l.startswith("dispatch_p50_us=")]
    o99 = [float(l.split("=")[1]) for l in ordered.splitlines() if l.startswith("dispatch_p99_us=")]
    # (The stream's messages may each carry several actions: entry.h.)
    check(stream_entries(cluster, "optproxy", total) == 3000 and reps.read("a", ".json") == reps.read("c", ".json")
          and reps.read("a", ".json").startswith('{"counter":3000,'),
          "%s: the optimistic replica behind the proxy and a direct one converge on the 3,000 actions" % label,
          "%s entries; %s; %s" % (total, reps.read("a", ".json").strip(), reps.read("c", ".json").strip()))
    check(p99 and p99[-1] < 100000, "%s: no optimistic dispatch waited for a round trip (p99 %s us)" % (label, p99[-1:]))
    check("acked=10\n" in ordered and o50 and o50[0] >= 100000,
          "%s: ordered mode goes through, each dispatch at least one round trip (p50 %s us)" % (label, o50),
          ordered.strip()[-300:])
    if p50 and p99 and o50 and o99 and confirmed:
        print("  %s: optimistic local dispatch p50 %.1f us, p99 %.1f us (3,000 at 3,000/s, all confirmed %.2f s "
              "after the first); ordered p50 %.0f us, p99 %.0f us" % (label, p50[-1], p99[-1], confirmed[-1], o50[0],
                                                                    o99[0]), flush=True)


def opt_quorum(base, cluster):
    """Two of three servers down (the stream's leader and another):
    Tests/replicate/optimistic.c's offline scenario on the cluster:
    optimistic dispatches return TS_OK at once and queue (pending, up to
    max_pending, the status says why), then everything is appended once when
    a quorum returns."""
    me = os.path.abspath(__file__)
    stop = "%s %s --helper stop-two %s offline" % (sys.executable, me, base)
    start = "%s %s --helper start-all %s offline" % (sys.executable, me, base)
    run_program("optimistic, two of three servers down", [OPTIMISTIC, PLUGIN, cluster.url(), stop, start, "", "0",
                                                          '"replicas":3', "offline"])


def c_flags():
    """The test programs' C flags (TS_CFLAGS): the Makefile's, from the
    environment under make, else from `make flags` (as Tests/flags.sh)."""
    cflags = os.environ.get("TS_CFLAGS")
    if not cflags:
        out = subprocess.run(["make", "-s", "--no-print-directory", "-C", ROOT, "flags"], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("TS_CFLAGS="):
                cflags = shlex.split(line[len("TS_CFLAGS="):])[0]
    return shlex.split(cflags)


def main():
    global BENCH
    if len(sys.argv) > 1 and sys.argv[1] == "--helper":
        return helper(sys.argv[2:])
    BENCH = "--bench" in sys.argv
    scale = float(sys.argv[sys.argv.index("--scale") + 1]) if "--scale" in sys.argv else 1.0
    if shutil.which(NATS_SERVER) is None or not os.path.exists(PLUGIN):
        print("FAIL: %s or %s missing (.ci/setup.sh installs nats-server; make plugins)" % (NATS_SERVER, PLUGIN))
        print("checks: 0 passed, 1 failed")
        return 1
    os.makedirs(os.path.join(BUILD, "tests"), exist_ok=True)
    cc = os.environ.get("CC", "cc")
    flags = c_flags() + ["-I" + os.path.join(ROOT, "Include")]
    link = ["-L" + os.path.join(BUILD, "lib"), "-Wl,-rpath," + os.path.join(BUILD, "lib"), "-lturnstate", "-lpthread"]
    for source, target, more in (("replica.c", REPLICA, []), ("faults.c", FAULTS, []),
                                 ("tamper_nats.c", TAMPER, ["-lnats"]), ("optimistic.c", OPTIMISTIC, [])):
        subprocess.run([cc] + flags + [os.path.join(ROOT, "Tests", "replicate", source), "-o", target] + link + more,
                       check=True)
    base = tempfile.mkdtemp(prefix="replicate-nats.")
    cluster = Cluster(base)
    others = []
    started = time.time()
    try:
        cluster.start()
        if not check(cluster.wait_healthy(30), "a three-server JetStream cluster starts on loopback"):
            for s in cluster.servers:
                print(open(s.log).read()[-2000:])
            return 1
        if BENCH:
            bench(base, cluster, scale)
            return 0
        only = os.environ.get("TS_ONLY", "converge batched leader_kill quorum tls credentials tamper optimistic "
                                          "opt_leader_kill opt_replica_kill opt_quorum opt_proxy").split()
        if "converge" in only:
            converge(base, cluster)
        if "batched" in only:
            batched(base, cluster)
        if "leader_kill" in only:
            leader_kill(base, cluster)
        if "quorum" in only:
            quorum(base, cluster)
        if "tls" in only:
            others += tls(base)
        if "credentials" in only:
            others += credentials(base)
        if "tamper" in only:
            others += tamper(base)
        if "optimistic" in only:
            optimistic(base, cluster)
        for name, scenario in (("opt_leader_kill", opt_leader_kill), ("opt_replica_kill", opt_replica_kill),
                               ("opt_quorum", opt_quorum), ("opt_proxy", opt_proxy)):
            if name in only:
                at = time.time()
                scenario(base, cluster)
                print("  (%s: %.1f s)" % (name, time.time() - at), flush=True)
    finally:
        cluster.stop_all()
        for s in others:
            s.kill()
        if os.environ.get("TS_KEEP"):
            print("  kept " + base)
        else:
            shutil.rmtree(base, ignore_errors=True)
    print("  (%.0f s)" % (time.time() - started))
    print("checks: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
