#!/usr/bin/env bash
# Checks the compiler-facing macros of Include/turnstate.h (TS_API,
# TS_DEPRECATED, TS_VERSION*): the headers compile with the Makefile's C
# standard and warnings (C99, -pedantic -Werror: Tests/flags.sh) under gcc,
# under clang (when there is one), for a compiler that is
# not GNU (no attribute then), and with the macros replaced by the user;
# TS_DEPRECATED makes a call warn, with its message; TS_API keeps
# ts_plugin_entry exported from a plugin built with -fvisibility=hidden.
# Usage: Tests/c/check_header.sh [CC] (default cc). Compiles only: no library.
set -euo pipefail
cd "$(dirname "$0")/../.."
cc=${1:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
test_c=Tests/c/test_memory_and_errors.c
# The C flags (TS_C_STD, TS_C_WARN): the Makefile's.
. Tests/flags.sh
# shellcheck disable=SC2206 # lists of flags
strict=($TS_C_STD $TS_C_WARN -IInclude -ITests/harness)
passed=0 failed=0
check() { # description command...
  local what=$1; shift
  if "$@" >"$work/out" 2>&1; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAILED: $what"; sed 's/^/    /' "$work/out"; fi
}
deprecated_call_warns() { # compiler
  ! "$1" "${strict[@]}" -fsyntax-only -DTS_TEST_DEPRECATED_CALL "$test_c" >"$work/dep" 2>&1 &&
    grep -q "use ts_version_string instead" "$work/dep"
}
# A compiler that is not GNU: only the headers (the C library's own headers
# need __GNUC__ here). Preprocessed with __has_attribute removed too (gcc
# warns about that, hence no -Werror there), nothing of TS_API and
# TS_DEPRECATED is left; compiled strictly, they are harmless.
cat >"$work/plain.c" <<'C'
#include "turnstate_plugin.h"
TS_API TS_DEPRECATED("use nothing") int plain_old_function(void);
static const char version[] = TS_VERSION;
int main(void) { return version[0] == '\0' || TS_VERSION_NUMBER < 0; }
C
no_attribute_without_gnu() {
  "$cc" $TS_C_STD -IInclude -U__GNUC__ -U__clang__ -U__has_attribute -E -P "$work/plain.c" >"$work/pp" 2>/dev/null &&
    ! grep -q "__attribute__" "$work/pp" &&
    "$cc" "${strict[@]}" -U__GNUC__ -U__clang__ -fsyntax-only "$work/plain.c"
}
plugin_exports_its_entry() {
  "$cc" "${strict[@]}" -fvisibility=hidden -shared -fPIC Plugins/guard/guard.c -o "$work/guard.so" -lpthread &&
    nm -D --defined-only "$work/guard.so" | grep -qw ts_plugin_entry
}

check "$cc: both headers, ${strict[*]}" "$cc" "${strict[@]}" -fsyntax-only "$test_c"
check "$cc: a call to a TS_DEPRECATED function warns with its message" deprecated_call_warns "$cc"
check "$cc: TS_API and TS_DEPRECATED replaced by the user" \
  "$cc" "${strict[@]}" -fsyntax-only -DTS_API= '-DTS_DEPRECATED(msg)=' -DTS_TEST_DEPRECATED_CALL "$test_c"
check "not GNU (-U__GNUC__): no attribute, still compiles" no_attribute_without_gnu
check "$cc: -fvisibility=hidden plugin still exports ts_plugin_entry (TS_API)" plugin_exports_its_entry
clang=$(command -v clang || true)
if [ -n "$clang" ]; then
  check "clang: both headers, ${strict[*]}" "$clang" "${strict[@]}" -fsyntax-only "$test_c"
  check "clang: a call to a TS_DEPRECATED function warns with its message" deprecated_call_warns "$clang"
fi
echo "header macros checked with gcc${clang:+ and clang}"
echo "header_macros: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
