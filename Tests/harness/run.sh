#!/usr/bin/env bash
# Checks the test machinery itself (`make test-harness`):
#   - Tests/checks.sh reads the count of each kind of summary line (C
#     programs, the suites' scripts, Python's unittest, swift-testing), counts
#     a failure for a command that exits non-zero whatever it printed, and
#     passes the command's exit status on;
#   - Tests/run-suites.sh adds up a suite's "checks:" lines, and counts a
#     failed check for a suite that fails without counting one; it names its
#     build step and that step's log first, shows each step of the build as
#     it starts (not its output), and takes another build step
#     (TS_BUILD_STEP, as make check does); its last line is exactly
#     "N passed, M failed";
#   - .ci/step.sh (the Makefile's quiet steps) prints one line, keeps the
#     command line and the output in its log, and on failure shows the log's
#     tail and path and passes the exit status on; TS_VERBOSE=1 (make V=1)
#     shows the command and its output instead;
#   - the C harness (Tests/harness/ts_test.h) and gen_registry.py: bad test
#     names, static tests and duplicates refused; -l, -s; a failing test
#     named; a test with no check fails;
#   - `make help` lists every target of the Makefile's .PHONY list.
# Ends with "harness: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
# What the scripts under test read from the environment, as a caller may
# have set it (make V=1, make check's run-suites.sh): the checks set their own.
unset TS_BUILD_STEP TS_PROGRESS_FD TS_VERBOSE
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); echo "FAIL: $1"; }

# expect WANT_STATUS WANT_LINE COMMAND...: checks.sh's last line and status.
expect() {
  local want_status=$1 want=$2 got status; shift 2
  got=$(Tests/checks.sh "$@" 2>&1 | tail -n1)
  status=$(Tests/checks.sh "$@" >/dev/null 2>&1; echo $?)
  if [ "$got" = "$want" ] && [ "$status" = "$want_status" ]; then
    ok "checks.sh $* -> $want (status $status)"
  else
    bad "checks.sh $*: got '$got' (status $status), expected '$want' (status $want_status)"
  fi
}
say() { printf '%b' "$1"; return "${2:-0}"; }
export -f say

expect 0 "checks: 12 passed, 0 failed" bash -c 'say "x\n12 passed, 0 failed\n"'
expect 1 "checks: 10 passed, 2 failed" bash -c 'say "10 passed, 2 failed\n" 1'
expect 0 "checks: 7 passed, 0 failed" bash -c 'say "2 passed, 0 failed\nplugins: 7 passed, 0 failed\n"'
expect 3 "checks: 5 passed, 1 failed" bash -c 'say "5 passed, 0 failed\n" 3'
expect 0 "checks: 1 passed, 0 failed" true
expect 1 "checks: 0 passed, 1 failed" false
expect 0 "checks: 9 passed, 0 failed" bash -c 'say "Ran 11 tests in 0.2s\n\nOK (skipped=2)\n"'
expect 1 "checks: 6 passed, 3 failed" bash -c 'say "Ran 10 tests in 0.2s\n\nFAILED (failures=1, errors=2, skipped=1)\n" 1'
expect 0 "checks: 3 passed, 0 failed" bash -c 'say "✔ Test a() passed after 0.1 seconds.\n✔ Test run with 3 tests in 2 suites passed after 0.2 seconds.\n"'
expect 1 "checks: 2 passed, 1 failed" bash -c 'say "✘ Test b() recorded an issue at X.swift:3:4: Expectation failed: 1 == 2\n✘ Test b() failed after 0.2 seconds with 1 issue.\n✘ Suite S failed after 0.3 seconds with 1 issue.\n✘ Test run with 3 tests in 1 suite failed after 0.3 seconds with 1 issue.\n" 1'
# XCTest: the last "Executed" line totals every bundle.
expect 0 "checks: 4 passed, 0 failed" bash -c 'say "\t Executed 2 tests, with 0 failures (0 unexpected) in 0.1 (0.1) seconds\n\t Executed 4 tests, with 0 failures (0 unexpected) in 0.1 (0.1) seconds\n"'
expect 1 "checks: 3 passed, 1 failed" bash -c 'say "\t Executed 4 tests, with 1 failure (0 unexpected) in 0.1 (0.1) seconds\n" 1'
# A command that prints the runner's lines itself: nothing added (the last
# line is its own), unless it fails without counting a failure.
expect 0 "checks: 5 passed, 0 failed" bash -c 'say "checks: 3 passed, 0 failed\nchecks: 5 passed, 0 failed\n"'
if [ "$(Tests/checks.sh bash -c 'say "checks: 8 passed, 0 failed\n"' | grep -c '^checks:')" = 1 ]; then
  ok "checks.sh adds no line to a command's own checks: lines"
else
  bad "checks.sh adds a line to a command's own checks: lines (they would count twice)"
