#!/usr/bin/env bash
# generate.sh [--check]
#
# Writes src/bindings.rs from Include/turnstate_plugin.h (which includes
# turnstate.h) with Debian's bindgen (apt-get install bindgen libclang1-14).
# With --check, writes nothing: generates into a temporary file and compares it
# with the committed src/bindings.rs, ignoring white space and the trailing
# commas that rustfmt adds where it breaks a list over lines (rustfmt may be
# missing or another version), and fails with the difference if the header
# and the declarations have drifted apart. `make test-rust` runs --check.
# rustfmt formats with the workspace's rustfmt.toml, named explicitly: left
# to itself, it would take the one of the folder this is run from (none at
# the top of the repository, the workspace's below bindings/rust), and the
# same headers would give different text depending on where one stands.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
command -v bindgen >/dev/null || { echo "generate.sh: bindgen not found (apt-get install bindgen libclang1-14)" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# stddef.h and stdint.h: libclang1-14 comes without clang's own copies
# (libclang-common-14-dev); bindgen finds them through a clang on PATH when
# there is one (the Swift toolchain's), else GCC's serve.
gcc_include=$("${CC:-cc}" -print-file-name=include)
# ts_plugin_entry is declared for plugins to define, not exported by the
# library: it is left out (its type, ts_plugin_entry_fn, is kept). Macros are
# signed (TS_OK and TS_E_* are ts_status, an int32_t).
bindgen "$root/Include/turnstate_plugin.h" \
  --allowlist-function 'ts_.*' --allowlist-type 'ts_.*' --allowlist-var 'TS_.*' \
  --blocklist-function ts_plugin_entry \
  --size_t-is-usize --default-macro-constant-type signed \
  --rustfmt-configuration-file "$here/../rustfmt.toml" \
  -- -I"$root/Include" -isystem "$gcc_include" >"$out"
if [ "${1:-}" = --check ]; then
  normalized() { tr -d ' \t\n' <"$1" | sed 's/,\([])}>]\)/\1/g'; }
  if diff -q <(normalized "$out") <(normalized "$here/src/bindings.rs") >/dev/null; then
    echo "turnstate-sys: src/bindings.rs matches the headers (bindgen $(bindgen --version | awk '{print $2}'))"
  else
    echo "turnstate-sys: src/bindings.rs differs from what bindgen makes of the headers:" >&2
    diff -u "$here/src/bindings.rs" "$out" >&2 || true
    echo "run bindings/rust/turnstate-sys/generate.sh and commit src/bindings.rs" >&2
    exit 1
  fi
else
  cp "$out" "$here/src/bindings.rs"
  echo "wrote $here/src/bindings.rs"
fi
