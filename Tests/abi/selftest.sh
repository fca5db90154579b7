#!/usr/bin/env bash
# Shows that Tests/abi/check_abi.sh catches what it is for: each case alters
# a copy of the headers (no library rebuild: the built library stays as it
# is), or hands it a stand-in library that lost or gained an export, and
# expects the check's verdict. Run by `make test-abi` after the real
# check; prints one line, or the cases that went wrong with the check's output.
#   selftest.sh BUILD LIBRARY SOVERSION
set -uo pipefail
cd "$(dirname "$0")/../.."
# The C flags (TS_C_STD): the Makefile's.
. Tests/flags.sh
build=$1 lib=$2 sover=$3
work=$build/abi-selftest
failed=() n=0

# case NAME EXPECT SOVERSION SED_FILE SED_SCRIPT [LIBRARY]
# EXPECT: incompatible (exit 1, "INCOMPATIBLE"), addition (exit 1, only
# additions), note (exit 0 with the SONAME note). SED_FILE "-": headers as
# they are (for a case about the library).
case_() {
  local name=$1 expect=$2 so=$3 file=$4 script=$5 library=${6:-$lib} rc=0 ok=1
  n=$((n + 1))
  rm -rf "$work/$name" && mkdir -p "$work/$name" && cp -r Include "$work/$name/inc"
  if [ "$file" != - ] && sed -i "$script" "$work/$name/inc/$file" && cmp -s "Include/$file" "$work/$name/inc/$file"; then
    failed+=("$name: the alteration ($script) did not apply to $file; update Tests/abi/selftest.sh")
    return
  fi
  ABI_INCLUDE=$work/$name/inc ABI_OUT=$work/$name/out Tests/abi/check_abi.sh check "$build" "$library" "$so" \
    > "$work/$name/log" 2>&1 || rc=$?
  case $expect in
    incompatible) [ $rc -eq 1 ] && grep -q 'INCOMPATIBLE' "$work/$name/log" || ok=0 ;;
    addition) [ $rc -eq 1 ] && grep -q 'additions that' "$work/$name/log" && ! grep -q 'INCOMPATIBLE' "$work/$name/log" || ok=0 ;;
    note) [ $rc -eq 0 ] && grep -q 'note: the SONAME changed' "$work/$name/log" || ok=0 ;;
  esac
  [ $ok -eq 1 ] || failed+=("$name: expected '$expect', got exit $rc:$(sed 's/^/\n    /' "$work/$name/log")")
}

# Stand-ins for a library that lost an export and one that gained one: the
# functions of the headers as empty stubs, less one or plus one.
fake() { # fake NAME SED_SCRIPT
  mkdir -p "$work/$1" && python3 Tests/abi/abi_tool.py stubs Include/turnstate.h > "$work/$1/stubs.c"
  sed -i "$2" "$work/$1/stubs.c"
  ${CC:-cc} $TS_C_STD -w -IInclude -shared -fPIC "$work/$1/stubs.c" -o "$work/$1/libturnstate.so"
}
fake lib-lost '/ ts_store_unsubscribe(/d'
fake lib-gained '$a void ts_abi_selftest_extra(void) {}'

H=turnstate.h P=turnstate_plugin.h
case_ signature incompatible "$sover" $H 's/ts_store_unsubscribe(ts_store \*store, uint64_t token)/ts_store_unsubscribe(ts_store *store, uint32_t token)/'
case_ return-type incompatible "$sover" $H 's/^\(.*\)int ts_version_number(void)/\1long ts_version_number(void)/'
case_ renamed incompatible "$sover" $H 's/ts_store_unsubscribe(ts_store \*store, uint64_t token)/ts_store_unsubscribe_token(ts_store *store, uint64_t token)/'
case_ status-typedef incompatible "$sover" $H 's/typedef int32_t ts_status;/typedef int64_t ts_status;/'
case_ action-insert incompatible "$sover" $H 's/^    const char \*payload;/    size_t payload_length;\n&/'
case_ action-append incompatible "$sover" $H 's/^    const char \*json;/&\n    size_t json_length;/'
case_ plugin-insert incompatible "$sover" $P 's/^    const char \*version;/&\n    const char *author;/'
case_ plugin-retype incompatible "$sover" $P 's/^    void (\*destroy)(void \*self);/    int (*destroy)(void *self);/'
case_ api-insert incompatible "$sover" $H 's/^    ts_status (\*dispatch)(const char \*action_json);/&\n    void *(*alloc)(size_t size);/'
case_ api-retype incompatible "$sover" $H 's/(\*fail)(ts_status status, const char \*message)/(*fail)(int64_t status, const char *message)/'
case_ status-code incompatible "$sover" $H 's/^\(#define TS_E_MISUSE *\)(-14)/\1(-15)/'
case_ plugin-append addition "$sover" $P 's/^    void (\*destroy)(void \*self);/&\n    uint32_t flags;/'
case_ api-append addition "$sover" $H 's/^} ts_store_api;/    void *(*alloc)(size_t size);\n&/'
case_ new-function addition "$sover" $H 's/^\(.*\)void ts_free(void \*pointer);/&\n\1void *ts_abi_selftest_alloc(size_t size);/'
case_ new-status-code addition "$sover" $H 's/^#define TS_MAX_DEPTH/#define TS_E_SELFTEST (-99)\n&/'
case_ lib-lost-export incompatible "$sover" - - "$work/lib-lost/libturnstate.so"
case_ lib-extra-export addition "$sover" - - "$work/lib-gained/libturnstate.so"
case_ soname-bump note "$((sover + 1))" $H 's/ts_store_unsubscribe(ts_store \*store, uint64_t token)/ts_store_unsubscribe(ts_store *store, uint32_t token)/'

echo "abi-selftest: $((n - ${#failed[@]})) passed, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
  echo "abi selftest: ${#failed[@]} of $n cases went wrong (Tests/abi/selftest.sh):"
  printf '  - %s\n' "${failed[@]}"
  exit 1
fi
echo "abi selftest: all $n altered headers and libraries judged as expected (12 incompatible, 5 additions, 1 SONAME bump)"
