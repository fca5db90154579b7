#!/usr/bin/env bash
# Checks what building and testing Turnstate needs on a Debian machine and
# installs what is missing when run as root; otherwise prints the exact
# apt-get line and fails. Called by `make` (targets build, run, test).
set -euo pipefail

need_debs=(gcc g++ make pkg-config libffi-dev libsimdjson-dev valgrind python3 python3-venv binutils spin abigail-tools)
# replicate.so (make test-replicate, make test-replicate-nats, make bench): Redis
# Streams and its C client, OpenSSL (rediss://), NATS JetStream's C client and
# server (the tests start a three-server cluster), openssl (the tests' CA).
need_debs+=(redis-server libhiredis-dev libssl-dev libnats-dev nats-server openssl)
# The inspector plugin (Plugins/inspector): its HTTP server, and the browser
# its test drives (make test-inspector: headless Chromium through Selenium).
need_debs+=(libmicrohttpd-dev chromium chromium-driver)
# The Rust bindings (make test-rust): bindgen and the libclang it loads check
# turnstate-sys's declarations against the headers; cargo and rustc build the
# crates (rustup's when on PATH, else Debian's, which is new enough: 1.63).
need_debs+=(bindgen libclang1-14)
command -v cargo >/dev/null || need_debs+=(cargo)
# make deb and make test-deb: dpkg-dev (dpkg-shlibdeps, dpkg-gencontrol) and lintian.
need_debs+=(dpkg-dev lintian)
# make test-man (for tests only; make man needs python3 alone): man -l, groff,
# lexgrog (man-db, groff-base) and col (bsdextrautils) render and read the pages.
need_debs+=(man-db groff-base bsdextrautils)
missing=()
for deb in "${need_debs[@]}"; do
  dpkg-query -W -f='${Status}' "$deb" 2>/dev/null | grep -q "install ok installed" || missing+=("$deb")
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: missing Debian packages. Run:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

if ! command -v swift >/dev/null; then
  echo "setup: no Swift toolchain on PATH. Install Swift 6.3 or newer from swift.org" >&2
  echo "  (Turnstate needs @c @implementation, new in Swift 6.3) and put its usr/bin on PATH." >&2
  exit 1
fi
version=$(swift --version 2>&1 | sed -n 's/.*Swift version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p' | head -n1)
read -r major minor <<<"${version:-0 0}"
if [ "$major" -lt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -lt 3 ]; }; then
  echo "setup: Swift $major.$minor found; Turnstate needs Swift 6.3 or newer (for @c @implementation)." >&2
  exit 1
fi
