#!/usr/bin/env bash
# Checks the store's shutdown protocol model (Sources/TurnstateC/PluginHost/ShutdownProtocol.pml)
# with spin, exhaustively:
#   - the protocol as implemented (two configurations: ts_store_destroy on
#     its own thread, and from inside a listener) must pass the safety run
#     (assertions, invalid end states = deadlock) and the liveness run (the
#     LTL property `terminates`, pan -a);
#   - each deliberately broken variant must FAIL with the expected kind of
#     error, which proves the model catches that bug (the deadlock one both
#     in the safety run and through the LTL property).
# Prints one line per check and a summary "model: N passed, M failed".
# Called by `make test-model`. Needs spin and a C compiler.
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 2
MODEL=$PWD/Sources/TurnstateC/PluginHost/ShutdownProtocol.pml
CC=${CC:-cc}
command -v spin >/dev/null || { echo "model: spin is missing (apt-get install spin)"; echo "model: 0 passed, 1 failed"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# figures FILE: "N states, depth D, T s" from a pan report.
figures() {
  local states depth time
  states=$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$1" | head -n1)
  depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$1" | head -n1)
  time=$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\) seconds.*/\1/p' "$1" | head -n1)
  echo "${states:-?} states, depth ${depth:-?}, ${time:-?} s"
}

# build NAME FLAGS...: pan_safe (no claim) and pan_live (LTL) for a variant.
build() {
  local name=$1; shift
  mkdir -p "$work/$name"
  (cd "$work/$name" && spin -a "$@" "$MODEL" >spin.out 2>&1) || { cat "$work/$name/spin.out"; return 1; }
  (cd "$work/$name" && $CC -O0 -w -DNOCLAIM -o pan_safe pan.c && $CC -O0 -w -o pan_live pan.c) || return 1
}

# expect_pass NAME FLAGS...: safety and liveness both report errors: 0.
expect_pass() {
  local name=$1; shift
  if ! build "$name" "$@"; then
    failed=$((failed + 1)); echo "FAIL: $name: the model does not compile"; return
  fi
  (cd "$work/$name" && ./pan_safe -m100000 >safe.out 2>&1)
  (cd "$work/$name" && ./pan_live -a -m100000 >live.out 2>&1)
  if grep -q "errors: 0" "$work/$name/safe.out" && grep -q "errors: 0" "$work/$name/live.out" &&
     ! grep -q "error: max search depth too small" "$work/$name/safe.out" "$work/$name/live.out"; then
    passed=$((passed + 1))
    echo "ok: $name ($*): safety $(figures "$work/$name/safe.out"); liveness $(figures "$work/$name/live.out")"
  else
    failed=$((failed + 1))
    echo "FAIL: $name ($*): spin found an error:"
    grep -E "^pan:|errors:" "$work/$name/safe.out" "$work/$name/live.out"
  fi
}

# expect_fail NAME PATTERN FLAGS...: the safety run finds an error matching
# PATTERN. With NAME ending in "-liveness", the liveness run (pan -a) must.
expect_fail() {
  local name=$1 pattern=$2 run=./pan_safe; shift 2
  case $name in *-liveness) run="./pan_live -a" ;; esac
  if ! build "$name" "$@"; then
    failed=$((failed + 1)); echo "FAIL: $name: the model does not compile"; return
  fi
  (cd "$work/$name" && $run -m100000 >safe.out 2>&1)
  if grep -q "errors: [1-9]" "$work/$name/safe.out" && grep -qE "$pattern" "$work/$name/safe.out"; then
    passed=$((passed + 1))
    echo "ok: $name ($*) is caught: $(grep -m1 -E "$pattern" "$work/$name/safe.out" | sed 's/^pan:1: //')" \
         "($(figures "$work/$name/safe.out"))"
  else
    failed=$((failed + 1))
    echo "FAIL: $name ($*): spin did not find the expected error ($pattern):"
    grep -E "^pan:|errors:" "$work/$name/safe.out"
  fi
}

expect_pass protocol
expect_pass protocol-destroy-in-callback -DDESTROY_IN_CALLBACK
expect_fail destroy-before-close "assertion violated +!\(destroyed" -DBROKEN_ORDER
expect_fail next-after-return "assertion violated" -DBROKEN_NEXT_LIVE
expect_fail next-twice "assertion violated \(st2==14\)" -DBROKEN_NEXT_ONCE
expect_fail destroy-under-lock "invalid end state" -DBROKEN_UNDER_LOCK
expect_fail destroy-under-lock-liveness "acceptance cycle" -DBROKEN_UNDER_LOCK
expect_fail destroy-at-once-in-callback "invalid end state|assertion violated" -DDESTROY_IN_CALLBACK -DBROKEN_UNDER_LOCK

echo "model: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
