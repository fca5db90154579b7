"""Store, Action and Subscription: the Pythonic face of the C API."""

import atexit
import ctypes
import json
import json.scanner
import os
import reprlib
import sys
import threading
import weakref
from ctypes import byref, c_char_p, c_uint64, c_void_p
from decimal import Decimal
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, TypeVar, Union, overload

from . import _capi
from ._errors import ArgumentError, NoMemoryError, NotFoundError, StoreGoneError, TurnstateError, error_for

__all__ = ["Store", "Action", "Subscription", "Next", "JSON_NULL", "pointer", "plugins_dir"]

#: A JSON value as Python holds it: dict, list, str, int, float, bool or None,
#: and decimal.Decimal for a number a float or an int cannot take (1e400).
JSON = Any
F = TypeVar("F", bound=Callable[..., Any])


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


class _JsonNull:
    """The JSON value null, for a reducer to return (returning None means "unchanged")."""
    __slots__ = ()

    def __repr__(self) -> str:
        return "turnstate.JSON_NULL"

    def __reduce__(self) -> str:
        return "JSON_NULL"


#: Return this from a reducer to set its slice to JSON null (None means "unchanged").
JSON_NULL = _JsonNull()

# ---- JSON in and out -------------------------------------------------------------
# The library's text is strict, minified JSON, so the C scanner reads it
# directly (no white space to skip, nothing after the value); small integers,
# the most common slices and payloads, take a shorter path still.
#
# The library keeps a number's text as given, so it may hold numbers a float
# or an int cannot take: 1e400 (a float says inf), 1e-400 (a float says 0.0),
# an integer of more digits than int() reads from text (4300 by default,
# sys.set_int_max_str_digits). Those are read as decimal.Decimal, exactly,
# and a Decimal is written as its exact text, so what was read can be
# written back. A float costs one Python call more when read; an int none
# (the limit raises, and only then is the text read again).


def _float(text: str) -> Any:
    """A JSON number with a fraction or an exponent: the float, unless the
    float is not the number (inf for 1e400, 0.0 for 1e-400): then a Decimal."""
    value = float(text)
    if value - value or not value:  # inf (inf - inf is nan, which is true), or zero
        exact = Decimal(text)
        if exact != value:
            return exact
    return value


def _int(text: str) -> Any:
    """A JSON integer: the int, or a Decimal when it has more digits than
    int() reads from text."""
    try:
        return int(text)
    except ValueError:
        return Decimal(text)


_scan = json.scanner.make_scanner(json.JSONDecoder(parse_float=_float))  # type: ignore[arg-type] # the C class
_scan_long = json.scanner.make_scanner(json.JSONDecoder(parse_float=_float, parse_int=_int))  # type: ignore[arg-type]


class _HasDecimal(Exception):
    """Raised by the encoder's default: the value holds a Decimal, which the
    json module cannot write as a number; _encode_exact writes it."""


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        raise _HasDecimal()
    raise TypeError("Object of type %s is not JSON serializable" % type(value).__name__)


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_default).encode


def _encode_exact(value: Any, containers: Dict[int, Any]) -> str:
    """JSON text of a value that holds a Decimal (somewhere): as _encode,
    with each Decimal written as its exact number."""
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError("Out of range float values are not JSON compliant: Decimal(%r)" % str(value))
        return str(value)  # 1E+400, 19.99, -0: always a JSON number
    if isinstance(value, (dict, list, tuple)):
        if id(value) in containers:
            raise ValueError("Circular reference detected")
        containers[id(value)] = value
        if isinstance(value, dict):
            # Each key as json.dumps writes it ("3" for 3; TypeError for a tuple).
            text = "{%s}" % ",".join(_encode({key: 0})[1:-3] + ":" + _encode_exact(item, containers)
                                     for key, item in value.items())
        else:
            text = "[%s]" % ",".join(_encode_exact(item, containers) for item in value)
        del containers[id(value)]
        return text
    return str(_encode(value))


