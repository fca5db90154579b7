#!/usr/bin/env bash
# make test-cpp: Include/turnstate.hpp under test.
#   0. compiled as C (SwiftPM's module CTurnstate includes every header of
#      Include/), the header is empty;
#   1. the header alone compiles with -std=c++17 and -std=c++20, -Wall -Wextra
#      -pedantic -Werror and more warnings (-Wshadow -Wconversion
#      -Wold-style-cast), under $CXX and under clang++ (the Swift toolchain's,
#      beside swift, or one on PATH), and refuses C++14 with a clear #error;
#   2. Tests/cpp/test_turnstate.cpp, built with $CXX, runs against build/lib
#      and the plugins of build/plugins;
#   3. the same program runs under valgrind (--quick): no definite or
#      indirect leak, no invalid access (callbacks are freed with the store);
#   4. built with -fsanitize=thread by the Swift toolchain's clang++ against
#      the library built with -sanitize=thread (BUILD_DIR/tsan/lib: make
#      lib-tsan), it runs under ThreadSanitizer (--quick): one ThreadSanitizer
#      runtime sees both sides' locks and atomics;
#   5. built with clang++, it runs again (--quick);
#   6. Tests/cpp/misuse.cpp (a Store destroyed inside each kind of its own
#      callbacks, on the caller's thread and on the delay plugin's worker),
#      built with -fsanitize=address by the Swift toolchain's clang++
#      (ASAN_CXX) against the ASan library and plugins (BUILD_DIR/asan: make
#      asan-plugins), runs under AddressSanitizer with leak checks.
# Ends with "checks: N passed, M failed": the test program's checks plus one
# per step above.
# Usage: Tests/cpp/run.sh BUILD_DIR (default build); CXX (default c++),
# VALGRIND (the Makefile's command line), ASAN_CXX (default: the clang++
# found below).
set -u
cd "$(dirname "$0")/../.."
# The C flags (TS_C_STD): the Makefile's.
. Tests/flags.sh
build=$(realpath "${1:-build}")
cxx=${CXX:-c++}
valgrind=${VALGRIND:-valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect --suppressions=$PWD/Tests/c/valgrind.supp}
clangxx=""
if command -v swift >/dev/null && [ -x "$(dirname "$(realpath "$(command -v swift)")")/clang++" ]; then
  clangxx=$(dirname "$(realpath "$(command -v swift)")")/clang++
elif command -v clang++ >/dev/null; then
  clangxx=$(command -v clang++)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$build/tests"
# The strict warnings: the Makefile's (TS_CXX_WARN, Tests/flags.sh).
# shellcheck disable=SC2206 # a list of flags
strict=($TS_CXX_WARN)
more=(-Wshadow -Wconversion -Wold-style-cast -Wnon-virtual-dtor)
link=(-L"$build/lib" -Wl,-rpath,"$build/lib" -lturnstate -lpthread)
passed=0 failed=0 program_passed=0 program_failed=0
step() { # description command...
  local what=$1; shift
  if "$@" >"$work/out" 2>&1; then passed=$((passed + 1)); echo "ok: $what"; else
    failed=$((failed + 1)); echo "FAILED: $what"; sed 's/^/    /' "$work/out" | tail -40; fi
}
# The program's own line "checks: N passed, M failed" is added to ours.
program() { # description command...
  local what=$1; shift
  "$@" >"$work/prog" 2>&1
  local status=$?
  local line; line=$(grep -E '^checks: [0-9]+ passed, [0-9]+ failed$' "$work/prog" | tail -n1)
  if [ "$status" -eq 0 ] && [ -n "$line" ]; then
    passed=$((passed + 1)); echo "ok: $what (${line#checks: })"
  else
    failed=$((failed + 1)); echo "FAILED: $what (exit $status)"; sed 's/^/    /' "$work/prog" | tail -60
  fi
  if [ -n "$line" ]; then
    read -r p f <<<"$(echo "$line" | sed -E 's/checks: ([0-9]+) passed, ([0-9]+) failed/\1 \2/')"
    program_passed=$((program_passed + p)) program_failed=$((program_failed + f))
  fi
}

printf '#include "turnstate.hpp"\nint main() { return 0; }\n' >"$work/only.cpp"
printf '#include "turnstate.hpp"\n' >"$work/old.cpp"
cxx14_refused() { # compiler
  ! "$1" -std=c++14 -IInclude -fsyntax-only "$work/old.cpp" >"$work/c14" 2>&1 && grep -q "needs C++17" "$work/c14"
}
# SwiftPM compiles every header of Include/ as C into the module CTurnstate
# (Sources/CTurnstate/include): as C, turnstate.hpp must be empty and quiet.
printf '#include "turnstate.hpp"\n#include "turnstate.h"\nint main(void) { return TS_OK; }\n' >"$work/c.c"
step "cc $TS_C_STD: turnstate.hpp compiled as C is empty (SwiftPM's module CTurnstate)" \
  "${CC:-cc}" $TS_C_STD "${strict[@]}" -IInclude -fsyntax-only "$work/c.c"
