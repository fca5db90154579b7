#!/usr/bin/env bash
# The Rust bindings (bindings/rust), as `make test-rust` runs them:
#   1. turnstate-sys's committed declarations match the headers
#      (generate.sh --check: Debian's bindgen, white space ignored);
#   2. `cargo test --offline` of the workspace against build/lib and
#      build/plugins (TURNSTATE_LIB_DIR, TURNSTATE_PLUGINS_DIR): each Rust
#      test counts as one check; then the misuse tests
#      (turnstate/tests/misuse.rs: a Store dropped inside each kind of its
#      callbacks, on the caller's thread and on the delay plugin's worker)
#      again under valgrind (VALGRIND, the Makefile's command line): no
#      invalid access, no definite or indirect leak;
#   3. the crate's README (bindings/rust/turnstate/README.md) has
#      docs/rust.md's Rust example word for word (`cargo test` runs it as a
#      doctest); docs/rust.md's example, as a user runs it: `make install` into a
#      temporary prefix, a new cargo project with its Cargo.toml
#      lines and src/main.rs, and its commands (`cargo run
#      --offline` with PKG_CONFIG_PATH at the prefix) run with the Swift
#      toolchain hidden (Tests/install/without-swift.sh); its output must be
#      what docs/rust.md shows.
# Needs root for step 3 (a private mount namespace), valgrind for step 2.
# Ends with
# "checks: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
build=${TS_BUILD:-$root/build}
export CARGO=${CARGO:-cargo}
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "  ok   $*"; }
fail() { failed=$((failed + 1)); echo "  FAIL $*"; }
finish() { echo "checks: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

tmp=$(mktemp -d /tmp/turnstate-rust.XXXXXX)
chmod 0755 "$tmp"
trap 'rm -rf "$tmp"' EXIT

if ! command -v "$CARGO" >/dev/null; then
  fail "cargo found on PATH (rustc and cargo: rustup's or Debian's cargo package)"; finish
fi
echo "rust: $("$CARGO" --version), $(rustc --version 2>/dev/null)"

# 1. The declarations and the headers.
if bindings/rust/turnstate-sys/generate.sh --check >"$tmp/generate.log" 2>&1; then
  pass "$(tail -n1 "$tmp/generate.log")"
else
  sed 's/^/    | /' "$tmp/generate.log" | head -n 60; fail "turnstate-sys/src/bindings.rs matches the headers"
fi

# 2. cargo test, against the build tree.
export CARGO_TARGET_DIR=$build/rust
if (cd bindings/rust && TURNSTATE_LIB_DIR=$build/lib TURNSTATE_PLUGINS_DIR=$build/plugins \
      LD_LIBRARY_PATH=$build/lib "$CARGO" test --offline --quiet) >"$tmp/cargo-test.log" 2>&1; then
  cargo_ok=1
else
  cargo_ok=0
fi
# One check per Rust test: the "test result:" lines, summed.
read -r tests_passed tests_failed < <(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' \
  "$tmp/cargo-test.log" | awk '{p += $1; f += $2} END {print p + 0, f + 0}')
echo "  cargo test --offline: $tests_passed passed, $tests_failed failed"
passed=$((passed + tests_passed)); failed=$((failed + tests_failed))
if [ "$cargo_ok" = 1 ] && [ "$tests_passed" -gt 0 ]; then
  pass "cargo test --offline (bindings/rust)"
else
  sed 's/^/    | /' "$tmp/cargo-test.log" | tail -n 80; fail "cargo test --offline (bindings/rust)"
fi

# The misuse tests under valgrind: a closure freed while the dispatch that
# drops its store still runs is an invalid read there.
valgrind=${VALGRIND:-valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect --suppressions=$root/Tests/c/valgrind.supp}
misuse=$(cd bindings/rust && TURNSTATE_LIB_DIR=$build/lib TURNSTATE_PLUGINS_DIR=$build/plugins \
  "$CARGO" test --offline --no-run --test misuse 2>&1 | sed -n 's/.*Executable tests\/misuse\.rs (\(.*\))$/\1/p')
# shellcheck disable=SC2086
if [ -n "$misuse" ] && LD_LIBRARY_PATH=$build/lib $valgrind "$misuse" --test-threads=1 >"$tmp/misuse.log" 2>&1 &&
   grep -q '^test result: ok\. [1-9]' "$tmp/misuse.log"; then
  pass "turnstate/tests/misuse.rs under valgrind ($(sed -n 's/^test result: ok\. \([0-9]*\) passed.*/\1/p' "$tmp/misuse.log") tests)"
else
  sed 's/^/    | /' "$tmp/misuse.log" 2>/dev/null | tail -n 60; fail "turnstate/tests/misuse.rs under valgrind"
fi

# 3. docs/rust.md's example against an installed library, Swift hidden.
extract() { # heading language
  python3 - "$1" "$2" <<'PY'
import re, sys
heading, language = sys.argv[1], sys.argv[2]
text = open("docs/rust.md").read()
start = text.index(heading + "\n")
end = text.find("\n## ", start + len(heading))
section = text[start:end if end >= 0 else len(text)]
print("\n".join(re.findall(r"```" + language + r"\n(.*?)```", section, re.S)))
PY
}
app=$tmp/home/app
mkdir -p "$app/src"
extract "## Rust" rust >"$app/src/main.rs"
# The crate's own README (crates.io shows it; cargo test runs it as a
# doctest) has the same example.
if python3 - "$app/src/main.rs" <<'PY'
import re, sys
crate = open("bindings/rust/turnstate/README.md").read()
blocks = re.findall(r"```rust\n(.*?)```", crate, re.S)
sys.exit(0 if len(blocks) == 1 and blocks[0].rstrip("\n") == open(sys.argv[1]).read().rstrip("\n") else 1)
PY
then
  pass "bindings/rust/turnstate/README.md has docs/rust.md's Rust example, word for word"
else
  fail "bindings/rust/turnstate/README.md has docs/rust.md's Rust example, word for word"
fi
extract "## Rust" toml >"$tmp/deps.toml"
# docs/rust.md's path to the crate, made the repository's.
if ! grep -q '^turnstate = { path = "[^"]*bindings/rust/turnstate" }' "$tmp/deps.toml"; then
  fail "docs/rust.md's Cargo.toml names the crate by path"; finish
fi
{
  printf '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n'
  sed "s|path = \"[^\"]*bindings/rust/turnstate\"|path = \"$root/bindings/rust/turnstate\"|" "$tmp/deps.toml"
} >"$app/Cargo.toml"
extract "## Rust" sh >"$tmp/readme.sh"
expected=$(sed -n 's/^# //p' "$tmp/readme.sh")
# `make install` runs here (it builds with Swift); the rest where Swift is hidden.
install_line=$(grep '^make install' "$tmp/readme.sh")
grep -v '^#' "$tmp/readme.sh" | grep -v '^make install' >"$tmp/commands.sh"
# HOME is a scratch folder (docs/rust.md installs into $HOME/.local); rustup
# and cargo keep their own folders.
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
if HOME=$tmp/home bash -c "make -C '$root' --no-print-directory ${install_line#make }" >"$tmp/install.log" 2>&1; then
  pass "docs/rust.md: $install_line (HOME=$tmp/home)"
else
  sed 's/^/    | /' "$tmp/install.log" | tail -n 40; fail "docs/rust.md: $install_line"; finish
fi
unset CARGO_TARGET_DIR LD_LIBRARY_PATH TURNSTATE_LIB_DIR TURNSTATE_PLUGINS_DIR PKG_CONFIG_PATH
if (cd "$app" && HOME=$tmp/home CARGO_TARGET_DIR=$tmp/target \
      "$root/Tests/install/without-swift.sh" bash -euo pipefail "$tmp/commands.sh") \
      >"$tmp/run.out" 2>"$tmp/run.err"; then
  pass "docs/rust.md: the Rust example builds and runs with cargo run --offline, Swift toolchain hidden"
  grep '^without-swift:' "$tmp/run.err" | sed 's/^/       /'
else
  sed 's/^/    | /' "$tmp/run.err" | tail -n 40; fail "docs/rust.md: the Rust example builds and runs (Swift hidden)"
fi
if diff <(echo "$expected") "$tmp/run.out" >"$tmp/diff.log"; then
  pass "docs/rust.md: the example prints what docs/rust.md says"
else
  sed 's/^/    | /' "$tmp/diff.log"; fail "docs/rust.md: the example prints what docs/rust.md says"
fi
binary=$tmp/target/debug/app
if [ -x "$binary" ] && ldd "$binary" | grep -F "libturnstate.so.0 => $tmp/home/.local/lib/libturnstate.so.0" >/dev/null; then
  pass "the example loads libturnstate from the install prefix"
else
  ldd "$binary" 2>&1 | sed 's/^/    | /'; fail "the example loads libturnstate from the install prefix"
fi
HOME=$tmp/home make -C "$root" --no-print-directory uninstall PREFIX="$tmp/home/.local" >/dev/null 2>&1 || true
finish