def loads(data: bytes) -> JSON:
    """Python value of JSON text that the library produced (minified, valid)."""
    try:
        if data.isdigit():
            return int(data)
        return _scan(data.decode("utf-8"), 0)[0]
    except ValueError:  # an integer longer than int() reads (the text is valid JSON)
        return _scan_long(data.decode("utf-8"), 0)[0]


def dumps(value: JSON) -> bytes:
    """UTF-8 JSON text of a Python value (minified; NaN and infinities refused)."""
    cls = value.__class__
    if cls is int:
        return b"%d" % value
    if value is JSON_NULL:
        return b"null"
    try:
        return _encode(value).encode("utf-8")
    except _HasDecimal:
        return _encode_exact(value, {}).encode("utf-8")


_heads: Dict[str, bytes] = {}


def _head(action_type: str) -> bytes:
    """b'{"type":"<action_type>"' (cached per type)."""
    head = _heads.get(action_type)
    if head is None:
        if len(_heads) >= 4096:
            _heads.clear()
        head = _heads[action_type] = b'{"type":' + dumps(action_type)
    return head


def _action_text(action: Any, payload: Any) -> bytes:
    """The JSON text of an action given as dispatch() takes it."""
    if action.__class__ is str:
        if payload is _MISSING:
            return _head(action) + b"}"
        return _head(action) + b',"payload":' + dumps(payload) + b"}"
    if payload is not _MISSING:
        raise TypeError("a payload goes with an action type (a str), not with %s" % type(action).__name__)
    if isinstance(action, Action):
        return action.json_text
    if isinstance(action, Mapping):
        return dumps(action if isinstance(action, dict) else dict(action))
    raise TypeError("an action is a type (str) with an optional payload, a mapping {'type': ..., "
                    "'payload': ...}, or an Action; got %s" % type(action).__name__)


# ---- Errors raised inside callbacks --------------------------------------------------
# An exception cannot cross the C boundary. A callback records it on its
# thread, numbered from one counter for the process; a call into the store
# (dispatch, reducer(), next() ...) notes the counter before it calls the
# library, and only when it changed looks for what was recorded on its
# thread since then, takes it and raises it. So the common case costs two
# reads of a list, and nested calls (a listener that dispatches) take only
# their own exceptions, leaving an outer call's for it.

_seq = [0]


class _ThreadState(threading.local):
    errors: Optional[List[Tuple[int, BaseException]]] = None


_tls = _ThreadState()


def _record(error: BaseException, where: str) -> None:
    """Records an exception raised in a callback (the caller of this
    function) for the call into the store that ran it. When no Python code
    waits for it - the callback runs on a library thread (the delay plugin's
    worker) and was not reached through a Python call into a store on it -
    it is reported through sys.unraisablehook instead."""
    # The callback's caller: a Python call into the store (dispatch...) on
    # this thread, or nothing when C called it with no Python frame below
    # (a library thread: the delay plugin's worker).
    if sys._getframe(1).f_back is None:
        hook = getattr(sys, "unraisablehook", None)
        if hook is not None:
            class _Unraisable:
                exc_type = type(error)
                exc_value = error
                exc_traceback = error.__traceback__
                err_msg = "Exception ignored in a turnstate %s called on a library thread" % where
                object = None
            hook(_Unraisable)  # the hook reads these attributes only
        return
    _seq[0] = seq = _seq[0] + 1
    errors = _tls.errors
    if errors is None:
        errors = _tls.errors = []
    errors.append((seq, error))


def _take(since: int) -> Optional[BaseException]:
    """The first exception recorded on this thread after ``since`` (removing
    every one recorded since then), or None."""
    errors = _tls.errors
    if not errors:
        return None
    mine = [error for seq, error in errors if seq > since]
    if mine:
        errors[:] = [(seq, error) for seq, error in errors if seq <= since]
        return mine[0]
    return None


def _failure_reason(error: BaseException) -> bytes:
    """What a reducer gives ts_reducer_fail for an exception: "ValueError: bad"."""
    try:
        detail = str(error)
    except BaseException:  # noqa: BLE001 - a broken __str__ must not lose the failure
        detail = "(its str() failed)"
    text = "%s: %s" % (type(error).__name__, detail) if detail else type(error).__name__
    return text.encode("utf-8", "backslashreplace")


