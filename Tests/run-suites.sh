#!/usr/bin/env bash
# Runs each named make target as a test suite, goes on after a failure, and
# ends with one summary line: "suites: N passed, N failed".
set -u
cd "$(dirname "$0")/.."
passed=0 failed=0 failures=()
for suite in "$@"; do
  echo "=== $suite"
  if make --no-print-directory "$suite"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failures+=("$suite")
  fi
done
[ ${#failures[@]} -gt 0 ] && echo "failed suites: ${failures[*]}"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