fi
expect 2 "checks: 0 passed, 1 failed" bash -c 'say "checks: 4 passed, 0 failed\n" 2'

# run-suites.sh against a Makefile of fake suites (it runs `make` in the
# repository root: a copy of the script in a scratch folder stands in).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/Tests" "$work/.ci"
cp Tests/run-suites.sh Tests/checks.sh "$work/Tests/"
cp .ci/step.sh "$work/.ci/"
cat >"$work/Makefile" <<'MK'
SHELL := /bin/bash
test-build:
	@.ci/step.sh build/logs/one.log "step one" true
	@.ci/step.sh build/logs/two.log "step two" sh -c 'echo the output of step two'
check-build:
	@.ci/step.sh build/logs/three.log "step three" true
good:
	@echo "checks: 40 passed, 0 failed"; echo "checks: 2 passed, 0 failed"
counted:
	@echo "checks: 5 passed, 2 failed"; exit 1
silent:
	@echo "oops"; exit 1
MK
out=$(cd "$work" && Tests/run-suites.sh good counted silent 2>&1)
status=$?
last=$(tail -n1 <<<"$out")
before=$(tail -n2 <<<"$out" | head -n1)
if [ "$status" -ne 0 ] && [ "$last" = "47 passed, 3 failed" ] && [[ $before == "failed suites: counted silent ("*" min)" ]]; then
  ok "run-suites.sh adds up the checks and counts a silent failure: $before / $last"
else
  bad "run-suites.sh: status $status, last line '$last'"
fi
if grep -qE '^PASS good +42 checks' <<<"$out" && grep -qE '^FAIL counted +7 checks, 2 failed' <<<"$out" &&
   grep -q '^  | oops' <<<"$out" && [ -f "$work/build/test-logs/silent.log" ]; then
  ok "run-suites.sh: a line per suite, the tail of a failing one, the logs kept"
else
  bad "run-suites.sh output:"; sed 's/^/    /' <<<"$out"
fi
# The build step: its line and log first, then its steps' lines, then its result.
first=$(head -n1 <<<"$out")
order=$(grep -oE '^(  step one|  step two|PASS test-build)' <<<"$out" | paste -sd'/')
if [[ $first == "test-build: "*"(log: build/test-logs/test-build.log"* ]] && [ "$order" = "  step one/  step two/PASS test-build" ] &&
   ! grep -q 'the output of step two' <<<"$out" && grep -q 'the output of step two' "$work/build/logs/two.log"; then
  ok "run-suites.sh: says what it builds first ($first), then each step as it starts, output in the logs"
else
  bad "run-suites.sh, the build step: first line '$first', order '$order'"; sed 's/^/    /' <<<"$out"
fi
out=$(cd "$work" && TS_BUILD_STEP=check-build Tests/run-suites.sh good 2>&1)
if grep -q '^  step three' <<<"$out" && grep -qE '^PASS check-build' <<<"$out" && ! grep -q 'test-build' <<<"$out" &&
   [ "$(tail -n1 <<<"$out")" = "42 passed, 0 failed" ]; then
  ok "run-suites.sh with TS_BUILD_STEP=check-build (make check): that build step, and the last line '42 passed, 0 failed'"
else
  bad "run-suites.sh with TS_BUILD_STEP=check-build:"; sed 's/^/    /' <<<"$out"
fi

# .ci/step.sh: one line, the log; a failure's tail, path and status.
out=$(.ci/step.sh "$work/s/ok.log" "cc thing" sh -c 'echo compiler says hi' 2>&1)
status=$?
if [ "$status" = 0 ] && [ "$out" = "cc thing" ] && [ "$(head -n1 "$work/s/ok.log")" = "sh -c echo\\ compiler\\ says\\ hi " ] &&
   grep -qx 'compiler says hi' "$work/s/ok.log"; then
  ok "step.sh: one line, the command line and the output in the log"
else
  bad "step.sh: status $status, output '$out', log:"; sed 's/^/    /' "$work/s/ok.log"
fi
out=$(.ci/step.sh "$work/s/bad.log" "cc broken" sh -c 'echo "error: no such thing"; exit 4' 2>&1)
status=$?
if [ "$status" = 4 ] && grep -qx 'cc broken' <<<"$out" && grep -q '^FAILED: cc broken (exit status 4)' <<<"$out" &&
   grep -q '^  | error: no such thing' <<<"$out" && grep -qF "$work/s/bad.log" <<<"$out"; then
  ok "step.sh: a failing step shows the tail and the path of its log, exit status 4 passed on"
else
  bad "step.sh, failing: status $status, output:"; sed 's/^/    /' <<<"$out"
