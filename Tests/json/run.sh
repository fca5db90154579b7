#!/bin/sh
# Build and run the CTurnstateJSON C tests, natively and under valgrind.
# Run from the repository root: sh Tests/json/run.sh
# Needs g++, gcc, libsimdjson-dev (headers + -lsimdjson) and valgrind.
# Builds into a temporary directory; nothing is written into the repository
# but build/json-venv (a venv with jsonpatch from PyPI, made on first use).
# Then Tests/json/patch_diff.py: tsj_patch_apply (turnstate_json.cpp as a
# shared object) against jsonpatch on TSJ_DIFF_CASES (5000) random patches.
# Ends with "json: N passed, M failed": the checks of both runs and the
# differential cases.
# `make coverage` sets TSJ_BUILD (a folder that is kept), TSJ_CC/TSJ_CXX
# (clang), TSJ_EXTRA_FLAGS (the coverage flags) and TSJ_VALGRIND=0.
set -eu

ROOT=$(pwd)
SRC="$ROOT/Sources/CTurnstateJSON"
TEST="$ROOT/Tests/json"
if [ ! -f "$SRC/turnstate_json.cpp" ] || [ ! -f "$TEST/tsj_test.c" ]; then
  echo "run.sh: run me from the repository root" >&2
  exit 2
fi

if [ -n "${TSJ_BUILD:-}" ]; then
  BUILD=$TSJ_BUILD
  mkdir -p "$BUILD"
else
  BUILD=$(mktemp -d "${TMPDIR:-/tmp}/tsj-test.XXXXXX")
  trap 'rm -rf "$BUILD"' EXIT INT TERM
fi
CC=${TSJ_CC:-gcc} CXX=${TSJ_CXX:-g++} EXTRA=${TSJ_EXTRA_FLAGS:-}
# The C and C++ flags (TS_CFLAGS, TS_CXX_STD, TS_CXX_WARN): the Makefile's.
. "$ROOT/Tests/flags.sh"

# shellcheck disable=SC2086 # EXTRA is a list of flags
# shellcheck disable=SC2086 # TS_CXX_* are lists of flags
"$CXX" $TS_CXX_STD -O2 -g $TS_CXX_WARN $EXTRA -I"$SRC/include" -c "$SRC/turnstate_json.cpp" -o "$BUILD/turnstate_json.o"
# The test program: its tests, the harness (Tests/harness/ts_test.h) and the
# registry gen_registry.py writes from the tests' definitions.
python3 "$ROOT/Tests/harness/gen_registry.py" -o "$BUILD/tsj_registry.c" "$TEST/tsj_test.c"
for c in "$TEST/tsj_test.c" "$ROOT/Tests/harness/ts_test.c" "$BUILD/tsj_registry.c"; do
  # shellcheck disable=SC2086 # TS_CFLAGS too
  "$CC" $TS_CFLAGS -pthread $EXTRA -I"$SRC/include" -I"$ROOT/Tests/harness" -c "$c" -o "$BUILD/$(basename "$c" .c).o"
done
# shellcheck disable=SC2086
"$CC" -pthread $EXTRA "$BUILD/tsj_test.o" "$BUILD/ts_test.o" "$BUILD/tsj_registry.o" "$BUILD/turnstate_json.o" \
  -lsimdjson -lstdc++ -o "$BUILD/tsj_test"

# run_test OUT COMMAND...: runs it with its output kept in OUT (and shown),
# exits with its status if it fails, and adds its "N passed, M failed" line
# to the totals.
passed=0 failed=0
run_test() {
  out=$1; shift
  status=0
  "$@" >"$out" 2>&1 || status=$?
  cat "$out"
  [ "$status" -eq 0 ] || exit "$status"
  counts=$(sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1 \2/p' "$out" | tail -n1)
  [ -n "$counts" ] || { echo "run.sh: no summary line from $*"; exit 1; }
  passed=$((passed + ${counts% *})) failed=$((failed + ${counts#* }))
}

echo "== native run"
run_test "$BUILD/native.out" "$BUILD/tsj_test"

if [ "${TSJ_VALGRIND:-1}" = 0 ]; then
  echo "== valgrind run skipped (TSJ_VALGRIND=0)"
elif command -v valgrind >/dev/null 2>&1; then
  echo "== valgrind run"
  # Fewer timing iterations: under valgrind the timings are meaningless.
  run_test "$BUILD/valgrind.out" \
    env TSJ_BENCH_ITERS="${TSJ_VALGRIND_BENCH_ITERS:-50}" TSJ_MANY_KEYS="${TSJ_VALGRIND_MANY_KEYS:-20000}" \
    valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
    --quiet "$BUILD/tsj_test"
  echo "valgrind: no errors, no leaks"
else
  echo "run.sh: valgrind not found" >&2
  exit 1
fi
echo "== differential test against jsonpatch (PyPI)"
# shellcheck disable=SC2086
"$CXX" $TS_CXX_STD -O2 -g $TS_CXX_WARN -shared -fPIC $EXTRA -I"$SRC/include" "$SRC/turnstate_json.cpp" -o "$BUILD/libtsj.so" -lsimdjson
VENV=$ROOT/build/json-venv
if ! "$VENV/bin/python3" -c 'import jsonpatch' 2>/dev/null; then
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q 'jsonpatch==1.48' ||
    { echo "run.sh: could not install jsonpatch from PyPI into $VENV" >&2; exit 1; }
fi
run_test "$BUILD/diff.out" "$VENV/bin/python3" "$TEST/patch_diff.py" "$BUILD/libtsj.so" --cases "${TSJ_DIFF_CASES:-5000}"
echo "json: $passed passed, $failed failed"
