#!/usr/bin/env bash
# Builds the Debian packages of Turnstate from a `make install` tree.
#
#   .ci/packaging/debian/build-debs.sh VERSION STAGE OUTDIR
#
# VERSION is the upstream version (the Makefile's VERSION, read from
# Include/turnstate.h); STAGE is the DESTDIR of
#   make install PREFIX=/usr LIBDIR=/usr/lib/<multiarch> DESTDIR=STAGE
# and OUTDIR receives
#   libturnstate0_VERSION-REV_ARCH.deb         the library, the shipped plugins
#                                              (LIBDIR/turnstate/plugins) and the
#                                              private Swift runtime (LIBDIR/turnstate)
#   libturnstate-dev_VERSION-REV_ARCH.deb      headers (C, plugin ABI, C++), libturnstate.so,
#                                              turnstate.pc, the man pages (man3: one
#                                              per function and type; man7: turnstate,
#                                              turnstate-plugins), gzip -9n by make install
#   libturnstate0-dbgsym_VERSION-REV_ARCH.deb  /usr/lib/debug/.build-id/xx/yyyy.debug
# built with dpkg-gencontrol, dpkg-shlibdeps and dpkg-deb (dpkg-dev); no
# debhelper. `make deb` runs it. The work tree (OUTDIR/work/debian/<package>)
# is kept for inspection.
#
# Every file of STAGE must land in exactly one package (a file nobody claims
# fails the build, as dh_missing --fail-missing would). Every ELF file of
# libturnstate0 is stripped here as dh_strip does (make install already
# strips the same way: then a no-op), its DWARF going to the -dbgsym package by build-id;
# debug files that `make install` detached itself (anywhere in STAGE,
# *.debug; today LIBDIR/.debug and LIBDIR/turnstate/plugins/.debug) are moved
# there by their build-id.
#
# Environment: DEB_REVISION (default 1), DEB_MAINTAINER (default below),
# SOURCE_DATE_EPOCH (default: the date of the last commit), for the changelog
# date and the files' times, so that two builds of one commit are identical.
#
# lintian (Tests/deb/run.sh runs it; an error fails the test) reports no
# error, no override is needed (libturnstate0.lintian-overrides says why),
# and these are left on purpose:
#   W initial-upload-closes-no-bugs (libturnstate0, libturnstate-dev): the
#     changelog's first entry closes no Debian bug; there is no ITP bug, as
#     these packages are not uploaded to Debian.
#   I no-symbols-control-file: a shlibs file, as asked; a symbols file would
#     need the list of ts_* symbols kept with their versions (the ABI baseline
#     of Tests/abi could give it).
#   I hardening-no-bindnow, hardening-no-fortify-functions: how the library,
#     the plugins and the Swift toolchain's runtime are built and linked
#     (-z now, -D_FORTIFY_SOURCE), not packaging; the toolchain's runtime
#     cannot be rebuilt here.
#   I spelling-error-in-binary, X exit-in-shared-library: in the Swift
#     toolchain's runtime (libswiftCore.so, libswift_Concurrency.so), copied
#     as it is.
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 VERSION STAGE OUTDIR" >&2
  exit 2
fi
version=$1
stage=$(cd "$2" && pwd)
mkdir -p "$3"
out=$(cd "$3" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)

die() { echo "build-debs: $*" >&2; exit 1; }

case "$version" in
  [0-9]*.[0-9]*.[0-9]*) ;;
  *) die "version '$version' is not MAJOR.MINOR.PATCH (from Include/turnstate.h)" ;;
esac
for tool in dpkg-deb dpkg-gencontrol dpkg-shlibdeps dpkg-architecture objcopy readelf strip gzip; do
  command -v "$tool" >/dev/null || die "$tool is missing (Debian packages dpkg-dev, binutils; .ci/setup.sh installs them)"
done

revision=${DEB_REVISION:-1}
maintainer=${DEB_MAINTAINER:-Turnstate contributors <maintainers@users.noreply.github.com>}
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
soversion=${version%%.*}
libdir=usr/lib/$multiarch        # relative to a package root
privdir=$libdir/turnstate         # the private Swift runtime, and plugins/
lib=libturnstate0
dev=libturnstate-dev
dbg=libturnstate0-dbgsym

[ -f "$stage/$libdir/libturnstate.so.$version" ] ||
  die "$stage/$libdir/libturnstate.so.$version is missing: is STAGE the DESTDIR of make install PREFIX=/usr LIBDIR=/$libdir, and VERSION the header's?"

