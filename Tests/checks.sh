#!/usr/bin/env bash
# Tests/checks.sh COMMAND [ARGS...]
#
# Runs one test command, passes its output through (stderr merged into
# stdout), and then prints the one line that Tests/run-suites.sh adds up:
#
#     checks: N passed, M failed
#
# N and M come from the last summary line the command printed, in one of the
# forms the project's test programs use:
#   "N passed, M failed" or "NAME: N passed, M failed"   (the C programs and
#                                                      the suites' scripts)
#   "Ran N tests in ..." then "OK" / "FAILED (failures=a, errors=b, skipped=c)"
#                                                     (Python's unittest)
#   "Test run with N tests ... passed|failed"         (swift-testing; each
#                                                      "✘ Test X failed after" is a failure)
#   "Executed N tests, with M failures ..."            (XCTest: the last one, which totals every bundle)
# A command that prints none of them counts as one check; one that prints
# "checks: N passed, M failed" lines itself gets no other. A command that exits
# non-zero counts at least one failure, whatever it printed. Exits with the
# command's status.
set -uo pipefail

[ $# -gt 0 ] || { echo "usage: Tests/checks.sh COMMAND [ARGS...]" >&2; exit 2; }
out=$(mktemp "${TMPDIR:-/tmp}/checks.XXXXXX")
trap 'rm -f "$out"' EXIT

"$@" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}

# A command that prints the runner's own lines already (as Tests/install/run.sh
# does) gets none more, unless it failed without counting a failure.
if grep -qaE '^checks: [0-9]+ passed, [0-9]+ failed$' "$out"; then
  counted=$(awk '/^checks: [0-9]+ passed, [0-9]+ failed$/ { f += $4 } END { print f + 0 }' "$out")
  if [ "$status" -ne 0 ] && [ "$counted" -eq 0 ]; then
    echo "checks.sh: $1 exited with status $status"
    echo "checks: 0 passed, 1 failed"
  fi
  exit "$status"
fi

# The last summary line of any known form decides.
line=$(grep -aE '^([A-Za-z0-9_.-]+: )?[0-9]+ passed, [0-9]+ failed$|^Ran [0-9]+ tests? in |Test run with [0-9]+ tests? |^[[:space:]]*Executed [0-9]+ tests?, with [0-9]+ failures?' "$out" | tail -n1)
passed=0 failed=0
case $line in
  "Ran "*)
    total=$(sed -E 's/^Ran ([0-9]+) .*/\1/' <<<"$line")
    verdict=$(grep -aE '^(OK|FAILED)( \(|$)' "$out" | tail -n1)
    bad=0
    for k in failures errors unexpected\ successes skipped; do
      n=$(sed -nE "s/.*[(, ]${k}=([0-9]+).*/\1/p" <<<"$verdict")
      [ "$k" = skipped ] && { total=$((total - ${n:-0})); continue; }
      bad=$((bad + ${n:-0}))
    done
    passed=$((total - bad)) failed=$bad
    ;;
  *"Test run with "*)
    total=$(sed -E 's/.*Test run with ([0-9]+) tests?.*/\1/' <<<"$line")
    # Each failed test's line; "✘ Test run with ..." is the run, not a test.
    failed=$(grep -aE '^[^ ]+ Test .* failed after [0-9.]+ seconds?' "$out" | grep -acvE '^[^ ]+ Test run with ')
    passed=$((total - failed))
    ;;
  *"Executed "*)
    # XCTest: its last "Executed N tests, with M failures" totals every bundle.
    total=$(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<<"$line")
    failed=$(sed -E 's/.*with ([0-9]+) failures?.*/\1/' <<<"$line")
    passed=$((total - failed))
    ;;
  "")
    if [ "$status" -eq 0 ]; then passed=1; else failed=1; fi
    ;;
  *)
    counts=${line##*: }
    passed=${counts%% passed*}
    failed=${counts#*passed, }
    failed=${failed%% failed*}
    ;;
esac
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "checks.sh: $1 exited with status $status"
  failed=1
fi
echo "checks: $passed passed, $failed failed"
exit "$status"
