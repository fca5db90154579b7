#!/usr/bin/env bash
# Keeps the README honest: its Swift quick start must type-check against the
# Turnstate module, its C quick start must compile, run and print what the
# README says, its C++ example must compile strictly, run and print what the
# README says, and its plugin example must build with only the headers.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 700 "$work"

# The fenced blocks of one language under one heading, concatenated.
extract() { # heading language
  python3 - "$1" "$2" <<'PY'
import re, sys
heading, language = sys.argv[1], sys.argv[2]
text = open("README.md").read()
start = text.index(heading + "\n")
end = text.find("\n## ", start + len(heading))
section = text[start:end if end >= 0 else len(text)]
print("\n".join(re.findall(r"```" + language + r"\n(.*?)```", section, re.S)))
PY
}

failed=0
check() { if "$@"; then echo "ok: ${*: -1}"; else echo "FAILED: ${*: -1}"; failed=$((failed + 1)); fi; }

extract "## Swift quick start" swift > "$work/main.swift"
swift build --scratch-path .build --target Turnstate >/dev/null
check swiftc -typecheck -swift-version 6 -I .build/debug/Modules "$work/main.swift"

extract "## C quick start" c > "$work/app.c"
cc -std=c99 -Wall -Wextra -Werror -IInclude "$work/app.c" -o "$work/app" -Lbuild/lib -Wl,-rpath,"$PWD/build/lib" -lturnstate
"$work/app" > "$work/app.out"
expected=$(extract "## C quick start" sh | sed -n 's/^# //p')
check diff <(echo "$expected") "$work/app.out"

# The quick start's shell commands, run as written (HOME is a scratch folder,
# so `make install PREFIX=$HOME/.local` installs there; app.c is the block above).
extract "## C quick start" sh | grep -v '^#' > "$work/commands.sh"
mkdir -p "$work/home" "$work/run" && cp "$work/app.c" "$work/run/app.c"
sed -i "s|^make install\(.*\)|make -C $PWD --no-print-directory install\1 >'$work/install.log'|" "$work/commands.sh"
check bash -c "cd '$work/run' && HOME='$work/home' bash -euo pipefail '$work/commands.sh' >'$work/commands.out' 2>&1 && diff <(echo \"\$0\") '$work/commands.out'" "$expected"

# The C++ example: built with the header as it is, run, and its output
# compared with the "# " lines of the section's shell block.
extract "## C++" cpp > "$work/app.cpp"
${CXX:-c++} -std=c++17 -Wall -Wextra -pedantic -Werror -IInclude "$work/app.cpp" -o "$work/app_cpp" \
  -Lbuild/lib -Wl,-rpath,"$PWD/build/lib" -lturnstate
"$work/app_cpp" > "$work/app_cpp.out"
check diff <(extract "## C++" sh | sed -n 's/^# //p') "$work/app_cpp.out"

extract "### Write a plugin" c > "$work/plugin.c"
cc -std=c99 -Wall -Wextra -Werror -shared -fPIC -IInclude "$work/plugin.c" -o "$work/counter.so"
check bash -c "! readelf -d '$work/counter.so' | grep -q libturnstate"

echo "readme: $((5 - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
