"""Turnstate for Python: a predictable state container (a Redux-style store).

    from turnstate import Store

    with Store(initial={"todos": []}) as store:
        @store.reducer("todos")
        def todos(state, action):
            if action.type == "todos/add":
                return state + [{"title": action.payload["title"], "done": False}]
            return None                      # unchanged

        store.dispatch("todos/add", {"title": "write docs"})
        print(store.get("/todos/0/title"))   # write docs

The store is libturnstate (the C library), called through this package's
compiled extension (turnstate._ext); values cross as JSON (orjson), and
reducers get their slice read-only, kept between dispatches. The library is
found through TURNSTATE_LIB, then the copy bundled in this package (a wheel
built from the repository), then the system's libturnstate.so.0. See the
Store class, and the "Python" section of the repository's README.
"""

from ._capi import library_path, library_source
from ._errors import (ABIError, ArgumentError, IOFailedError, JSONError, MisuseError, NoMemoryError, NotActionError,
                      NotFoundError, PluginError, ReducerError, ReentrantError, RejectedError, Status,
                      StoreGoneError, TurnstateError, UnknownActionError)
from ._store import JSON_NULL, Action, FrozenDict, FrozenList, Next, Patch, Store, Subscription, plugins_dir, pointer
from ._version import __version__

__all__ = [
    "Store", "Action", "Next", "Patch", "FrozenDict", "FrozenList", "Subscription", "JSON_NULL", "pointer",
    "plugins_dir",
    "library_path", "library_source", "library_version", "Status",
    "TurnstateError", "ArgumentError", "JSONError", "NotActionError", "ReducerError", "ReentrantError",
    "PluginError", "IOFailedError", "NoMemoryError", "NotFoundError", "RejectedError", "StoreGoneError",
    "ABIError", "UnknownActionError", "MisuseError", "__version__",
]


def library_version() -> str:
    """The version of the loaded libturnstate ("0.2.0")."""
    from ._capi import load_library
    return str(load_library().version_string())
