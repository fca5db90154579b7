#!/usr/bin/env bash
# Builds the C test of the logger plugin (Swift, Plugins/logger; built by
# `make plugins`) and runs it against build/lib/libturnstate.so. Ends with the test's summary
# line "logger: N passed, M failed"; exits non-zero if anything failed.
#
#   Tests/plugins/logger_run.sh          (from anywhere in the checkout)
#
# `make coverage` runs it with TS_BUILD=build/coverage.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
CC=${CC:-cc}
# The C flags (TS_CFLAGS): the Makefile's.
. "$ROOT/Tests/flags.sh"
CFLAGS=$TS_CFLAGS
BUILD=${TS_BUILD:-$ROOT/build}

# `make plugins` builds the logger (with the flags of what ships) into
# $BUILD/plugins/logger.so; `make test-plugins` does that first.
[ -f "$BUILD/plugins/logger.so" ] || { echo "no $BUILD/plugins/logger.so: run make plugins" >&2; exit 1; }
PLUGIN="$BUILD/plugins/logger.so"

if readelf -d "$PLUGIN" | grep NEEDED | grep -q libturnstate; then
  echo "logger.so must not link libturnstate:" >&2
  readelf -d "$PLUGIN" | grep NEEDED >&2
  exit 1
fi
echo "built $PLUGIN ($(stat -c %s "$PLUGIN") bytes)"

echo "== the test"
mkdir -p "$BUILD/tests"
# On the C harness: the registry and main() written by gen_registry.py.
python3 "$ROOT/Tests/harness/gen_registry.py" --suite logger -o "$BUILD/tests/registry_logger.c" \
  "$ROOT/Tests/plugins/logger_test.c"
# shellcheck disable=SC2086 # CFLAGS is a list of flags
"$CC" $CFLAGS -I"$ROOT/Include" -I"$ROOT/Tests/harness" "$ROOT/Tests/harness/ts_test.c" \
  "$ROOT/Tests/plugins/logger_test.c" "$BUILD/tests/registry_logger.c" -o "$BUILD/tests/logger_test" \
  -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lturnstate -lpthread -ldl
"$BUILD/tests/logger_test" "$PLUGIN"