def _last_error(lib: Any) -> str:
    return str(lib.ts_last_error().decode("utf-8", "replace"))


def _raise(lib: Any, status: int, error: Optional[BaseException], what: str) -> None:
    """Raises (if anything failed) for a finished call: the callback's own
    exception if one was raised (with the library's account of the failure
    added as a note, once), else the TurnstateError of the status."""
    if error is None and not status:
        return  # what was recorded during the call was taken by a call inside it
    if error is not None:
        if (status and hasattr(error, "add_note") and not isinstance(error, TurnstateError)
                and not any(str(note).startswith("turnstate: ") for note in getattr(error, "__notes__", ()))):
            error.add_note("turnstate: %s failed with %s: %s"
                           % (what, lib.ts_status_name(status).decode("ascii"), _last_error(lib)))
        raise error
    raise error_for(status, _last_error(lib))


# ---- Actions -------------------------------------------------------------------------

_type_names: Dict[bytes, str] = {}


def _type_name(data: bytes) -> str:
    name = _type_names.get(data)
    if name is None:
        if len(_type_names) >= 4096:
            _type_names.clear()
        name = _type_names[data] = data.decode("utf-8")
    return name


class Action:
    """An action as reducers and middleware receive it.

    ``type`` is the action's type (str), ``payload`` its payload as a Python
    value (None when it has none, see ``has_payload``), ``data`` the whole
    action as a dict (other keys included) and ``json_text`` its JSON text.
    Everything is copied: an Action may be kept and dispatched again later.
    """

    __slots__ = ("type", "_payload_text", "_payload", "json_text", "_address")

    def __init__(self, type: str, payload_text: Optional[bytes], json_text: bytes,
                 address: Optional[int] = None) -> None:
        self.type = type
        self._payload_text = payload_text
        self._payload: Any = _MISSING
        self.json_text = json_text
        # The address of the library's own text, while a middleware runs:
        # passing it on to next() costs no new parse.
        self._address = address

    @classmethod
    def _from_struct(cls, action: Any, with_address: bool = False) -> "Action":
        address = ctypes.c_void_p.from_address(ctypes.addressof(action) + 16).value if with_address else None
        return cls(_type_name(action.type), action.payload, action.json, address)

    @property
    def payload(self) -> JSON:
        """The payload as a Python value (parsed once, on first use); None when there is none."""
        payload = self._payload
        if payload is _MISSING:
            text = self._payload_text
            payload = self._payload = None if text is None else loads(text)
        return payload

    @property
    def has_payload(self) -> bool:
        """Whether the action has a "payload" member (null counts)."""
        return self._payload_text is not None

    @property
    def data(self) -> Dict[str, JSON]:
        """The whole action as a new dict."""
        value: Dict[str, JSON] = loads(self.json_text)
        return value

    def __repr__(self) -> str:
        return "Action(%s)" % self.json_text.decode("utf-8", "replace")


_INIT_ACTION = Action("@@turnstate/init", None, b'{"type":"@@turnstate/init"}')

# ---- Subscriptions ---------------------------------------------------------------------


class Subscription:
    """A listener's subscription. ``unsubscribe()`` ends it (idempotent); as a
    context manager it ends when the ``with`` block does."""

    __slots__ = ("_store", "token", "__weakref__")

    def __init__(self, store: "Store", token: int) -> None:
        self._store: Optional[Store] = store
        #: The library's token for this subscription (never reused).
        self.token = token

    @property
    def active(self) -> bool:
        """True until unsubscribe() (or the store closed)."""
        return self._store is not None and not self._store.closed

    def unsubscribe(self) -> None:
        """Ends the subscription; does nothing if it already ended or the store is closed."""
        store, self._store = self._store, None
        if store is not None and not store.closed:
            store._unsubscribe(self.token)

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unsubscribe()

    def __repr__(self) -> str:
        return "<turnstate.Subscription %d%s>" % (self.token, "" if self.active else " (ended)")


