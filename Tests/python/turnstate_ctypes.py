"""turnstate_ctypes - a small ctypes binding of the Turnstate C API.

Standard library only. `lib` is the library with the argtypes/restype of
every function of Include/turnstate.h, declared below. This module adds a
thin, JSON-text `Store` for testing the C API itself (the package's
turnstate.Store is the Pythonic one):

    from turnstate_ctypes import Store

    def counter(slice_json, action):
        if slice_json is None:                      # the init call
            return "0"
        if action.type == "counter/add":
            return str(int(slice_json) + int(action.payload))
        return None                                 # unchanged

    with Store('{"title": "demo"}') as store:
        store.add_reducer("counter", counter)
        store.dispatch('{"type": "counter/add", "payload": 2}')
        print(store.get_state("/counter"))          # 2

Rules that the binding takes care of (and that you must follow if you use
`lib` directly):
- A reducer returns NULL or text that the store takes over and frees: memory
  from ts_alloc / ts_strdup (or the C library's malloc). `alloc_text` copies
  Python text into ts_alloc'ed memory, so nothing here binds libc.
- Text returned through `char **` is library memory: declare the out value as
  c_void_p, read it with ctypes.string_at, then ts_free it (`take_text`).
- Every CFUNCTYPE object handed to the library must stay alive as long as the
  store may call it: `Store` keeps them until it is destroyed.
- An exception raised inside a callback cannot cross the C boundary. `Store`
  records it and re-raises it from the call that caused it (a reducer that
  raised calls ts_reducer_fail with "ExceptionType: message", so the dispatch
  fails with TS_E_REDUCER, state unchanged, and ts_last_error() - the
  TurnstateError's message - gives the reason).
"""

import ctypes
import os
import re
import sys
import threading
from ctypes import byref, c_uint64, c_void_p

# The declarations of turnstate.h: the types, the callback types, and the
# argtypes and restype of every function, for ctypes. (The Python package,
# bindings/python, calls the library through its compiled extension.)
from ctypes import CFUNCTYPE, POINTER, Structure, c_char_p, c_int, c_int32, c_size_t, c_uint32

def _package_codes():
    """The status codes and TS_MAX_DEPTH as the Python package lists them
    (bindings/python/src/turnstate/_capi.py, loaded by its path: importing
    the package would need its compiled extension)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python", "src",
                        "turnstate", "_capi.py")
    spec = importlib.util.spec_from_file_location("_turnstate_capi_codes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: value for name, value in vars(module).items() if name.startswith("TS_")}


globals().update(_package_codes())

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

def declare(lib):
    """Declares the argtypes and restype of every function of turnstate.h on
    the ctypes library ``lib`` and returns it."""
    for name, (restype, argtypes) in SIGNATURES.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


def _find_library():
    path = os.environ.get("TURNSTATE_LIB")
    if path:
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "build", "lib", "libturnstate.so")


lib = declare(ctypes.CDLL(_find_library()))


def alloc_text(text):
    """Copies `text` (str or bytes) into ts_alloc'ed memory, NUL-terminated.
    Returns the address (an int) for a reducer to return; the store frees it
    (or free it with lib.ts_free)."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    address = lib.ts_alloc(len(data) + 1)
    if not address:
        raise MemoryError(lib.ts_last_error().decode("utf-8"))
    ctypes.memmove(address, data, len(data))
    ctypes.memset(address + len(data), 0, 1)
    return address



def reducer_failure(error):
    """The reason a reducer gives ts_reducer_fail for a Python exception:
    "ValueError: bad reducer" (UTF-8; the library keeps its first 1,024 bytes)."""
    text = "%s: %s" % (type(error).__name__, error) if str(error) else type(error).__name__
    return text.encode("utf-8", "backslashreplace")


def take_text(address):
    """Reads library-owned text at `address` (c_void_p or int), frees it with
    ts_free and returns it as str. None for NULL."""
    address = getattr(address, "value", address)
    if not address:
        return None
    try:
        return ctypes.string_at(address).decode("utf-8")
    finally:
        lib.ts_free(address)


def _b(text):
    if text is None or isinstance(text, bytes):
        return text
    return text.encode("utf-8")


def _s(data):
    return None if data is None else data.decode("utf-8")


def status_name(status):
    return lib.ts_status_name(status).decode("ascii")


def last_error():
    return lib.ts_last_error().decode("utf-8")


def version():
    return lib.ts_version_string().decode("ascii")


def header_version(header_path=None):
    """The TS_VERSION_* of Include/turnstate.h as (major, minor, patch)."""
    if header_path is None:
        header_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Include", "turnstate.h")
    with open(header_path, encoding="utf-8") as header:
        text = header.read()
    return tuple(int(re.search(r"#define TS_VERSION_%s (\d+)" % part, text).group(1))
                 for part in ("MAJOR", "MINOR", "PATCH"))


