"""Shared fixtures. The suite runs against whatever `import turnstate` loads
(TURNSTATE_LIB, the bundled copy, or the system's library); tests that need
the shipped plugins skip when turnstate.plugins_dir() is None, unless
TURNSTATE_REQUIRE_PLUGINS=1 (as `make test-python-package` sets)."""
import os

import pytest

import turnstate


@pytest.fixture
def store():
    with turnstate.Store() as s:
        yield s


@pytest.fixture
def counter(store):
    """A store with a "count" slice: counter/add adds the payload (default 1)."""
    @store.reducer("count", initial=0)
    def count(state, action):
        if action.type == "counter/add":
            return state + (action.payload if action.has_payload else 1)
        return None
    return store


@pytest.fixture
def plugins():
    folder = turnstate.plugins_dir()
    if folder is None:
        if os.environ.get("TURNSTATE_REQUIRE_PLUGINS") == "1":
            pytest.fail("turnstate.plugins_dir() is None: the shipped plugins are missing (library at %s)"
                        % turnstate.library_path())
        pytest.skip("no shipped plugins beside the library")
    return folder
