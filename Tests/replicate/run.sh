#!/usr/bin/env bash
# Tests/replicate/run.sh [--bench] - replicate.so against real Redis servers
# that this script starts on loopback (free ports, a temporary folder) and
# stops on exit:
#   1. three processes x 10,000 concurrent dispatches: identical states, counter 30,000;
#      1b. three x 300 whose reducers answer with patches (replica --patch):
#      identical states, byte for byte, a log slice in the same order
#   2. one replica SIGKILLed mid-run and restarted: it catches up; nothing lost or doubled
#   3. the server SIGKILLed mid-run and restarted (appendonly, appendfsync always):
#      no acknowledged dispatch lost, nothing doubled
#   4. a replica joining after 100,000 actions from a snapshot (time reported)
#   5. refusals and faults (Tests/replicate/faults.c)
#      5b. state versions through the snapshot (Tests/replicate/migrate.c)
#      5c. journal.so after replicate.so across a restart (Tests/replicate/journal.c)
#   6. a server that requires a password (AUTH; never shown in messages)
#   7. a damaged or tampered log (Tests/replicate/tamper.c, a second client on
#      a server of its own): refused and reported, never applied, no hang or spin
#   8. TLS (rediss://, a CA made by Tests/replicate/certs.sh): the right CA and
#      client certificate connect; another CA, no client certificate, plain
#      text to the TLS port, TLS to a plain port, a CA file others can write and
#      a key others can read are refused with a message
#   9. optimistic mode ("mode": "optimistic"):
#      a. Tests/replicate/optimistic.c (one process; the server stopped and
#         started, a link stalled through Tests/replicate/delay_proxy.py):
#         dispatches return TS_OK offline and wait as pending, max_pending,
#         the status, a resend after a lost answer appended once, an action
#         the log's order refuses dropped and reported, pending actions that
#         a snapshot covers not applied twice (also under valgrind)
#      b. history checker: three processes dispatch at once (with "take"s
#         that run out): every replica's state equals a fresh store folding
#         the log's order, each acknowledged action in the log exactly once,
#         each drop reported where the fold refuses it
#      c. the server SIGKILLed mid-run and restarted: no dispatch fails,
#         pending rises, then everything is appended once and converges
#      d. a replica SIGKILLed with pending actions: what the log
#         acknowledged survives, nothing is applied twice or half
#      e. 100 ms added on every round trip (delay_proxy.py): optimistic
#         local dispatch latency against ordered mode's (figures, no
#         threshold: `make bench` has them)
# (NATS JetStream: Tests/replicate/nats_run.py, make test-replicate-nats.)
# Prints "checks: N passed, M failed".
# With --bench [--scale F]: the figures of `make bench` instead, as
# "RESULT<tab>ID<tab>VALUE<tab>UNIT" lines for Benchmarks/report.py: REP-rate
# (replicated dispatches/s, three replicas x 1 thread x 50,000), REP-p50 and
# REP-p99 (dispatch latency at the origin, the worst replica's), REP-diverge
# (over 1,000,000 actions with a replica SIGKILLed and restarted: replicas
# whose state differs + |counter - entries in the stream|), REP-join (a
# replica joining after those 1,000,000 actions, from the snapshot); optimistic
# mode: REP-opt-rate (replicated dispatches/s from one process, until the log
# confirmed its last), REP-opt-p99 (its local dispatch latency), REP-opt-p99-3
# and REP-opt-diverge (three processes dispatching at once; divergence once
# quiet, against the log folded by a fresh store), REP-opt-proxy-p99 (local
# dispatch through a proxy adding 100 ms to every round trip) and
# REP-ord-proxy-p50 (ordered mode's dispatch through it).
# Env: TS_BUILD (build/), REDIS_SERVER (redis-server).
set -uo pipefail
cd "$(dirname "$0")/../.."
# The C flags (TS_CFLAGS): the Makefile's.
. Tests/flags.sh
BUILD=${TS_BUILD:-$PWD/build}
PLUGIN=$BUILD/plugins/replicate.so
REDIS_SERVER=${REDIS_SERVER:-redis-server}
BENCH=0 SCALE=1
[ "${1:-}" = --bench ] && BENCH=1
[ "${2:-}" = --scale ] && SCALE=${3:-1}
passed=0 failed=0
pass() { passed=$((passed + 1)); [ $BENCH = 1 ] || echo "ok: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

for tool in "$REDIS_SERVER" redis-cli; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool not found (.ci/setup.sh test installs redis-server)"; echo "checks: 0 passed, 1 failed"; exit 1; }
done
[ -f "$PLUGIN" ] || { echo "FAIL: $PLUGIN not built (make plugins)"; echo "checks: 0 passed, 1 failed"; exit 1; }

T=$(mktemp -d "${TMPDIR:-/tmp}/replicate.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  for f in "$T"/*/redis.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$BUILD/tests"
cc $TS_CFLAGS -IInclude Tests/replicate/replica.c -o "$BUILD/tests/replicate_replica" \
  -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lturnstate -lpthread || exit 1
cc $TS_CFLAGS -IInclude Tests/replicate/faults.c -o "$BUILD/tests/replicate_faults" \
  -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lturnstate || exit 1
cc $TS_CFLAGS -IInclude -ITests/plugins Tests/replicate/migrate.c -o "$BUILD/tests/replicate_migrate" \
  -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lturnstate || exit 1
cc $TS_CFLAGS -IInclude Tests/replicate/journal.c -o "$BUILD/tests/replicate_journal" \
  -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lturnstate || exit 1
cc $TS_CFLAGS -IInclude Tests/replicate/tamper.c -o "$BUILD/tests/replicate_tamper" \
  -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lturnstate -lhiredis || exit 1
cc $TS_CFLAGS -IInclude Tests/replicate/optimistic.c \
  -o "$BUILD/tests/replicate_optimistic" -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lturnstate || exit 1
REPLICA=$BUILD/tests/replicate_replica

# The plugin: built from the headers alone, never linking libturnstate, exporting only its entry.
needed=$(readelf -d "$PLUGIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
exported=$(nm -D --defined-only "$PLUGIN" | awk '{print $3}' | grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' | tr '\n' ' ')
if [ $BENCH = 0 ]; then
  check "replicate.so does not link libturnstate (NEEDED: $needed)" bash -c '! grep -q libturnstate <<<"$0"' "$needed"
  check "replicate.so links hiredis" grep -q libhiredis <<<"$needed"
  check "replicate.so links nats.c (JetStream)" grep -q libnats <<<"$needed"
  check "replicate.so exports only ts_plugin_entry ($exported)" [ "$(echo $exported)" = ts_plugin_entry ]
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_server NAME PORT [persistent]: a server in $T/NAME, waited for.
start_server() {
  local name=$1 port=$2 dir=$T/$1
  mkdir -p "$dir"
  local persist=(--appendonly no --save '')
  [ "${3:-}" = persistent ] && persist=(--appendonly yes --appendfsync always --save '')
  "$REDIS_SERVER" --port "$port" --bind 127.0.0.1 --dir "$dir" "${persist[@]}" --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >/dev/null || return 1
  for _ in $(seq 200); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && return 0; sleep 0.05; done
  echo "server $name did not start:"; tail -5 "$dir/redis.log"; return 1
}
kill_server() { local f=$T/$1/redis.pid; kill -9 "$(cat "$f")" 2>/dev/null; rm -f "$f"; sleep 0.2; }

PORT=$(free_port)
start_server main "$PORT" || { echo "checks: 0 passed, 1 failed"; exit 1; }
URL=redis://127.0.0.1:$PORT

# run_replica DIR ORIGIN STREAM COUNT [extra...]: in the background, output in DIR/ORIGIN.log
run_replica() {
  local dir=$1 origin=$2 stream=$3 count=$4; shift 4
  "$REPLICA" --plugin "$PLUGIN" --url "$URL" --stream "$stream" --origin "$origin" --count "$count" --threads 2 \
    --go "$dir/go" --total-file "$dir/total" --out "$dir/$origin.json" "$@" >>"$dir/$origin.log" 2>&1 &
  pids+=($!)
  last_pid=$!
}
# finish DIR STREAM PIDS...: waits for the dispatchers, publishes the stream's total, waits for the replicas.
finish() {
  local dir=$1 stream=$2; shift 2
  local n=$#
  for _ in $(seq 6000); do [ "$(cat "$dir"/*.log 2>/dev/null | grep -c '^failed=')" -ge "$n" ] && break; sleep 0.02; done
  redis-cli -p "$PORT" get "$stream:seq" >"$dir/total.tmp" && mv "$dir/total.tmp" "$dir/total"
  for p in "$@"; do wait "$p"; done
}
field() { sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1"; }
last_value() { grep "^$2=" "$1" | tail -1 | cut -d= -f2; }
same_states() { local first=$1; shift; for f in "$@"; do cmp -s "$first" "$f" || { echo "  differs: $f"; cat "$first" "$f"; return 1; }; done; }
# start_proxy PORT TARGET_PORT RTT_MS: Tests/replicate/delay_proxy.py in the background (its pid in proxy_pid)
start_proxy() {
  python3 Tests/replicate/delay_proxy.py "$1" "$2" "$3" >"$T/proxy-$1.out" 2>&1 &
  proxy_pid=$!; pids+=($proxy_pid)
  for _ in $(seq 100); do grep -q ready "$T/proxy-$1.out" 2>/dev/null && return 0; sleep 0.05; done
  echo "proxy on $1 did not start"; return 1
}
# The log's entries' texts, in order, one a line ("#ORIGIN:N ACTION" from optimistic mode).
log_texts() { redis-cli -p "$1" --raw xrange "$2" - + | awk 'NR % 5 == 0'; }
status_field() { grep '^status=' "$1" | tail -1 | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"; }
# history DIR PORT STREAM STOCK LABEL: the log folded by a fresh store (DIR/fold.json, DIR/fold.txt),
# and the checks every optimistic scenario shares: each replica's state is that fold (one common
# order, every entry applied once), no ORIGIN:N appended twice, no action (payload) in the log twice.
history() {
  local dir=$1 port=$2 stream=$3 stock=$4 label=$5
  log_texts "$port" "$stream" >"$dir/log.txt"
  sed 's/^#[^ ]* //' "$dir/log.txt" >"$dir/actions.txt"
  "$REPLICA" --fold "$dir/actions.txt" --stock "$stock" >"$dir/fold.txt" 2>&1
  head -1 "$dir/fold.txt" >"$dir/fold.json"
  check "$label: every replica's state is the log's $(wc -l <"$dir/log.txt") entries folded by a fresh store" \
    same_states "$dir/fold.json" "$dir"/[a-d].json
  check "$label: no ORIGIN:N appended twice" \
    [ -z "$(sed -n 's/^#\([^ ]*\) .*/\1/p' "$dir/log.txt" | sort | uniq -d)" ]
  check "$label: no action in the log twice" \
    [ -z "$(grep -o '"payload":"[a-d][0-9]*"' "$dir/actions.txt" | sort | uniq -d)" ]
}
# in_log DIR ORIGIN: how many of the log's actions came from ORIGIN
in_log() { grep -c "\"payload\":\"$2[0-9]*\"" "$1/actions.txt"; }

if [ $BENCH = 1 ]; then
  scaled() { awk -v n="$1" -v s="$SCALE" 'BEGIN { v = int(n * s); print v < 10 ? 10 : v }'; }
  result() { printf 'RESULT\t%s\t%s\t%s\n' "$1" "$2" "$3"; }
  # Throughput and latency: three replicas, one dispatching thread each (a
  # second thread in a process adds no throughput: the store is held for
  # each dispatch's round trip, so it only waits for the first's).
  D=$T/bench-rate; mkdir -p "$D"; n=$(scaled 50000)
  run_replica "$D" a r1 "$n" --latency --threads 1; pa=$last_pid
  run_replica "$D" b r1 "$n" --latency --threads 1; pb=$last_pid
  run_replica "$D" c r1 "$n" --latency --threads 1; pc=$last_pid
  sleep 0.3
  start=$(date +%s.%N); touch "$D/go"
  for _ in $(seq 60000); do [ "$(cat "$D"/*.log | grep -c '^failed=')" -ge 3 ] && break; sleep 0.01; done
  elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  finish "$D" r1 "$pa" "$pb" "$pc"
  total=$(cat "$D/total")
  result REP-rate "$(awk -v t="$total" -v e="$elapsed" 'BEGIN { print t / e }')" "dispatches/s"
  result REP-p50 "$(cat "$D"/*.log | grep '^dispatch_p50_us=' | cut -d= -f2 | sort -n | tail -1)" us
  result REP-p99 "$(cat "$D"/*.log | grep '^dispatch_p99_us=' | cut -d= -f2 | sort -n | tail -1)" us
  # 1,000,000 actions, replica b SIGKILLed a third of the way and restarted.
  D=$T/bench-kill; mkdir -p "$D"; third=$(scaled 333334)
  run_replica "$D" a r2 "$third"; pa=$last_pid
  run_replica "$D" b r2 "$third"; pb=$last_pid
  run_replica "$D" c r2 "$third"; pc=$last_pid
  sleep 0.3; touch "$D/go"
  for _ in $(seq 60000); do [ "$(last_value "$D/b.log" acked)" -ge $((third / 3)) ] 2>/dev/null && break; sleep 0.05; done
  kill -9 "$pb"; wait "$pb" 2>/dev/null
  done_before=$(last_value "$D/b.log" acked); mv "$D/b.log" "$D/b-killed.log.old"
  run_replica "$D" b r2 $((third - done_before)); pb=$last_pid
  finish "$D" r2 "$pa" "$pb" "$pc"
  total=$(cat "$D/total")
  differ=0; for o in b c; do cmp -s "$D/a.json" "$D/$o.json" || differ=$((differ + 1)); done
  off=$(( $(field "$D/a.json" counter) - total )); off=${off#-}
  result REP-diverge $((differ + off)) "replicas+entries"
  echo "INFO	replicate: REP-diverge over $total actions (b killed after $done_before of its own, restarted)"
  # A replica joining after those actions.
  "$REPLICA" --plugin "$PLUGIN" --url "$URL" --stream r2 --origin d --count 0 >"$D/d.log" 2>&1
  result REP-join "$(sed -n 's/^join_ms=\([0-9.]*\).*/\1/p' "$D/d.log")" ms
  echo "INFO	replicate: one redis-server 7 on loopback (no persistence), three replica processes (1 dispatching thread each for REP-rate and the latencies, 2 for REP-diverge); one sample per figure"
  # Optimistic mode: one process dispatching as fast as it can, two replicas following.
  D=$T/bench-opt; mkdir -p "$D"; n=$(scaled 100000)
  run_replica "$D" a b1 "$n" --threads 1 --mode optimistic --latency; pa=$last_pid
  run_replica "$D" b b1 0 --threads 1 --mode optimistic; pb=$last_pid
  run_replica "$D" c b1 0 --threads 1 --mode optimistic; pc=$last_pid
  sleep 0.3; touch "$D/go"
  finish "$D" b1 "$pa" "$pb" "$pc"
  result REP-opt-rate "$(awk -v n="$n" -v s="$(last_value "$D/a.log" confirmed_s)" 'BEGIN { print n / s }')" "dispatches/s"
  result REP-opt-p99 "$(last_value "$D/a.log" dispatch_p99_us)" us
  echo "INFO	replicate: REP-opt-rate: $n optimistic dispatches from one process in $(last_value "$D/a.log" confirmed_s) s until the log confirmed the last (local p50 $(last_value "$D/a.log" dispatch_p50_us) us, max $(last_value "$D/a.log" dispatch_max_us) us); two replicas following"
  # Three processes dispatching at once; divergence once quiet, against the log folded by a fresh store
  # (no snapshot: the stream keeps every entry; Tests/replicate/optimistic.c checks a snapshot that
  # covers pending actions, whose outcomes a replica then cannot report).
  D=$T/bench-opt3; mkdir -p "$D"; n=$(scaled 30000)
  for o in a b c; do run_replica "$D" $o b2 "$n" --threads 1 --mode optimistic --latency --take-every 10 --stock $((n / 10)) --snapshot-every 0; eval p$o=\$last_pid; done
  sleep 0.3; touch "$D/go"
  finish "$D" b2 "$pa" "$pb" "$pc"
  log_texts "$PORT" b2 | sed 's/^#[^ ]* //' >"$D/actions.txt"
  # Against the log folded by a fresh store while the stream holds it all (snapshots trim it), else against a.
  reference=$D/a.json
  if [ "$(wc -l <"$D/actions.txt")" = "$(cat "$D/total")" ]; then
    "$REPLICA" --fold "$D/actions.txt" --stock $((n / 10)) | head -1 >"$D/fold.json"; reference=$D/fold.json
  fi
  differ=0; for o in a b c; do cmp -s "$reference" "$D/$o.json" || differ=$((differ + 1)); done
  off=$(( $(field "$D/a.json" counter) + $(cat "$D"/*.log | sed -n 's/^dropped=//p' | awk '{ s += $1 } END { print s }') - $(cat "$D/total") )); off=${off#-}
  result REP-opt-p99-3 "$(cat "$D"/*.log | grep '^dispatch_p99_us=' | cut -d= -f2 | sort -n | tail -1)" us
  result REP-opt-diverge $((differ + off)) "replicas+entries"
  echo "INFO	replicate: REP-opt-diverge: 3 x $n optimistic dispatches at once ($(cat "$D/total") entries, $(cat "$D"/*.log | sed -n 's/.*"rebases":\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s }') rebases, $(cat "$D"/*.log | sed -n 's/^dropped=//p' | awk '{ s += $1 } END { print s }') takes dropped): replicas whose state differs from $(basename "$reference" .json) (fold: the log folded by a fresh store) + |applied + dropped - entries|"
  # What a rebase costs on a big state: two replicas of a 10 MB state dispatching at once.
  D=$T/bench-big; mkdir -p "$D"
  for o in a b; do run_replica "$D" $o b5 300 --threads 1 --mode optimistic --rate 100 --big 10000 --latency; eval p$o=\$last_pid; done
  sleep 1; touch "$D/go"
  finish "$D" b5 "$pa" "$pb"
  rebase_us=$(cat "$D"/*.log | sed -n 's/.*"last_rebase_us":\([0-9]*\).*/\1/p' | sort -n | tail -1)
  result REP-opt-rebase-10MB "$(awk -v u="${rebase_us:-0}" 'BEGIN { print u / 1000 }')" ms
  echo "INFO	replicate: REP-opt-rebase-10MB: the last rebase of two replicas of a 10 MB state dispatching 100/s each ($(cat "$D"/*.log | sed -n 's/.*"rebases":\([0-9]*\).*/\1/p' | tr '\n' ' ')rebases; local p50/p99 $(cat "$D"/*.log | grep '^dispatch_p50_us=' | cut -d= -f2 | tr '\n' ' ')/ $(cat "$D"/*.log | grep '^dispatch_p99_us=' | cut -d= -f2 | tr '\n' ' ')us: a dispatch waits for a rebase in progress)"
  # 100 ms added on every round trip (Tests/replicate/delay_proxy.py).
  D=$T/bench-proxy; mkdir -p "$D"; n=$(scaled 20000)
  proxy_port=$(free_port)
  start_proxy "$proxy_port" "$PORT" 100 || exit 1
  "$REPLICA" --plugin "$PLUGIN" --url "redis://127.0.0.1:$proxy_port" --stream b3 --origin a --count "$n" --threads 1 \
    --mode optimistic --rate 10000 --latency >"$D/a.log" 2>&1
  "$REPLICA" --plugin "$PLUGIN" --url "redis://127.0.0.1:$proxy_port" --stream b4 --origin a --count 20 --threads 1 \
    --latency >"$D/ordered.log" 2>&1
  result REP-opt-proxy-p99 "$(last_value "$D/a.log" dispatch_p99_us)" us
  result REP-ord-proxy-p50 "$(last_value "$D/ordered.log" dispatch_p50_us)" us
  echo "INFO	replicate: through a proxy adding 100 ms to every round trip: optimistic $n dispatches at 10,000/s, local p50 $(last_value "$D/a.log" dispatch_p50_us) us, max $(last_value "$D/a.log" dispatch_max_us) us, all confirmed $(last_value "$D/a.log" confirmed_s) s after the first; ordered p99 $(last_value "$D/ordered.log" dispatch_p99_us) us"
  kill "$proxy_pid" 2>/dev/null; wait "$proxy_pid" 2>/dev/null
  exit 0
fi

# ---- 1. three processes x 10,000 ------------------------------------------
D=$T/three; mkdir -p "$D"
run_replica "$D" a s1 10000 --latency; pa=$last_pid
run_replica "$D" b s1 10000 --latency; pb=$last_pid
run_replica "$D" c s1 10000 --latency; pc=$last_pid
sleep 0.3
start=$(date +%s.%N)
touch "$D/go"
for _ in $(seq 6000); do [ "$(cat "$D"/*.log | grep -c '^failed=')" -ge 3 ] && break; sleep 0.01; done
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
finish "$D" s1 "$pa" "$pb" "$pc"
total=$(cat "$D/total")
printf '  three replicas: %s dispatches in %.2f s (%.0f/s); p99 at the origin (us): %s\n' "$total" "$elapsed" \
  "$(awk -v t="$total" -v e="$elapsed" 'BEGIN { print t / e }')" "$(grep -h '^dispatch_p99_us=' "$D"/*.log | cut -d= -f2 | tr '\n' ' ')"
check "three replicas: every dispatch acknowledged" [ "$(cat "$D"/*.log | grep -c '^acked=10000$')" -ge 3 ]
check "three replicas: the stream holds 30,000 entries" [ "$total" = 30000 ]
check "three replicas: identical states" same_states "$D/a.json" "$D/b.json" "$D/c.json"
check "three replicas: counter 30,000 and 10,000 from each" \
  grep -q '^{"counter":30000,"a":10000,"b":10000,"c":10000,"d":0,' "$D/a.json"

# ---- 1b. patch reducers (issue 19): three processes x 300 ------------------
# The reducers answer with RFC 6902 patches (replica --patch) and a "log"
# slice appends each action's origin: the replicas must hold the same state,
# byte for byte, entries in the same order.
D=$T/patch; mkdir -p "$D"
run_replica "$D" a s1p 300 --patch; pa=$last_pid
run_replica "$D" b s1p 300 --patch; pb=$last_pid
run_replica "$D" c s1p 300 --patch; pc=$last_pid
sleep 0.3
touch "$D/go"
finish "$D" s1p "$pa" "$pb" "$pc"
check "patch reducers: every dispatch acknowledged" [ "$(cat "$D"/*.log | grep -c '^acked=300$')" -ge 3 ]
check "patch reducers: identical states (the log in the same order)" same_states "$D/a.json" "$D/b.json" "$D/c.json"
check "patch reducers: counter 900, 300 from each, 900 log entries" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
log = s.pop("log")
counts = {k: s[k] for k in ("counter", "a", "b", "c", "d")}
sys.exit(not (counts == {"counter": 900, "a": 300, "b": 300, "c": 300, "d": 0} and len(log) == 900
              and all(sum(1 for e in log if e.startswith(o)) == 300 for o in "abc")))' "$D/a.json"

# ---- 2. a replica SIGKILLed mid-run and restarted ---------------------------
D=$T/kill; mkdir -p "$D"
run_replica "$D" a s2 10000; pa=$last_pid
run_replica "$D" b s2 10000; pb=$last_pid
run_replica "$D" c s2 10000; pc=$last_pid
sleep 0.3
touch "$D/go"
for _ in $(seq 3000); do [ "$(last_value "$D/b.log" acked)" -ge 3000 ] 2>/dev/null && break; sleep 0.01; done
kill -9 "$pb"; wait "$pb" 2>/dev/null
acked_before=$(last_value "$D/b.log" acked)
mv "$D/b.log" "$D/b-killed.log.old"
echo "  replica b killed after >= $acked_before acknowledged dispatches"
sleep 0.3
run_replica "$D" b s2 2000; pb=$last_pid
finish "$D" s2 "$pa" "$pb" "$pc"
total=$(cat "$D/total")
check "kill: the restarted replica caught up to the same state" same_states "$D/a.json" "$D/b.json" "$D/c.json"
check "kill: every entry of the stream applied exactly once (counter = $total entries)" \
  [ "$(field "$D/a.json" counter)" = "$total" ]
check "kill: nothing lost from the replicas that lived (10,000 each)" \
  [ "$(field "$D/a.json" a)" = 10000 -a "$(field "$D/a.json" c)" = 10000 ]
b=$(field "$D/a.json" b)
check "kill: b's acknowledged dispatches all applied ($b >= $acked_before + 2000)" [ "$b" -ge $((acked_before + 2000)) ]
check "kill: b's entries: before the kill at most 10,000, then 2,000 ($b <= 12000)" [ "$b" -le 12000 ]

# ---- 3. the server SIGKILLed mid-run and restarted ---------------------------
PPORT=$(free_port)
start_server persistent "$PPORT" persistent || fail "persistent server starts"
MAIN_PORT=$PORT; PORT=$PPORT; URL=redis://127.0.0.1:$PORT
D=$T/server; mkdir -p "$D"
run_replica "$D" a s3 4000; pa=$last_pid
run_replica "$D" b s3 4000; pb=$last_pid
run_replica "$D" c s3 4000; pc=$last_pid
sleep 0.3
touch "$D/go"
for _ in $(seq 3000); do [ "$(last_value "$D/a.log" acked)" -ge 1000 ] 2>/dev/null && break; sleep 0.01; done
kill_server persistent
sleep 0.5
start_server persistent "$PPORT" persistent || fail "persistent server restarts"
finish "$D" s3 "$pa" "$pb" "$pc"
total=$(cat "$D/total")
errors=$(cat "$D"/*.log | grep -c 'dispatch failed (TS_E_IO)')
echo "  server restarted: $total entries, $errors dispatches refused with TS_E_IO while it was down (retried)"
check "server restart: the dispatches saw TS_E_IO while it was down" [ "$errors" -ge 1 ]
check "server restart: identical states" same_states "$D/a.json" "$D/b.json" "$D/c.json"
check "server restart: every entry applied exactly once (counter = $total entries)" \
  [ "$(field "$D/a.json" counter)" = "$total" ]
ok=1; for o in a b c; do
  [ "$(field "$D/a.json" $o)" -ge "$(last_value "$D/$o.log" acked)" ] || { ok=0; echo "  $o lost acknowledged dispatches"; }
done
check "server restart: no acknowledged dispatch lost" [ $ok = 1 ]

# ---- 5. refusals and faults -------------------------------------------------
FPORT=$(free_port)
start_server faults "$FPORT" persistent || fail "faults server starts"
cat >"$T/stop" <<EOF
#!/bin/sh
redis-cli -p $FPORT shutdown >/dev/null 2>&1; sleep 0.2; exit 0
EOF
cat >"$T/start" <<EOF
#!/bin/sh
exec "$REDIS_SERVER" --port $FPORT --bind 127.0.0.1 --dir "$T/faults" --appendonly yes --appendfsync always --save '' \
  --daemonize yes --pidfile "$T/faults/redis.pid" --logfile "$T/faults/redis.log" >/dev/null
EOF
chmod +x "$T/stop" "$T/start"
run_faults() { # LABEL COMMAND...: the faults program on fresh keys; its counts added
  redis-cli -p "$FPORT" del faults faults:seq faults:snap nested nested:seq nested:snap sides sides:seq sides:snap >/dev/null
  local label=$1 out n; shift
  out=$("$@" "$BUILD/tests/replicate_faults" "$PLUGIN" "redis://127.0.0.1:$FPORT" "$T/stop" "$T/start" 2>&1)
  local status=$?
  echo "$out" | grep -v '^[0-9]* passed' | sed "s/^/  $label: /"
  n=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
  [ -n "$n" ] || n="0 1"
  passed=$((passed + ${n% *})); failed=$((failed + ${n#* }))
  [ $status = 0 ] || [ "${n#* }" != 0 ] || fail "$label: exit status $status"
  [ $status != 0 ] || echo "ok: $label: ${n% *} checks of refusals and faults"
}
run_faults faults
# 5b. state versions: a snapshot of version 1 migrated 1->2->3; a downgrade,
# a failing and a missing migration refused (Tests/replicate/migrate.c).
redis-cli -p "$FPORT" del migrate migrate:seq migrate:snap migrate2 migrate2:seq migrate2:snap >/dev/null
out=$("$BUILD/tests/replicate_migrate" "$PLUGIN" "redis://127.0.0.1:$FPORT" 2>&1)
status=$?
echo "$out" | grep -v '^[0-9]* passed' | sed "s/^/  migrate: /"
n=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
[ -n "$n" ] || n="0 1"
passed=$((passed + ${n% *})); failed=$((failed + ${n#* }))
[ $status = 0 ] || [ "${n#* }" != 0 ] || fail "migrate: exit status $status"
[ $status != 0 ] || echo "ok: migrate: ${n% *} checks of state versions through the snapshot"
# 5c. journal.so after replicate.so, restarted (Tests/replicate/journal.c):
# "restore": false keeps the log's fold and appends nothing again.
redis-cli -p "$FPORT" del jrnl jrnl:seq jrnl:snap jrnl2 jrnl2:seq jrnl2:snap >/dev/null
mkdir -p "$T/journal"
out=$("$BUILD/tests/replicate_journal" "$PLUGIN" "$BUILD/plugins/journal.so" "redis://127.0.0.1:$FPORT" "$T/journal" 2>&1)
status=$?
echo "$out" | grep -v '^[0-9]* passed' | sed "s/^/  journal: /"
n=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
[ -n "$n" ] || n="0 1"
passed=$((passed + ${n% *})); failed=$((failed + ${n#* }))
[ $status = 0 ] || [ "${n#* }" != 0 ] || fail "journal: exit status $status"
[ $status != 0 ] || echo "ok: journal: ${n% *} checks of a journal after replicate.so across a restart"
if command -v valgrind >/dev/null; then
  run_faults "faults under valgrind" valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect --suppressions="$PWD/Tests/c/valgrind.supp"
fi
PORT=$MAIN_PORT; URL=redis://127.0.0.1:$PORT

# ---- 4. joining after 100,000 actions ----------------------------------------
D=$T/join; mkdir -p "$D"
run_replica "$D" a s4 34000; pa=$last_pid
run_replica "$D" b s4 33000; pb=$last_pid
run_replica "$D" c s4 33000; pc=$last_pid
touch "$D/go"
for _ in $(seq 12000); do [ "$(cat "$D"/*.log | grep -c '^failed=')" -ge 3 ] && break; sleep 0.01; done
snap=$(redis-cli -p "$PORT" hget s4:snap n)
kept=$(redis-cli -p "$PORT" xlen s4)
"$REPLICA" --plugin "$PLUGIN" --url "$URL" --stream s4 --origin d --count 0 --total-file "$D/total" \
  --out "$D/d.json" >"$D/d.log" 2>&1 &
pd=$!; pids+=($pd)
finish "$D" s4 "$pa" "$pb" "$pc"
wait "$pd"
join_ms=$(sed -n 's/^join_ms=\([0-9.]*\).*/\1/p' "$D/d.log")
echo "  join after $(cat "$D/total") actions: ${join_ms} ms (snapshot at entry $snap; the stream kept $kept entries)"
check "join: a snapshot was taken and the stream trimmed behind it" [ "${snap:-0}" -ge 90000 -a "$kept" -lt 100000 ]
check "join: the new replica has the same state" same_states "$D/a.json" "$D/b.json" "$D/c.json" "$D/d.json"
check "join: counter 100,000" grep -q '^{"counter":100000,"a":34000,"b":33000,"c":33000,"d":0,' "$D/d.json"

# ---- 6. a server that requires a password ----------------------------------
APORT=$(free_port)
secret="s3cret-$RANDOM$RANDOM"
mkdir -p "$T/auth"
"$REDIS_SERVER" --port "$APORT" --bind 127.0.0.1 --dir "$T/auth" --appendonly no --save '' --requirepass "$secret" \
  --daemonize yes --pidfile "$T/auth/redis.pid" --logfile "$T/auth/redis.log" >/dev/null
for _ in $(seq 200); do redis-cli -p "$APORT" -a "$secret" --no-auth-warning ping 2>/dev/null | grep PONG >/dev/null && break; sleep 0.05; done
auth_run() { # URL LOG: one replica, 10 dispatches
  "$REPLICA" --plugin "$PLUGIN" --url "$1" --stream auth --origin a --count 10 --threads 1 >"$2" 2>&1
}
auth_run "redis://:$secret@127.0.0.1:$APORT" "$T/auth/right.log"
check "auth: the right password (redis://:PASSWORD@) loads and dispatches" grep -q '^acked=10$' "$T/auth/right.log"
check "auth: the server has the 10 entries" [ "$(redis-cli -p "$APORT" -a "$secret" --no-auth-warning xlen auth)" = 10 ]
auth_run "redis://default:$secret@127.0.0.1:$APORT" "$T/auth/user.log"
check "auth: USER:PASSWORD (an ACL user) works too" grep -q '^acked=10$' "$T/auth/user.log"
auth_run "redis://:wrong-$secret@127.0.0.1:$APORT" "$T/auth/wrong.log"
check "auth: a wrong password refuses the load and says why" grep -q 'refused the credentials' "$T/auth/wrong.log"
auth_run "redis://127.0.0.1:$APORT" "$T/auth/none.log"
check "auth: no password refuses the load" grep -q 'cannot load' "$T/auth/none.log"
check "auth: no message shows the password" bash -c "! grep -h -- '$secret' '$T'/auth/*.log"
kill -9 "$(cat "$T/auth/redis.pid")" 2>/dev/null

# ---- 8. TLS (rediss://) ------------------------------------------------------------
# A CA, server and client certificates made by certs.sh; a server that speaks
# TLS only and verifies its clients (tls-auth-clients yes).
if Tests/replicate/certs.sh "$T/certs" >"$T/certs.log" 2>&1; then
  C=$T/certs; TPORT=$(free_port); mkdir -p "$T/tls"
  "$REDIS_SERVER" --port 0 --tls-port "$TPORT" --bind 127.0.0.1 --dir "$T/tls" --appendonly no --save '' \
    --tls-cert-file "$C/server.pem" --tls-key-file "$C/server.key" --tls-ca-cert-file "$C/ca.pem" \
    --tls-auth-clients yes --daemonize yes --pidfile "$T/tls/redis.pid" --logfile "$T/tls/redis.log" >/dev/null
  for _ in $(seq 200); do
    redis-cli --tls --cacert "$C/ca.pem" --cert "$C/client.pem" --key "$C/client.key" -p "$TPORT" ping 2>/dev/null \
      | grep -q PONG && break
    sleep 0.05
  done
  tls_run() { # URL LOG EXTRA: one replica, 10 dispatches
    "$REPLICA" --plugin "$PLUGIN" --url "$1" --stream tls --origin a --count 10 --threads 1 --extra "$3" >"$2" 2>&1
  }
  files() { # CA [nocert]
    printf ',"tls_ca":"%s"' "$C/$1"
    [ "${2:-}" = nocert ] || printf ',"tls_cert":"%s","tls_key":"%s"' "$C/client.pem" "$C/client.key"
  }
  tls_run "rediss://127.0.0.1:$TPORT" "$T/tls/right.log" "$(files ca.pem)"
  check "tls: rediss:// with the right CA and a client certificate loads and dispatches" grep -q '^acked=10$' "$T/tls/right.log"
  check "tls: the server has the 10 entries" [ "$(redis-cli --tls --cacert "$C/ca.pem" --cert "$C/client.pem" \
    --key "$C/client.key" -p "$TPORT" xlen tls)" = 10 ]
  tls_run "rediss://127.0.0.1:$TPORT" "$T/tls/other.log" "$(files other-ca.pem)"
  check "tls: another CA: the load is refused (the server's certificate)" \
    grep -q "cannot load.*the server's certificate was refused" "$T/tls/other.log"
  tls_run "rediss://localhost:$TPORT" "$T/tls/name.log" "$(files ca.pem)"
  check "tls: the certificate's name (DNS:localhost) is checked too: rediss://localhost works" \
    grep -q '^acked=10$' "$T/tls/name.log"
  tls_run "rediss://127.0.0.1:$TPORT" "$T/tls/nocert.log" "$(files ca.pem nocert)"
  check "tls: no client certificate (the server verifies clients): refused" grep -q 'cannot load' "$T/tls/nocert.log"
  tls_run "redis://127.0.0.1:$TPORT" "$T/tls/plain.log" ""
  check "tls: plain text to the TLS port: refused, and the message says rediss://" \
    grep -q 'cannot load.*use rediss://' "$T/tls/plain.log"
  tls_run "rediss://127.0.0.1:$PORT" "$T/tls/notls.log" "$(files ca.pem)"
  check "tls: TLS to a plain-text server: refused (the handshake fails)" \
    grep -q 'cannot load.*the TLS handshake failed' "$T/tls/notls.log"
  cp "$C/ca.pem" "$C/open-ca.pem"; chmod 0666 "$C/open-ca.pem"
  tls_run "rediss://127.0.0.1:$TPORT" "$T/tls/openca.log" "$(files open-ca.pem)"
  check "tls: a CA file that others can write is refused (chmod go-w)" \
    grep -q 'can be written by other users.*chmod go-w' "$T/tls/openca.log"
  chmod 0644 "$C/client.key"
  tls_run "rediss://127.0.0.1:$TPORT" "$T/tls/openkey.log" "$(files ca.pem)"
  check "tls: a private key that others can read is refused" grep -q 'can be read by other users' "$T/tls/openkey.log"
  for f in other nocert plain notls; do echo "  tls, $f: $(grep -o 'replicate: .*' "$T/tls/$f.log" | head -1)"; done
  kill -9 "$(cat "$T/tls/redis.pid")" 2>/dev/null
else
  fail "tls: certs.sh makes the test CA"; cat "$T/certs.log"
fi

# ---- 7. a damaged or tampered log ---------------------------------------------
XPORT=$(free_port)
if start_server tamper "$XPORT"; then
  out=$(TMPDIR=$T "$BUILD/tests/replicate_tamper" "$PLUGIN" 127.0.0.1 "$XPORT" 2>&1)
  status=$?
  echo "$out" | grep -v '^[0-9]* passed' | sed 's/^/  tamper: /'
  n=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
  [ -n "$n" ] || n="0 1"
  passed=$((passed + ${n% *})); failed=$((failed + ${n#* }))
  [ $status = 0 ] || [ "${n#* }" != 0 ] || fail "tamper: exit status $status"
  kill_server tamper
else
  fail "tamper server starts"
fi

# ---- 8. optimistic mode ---------------------------------------------------------
# a. one process: offline, bounds, status, a resend, a drop (the faults server, a proxy to it)
run_optimistic() { # LABEL COMMAND...: Tests/replicate/optimistic.c on a fresh faults server; its counts added
  local label=$1 out n status; shift
  redis-cli -p "$FPORT" ping >/dev/null 2>&1 || "$T/start"
  for _ in $(seq 100); do redis-cli -p "$FPORT" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
  redis-cli -p "$FPORT" flushall >/dev/null
  out=$("$@" "$BUILD/tests/replicate_optimistic" "$PLUGIN" "redis://127.0.0.1:$FPORT" "$T/stop" "$T/start" \
        "redis://127.0.0.1:$OPORT" "$proxy_pid" 2>&1)
  status=$?
  echo "$out" | grep -v '^[0-9]* passed' | sed "s/^/  $label: /"
  n=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
  [ -n "$n" ] || n="0 1"
  passed=$((passed + ${n% *})); failed=$((failed + ${n#* }))
  [ $status = 0 ] || [ "${n#* }" != 0 ] || fail "$label: exit status $status"
  [ $status != 0 ] || echo "ok: $label: ${n% *} checks (offline, max_pending, status, resend, drop)"
}
OPORT=$(free_port)
if start_proxy "$OPORT" "$FPORT" 0; then
  run_optimistic optimistic
  if command -v valgrind >/dev/null; then
    run_optimistic "optimistic under valgrind" valgrind -q --error-exitcode=99 --leak-check=full \
      --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
      --suppressions="$PWD/Tests/c/valgrind.supp"
  fi
  kill "$proxy_pid" 2>/dev/null; wait "$proxy_pid" 2>/dev/null
else
  fail "optimistic: the proxy starts"
fi

# b. the history checker: three processes at once, "take"s that run out
D=$T/opt-history; mkdir -p "$D"
for o in a b c; do
  run_replica "$D" $o o1 3000 --threads 1 --mode optimistic --take-every 5 --stock 700 --latency; eval p$o=\$last_pid
done
sleep 0.3; touch "$D/go"
for _ in $(seq 3000); do [ "$(cat "$D"/*.log | grep -c '^failed=')" -ge 3 ] && break; sleep 0.02; done
redis-cli -p "$PORT" get o1:seq >"$D/total.tmp" && mv "$D/total.tmp" "$D/total"
wait "$pa" "$pb" "$pc"
history "$D" "$PORT" o1 700 "history"
ok=1; drops=0; rebases=0
for o in a b c; do
  acked=$(last_value "$D/$o.log" acked); logged=$(in_log "$D" $o)
  dropped=$(last_value "$D/$o.log" dropped); refused=$(sed -n "s/^refused_$o=//p" "$D/fold.txt")
  drops=$((drops + dropped)); rebases=$((rebases + $(status_field "$D/$o.log" rebases)))
  [ "$acked" = "$logged" ] || { ok=0; echo "  $o: $acked dispatches returned TS_OK, the log holds $logged of them"; }
  [ "$dropped" = "$refused" ] || { ok=0; echo "  $o: $dropped drops reported, the fold refuses $refused of its takes"; }
done
echo "  history: $(cat "$D/total") entries, $rebases rebases, $drops takes dropped where the log's order refused them; local p99 (us): $(grep -h '^dispatch_p99_us=' "$D"/*.log | cut -d= -f2 | tr '\n' ' ')"
check "history: each acknowledged action in the log exactly once; each drop reported where the fold refuses it" [ $ok = 1 ]
check "history: the replicas rebased (another's entries came before their pending ones)" [ "$rebases" -ge 1 ]

# b2. optimistic replicas that joined from a snapshot of a versioned state
# ("V2 " before its JSON) put that state back when they rebase: a seeds the
# log and its snapshots alone, then b and c join from the snapshot and
# dispatch at once.
D=$T/opt-versioned; mkdir -p "$D/seed"
run_replica "$D/seed" a o1v 400 --threads 1 --mode optimistic --state-version 2 --snapshot-every 100; pa=$last_pid
touch "$D/seed/go"; finish "$D/seed" o1v "$pa"
check "versioned: a's snapshot carries the state's version" \
  grep -q -E "^(P[^ ]* )?V2 " <(redis-cli -p "$PORT" hget o1v:snap state)
for o in b c; do
  run_replica "$D" $o o1v 1500 --threads 1 --mode optimistic --state-version 2 --snapshot-every 100; eval p$o=\$last_pid
done
sleep 0.3; touch "$D/go"
finish "$D" o1v "$pb" "$pc"
check "versioned: b and c end in one state" same_states "$D/b.json" "$D/c.json"
check "versioned: it counts every entry of the log once ($(cat "$D/total"))" \
  grep -q "\"counter\":$(cat "$D/total")," "$D/b.json"
rebases=$(( $(status_field "$D/b.log" rebases) + $(status_field "$D/c.log" rebases) ))
check "versioned: b and c rebased ($rebases rebases) on the snapshot's state" [ "$rebases" -ge 1 ]
check "versioned: no rebase failed to put the confirmed state back" \
  [ -z "$(grep -h "could not put back" "$D/b.log" "$D/c.log")" ]

# c. the server SIGKILLed mid-run and restarted (appendonly, appendfsync always)
PORT=$PPORT; URL=redis://127.0.0.1:$PORT
D=$T/opt-server; mkdir -p "$D"
for o in a b c; do
  run_replica "$D" $o o2 6000 --threads 1 --mode optimistic --rate 2000; eval p$o=\$last_pid
done
sleep 0.3; touch "$D/go"
for _ in $(seq 3000); do [ "$(last_value "$D/a.log" acked)" -ge 1000 ] 2>/dev/null && break; sleep 0.01; done
kill_server persistent
sleep 1.5
start_server persistent "$PPORT" persistent || fail "persistent server restarts"
for _ in $(seq 3000); do [ "$(cat "$D"/*.log | grep -c '^failed=')" -ge 3 ] && break; sleep 0.02; done
redis-cli -p "$PORT" get o2:seq >"$D/total.tmp" && mv "$D/total.tmp" "$D/total"
wait "$pa" "$pb" "$pc"
history "$D" "$PORT" o2 1000000000 "server restart (optimistic)"
most=$(cat "$D"/*.log | sed -n 's/^pending=\([0-9]*\) .*/\1/p' | sort -n | tail -1)
echo "  server restart (optimistic): $(cat "$D/total") entries; up to $most actions pending in one replica while it was down"
check "server restart (optimistic): no dispatch failed" [ "$(cat "$D"/*.log | grep -c '^failed=0$')" = 3 ]
check "server restart (optimistic): pending rose while the server was down ($most)" [ "${most:-0}" -ge 500 ]
check "server restart (optimistic): all 18,000 appended once" \
  [ "$(cat "$D/total")" = 18000 -a "$(in_log "$D" a)" = 6000 -a "$(in_log "$D" b)" = 6000 -a "$(in_log "$D" c)" = 6000 ]

# d. a replica SIGKILLed with pending actions, a new one in its place (origin d)
PORT=$MAIN_PORT; URL=redis://127.0.0.1:$PORT
D=$T/opt-kill; mkdir -p "$D"
for o in a b c; do
  run_replica "$D" $o o3 6000 --threads 1 --mode optimistic --rate 2000; eval p$o=\$last_pid
done
sleep 0.3; touch "$D/go"
for _ in $(seq 3000); do [ "$(last_value "$D/b.log" acked)" -ge 2000 ] 2>/dev/null && break; sleep 0.01; done
kill -9 "$pb"; wait "$pb" 2>/dev/null
b_acked=$(last_value "$D/b.log" acked)
b_confirmed=$(sed -n 's/^pending=[0-9]* confirmed=\([0-9]*\)$/\1/p' "$D/b.log" | tail -1)
mv "$D/b.log" "$D/b-killed.log.old"
run_replica "$D" d o3 1000 --threads 1 --mode optimistic; pd=$last_pid
for _ in $(seq 3000); do [ "$(cat "$D"/*.log | grep -c '^failed=')" -ge 3 ] && break; sleep 0.02; done
redis-cli -p "$PORT" get o3:seq >"$D/total.tmp" && mv "$D/total.tmp" "$D/total"
wait "$pa" "$pc" "$pd"
history "$D" "$PORT" o3 1000000000 "kill (optimistic)"
b_logged=$(in_log "$D" b)
echo "  kill (optimistic): b killed after >= $b_acked dispatches (its last report: $b_confirmed confirmed by the log); the log holds $b_logged of b's; the rest were pending only in b and are lost"
check "kill (optimistic): what the log confirmed to b survives ($b_logged >= $b_confirmed)" \
  [ "$b_logged" -ge "${b_confirmed:-0}" ]
# b appended its actions in order: the log holds b1..bN, a prefix; only the rest (pending in b) is lost.
check "kill (optimistic): b's actions in the log are its first $b_logged, none missing between" \
  [ "$(grep -o '"payload":"b[0-9]*"' "$D/actions.txt" | tr -dc '0-9\n' | sort -n | awk '$1 != NR { bad = 1 } END { print bad + 0 }')" = 0 ]
check "kill (optimistic): the others' and the new replica's actions all in the log" \
  [ "$(in_log "$D" a)" = 6000 -a "$(in_log "$D" c)" = 6000 -a "$(in_log "$D" d)" = 1000 ]

# e. 100 ms added on every round trip: optimistic local latency, ordered for comparison
XPORT2=$(free_port)
if start_proxy "$XPORT2" "$PORT" 100; then
  D=$T/opt-proxy; mkdir -p "$D"
  "$REPLICA" --plugin "$PLUGIN" --url "redis://127.0.0.1:$XPORT2" --stream o4 --origin a --count 3000 --threads 1 \
    --mode optimistic --rate 3000 --latency --go "$D/go" --total-file "$D/total" --out "$D/a.json" >"$D/a.log" 2>&1 &
  pa=$!; pids+=($pa)
  run_replica "$D" c o4 0 --threads 1 --mode optimistic; pc=$last_pid
  sleep 0.5; touch "$D/go"
  for _ in $(seq 3000); do [ "$(cat "$D"/*.log | grep -c '^failed=')" -ge 2 ] && break; sleep 0.02; done
  redis-cli -p "$PORT" get o4:seq >"$D/total.tmp" && mv "$D/total.tmp" "$D/total"
  wait "$pa" "$pc"
  "$REPLICA" --plugin "$PLUGIN" --url "redis://127.0.0.1:$XPORT2" --stream o5 --origin a --count 20 --threads 1 \
    --latency >"$D/ordered.log" 2>&1
  echo "  +100 ms round trips: optimistic local dispatch p50/p99/max $(last_value "$D/a.log" dispatch_p50_us)/$(last_value "$D/a.log" dispatch_p99_us)/$(last_value "$D/a.log" dispatch_max_us) us (3,000 at 3,000/s, confirmed after $(last_value "$D/a.log" confirmed_s) s); ordered p50/p99 $(last_value "$D/ordered.log" dispatch_p50_us)/$(last_value "$D/ordered.log" dispatch_p99_us) us"
  check "+100 ms: the optimistic replica and a direct one converge on the 3,000 actions" \
    [ "$(cat "$D/total")" = 3000 -a "$(field "$D/c.json" counter)" = 3000 ]
  check "+100 ms: identical states" same_states "$D/a.json" "$D/c.json"
  check "+100 ms: ordered mode goes through too (20 acknowledged)" grep -q '^acked=20$' "$D/ordered.log"
  kill "$proxy_pid" 2>/dev/null; wait "$proxy_pid" 2>/dev/null
else
  fail "+100 ms: the proxy starts"
fi

echo "checks: $passed passed, $failed failed"
[ $failed = 0 ]
