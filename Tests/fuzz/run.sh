#!/usr/bin/env bash
# Runs the libFuzzer harnesses built by `make fuzz-build` (build/asan/bin).
#
#   Tests/fuzz/run.sh fuzz   ASAN_DIR SECONDS [libFuzzer options] -- TARGET...
#   Tests/fuzz/run.sh replay ASAN_DIR 0       [libFuzzer options] -- TARGET...
#
# fuzz: each harness in turn (never two at once) for SECONDS, starting from
# the committed seeds (Tests/fuzz/corpus/TARGET, only read) and the inputs of
# earlier runs (ASAN_DIR/corpus/TARGET, where new inputs go); crashes and
# invariant violations go to ASAN_DIR/findings/TARGET. Prints executions,
# corpus size and findings per harness at the end; fails if anything was found.
# Open faults named in TS_FUZZ_KNOWN (default: none) are stepped
# over while fuzzing, never in the replay; their reproducers wait in
# Tests/fuzz/open/TARGET until they are fixed.
# The dictionary is Tests/fuzz/TARGET.dict when there is one, else json.dict.
# replay: runs every committed corpus file through its harness once (no
# mutation), so that a fault found once stays fixed; fails on the first fault.
# Ends with "fuzz-replay: N passed, M failed": one check per input replayed
# (a harness that faults counts the inputs it finished before, and one failure).
# A target with Tests/fuzz/fuzz_TARGET.py is a Python harness (atheris),
# run with TS_FUZZ_PYTHON (its venv, Tests/fuzz/py_venv.sh); its replay needs
# no atheris, and is followed by its seeded run of TS_FUZZ_SEEDED (3000)
# random cases, which steps over the open faults named in TS_FUZZ_SEEDED_KNOWN.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
mode=$1 asan=$2 seconds=$3
shift 3
opts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
shift
targets=("$@")
summary=() failed=0 replayed=0 faults=0

for t in "${targets[@]}"; do
  bin=$asan/bin/fuzz_$t
  seeds=$ROOT/Tests/fuzz/corpus/$t
  py=
  if [ -f "$ROOT/Tests/fuzz/fuzz_$t.py" ]; then
    py=${TS_FUZZ_PYTHON:?run.sh: TS_FUZZ_PYTHON (the venv of Tests/fuzz/py_venv.sh) is not set}
    bin=$ROOT/Tests/fuzz/fuzz_$t.py
  fi
  [ -n "$py" ] || [ -x "$bin" ] || { echo "run.sh: $bin is missing (make fuzz-build)" >&2; exit 2; }
  if [ "$mode" = replay ] && [ -n "$py" ]; then
    files=("$seeds"/*)
    echo "== replay fuzz_$t: ${#files[@]} inputs, then ${TS_FUZZ_SEEDED:-3000} seeded cases"
    out=$asan/replay_$t.log
    start=$SECONDS
    TS_FUZZ_KNOWN= "$py" "$bin" "${files[@]}" >"$out" 2>&1
    status=$?
    TS_FUZZ_KNOWN=${TS_FUZZ_SEEDED_KNOWN-} "$py" "$bin" --seeded "${TS_FUZZ_SEEDED:-3000}" >>"$out" 2>&1 || status=1
    grep -E '^(FAIL|  |[0-9]+ (inputs|seeded)|Traceback|[A-Za-z]*Error)' "$out" | cut -c1-400 | tail -n 24
    counts=$(sed -n 's/^store-patch: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$out" | awk '{ p += $1; f += $2 } END { print p + 0, f + 0 }')
    replayed=$((replayed + ${counts% *})) faults=$((faults + ${counts#* }))
    if [ "$status" -eq 0 ]; then
      summary+=("fuzz_$t: ${#files[@]} inputs replayed and ${TS_FUZZ_SEEDED:-3000} seeded cases, no fault ($((SECONDS - start)) s)")
    else
      summary+=("fuzz_$t: FAULT (see $out)")
      failed=1
      [ "${counts#* }" -gt 0 ] || faults=$((faults + 1))
    fi
  elif [ "$mode" = replay ]; then
    files=("$seeds"/*)
    echo "== replay fuzz_$t: ${#files[@]} inputs"
    out=$asan/replay_$t.log
    start=$SECONDS
    if TS_FUZZ_KNOWN= "$bin" "${opts[@]}" "${files[@]}" >"$out" 2>&1; then
      summary+=("fuzz_$t: ${#files[@]} inputs replayed, no fault ($((SECONDS - start)) s)")
      replayed=$((replayed + ${#files[@]}))
    else
      grep -E 'INVARIANT|ERROR: |SUMMARY|Running: ' "$out" | tail -n 12
      summary+=("fuzz_$t: FAULT (see $out)")
      failed=1
      replayed=$((replayed + $(grep -c '^Executed ' "$out"))) faults=$((faults + 1))
    fi
  else
    work=$asan/corpus/$t findings=$asan/findings/$t dict=$ROOT/Tests/fuzz/json.dict
    [ -f "$ROOT/Tests/fuzz/$t.dict" ] && dict=$ROOT/Tests/fuzz/$t.dict
    mkdir -p "$work" "$findings"
    log=$asan/fuzz_$t.log
    echo "== fuzz_$t for ${seconds} s (log: $log)"
    TS_FUZZ_KNOWN=${TS_FUZZ_KNOWN-} ${py:+"$py"} "$bin" ${py:+-atheris} "${opts[@]}" -dict="$dict" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$findings/" "$work" "$seeds" >"$log" 2>&1
    status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
    found=$(find "$findings" -type f | wc -l)
    size=$(find "$work" "$seeds" -type f | wc -l)
    tail -n 3 "$log" | sed 's/^/   /'
    summary+=("fuzz_$t: ${seconds} s, ${execs:-?} executions, corpus $size inputs, findings $found (exit $status)")
    [ "$status" -eq 0 ] && [ "$found" -eq 0 ] || failed=1
  fi
done
printf '%s\n' "${summary[@]}"
[ "$mode" = replay ] && echo "fuzz-replay: $replayed passed, $faults failed"
exit $failed
