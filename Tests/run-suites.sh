#!/usr/bin/env bash
# Tests/run-suites.sh SUITE...   (what `make test` and `make check` run)
#
# First the build step, `make test-build` (what the suites share, built once;
# TS_BUILD_STEP names another: `make check` gives check-build), then each named
# make target as a suite with TS_PREBUILT=1 (so it does not remake what
# the build step made). Goes on after a failure. Prints one line per step:
#
#     PASS test-c               6944 checks                   12.3 s
#     FAIL test-json            2508 checks, 2 failed          3.1 s
#
# (a failing suite's line is followed by the tail of its log), then a line
# with the minutes (and the failed suites), and a last line that is exactly
# "N passed, M failed", counting checks. Each step's whole output goes to
# build/test-logs/STEP.log; when a step fails, its last TEST_LOG_TAIL (60)
# lines and the log's path are shown.
#
# What it is doing shows from the start: the build step's line "test-build:
# ... (log: ...)" comes first, then the line of each of its steps as it starts
# (.ci/step.sh writes them to TS_PROGRESS_FD as well), while their output goes
# to the logs. On a terminal, "running SUITE (log: ...)" stands on the line
# while a suite runs.
#
# A second lane: the suites named in TS_BESIDE (the Makefile's
# TEST_SUITES_BESIDE: suites that mostly wait on servers they start, and
# install nothing) run one after the other beside the others, which run in
# order as before; each finished suite's line (and its log's tail when it
# failed) is printed whole, between the main lane's lines, and counted.
#
# Counting: a suite reports its checks in lines "checks: N passed, M failed"
# (Tests/checks.sh prints one after each test program or script it wraps);
# the runner adds up every such line of the suite's log. A suite that fails
# without counting a failure counts one failed check.
set -u
cd "$(dirname "$0")/.." || exit 2
logs=build/test-logs
tail_lines=${TEST_LOG_TAIL:-60}
mkdir -p "$logs"
rm -f "$logs"/*.log

build_step=${TS_BUILD_STEP:-test-build}
live=0
[ -t 1 ] && live=1
width=10
for s in "$build_step" "$@"; do [ ${#s} -gt $width ] && width=${#s}; done

total_passed=0 total_failed=0 failures=()
started=$(date +%s.%N)

# step NAME [make variables...]: runs `make NAME`, prints its line.
# In the second lane (quiet=1) it writes its line and "P F" to files instead.
quiet=0
step() {
  local name=$1 log=$logs/$1.log start end status p f secs counts line
  shift
  start=$(date +%s.%N)
  if [ "$name" = "$build_step" ]; then
    echo "$name: building what the suites share (log: $log; each step's own log in build/logs)"
    # fd 3: the terminal, for the steps' lines (TS_PROGRESS_FD, .ci/step.sh).
    TS_PROGRESS_FD=3 make --no-print-directory "$name" "$@" 3>&1 >"$log" 2>&1 </dev/null
    status=$?
  else
    [ "$live" = 1 ] && [ "$quiet" = 0 ] && printf '     running %s (log: %s)' "$name" "$log"
    make --no-print-directory "$name" "$@" >"$log" 2>&1 </dev/null
    status=$?
    [ "$live" = 1 ] && [ "$quiet" = 0 ] && printf '\r\033[K'
  fi
  end=$(date +%s.%N)
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  read -r p f < <(awk '/^checks: [0-9]+ passed, [0-9]+ failed$/ { p += $2; f += $4 } END { print p + 0, f + 0 }' "$log")
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  if [ "$quiet" = 1 ]; then
    # The second lane: the main lane prints and counts it (take_beside).
    step_line "$name" "$status" "$p" "$f" "$secs" "$log" >"$beside_dir/$name.out"
    echo "$p $f $status" >"$beside_dir/$name.done"
    return
  fi
  total_passed=$((total_passed + p)) total_failed=$((total_failed + f))
  [ "$status" -eq 0 ] || failures+=("$name")
  step_line "$name" "$status" "$p" "$f" "$secs" "$log"
}

# step_line NAME STATUS PASSED FAILED SECONDS LOG: the PASS/FAIL line, and
# the log's tail after a failure.
step_line() {
  local name=$1 status=$2 p=$3 f=$4 secs=$5 log=$6 counts line
  if [ "$name" = "$build_step" ]; then
    counts=""
  elif [ "$f" -eq 0 ]; then
    counts=$(printf '%8s checks' "$p")
  else
    counts=$(printf '%8s checks, %s failed' "$((p + f))" "$f")
  fi
  line=$(printf '%-*s %-26s' "$width" "$name" "$counts")
  if [ "$status" -eq 0 ]; then
    printf 'PASS %s %7s s\n' "$line" "$secs"
  else
    printf 'FAIL %s %7s s\n' "$line" "$secs"
    echo "---- the last $tail_lines lines of $log:"
    tail -n "$tail_lines" "$log" | sed 's/^/  | /'
    echo "---- (whole log: $log)"
  fi
}

# take_beside: prints and counts the second lane's finished suites not yet
# taken, in the lane's order (the first unfinished one stops it).
beside_taken=0
take_beside() {
  local name p f status i=0
  for name in "${beside[@]}"; do
    i=$((i + 1))
    [ $i -le $beside_taken ] && continue
    [ -f "$beside_dir/$name.done" ] || return 0
    read -r p f status <"$beside_dir/$name.done"
    cat "$beside_dir/$name.out"
    total_passed=$((total_passed + p)) total_failed=$((total_failed + f))
    [ "$status" -eq 0 ] || failures+=("$name")
    beside_taken=$i
  done
}

step "$build_step"
export TS_PREBUILT=1
beside=() main=()
for suite in "$@"; do
  case " ${TS_BESIDE:-} " in
    *" $suite "*) beside+=("$suite") ;;
    *) main+=("$suite") ;;
  esac
done
beside_dir=$logs/beside
rm -rf "$beside_dir"
mkdir -p "$beside_dir"
if [ ${#beside[@]} -gt 0 ]; then
  echo "beside the others: ${beside[*]}"
  (
    quiet=1
    for suite in "${beside[@]}"; do step "$suite"; done
  ) &
  beside_pid=$!
fi
for suite in "${main[@]}"; do
  step "$suite"
  take_beside
done
if [ ${#beside[@]} -gt 0 ]; then
  wait "$beside_pid"
  take_beside
fi

minutes=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", (b - a) / 60 }')
# The last line is exactly "N passed, M failed", the form test tools read;
# the time and the failed suites go on the line before.
if [ ${#failures[@]} -gt 0 ]; then
  echo "failed suites: ${failures[*]} ($minutes min)"
else
  echo "all suites passed ($minutes min)"
fi
echo "$total_passed passed, $total_failed failed"
[ ${#failures[@]} -eq 0 ]
