"""The package itself: where the library comes from, versions, typing."""
import os
import re
import subprocess
import sys

import pytest

import turnstate


def run(code, **env):
    environment = dict(os.environ)
    environment.pop("TURNSTATE_LIB", None)
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=60)


def test_versions_agree():
    assert turnstate.library_version() == turnstate.__version__
    repo = os.environ.get("TURNSTATE_REPO")
    if repo:
        header = open(os.path.join(repo, "Include", "turnstate.h"), encoding="utf-8").read()
        parts = [re.search(r"#define TS_VERSION_%s (\d+)" % p, header).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
        assert turnstate.__version__ == ".".join(parts)


def test_turnstate_lib_comes_first():
    path = os.path.realpath(turnstate.library_path())
    result = run("import turnstate; turnstate.Store().close(); "
                 "print(turnstate.library_source(), turnstate.library_path())", TURNSTATE_LIB=path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["TURNSTATE_LIB", path]


def test_a_bad_turnstate_lib_says_so():
    result = run("import turnstate; turnstate.Store()", TURNSTATE_LIB="/nonexistent/libturnstate.so.0")
    assert result.returncode != 0
    assert "TURNSTATE_LIB=/nonexistent/libturnstate.so.0" in result.stderr


def test_expected_source():
    """The runner says where the library must come from (bundled: a wheel
    built from the repository; system: the installed library)."""
    expected = os.environ.get("TURNSTATE_EXPECT_SOURCE")
    if not expected:
        pytest.skip("TURNSTATE_EXPECT_SOURCE not set")
    result = run("import turnstate; print(turnstate.library_source(), turnstate.library_path())")
    assert result.returncode == 0, result.stderr
    source, path = result.stdout.split()
    assert source == expected
    if expected == "bundled":
        assert path.startswith(os.path.dirname(turnstate.__file__))


def test_typed_package():
    assert os.path.isfile(os.path.join(os.path.dirname(turnstate.__file__), "py.typed"))
    assert turnstate.Store.dispatch.__doc__ and turnstate.Store.reducer.__doc__
