"""Store, Action and Subscription: the Pythonic face of the C API."""

import atexit
import json
import json.scanner
import os
import reprlib
import sys
import threading
import weakref
from decimal import Decimal
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union, overload

from . import _capi, _ext
from ._errors import ArgumentError, NotFoundError, StoreGoneError, TurnstateError, error_for
from ._ext import Action, FrozenDict, FrozenList

__all__ = ["Store", "Action", "Subscription", "Next", "Patch", "FrozenDict", "FrozenList", "JSON_NULL", "pointer",
           "plugins_dir"]

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
# The extension reads and writes JSON through orjson (see _ext.c: parse and
# dumps); the stdlib json module, below, is its fallback for what orjson
# would not read or write exactly.
#
# The library keeps a number's text as given, so it may hold numbers a float
# or an int cannot take: 1e400 (a float says inf), 1e-400 (a float says 0.0),
# an integer of more digits than int() reads from text (4300 by default,
# sys.set_int_max_str_digits). Those are read as decimal.Decimal, exactly,
# and a Decimal is written as its exact text, so what was read can be
# written back. orjson reads integers beyond 64 bits as floats and 1e-400 as
# 0.0, so text with an integer of 19 digits or more, or an exponent of three
# digits or more, is read by the stdlib scanner below instead.


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


def _loads_exact(data: bytes) -> JSON:
    """The stdlib scanner's reading of JSON text the library produced, with
    the exact rules for numbers."""
    try:
        if data.isdigit():
            return int(data)
        return _scan(data.decode("utf-8"), 0)[0]
    except ValueError:  # an integer longer than int() reads (the text is valid JSON)
        return _scan_long(data.decode("utf-8"), 0)[0]


def _dumps_std(value: JSON) -> bytes:
    """The stdlib encoder's text of a value (NaN and infinities refused)."""
    if value is JSON_NULL:
        return b"null"
    try:
        return _encode(value).encode("utf-8")
    except _HasDecimal:
        return _encode_exact(value, {}).encode("utf-8")


def loads(data: bytes) -> JSON:
    """Python value (new, mutable) of JSON text that the library produced (minified, valid)."""
    return _ext.loads(data)


def dumps(value: JSON) -> bytes:
    """UTF-8 JSON text of a Python value (minified; NaN and infinities refused)."""
    return _ext.dumps(value)


def _action_text(action: Any, payload: Any) -> bytes:
    """The JSON text of an action given as dispatch() takes it, other than a
    type (str) with a payload (the extension writes those)."""
    if payload is ...:
        payload = _MISSING
    if isinstance(action, str):
        head = b'{"type":' + dumps(action)
        return head + b"}" if payload is _MISSING else head + b',"payload":' + dumps(payload) + b"}"
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
# thread, numbered from one counter for the process (kept by the extension:
# _ext.seq()); a call into the store (dispatch, reducer(), next() ...) notes
# the counter before it calls the library, and only when it changed looks
# for what was recorded on its thread since then, takes it and raises it. So
# the common case costs one comparison, and nested calls (a listener that
# dispatches) take only their own exceptions, leaving an outer call's for it.


class _ThreadState(threading.local):
    errors: Optional[List[Tuple[int, BaseException]]] = None


_tls = _ThreadState()


def _record(error: BaseException, where: str, nested: bool) -> None:
    """Records an exception raised in a callback for the call into the store
    that ran it. When no Python code waits for it (``nested`` is false: the
    callback runs on a library thread, such as the delay plugin's worker, and
    was not reached through a Python call into a store on it) it is reported
    through sys.unraisablehook instead."""
    if not nested:
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
    seq = _ext.next_seq()
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


def _raise(status: int, error: Optional[BaseException], what: str) -> None:
    """Raises (if anything failed) for a finished call: the callback's own
    exception if one was raised (with the library's account of the failure
    added as a note, once), else the TurnstateError of the status."""
    if error is None and not status:
        return  # what was recorded during the call was taken by a call inside it
    if error is not None:
        if (status and hasattr(error, "add_note") and not isinstance(error, TurnstateError)
                and not any(str(note).startswith("turnstate: ") for note in getattr(error, "__notes__", ()))):
            error.add_note("turnstate: %s failed with %s: %s"
                           % (what, _ext.status_name(status), _ext.last_error()))
        raise error
    raise error_for(status, _ext.last_error())


