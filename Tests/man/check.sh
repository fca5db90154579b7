#!/usr/bin/env bash
# The man pages against the headers they are made from (make test-man, after
# make man has written MANDIR, build/man):
#
#   1. every function declared with TS_API and every type (typedef, struct,
#      enum; not an opaque `typedef struct x x;`) of Include/turnstate.h and
#      Include/turnstate_plugin.h has its page MANDIR/man3/NAME.3, and the
#      overviews man7/turnstate.7 and man7/turnstate-plugins.7 are there. The
#      names are read from the headers here (comments and preprocessor lines
#      dropped, declarations cut at ';'), not by docs/man/genman.py, so that a
#      declaration the generator does not see fails;
#   2. the SYNOPSIS that man prints for that page holds the declaration as the
#      header writes it (white space normalized, TS_API and TS_DEPRECATED(...)
#      left out);
#   3. every page renders with no warning: lintian's own command (LC_ALL=C.UTF-8
#      MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z) and groff -man -ww -z
#      print nothing on stderr, and lexgrog reads its NAME line (whatis);
#   4. the check itself: pages generated into a temporary folder pass, and
#      fail, naming the fault, with one page deleted, with a synopsis that no
#      longer matches its header, and with a roff error.
#
#   Tests/man/check.sh MANDIR                   all of the above
#   Tests/man/check.sh --only MANDIR [NAME...]  1-3 only, for the pages NAME
#                                               (default: all); what 4 runs
#
# Needs python3, man-db and groff-base. Ends with "man: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
only=0
if [ "${1:-}" = --only ]; then only=1; shift; fi
mandir=${1:?usage: Tests/man/check.sh [--only] MANDIR [NAME...]}
shift
names=("$@")   # --only: the pages to check (none: all)
wanted() { [ ${#names[@]} -eq 0 ] || [[ " ${names[*]} " == *" $1 "* ]]; }
headers=(Include/turnstate.h Include/turnstate_plugin.h)
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "  ok   $*"; }
fail() { failed=$((failed + 1)); echo "  FAIL $*"; }

for tool in python3 man groff lexgrog col; do
  command -v "$tool" >/dev/null || { fail "$tool is missing (Debian packages python3, man-db, groff-base, bsdextrautils)"; }
done
[ "$failed" -eq 0 ] || { echo "man: $passed passed, $failed failed"; exit 1; }

# The declarations: NAME <tab> the declaration on one line.
declarations() {
  python3 - "${headers[@]}" <<'PY'
import re, sys
def norm(t):
    t = re.sub(r"\s+", " ", t).strip()
    t = re.sub(r"\(\s+", "(", t)
    t = re.sub(r"\s+\)", ")", t)
    return re.sub(r"\s+([,;])", r"\1", t)
attrs = re.compile(r'\bTS_API\b|\bTS_DEPRECATED\s*\((?:[^()"]|"(?:[^"\\]|\\.)*")*\)')
for path in sys.argv[1:]:
    src = open(path, encoding="utf-8").read()
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    src = re.sub(r"//[^\n]*", " ", src)
    src = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", src, flags=re.M)
    src = re.sub(r'extern\s+"C"\s*\{', " ", src)
    src = re.sub(r"^\s*\}\s*$", " ", src, flags=re.M)   # the C++ guard's brace
    depth, cur = 0, []
    for c in src:
        cur.append(c)
        depth += {"{": 1, "}": -1}.get(c, 0)
        if c == ";" and depth == 0:
            stmt = norm("".join(cur))
            cur = []
            exported = re.search(r"\bTS_API\b", stmt) is not None
            decl = norm(attrs.sub(" ", stmt))
            outer = re.sub(r"\{.*\}", " ", decl)
            if exported and not decl.startswith("typedef"):
                name = re.match(r"^[^(]*?(\w+)\s*\(", outer).group(1)
            elif decl.startswith("typedef") or re.match(r"^(struct|enum|union)\s+\w+\s*\{", decl):
                if re.match(r"^typedef (struct|enum|union) \w+ \w+;$", decl):
                    continue   # opaque
                m = re.search(r"\(\s*\*\s*(\w+)\s*\)", outer)
                name = m.group(1) if m else re.findall(r"\w+", outer)[-1]
                if not decl.startswith("typedef"):
                    name = re.match(r"^\w+\s+(\w+)", decl).group(1)
            else:
                continue
            print("%s\t%s" % (name, decl))
PY
}

norm() { tr '\n' ' ' | sed -E 's/[[:space:]]+/ /g; s/\( /(/g; s/ \)/)/g; s/ ([,;])/\1/g; s/^ //; s/ $//'; }

check_pages() { # DIR: checks 1-3
  local dir=$1 name decl page synopsis warnings n=0
  while IFS=$'\t' read -r name decl; do
    n=$((n + 1))
    wanted "$name" || continue
    page=$dir/man3/$name.3
    if [ ! -f "$page" ]; then
      fail "$name: no page man3/$name.3"
      continue
    fi
    pass "$name: man3/$name.3"
    synopsis=$(LC_ALL=C MANWIDTH=200 man -l "$page" 2>/dev/null | col -bx |
               awk '/^SYNOPSIS/ { on = 1; next } /^[A-Z]/ { on = 0 } on' | norm)
    if [[ " $synopsis " == *" $decl "* ]]; then
      pass "$name: the synopsis is the header's declaration"
    else
      fail "$name: the synopsis is not the header's declaration
         header:   $decl
         synopsis: $synopsis"
    fi
  done < <(declarations)
  if [ ${#names[@]} -eq 0 ]; then
    [ "$n" -gt 20 ] && pass "$n declarations read from ${headers[*]}" ||
      fail "only $n declarations read from ${headers[*]}"
    for page in turnstate.7 turnstate-plugins.7; do
      [ -f "$dir/man7/$page" ] && pass "man7/$page" || fail "no page man7/$page"
    done
  fi
  for page in "$dir"/man3/*.3 "$dir"/man7/*.7; do
    [ -f "$page" ] || continue
    base=$(basename "$page"); base=${base%.*}
    wanted "$base" || continue
    warnings=$( { LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" >/dev/null; } 2>&1
                groff -man -ww -z "$page" 2>&1)
    if [ -z "$warnings" ]; then
      pass "${page#"$dir"/}: renders without a warning"
    else
      fail "${page#"$dir"/}: warnings:
$(sed 's/^/         /' <<<"$warnings")"
    fi
    whatis=$(lexgrog "$page" 2>&1)
    if [[ $whatis == *": \"$base"*" - "* ]]; then
      pass "${page#"$dir"/}: lexgrog reads its NAME line"
    else
      fail "${page#"$dir"/}: lexgrog: $whatis"
    fi
  done
}

if [ "$only" = 1 ]; then
  check_pages "$mandir"
  echo "man: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi

echo "== the pages of $mandir"
check_pages "$mandir"

# 4. The check fails when it should: pages made into a temporary folder pass,
# then each altered copy fails, naming the fault. These runs (--only, for the
# pages altered and one other) print their own lines: read here, not counted.
echo "== the check itself, on pages generated into a temporary folder"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/turnstate-man.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pages=(ts_store_dispatch ts_store_get_state ts_free ts_store_create)
generate() { rm -rf "$tmp/gen" && python3 docs/man/genman.py --out "$tmp/gen" "${headers[@]}" >/dev/null; }
expect_fail() { # WHAT PATTERN: check.sh --only on $tmp/gen fails, with a line matching PATTERN
  local out status
  out=$("$0" --only "$tmp/gen" "${pages[@]}" 2>&1)
  status=$?
  if [ "$status" -ne 0 ] && grep -qE "$2" <<<"$out" && [ "$(grep -c 'FAIL' <<<"$out")" = 1 ]; then
    pass "$1: the check fails: $(grep -E "$2" <<<"$out" | head -n1 | sed 's/^ *//')"
  else
    fail "$1: the check did not fail with '$2' alone (status $status)"
    grep -E 'FAIL|man:' <<<"$out" | head -n 20 | sed 's/^/    | /'
  fi
}
if generate && "$0" --only "$tmp/gen" "${pages[@]}" >"$tmp/baseline.log" 2>&1; then
  pass "${pages[*]} generated into a temporary folder pass ($(tail -n1 "$tmp/baseline.log"))"
else
  fail "${pages[*]} generated into a temporary folder do not pass:"
  grep -E 'FAIL|man:' "$tmp/baseline.log" | head -n 20 | sed 's/^/    | /'
fi
generate && rm "$tmp/gen/man3/ts_store_dispatch.3"
expect_fail "man3/ts_store_dispatch.3 deleted" 'FAIL ts_store_dispatch: no page man3/ts_store_dispatch.3'
generate && sed -i '/^\.SH SYNOPSIS/,/^\.SH/ s/char \*\*/char */' "$tmp/gen/man3/ts_store_get_state.3"
expect_fail "the synopsis of ts_store_get_state changed (char ** made char *)" \
  'FAIL ts_store_get_state: the synopsis is not the header'
generate && sed -i 's/^\.SH DESCRIPTION$/.SH DESCRIPTION\n.XY an undefined macro/' "$tmp/gen/man3/ts_free.3"
expect_fail "a roff error in man3/ts_free.3 (an undefined macro)" 'FAIL man3/ts_free.3: warnings'

echo "man: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