class Action:
    """A Python copy of a ts_action: type, payload (JSON text or None), json."""
    __slots__ = ("type", "payload", "json")

    def __init__(self, pointer):
        action = pointer.contents
        self.type = _s(action.type)
        self.payload = _s(action.payload)
        self.json = _s(action.json)

    def __repr__(self):
        return "Action(%r)" % self.json


class TurnstateError(Exception):
    """A failed call: .status (int), .name ("TS_E_JSON"), .message (ts_last_error)."""

    def __init__(self, status, message):
        self.status = status
        self.name = status_name(status)
        self.message = message
        super().__init__("%s: %s" % (self.name, message))


def check(status):
    """Raises TurnstateError for a failed status, with ts_last_error of this thread."""
    if status != TS_OK:
        raise TurnstateError(status, last_error())
    return status


class Store:
    """A Turnstate store. Use it as a context manager (or call destroy()).

    Callbacks are plain Python functions:
      reducer(slice_json: str | None, action: Action) -> str | bytes | None
      listener(store: Store) -> None
      middleware(api: POINTER(TsStoreApi), next: NEXT_FN, action: POINTER(TsAction)) -> int
    The middleware gets the raw C view, as a C middleware would: call
    next(b"...") / api.contents.dispatch(b"...") / api.contents.fail(status, b"...").
    """

    def __init__(self, initial_state=None):
        handle = c_void_p()
        check(lib.ts_store_create(_b(initial_state), byref(handle)))
        self.handle = handle
        self._keepalive = []            # every CFUNCTYPE object given to the store
        self._errors = threading.local()

    # -- lifetime --

    def destroy(self):
        """Destroys the store (idempotent). The callbacks stay referenced by this
        object, not freed here: destroyed from inside one of its own callbacks,
        the store lives on until the outermost call into it returns and may
        still call the rest of its listeners."""
        if self.handle:
            lib.ts_store_destroy(self.handle)
            self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False

    # -- errors raised inside callbacks --

    def _record(self, error):
        if getattr(self._errors, "first", None) is None:
            self._errors.first = error

    def _take_callback_error(self):
        error = getattr(self._errors, "first", None)
        self._errors.first = None
        return error

    def _call(self, status):
        callback_error = self._take_callback_error()
        if status != TS_OK:
            error = TurnstateError(status, last_error())
            if callback_error is not None:
                raise error from callback_error
            raise error
        if callback_error is not None:
            raise callback_error

    # -- API --

    def add_reducer(self, key, fn):
        def trampoline(slice_json, action, _ctx):
            try:
                result = fn(_s(slice_json), Action(action))
                return None if result is None else alloc_text(result)
            except BaseException as error:  # noqa: BLE001 - must not cross into C
                self._record(error)
                # The dispatch fails with TS_E_REDUCER, the state stays as it
                # was, and ts_last_error() gives the exception.
                lib.ts_reducer_fail(reducer_failure(error))
                return None
        callback = REDUCER_FN(trampoline)
        self._keepalive.append(callback)
        self._call(lib.ts_store_add_reducer(self.handle, _b(key), callback, None))

    def dispatch(self, action_json):
        self._call(lib.ts_store_dispatch(self.handle, _b(action_json)))

    def get_state(self, json_pointer=None):
        out = c_void_p()
        self._call(lib.ts_store_get_state(self.handle, _b(json_pointer), byref(out)))
        return take_text(out)

    def subscribe(self, json_pointer, fn):
        """Calls fn(store) after changes (json_pointer None: after every dispatch).
        Returns the token for unsubscribe()."""
        def trampoline(_store, _ctx):
            try:
                fn(self)
            except BaseException as error:  # noqa: BLE001
                self._record(error)
        callback = LISTENER_FN(trampoline)
        self._keepalive.append(callback)
        token = c_uint64()
        self._call(lib.ts_store_subscribe(self.handle, _b(json_pointer), callback, None, byref(token)))
        return token.value

    def unsubscribe(self, token):
        self._call(lib.ts_store_unsubscribe(self.handle, token))

    def add_middleware(self, name, fn):
        def trampoline(api, next_fn, action, _ctx):
            try:
                return fn(api, next_fn, action)
            except BaseException as error:  # noqa: BLE001
                self._record(error)
                return api.contents.fail(TS_E_REJECTED, _b("Python middleware raised %r" % error))
        callback = MIDDLEWARE_FN(trampoline)
        self._keepalive.append(callback)
        self._call(lib.ts_store_add_middleware(self.handle, _b(name), callback, None))

    def load_plugin(self, path, config_json=None):
        self._call(lib.ts_store_load_plugin(self.handle, _b(path), _b(config_json)))

    def load_plugins(self, directory):
        self._call(lib.ts_store_load_plugins(self.handle, _b(directory)))
