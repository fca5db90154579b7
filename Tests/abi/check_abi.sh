#!/usr/bin/env bash
# The ABI baseline of libturnstate (make test-abi, make abi-baseline).
#
#   check_abi.sh check    BUILD LIBRARY SOVERSION   compare with Tests/abi/
#   check_abi.sh baseline BUILD LIBRARY SOVERSION   rewrite Tests/abi/
#
# What is compared. libturnstate is written in Swift, and libabigail cannot
# read Swift's DWARF (abidw aborts on the library; with
# --exported-interfaces-only it sees the ELF symbols and no types). So the
# ABI is taken from two places:
#  - the types: abi_tool.py turns Include/turnstate.h and
#    Include/turnstate_plugin.h into a C file that defines every declared
#    function with an empty body; compiled with -g into a shared object
#    (SONAME libturnstate.so.SOVERSION; every stub exported), abidw
#    describes it: each function's signature and every struct it reaches, as
#    a C compiler lays them out. That corpus is compared with the committed
#    one (Tests/abi/libturnstate.abi) by abidiff.
#  - the symbols: the dynamic symbol table of the built library (LIBRARY,
#    from `make lib`) must export every function of the baseline (except
#    those declared for plugins to define: ts_plugin_entry) and nothing more.
# And, apart from abidiff, Tests/abi/layout.txt: every public struct member
# by member (offset, size, type with typedefs resolved) and the status codes.
# ts_plugin and ts_store_api are append-only (the plugin ABI: a plugin built
# against an older header reads a prefix of them, checking struct_size):
# new members may only be added at their end. Every other struct is fixed.
# abidiff's own view of these two structs is suppressed
# (Tests/abi/abidiff.suppr): its "members inserted at the end" rule also
# let members inserted in the middle and retyped members through, so the
# layout list is what checks them.
#
# Verdicts:
#  - an incompatible change (a function or export removed, a signature
#    changed, a struct member moved, resized, retyped or removed, a member
#    added to a fixed struct, a status code renumbered) fails, unless the
#    SONAME major (TS_VERSION_MAJOR in Include/turnstate.h) differs from the
#    baseline's: then it passes with a note.
#  - an addition (a new function, export, struct, status code or appended
#    plugin-struct member) fails until the baseline is updated: additions
#    must come with `make abi-baseline` in the same commit, so the baseline
#    always describes the ABI that was released.
#  - `make abi-baseline` refuses to record an incompatible change while the
#    SONAME major stays the same.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
# The C flags (TS_C_STD): the Makefile's.
. Tests/flags.sh
[ $# -eq 4 ] || { echo "usage: $0 check|baseline BUILD LIBRARY SOVERSION" >&2; exit 2; }
mode=$1 build=$2 lib=$3 sover=$4
here=Tests/abi
baseline=$here/libturnstate.abi
layout_base=$here/layout.txt
suppr=$here/abidiff.suppr
# ABI_INCLUDE and ABI_OUT: for Tests/abi/selftest.sh, which checks altered
# copies of the headers.
inc=${ABI_INCLUDE:-Include}
headers=("$inc/turnstate.h" "$inc/turnstate_plugin.h")
inc_abs=$(cd "$inc" && pwd)
append_only=(ts_plugin ts_store_api)
# Declared in the headers for plugins to define; the library does not export them.
plugin_side=(ts_plugin_entry)
out=${ABI_OUT:-$build/abi}
tool() { python3 "$root/$here/abi_tool.py" "$@"; }

for t in abidw abidiff; do
  command -v $t >/dev/null || { echo "abi: $t is missing: apt-get install abigail-tools (.ci/setup.sh test)" >&2; exit 1; }
done
[ -e "$lib" ] || { echo "abi: no library at $lib (make lib)" >&2; exit 1; }
libname=$(basename "$(readlink -f "$lib")")

# The header corpus: stubs compiled in $out (relative names: no build path
# in the DWARF), described by abidw without locations or paths, so that the
# baseline changes only when the ABI does.
mkdir -p "$out"
tool stubs "${headers[@]}" > "$out/stubs.c"
(cd "$out" && ${CC:-cc} $TS_C_STD -O0 -g -w -I"$inc_abs" -shared -fPIC stubs.c \
   -Wl,-soname,libturnstate.so."$sover" -o libturnstate-abi.so)
abidw --no-corpus-path --no-comp-dir-path --no-elf-needed --no-show-locs --type-id-style hash \
  --headers-dir "$inc_abs" --drop-private-types "$out/libturnstate-abi.so" > "$out/libturnstate.abi"
soname=libturnstate.so.$sover
# One python process: the layout list, the functions of both corpora, the
# baseline's SONAME and the layout comparison, as files in $out.
have_base=0
[ -f "$baseline" ] && [ -f "$layout_base" ] && have_base=1
rm -f "$out/base-functions.txt" "$out/base-soname.txt" "$out/layout-compare.txt"
if [ $have_base -eq 1 ]; then
  tool analyze "$out" "$out/libturnstate.abi" "$baseline" "$layout_base" "${headers[@]}" -- "${append_only[@]}"
else
  tool analyze "$out" "$out/libturnstate.abi" - - "${headers[@]}" -- "${append_only[@]}"
fi

# The library's exports (global, defined), as Tests/abi/check_exports.sh reads them.
nm -D --defined-only "$lib" | awk '$2 ~ /^[A-Z]$/ {print $3}' \
  | grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' | sed 's/@.*//' | sort -u > "$out/lib-exports.txt"
printf '%s\n' "${plugin_side[@]}" | sort > "$out/plugin-side.txt"
comm -23 "$out/header-functions.txt" "$out/plugin-side.txt" > "$out/header-exports.txt"

breaks=() news=() report=
# compare: fills breaks, news and report (the baseline against $out).
compare() {
  local base_abi=$baseline rc=0 line
  abidiff --no-added-syms --no-show-locs --suppressions "$suppr" "$base_abi" "$out/libturnstate.abi" \
    > "$out/abidiff.txt" 2>&1 || rc=$?
  if [ $((rc & 1)) -ne 0 ]; then
    echo "abi: abidiff failed (status $rc):" >&2; cat "$out/abidiff.txt" >&2; exit 1
  fi
  # With added functions left out (--no-added-syms), any change abidiff
  # reports is a removal or a change (bit 8: a removed symbol; bit 4: also
  # a changed function or type). A SONAME change alone sets them too.
  if [ $((rc & 12)) -ne 0 ] && grep -qvE '^(ELF SONAME changed|SONAME changed from .*|Functions changes summary: 0 Removed, 0 Changed.*|Variables changes summary: 0 Removed, 0 Changed.*|)$' "$out/abidiff.txt"; then
    breaks+=("abidiff: $(grep -E '^(Functions|Variables) changes summary' "$out/abidiff.txt" | grep -v ' 0 Removed, 0 Changed' | paste -sd';' -) (status $rc)")
    report=$out/abidiff.txt
  fi
  comm -23 "$out/base-functions.txt" "$out/plugin-side.txt" > "$out/base-exports.txt"
  while read -r line; do [ -n "$line" ] && breaks+=("$line is in the baseline but no longer declared in ${headers[*]}"); done \
    < <(comm -23 "$out/base-functions.txt" "$out/header-functions.txt")
  while read -r line; do [ -n "$line" ] && news+=("function $line (declared in the headers)"); done \
    < <(comm -13 "$out/base-functions.txt" "$out/header-functions.txt")
  while read -r line; do [ -n "$line" ] && breaks+=("$line is in the baseline but $libname does not export it"); done \
    < <(comm -23 "$out/base-exports.txt" "$out/lib-exports.txt")
  while read -r line; do [ -n "$line" ] && news+=("$libname exports $line (not in the baseline)"); done \
    < <(comm -13 "$out/base-exports.txt" "$out/lib-exports.txt")
  while read -r line; do
    case $line in
      break:*) breaks+=("${line#break: }") ;;
      new:*) news+=("${line#new: }") ;;
    esac
  done < "$out/layout-compare.txt"
  return 0
}
list() { local x; for x in "$@"; do echo "  - $x"; done; }

