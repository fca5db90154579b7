#!/usr/bin/env bash
# Tests/setup/run.sh (make test-setup): building needs none of the test
# toolchain, and resolves no documentation or test package.
#
#   1. .ci/setup.sh's lists, with dpkg-query faked to say every package is
#      missing (--dry-run: nothing installed): the build list names the
#      library's and plugins' packages and none of the test toolchain; the
#      test list names the test toolchain.
#   2. make -n run / install / build: the build setup, never the test setup,
#      and no command of the test toolchain.
#   3. Package.swift with TURNSTATE_LIBRARY_ONLY=1 (the Makefile's library
#      builds) lists no docs or test package and no TurnstateTesting; without
#      it (a user's package that depends on turnstate) it lists them all.
#   4. make run and make install PREFIX=<scratch> on a machine "without the
#      test toolchain": dpkg-query faked to say its packages (chromium,
#      redis-server, spin, lintian, bindgen, ...) are not installed, apt-get
#      faked to record any call, and those commands shadowed on PATH by ones
#      that record their call and fail. Both work, install nothing, run none
#      of them, resolve no package (no "Fetching"/"Computing" in their output
#      or the build logs), and print step lines, not commands (no compiler
#      flag, scratch path or install script in make's own lines).
# Ends with "setup: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); echo "FAIL: $1"; }
check() { # description command...: passes when the command does
  local what=$1; shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The test toolchain's packages, and the commands of the test toolchain
# that a build step could call by mistake.
test_debs=(valgrind python3-venv spin abigail-tools redis-server chromium chromium-driver bindgen libclang1-14 lintian)
test_commands=(valgrind spin abidiff abidw redis-server redis-cli chromium chromedriver bindgen lintian)
# What building does need (the build list must name these: else the fake
# below did not work and the checks on it say nothing).
build_debs=(gcc make pkg-config libffi-dev libsimdjson-dev python3 libhiredis-dev libmicrohttpd-dev)

# The fakes. dpkg-query answers setup.sh's one query (-W -f FORMAT PKG...):
# a package named in FAKE_MISSING (or any, for FAKE_MISSING=all) is not
# installed, the others are. apt-get and the test commands record their call
# in $work/called and fail.
mkdir -p "$work/bin"
cat >"$work/bin/dpkg-query" <<'SH'
#!/usr/bin/env bash
status=0
for a in "$@"; do
  case $a in -W|-f*|'${Package} ${Status}\n') continue ;; esac
  if [ "$FAKE_MISSING" = all ] || [[ " $FAKE_MISSING " == *" $a "* ]]; then
    echo "dpkg-query: no packages found matching $a" >&2; status=1
  else
    echo "$a install ok installed"
  fi