# ---- Middleware -----------------------------------------------------------------------------


class Next:
    """The ``next`` a Python middleware receives: ``next(action)`` passes an
    action on to the rest of the chain and the reducers. ``action`` is the
    Action it received (no new parse), or a new one in any form dispatch()
    takes (``next("todos/add", {"title": "x"})``). It raises what the rest
    of the dispatch raised (a reducer's exception, a RejectedError...). Call
    it at most once, during the middleware's call; not calling it swallows the
    action.
    """

    __slots__ = ("_fn", "_action", "_lib", "status", "error")

    def __init__(self, lib: Any, fn: Any, action: Action) -> None:
        self._lib = lib
        self._fn = fn
        self._action = action
        #: The status of the call to next (None until called).
        self.status: Optional[int] = None
        #: The exception next() raised, if any.
        self.error: Optional[BaseException] = None

    def __call__(self, action: Any = None, payload: Any = _MISSING) -> None:
        if action is None or (action is self._action and payload is _MISSING):
            original = self._action
            text: Any = c_char_p(original._address) if original._address else original.json_text
        else:
            text = _action_text(action, payload)
        since = _seq[0]
        status = self._fn(text)
        self.status = status
        if status:
            try:
                _raise(self._lib, status, _take(since), "next")
            except BaseException as raised:
                self.error = raised
                raise
        # A listener that raised (the action was applied) stays recorded: the
        # dispatch reports it.


# ---- Plugins ----------------------------------------------------------------------------------


def plugins_dir() -> Optional[str]:
    """The folder of the shipped plugins (guard, delay, journal, logger,
    replicate) that belong to the loaded library: LIBDIR/turnstate/plugins
    beside it (the installed layout, and the layout of a wheel that bundles
    the library), or None when there is no such folder. The inspector, a
    development tool, is not shipped, so it is not there."""
    library = os.path.realpath(_capi.library_path())
    folder = os.path.join(os.path.dirname(library), "turnstate", "plugins")
    return folder if os.path.isdir(folder) else None


def pointer(*tokens: Union[str, int]) -> str:
    """A JSON Pointer (RFC 6901) of the tokens, escaped: pointer("todos", 0) is "/todos/0"."""
    return "".join("/" + str(token).replace("~", "~0").replace("/", "~1") for token in tokens)


def _path(text: Optional[str]) -> Optional[bytes]:
    return None if text is None else os.fsencode(text)


def _text(value: Optional[str]) -> Optional[bytes]:
    return None if value is None else value.encode("utf-8")


def _require_callable(fn: Any, what: str, role: str) -> None:
    """Refuses, before anything changes, a callback that is not callable:
    ArgumentError (TS_E_ARGUMENT, as the C API answers a NULL function).
    Taken, it would fail only later, in every dispatch, after the state
    changed (a listener) or refusing every action (a reducer, a middleware)."""
    if not callable(fn):
        raise ArgumentError("%s: the %s must be callable; got %s (%s)"
                            % (what, role, reprlib.repr(fn), type(fn).__name__))


# ---- Stores -----------------------------------------------------------------------------------

_live_stores: "weakref.WeakSet[Store]" = weakref.WeakSet()


@atexit.register
def _close_live_stores() -> None:
    # Plugins' threads (the delay worker) must stop before the interpreter
    # goes away, or their callbacks would run without one.
    for store in list(_live_stores):
        store.close()


Reducer = Callable[[Any, Action], Any]
Listener = Callable[["Store"], Any]
Middleware = Callable[["Store", Next, Action], Any]


