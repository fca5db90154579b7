#!/usr/bin/env bash
# Builds the middleware plugins (Plugins/*/X.c -> build/plugins/X.so) with
# nothing but the headers, checks that none of them links libturnstate (or
# anything but libc) and that each exports only ts_plugin_entry, builds the
# tests (Tests/plugins/test_*.c, on the C harness Tests/harness/ts_test.h ->
# build/tests/plugins_test_*), runs them,
# runs them again under valgrind, and prints one summary line:
#     plugins: N passed, M failed
# Exit status 0 only if nothing failed. Called by `make test-plugins`.
#
# `make coverage` runs it with TS_BUILD=build/coverage (the instrumented
# library there, the plugins and tests built into it), CC=clang,
# TS_EXTRA_CFLAGS (the coverage flags) and TS_VALGRIND=0.
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
BUILD=${TS_BUILD:-$ROOT/build}
CC=${CC:-cc}
# The C flags (TS_CFLAGS): the Makefile's.
. "$ROOT/Tests/flags.sh"
WARN="$TS_CFLAGS ${TS_EXTRA_CFLAGS:-}"
PLUGINS=(guard delay journal undo)
TESTS=(guard delay journal loader shutdown migrate undo unlock loading)

# Plugin files and every folder above them (a sticky root-owned one like /tmp
# excepted) must not be writable by others, or the library refuses to load
# them (test_loader.c makes its own folders to test exactly that).
umask 022

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# Adds the "N passed, M failed" line of a test program's output to the totals.
tally() {
  local line n m
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -n1)
  if [ -z "$line" ]; then
    fail "$2: no summary line"
    return
  fi
  n=${line%% passed*}
  m=${line#*passed, }
  m=${m%% failed*}
  passed=$((passed + n))
  failed=$((failed + m))
}

if [ ! -e "$BUILD/lib/libturnstate.so" ]; then
  echo "run.sh: $BUILD/lib/libturnstate.so is missing; building it with make lib"
  make lib || { echo "plugins: 0 passed, 1 failed"; exit 1; }
fi

mkdir -p "$BUILD/plugins" "$BUILD/tests"
chmod go-w "$BUILD/plugins"

