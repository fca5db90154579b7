#!/bin/sh
# Build and run the CTurnstateJSON C tests, natively and under valgrind.
# Run from the repository root: sh Tests/json/run.sh
# Needs g++, gcc, libsimdjson-dev (headers + -lsimdjson) and valgrind.
# Builds into a temporary directory; nothing is written into the repository.
set -eu

ROOT=$(pwd)
SRC="$ROOT/Sources/CTurnstateJSON"
TEST="$ROOT/Tests/json"
if [ ! -f "$SRC/turnstate_json.cpp" ] || [ ! -f "$TEST/tsj_test.c" ]; then
  echo "run.sh: run me from the repository root" >&2
  exit 2
fi

BUILD=$(mktemp -d "${TMPDIR:-/tmp}/tsj-test.XXXXXX")
trap 'rm -rf "$BUILD"' EXIT INT TERM

g++ -O2 -g -std=c++17 -Wall -Wextra -I"$SRC/include" -c "$SRC/turnstate_json.cpp" -o "$BUILD/turnstate_json.o"
gcc -O2 -g -std=c99 -Wall -Wextra -pthread -I"$SRC/include" -c "$TEST/tsj_test.c" -o "$BUILD/tsj_test.o"
gcc -pthread "$BUILD/tsj_test.o" "$BUILD/turnstate_json.o" -lsimdjson -lstdc++ -o "$BUILD/tsj_test"

echo "== native run"
"$BUILD/tsj_test"

if command -v valgrind >/dev/null 2>&1; then
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
