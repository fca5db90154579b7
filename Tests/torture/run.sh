#!/usr/bin/env bash
# The concurrency torture test (Tests/torture/torture.c), twice:
#   1. asan: every phase under AddressSanitizer (leaks checked too), against
#      the shipped library build/lib/libturnstate.so and the plugins built
#      with -fsanitize=address: in the shutdown scenario (stores destroyed
#      while the delay plugin's worker dispatches: delay.so then journal.so or
#      guard.so, 300 @@delay ms 0 actions, ts_store_destroy at once) a plugin
#      run() after its destroy() is a heap-use-after-free.
#   2. tsan: every phase (6 threads dispatching, nesting, subscribing,
#      unsubscribing, reading, loading plugins into fresh stores, destroying
#      stores) under ThreadSanitizer, against build/tsan/lib/libturnstate.so
#      (the library built with -sanitize=thread by `make lib-tsan`), with the
#      plugins and the program built with clang -fsanitize=thread.
# Any sanitizer report fails the run (halt_on_error=1); so does a wrong
# counter, a lost listener call, or an unexpected status. No suppressions.
# Prints one line per run and "torture: N passed, M failed": the checks of
# both runs (a run that fails without a failed check, as on a sanitizer
# report, counts one more failure).
# Called by `make test-torture` (which builds both libraries first).
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
BUILD=$ROOT/build
# The toolchain's clang: its sanitizer runtimes match the Swift compiler's.
TOOLCHAIN_BIN=$(dirname "$(readlink -f "$(command -v swift)")")
CLANG=${TORTURE_CLANG:-$TOOLCHAIN_BIN/clang}
SWIFT_LIBS=$TOOLCHAIN_BIN/../lib/swift/linux
# The sanitizer builds' C flags (TS_SAN_CFLAGS): the Makefile's.
. "$ROOT/Tests/flags.sh"
WARN="$TS_SAN_CFLAGS -fuse-ld=lld"
THREADS=${TORTURE_THREADS:-6}
OPS=${TORTURE_OPS:-30000}
ROUNDS=${TORTURE_ROUNDS:-100}

# Plugin files and their folder must not be writable by others.
umask 022

passed=0
failed=0
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# build_set NAME SANITIZER LIBDIR [extra link flags]: the plugins and the
# program into build/NAME.
build_set() {
  local name=$1 sanitizer=$2 libdir=$3; shift 3
  local out=$BUILD/$name p
  mkdir -p "$out/plugins" "$out/bin" && chmod 755 "$out" "$out/plugins" || return 1
  for p in delay journal guard; do
    "$CLANG" $WARN -fsanitize="$sanitizer" -shared -fPIC -IInclude "Plugins/$p/$p.c" \
      -o "$out/plugins/$p.so" -lpthread || return 1
    chmod 755 "$out/plugins/$p.so"
  done
  "$CLANG" $WARN -fsanitize="$sanitizer" -IInclude Tests/torture/torture.c -o "$out/bin/torture" \
    -L"$libdir" -Wl,-rpath,"$libdir" -lturnstate "$@" -lpthread
}

# run NAME LOG COMMAND...: a run passes if it exits 0, printed "0 failed",
# and no sanitizer said anything.
run() {
  local name=$1 log=$2; shift 2
  local start end status
  start=$(date +%s)
  "$@" >"$log" 2>&1
  status=$?
  end=$(date +%s)
  grep -E '^(torture|shared|patch|shutdown):' "$log" | sed "s/^/$name: /"
  local counts p=0 f=0
  counts=$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\1 \2/p' "$log" | tail -n1)
  [ -n "$counts" ] && read -r p f <<<"$counts"
  passed=$((passed + p)) failed=$((failed + f))
  if [ $status -eq 0 ] && [ -n "$counts" ] && [ "$f" -eq 0 ] && ! grep -q "Sanitizer" "$log"; then
    echo "ok: $name: $p checks ($((end - start)) s)"
  else
    [ "$f" -eq 0 ] && failed=$((failed + 1))
    echo "FAIL: $name (exit status $status, $p passed, $f failed, $((end - start)) s); the first report of $log:" >&2
    grep -m1 -B2 -A14 -E "ERROR: AddressSanitizer|WARNING: ThreadSanitizer|^FAIL" "$log" >&2 || tail -n 30 "$log" >&2
  fi
}

for lib in "$BUILD/lib/libturnstate.so" "$BUILD/tsan/lib/libturnstate.so"; do
  [ -e "$lib" ] || { echo "run.sh: $lib is missing (make lib lib-tsan)"; echo "torture: 0 passed, 1 failed"; exit 1; }
done
[ -x "$CLANG" ] || { echo "run.sh: no clang beside swift ($CLANG)"; echo "torture: 0 passed, 1 failed"; exit 1; }

if build_set asan address "$BUILD/lib"; then
  ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
    run asan "$BUILD/asan/torture.log" "$BUILD/asan/bin/torture" --threads "$THREADS" --ops "$OPS" \
    --rounds "$ROUNDS" "$BUILD/asan/plugins"
else
  fail "asan: the torture program or its plugins do not build"
fi

# The toolchain's TSan runtime carries libdispatch interceptors, which need
# libdispatch and the blocks runtime (both ship with Swift and are loaded by
# libturnstate anyway).
if build_set tsan thread "$BUILD/tsan/lib" -L"$SWIFT_LIBS" -Wl,-rpath,"$SWIFT_LIBS" -ldispatch -lBlocksRuntime; then
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    run tsan "$BUILD/tsan/torture.log" "$BUILD/tsan/bin/torture" --threads "$THREADS" --ops "$OPS" \
    --rounds "$ROUNDS" "$BUILD/tsan/plugins"
else
  fail "tsan: the torture program or its plugins do not build"
fi

echo "torture: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
