#!/usr/bin/env bash
# Keeps the README and the guides in docs/ honest: the README's Swift quick
# start must type-check against the Turnstate module; the DocC article
# "Testing with the TestStore"'s example against TurnstateTesting (and be the
# test that make test-swift runs); the README's short C example and
# docs/c-api.md's C quick start must compile, run and print what they say;
# docs/cpp.md's C++ example must compile strictly, run and print what it says
# (and its shell commands run as written after the C quick start's);
# docs/plugins.md's plugin example must build with only the headers;
# docs/undo.md's C example must run and print what it says, its Swift one
# type-check; and
# every relative link of README.md and docs/*.md must name a file that exists
# (and a heading of it, for a link with a #fragment).
set -euo pipefail
cd "$(dirname "$0")/../.."
# The C flags (TS_C_STD, TS_C_WARN): the Makefile's.
. Tests/flags.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 700 "$work"

# The fenced blocks of one language under one heading (up to the next "## "
# heading, or the next heading of the same level for a "### " one), less the
# subsections named after it, concatenated.
extract() { # file heading language [excluded "### " subsection...]
  python3 - "$@" <<'PY'
import re, sys
path, heading, language, excluded = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
text = open(path).read()
start = text.index(heading + "\n")
ends = [e for e in (text.find("\n## ", start + len(heading)),
                    text.find("\n### ", start + len(heading)) if heading.startswith("### ") else -1) if e >= 0]
section = text[start:min(ends) if ends else len(text)]
for sub in excluded:
    if sub + "\n" in section:
        a = section.index(sub + "\n")
        b = section.find("\n### ", a + len(sub))
        section = section[:a] + (section[b:] if b >= 0 else "")
print("\n".join(re.findall(r"```" + language + r"\n(.*?)```", section, re.S)))
PY
}

failed=0 passed=0
check() { if "$@"; then echo "ok: ${*: -1}"; passed=$((passed + 1)); else echo "FAILED: ${*: -1}"; failed=$((failed + 1)); fi; }
# As check, named by its first argument.
check_that() { # description command...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; passed=$((passed + 1)); else echo "FAILED: $what"; failed=$((failed + 1)); fi
}

extract README.md "## Swift quick start" swift > "$work/main.swift"
swift build --scratch-path .build --target Turnstate >/dev/null
check swiftc -typecheck -swift-version 6 -I .build/debug/Modules "$work/main.swift"

# The TestStore example: a swift-testing test file that type-checks against
# TurnstateTesting, and that is, word for word, the test that `make test-swift`
# runs (Tests/TurnstateTestingTests/ReadmeExampleTests.swift, from its first import).
extract Sources/Turnstate/Turnstate.docc/TestingWithTheTestStore.md "### An example" swift > "$work/teststore.swift"
swift build --scratch-path .build --target TurnstateTesting >/dev/null
check swiftc -typecheck -swift-version 6 -I .build/debug/Modules "$work/teststore.swift"
check diff <(sed -n '/^import /,$p' Tests/TurnstateTestingTests/ReadmeExampleTests.swift) <(sed '${/^$/d}' "$work/teststore.swift")

# The README's short C example: compiled as strictly, run, and its output
# compared with the "# " lines of its shell block.
extract README.md "## C quick start" c > "$work/first.c"
cc $TS_C_STD $TS_C_WARN -IInclude "$work/first.c" -o "$work/first" -Lbuild/lib -Wl,-rpath,"$PWD/build/lib" -lturnstate
"$work/first" > "$work/first.out"
check diff <(extract README.md "## C quick start" sh | sed -n 's/^# //p') "$work/first.out"

# docs/c-api.md's C quick start.
extract docs/c-api.md "## C quick start" c > "$work/app.c"
cc $TS_C_STD $TS_C_WARN -IInclude "$work/app.c" -o "$work/app" -Lbuild/lib -Wl,-rpath,"$PWD/build/lib" -lturnstate
"$work/app" > "$work/app.out"
expected=$(extract docs/c-api.md "## C quick start" sh | sed -n 's/^# //p')
check diff <(echo "$expected") "$work/app.out"