# ---- The source package's debian/ folder (control, changelog) -------------
work=$out/work
rm -rf "$work"
mkdir -p "$work/debian"
cd "$work"
sed "s|@MAINTAINER@|$maintainer|" "$here/control" >debian/control
date_rfc=$(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")
sed -e "s|@VERSION@|$version-$revision|" -e "s|@UPSTREAM@|$version|" \
    -e "s|@MAINTAINER@|$maintainer|" -e "s|@DATE@|$date_rfc|" \
    "$here/changelog.in" >debian/changelog

# ---- Split the stage into the package trees --------------------------------
for p in $lib $dev $dbg; do mkdir -p "debian/$p/DEBIAN"; done

# move PATH (relative to the stage) into package P, keeping links as links
claim() {
  local p=$1 path=$2
  mkdir -p "debian/$p/$(dirname "$path")"
  mv "$split/$path" "debian/$p/$path"
}
split=$work/stage   # a copy of the stage, emptied as packages claim its files
cp -a "$stage/." "$split"

# detached debug files that make install wrote, wherever it put them (first:
# they may lie in a folder that a package claims whole)
build_id() { readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p' | head -n1; }
while IFS= read -r -d '' f; do
  id=$(build_id "$f")
  [ -n "$id" ] || die "${f#"$split/"} has no build-id note"
  mkdir -p "debian/$dbg/usr/lib/debug/.build-id/${id:0:2}"
  # compressed, as dh_strip writes them
  objcopy --compress-debug-sections "$f" "debian/$dbg/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
  rm -f "$f"
done < <(find "$split" -name '*.debug' -type f -print0)
# and the folders that held them (make install's LIBDIR/.debug, plugins/.debug)
find "$split" -depth -type d -empty -delete
mkdir -p "$split"

# libturnstate0: the real file and the SONAME link, and the private folder
claim $lib "$libdir/libturnstate.so.$version"
claim $lib "$libdir/libturnstate.so.$soversion"
[ -d "$split/$privdir" ] || die "$stage/$privdir (private Swift runtime, plugins/) is missing"
claim $lib "$privdir"
# libturnstate-dev: the link for the linker, the headers, turnstate.pc
claim $dev "$libdir/libturnstate.so"
claim $dev "usr/include/turnstate.h"
claim $dev "usr/include/turnstate_plugin.h"
claim $dev "usr/include/turnstate.hpp"
claim $dev "$libdir/pkgconfig/turnstate.pc"
# turnstate-testgen (Tools/turnstate-testgen, a Python 3 script: docs/testgen.md)
claim $dev "usr/bin/turnstate-testgen"
# the man pages (make man, from the headers' comments)
for page in man3/ts_store_dispatch.3.gz man7/turnstate.7.gz man7/turnstate-plugins.7.gz; do
  [ -f "$split/usr/share/man/$page" ] || die "usr/share/man/$page is missing from make install (make man writes the pages)"
done
claim $dev "usr/share/man"

# anything left over is a file that no package ships: fail
leftover=$(cd "$split" && find . ! -type d | sed 's|^\./||' | sort)
if [ -n "$leftover" ]; then
  die "files of make install that no package claims (add them to $0):
$(echo "$leftover" | sed 's/^/  /')"
fi

# the plugins, and the private runtime (its folder must not be empty)
for p in guard delay journal undo logger; do
  [ -f "debian/$lib/$privdir/plugins/$p.so" ] || die "$privdir/plugins/$p.so is missing from make install"
done
ls "debian/$lib/$privdir"/libswiftCore.so >/dev/null 2>&1 ||
  die "$privdir/libswiftCore.so is missing: the private Swift runtime is not installed"

# ---- Strip, keep the debug information in -dbgsym ---------------------------
is_elf() { [ -f "$1" ] && [ ! -L "$1" ] && [ "$(head -c4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }
has_section() { readelf -S -W "$1" | grep -qE "[[:space:]]$2[[:space:]]"; }
build_ids=()
elves=()
while IFS= read -r -d '' f; do
  is_elf "$f" || continue
  elves+=("$f")
  id=$(build_id "$f")
  [ -n "$id" ] || die "${f#debian/$lib/} has no build-id note (link with --build-id)"
  build_ids+=("$id")
  debug=debian/$dbg/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
  # Only DWARF makes a .debug file: the private Swift runtime comes from the
  # toolchain built without -g (a symbol table, no DWARF), and a .debug file
  # with its local symbols alone is what lintian calls
  # debug-file-with-no-debug-symbols; its exported names stay in .dynsym.
  if [ ! -e "$debug" ] && has_section "$f" '\.debug_info'; then
    mkdir -p "$(dirname "$debug")"
    objcopy --only-keep-debug --compress-debug-sections "$f" "$debug"
  fi
  # as dh_strip does: a no-op on what make install stripped (install-stripped.sh,
  # swift-runtime.sh strip the same way), a guard for anything it did not
  strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f"
  if [ -e "$debug" ] && ! has_section "$f" '\.gnu_debuglink'; then
    objcopy --add-gnu-debuglink="$debug" "$f"
  fi
done < <(find "debian/$lib" -type f -print0 | sort -z)
[ ${#elves[@]} -gt 0 ] || die "no ELF file in libturnstate0"
# a debug file whose binary is not shipped is a mistake of make install
while IFS= read -r -d '' d; do
  id=$(basename "$(dirname "$d")")$(basename "$d" .debug)
  printf '%s\n' "${build_ids[@]}" | grep -qx "$id" ||
    die "${d#debian/$dbg/} belongs to no shipped binary"
done < <(find "debian/$dbg" -name '*.debug' -type f -print0)

# ---- Documentation, control files ------------------------------------------
for p in $lib $dev; do
  install -d "debian/$p/usr/share/doc/$p"
  sed "s|@MAINTAINER@|$maintainer|" "$here/copyright" >"debian/$p/usr/share/doc/$p/copyright"
  gzip -9nc debian/changelog >"debian/$p/usr/share/doc/$p/changelog.Debian.gz"
  # the upstream changelog, where Debian policy (12.7) puts it
  gzip -9nc "$root/CHANGELOG.md" >"debian/$p/usr/share/doc/$p/changelog.gz"
done
# -dbgsym shares libturnstate0's documentation, as debhelper's dbgsym packages do
install -d "debian/$dbg/usr/share/doc"
ln -s $lib "debian/$dbg/usr/share/doc/$dbg"

install_overrides() {
  local p=$1 text
  text=$(sed -e '/^#/d' -e '/^[[:space:]]*$/d' "$here/$p.lintian-overrides")
  if [ -n "$text" ]; then
    install -d "debian/$p/usr/share/lintian/overrides"
    echo "$text" >"debian/$p/usr/share/lintian/overrides/$p"
  fi
}

install_overrides $lib

# shlibs: what a package linked against libturnstate.so.0 depends on
echo "libturnstate $soversion $lib (>= $version)" >"debian/$lib/DEBIAN/shlibs"
# the library's folder changed: run ldconfig once dpkg is done
echo "activate-noawait ldconfig" >"debian/$lib/DEBIAN/triggers"

# Depends of libturnstate0 from the libraries its ELF files need. The private
# runtime (LIBDIR/turnstate, found through the $ORIGIN RUNPATHs) is in the
# package being built: dpkg-shlibdeps finds it there and adds no dependency
# for it (its SONAMEs, libswiftCore.so, are unversioned and in the same
# package); -l says where it is for binaries whose RUNPATH does not.
# Its warnings about that runtime are left out: "can't extract name and
# version from library name 'libswiftCore.so'" (the toolchain's SONAMEs have
# no version) and "could avoid a useless dependency" inside the runtime.
dpkg-shlibdeps -Tdebian/$lib.substvars -l"debian/$lib/$privdir" "${elves[@]}" 2>&1 |
  { grep -vE "can't extract name and version from library name|useless dependency if debian/$lib/$privdir/lib" || true; } >&2
echo "misc:Depends=" >>debian/$lib.substvars
echo "misc:Depends=" >debian/$dev.substvars

# ---- Modes and times, then the control files and the .debs ----------------
for p in $lib $dev $dbg; do
  find "debian/$p" -type d -exec chmod 0755 {} +
  find "debian/$p" -type f -exec chmod 0644 {} +
done
chmod 0755 "debian/$dev/usr/bin/turnstate-testgen"   # a program (docs/testgen.md)
dpkg-gencontrol -p$lib -Pdebian/$lib -Tdebian/$lib.substvars -fdebian/files
dpkg-gencontrol -p$dev -Pdebian/$dev -Tdebian/$dev.substvars -fdebian/files
# The -dbgsym control file: libturnstate0's, renamed, as dh_gencontrol writes it.
dpkg-gencontrol -p$lib -Pdebian/$dbg -Tdebian/$lib.substvars -fdebian/files \
  -DPackage=$dbg -DSection=debug -DPriority=optional \
  "-DDepends=$lib (= $version-$revision)" \
  "-DDescription=debug symbols for $lib" \
  -DAuto-Built-Package=debug-symbols \
  "-DBuild-Ids=$(cd "debian/$dbg/usr/lib/debug/.build-id" && find . -name '*.debug' |
                 sed 's|^\./\(..\)/\(.*\)\.debug$|\1\2|' | sort | paste -sd' ')" \
  -UPre-Depends -URecommends -USuggests -UEnhances -UProvides -UEssential -UConflicts -UReplaces -UBreaks -UHomepage

for p in $lib $dev $dbg; do
  (cd "debian/$p" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
     xargs -0r md5sum) >"debian/$p/DEBIAN/md5sums"
  [ -s "debian/$p/DEBIAN/md5sums" ] || rm -f "debian/$p/DEBIAN/md5sums"
  chmod 0644 "debian/$p/DEBIAN"/*
  find "debian/$p" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
done

rm -f "$out"/*.deb
for p in $lib $dev $dbg; do
  dpkg-deb --root-owner-group -Zxz --build "debian/$p" "$out" >/dev/null
done
for f in "$out"/*.deb; do
  printf 'built %s (%s bytes, %s KiB installed)\n' "${f#"$root/"}" "$(stat -c %s "$f")" \
    "$(dpkg-deb -f "$f" Installed-Size)"
done
echo "Depends: $(dpkg-deb -f "$out/${lib}_$version-${revision}_$(dpkg-architecture -qDEB_HOST_ARCH).deb" Depends)"
