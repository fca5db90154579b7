#!/usr/bin/env bash
# make test-undo: the undo plugin (Plugins/undo) from every face, quickly:
#   1. Tests/plugins/test_undo.c (redux-undo's behaviours, the byte bound,
#      every bad config field, the journal restart; on the C harness,
#      Tests/harness/ts_test.h), built with ASan by the
#      Swift toolchain's clang against the ASan library (BUILD/asan/lib) and
#      ASan builds of undo.so and journal.so, runs with leak checks;
#   2. Tests/python/test_undo.py (the ctypes binding) against build/lib and
#      build/plugins;
#   3. bindings/rust/turnstate/tests/undo.rs (cargo test --offline --test undo);
#   4. Tests/undo/test_undo.cpp (Include/turnstate.hpp), built with $CXX;
#   5. Tests/undo/replicas.c: two replicas (replicate.so then undo.so) of
#      one Redis stream, on a redis-server this script starts on loopback
#      (REDIS_SERVER, default redis-server): an @@undo on either replica
#      undoes the same step on both; then three, one joining from a
#      snapshot, a checkpoint, and one behind a trimmed log going on from a
#      snapshot: every @@undo does the same on the three; undo.so refused
#      after replicate.so in optimistic mode;
#   6. Tests/undo/relay.c: actions that reach undo.so through next and
#      through a plugin's dispatch_after are steps of one history (undo
#      starts anew only when it is handed a new next: the chain changed).
# Each step prints its "N passed, M failed"; the last line is
# "checks: N passed, M failed" (their sum; a step that fails to build or
# prints no summary counts as a failure).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
. Tests/flags.sh
build=${TS_BUILD:-$root/build}
asan=$build/asan
clang=${FUZZ_CC:-$(dirname "$(realpath "$(command -v swift)")")/clang}
cxx=${CXX:-c++}
export CARGO=${CARGO:-cargo}
passed=0 failed=0
tally() { # LOG NAME
  local line
  line=$(grep -E '(^|: )[0-9]+ passed, [0-9]+ failed$' "$1" | tail -n1)
  if [ -z "$line" ]; then failed=$((failed + 1)); echo "  FAIL $2: no summary line"; return; fi
  line=${line##*: }
  passed=$((passed + ${line%% passed*}))
  local m=${line#*passed, }; failed=$((failed + ${m%% failed*}))
}
work=$(mktemp -d /tmp/turnstate-undo.XXXXXX)
chmod 0755 "$work"
trap '[ -f "$work/redis/redis.pid" ] && kill "$(cat "$work/redis/redis.pid")" 2>/dev/null; rm -rf "$work"' EXIT

# 1. C, under ASan.
plugins=$work/asan-plugins
mkdir -p "$plugins" && chmod 0755 "$plugins"
if "$clang" $TS_SAN_CFLAGS -IInclude -fsanitize=address -fuse-ld=lld -shared -fPIC Plugins/undo/undo.c -o "$plugins/undo.so" &&
   "$clang" $TS_SAN_CFLAGS -IInclude -fsanitize=address -fuse-ld=lld -shared -fPIC Plugins/journal/journal.c -o "$plugins/journal.so" -lpthread &&
   python3 Tests/harness/gen_registry.py -o "$work/registry_undo.c" Tests/plugins/test_undo.c &&
   "$clang" $TS_SAN_CFLAGS -IInclude -ITests/harness -ITests/plugins -fsanitize=address Tests/harness/ts_test.c \
     Tests/plugins/test_undo.c "$work/registry_undo.c" -o "$work/test_undo" \
     -fuse-ld=lld -L"$asan/lib" -Wl,-rpath,"$asan/lib" -lturnstate -lpthread -ldl; then
  echo "== test_undo.c (ASan)"
  ASAN_OPTIONS=detect_leaks=1 "$work/test_undo" --plugins "$plugins" 2>&1 | tee "$work/c.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || grep -qE '^[0-9]+ passed, [1-9]' "$work/c.log" || echo "0 passed, 1 failed" >>"$work/c.log"
  tally "$work/c.log" "test_undo.c"
else
  failed=$((failed + 1)); echo "  FAIL test_undo.c (ASan) does not build"
fi

# 2. Python (ctypes).
echo "== Tests/python/test_undo.py"
(cd Tests/python && TURNSTATE_LIB=$build/lib/libturnstate.so TURNSTATE_PLUGINS_DIR=$build/plugins python3 -m unittest test_undo -v) \
  >"$work/py.log" 2>&1
py=$?
cat "$work/py.log"
n=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in.*/\1/p' "$work/py.log")
if [ "$py" -eq 0 ] && [ -n "$n" ]; then passed=$((passed + n)); else failed=$((failed + 1)); fi

# 3. Rust.
echo "== bindings/rust/turnstate/tests/undo.rs"
(cd bindings/rust && CARGO_TARGET_DIR=$build/rust TURNSTATE_LIB_DIR=$build/lib TURNSTATE_PLUGINS_DIR=$build/plugins \
   LD_LIBRARY_PATH=$build/lib "$CARGO" test --offline --quiet --test undo) >"$work/rust.log" 2>&1
rs=$?
cat "$work/rust.log"
read -r rp rf < <(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$work/rust.log" | tail -n1)
if [ "$rs" -eq 0 ] && [ -n "${rp:-}" ]; then passed=$((passed + rp)); else failed=$((failed + ${rf:-1})); fi

# 4. C++.
echo "== Tests/undo/test_undo.cpp"
if "$cxx" -std=c++17 -Wall -Wextra -pedantic -Werror -IInclude Tests/undo/test_undo.cpp -o "$work/test_undo_cpp" \
     -L"$build/lib" -Wl,-rpath,"$build/lib" -lturnstate; then
  "$work/test_undo_cpp" "$build/plugins" 2>&1 | tee "$work/cpp.log"
  tally "$work/cpp.log" "test_undo.cpp"
else
  failed=$((failed + 1)); echo "  FAIL test_undo.cpp does not build"
fi

# 5. With replicate.so, on a Redis stream.
echo "== Tests/undo/replicas.c (replicate.so -> undo.so, Redis)"
redis=${REDIS_SERVER:-redis-server}
if ! command -v "$redis" >/dev/null; then
  failed=$((failed + 1)); echo "  FAIL $redis not found (.ci/setup.sh test installs redis-server)"
elif cc $TS_CFLAGS -IInclude Tests/undo/replicas.c -o "$work/replicas" -L"$build/lib" -Wl,-rpath,"$build/lib" -lturnstate -lpthread; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$work/redis"
  "$redis" --port "$port" --bind 127.0.0.1 --dir "$work/redis" --appendonly no --save '' --daemonize yes \
    --pidfile "$work/redis/redis.pid" --logfile "$work/redis/redis.log" >/dev/null
  for _ in $(seq 200); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
  "$work/replicas" "$build/plugins/undo.so" "$build/plugins/replicate.so" "redis://127.0.0.1:$port" undo-test 2>&1 \
    | tee "$work/replicas.log"
  tally "$work/replicas.log" "replicas.c"
else
  failed=$((failed + 1)); echo "  FAIL replicas.c does not build"
fi

# 6. next and dispatch_after, one history.
echo "== Tests/undo/relay.c"
mkdir -p "$work/relay" && chmod 0755 "$work/relay"
if cc $TS_CFLAGS -shared -fPIC -IInclude Tests/undo/relay_plugin.c -o "$work/relay/relay.so" &&
   cc $TS_CFLAGS -IInclude Tests/undo/relay.c -o "$work/relay/relay" -L"$build/lib" -Wl,-rpath,"$build/lib" -lturnstate; then
  "$work/relay/relay" "$work/relay/relay.so" "$build/plugins/undo.so" 2>&1 | tee "$work/relay.log"
  tally "$work/relay.log" "relay.c"
else
  failed=$((failed + 1)); echo "  FAIL relay.c does not build"
fi

echo "checks: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