# docs/migrations.md's complete example: compiled strictly, run from the
# repository's folder (it loads build/plugins/journal.so and writes
# settings.journal there, which it removes), its output compared with the
# "# " lines of its shell block.
extract docs/migrations.md "## A complete example" c > "$work/settings.c"
cc $TS_C_STD $TS_C_WARN -IInclude "$work/settings.c" -o "$work/settings" -Lbuild/lib -Wl,-rpath,"$PWD/build/lib" -lturnstate
"$work/settings" > "$work/settings.out"
check diff <(extract docs/migrations.md "## A complete example" sh | sed -n 's/^# //p') "$work/settings.out"

# The quick start's shell commands, run as written (HOME is a scratch folder,
# so `make install PREFIX=$HOME/.local` installs there; app.c is the block above).
extract docs/c-api.md "## C quick start" sh | grep -v '^#' > "$work/commands.sh"
mkdir -p "$work/home" "$work/run" && cp "$work/app.c" "$work/run/app.c"
# (make install's own output, a package resolution's too, goes to install.log.)
sed -i "s|^make install\(.*\)|make -C $PWD --no-print-directory install\1 >'$work/install.log' 2>\&1|" "$work/commands.sh"
check bash -c "cd '$work/run' && HOME='$work/home' bash -euo pipefail '$work/commands.sh' >'$work/commands.out' 2>&1 && diff <(echo \"\$0\") '$work/commands.out'" "$expected"

# The C++ example: built with the header as it is, run, and its output
# compared with the "# " lines of the section's shell block.
extract docs/cpp.md "## C++" cpp > "$work/app.cpp"
${CXX:-c++} $TS_CXX_STD $TS_CXX_WARN -IInclude "$work/app.cpp" -o "$work/app_cpp" \
  -Lbuild/lib -Wl,-rpath,"$PWD/build/lib" -lturnstate
"$work/app_cpp" > "$work/app_cpp.out"
expected_cpp=$(extract docs/cpp.md "## C++" sh | sed -n 's/^# //p')
check diff <(echo "$expected_cpp") "$work/app_cpp.out"

# The C++ section's shell commands, run as written right after the C quick
# start's, as a new user goes on: the same HOME, whose ~/.local holds what
# that `make install` put there (nothing else tells pkg-config or the loader
# where it is).
extract docs/cpp.md "## C++" sh | grep -v '^#' > "$work/commands_cpp.sh"
mkdir -p "$work/run_cpp" && cp "$work/app.cpp" "$work/run_cpp/app.cpp"
cpp_commands() { # (a description, for check's line)
  if (cd "$work/run_cpp" && env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH HOME="$work/home" \
        bash -euo pipefail "$work/commands_cpp.sh") >"$work/commands_cpp.out" 2>&1 &&
     diff <(echo "$expected_cpp") "$work/commands_cpp.out"; then
    return 0
  fi
  sed 's/^/    | /' "$work/commands_cpp.out"
  return 1
}
check cpp_commands "the C++ section's commands, run after the C quick start's (HOME=$work/home)"

extract docs/plugins.md "### Write a plugin" c > "$work/plugin.c"
cc $TS_C_STD $TS_C_WARN -shared -fPIC -IInclude "$work/plugin.c" -o "$work/counter.so"
check bash -c "! readelf -d '$work/counter.so' | grep -q libturnstate"

# ## Install: the shipped plugins one by one, each with its config, as the
# README's lines do (PLUGINSDIR: build/plugins), not the whole folder; and
# what ## Plugins says each needs to start (Tests/readme/plugin_configs.c).
{
  echo '#include <turnstate.h>'
  echo '#include <stdio.h>'
  echo 'static int failures;'
  echo '#define ts_store_load_plugin(s, p, c) (ts_store_load_plugin(s, p, c) == TS_OK ? 0 : (printf("%s: %s\n", p, ts_last_error()), failures++))'
  echo 'int main(void) {'
  echo '    ts_store *store = NULL;'
  echo '    if (ts_store_create("{}", &store) != TS_OK) return 2;'
  extract docs/packaging.md "## Install" c
  echo '    ts_store_destroy(store);'
  echo '    return failures;'
  echo '}'
} > "$work/install_plugins.c"
mkdir -p "$work/install_run"
cc $TS_C_STD $TS_C_WARN -IInclude "-DPLUGINSDIR=\"$PWD/build/plugins\"" "$work/install_plugins.c" \
  -o "$work/install_plugins" -Lbuild/lib -Wl,-rpath,"$PWD/build/lib" -lturnstate
