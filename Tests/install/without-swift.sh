#!/usr/bin/env bash
# without-swift.sh COMMAND [ARG...]
#
# Runs COMMAND as on a machine without Swift: in a private mount namespace
# (unshare -m) where the Swift toolchain's folder is hidden under an empty
# folder, so nothing can load a library from it. The toolchain is the one of
# `swiftc` on PATH (SWIFTC to name another); when it lives in / or /usr, only
# its usr/lib/swift is hidden. Prints what it hid on stderr. Exits with
# COMMAND's status, or 3 if it cannot hide the toolchain (needs root and
# util-linux's unshare). Nothing outside the namespace changes.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
  echo "$0: hiding the Swift toolchain needs root and unshare (util-linux)" >&2; exit 3
fi
swiftc=$(command -v "${SWIFTC:-swiftc}" || true)
hide=""
if [ -n "$swiftc" ]; then
  bin=$(dirname "$(realpath "$swiftc")")              # .../usr/bin
  toolchain=$(dirname "$(dirname "$bin")")            # the folder that holds usr/
  case "$toolchain" in
    /|/usr) hide=$(dirname "$bin")/lib/swift ;;
    *) hide=$toolchain ;;
  esac
fi
empty=$(mktemp -d /tmp/without-swift.XXXXXX)
trap 'rmdir "$empty"' EXIT
echo "without-swift: hiding ${hide:-nothing (no swiftc on PATH)}" >&2
# shellcheck disable=SC2016 # expanded by the inner shell
unshare -m bash -c '
  set -eu
  hide=$1 empty=$2; shift 2
  if [ -n "$hide" ]; then
    mount --bind "$empty" "$hide" || { echo "without-swift: cannot hide $hide" >&2; exit 3; }
    [ -z "$(ls -A "$hide")" ] || { echo "without-swift: $hide is still visible" >&2; exit 3; }
  fi
  exec "$@"' without-swift "$hide" "$empty" "$@"
