#!/usr/bin/env bash
# What a Debian user gets from `make deb`: runs it, checks the three packages
# in DEBDIR (fields, shlibs, modes, stripping, debug symbols, the man pages), runs lintian
# (an error fails), installs them with apt-get, builds Tests/install/app.c (and
# app.cpp, through turnstate.hpp) with nothing but `pkg-config --cflags
# --libs turnstate`, runs them with the Swift toolchain hidden
# (Tests/install/without-swift.sh: a private mount namespace with an empty
# folder mounted over the toolchain's root; ldd must find everything, the
# process must map one libswiftCore.so, the package's), then purges the
# packages and checks that nothing of them is left.
#
#   Tests/deb/run.sh VERSION DEBDIR      (make test-deb: VERSION from the
#                                         header, DEBDIR build/deb, where
#                                         make deb writes)
#
# Needs root (it installs packages: CI machines are disposable). Whatever
# happens, the EXIT trap purges the packages it installed. Ends with one
# line: "checks: N passed, M failed".
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
version=${1:?usage: run.sh VERSION DEBDIR}
mkdir -p "${2:?usage: run.sh VERSION DEBDIR}"
debdir=$(cd "$2" && pwd)
packages=(libturnstate0 libturnstate-dev libturnstate0-dbgsym)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/turnstate-deb.XXXXXX")
chmod 0755 "$tmp"
installed=0

passed=0 failed=0
pass() { passed=$((passed + 1)); echo "  ok   $1"; }
fail() { failed=$((failed + 1)); echo "  FAIL $1"; }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
indent() { sed 's/^/    | /'; }

