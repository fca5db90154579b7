#!/usr/bin/env bash
# Builds the logger plugin (Swift, Plugins/logger) and its C test, and runs
# the test against build/lib/libturnstate.so. Ends with the test's summary
# line "logger: N passed, M failed"; exits non-zero if anything failed.
#
#   Tests/plugins/logger_run.sh          (from anywhere in the checkout)
#
# Builds with its own SwiftPM scratch path (.build-plugins), so it never
# races with the library's or the Swift tests' builds.
#
# `make coverage` runs it with TS_BUILD=build/coverage, TS_PLUGIN_SCRATCH,
# TS_CONFIG=debug and TS_PLUGIN_SWIFTFLAGS=--enable-code-coverage.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
SWIFT=${SWIFT:-swift}
CC=${CC:-cc}
CFLAGS=${CFLAGS:--std=c99 -O2 -g -Wall -Wextra -Werror -pedantic}
BUILD=${TS_BUILD:-$ROOT/build}
SCRATCH=${TS_PLUGIN_SCRATCH:-$ROOT/.build-plugins}
CONFIG=${TS_CONFIG:-release}

# Under `make test` (TS_PREBUILT=1), test-build has built both already.
if [ -z "${TS_PREBUILT:-}" ]; then
  echo "== make lib"
  make --no-print-directory lib

  echo "== the logger plugin"
  # shellcheck disable=SC2086 # TS_PLUGIN_SWIFTFLAGS is a list of flags
  "$SWIFT" build -c "$CONFIG" --scratch-path "$SCRATCH" --product turnstate-logger ${TS_PLUGIN_SWIFTFLAGS:-}
fi
mkdir -p "$BUILD/plugins"
# The store refuses plugins that others can write to (the file or its folder).
chmod go-w "$BUILD/plugins"
install -m 0755 "$SCRATCH/$CONFIG/libturnstate-logger.so" "$BUILD/plugins/logger.so"
PLUGIN="$BUILD/plugins/logger.so"

if readelf -d "$PLUGIN" | grep NEEDED | grep -q libturnstate; then
  echo "logger.so must not link libturnstate:" >&2
  readelf -d "$PLUGIN" | grep NEEDED >&2
  exit 1
fi
echo "built $PLUGIN ($(stat -c %s "$PLUGIN") bytes)"

echo "== the test"
mkdir -p "$BUILD/tests"
# shellcheck disable=SC2086 # CFLAGS is a list of flags
"$CC" $CFLAGS -I"$ROOT/Include" "$ROOT/Tests/plugins/logger_test.c" -o "$BUILD/tests/logger_test" \
  -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lturnstate -lpthread -ldl
"$BUILD/tests/logger_test" "$PLUGIN"