fi
out=$(TS_VERBOSE=1 .ci/step.sh "$work/s/v.log" "cc loud" echo 'a b' 2>&1)
if [ "$out" = $'cc loud\necho a\\ b \na b' ] && [ ! -e "$work/s/v.log" ]; then
  ok "step.sh with TS_VERBOSE=1 (make V=1): the command line and its output"
else
  bad "step.sh, TS_VERBOSE=1: output '$out'"
fi

# The C harness (ts_test.h) and its registry (gen_registry.py): names off the
# pattern, static tests and duplicates are refused and nothing is written; a
# program built from a registry runs every test once, -s picks a topic or a
# test, a -s that names nothing is an error, a failing check is reported with
# its test's name, and a test that checks nothing fails.
. Tests/flags.sh
gen=Tests/harness/gen_registry.py
mkdir -p "$work/g"
refused() { # description want-in-stderr source-text...
  local what=$1 want=$2; shift 2
  rm -f "$work/g/reg.c"
  printf '%s\n' "$@" >"$work/g/test_topic.c"
  if ! python3 $gen -o "$work/g/reg.c" "$work/g/test_topic.c" 2>"$work/g/err" && [ ! -e "$work/g/reg.c" ] &&
     grep -qF -- "$want" "$work/g/err"; then
    ok "gen_registry refuses $what"
  else
    bad "gen_registry does not refuse $what: $(cat "$work/g/err")"
  fi
}
refused "a name without __<rule>" "test_topic_noRule: a test is named test_<topic>__<rule>" \
  'void test_topic_noRule(void) {}'
refused "a rule in snake_case" "test_topic__no_camel: a test is named" 'void test_topic__no_camel(void) {}'
refused "a static test" "is static" 'static void test_topic__hidden(void) {}'
refused "a test of another topic in test_topic.c" "have the topic 'topic'" 'void test_other__rule(void) {}'
refused "a test defined twice" "test_topic__twice is defined twice" \
  'void test_topic__twice(void) {}' 'void test_topic__twice(void) {}'
refused "a test file with no test" "no test defined" 'static int helper(void) { return 1; }'
refused "a definition with its return type on the line before" "on one line" 'void' 'test_topic__split(void) {}'
refused "a misspelt suite hook" "ts_test_suite_teardwon: a suite hook is one of" \
  'void test_topic__rule(void) {}' 'void ts_test_suite_teardwon(void) {}'
refused "a static suite hook" "ts_test_suite_setup: a suite hook is one of" \
  'void test_topic__rule(void) {}' 'static void ts_test_suite_setup(void) {}'
refused "a suite hook defined twice" "ts_test_suite_teardown is defined more than once" \
  'void test_topic__rule(void) {}' 'void ts_test_suite_teardown(void) {}' 'void ts_test_suite_teardown(void) {}'
# A hook's prototype (a shared header's) is not its definition.
printf '%s\n' 'void test_topic__rule(void) {}' 'void ts_test_suite_setup(void);' 'void ts_test_suite_teardown(void)' ';' \
  >"$work/g/test_topic.c"
if python3 $gen -o "$work/g/reg.c" "$work/g/test_topic.c" 2>"$work/g/err" &&
   grep -q 'hooks = {NULL, NULL, NULL}' "$work/g/reg.c"; then
  ok "gen_registry takes a hook's prototype for no hook"
else
  bad "gen_registry on a hook's prototype: $(cat "$work/g/err" "$work/g/reg.c" 2>/dev/null)"
