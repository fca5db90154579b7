#!/usr/bin/env bash
# Builds the logger plugin (Swift, Plugins/logger) and its C test, and runs
# the test against build/lib/libturnstate.so. Ends with the test's summary
# line "logger: N passed, M failed"; exits non-zero if anything failed.
#
#   Tests/plugins/logger_run.sh          (from anywhere in the checkout)
#
# Builds with its own SwiftPM scratch path (.build-plugins), so it never
# races with the library's or the Swift tests' builds.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
SWIFT=${SWIFT:-swift}
CC=${CC:-cc}
CFLAGS=${CFLAGS:--std=c99 -O2 -g -Wall -Wextra -Werror -pedantic}

echo "== make lib"
make --no-print-directory lib

echo "== the logger plugin"
"$SWIFT" build -c release --scratch-path "$ROOT/.build-plugins" --product turnstate-logger
mkdir -p "$ROOT/build/plugins"
# The store refuses plugins that others can write to (the file or its folder).
chmod go-w "$ROOT/build/plugins"
install -m 0755 "$ROOT/.build-plugins/release/libturnstate-logger.so" "$ROOT/build/plugins/logger.so"
PLUGIN="$ROOT/build/plugins/logger.so"

if readelf -d "$PLUGIN" | grep NEEDED | grep -q libturnstate; then
  echo "logger.so must not link libturnstate:" >&2
  readelf -d "$PLUGIN" | grep NEEDED >&2
  exit 1
fi
echo "built $PLUGIN ($(stat -c %s "$PLUGIN") bytes)"

echo "== the test"
mkdir -p "$ROOT/build/tests"
# shellcheck disable=SC2086 # CFLAGS is a list of flags
"$CC" $CFLAGS -I"$ROOT/Include" "$ROOT/Tests/plugins/logger_test.c" -o "$ROOT/build/tests/logger_test" \
  -L"$ROOT/build/lib" -Wl,-rpath,"$ROOT/build/lib" -lturnstate -lpthread -ldl
"$ROOT/build/tests/logger_test" "$PLUGIN"
