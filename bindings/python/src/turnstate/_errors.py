"""Exceptions: one class per ts_status, all under TurnstateError."""

import enum
from typing import Dict, Optional, Type, Union

from . import _capi


class Status(enum.IntEnum):
    """The ts_status codes of turnstate.h."""
    OK = _capi.TS_OK
    E_ARGUMENT = _capi.TS_E_ARGUMENT
    E_JSON = _capi.TS_E_JSON
    E_NOT_ACTION = _capi.TS_E_NOT_ACTION
    E_REDUCER = _capi.TS_E_REDUCER
    E_REENTRANT = _capi.TS_E_REENTRANT
    E_PLUGIN = _capi.TS_E_PLUGIN
    E_IO = _capi.TS_E_IO
    E_NOMEM = _capi.TS_E_NOMEM
    E_NOT_FOUND = _capi.TS_E_NOT_FOUND
    E_REJECTED = _capi.TS_E_REJECTED
    E_STORE_GONE = _capi.TS_E_STORE_GONE
    E_ABI = _capi.TS_E_ABI
    E_UNKNOWN_ACTION = _capi.TS_E_UNKNOWN_ACTION
    E_MISUSE = _capi.TS_E_MISUSE

    @property
    def c_name(self) -> str:
        """The C name: "TS_OK", "TS_E_JSON", ..."""
        return "TS_" + self.name


class TurnstateError(Exception):
    """A call into the store failed.

    ``status`` is the ts_status (a :class:`Status` when it is one of the
    header's, else the int a middleware returned), ``message`` the library's
    explanation (ts_last_error() of the failed call). Raise a subclass from a
    middleware to refuse an action with that status and message.
    """

    #: The status of this class (TurnstateError itself: none in particular).
    STATUS: Optional[int] = None

    def __init__(self, message: str = "", status: Optional[int] = None) -> None:
        if status is None:
            status = self.STATUS if self.STATUS is not None else _capi.TS_E_REJECTED
        try:
            self.status: Union[Status, int] = Status(status)
        except ValueError:
            self.status = status
        self.message = message
        super().__init__(message)

    @property
    def status_name(self) -> str:
        """The C name of the status ("TS_E_JSON"), "TS_E_UNKNOWN" for others."""
        return self.status.c_name if isinstance(self.status, Status) else "TS_E_UNKNOWN"

    def __str__(self) -> str:
        return "%s: %s" % (self.status_name, self.message) if self.message else self.status_name

    def __repr__(self) -> str:
        return "%s(%r, status=%s)" % (type(self).__name__, self.message, int(self.status))


class ArgumentError(TurnstateError, ValueError):
    """TS_E_ARGUMENT: a missing or malformed argument (a bad JSON Pointer, a key that has a reducer)."""
    STATUS = _capi.TS_E_ARGUMENT


class JSONError(TurnstateError, ValueError):
    """TS_E_JSON: invalid JSON (syntax, bad UTF-8, too deep, a key twice), or a value JSON cannot hold."""
    STATUS = _capi.TS_E_JSON


class NotActionError(TurnstateError, ValueError):
    """TS_E_NOT_ACTION: valid JSON that is not a tagged action {"type": "..."}."""
    STATUS = _capi.TS_E_NOT_ACTION


class ReducerError(TurnstateError):
    """TS_E_REDUCER: a reducer failed or returned something that is not JSON."""
    STATUS = _capi.TS_E_REDUCER


class ReentrantError(TurnstateError):
    """TS_E_REENTRANT: a reducer called back into its store."""
    STATUS = _capi.TS_E_REENTRANT


class PluginError(TurnstateError):
    """TS_E_PLUGIN: a plugin could not be loaded (not trusted, not a plugin) or failed."""
    STATUS = _capi.TS_E_PLUGIN


class IOFailedError(TurnstateError, OSError):
    """TS_E_IO: reading or writing a file failed."""
    STATUS = _capi.TS_E_IO

    def __str__(self) -> str:  # OSError's own __str__ would show its args differently
        return TurnstateError.__str__(self)


class NoMemoryError(TurnstateError, MemoryError):
    """TS_E_NOMEM: out of memory."""
    STATUS = _capi.TS_E_NOMEM


class NotFoundError(TurnstateError, LookupError):
    """TS_E_NOT_FOUND: no value at a JSON Pointer, or no such file."""
    STATUS = _capi.TS_E_NOT_FOUND


class RejectedError(TurnstateError):
    """TS_E_REJECTED: a middleware refused the action. Raise it from a Python
    middleware to refuse one: ``raise RejectedError('"title" is required')``."""
    STATUS = _capi.TS_E_REJECTED


class StoreGoneError(TurnstateError):
    """TS_E_STORE_GONE: the store is closed (or being destroyed)."""
    STATUS = _capi.TS_E_STORE_GONE


class ABIError(TurnstateError):
    """TS_E_ABI: a plugin built for an ABI this library does not speak."""
    STATUS = _capi.TS_E_ABI


class UnknownActionError(TurnstateError):
    """TS_E_UNKNOWN_ACTION: a Swift store met an action type it cannot decode."""
    STATUS = _capi.TS_E_UNKNOWN_ACTION


class MisuseError(TurnstateError):
    """TS_E_MISUSE: a function used against its rules (a middleware's next called twice)."""
    STATUS = _capi.TS_E_MISUSE


#: The exception class of each status.
BY_STATUS: Dict[int, Type[TurnstateError]] = {
    cls.STATUS: cls for cls in (ArgumentError, JSONError, NotActionError, ReducerError, ReentrantError,
                                PluginError, IOFailedError, NoMemoryError, NotFoundError, RejectedError,
                                StoreGoneError, ABIError, UnknownActionError, MisuseError)
    if cls.STATUS is not None
}


def error_for(status: int, message: str) -> TurnstateError:
    """The exception for a failed status: an instance of its class."""
    return BY_STATUS.get(status, TurnstateError)(message, status)