fi
cat >"$work/g/test_demo.c" <<'C'
#include "ts_test.h"
int demo_broken;
void test_demo__onePassingCheck(void) { CHECK_INT(1 + 1, 2); }
void test_demo__failsWhenBroken(void) { CHECK_MSG(!demo_broken, "broken on purpose"); }
void test_demo__checksNothing(void) {}
void test_demo__skippedWithAReason(void) { ts_test_skip("not here"); }
void ts_test_suite_setup(void) { demo_broken = 1; }
void test_demo__prototypesAreNotTests(void);
C
# Suite options and a teardown (Tests/plugins: --plugins DIR, temporary folders).
cat >"$work/g/test_hooks.c" <<'C'
#include "ts_test.h"
#include <string.h>
static const char *dir = "unset";
static int set_up;
int ts_test_suite_option(int argc, char **argv, int i) {
    if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
        dir = argv[i + 1];
        return 2;
    }
    return 0;
}
void ts_test_suite_setup(void) { set_up = 1; printf("setup sees dir=%s\n", dir); }
void test_hooks__setupRanFirst(void) { CHECK_INT(set_up, 1); }
void test_hooks__optionReachedTheSuite(void) { CHECK_STR(dir, "given"); }
void ts_test_suite_teardown(void) { printf("teardown\n"); CHECK_MSG(set_up == 1, "teardown after setup"); }
C
# shellcheck disable=SC2086 # lists of flags
if python3 $gen --suite demo -o "$work/g/reg_demo.c" "$work/g/test_demo.c" &&
   ${CC:-cc} $TS_CFLAGS -ITests/harness Tests/harness/ts_test.c "$work/g/test_demo.c" "$work/g/reg_demo.c" \
     -o "$work/g/demo" -lpthread 2>"$work/g/cc.err"; then
  list=$("$work/g/demo" -l)
  out=$("$work/g/demo" 2>&1); status=$?
  if [ "$list" = $'test_demo__onePassingCheck\ntest_demo__failsWhenBroken\ntest_demo__checksNothing\ntest_demo__skippedWithAReason' ]; then
    ok "the registry lists each test once, in the source's order (a prototype is not a test)"
  else
    bad "the registry's list: $list"
  fi
  if [ "$status" = 1 ] && [ "$(tail -n1 <<<"$out")" = "demo: 1 passed, 2 failed" ] &&
     grep -q '^.*test_demo.c:4: \[test_demo__failsWhenBroken\] FAILED: !demo_broken$' <<<"$out" &&
     grep -q '^    broken on purpose$' <<<"$out" && grep -qx 'FAILED test_demo__failsWhenBroken' <<<"$out" &&
     grep -qx 'FAILED test_demo__checksNothing' <<<"$out" &&
     grep -qx 'skipped test_demo__skippedWithAReason: not here' <<<"$out"; then
    ok "a failing check names its test and file:line; a test that checks nothing fails; a skip says why"
  else
    bad "the demo program's run (status $status):"; sed 's/^/    /' <<<"$out"
  fi
  out=$("$work/g/demo" -s demo__onePassingCheck 2>&1); status=$?
  if [ "$status" = 0 ] && [ "$(tail -n1 <<<"$out")" = "demo: 1 passed, 0 failed" ]; then
    ok "-s TOPIC__RULE runs that test alone"
  else
    bad "-s demo__onePassingCheck (status $status): $out"
  fi
  out=$("$work/g/demo" -s demo__noSuchTest 2>&1); status=$?
  if [ "$status" = 2 ] && grep -q 'no test or topic named "demo__noSuchTest"' <<<"$out"; then
    ok "-s naming no test is an error (exit 2), not an empty green run"
  else
    bad "-s demo__noSuchTest (status $status): $out"
  fi
else
  bad "the demo program did not build: $(cat "$work/g/cc.err")"
fi
# shellcheck disable=SC2086 # lists of flags
if python3 $gen -o "$work/g/reg_hooks.c" "$work/g/test_hooks.c" &&
   ${CC:-cc} $TS_CFLAGS -ITests/harness Tests/harness/ts_test.c "$work/g/test_hooks.c" "$work/g/reg_hooks.c" \
     -o "$work/g/hooks" -lpthread 2>"$work/g/cc.err"; then
  out=$("$work/g/hooks" --quick --dir given 2>&1); status=$?
  if [ "$status" = 0 ] && [ "$(head -n1 <<<"$out")" = "setup sees dir=given" ] &&
     [ "$(tail -n3 <<<"$out" | head -n1)" = "teardown" ] && [ "$(tail -n1 <<<"$out")" = "3 passed, 0 failed" ]; then
    ok "a suite's option reaches it before setup; teardown runs after the tests, its check counted"
  else
    bad "the hooks program's run (status $status):"; sed 's/^/    /' <<<"$out"
  fi
  out=$("$work/g/hooks" -l 2>&1); status=$?
  if [ "$status" = 0 ] && ! grep -qx 'setup sees.*\|teardown' <<<"$out"; then
    ok "-l lists without running setup or teardown"
  else
    bad "hooks -l (status $status): $out"
  fi
  out=$("$work/g/hooks" --nope 2>&1); status=$?
  if [ "$status" = 2 ] && grep -q '^usage:' <<<"$out"; then
    ok "an option neither the harness nor the suite takes is a usage error (exit 2)"
  else
    bad "hooks --nope (status $status): $out"
  fi
else
  bad "the hooks program did not build: $(cat "$work/g/cc.err")"
fi

# make help: every .PHONY target, each once.
phony=$(sed -n '/^\.PHONY:/,/[^\\]$/p' Makefile | sed 's/^\.PHONY://; s/\\//' | tr -s ' \t' '\n' | grep . | sort)
listed=$(make --no-print-directory help | sed -n 's/^  \([a-z][a-z0-9-]*\) .*/\1/p' | sort)
missing=$(comm -23 <(echo "$phony") <(echo "$listed" | sort -u))
if [ -z "$missing" ] && [ "$(echo "$listed" | uniq -d)" = "" ]; then
  ok "make help lists the $(echo "$phony" | wc -l) .PHONY targets"
else
  bad "make help does not list: $(echo $missing)"
fi

echo "harness: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
