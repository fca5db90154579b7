#!/usr/bin/env bash
# The DocC documentation: `make docs` (swift package generate-documentation,
# combined, for Turnstate, TurnstateCore and TurnstateTesting) must print no
# warning, produce the archive with every article, and every public symbol of
# those modules must have a documentation comment of its own (the symbol
# graphs the plugin extracted); the plain `swift package
# generate-documentation` (every target) must succeed. Prints
# "docs: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
SWIFT=${SWIFT:-swift}
BUILD=${BUILD:-$PWD/build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

failed=0 passed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1"; failed=$((failed + 1)); }

rm -rf "$BUILD/docs"
if make --no-print-directory docs SWIFT="$SWIFT" BUILD="$BUILD" >"$work/docs.log" 2>&1; then
  ok "make docs"
else
  tail -n 40 "$work/docs.log"
  bad "make docs"
fi

# DocC's warnings (and errors) name a file and a problem; any one fails.
if grep -iE '(^|[^a-z])(warning|error): ' "$work/docs.log" >"$work/warnings"; [ -s "$work/warnings" ]; then
  cat "$work/warnings"
  grep -A6 -iE '(^|[^a-z])(warning|error): ' "$work/docs.log" | head -n 80
  bad "no DocC warnings ($(wc -l <"$work/warnings") found)"
else
  ok "no DocC warnings"
fi

# The plain command, as a user types it (every target, one archive each;
# without combined documentation the links across modules stay unresolved,
# so only its success counts here).
if "$SWIFT" package --scratch-path .build generate-documentation >"$work/plain.log" 2>&1; then
  ok "swift package generate-documentation (every target)"
else
  grep -iE 'error' "$work/plain.log" | head -n 20
  bad "swift package generate-documentation (every target)"
fi

archive="$BUILD/docs/turnstate.doccarchive"
missing=""
for page in turnstate/gettingstarted turnstate/storerules turnstate/middlewareandthunks \
            turnstate/testingwiththeteststore turnstate/comingfromreswift turnstate/capiandplugins \
            turnstatecore/store turnstatetesting/teststore; do
  [ -f "$archive/data/documentation/$page.json" ] || missing+=" $page"
done
if [ -z "$missing" ]; then ok "the archive has every article and module"; else bad "pages missing from $archive:$missing"; fi

# Every public symbol documented: the extracted symbol graphs list each
# symbol with its doc comment, if any.
graphs=$(find .build/*/extracted-symbols -path '*/Turnstate/*' -o -path '*/TurnstateCore/*' -o -path '*/TurnstateTesting/*' \
         2>/dev/null | grep -E '/(Turnstate|TurnstateCore|TurnstateTesting)(@[A-Za-z]+)?\.symbols\.json$')
if python3 - $graphs <<'PY'
import json, sys
undocumented = []
for path in sys.argv[1:]:
    graph = json.load(open(path))
    module = graph["module"]["name"]
    for symbol in graph["symbols"]:
        if symbol.get("accessLevel") not in ("public", "open"):
            continue
        if symbol.get("docComment", {}).get("lines"):
            continue
        # Members the compiler synthesizes (Hashable's for a raw-value enum)
        # have no source to document.
        if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
            continue
        name = ".".join(symbol["pathComponents"])
        undocumented.append(f"{module}: {name} ({symbol['kind']['displayName']})")
for line in sorted(set(undocumented)):
    print("undocumented:", line)
sys.exit(1 if undocumented or not sys.argv[1:] else 0)
PY
then ok "every public symbol is documented ($(echo $graphs | wc -w) symbol graphs)"; else bad "every public symbol is documented"; fi

echo "docs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
