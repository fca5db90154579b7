#!/usr/bin/env bash
# .ci/step.sh LOG LABEL COMMAND [ARGS...]
#
# One build step of the Makefile, quietly: prints LABEL (one line), runs
# COMMAND with its command line (shell-quoted, as it can be run again) and
# its whole output written to LOG. When COMMAND fails: its last
# TS_STEP_TAIL (40) lines, the path of LOG, and COMMAND's exit status.
#
# TS_VERBOSE=1 (make V=1): prints the command line and lets its output
# through instead (LOG is not written).
# TS_PROGRESS_FD=N: LABEL goes to file descriptor N as well ("  LABEL"), so
# that Tests/run-suites.sh can show the steps of its build step as they
# start while their output goes to the step's log.
set -uo pipefail

[ $# -ge 3 ] || { echo "usage: .ci/step.sh LOG LABEL COMMAND [ARGS...]" >&2; exit 2; }
log=$1 label=$2
shift 2

echo "$label"
if [ -n "${TS_PROGRESS_FD:-}" ]; then
  # A descriptor that is not open is no reason to fail the step.
  { printf '  %s\n' "$label" >&"$TS_PROGRESS_FD"; } 2>/dev/null || true
fi

if [ "${TS_VERBOSE:-}" = 1 ]; then
  printf '%q ' "$@"; echo
  exec "$@"
fi

mkdir -p "$(dirname "$log")"
{ printf '%q ' "$@"; echo; } >"$log"
"$@" >>"$log" 2>&1 </dev/null
status=$?
if [ "$status" -ne 0 ]; then
  tail_lines=${TS_STEP_TAIL:-40}
  {
    echo "FAILED: $label (exit status $status); the last $tail_lines lines of $log:"
    tail -n "$tail_lines" "$log" | sed 's/^/  | /'
    echo "(whole log, with the command line: $log)"
  } >&2
fi
exit "$status"
