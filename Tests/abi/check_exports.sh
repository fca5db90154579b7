#!/usr/bin/env bash
# Compares the functions that a shared library exports with those that a
# header declares: every ts_ function in the header must be exported, and
# nothing else may be (besides the linker's own symbols).
set -euo pipefail
header=$1 lib=$2
# A declaration names the function right before "(" (no space); typedefs of
# function pointers (ts_*_fn) and struct fields are not functions.
declared=$(grep -oE '\bts_[a-z0-9_]+\(' "$header" | grep -v '_fn(' | tr -d '(' | sort -u)
# Global symbols only (upper-case type letter); local ones are not exported.
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[A-Z]$/ {print $3}' \
  | grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' | sed 's/@.*//' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
status=0
if [ -n "$missing" ]; then echo "declared in $header but not exported by $lib:"; echo "$missing" | sed 's/^/  /'; status=1; fi
if [ -n "$extra" ]; then echo "exported by $lib but not declared in $header:"; echo "$extra" | sed 's/^/  /'; status=1; fi
count=$(echo "$declared" | wc -l)
[ $status -eq 0 ] && echo "exports: $count ts_ functions, exactly those of $(basename "$header")"
# One check per declared function (exported or not), and a failed one per
# export the header does not declare.
n_missing=$(echo -n "$missing" | grep -c . || true)
n_extra=$(echo -n "$extra" | grep -c . || true)
echo "exports: $((count - n_missing)) passed, $((n_missing + n_extra)) failed"
exit $status