def _raise_for(status: int, since: int, what: str) -> None:
    """The extension's call when a call failed or a callback raised."""
    _raise(status, _take(since), what)


def _gone() -> None:
    raise StoreGoneError("the store is closed")


# ---- Patches -------------------------------------------------------------------------


class Patch:
    """A reducer's answer as an RFC 6902 JSON Patch relative to its slice,
    instead of the whole new slice::

        return turnstate.Patch([{"op": "replace", "path": "/3/done", "value": True}])

    ``ops`` is a list of operations (mappings: "op", "path", and "value" or
    "from"): add, remove, replace, move, copy and test, with JSON Pointers
    relative to the slice ("" is the slice itself). The store applies them
    all or none; one that fails (a path that names nothing, a "test" that
    does not hold) fails the dispatch with ReducerError naming the operation
    and its path, and nothing changes. The store checks the operations, not
    this class: it only copies them (each a dict). Needs libturnstate 0.3
    (ts_reducer_patch); with an older library returning a Patch fails the
    dispatch with RuntimeError.
    """

    __slots__ = ("ops",)

    def __init__(self, ops: Iterable[Mapping[str, JSON]]) -> None:
        # The usual answer, a list of dicts, without the isinstance checks
        # against the Mapping ABC (microseconds per operation).
        if type(ops) is list:
            fast: List[Dict[str, JSON]] = []
            for op in ops:
                if type(op) is not dict:
                    break
                fast.append(op.copy())
            else:
                self.ops = fast
                return
        if isinstance(ops, (str, bytes, Mapping)):
            raise TypeError("Patch(ops): a list of operations (mappings), not a %s" % type(ops).__name__)
        copied: List[Dict[str, JSON]] = []
        for index, op in enumerate(ops):
            if not isinstance(op, Mapping):
                raise TypeError("Patch(ops): operation %d is a %s, not a mapping {\"op\": ..., \"path\": ...}"
                                % (index, type(op).__name__))
            copied.append(dict(op))
        self.ops = copied

    def __repr__(self) -> str:
        return "Patch(%r)" % (self.ops,)


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
            store._core.unsubscribe(self.token)

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

    __slots__ = ("_fn", "_action", "status", "error")

    def __init__(self, fn: Any, action: Action) -> None:
        self._fn = fn
        self._action = action
        #: The status of the call to next (None until called).
        self.status: Optional[int] = None
        #: The exception next() raised, if any.
        self.error: Optional[BaseException] = None

    def __call__(self, action: Any = None, payload: Any = _MISSING) -> None:
        if action is None or (action is self._action and payload is _MISSING):
            original = self._action
            text: Optional[bytes] = None if original._address else original.json_text
        else:
            text = _action_text(action, payload)
        since = _ext.seq()
        status = self._fn.call(text)
        self.status = status
        if status:
            try:
                _raise(status, _take(since), "next")
            except BaseException as raised:
                self.error = raised
                raise
        # A listener that raised (the action was applied) stays recorded: the
        # dispatch reports it.


def _middleware_run(fn: Any, store: "Store", next_fn: Any, action: Action, label: str,
                    nested: bool) -> Optional[Tuple[int, bytes]]:
    """Runs a Python middleware for the extension: None when it returned, or
    the (status, message) to refuse the action with."""
    nxt = Next(next_fn, action)
    try:
        fn(store, nxt, action)
        return None
    except BaseException as error:  # noqa: BLE001
        _record(error, "middleware", nested)
        if nxt.error is error and nxt.status:
            status, message = nxt.status, _message_of(error)
        elif isinstance(error, TurnstateError):
            status, message = int(error.status), str(error.message)
        else:
            status = _capi.TS_E_REJECTED
            message = "the Python middleware %s raised %s" % (label, _failure_reason(error).decode())
        if status >= 0:
            status = _capi.TS_E_REJECTED
        return status, str(message).encode("utf-8", "backslashreplace")


