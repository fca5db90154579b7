#!/usr/bin/env bash
# What `make install` ships, checked as it would run on a machine without
# Swift: installs into a temporary prefix, checks the files (modes, stripped
# with debug information beside them, no RUNPATH into the build machine; the
# man pages), builds Tests/install/app.c with nothing but pkg-config's flags
# (and the rpath a private prefix needs), then, in a private mount namespace with the
# Swift toolchain hidden under an empty folder, checks that ldd finds every
# library and runs the app: every shipped plugin loaded, dispatches through
# them, one copy of the Swift runtime mapped. Then make uninstall removes it all.
#
# Needs root (unshare -m, mount --bind). Ends with "checks: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
# The C flags (TS_C_STD, TS_C_WARN): the Makefile's.
. Tests/flags.sh
CC=${CC:-cc}
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "  ok   $*"; }
fail() { failed=$((failed + 1)); echo "  FAIL $*"; }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
finish() { echo "checks: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

tmp=$(mktemp -d /tmp/turnstate-install.XXXXXX)
chmod 0755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

# 1. make install, as a user runs it.
if make --no-print-directory install PREFIX="$prefix" >"$tmp/install.log" 2>&1; then
  pass "make install PREFIX=$prefix"
else
  sed 's/^/    | /' "$tmp/install.log"; fail "make install PREFIX=$prefix"; finish
fi
libdir=$prefix/lib
export PKG_CONFIG_PATH=$libdir/pkgconfig
pluginsdir=$(pkg-config --variable=pluginsdir turnstate)
check "pkg-config --variable=pluginsdir turnstate is LIBDIR/turnstate/plugins ($pluginsdir)" \
  test "$pluginsdir" = "$libdir/turnstate/plugins"
libs=$(pkg-config --libs turnstate)
check "pkg-config --libs has no rpath ($libs)" bash -c '[[ "$0" != *rpath* ]]' "$libs"
check "turnstate.pc has Libs.private" grep -q '^Libs.private: ' "$libdir/pkgconfig/turnstate.pc"

# 2. The installed files.
mapfile -t elves < <(find "$prefix" -name '*.so*' -type f ! -name '*.debug' | sort)
for plugin in guard delay journal undo logger; do
  check "plugin $plugin.so installed" test -f "$pluginsdir/$plugin.so"
done
check "the private Swift runtime installed (LIBDIR/turnstate/libswiftCore.so)" test -f "$libdir/turnstate/libswiftCore.so"
for elf in "${elves[@]}"; do
  name=${elf#"$prefix"/}
  mode=$(stat -c %a "$elf")
  check "$name is 0644 (is $mode)" test "$mode" = 644
  runpath=$(readelf -d "$elf" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
  check "$name: no RUNPATH outside \$ORIGIN (${runpath:-none})" \
    bash -c 'IFS=:; for p in $0; do [[ "$p" == \$ORIGIN* ]] || exit 1; done' "$runpath"
  check "$name: stripped (no .symtab, no .debug_info)" \
    bash -c '! readelf -S "$0" | grep -qE "\.symtab|\.debug_info"' "$elf"
done
for elf in "$libdir/libturnstate.so."*.*.* "$pluginsdir"/*.so; do
  name=${elf#"$prefix"/}
  link=$(readelf --string-dump=.gnu_debuglink "$elf" 2>/dev/null | sed -n 's/.*\] *\(.*\.debug\)$/\1/p' | head -n1)
  # gdb looks for the debuglink's name beside the file and in .debug/ there.
  check "$name: debug information in $(dirname "$name")/.debug/${link:-?}" test -n "$link" -a -f "$(dirname "$elf")/.debug/$link"
done

# 2b. The man pages: one per page make man wrote, gzip -9n (no name, no time:
# the same bytes on every build), 0644, and man finds and renders them.
mandir=$prefix/share/man
mapfile -t want < <(python3 docs/man/genman.py --list Include/turnstate.h Include/turnstate_plugin.h)
missing=() notn=() notmode=()
for page in "${want[@]}"; do
  f=$mandir/$page.gz
  if [ ! -f "$f" ]; then missing+=("$page.gz"); continue; fi
  gzip -dc "$f" | gzip -9nc | cmp -s - "$f" || notn+=("$page.gz")
  [ "$(stat -c %a "$f")" = 644 ] || notmode+=("$page.gz")
done
check "the ${#want[@]} man pages are installed in PREFIX/share/man${missing[*]:+ (missing: ${missing[*]})}" \
  test "${#want[@]}" -gt 20 -a "${#missing[@]}" -eq 0
check "the man pages are gzip -9n and 0644${notn[*]:+ (not -9n: ${notn[*]})}${notmode[*]:+ (not 0644: ${notmode[*]})}" \
  test "${#notn[@]}" -eq 0 -a "${#notmode[@]}" -eq 0
for page in "3 ts_store_dispatch" "7 turnstate" "7 turnstate-plugins"; do
  read -r sec name <<<"$page"
  found=$(man -M "$mandir" -w "$sec" "$name" 2>&1)
  check "man -M PREFIX/share/man -w $sec $name finds $found" test "$found" = "$mandir/man$sec/$name.$sec.gz"
done
check "man -M PREFIX/share/man 3 ts_store_dispatch shows its synopsis" \
  bash -c 'MANWIDTH=80 man -M "$0" 3 ts_store_dispatch 2>/dev/null | grep -q "ts_status ts_store_dispatch(ts_store \*store, const char \*action_json);"' "$mandir"

# 3. A consumer from pkg-config's flags; a private prefix adds its own rpath.
flags=$(pkg-config --cflags --libs turnstate)
if $CC $TS_C_STD $TS_C_WARN Tests/install/app.c -o "$tmp/app" $flags \
     -Wl,-rpath,"$(pkg-config --variable=libdir turnstate)" 2>"$tmp/cc.log"; then
  pass "cc app.c \$(pkg-config --cflags --libs turnstate) -Wl,-rpath,LIBDIR"
else
  sed 's/^/    | /' "$tmp/cc.log"; fail "app.c builds"; finish
fi

# 4. With the Swift toolchain hidden (Tests/install/without-swift.sh): ldd, and the app.
mkdir -p "$tmp/scratch"
cat >"$tmp/hidden.sh" <<SCRIPT
set -u
for elf in "$tmp/app" ${elves[*]}; do
  if ldd "\$elf" | grep -q "not found"; then echo "ldd \$elf:"; ldd "\$elf"; exit 4; fi
done
echo "ldd: every library found"
"$tmp/app" "$pluginsdir" "$tmp/scratch"
SCRIPT
Tests/install/without-swift.sh bash "$tmp/hidden.sh" >"$tmp/hidden.log" 2>&1
status=$?
sed 's/^/    | /' "$tmp/hidden.log"
# The app's own checks count as this suite's checks.
app_passed=$(sed -n 's/^checks: \([0-9]*\) passed.*/\1/p' "$tmp/hidden.log")
app_failed=$(sed -n 's/^checks: [0-9]* passed, \([0-9]*\) failed/\1/p' "$tmp/hidden.log")
passed=$((passed + ${app_passed:-0})) failed=$((failed + ${app_failed:-0}))
check "with the Swift toolchain hidden: ldd finds everything, the app passes (exit $status)" test "$status" -eq 0

# 5. make uninstall takes back every file make install put there.
if make --no-print-directory uninstall PREFIX="$prefix" >"$tmp/uninstall.log" 2>&1; then
  left=$(find "$prefix" \( -type f -o -type l \) | sed "s|^$prefix/||" | paste -sd' ')
  check "make uninstall leaves no file behind${left:+ (left: $left)}" test -z "$left"
else
  sed 's/^/    | /' "$tmp/uninstall.log"; fail "make uninstall PREFIX=$prefix"
fi
finish