check_that "## Install: the shipped plugins load one by one with the README's configs" \
  bash -c "cd '$work/install_run' && '$work/install_plugins' && [ -f app.journal ]"
cc $TS_C_STD $TS_C_WARN -IInclude Tests/readme/plugin_configs.c -o "$work/plugin_configs" \
  -Lbuild/lib -Wl,-rpath,"$PWD/build/lib" -lturnstate
check_that "## Plugins: what each shipped plugin needs to start (plugin_configs.c)" \
  "$work/plugin_configs" "$PWD/build/plugins" "$work"

# `make run` twice: the second run starts from the state the first left
# (Examples/todo.c says so): the journal in build/demo survives the
# demo-plugins step. In a scratch BUILD with this build's plugins and
# library, which make is told not to remake (-o).
demo=$work/demo-build
mkdir -p "$demo/plugins"
cp build/plugins/guard.so build/plugins/delay.so build/plugins/journal.so build/plugins/logger.so "$demo/plugins/"
ln -s "$PWD/build/lib" "$demo/lib"
nomake=(--no-print-directory -o setup -o lib -o plugins -o build BUILD="$demo")
make "${nomake[@]}" examples >"$work/demo-make.log" 2>&1
make "${nomake[@]}" -o examples run >"$work/run1.out" 2>&1
make "${nomake[@]}" -o examples run >"$work/run2.out" 2>&1
check_that "make run: the first run starts empty" \
  grep -q '^  initial state: {"todos":\[\],"filter":"all"}$' "$work/run1.out"
check_that "make run again: the journal restores the first run's state" \
  grep -q '^  (not empty: a plugin restored a saved state)$' "$work/run2.out"
check_that "make run again: with the first run's todos" \
  grep -q '^  initial state: {"todos":\[{"id":1,"title":"Buy milk"' "$work/run2.out"
check_that "make run again: every step succeeded" grep -q '^done\.$' "$work/run2.out"

# docs/testgen.md's complete example: the todo demo records a journal, which
# turnstate-testgen makes a C test of; run as written from the top of the
# checkout, its output compared with the "# " lines of its block.
extract docs/testgen.md "## A complete example" sh | grep -v '^#' > "$work/testgen.sh"
expected_testgen=$(extract docs/testgen.md "## A complete example" sh | sed -n 's/^# //p')
check_that "docs/testgen.md's complete example runs and prints what it says" \
  bash -c "bash -euo pipefail '$work/testgen.sh' >'$work/testgen.out' 2>&1 && diff <(echo \"\$0\") '$work/testgen.out' ||
           { sed 's/^/    | /' '$work/testgen.out'; exit 1; }" "$expected_testgen"

# docs/undo.md: its C example compiled strictly and run with build/plugins/undo.so,
# printing what its "# " lines say; its Swift example type-checks against Turnstate.
extract docs/undo.md "## Example" c > "$work/undo-demo.c"
cc $TS_C_STD $TS_C_WARN -IInclude "$work/undo-demo.c" -o "$work/undo-demo" -Lbuild/lib -Wl,-rpath,"$PWD/build/lib" -lturnstate
"$work/undo-demo" "$PWD/build/plugins/undo.so" > "$work/undo-demo.out"
check_that "docs/undo.md: the C example prints what it says" \
  diff <(extract docs/undo.md "## Example" sh | sed -n 's/^# //p') "$work/undo-demo.out"
extract docs/undo.md "## Swift" swift > "$work/undo.swift"
check_that "docs/undo.md: the Swift example type-checks" \
  swiftc -typecheck -swift-version 6 -I .build/debug/Modules "$work/undo.swift"

# Relative links (Tests/readme/links.py): to a file that exists, and to a
# heading of it for a Markdown file's #fragment.
check_that "every relative link of README.md and docs/*.md resolves" python3 Tests/readme/links.py README.md docs/*.md

echo "readme: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