class Store:
    """A Turnstate store: one state (a dict), changed only by dispatching actions.

    >>> store = Store(initial={"todos": []})
    >>> @store.reducer("todos")
    ... def todos(state, action):
    ...     if action.type == "todos/add":
    ...         return state + [{"title": action.payload["title"], "done": False}]
    ...     return None                     # None: unchanged
    >>> store.dispatch("todos/add", {"title": "write docs"})
    >>> store.get("/todos/0/title")
    'write docs'

    Values cross as JSON: dicts, lists, str, int, float, bool and None; a
    number a float or an int cannot take from text (1e400, 1e-400, an
    integer longer than sys.get_int_max_str_digits(), 4300 by default) is
    read as a decimal.Decimal, exactly, and a Decimal is written as its exact
    number.
    Any thread may use a store; calls are serialized by the library, and
    callbacks (reducers, listeners, middleware) run on the dispatching thread
    under the GIL, also when that thread is one of the library's own (the
    delay plugin's worker). An exception raised in a callback comes out of the
    call that caused it (dispatch, reducer(), ...), as itself.
    Close the store with close() or a ``with`` block; close() from another
    thread while a thread is still calling into the store is not allowed (as
    ts_store_destroy in C): stop those threads first.
    """

    def __init__(self, initial: Optional[Mapping[str, JSON]] = None) -> None:
        lib = _capi.load_library()
        self._lib = lib
        self._keepalive: List[Any] = []
        handle = c_void_p()
        if initial is not None and not isinstance(initial, dict) and isinstance(initial, Mapping):
            initial = dict(initial)
        text = None if initial is None else dumps(initial)
        status = lib.ts_store_create(text, byref(handle))
        if status:
            raise error_for(status, _last_error(lib))
        self._handle: Optional[int] = handle.value
        self._dispatch_fn = lib.ts_store_dispatch
        _live_stores.add(self)

    # ---- lifetime ----

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._handle is None

    def close(self) -> None:
        """Destroys the store (idempotent): dispatches under way finish, plugins
        are destroyed (their threads joined), every later call raises
        StoreGoneError. From inside one of the store's own callbacks, the
        dispatch under way still finishes."""
        handle, self._handle = self._handle, None
        if handle is not None:
            _live_stores.discard(self)
            self._lib.ts_store_destroy(handle)
        # The callbacks stay referenced by this object: a store closed from
        # inside a callback lives until the outermost call into it returns.

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _live_handle(self) -> int:
        handle = self._handle
        if handle is None:
            raise StoreGoneError("the store is closed")
        return handle

    def _call(self, function: Any, *args: Any, what: str) -> None:
        """Calls a C function that may run callbacks; raises what failed."""
        since = _seq[0]
        status = function(*args)
        if status or _seq[0] != since:
            _raise(self._lib, status, _take(since), what)

    # ---- dispatching ----

    @overload
    def dispatch(self, action: str, payload: JSON = ...) -> None: ...
    @overload
    def dispatch(self, action: Union[Mapping[str, JSON], Action]) -> None: ...

    def dispatch(self, action: Any, payload: Any = _MISSING) -> None:
        """Dispatches an action through the middleware to the reducers, then
        calls the listeners.

        ``dispatch("todos/add", {"title": "x"})`` (type and optional payload),
        ``dispatch({"type": "todos/add", "payload": {...}})`` or
        ``dispatch(action)`` with an Action received earlier.
        Atomic: when a reducer or middleware fails, the state is as it was.
        Raises the exception a reducer, middleware or listener raised, as
        itself (a listener runs after the state changed, so that change
        stays); else the TurnstateError of the status (RejectedError,
        NotActionError...).
        """
        if action.__class__ is str:
            head = _heads.get(action) or _head(action)
            if payload is _MISSING:
                text = head + b"}"
            elif payload.__class__ is int:
                text = b'%s,"payload":%d}' % (head, payload)
            else:
                text = head + b',"payload":' + dumps(payload) + b"}"
        else:
            text = _action_text(action, payload)
        handle = self._handle
        if handle is None:
            raise StoreGoneError("the store is closed")
        since = _seq[0]
        status = self._dispatch_fn(handle, text)
        if status or _seq[0] != since:
            _raise(self._lib, status, _take(since), "dispatch")

    def dispatch_json(self, text: Union[str, bytes]) -> None:
        """Dispatches an action given as JSON text ('{"type": "x"}'); as dispatch()."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        self._call(self._dispatch_fn, self._live_handle(), data, what="dispatch")

    # ---- reading ----

    def get_json(self, path: str = "") -> str:
        """The JSON text (minified) of the value at the JSON Pointer ``path``
        ("" is the whole state). Raises NotFoundError when there is none."""
        return self._get_text(path).decode("utf-8")

    def _get_text(self, path: Optional[str]) -> bytes:
        lib = self._lib
        out = c_void_p()
        status = lib.ts_store_get_state(self._live_handle(), _text(path), byref(out))
        if status:
            raise error_for(status, _last_error(lib))
        try:
            return ctypes.string_at(out.value or 0)
        finally:
            lib.ts_free(out)

    def get(self, path: str = "", default: Any = _MISSING) -> JSON:
        """The value at the JSON Pointer ``path`` ("/todos/0/title"; "" is the
        whole state), as a new Python value. When there is no value there:
        ``default`` if given, else NotFoundError."""
        try:
            return loads(self._get_text(path))
        except TurnstateError as error:
            if default is _MISSING or error.status != _capi.TS_E_NOT_FOUND:
                raise
            return default

    @property
    def state(self) -> Dict[str, JSON]:
        """The whole state, as a new dict (a snapshot: later dispatches do not change it)."""
        value: Dict[str, JSON] = loads(self._get_text(None))
        return value

    # ---- reducers ----

    @overload
    def reducer(self, key: str, *, initial: JSON = ...) -> Callable[[F], F]: ...
    @overload
    def reducer(self, key: str, fn: F, *, initial: JSON = ...) -> F: ...

    def reducer(self, key: str, fn: Any = _MISSING, *, initial: Any = _MISSING) -> Any:
        """Adds the reducer that owns the top-level key ``key``; a decorator
        (``@store.reducer("todos")``) or a call (``store.reducer("todos", fn)``).

        ``fn(state, action)`` gets its slice as a Python value and the Action,
        and returns the new slice, or None for "unchanged" (JSON_NULL sets it
        to null). It must be pure: calling back into the store raises
        ReentrantError. An exception it raises fails the dispatch (state
        unchanged) and comes out of dispatch() as itself.
        When the state has no ``key`` yet, its first value is ``initial`` if
        given, else ``fn(None, action)`` with the action "@@turnstate/init".
        Reducers run in the order they were added.
        ArgumentError if ``fn`` is not callable (None included), with
        nothing added.
        """
        if fn is _MISSING:
            def decorate(function: F) -> F:
                self.reducer(key, function, initial=initial)
                return function
            return decorate
        self._add_reducer(key, fn, initial)
        return fn

    def _add_reducer(self, key: str, fn: Callable[..., Any], initial: Any) -> None:
        _require_callable(fn, "reducer()", "reducer, fn(state, action),")
        callback = self._reducer_callback(key, fn, initial)
        self._call(self._lib.ts_store_add_reducer, self._live_handle(), key.encode("utf-8"),
                   ctypes.cast(callback, c_void_p), None, what="reducer()")

    def replace_reducer(self, key: str, fn: Callable[..., Any], *, initial: Any = _MISSING) -> None:
        """Replaces the reducer that owns ``key`` with ``fn`` (hot reload),
        keeping the state, then dispatches ``{"type": "@@turnstate/replace"}``
        through the middleware to every reducer (the new one included) and
        the listeners, as Redux's replaceReducer does. One step, atomic: if
        that action is refused or a reducer fails on it, the old reducer is
        put back and the error raised. NotFoundError if ``key`` has no
        reducer (add it with reducer()), ArgumentError if ``fn`` is not
        callable (the old reducer stays). ``initial`` is used only if the
        state has no ``key``."""
        _require_callable(fn, "replace_reducer()", "reducer, fn(state, action),")
        callback = self._reducer_callback(key, fn, initial)
        self._call(self._lib.ts_store_replace_reducer, self._live_handle(), key.encode("utf-8"),
                   ctypes.cast(callback, c_void_p), None, what="replace_reducer()")

    def remove_reducer(self, key: str) -> None:
        """Removes the reducer that owns ``key``; its slice stays in the state,
        unchanged from then on. Then dispatches ``{"type":
        "@@turnstate/replace"}`` to the remaining reducers, as
        replace_reducer() does (atomic). NotFoundError if ``key`` has no
        reducer."""
        self._call(self._lib.ts_store_remove_reducer, self._live_handle(), key.encode("utf-8"),
                   what="remove_reducer()")

    def _reducer_callback(self, key: str, fn: Callable[..., Any], initial: Any) -> Any:
        lib = self._lib
        strdup = lib.ts_strdup
        fail = lib.ts_reducer_fail
        from_address = _capi.TsAction.from_address
        new_action = Action
        type_names = _type_names
        initial_text = None if initial is _MISSING else dumps(initial)

        def trampoline(slice_text: Optional[bytes], action: Any, _ctx: Any) -> Optional[int]:
            try:
                if slice_text is None:
                    if initial_text is not None:
                        data = initial_text
                    else:
                        result = fn(None, _INIT_ACTION)
                        if result is None:
                            raise ValueError("the reducer for %r returned None for its first value "
                                             "(return the value, or pass initial=)" % key)
                        data = dumps(result)
                else:
                    view = from_address(action)
                    type_text = view.type
                    try:
                        state = int(slice_text) if slice_text.isdigit() else loads(slice_text)
                    except ValueError:  # more digits than int() reads from text: a Decimal
                        state = loads(slice_text)
                    result = fn(state,
                                new_action(type_names.get(type_text) or _type_name(type_text), view.payload,
                                           view.json))
                    if result is None:
                        return None
                    data = b"%d" % result if result.__class__ is int else dumps(result)
                address: Optional[int] = strdup(data)
                if not address:
                    raise NoMemoryError("no memory for the reducer's result (%d bytes)" % (len(data) + 1))
                return address
            except BaseException as error:  # noqa: BLE001 - nothing may cross into C
                _record(error, "reducer")
                fail(_failure_reason(error))
                return None

        # The action arrives as an address (cheaper than a ctypes pointer object).
        callback = _capi.REDUCER_FN_ADDRESS(trampoline)
        # Kept for the store's life: a replaced reducer's callback may still
        # be on the stack of a dispatch under way on another thread.
        self._keepalive.append(callback)
        return callback

    # ---- listeners ----

    def subscribe(self, fn: Listener, path: Optional[str] = None) -> Subscription:
        """Calls ``fn(store)`` after each dispatch that reached the reducers;
        with ``path`` (a JSON Pointer, "" for the whole state), only when the
        value there changed. Returns the Subscription (``unsubscribe()``, or
        use it in a ``with`` block). Listeners run in the order they
        subscribed, after the state changed; they may dispatch. An exception
        a listener raises comes out of the dispatch() that called it (the
        other listeners still run). ArgumentError if ``fn`` is not callable."""
        _require_callable(fn, "subscribe()", "listener, fn(store),")

        def trampoline(_store: Any, _ctx: Any) -> None:
            try:
                fn(self)
            except BaseException as error:  # noqa: BLE001
                _record(error, "listener")

        callback = _capi.LISTENER_FN(trampoline)
        self._keepalive.append(callback)
        token = c_uint64()
        self._call(self._lib.ts_store_subscribe, self._live_handle(), _text(path), callback, None, byref(token),
                   what="subscribe")
        return Subscription(self, token.value)

    def _unsubscribe(self, token: int) -> None:
        self._call(self._lib.ts_store_unsubscribe, self._live_handle(), token, what="unsubscribe")

    # ---- middleware ----

    def add_middleware(self, fn: Middleware, name: Optional[str] = None) -> Middleware:
        """Appends ``fn(store, next, action)`` to the middleware chain (the
        first added runs first). It calls ``next(action)`` to pass the action
        on (or a new action), or does not, to swallow it; it may dispatch.
        To refuse the action raise a TurnstateError (RejectedError("why")):
        the dispatch then fails with its status and message. Any other
        exception refuses the action too, and comes out of dispatch() as
        itself. Returns ``fn``; ``@store.middleware`` is the decorator form.
        ArgumentError if ``fn`` is not callable."""
        _require_callable(fn, "add_middleware()", "middleware, fn(store, next, action),")
        lib = self._lib
        label = name or getattr(fn, "__qualname__", None) or "python-middleware"

        def trampoline(api: Any, next_fn: Any, action_ptr: Any, _ctx: Any) -> int:
            nxt: Optional[Next] = None
            try:
                action = Action._from_struct(action_ptr.contents, with_address=True)
                nxt = Next(lib, next_fn, action)
                fn(self, nxt, action)
                return _capi.TS_OK
            except BaseException as error:  # noqa: BLE001
                _record(error, "middleware")
                if nxt is not None and nxt.error is error and nxt.status:
                    status, message = nxt.status, _message_of(error)
                elif isinstance(error, TurnstateError):
                    status, message = int(error.status), str(error.message)
                else:
                    status = _capi.TS_E_REJECTED
                    message = "the Python middleware %s raised %s" % (label, _failure_reason(error).decode())
                if status >= 0:
                    status = _capi.TS_E_REJECTED
                try:
                    return int(api.contents.fail(status, str(message).encode("utf-8", "backslashreplace")))
                except BaseException:  # noqa: BLE001 - never TS_OK for a middleware that raised
                    return status

        callback = _capi.MIDDLEWARE_FN(trampoline)
        self._keepalive.append(callback)
        self._call(lib.ts_store_add_middleware, self._live_handle(), label.encode("utf-8"), callback, None,
                   what="add_middleware")
        return fn

    def remove_middleware(self, name: str) -> None:
        """Removes the middleware added last with add_middleware() under
        ``name`` (its ``name=``, else the function's ``__qualname__``).
        Dispatches already under way finish with it. NotFoundError if no
        middleware has that name (plugins are not removed this way)."""
        self._call(self._lib.ts_store_remove_middleware, self._live_handle(), name.encode("utf-8"),
                   what="remove_middleware()")

    def middleware(self, fn: F) -> F:
        """Decorator form of add_middleware()."""
        self.add_middleware(fn)
        return fn

    # ---- plugins ----

    def load_plugin(self, path: str, config: Optional[Mapping[str, JSON]] = None) -> None:
        """Loads a middleware plugin (a .so written against turnstate_plugin.h)
        and appends it to the chain. ``path`` is a file, or the bare name of a
        shipped plugin ("guard", "delay", "journal", "logger", "replicate")
        looked up in plugins_dir(); a bare name that is not there raises
        NotFoundError (the inspector is not shipped: load it by its path).
        ``config`` is its configuration (a dict; None is {}). The file and
        its folders must be trusted (see turnstate.h)."""
        if os.sep not in path and not path.endswith(".so"):
            folder = plugins_dir()
            if folder is not None:
                name, path = path, os.path.join(folder, path + ".so")
                if not os.path.isfile(path):
                    shipped = sorted(entry[:-3] for entry in os.listdir(folder) if entry.endswith(".so"))
                    raise NotFoundError(
                        "load_plugin(): no shipped plugin is named %r (%s holds %s); a plugin that is not "
                        "shipped (the inspector, a development tool, is not) is loaded by its path: "
                        "load_plugin(\"/path/to/%s.so\")" % (name, folder, ", ".join(shipped) or "none", name))
        text = None if config is None else dumps(config)
        self._call(self._lib.ts_store_load_plugin, self._live_handle(), _path(path), text, what="load_plugin")

    def load_plugins(self, folder: str) -> None:
        """Loads every *.so plugin of ``folder`` in name order, each with the
        configuration in NAME.json beside it; all or nothing."""
        self._call(self._lib.ts_store_load_plugins, self._live_handle(), _path(folder), what="load_plugins")

    def __repr__(self) -> str:
        return "<turnstate.Store%s>" % (" closed" if self.closed else "")


def _message_of(error: BaseException) -> str:
    if isinstance(error, TurnstateError):
        return error.message
    return _failure_reason(error).decode("utf-8", "replace")
