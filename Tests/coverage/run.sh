#!/usr/bin/env bash
# `make coverage`: line and branch coverage of Sources/ and Plugins/ from the
# suites of `make test` that run code, as ONE report:
#   test-swift                 swift test --enable-code-coverage (.build-coverage-swift)
#   test-c, test-python        against an instrumented libturnstate (debug,
#                              .build-coverage -> build/coverage/lib)
#   test-plugins               instrumented C plugins (clang) and logger plugin
#                              (.build-coverage-plugins) -> build/coverage/plugins
#   test-json                  tsj_test with an instrumented turnstate_json.cpp
#   test-faults                fault injection, against the instrumented library
#                              and plugins (its thousands of children merge
#                              their profiles on line: no %p in their file name)
# Left out: test-swift-tsan (the same Swift tests again), test-exports (reads
# symbols, runs nothing), test-pkgconfig and test-readme (they build and run
# small consumers against the installed or normal library; test-c covers more).
# Valgrind runs are skipped: they repeat the plain runs with --quick.
#
# Profiles: build/coverage/profiles (one .profraw per process and module),
# merged into build/coverage/turnstate.profdata. Prints a per-file table and
# the totals; writes build/coverage/html/index.html, build/coverage/summary.json
# and build/coverage/uncovered.txt (every uncovered line, by file).
# Exit status 0 when every suite passed (coverage figures do not fail it).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
# The C flags (TS_CFLAGS): the Makefile's.
. Tests/flags.sh
COV=$ROOT/build/coverage
PROFILES=$COV/profiles
SWIFT=${SWIFT:-swift}
TOOLS=$(dirname "$(readlink -f "$(command -v "$SWIFT")")")
CLANG=$TOOLS/clang
PROFDATA=$TOOLS/llvm-profdata
LLVMCOV=$TOOLS/llvm-cov
for tool in "$CLANG" "$PROFDATA" "$LLVMCOV"; do
  [ -x "$tool" ] || { echo "coverage: $tool not found (it comes with the Swift toolchain)" >&2; exit 1; }
done
start=$(date +%s)

rm -rf "$PROFILES" "$COV/html" "$COV/turnstate.profdata"
mkdir -p "$PROFILES"
# %p: one file per process; %m: one per instrumented module (library, each
# plugin, test program), merged on line when a module is loaded twice.
export LLVM_PROFILE_FILE=$PROFILES/%p-%m.profraw

COVFLAGS="-fprofile-instr-generate -fcoverage-mapping"
# The profile runtime is linked into each plugin statically; --exclude-libs
# keeps its symbols out of the plugin's exports (ts_plugin_entry only).
PLUGIN_COVFLAGS="$COVFLAGS -Wl,--exclude-libs,ALL"
MAKEVARS=(
  BUILD="$COV" LIB_CONFIG=debug
  RELEASE_SCRATCH=.build-coverage
  # --enable-code-coverage instruments the Swift targets only; the C and C++
  # targets (CTurnstateJSON, CTurnstateSupport) need clang's flags as well.
  "LIB_SWIFTFLAGS=--enable-code-coverage -Xcc -fprofile-instr-generate -Xcc -fcoverage-mapping"
  PLUGIN_SCRATCH=.build-coverage-plugins PLUGIN_SWIFTFLAGS=--enable-code-coverage
  CC="$CLANG" "PLUGIN_CFLAGS=$TS_CFLAGS -shared -fPIC -IInclude $PLUGIN_COVFLAGS"
  VALGRIND=true
)
export TS_EXTRA_CFLAGS=$PLUGIN_COVFLAGS TS_VALGRIND=0
export TSJ_BUILD=$COV/json TSJ_CC=$CLANG TSJ_CXX=$CLANG++ TSJ_EXTRA_FLAGS=$COVFLAGS TSJ_VALGRIND=0

failed=()
run() { # name command...
  local name=$1; shift
  echo "=== coverage: $name"
  if ! "$@"; then failed+=("$name"); fi
}
run test-c make --no-print-directory "${MAKEVARS[@]}" test-c
run test-python make --no-print-directory "${MAKEVARS[@]}" test-python
run test-plugins make --no-print-directory "${MAKEVARS[@]}" test-plugins
run test-json make --no-print-directory "${MAKEVARS[@]}" test-json
run test-faults env LLVM_PROFILE_FILE="$PROFILES/faults-%m.profraw" \
  make --no-print-directory "${MAKEVARS[@]}" FAULTS_CC=cc test-faults
# SwiftPM sets LLVM_PROFILE_FILE itself for the test run (into its codecov
# folder) and merges the result only when every test passed: its raw
# profiles are taken as they are, so a failing test still leaves figures.
codecov=$(dirname "$("$SWIFT" test --scratch-path .build-coverage-swift --show-codecov-path)")
rm -f "$codecov"/*.profraw "$codecov"/default.profdata
run test-swift "$SWIFT" test --scratch-path .build-coverage-swift --enable-code-coverage

echo "=== coverage: report"
shopt -s nullglob
inputs=("$PROFILES"/*.profraw "$codecov"/*.profraw)
"$PROFDATA" merge -sparse -o "$COV/turnstate.profdata" "${inputs[@]}"

# Every instrumented module: the library, the plugins, the JSON test program
# and the Swift test bundle (the core and the C face, compiled into it).
objects=("$(readlink -f "$COV/lib/libturnstate.so")")
for p in guard delay journal undo logger; do objects+=("$COV/plugins/$p.so"); done
objects+=("$COV/json/tsj_test")
objects+=("$("$SWIFT" build --scratch-path .build-coverage-swift --show-bin-path)/turnstatePackageTests.xctest")
args=(-instr-profile "$COV/turnstate.profdata" "${objects[0]}")
for o in "${objects[@]:1}"; do args+=(-object "$o"); done
args+=(-ignore-filename-regex '(^|/)(Tests|Examples|Benchmarks|Include|\.build[^/]*)/|^/opt/|^/usr/')

"$LLVMCOV" export -summary-only "${args[@]}" >"$COV/summary.json"
"$LLVMCOV" show -format=html -show-branches=count -output-dir "$COV/html" "${args[@]}" >/dev/null
"$LLVMCOV" show -format=text -show-branches=count "${args[@]}" >"$COV/annotated.txt"
python3 Tests/coverage/report.py "$COV/summary.json" "$COV/annotated.txt" "$COV/uncovered.txt" "$ROOT"

echo "html: $COV/html/index.html; uncovered lines: $COV/uncovered.txt"
echo "coverage: $(( $(date +%s) - start ))s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "coverage: failed suites: ${failed[*]} (figures above are from what ran)"
  exit 1
fi