_ext.configure(raise_for=_raise_for, record=_record, failure_reason=_failure_reason, loads_exact=_loads_exact,
               dumps_std=_dumps_std, action_text=_action_text, middleware_run=_middleware_run, json_null=JSON_NULL,
               patch_type=Patch, gone=_gone)


# ---- Plugins ----------------------------------------------------------------------------------


def plugins_dir() -> Optional[str]:
    """The folder of the shipped plugins (guard, delay, journal, undo, logger,
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
    number. Reducers get their slice and the action's payload read-only
    (FrozenDict, FrozenList: see reducer()); get() and state give new,
    mutable values.
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
        ext = _capi.load_library()
        self._keepalive: List[Any] = []
        self._reducers: Dict[str, Any] = {}
        if initial is not None and not isinstance(initial, dict) and isinstance(initial, Mapping):
            initial = dict(initial)
        self._core = ext.Core(None if initial is None else dumps(initial))
        if type(self).dispatch is Store.dispatch:
            # The extension's dispatch, without this class's Python frame.
            self.dispatch = self._core.dispatch  # type: ignore[method-assign]
        _live_stores.add(self)

    # ---- lifetime ----

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return bool(self._core.closed)

    def close(self) -> None:
        """Destroys the store (idempotent): dispatches under way finish, plugins
        are destroyed (their threads joined), every later call raises
        StoreGoneError. From inside one of the store's own callbacks, the
        dispatch under way still finishes."""
        core = self.__dict__.get("_core")
        if core is not None and not core.closed:
            _live_stores.discard(self)
            core.close()
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
        if payload is _MISSING:
            self._core.dispatch(action)
        else:
            self._core.dispatch(action, payload)

    def dispatch_json(self, text: Union[str, bytes]) -> None:
        """Dispatches an action given as JSON text ('{"type": "x"}'); as dispatch()."""
        self._core.dispatch_json(text.encode("utf-8") if isinstance(text, str) else bytes(text))

    # ---- reading ----

    def get_json(self, path: str = "") -> str:
        """The JSON text (minified) of the value at the JSON Pointer ``path``
        ("" is the whole state). Raises NotFoundError when there is none."""
        return str(self._core.get_text(path).decode("utf-8"))

    def get(self, path: str = "", default: Any = _MISSING) -> JSON:
        """The value at the JSON Pointer ``path`` ("/todos/0/title"; "" is the
        whole state), as a new Python value. When there is no value there:
        ``default`` if given, else NotFoundError."""
        try:
            return self._core.get(path)
        except TurnstateError as error:
            if default is _MISSING or error.status != _capi.TS_E_NOT_FOUND:
                raise
            return default

    @property
    def state(self) -> Dict[str, JSON]:
        """The whole state, as a new dict (a snapshot: later dispatches do not change it)."""
        value: Dict[str, JSON] = self._core.get(None)
        return value

    # ---- reducers ----

    @overload
    def reducer(self, key: str, *, initial: JSON = ..., on: Optional[Sequence[str]] = ...) -> Callable[[F], F]: ...
    @overload
    def reducer(self, key: str, fn: F, *, initial: JSON = ..., on: Optional[Sequence[str]] = ...) -> F: ...

    def reducer(self, key: str, fn: Any = _MISSING, *, initial: Any = _MISSING,
                on: Optional[Sequence[str]] = None) -> Any:
        """Adds the reducer that owns the top-level key ``key``; a decorator
        (``@store.reducer("todos")``) or a call (``store.reducer("todos", fn)``).

        ``fn(state, action)`` gets its slice as a read-only Python value
        (FrozenDict for an object, FrozenList for an array; None for null)
        and the Action (its payload read-only too), and returns the new
        slice, a Patch (the change, as an RFC 6902 JSON Patch), or None for
        "unchanged" (returning ``state`` itself means unchanged too;
        JSON_NULL sets the slice to null). Read-only values refuse changes
        with TypeError: build new ones (``{**state, "k": v}``, ``state +
        [item]``) or copy (``copy.deepcopy(state)`` gives plain dicts and
        lists). What it returns becomes the store's: its dicts and lists are
        made read-only in place, to be handed back, unparsed, on the next
        call. It must be pure: calling back into the store raises
        ReentrantError. An exception it raises fails the dispatch (state
        unchanged) and comes out of dispatch() as itself.
        ``on``: the action types it handles (``["todos/add", "todos/*"]``:
        exact types, and prefixes ending in "/*"); it is then called only for
        those, and for the store's own "@@turnstate/..." actions. None (the
        default): every action. Needs libturnstate 0.3
        (ts_store_add_reducer_for; RuntimeError with an older one);
        ArgumentError for a malformed pattern, with nothing added.
        When the state has no ``key`` yet, its first value is ``initial`` if
        given, else ``fn(None, action)`` with the action "@@turnstate/init".
        Reducers run in the order they were added.
        ArgumentError if ``fn`` is not callable (None included), with
        nothing added.
        """
        if fn is _MISSING:
            def decorate(function: F) -> F:
                self.reducer(key, function, initial=initial, on=on)
                return function
            return decorate
        self._set_reducer(key, fn, initial, on, False, "reducer()")
        return fn

    def _set_reducer(self, key: str, fn: Callable[..., Any], initial: Any, on: Optional[Sequence[str]],
                     replace: bool, what: str) -> None:
        _require_callable(fn, what, "reducer, fn(state, action),")
        if isinstance(on, (str, bytes)):
            raise TypeError("%s: on= is a list of action types, not a %s (on=[%r])" % (what, type(on).__name__, on))
        types = None if on is None else list(on)
        initial_text = None if initial is _MISSING else dumps(initial)
        status, since, ctx = self._core.add_reducer(key, fn, initial_text, types, replace)
        # Kept for the store's life: a replaced reducer may still be on the
        # stack of a dispatch under way on another thread.
        self._keepalive.append(ctx)
        if status == 0:
            old = self._reducers.get(key)
            self._reducers[key] = ctx
            if old is not None and replace:
                old.forget()  # not called again: its kept value can go
        if status or _ext.seq() != since:
            _raise(status, _take(since), what)

    def replace_reducer(self, key: str, fn: Callable[..., Any], *, initial: Any = _MISSING,
                        on: Optional[Sequence[str]] = None) -> None:
        """Replaces the reducer that owns ``key`` with ``fn`` (hot reload),
        keeping the state, then dispatches ``{"type": "@@turnstate/replace"}``
        through the middleware to every reducer (the new one included) and
        the listeners, as Redux's replaceReducer does. One step, atomic: if
        that action is refused or a reducer fails on it, the old reducer is
        put back and the error raised. NotFoundError if ``key`` has no
        reducer (add it with reducer()), ArgumentError if ``fn`` is not
        callable (the old reducer stays). ``initial`` is used only if the
        state has no ``key``; ``on`` as in reducer() (the new reducer's
        types, whatever the old one had)."""
        self._set_reducer(key, fn, initial, on, True, "replace_reducer()")

    def remove_reducer(self, key: str) -> None:
        """Removes the reducer that owns ``key``; its slice stays in the state,
        unchanged from then on. Then dispatches ``{"type":
        "@@turnstate/replace"}`` to the remaining reducers, as
        replace_reducer() does (atomic). NotFoundError if ``key`` has no
        reducer."""
        self._core.remove_reducer(key)
        old = self._reducers.pop(key, None)
        if old is not None:
            old.forget()

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
        status, since, token, ctx = self._core.subscribe(fn, path, self)
        self._keepalive.append(ctx)
        if status or _ext.seq() != since:
            _raise(status, _take(since), "subscribe")
        return Subscription(self, token)

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
        label = name or getattr(fn, "__qualname__", None) or "python-middleware"
        status, since, ctx = self._core.add_middleware(fn, self, label)
        self._keepalive.append(ctx)
        if status or _ext.seq() != since:
            _raise(status, _take(since), "add_middleware")
        return fn

    def remove_middleware(self, name: str) -> None:
        """Removes the middleware added last with add_middleware() under
        ``name`` (its ``name=``, else the function's ``__qualname__``).
        Dispatches already under way finish with it. NotFoundError if no
        middleware has that name (plugins are not removed this way)."""
        self._core.remove_middleware(name)

    def middleware(self, fn: F) -> F:
        """Decorator form of add_middleware()."""
        self.add_middleware(fn)
        return fn

    # ---- plugins ----

    # ---- versions of the state (docs/migrations.md) ----

    @property
    def version(self) -> int:
        """The version of the state this program's reducers make (0 until set):
        ts_store_get_version. Set it, and add the migrations, before loading
        a plugin that restores state (the journal)."""
        return int(self._core.get_version())

    @version.setter
    def version(self, version: int) -> None:
        if not isinstance(version, int) or isinstance(version, bool):
            raise TypeError("version: an int from 0 to 4294967295, not %s" % type(version).__name__)
        if version < 0:
            raise ValueError("version: an int from 0 to 4294967295, not %d" % version)
        self._core.set_version(version)

    def add_migration(self, from_version: int,
                      fn: Callable[[Dict[str, JSON]], Mapping[str, JSON]]) -> Callable[..., Any]:
        """Adds the migration from ``from_version`` to ``from_version + 1``:
        ``fn`` gets the whole state of ``from_version`` (a new dict, which it
        may change) and returns the state of the next version (a dict). An
        exception it raises fails the step: the call that brought the state in
        (replace_state_from, load_plugin of the journal or replicate) raises
        that exception, with the library's account ("migration 1->2 failed:
        ValueError: ...") as a note, and nothing is loaded. As a reducer, it
        must not call into the store. Returns ``fn``."""
        _require_callable(fn, "add_migration()", "migration")
        if not isinstance(from_version, int) or isinstance(from_version, bool) or from_version < 0:
            raise TypeError("add_migration(): from_version is an int from 0 to 4294967294")

        def step(text: bytes) -> bytes:
            state = fn(loads(text))
            if not isinstance(state, Mapping):
                raise TypeError("the migration from version %d returned %s, not the state (a dict)"
                                % (from_version, type(state).__name__))
            return dumps(dict(state))

        self._core.add_migration(from_version, step)
        self._keepalive.append(step)
        return fn

    def replace_state_from(self, state: Mapping[str, JSON], version: int) -> None:
        """Replaces the whole state with ``state``, saved at ``version``,
        migrated to this store's version first (ts_store_replace_state_from):
        all or nothing. A downgrade (``version`` newer than the store's)
        raises ArgumentError, a missing step NotFoundError, a migration that
        raised its exception; the state is then unchanged."""
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise TypeError("replace_state_from(): version is an int from 0 to 4294967295")
        self._core.replace_state_from(dumps(dict(state)), version)

    def load_plugin(self, path: str, config: Optional[Mapping[str, JSON]] = None) -> None:
        """Loads a middleware plugin (a .so written against turnstate_plugin.h)
        and appends it to the chain. ``path`` is a file, or the bare name of a
        shipped plugin ("guard", "delay", "journal", "recorder", "undo", "logger", "replicate")
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
        self._core.load_plugin(os.fsencode(path), text)

    def load_plugins(self, folder: str) -> None:
        """Loads every *.so plugin of ``folder`` in name order, each with the
        configuration in NAME.json beside it; all or nothing."""
        self._core.load_plugins(os.fsdecode(folder))

    def __repr__(self) -> str:
        return "<turnstate.Store%s>" % (" closed" if self.closed else "")


def _message_of(error: BaseException) -> str:
    if isinstance(error, TurnstateError):
        return error.message
    return _failure_reason(error).decode("utf-8", "replace")