done
exit $status
SH
for c in apt-get "${test_commands[@]}"; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/called"\nexit 1\n' "$c" "$work" >"$work/bin/$c"
done
chmod +x "$work/bin"/*
fakepath=$work/bin:$PATH

# --- 1. The lists (dry run: nothing is installed).
# words LINE: the packages of setup.sh's "would install: ..." line.
would_install() { sed -n 's/^setup [a-z]*: would install: //p'; }
build_list=$(PATH=$fakepath FAKE_MISSING=all .ci/setup.sh --dry-run build | would_install)
test_list=$(PATH=$fakepath FAKE_MISSING=all .ci/setup.sh --dry-run test | would_install)
missing_build=() leaked=() missing_test=()
for d in "${build_debs[@]}"; do [[ " $build_list " == *" $d "* ]] || missing_build+=("$d"); done
for d in "${test_debs[@]}"; do [[ " $build_list " == *" $d "* ]] && leaked+=("$d"); done
for d in "${test_debs[@]}"; do [[ " $test_list " == *" $d "* ]] || missing_test+=("$d"); done
check "setup.sh build, every package missing: would install the build list (${build_list:-nothing})" \
  test ${#missing_build[@]} -eq 0
check "setup.sh build's list holds none of the test toolchain${leaked:+ (it holds ${leaked[*]})}" test ${#leaked[@]} -eq 0
check "setup.sh test's list holds the test toolchain${missing_test:+ (it lacks ${missing_test[*]})}" test ${#missing_test[@]} -eq 0
out=$(PATH=$fakepath FAKE_MISSING="${test_debs[*]}" .ci/setup.sh --dry-run build)
check "setup.sh build with the test toolchain missing: nothing to install ($out)" \
  grep -qE '^setup build: [0-9]+ Debian packages present, Swift ' <<<"$out"
check "the dry runs called neither apt-get nor a test command" test ! -e "$work/called"

# --- 2. What make run, make install and make build would run.
for target in run install build; do
  make -n --no-print-directory V= "$target" PREFIX="$work/n-prefix" >"$work/n-$target" 2>&1
  check "make -n $target runs .ci/setup.sh build" grep -q '\.ci/setup\.sh build' "$work/n-$target"
  check "make -n $target never reaches the test or deb setup" \
    bash -c "! grep -nE 'setup\.sh (--dry-run )?(test|deb)|setup-(test|deb)' '$work/n-$target'"
  words=$(IFS='|'; echo "${test_commands[*]}")
  check "make -n $target runs no command of the test toolchain" \
    bash -c "! grep -nwE '$words' '$work/n-$target'"
done

# --- 3. The manifest.
manifest() { # env...: dump-package's JSON, reduced to "dependencies: ...", "targets: ...", "products: ..."
  env "$@" swift package dump-package 2>"$work/dump.err" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("dependencies:", " ".join(x["sourceControl"][0]["identity"] for x in d["dependencies"]))
print("targets:", " ".join(t["name"] for t in d["targets"]))
print("products:", " ".join(p["name"] for p in d["products"]))'
}
lib_only=$(manifest TURNSTATE_LIBRARY_ONLY=1)
whole=$(manifest -u TURNSTATE_LIBRARY_ONLY)
echo "$lib_only" | sed 's/^/    library only: /'
check "TURNSTATE_LIBRARY_ONLY=1: no package dependency" grep -qx 'dependencies: ' <<<"$lib_only"
check "TURNSTATE_LIBRARY_ONLY=1: the library and the logger, no TurnstateTesting and no test target" \
  bash -c '[[ $1 == *"products: "*"turnstate "* && $1 == *turnstate-logger* && $1 != *TurnstateTesting* && $1 != *Tests* ]]' _ "$lib_only"
check "without it (a user's package): TurnstateTesting, xctest-dynamic-overlay, swift-custom-dump, swift-docc-plugin" \
  bash -c '[[ $1 == *"dependencies: "*xctest-dynamic-overlay* && $1 == *swift-custom-dump* && $1 == *swift-docc-plugin* &&
              $(grep "^products:" <<<"$1") == *TurnstateTesting* ]]' _ "$whole"

# --- 4. make run and make install without the test toolchain.
quiet_and_local() { # LOG: no package resolution in it or in build/logs/{lib,logger}.log; make's own lines echo no command
  local resolved echoed
  resolved=$(grep -shE 'Fetching|Computing|Cloning|Resolving|swift-docc-plugin|swift-custom-dump' "$1" build/logs/lib.log build/logs/logger.log)
  echoed=$(sed '/^run build\/bin\/todo/,$d' "$1" |
           grep -E -- '--scratch-path|-Xlinker|-fPIC|-Wall|install-stripped\.sh|swift-runtime\.sh|^(cc|gcc|clang|swift|install) -|.{200}')
  [ -z "$resolved" ] && [ -z "$echoed" ] && return 0
  [ -n "$resolved" ] && echo "    package resolution: $resolved"
  [ -n "$echoed" ] && echo "    commands echoed: $echoed"
  return 1
}
# As on a fresh clone: a Package.resolved that the test builds left (swift
# build --build-tests reads the whole manifest and pins the docs and test
# packages) would make the library-only build fetch those pins into its
# scratch folder, from SwiftPM's cache. A user's `make run` after `make test`
# does that too (quietly wrong, not broken: nothing is built from them); the
# check looks at what a new clone does, with the file set aside meanwhile.
if [ -f Package.resolved ]; then
  mv Package.resolved "$work/Package.resolved.kept"
  trap 'mv -f "$work/Package.resolved.kept" Package.resolved 2>/dev/null; rm -rf "$work"' EXIT
fi
if PATH=$fakepath FAKE_MISSING="${test_debs[*]}" make --no-print-directory V= run >"$work/run.log" 2>&1; then
  ok "make run without the test toolchain"
else
  bad "make run without the test toolchain:"; sed 's/^/    | /' "$work/run.log"
fi
check "make run: the demo ran to its end (done.)" grep -qx 'done.' "$work/run.log"
check "make run: a line per build step, no command echoed, no package resolved" quiet_and_local "$work/run.log"
sed '/^run build\/bin\/todo/,$d' "$work/run.log" | sed 's/^/    | /'
if PATH=$fakepath FAKE_MISSING="${test_debs[*]}" make --no-print-directory V= install PREFIX="$work/prefix" \
     >"$work/install.log" 2>&1; then
  ok "make install PREFIX=<scratch> without the test toolchain"
else
  bad "make install without the test toolchain:"; sed 's/^/    | /' "$work/install.log"
fi
check "make install: the library, the plugins and turnstate.pc are installed" \
  test -f "$work/prefix/lib/libturnstate.so" -a -f "$work/prefix/lib/turnstate/plugins/guard.so" \
  -a -f "$work/prefix/lib/pkgconfig/turnstate.pc"
check "make install: a line per step, no command echoed, no package resolved" quiet_and_local "$work/install.log"
if [ -e "$work/called" ]; then
  bad "make run and make install called apt-get or the test toolchain:"; sed 's/^/    | /' "$work/called"
else
  ok "make run and make install called neither apt-get nor any of: ${test_commands[*]}"
fi

echo "setup: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