# ---- Plugins -------------------------------------------------------------
for p in "${PLUGINS[@]}"; do
  so=$BUILD/plugins/$p.so
  rm -f "$so"
  if ! $CC $WARN -shared -fPIC -IInclude "Plugins/$p/$p.c" -o "$so" -lpthread; then
    fail "plugin $p does not build"
    continue
  fi
  chmod 755 "$so"
  pass
  needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  if grep -q libturnstate <<<"$needed"; then
    fail "plugin $p links libturnstate (NEEDED: $needed)"
  elif [ "$(echo $needed)" != "libc.so.6" ]; then
    fail "plugin $p needs more than libc (NEEDED: $needed)"
  else
    pass
  fi
  # The linker's own symbols (as in Tests/abi/check_exports.sh) do not count.
  exported=$(nm -D --defined-only "$so" | awk '{print $3}' \
    | grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' | tr '\n' ' ')
  if [ "$(echo $exported)" != "ts_plugin_entry" ]; then
    fail "plugin $p exports more than ts_plugin_entry: $exported"
  else
    pass
  fi
  echo "built $so (NEEDED: $needed)"
done

# ---- Tests ---------------------------------------------------------------
# Variants of a test plugin for the loader's refusals (test_loader.c).
mkdir -p "$BUILD/plugins/loader"
chmod 755 "$BUILD/plugins/loader"
loader_variant() { # name flags...
  local name=$1; shift
  if $CC $WARN -shared -fPIC -IInclude "$@" Tests/plugins/loader_plugin.c -o "$BUILD/plugins/loader/$name.so"; then
    chmod 755 "$BUILD/plugins/loader/$name.so"
  else
    fail "loader variant $name does not build"
  fi
}
loader_variant ok
loader_variant abi-7 -DTP_ABI=7
loader_variant abi-0 -DTP_ABI=0
loader_variant small "-DTP_SIZE=8"
loader_variant fail-create -DTP_FAIL_CREATE
loader_variant no-entry -DTP_NO_ENTRY
loader_variant null-entry -DTP_NULL_ENTRY
loader_variant no-run -DTP_NO_RUN
loader_variant no-name -DTP_NO_NAME

# The journal without /proc/locks (test_journal.c: a lock holder it cannot name).
mkdir -p "$BUILD/plugins/noproc"
chmod 755 "$BUILD/plugins/noproc"
if $CC $WARN -shared -fPIC -IInclude '-DJOURNAL_PROC_LOCKS="/nonexistent/locks"' Plugins/journal/journal.c \
    -o "$BUILD/plugins/noproc/journal.so" -lpthread; then
  chmod 755 "$BUILD/plugins/noproc/journal.so"
else
  fail "journal variant noproc does not build"
fi

# The shutdown watcher (test_shutdown.c): exports its counters for the test.
mkdir -p "$BUILD/plugins/shutdown"
chmod 755 "$BUILD/plugins/shutdown"
if $CC $WARN -shared -fPIC -IInclude -ITests/plugins Tests/plugins/shutdown_plugin.c -o "$BUILD/plugins/shutdown/watch.so" -lpthread; then
  chmod 755 "$BUILD/plugins/shutdown/watch.so"
else
  fail "shutdown watcher does not build"
fi

# The unlocked() watcher (test_unlock.c): exports its counters for the test.
mkdir -p "$BUILD/plugins/unlock"
chmod 755 "$BUILD/plugins/unlock"
if $CC $WARN -shared -fPIC -IInclude Tests/plugins/unlock_plugin.c -o "$BUILD/plugins/unlock/unlock.so" -lpthread; then
  chmod 755 "$BUILD/plugins/unlock/unlock.so"
else
  fail "unlock watcher does not build"
fi

# The loading() recorder (test_loading.c): exports its records for the test.
mkdir -p "$BUILD/plugins/loading"
chmod 755 "$BUILD/plugins/loading"
if $CC $WARN -shared -fPIC -IInclude Tests/plugins/loading_plugin.c -o "$BUILD/plugins/loading/loading.so"; then
  chmod 755 "$BUILD/plugins/loading/loading.so"
else
  fail "loading recorder does not build"
fi

# Each test program is on the C harness (Tests/harness/ts_test.h): its
# registry and main() written from its file by gen_registry.py.
LINK="-L$BUILD/lib -Wl,-rpath,$BUILD/lib -lturnstate -lpthread -ldl"
for t in "${TESTS[@]}"; do
  bin=$BUILD/tests/plugins_test_$t
  registry=$BUILD/tests/registry_plugins_$t.c
  if ! python3 Tests/harness/gen_registry.py -o "$registry" "Tests/plugins/test_$t.c" ||
     ! $CC $WARN -IInclude -ITests/harness -ITests/plugins Tests/harness/ts_test.c "Tests/plugins/test_$t.c" \
       "$registry" -o "$bin" $LINK; then
    fail "test_$t does not build"
    continue
  fi
  out=$BUILD/tests/plugins_test_$t.out
  echo "== test_$t"
  "$bin" --plugins "$BUILD/plugins" 2>&1 | tee "$out"
  status=${PIPESTATUS[0]}
  tally "$out" "test_$t"
  [ "$status" -eq 0 ] || grep -qE '^[0-9]+ passed, [1-9]' "$out" || fail "test_$t exited with $status"
done

# ---- Under valgrind ------------------------------------------------------
# Valgrind 3.19 (Debian 12) cannot read the DWARF 5 debug info of the Swift
# release library and gives up ("Possibly corrupted debuginfo file"), so the
# test programs run against a copy of it without debug info.
if [ "${TS_VALGRIND:-1}" = 0 ]; then
  echo "== valgrind runs skipped (TS_VALGRIND=0)"
elif command -v valgrind >/dev/null && command -v objcopy >/dev/null; then
  vglib=$BUILD/tests/plugins_vglib
  mkdir -p "$vglib"
  objcopy --strip-debug "$(readlink -f "$BUILD/lib/libturnstate.so")" "$vglib/libturnstate.so.0"
  # Its private Swift runtime, found through its RUNPATH $ORIGIN/turnstate.
  ln -sfn "$(readlink -f "$BUILD/lib/turnstate")" "$vglib/turnstate"
  supp=()
  [ -s Tests/c/valgrind.supp ] && supp=(--suppressions="$ROOT/Tests/c/valgrind.supp")
  for t in delay guard journal shutdown undo; do
    bin=$BUILD/tests/plugins_test_$t
    [ -x "$bin" ] || continue
    out=$BUILD/tests/plugins_test_$t.valgrind.out
    echo "== test_$t under valgrind"
    LD_LIBRARY_PATH=$vglib valgrind -q --error-exitcode=99 --leak-check=full \
      --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect "${supp[@]}" \
      "$bin" --plugins "$BUILD/plugins" --quick >"$out" 2>&1
    status=$?
    grep -E '^[0-9]+ passed, [0-9]+ failed$|^(ran|skipped) |FAILED|^==[0-9]+==' "$out"
    tally "$out" "test_$t under valgrind"
    if [ "$status" -eq 99 ]; then
      fail "test_$t: valgrind found errors or leaks (see $out)"
    elif [ "$status" -ne 0 ] && ! grep -qE '^[0-9]+ passed, [1-9]' "$out"; then
      fail "test_$t under valgrind exited with $status (see $out)"
    fi
  done
else
  fail "valgrind or objcopy not found (install valgrind and binutils)"
fi

echo "plugins: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
