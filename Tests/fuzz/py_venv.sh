#!/usr/bin/env bash
# Tests/fuzz/py_venv.sh VENV [--atheris]
#
# The venv of the Python harness (fuzz_store_patch.py), made on first use:
# jsonpatch (the independent implementation), orjson and hatchling from PyPI,
# and the package of bindings/python installed without a library of its own
# (TURNSTATE_BUNDLE=0: run.sh points TURNSTATE_LIB at build/lib), installed
# again whenever bindings/python changed (a hash of its files, in
# VENV/.turnstate-source). --atheris: atheris too (PyPI), for `make fuzz`; the
# replay and the seeded run do not need it.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=$1
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
if ! "$venv/bin/python" -c 'import jsonpatch, orjson, hatchling' 2>/dev/null; then
  echo "py_venv.sh: $venv (jsonpatch, orjson, hatchling from PyPI)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'jsonpatch==1.48' 'orjson>=3.9' 'hatchling>=1.21' ||
    { echo "py_venv.sh: could not install jsonpatch, orjson and hatchling into $venv" >&2; exit 1; }
fi
if [ "${2:-}" = --atheris ] && ! "$venv/bin/python" -c 'import atheris' 2>/dev/null; then
  "$venv/bin/pip" install -q atheris ||
    { echo "py_venv.sh: could not install atheris (PyPI) into $venv: make fuzz needs it for fuzz_store_patch" >&2; exit 1; }
fi
source=$(find bindings/python/src bindings/python/pyproject.toml bindings/python/hatch_build.py -type f \
           ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
if [ "$(cat "$venv/.turnstate-source" 2>/dev/null)" != "$source" ]; then
  echo "py_venv.sh: pip install bindings/python into $venv (TURNSTATE_BUNDLE=0)"
  TURNSTATE_BUNDLE=0 "$venv/bin/pip" install -q --no-deps --no-build-isolation --force-reinstall ./bindings/python ||
    { echo "py_venv.sh: pip install ./bindings/python failed" >&2; exit 1; }
  echo "$source" >"$venv/.turnstate-source"
fi
