"""Where libturnstate comes from, and the status codes of Include/turnstate.h.

The package calls the C API through its compiled extension, turnstate._ext,
which opens the library with dlopen (no link-time dependency, no ctypes).
This module chooses the file, once per process (:func:`load_library`).
"""

import os
import threading
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

#: The oldest library this binding works with (it needs ts_alloc, ts_strdup
#: and ts_reducer_fail, new in 0.2), as ts_version_number() counts. The
#: functions of 0.3 (ts_reducer_slice_id, ts_reducer_answer_id,
#: ts_reducer_patch, ts_store_add_reducer_for) are used when the library has
#: them; without them reducers parse their slice on every call, and Patch
#: answers and on= raise RuntimeError.
MIN_VERSION = 200
#: The SONAME of the library this binding speaks to.
SONAME = "libturnstate.so.0"


def bundled_library() -> Path:
    """Where a wheel built from the repository keeps its copy of the library."""
    return Path(__file__).resolve().parent / "_lib" / SONAME


class _Loaded:
    ext: Any = None
    path: Optional[str] = None
    how: Optional[str] = None


_loaded = _Loaded()
_lock = threading.Lock()


def load_library() -> Any:
    """Loads libturnstate (once per process) and returns the extension module
    that calls it (turnstate._ext).

    Looks in this order:
    1. ``TURNSTATE_LIB``: the path of a library file;
    2. the copy bundled in this package (a wheel built from the repository);
    3. the system: ``libturnstate.so.0`` as the dynamic loader finds it
       (installed by ``make install`` or the Debian package; LD_LIBRARY_PATH).
    Raises OSError naming what was tried when none loads, or when the library
    is older than this binding needs.
    """
    if _loaded.ext is not None:
        return _loaded.ext
    with _lock:
        if _loaded.ext is not None:
            return _loaded.ext
        from . import _ext
        tried = []
        path: Optional[str] = None
        how: Optional[str] = None
        env = os.environ.get("TURNSTATE_LIB")
        if env:
            try:
                path, how = _ext.load(env) or os.path.abspath(env), "TURNSTATE_LIB"
            except OSError as error:
                raise OSError("turnstate: cannot load TURNSTATE_LIB=%s: %s" % (env, error)) from error
        else:
            bundled = bundled_library()
            if bundled.is_file():
                try:
                    path, how = _ext.load(str(bundled)) or str(bundled), "bundled"
                except OSError as error:
                    tried.append("%s (bundled): %s" % (bundled, error))
            if how is None:
                try:
                    path, how = _ext.load(SONAME) or SONAME, "system"
                except OSError as error:
                    tried.append("%s (system): %s" % (SONAME, error))
        if how is None:
            raise OSError("turnstate: cannot find libturnstate. Tried: %s. Install the library (make install, "
                          "or the Debian package), install a wheel that bundles it, or set TURNSTATE_LIB to "
                          "its path." % "; ".join(tried))
        number = _ext.version_number()
        if number < MIN_VERSION or number // 10000 != MIN_VERSION // 10000:
            raise OSError("turnstate: %s is version %d.%d.%d; this binding needs 0.%d or later with SONAME %s"
                          % (path, number // 10000, number // 100 % 100, number % 100, MIN_VERSION // 100 % 100,
                             SONAME))
        _loaded.path, _loaded.how = path, how
        _loaded.ext = _ext
        return _ext


def library_path() -> str:
    """The file of the loaded library (loads it if needed)."""
    load_library()
    return str(_loaded.path)


def library_source() -> str:
    """How the library was found: ``"TURNSTATE_LIB"``, ``"bundled"`` or ``"system"``."""
    load_library()
    return str(_loaded.how)
