# Tests/flags.sh: sourced by the test scripts (sh or bash) for the C flags,
# whose one place is the Makefile ("C flags: the one place"):
#   TS_C_STD       the C standard (-std=c99)
#   TS_C_WARN      the warnings, as errors (-Wall -Wextra -Werror -pedantic)
#   TS_CFLAGS      test programs: TS_C_STD -O2 -g TS_C_WARN (the Makefile's CFLAGS)
#   TS_SAN_CFLAGS  programs and plugins built with a sanitizer (-O1, frame pointers)
#   TS_CXX_STD     the C++ standard (-std=c++17)
#   TS_CXX_WARN    the C++ warnings, as errors (TS_C_WARN's)
# Under make they are in the environment (the Makefile exports them); a script
# run alone gets them from `make flags`. Set TS_ROOT (the checkout) first, or
# source it from the checkout's root.
if [ -z "${TS_CFLAGS:-}" ] || [ -z "${TS_C_STD:-}" ] || [ -z "${TS_C_WARN:-}" ] || [ -z "${TS_SAN_CFLAGS:-}" ] || [ -z "${TS_CXX_STD:-}" ] || [ -z "${TS_CXX_WARN:-}" ]; then
  ts_flags=$(make -s --no-print-directory -C "${TS_ROOT:-.}" flags) || {
    echo "Tests/flags.sh: could not read the C flags from make flags (in ${TS_ROOT:-$PWD})" >&2
    exit 2
  }
  eval "$ts_flags"
  unset ts_flags
fi
export TS_C_STD TS_C_WARN TS_CFLAGS TS_SAN_CFLAGS TS_CXX_STD TS_CXX_WARN
