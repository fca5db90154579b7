#!/usr/bin/env bash
# What a C user gets from `make install`: installs Turnstate into a temporary
# prefix, builds Tests/pkgconfig/consumer.c with nothing but the flags that
# pkg-config gives, and runs it without LD_LIBRARY_PATH. Also checks the
# installed version, header and SONAME. Ends with one summary line:
# "pkgconfig: N passed, N failed". Run by `make test-pkgconfig`.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/turnstate-pkgconfig.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

passed=0 failed=0
pass() { passed=$((passed + 1)); echo "  ok   $1"; }
fail() { failed=$((failed + 1)); echo "  FAIL $1"; }
finish() {
  echo "pkgconfig: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

header="$root/Include/turnstate.h"
version=$(for part in MAJOR MINOR PATCH; do
            sed -n "s/^#define TS_VERSION_$part \([0-9][0-9]*\).*/\1/p" "$header"
          done | paste -sd.)
major=${version%%.*}
echo "pkgconfig: header version $version, temporary prefix $tmp"

# 1. make install, as a user would run it (no LIBDIR/DESTDIR from the caller).
if env -u LIBDIR -u DESTDIR -u MAKEFLAGS -u MFLAGS \
     make -C "$root" --no-print-directory install PREFIX="$tmp" >"$tmp/install.log" 2>&1; then
  pass "make install PREFIX=$tmp"
else
  sed 's/^/    | /' "$tmp/install.log"
  fail "make install PREFIX=$tmp"
  finish
fi

export PKG_CONFIG_PATH="$tmp/lib/pkgconfig"
unset PKG_CONFIG_SYSROOT_DIR

# 2. pkg-config finds the installed turnstate.pc, with the header's version.
modversion=$(pkg-config --modversion turnstate 2>&1)
if [ "$modversion" = "$version" ]; then
  pass "pkg-config --modversion turnstate = $modversion"
else
  fail "pkg-config --modversion turnstate = '$modversion', expected '$version'"
fi
pc_prefix=$(pkg-config --variable=prefix turnstate 2>&1)
if [ "$pc_prefix" = "$tmp" ]; then
  pass "turnstate.pc points at the prefix"
else
  fail "turnstate.pc prefix is '$pc_prefix', expected '$tmp'"
fi

# 3. The installed header is the project's header.
if cmp -s "$header" "$tmp/include/turnstate.h"; then
  pass "installed include/turnstate.h is Include/turnstate.h"
else
  fail "installed include/turnstate.h differs from Include/turnstate.h (or is missing)"
fi

# 4. The library and its SONAME.
soname=$(readelf -d "$tmp/lib/libturnstate.so" 2>&1 | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ "$soname" = "libturnstate.so.$major" ]; then
  pass "readelf -d lib/libturnstate.so: SONAME $soname"
else
  fail "SONAME of lib/libturnstate.so is '$soname', expected 'libturnstate.so.$major'"
fi
if [ -e "$tmp/lib/libturnstate.so.$major" ] && [ -f "$tmp/lib/libturnstate.so.$version" ]; then
  pass "lib/libturnstate.so -> libturnstate.so.$major -> libturnstate.so.$version"
else
  fail "lib/ lacks libturnstate.so.$major or libturnstate.so.$version: $(ls "$tmp/lib" | paste -sd' ')"
fi

# 5. Build the consumer with pkg-config's flags; the .pc carries no rpath (as
# sqlite3's and libgit2's do not), so a consumer of a private prefix adds its
# own, as docs/packaging.md shows.
cflags_libs=$(pkg-config --cflags --libs turnstate)
case "$cflags_libs" in
  *rpath*) fail "pkg-config --libs turnstate carries an rpath: $cflags_libs" ;;
  *) pass "pkg-config --libs turnstate has no rpath" ;;
esac
cflags_libs="$cflags_libs -Wl,-rpath,$(pkg-config --variable=libdir turnstate)"
echo "  cc consumer.c $cflags_libs -o \$tmp/consumer"
# shellcheck disable=SC2086 # the flags are words
if (cd "$here" && cc consumer.c $cflags_libs -o "$tmp/consumer") >"$tmp/cc.log" 2>&1; then
  pass "consumer.c compiles and links"
else
  sed 's/^/    | /' "$tmp/cc.log"
  fail "consumer.c compiles and links"
  finish
fi
needed=$(readelf -d "$tmp/consumer" | sed -n 's/.*(NEEDED).*\[\(libturnstate[^]]*\)\].*/\1/p')
if [ "$needed" = "libturnstate.so.$major" ]; then
  pass "consumer needs $needed"
else
  fail "consumer needs '$needed', expected 'libturnstate.so.$major'"
fi
resolved=$(env -u LD_LIBRARY_PATH ldd "$tmp/consumer" | sed -n 's/.*libturnstate[^ ]* => \([^ ]*\).*/\1/p')
if [ "$resolved" = "$tmp/lib/libturnstate.so.$major" ]; then
  pass "without LD_LIBRARY_PATH, libturnstate resolves to the installed copy"
else
  fail "without LD_LIBRARY_PATH, libturnstate resolves to '$resolved', expected '$tmp/lib/libturnstate.so.$major'"
fi

# 6. Run it.
env -u LD_LIBRARY_PATH "$tmp/consumer" >"$tmp/run.log" 2>&1
status=$?
sed 's/^/    | /' "$tmp/run.log"
if [ "$status" -eq 0 ]; then
  pass "consumer runs and exits 0"
else
  fail "consumer exits $status"
fi

finish
