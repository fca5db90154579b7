#!/usr/bin/env bash
# .ci/setup.sh [--dry-run] build|deb|test
#
# Checks what a make target needs on a Debian machine: the Swift toolchain
# (checked, never installed: it comes from swift.org) and the Debian packages
# of the chosen list, and installs the missing packages when run as root
# (apt-get); otherwise prints the exact apt-get line and fails. The lists,
# in this file only:
#
#   build  make, make build, make run, make install, make docs
#          (make setup): a C and C++ compiler, make, pkg-config, binutils,
#          libffi and simdjson (the library), python3 (the inspector's embed
#          step), libhiredis and libmicrohttpd (the replicate and inspector
#          plugins). Nothing a test needs.
#   deb    make deb (make setup-deb): build's, and dpkg-dev.
#   test   make test, make check, every test-* target, make bench, make
#          coverage (make setup-test): build's, deb's and the test toolchain.
#
# --dry-run (or TS_SETUP_DRY_RUN=1 in the environment): changes nothing;
# prints "setup LIST: would install: PKG..." (Tests/setup/run.sh checks the
# lists that way, with dpkg-query faked). Prints one line when everything is
# there: "setup LIST: N Debian packages present, Swift X.Y.Z".
set -euo pipefail

dry_run=${TS_SETUP_DRY_RUN:-}
[ "$dry_run" = 0 ] && dry_run=
if [ "${1:-}" = --dry-run ]; then dry_run=1; shift; fi
list=${1:-}

build_debs=(gcc g++ make pkg-config binutils libffi-dev libsimdjson-dev python3)
# The plugins' own libraries: replicate.so (Redis Streams through hiredis,
# OpenSSL for rediss://, NATS JetStream's C client) and inspector.so (its
# HTTP server).
build_debs+=(libhiredis-dev libssl-dev libnats-dev libmicrohttpd-dev)

# make deb: dpkg-shlibdeps, dpkg-gencontrol, dpkg-architecture.
deb_debs=(dpkg-dev)

# The test toolchain. valgrind (test-c, test-json, test-plugins, test-cpp,
# bench); python3-venv (the suites' venvs from PyPI); spin (test-model);
# abigail-tools (test-abi); redis-server (test-replicate); chromium and
# chromium-driver (test-inspector: headless Chromium through Selenium);
# bindgen and the libclang it loads (test-rust: turnstate-sys's declarations
# against the headers); cargo (test-rust: rustup's when on PATH, else
# Debian's, which is new enough: 1.63); lintian (test-deb).
test_debs=(valgrind python3-venv spin abigail-tools redis-server chromium chromium-driver bindgen libclang1-14 lintian)
command -v cargo >/dev/null || test_debs+=(cargo)
# make test-replicate-nats: a three-server NATS JetStream cluster; openssl
# makes the TLS tests' CA and certificates.
test_debs+=(nats-server openssl)
# make test-man (make man needs python3 alone): man -l, groff, lexgrog
# (man-db, groff-base) and col (bsdextrautils) render and read the pages.
test_debs+=(man-db groff-base bsdextrautils)

case $list in
  build) need=("${build_debs[@]}") ;;
  deb) need=("${build_debs[@]}" "${deb_debs[@]}") ;;
  test) need=("${build_debs[@]}" "${deb_debs[@]}" "${test_debs[@]}") ;;
  *) echo "usage: .ci/setup.sh [--dry-run] build|deb|test" >&2; exit 2 ;;
esac

if ! command -v swift >/dev/null; then
  echo "setup $list: no Swift toolchain on PATH. Install Swift 6.3 or newer from swift.org" >&2
  echo "  (Turnstate needs @c @implementation, new in Swift 6.3) and put its usr/bin on PATH." >&2
  exit 1
fi
swift_version=$(swift --version 2>&1 | sed -n 's/.*Swift version \([0-9][0-9.]*\).*/\1/p' | head -n1)
IFS=. read -r major minor _ <<<"${swift_version:-0.0}"
if [ "${major:-0}" -lt 6 ] || { [ "$major" -eq 6 ] && [ "${minor:-0}" -lt 3 ]; }; then
  echo "setup $list: Swift ${swift_version:-?} found; Turnstate needs Swift 6.3 or newer (for @c @implementation)." >&2
  exit 1
fi

# One dpkg-query for the whole list; a package it does not know is missing.
installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${need[@]}" 2>/dev/null | awk '/ install ok installed$/ { print $1 }' || true)
missing=()
for deb in "${need[@]}"; do
  grep -qxF "$deb" <<<"$installed" || missing+=("$deb")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup $list: ${#need[@]} Debian packages present, Swift $swift_version"
elif [ -n "$dry_run" ]; then
  echo "setup $list: would install: ${missing[*]}"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "setup $list: installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "setup $list: missing Debian packages. Run:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