nfun=$(wc -l < "$out/header-exports.txt")
nstruct=$(grep -cE '^(struct|union) ' "$out/layout.txt" || true)
ncode=$(grep -c '^status ' "$out/layout.txt" || true)

if [ "$mode" = check ]; then
  [ $have_base -eq 1 ] || {
    echo "abi: no baseline ($baseline, $layout_base): run make abi-baseline and commit Tests/abi/" >&2; exit 1; }
  base_soname=$(cat "$out/base-soname.txt")
  compare
  if [ "$base_soname" != "$soname" ]; then
    echo "abi: note: the SONAME changed ($base_soname -> $soname), so incompatible changes are allowed:" \
         "${#breaks[@]} found, ${#news[@]} additions; run make abi-baseline to record the ABI of $soname"
    [ ${#breaks[@]} -eq 0 ] || list "${breaks[@]}"
    exit 0
  fi
  status=0
  if [ ${#breaks[@]} -gt 0 ]; then
    echo "abi: INCOMPATIBLE change to the ABI of $soname (compared with $baseline):"
    list "${breaks[@]}"
    echo "  Undo it, or make it a new major version: raise TS_VERSION_MAJOR in Include/turnstate.h"
    echo "  (the SONAME follows), then run make abi-baseline."
    [ -z "$report" ] || { echo "  abidiff's report:"; sed 's/^/  | /' "$report"; }
    status=1
  fi
  if [ ${#news[@]} -gt 0 ]; then
    echo "abi: the ABI has additions that $here does not record:"
    list "${news[@]}"
    echo "  Run make abi-baseline and commit Tests/abi/ in the same commit as the change."
    status=1
  fi
  [ $status -eq 0 ] && echo "abi: $soname matches $baseline: $nfun functions (header and $libname exports)," \
    "$nstruct structs (${append_only[*]} append-only), $ncode status codes"
  exit $status
fi

[ "$mode" = baseline ] || { echo "usage: $0 check|baseline BUILD LIBRARY SOVERSION" >&2; exit 2; }
# The library must export exactly what the headers declare, or the baseline
# would describe an ABI that no library has.
if ! cmp -s "$out/header-exports.txt" "$out/lib-exports.txt"; then
  echo "abi-baseline: $lib does not export exactly the functions of the headers (not written):" >&2
  diff "$out/header-exports.txt" "$out/lib-exports.txt" | sed -n 's/^</  declared, not exported:/p; s/^>/  exported, not declared:/p' >&2
  exit 1
fi
if [ $have_base -eq 1 ]; then
  base_soname=$(cat "$out/base-soname.txt")
  compare
  if [ ${#breaks[@]} -gt 0 ] && [ "$base_soname" = "$soname" ]; then
    echo "abi-baseline: not written: incompatible change with the same SONAME ($soname):" >&2
    list "${breaks[@]}" >&2
    echo "  Raise TS_VERSION_MAJOR in Include/turnstate.h for a new SONAME, or undo the change." >&2
    [ -z "$report" ] || { echo "  abidiff's report:"; sed 's/^/  | /' "$report"; } >&2
    exit 1
  fi
  [ "$base_soname" = "$soname" ] || echo "abi-baseline: new SONAME $soname (was $base_soname)"
  [ ${#breaks[@]} -eq 0 ] || { echo "abi-baseline: incompatible changes recorded:"; list "${breaks[@]}"; }
  [ ${#news[@]} -eq 0 ] || { echo "abi-baseline: additions recorded:"; list "${news[@]}"; }
fi
{ head -n1 "$out/libturnstate.abi"
  echo "<!-- The ABI of $soname as the headers declare it (Tests/abi/check_abi.sh). Written by make abi-baseline: do not edit. -->"
  tail -n +2 "$out/libturnstate.abi"; } > "$baseline"
{ echo "# The public structs of $soname member by member (offset and size in bytes, type with"
  echo "# typedefs resolved), and the status codes. Written by make abi-baseline: do not edit."
  echo "# ${append_only[*]}: append-only (new members at the end); the others: fixed."
  cat "$out/layout.txt"; } > "$layout_base"
echo "abi-baseline: wrote $baseline and $layout_base ($soname: $nfun functions, $nstruct structs," \
     "$ncode status codes); commit them with the change"
