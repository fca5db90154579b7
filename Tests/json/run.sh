#!/bin/sh
# Build and run the CTurnstateJSON C tests, natively and under valgrind.
# Run from the repository root: sh Tests/json/run.sh
# Needs g++, gcc, libsimdjson-dev (headers + -lsimdjson) and valgrind.
# Builds into a temporary directory; nothing is written into the repository.
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

# shellcheck disable=SC2086 # EXTRA is a list of flags
"$CXX" -O2 -g -std=c++17 -Wall -Wextra $EXTRA -I"$SRC/include" -c "$SRC/turnstate_json.cpp" -o "$BUILD/turnstate_json.o"
# shellcheck disable=SC2086
"$CC" -O2 -g -std=c99 -Wall -Wextra -pthread $EXTRA -I"$SRC/include" -c "$TEST/tsj_test.c" -o "$BUILD/tsj_test.o"
# shellcheck disable=SC2086
"$CC" -pthread $EXTRA "$BUILD/tsj_test.o" "$BUILD/turnstate_json.o" -lsimdjson -lstdc++ -o "$BUILD/tsj_test"

echo "== native run"
"$BUILD/tsj_test"

if [ "${TSJ_VALGRIND:-1}" = 0 ]; then
  echo "== valgrind run skipped (TSJ_VALGRIND=0)"
elif command -v valgrind >/dev/null 2>&1; then
  echo "== valgrind run"
  # Fewer timing iterations: under valgrind the timings are meaningless.
  TSJ_BENCH_ITERS=${TSJ_VALGRIND_BENCH_ITERS:-50} TSJ_MANY_KEYS=${TSJ_VALGRIND_MANY_KEYS:-20000} \
    valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
    --quiet "$BUILD/tsj_test"
  echo "valgrind: no errors, no leaks"
else
  echo "run.sh: valgrind not found" >&2
  exit 1
fi