for c in "$cxx" ${clangxx:+"$clangxx"}; do
  name=$(basename "$c")
  for std in c++17 c++20; do
    step "$name -std=$std: the header alone, strict warnings" "$c" -std=$std "${strict[@]}" "${more[@]}" -IInclude -fsyntax-only "$work/only.cpp"
  done
  step "$name -std=c++14: refused with a clear #error" cxx14_refused "$c"
done

cxxflags=($TS_CXX_STD -O2 -g "${strict[@]}" -IInclude)
step "$cxx: test_turnstate.cpp builds" "$cxx" "${cxxflags[@]}" Tests/cpp/test_turnstate.cpp -o "$build/tests/test_cpp" "${link[@]}"
if [ -x "$build/tests/test_cpp" ]; then
  program "test_turnstate ($cxx)" "$build/tests/test_cpp" --plugins "$build/plugins"
  # shellcheck disable=SC2086
  program "test_turnstate --quick under valgrind" $valgrind "$build/tests/test_cpp" --quick --plugins "$build/plugins"
fi
# ThreadSanitizer over the header's own state (per-thread exception slots,
# the callbacks' containers, subscriptions from many threads) and the library
# under it, both instrumented: against an uninstrumented library the hand-offs
# it makes through its own atomics (the spare action a dispatch reuses) look
# like races, since ThreadSanitizer cannot see them. The toolchain's clang++,
# so that its runtime is the library's.
swift_libs=$(dirname "$(realpath "$(command -v swift)")")/../lib/swift/linux
tsan_link=(-L"$build/tsan/lib" -Wl,-rpath,"$build/tsan/lib" -L"$swift_libs" -Wl,-rpath,"$swift_libs" -lturnstate
           -ldispatch -lBlocksRuntime -lpthread)
step "$clangxx -fsanitize=thread: test_turnstate.cpp builds against build/tsan/lib" "$clangxx" "${cxxflags[@]}" -O1 \
  -fsanitize=thread Tests/cpp/test_turnstate.cpp -o "$build/tests/test_cpp_tsan" "${tsan_link[@]}"
[ -x "$build/tests/test_cpp_tsan" ] &&
  program "test_turnstate --quick under ThreadSanitizer" env SWIFT_BACKTRACE=enable=no TSAN_OPTIONS=halt_on_error=1:exitcode=66 \
    "$build/tests/test_cpp_tsan" --quick --plugins "$build/plugins"
if [ -n "$clangxx" ]; then
  step "clang++: test_turnstate.cpp builds" "$clangxx" "${cxxflags[@]}" Tests/cpp/test_turnstate.cpp -o "$build/tests/test_cpp_clang" "${link[@]}"
  [ -x "$build/tests/test_cpp_clang" ] && program "test_turnstate (clang++)" "$build/tests/test_cpp_clang" --quick --plugins "$build/plugins"
else
  echo "note: no clang++ found (neither beside swift nor on PATH): built with $cxx only"
fi
# A Store destroyed inside its own callbacks: a callable freed while the
# dispatch still runs it is a heap-use-after-free under ASan.
asan_cxx=${ASAN_CXX:-$clangxx}
if [ -z "$asan_cxx" ] || [ ! -e "$build/asan/lib/libturnstate.so" ] || [ ! -e "$build/asan/plugins/delay.so" ]; then
  failed=$((failed + 1))
  echo "FAILED: misuse.cpp under ASan needs the Swift toolchain's clang++ (ASAN_CXX) and $build/asan (make asan-plugins)"
else
  mkdir -p "$build/asan/tests"
  step "$(basename "$asan_cxx") -fsanitize=address: misuse.cpp builds against $build/asan/lib" \
    "$asan_cxx" $TS_CXX_STD -O1 -g -fno-omit-frame-pointer -fsanitize=address "${strict[@]}" -IInclude \
    Tests/cpp/misuse.cpp -o "$build/asan/tests/cpp_misuse" -fuse-ld=lld -L"$build/asan/lib" \
    -Wl,-rpath,"$build/asan/lib" -lturnstate -lpthread
  [ -x "$build/asan/tests/cpp_misuse" ] &&
    program "misuse (a Store destroyed inside its callbacks) under AddressSanitizer" env SWIFT_BACKTRACE=enable=no \
      ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1 \
      LSAN_OPTIONS=suppressions=$PWD/Tests/fuzz/lsan.supp:print_suppressions=0 \
      "$build/asan/tests/cpp_misuse" --plugins "$build/asan/plugins"
fi
echo "checks: $((passed + program_passed)) passed, $((failed + program_failed)) failed"
[ "$failed" -eq 0 ] && [ "$program_failed" -eq 0 ]
