"""The C API of Turnstate (Include/turnstate.h) through ctypes, and where the
library comes from.

This is the low-level layer under :class:`turnstate.Store`: the types and
function signatures of turnstate.h, one to one, and :func:`library`, which
loads libturnstate once per process. The repository's C-API tests
(Tests/python) use these declarations too, so there is one binding.

Rules for using it directly (the Store class follows them):
- A reducer returns NULL or text the store takes over and frees: memory from
  ts_alloc/ts_strdup (never Python's or ctypes' buffers).
- Text returned through ``char **`` is library memory: the out value is a
  c_void_p; read it with ctypes.string_at, then ts_free it.
- Every CFUNCTYPE object handed to the library must stay alive for as long as
  the store may call it.
"""

import ctypes
import os
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_int, c_int32, c_size_t, c_uint32, c_uint64,
                    c_void_p)
from pathlib import Path
from typing import Any, Optional

# ---- Status codes -------------------------------------------------------------

TS_OK = 0
TS_E_ARGUMENT = -1
TS_E_JSON = -2
TS_E_NOT_ACTION = -3
TS_E_REDUCER = -4
TS_E_REENTRANT = -5
TS_E_PLUGIN = -6
TS_E_IO = -7
TS_E_NOMEM = -8
TS_E_NOT_FOUND = -9
TS_E_REJECTED = -10
TS_E_STORE_GONE = -11
TS_E_ABI = -12
TS_E_UNKNOWN_ACTION = -13
TS_E_MISUSE = -14

TS_MAX_DEPTH = 256

ts_status = c_int32

# ---- Types --------------------------------------------------------------------


class TsAction(Structure):
    """struct ts_action: the parsed view of an action (valid during a callback)."""
    _fields_ = [("type", c_char_p), ("payload", c_char_p), ("json", c_char_p)]


#: ts_status (*ts_next_fn)(const char *action_json)
NEXT_FN = CFUNCTYPE(ts_status, c_char_p)


class TsStoreApi(Structure):
    """struct ts_store_api: the store as middleware sees it."""
    _fields_ = [
        ("struct_size", c_uint32),
        ("dispatch", CFUNCTYPE(ts_status, c_char_p)),
        ("get_state", CFUNCTYPE(ts_status, c_char_p, POINTER(c_void_p))),
        ("free", CFUNCTYPE(None, c_void_p)),
        ("fail", CFUNCTYPE(ts_status, ts_status, c_char_p)),
        ("replace_state", CFUNCTYPE(ts_status, c_char_p)),
        ("status_name", CFUNCTYPE(c_char_p, ts_status)),
        # Since 0.2.0 (check struct_size): the reducers and listeners, no middleware.
        ("apply", CFUNCTYPE(ts_status, c_char_p)),
        # Since 0.2.0, after apply: fn(ctx) with the store held.
        ("exclusive", CFUNCTYPE(ts_status, CFUNCTYPE(ts_status, c_void_p), c_void_p)),
        # Since 0.2.0, after exclusive: from a plugin's place in the chain (plugins' own tables only).
        ("dispatch_after", CFUNCTYPE(ts_status, c_char_p)),
    ]


#: char *(*ts_reducer_fn)(const char *slice_json, const ts_action *action, void *ctx).
#: The result is c_void_p: memory from ts_alloc/ts_strdup that the store takes over.
REDUCER_FN = CFUNCTYPE(c_void_p, c_char_p, POINTER(TsAction), c_void_p)
#: The same, with the action as a plain address (cheaper to receive; read it
#: with TsAction.from_address when needed).
REDUCER_FN_ADDRESS = CFUNCTYPE(c_void_p, c_char_p, c_void_p, c_void_p)
#: void (*ts_listener_fn)(ts_store *store, void *ctx)
LISTENER_FN = CFUNCTYPE(None, c_void_p, c_void_p)
#: ts_status (*ts_middleware_fn)(const ts_store_api *, ts_next_fn, const ts_action *, void *ctx)
MIDDLEWARE_FN = CFUNCTYPE(ts_status, POINTER(TsStoreApi), NEXT_FN, POINTER(TsAction), c_void_p)

