#!/usr/bin/env bash
# swift-runtime.sh DEST ELF...
#
# Copies into DEST the Swift runtime libraries that the given ELF files need,
# directly or through each other (the closure of their DT_NEEDED entries found
# in the toolchain's usr/lib/swift/linux), and prints their names. DEST is
# LIBDIR/turnstate: libturnstate.so finds them there through its RUNPATH
# $ORIGIN/turnstate, and each of them finds the others through its own
# RUNPATH $ORIGIN. Files are written 0644, stripped as dh_strip strips (static symbol
# tables, .comment and .note; the dynamic symbols stay), renamed into place: a running process
# that has the old copy mapped keeps it.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 DEST ELF..." >&2; exit 2; }
dest=$1; shift

swiftc=$(command -v "${SWIFTC:-swiftc}") || { echo "$0: no swiftc on PATH" >&2; exit 1; }
runtime=$(dirname "$(dirname "$(realpath "$swiftc")")")/lib/swift/linux
[ -f "$runtime/libswiftCore.so" ] || { echo "$0: no Swift runtime in $runtime" >&2; exit 1; }

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

declare -A seen=()
queue=("$@")
while [ ${#queue[@]} -gt 0 ]; do
  elf=${queue[0]}; queue=("${queue[@]:1}")
  for lib in $(needed "$elf"); do
    if [ -z "${seen[$lib]:-}" ] && [ -f "$runtime/$lib" ]; then
      seen[$lib]=1
      queue+=("$runtime/$lib")
    fi
  done
done

mkdir -p "$dest"
for lib in $(printf '%s\n' "${!seen[@]}" | sort); do
  strip --strip-unneeded --remove-section=.comment --remove-section=.note -o "$dest/.$lib.new" "$runtime/$lib"
  chmod 0644 "$dest/.$lib.new"
  mv -f "$dest/.$lib.new" "$dest/$lib"
  echo "$lib"
done