purge() {
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${packages[@]}" >"$tmp/purge.log" 2>&1 ||
    dpkg -P "${packages[@]}" >>"$tmp/purge.log" 2>&1
}
cleanup() {
  local status=$?
  if [ "$installed" = 1 ]; then purge || true; fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

finish() {
  echo "checks: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

if [ "$(id -u)" != 0 ]; then
  echo "deb: installs packages, so it runs as root (CI machines are disposable)" >&2
  fail "running as root"
  finish
fi

arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=/usr/lib/$multiarch
major=${version%%.*}
echo "deb: version $version, packages from $debdir"

# ---- 0. make deb ---------------------------------------------------------------
# (its output in a log, shown when it fails: under `make test` the library and
# plugins are already built)
if env -u DESTDIR -u PREFIX -u LIBDIR -u MAKEFLAGS -u MFLAGS \
     make -C "$root" --no-print-directory deb >"$tmp/deb.log" 2>&1; then
  pass "make deb"
  grep -E '^(built|Depends:) ' "$tmp/deb.log" | indent
else
  indent <"$tmp/deb.log"
  fail "make deb"
  finish
fi

# ---- 1. The packages, before installing them --------------------------------
debs=()
for p in "${packages[@]}"; do
  f=$(ls "$debdir/${p}_${version}-"*"_$arch.deb" 2>/dev/null | head -n1)
  if [ -n "$f" ]; then
    pass "$(basename "$f") was built ($(stat -c %s "$f") bytes)"
    debs+=("$f")
  else
    fail "$debdir/${p}_${version}-*_$arch.deb is missing"
  fi
done
[ ${#debs[@]} -eq 3 ] || finish
lib_deb=${debs[0]} dev_deb=${debs[1]} dbg_deb=${debs[2]}
field() { dpkg-deb -f "$1" "$2"; }

for f in "${debs[@]}"; do
  p=$(field "$f" Package)
  check "$p: Multi-Arch: same" [ "$(field "$f" Multi-Arch)" = same ]
  check "$p: Priority: optional" [ "$(field "$f" Priority)" = optional ]
  check "$p: a Maintainer" [ -n "$(field "$f" Maintainer)" ]
  odd=$(dpkg-deb -c "$f" | awk '$2 != "root/root" || ($6 != "./" && $6 !~ /^\.\/usr\//) || $6 ~ /^\.\/usr\/local/ { print $2, $6 }')
  check "$p: every file is root's and under /usr (not /usr/local)${odd:+: $odd}" [ -z "$odd" ]
done
check "libturnstate0: Section: libs" [ "$(field "$lib_deb" Section)" = libs ]
check "libturnstate-dev: Section: libdevel" [ "$(field "$dev_deb" Section)" = libdevel ]
check "libturnstate0-dbgsym: Section: debug" [ "$(field "$dbg_deb" Section)" = debug ]

depends=$(field "$lib_deb" Depends)
echo "    libturnstate0 Depends: $depends"
for dep in libc6 libsimdjson; do
  check "libturnstate0 Depends names $dep (from dpkg-shlibdeps)" grep -q "\b$dep" <<<"$depends"
done
check "libturnstate0 Depends names no Swift package (its runtime is in the package)" \
  bash -c "! grep -qi swift <<<'$depends'"
check "libturnstate-dev Depends: libturnstate0 (= its version), python3 (turnstate-testgen)" \
  [ "$(field "$dev_deb" Depends)" = "libturnstate0 (= $(field "$lib_deb" Version)), python3" ]
check "libturnstate0-dbgsym Depends: libturnstate0 (= its version)" \
  [ "$(field "$dbg_deb" Depends)" = "libturnstate0 (= $(field "$lib_deb" Version))" ]
shlibs=$(dpkg-deb --ctrl-tarfile "$lib_deb" | tar -xO ./shlibs 2>/dev/null)
check "libturnstate0 shlibs: 'libturnstate $major libturnstate0 (>= $version)'" \
  [ "$shlibs" = "libturnstate $major libturnstate0 (>= $version)" ]

mkdir -p "$tmp/x"
for f in "${debs[@]}"; do dpkg-deb -x "$f" "$tmp/x/$(field "$f" Package)"; done
xl=$tmp/x/libturnstate0 xd=$tmp/x/libturnstate-dev xg=$tmp/x/libturnstate0-dbgsym
for p in libturnstate0 libturnstate-dev; do
  check "$p: copyright is machine-readable (DEP-5)" \
    grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$tmp/x/$p/usr/share/doc/$p/copyright"
  check "$p: changelog.Debian.gz names $version" \
    bash -c "gzip -dc '$tmp/x/$p/usr/share/doc/$p/changelog.Debian.gz' | head -n1 | grep -q '($version-'"
  check "$p: changelog.gz is the upstream CHANGELOG.md (Debian policy 12.7)" \
    bash -c "gzip -dc '$tmp/x/$p/usr/share/doc/$p/changelog.gz' | cmp -s - '$root/CHANGELOG.md'"
done
check "libturnstate0's copyright covers the Swift runtime (Apache-2.0 with the Runtime Library Exception)" \
  grep -q '^License: Apache-2.0 with Runtime-Library exception' "$xl/usr/share/doc/libturnstate0/copyright"
real=$xl$libdir/libturnstate.so.$version
check "libturnstate0 ships $libdir/libturnstate.so.$version" [ -f "$real" ]
check "libturnstate0 ships the link libturnstate.so.$major" [ "$(readlink "$xl$libdir/libturnstate.so.$major")" = "libturnstate.so.$version" ]
check "libturnstate-dev ships the link libturnstate.so" [ -L "$xd$libdir/libturnstate.so" ]
for f in /usr/include/turnstate.h /usr/include/turnstate_plugin.h /usr/include/turnstate.hpp $libdir/pkgconfig/turnstate.pc; do
  check "libturnstate-dev ships $f" [ -f "$xd$f" ]
done
check "libturnstate0 ships the private Swift runtime ($libdir/turnstate/libswiftCore.so)" [ -f "$xl$libdir/turnstate/libswiftCore.so" ]
# The man pages (make man): every page of the headers, in libturnstate-dev.
mapfile -t pages < <(python3 "$root/docs/man/genman.py" --list "$root/Include/turnstate.h" "$root/Include/turnstate_plugin.h")
unshipped=$(for page in "${pages[@]}"; do [ -f "$xd/usr/share/man/$page.gz" ] || echo "$page"; done)
check "libturnstate-dev ships the ${#pages[@]} man pages in /usr/share/man${unshipped:+ (not: $unshipped)}" \
  [ "${#pages[@]}" -gt 20 -a -z "$unshipped" ]
for page in man3/ts_store_dispatch.3 man7/turnstate.7 man7/turnstate-plugins.7; do
  warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$xd/usr/share/man/$page.gz" 2>&1 >/dev/null)
  check "libturnstate-dev's $page.gz renders without a warning${warnings:+: $warnings}" \
    [ -f "$xd/usr/share/man/$page.gz" -a -z "$warnings" ]
done
not0644=$(find "$xl" "$xd" "$xg" -type f ! -perm 0644 ! -path "$xd/usr/bin/turnstate-testgen" | sed "s|^$tmp/x/||")
check "every file is 0644 but the program${not0644:+ (not: $not0644)}" [ -z "$not0644" ]
check "libturnstate-dev's /usr/bin/turnstate-testgen is a program (0755)" \
  [ "$(stat -c %a "$xd/usr/bin/turnstate-testgen" 2>/dev/null)" = 755 ]
unstripped=$(find "$xl" -type f -name '*.so*' -exec sh -c 'readelf -S -W "$1" | grep -qE " \.(symtab|debug_info) " && echo "${1#'"$xl"'}"' _ {} \;)
check "every ELF file of libturnstate0 is stripped${unstripped:+ (not: $unstripped)}" [ -z "$unstripped" ]
stray=$(find "$xl" "$xd" -name '*.debug' | sed "s|^$tmp/x/||")
check "no .debug file outside libturnstate0-dbgsym${stray:+ (found: $stray)}" [ -z "$stray" ]
id=$(readelf -n "$real" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
debug=$xg/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
check "libturnstate0-dbgsym has the library's debug file (.build-id/${id:0:2}/${id:2}.debug)" [ -f "$debug" ]
check "... with its DWARF (.debug_info)" bash -c "readelf -S -W '$debug' | grep -q ' \.debug_info '"
check "libturnstate0-dbgsym: Build-Ids names the library's" grep -qw "$id" <<<"$(field "$dbg_deb" Build-Ids)"

# ---- 1b. build-debs.sh refuses an incomplete or surprising make install ------
# (make deb's stage, DEBDIR/stage, altered in copies)
if [ -d "$debdir/stage" ]; then
  refuse() { # WHAT EXPECTED-MESSAGE: build-debs.sh on $tmp/bad must fail, saying so
    if "$root/.ci/packaging/debian/build-debs.sh" "$version" "$tmp/bad" "$tmp/bad-out" >"$tmp/bad.log" 2>&1; then
      fail "build-debs.sh refuses $1 (it built packages)"
    elif grep -q "$2" "$tmp/bad.log"; then
      pass "build-debs.sh refuses $1: $(grep -m1 "$2" "$tmp/bad.log" | sed 's/^build-debs: //')"
    else
      indent <"$tmp/bad.log"; fail "build-debs.sh refuses $1 with a message naming '$2'"
    fi
    rm -rf "$tmp/bad" "$tmp/bad-out"
  }
  cp -a "$debdir/stage" "$tmp/bad" && mkdir -p "$tmp/bad/usr/share" && echo x >"$tmp/bad/usr/share/stray.txt"
  refuse "a stage with a file no package claims" "usr/share/stray.txt"
  cp -a "$debdir/stage" "$tmp/bad" && rm -f "$tmp/bad$libdir/turnstate/libswiftCore.so"
  refuse "a stage without the private Swift runtime" "libswiftCore.so is missing"
  cp -a "$debdir/stage" "$tmp/bad" && rm -f "$tmp/bad$libdir/turnstate/plugins/logger.so"
  refuse "a stage without a shipped plugin" "plugins/logger.so is missing"
  cp -a "$debdir/stage" "$tmp/bad" && rm -rf "$tmp/bad/usr/share/man"
  refuse "a stage without the man pages" "man3/ts_store_dispatch.3.gz is missing"
else
  fail "$debdir/stage (make deb's make install tree) is missing"
fi

# ---- 2. lintian ---------------------------------------------------------------
echo "  lintian --fail-on error --display-info ${debs[*]##*/}"
lintian --fail-on error --display-info --tag-display-limit 0 "${debs[@]}" >"$tmp/lintian.log" 2>&1
status=$?
grep -v 'running with root privileges is not recommended' "$tmp/lintian.log" | indent
errors=$(grep -c '^E: ' "$tmp/lintian.log")
warnings=$(grep -c '^W: ' "$tmp/lintian.log")
check "lintian: no errors ($errors errors, $warnings warnings)" [ "$status" -eq 0 -a "$errors" -eq 0 ]

# ---- 3. Install ---------------------------------------------------------------
for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    echo "  (note: $p was installed before this test; it is reinstalled, then purged)"
  fi
done
installed=1
if DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${debs[@]}" >"$tmp/install.log" 2>&1; then
  pass "apt-get install ${debs[*]##*/}"
else
  indent <"$tmp/install.log"
  fail "apt-get install ${debs[*]##*/}"
  finish
fi
check "ldconfig's cache has libturnstate.so.$major" bash -c "ldconfig -p | grep -q 'libturnstate.so.$major '"
if grep -rqs '^path-exclude=*/usr/share/man' /etc/dpkg/dpkg.cfg.d/; then
  echo "  (note: dpkg's configuration here excludes /usr/share/man: man -w is not checked)"
else
  for page in "3 ts_store_dispatch" "7 turnstate-plugins"; do
    read -r sec name <<<"$page"
    found=$(man -w "$sec" "$name" 2>&1)
    check "man -w $sec $name finds the package's page ($found)" [ "$found" = "/usr/share/man/man$sec/$name.$sec.gz" ]
  done
fi
modversion=$(pkg-config --modversion turnstate 2>&1)
check "pkg-config --modversion turnstate = $version" [ "$modversion" = "$version" ]
pluginsdir=$(pkg-config --variable=pluginsdir turnstate 2>&1)
check "pkg-config --variable=pluginsdir turnstate = $libdir/turnstate/plugins ('$pluginsdir')" \
  [ "$pluginsdir" = "$libdir/turnstate/plugins" ]
flags=$(pkg-config --cflags --libs turnstate)
check "pkg-config --libs turnstate has no rpath ('$flags')" bash -c "! grep -q rpath <<<'$flags'"

# ---- 4. A consumer, with the toolchain hidden --------------------------------
echo "  cc ../install/app.c $flags -o \$tmp/app"
# shellcheck disable=SC2086 # the flags are words
if (cd "$here" && cc ../install/app.c $flags -o "$tmp/app") >"$tmp/cc.log" 2>&1; then
  pass "app.c compiles and links with pkg-config's flags alone"
else
  indent <"$tmp/cc.log"
  fail "app.c compiles and links with pkg-config's flags alone"
  finish
fi

echo "  c++ -std=c++17 app.cpp $flags -o \$tmp/app-cpp"
# shellcheck disable=SC2086 # the flags are words
if (cd "$here" && c++ -std=c++17 app.cpp $flags -o "$tmp/app-cpp") >"$tmp/cxx.log" 2>&1; then
  pass "app.cpp (turnstate.hpp) compiles and links with pkg-config's flags alone"
else
  indent <"$tmp/cxx.log"
  fail "app.cpp (turnstate.hpp) compiles and links with pkg-config's flags alone"
fi

# Tests/install/without-swift.sh: a private mount namespace in which the
# toolchain of swiftc on PATH is hidden under an empty folder (exit 3 if it
# cannot hide it).
swift=$(command -v swift || true)
runtime=""   # the toolchain's Swift runtime, which must be out of sight
[ -n "$swift" ] && runtime=$(dirname "$(dirname "$(realpath "$swift")")")/lib/swift/linux
mkdir -p "$tmp/work"
cat >"$tmp/hidden.sh" <<EOF
set -u
if [ -n "$runtime" ] && [ -e "$runtime/libswiftCore.so" ]; then
  echo "HIDE-FAILED: $runtime/libswiftCore.so is still visible"; exit 1
fi
for f in "$tmp/app" "$pluginsdir"/*.so; do
  echo "== ldd \$f"; env -u LD_LIBRARY_PATH ldd "\$f"
done
echo "== run"
env -u LD_LIBRARY_PATH SWIFT_BACKTRACE=enable=no "$tmp/app" "$pluginsdir" "$tmp/work"
echo "== exit \$?"
echo "== run app-cpp"
[ -x "$tmp/app-cpp" ] && env -u LD_LIBRARY_PATH SWIFT_BACKTRACE=enable=no "$tmp/app-cpp"
echo "== exit-cpp \$?"
EOF
"$root/Tests/install/without-swift.sh" bash "$tmp/hidden.sh" >"$tmp/hidden.log" 2>&1
hidden=$?
check "the Swift toolchain's runtime (${runtime:-none: no swift on PATH}) is hidden in a private mount namespace" \
  bash -c "[ $hidden -ne 3 ] && ! grep -q HIDE-FAILED '$tmp/hidden.log'"
grep -E 'without-swift|HIDE-FAILED' "$tmp/hidden.log" | indent
sed -n '/^== ldd/,/^== run/p' "$tmp/hidden.log" | grep -v '^== run' >"$tmp/ldd.log"
notfound=$(grep 'not found' "$tmp/ldd.log")
check "ldd app and every plugin: nothing is \"not found\"" [ -z "$notfound" ]
[ -z "$notfound" ] || indent <"$tmp/ldd.log"
# /lib is /usr/lib on Debian 12 (merged /usr): ldconfig's cache may give either
resolved=$(sed -n "/app\$/,/^==/s/.*libturnstate.so.$major => \([^ ]*\) .*/\1/p" "$tmp/ldd.log" | head -n1)
check "ldd app: libturnstate.so.$major => $resolved, the package's $libdir/libturnstate.so.$version" \
  [ -n "$resolved" -a "$(realpath -m "$resolved")" = "$(realpath -m "$libdir/libturnstate.so.$version")" ]
check "ldd logger.so: libswiftCore.so => the package's private copy ($libdir/turnstate)" \
  bash -c "sed -n '/logger.so$/,/^==/p' '$tmp/ldd.log' | grep -q 'libswiftCore.so => $libdir/turnstate/\(plugins/\.\./\)\?libswiftCore.so'"
check "ldd: nothing resolves into the toolchain" bash -c "[ -z '$runtime' ] || ! grep -q ' => $runtime' '$tmp/ldd.log'"
sed -n '/^== run$/,/^== exit /p' "$tmp/hidden.log" | grep -v '^==' >"$tmp/app.log"
indent <"$tmp/app.log"
app_ok=$(grep -c '^  ok ' "$tmp/app.log")
app_failed=$(grep -c '^  FAIL ' "$tmp/app.log")
passed=$((passed + app_ok)) failed=$((failed + app_failed))
check "app exits 0 with the toolchain hidden ($app_ok checks of its own passed, $app_failed failed)" \
  grep -qx '== exit 0' "$tmp/hidden.log"
sed -n '/^== run app-cpp$/,/^== exit-cpp /p' "$tmp/hidden.log" | grep -v '^==' | indent
check "app-cpp exits 0 with the toolchain hidden (/count is 42)" grep -qx '== exit-cpp 0' "$tmp/hidden.log"

# ---- 5. Purge, and nothing is left ------------------------------------------
files=$(for f in "${debs[@]}"; do dpkg-deb -c "$f"; done | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\.||' | sort -u)
if purge; then
  installed=0
  pass "apt-get purge -y ${packages[*]}"
else
  indent <"$tmp/purge.log"
  fail "apt-get purge -y ${packages[*]}"
fi
for p in "${packages[@]}"; do
  check "dpkg knows nothing of $p any more" bash -c "! dpkg-query -W -f='\${Status}' '$p' 2>/dev/null | grep -q ."
done
left=$(while IFS= read -r f; do [ -e "$f" ] || [ -L "$f" ] && echo "$f"; done <<<"$files")
check "none of the packages' $(wc -l <<<"$files") files is left${left:+: $left}" [ -z "$left" ]
check "$libdir/turnstate and /usr/share/doc/libturnstate* are gone" \
  bash -c "[ ! -e '$libdir/turnstate' ] && ! ls -d /usr/share/doc/libturnstate* >/dev/null 2>&1"
check "ldconfig's cache no longer has libturnstate" bash -c "! ldconfig -p | grep -q libturnstate"
check "pkg-config no longer finds turnstate" bash -c "! pkg-config --exists turnstate"

finish