SIGNATURES = {
    "ts_version_number": (c_int, []),
    "ts_version_string": (c_char_p, []),
    "ts_status_name": (c_char_p, [ts_status]),
    "ts_last_error": (c_char_p, []),
    # Results are c_void_p (not c_char_p): the memory is handed on or freed.
    "ts_alloc": (c_void_p, [c_size_t]),
    "ts_strdup": (c_void_p, [c_char_p]),
    "ts_free": (None, [c_void_p]),
    "ts_reducer_fail": (ts_status, [c_char_p]),
    "ts_store_create": (ts_status, [c_char_p, POINTER(c_void_p)]),
    "ts_store_destroy": (None, [c_void_p]),
    # The reducer is c_void_p so that REDUCER_FN and REDUCER_FN_ADDRESS both fit.
    "ts_store_add_reducer": (ts_status, [c_void_p, c_char_p, c_void_p, c_void_p]),
    "ts_store_replace_reducer": (ts_status, [c_void_p, c_char_p, c_void_p, c_void_p]),
    "ts_store_remove_reducer": (ts_status, [c_void_p, c_char_p]),
    "ts_store_dispatch": (ts_status, [c_void_p, c_char_p]),
    # out_json is a char **: c_void_p so that the text is not copied and lost.
    "ts_store_get_state": (ts_status, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "ts_store_subscribe": (ts_status, [c_void_p, c_char_p, LISTENER_FN, c_void_p, POINTER(c_uint64)]),
    "ts_store_unsubscribe": (ts_status, [c_void_p, c_uint64]),
    "ts_store_add_middleware": (ts_status, [c_void_p, c_char_p, MIDDLEWARE_FN, c_void_p]),
    "ts_store_remove_middleware": (ts_status, [c_void_p, c_char_p]),
    "ts_store_load_plugin": (ts_status, [c_void_p, c_char_p, c_char_p]),
    "ts_store_load_plugins": (ts_status, [c_void_p, c_char_p]),
}

#: The oldest library this binding works with (it needs ts_alloc, ts_strdup
#: and ts_reducer_fail, new in 0.2), as ts_version_number() counts.
MIN_VERSION = 200
#: The SONAME of the library this binding speaks to.
SONAME = "libturnstate.so.0"


def declare(lib: Any) -> Any:
    """Declares the argtypes and restype of every function of turnstate.h on
    the ctypes library ``lib`` and returns it."""
    for name, (restype, argtypes) in SIGNATURES.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


def bundled_library() -> Path:
    """Where a wheel built from the repository keeps its copy of the library."""
    return Path(__file__).resolve().parent / "_lib" / SONAME


def _mapped_path(name: str) -> Optional[str]:
    """The path of the mapped shared object whose file name starts with
    ``name``, from /proc/self/maps (Linux), or None."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6 and os.path.basename(parts[5].strip()).startswith(name):
                    return parts[5].strip()
    except OSError:
        pass
    return None


class _Loaded:
    lib: Any = None
    path: Optional[str] = None
    how: Optional[str] = None


_loaded = _Loaded()
_lock = threading.Lock()


def _open(path: str) -> Any:
    # CDLL, not PyDLL: every call releases the GIL, so that the library's own
    # threads (the delay plugin's worker) can run Python callbacks meanwhile.
    return ctypes.CDLL(path)


def load_library() -> Any:
    """Loads libturnstate (once per process) and returns the declared library.

    Looks in this order:
    1. ``TURNSTATE_LIB``: the path of a library file;
    2. the copy bundled in this package (a wheel built from the repository);
    3. the system: ``libturnstate.so.0`` as the dynamic loader finds it
       (installed by ``make install`` or the Debian package; LD_LIBRARY_PATH).
    Raises OSError naming what was tried when none loads, or when the library
    is older than this binding needs.
    """
    if _loaded.lib is not None:
        return _loaded.lib
    with _lock:
        if _loaded.lib is not None:
            return _loaded.lib
        tried = []
        lib = None
        env = os.environ.get("TURNSTATE_LIB")
        if env:
            try:
                lib, path, how = _open(env), os.path.abspath(env), "TURNSTATE_LIB"
            except OSError as error:
                raise OSError("turnstate: cannot load TURNSTATE_LIB=%s: %s" % (env, error)) from error
        else:
            bundled = bundled_library()
            if bundled.is_file():
                try:
                    lib, path, how = _open(str(bundled)), str(bundled), "bundled"
                except OSError as error:
                    tried.append("%s (bundled): %s" % (bundled, error))
            if lib is None:
                try:
                    lib, how = _open(SONAME), "system"
                    path = _mapped_path("libturnstate.so") or SONAME
                except OSError as error:
                    tried.append("%s (system): %s" % (SONAME, error))
        if lib is None:
            raise OSError("turnstate: cannot find libturnstate. Tried: %s. Install the library (make install, "
                          "or the Debian package), install a wheel that bundles it, or set TURNSTATE_LIB to "
                          "its path." % "; ".join(tried))
        try:
            lib.ts_version_number.restype = c_int
            lib.ts_version_number.argtypes = []
            number = lib.ts_version_number()
        except AttributeError as error:
            raise OSError("turnstate: %s is not libturnstate (%s)" % (path, error)) from error
        if number < MIN_VERSION or number // 10000 != MIN_VERSION // 10000:
            raise OSError("turnstate: %s is version %d.%d.%d; this binding needs 0.%d or later with SONAME %s"
                          % (path, number // 10000, number // 100 % 100, number % 100, MIN_VERSION // 100 % 100,
                             SONAME))
        declare(lib)
        _loaded.path, _loaded.how = path, how
        _loaded.lib = lib
        return lib


def library_path() -> str:
    """The file of the loaded library (loads it if needed)."""
    load_library()
    return str(_loaded.path)


def library_source() -> str:
    """How the library was found: ``"TURNSTATE_LIB"``, ``"bundled"`` or ``"system"``."""
    load_library()
    return str(_loaded.how)
