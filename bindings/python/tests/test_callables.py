"""Every API that takes a callable refuses what is not callable at the call,
with ArgumentError (TS_E_ARGUMENT, as the C API answers a NULL function) and
nothing changed: before, subscribe(None) and the like were accepted, and each
later dispatch applied the action and then raised TypeError (issue 18, 13)."""
import pytest

import turnstate
from turnstate import ArgumentError, Status

NOT_CALLABLE = [None, "", 42]


def _store():
    """A counter store and a log of what its callbacks saw."""
    store = turnstate.Store(initial={"count": 0, "kept": 1})
    seen = []

    @store.reducer("count")
    def count(state, action):
        return state + 1 if action.type == "add" else None

    store.add_middleware(lambda s, nxt, action: (seen.append(("middleware", action.type)), nxt(action)),
                         name="spy")
    store.subscribe(lambda s: seen.append(("listener", s.get("/count"))))
    return store, seen


# Each way to hand the store a callable: (name, call(store, fn)).
CALLS = [
    ("subscribe", lambda store, fn: store.subscribe(fn)),
    ("subscribe with a path", lambda store, fn: store.subscribe(fn, path="/count")),
    ("add_middleware", lambda store, fn: store.add_middleware(fn)),
    ("add_middleware with a name", lambda store, fn: store.add_middleware(fn, name="bad")),
    ("@store.middleware", lambda store, fn: store.middleware(fn)),
    ("reducer(key, fn) for a new key", lambda store, fn: store.reducer("fresh", fn)),
    ("reducer(key, fn, initial=) for a new key", lambda store, fn: store.reducer("fresh", fn, initial=0)),
    ("reducer(key, fn) for a key the state has", lambda store, fn: store.reducer("kept", fn)),
    ("@store.reducer(key)", lambda store, fn: store.reducer("kept")(fn)),
    ("@store.reducer(key, initial=)", lambda store, fn: store.reducer("fresh", initial=0)(fn)),
    ("replace_reducer", lambda store, fn: store.replace_reducer("count", fn)),
    ("replace_reducer with initial=", lambda store, fn: store.replace_reducer("count", fn, initial=0)),
]


@pytest.mark.parametrize("bad", NOT_CALLABLE, ids=repr)
@pytest.mark.parametrize("how,call", CALLS, ids=[name for name, _ in CALLS])
def test_what_is_not_callable_is_refused_at_the_call_and_changes_nothing(how, call, bad):
    store, seen = _store()
    with store:
        with pytest.raises(ArgumentError) as raised:
            call(store, bad)
        assert raised.value.status == Status.E_ARGUMENT
        assert "callable" in raised.value.message and repr(bad) in raised.value.message
        assert store.state == {"count": 0, "kept": 1}
        assert seen == []                                   # no callback ran (no replace action either)
        # Nothing was added: the next dispatch runs exactly the callbacks it ran before.
        store.dispatch("add")
        assert store.state == {"count": 1, "kept": 1}
        assert seen == [("middleware", "add"), ("listener", 1)]
        # A key refused a reducer is still free for one.
        store.reducer("fresh", lambda state, action: None, initial=7)
        assert store.get("/fresh") == 7


def test_a_callable_object_is_accepted():
    class Listener:
        def __init__(self):
            self.calls = 0

        def __call__(self, store):
            self.calls += 1

    listener = Listener()
    with turnstate.Store() as store:
        store.subscribe(listener)
        store.dispatch("x")
    assert listener.calls == 1


def test_reducer_with_no_function_is_still_the_decorator_form():
    with turnstate.Store() as store:
        decorate = store.reducer("n", initial=1)
        assert store.state == {}                            # nothing added until it decorates
        decorate(lambda state, action: state + 1 if action.type == "inc" else None)
        store.dispatch("inc")
        assert store.state == {"n": 2}


# ---- pydux's tests (test/test_create_store.py), ported ----

def test_throws_if_listener_is_not_a_function():
    with turnstate.Store() as store:
        with pytest.raises(TypeError):
            store.subscribe()                               # Python's own arity check
        with pytest.raises(ArgumentError):
            store.subscribe("")
        with pytest.raises(ArgumentError):
            store.subscribe(None)
        with pytest.raises(ArgumentError):
            store.subscribe(42)


def test_throws_if_next_reducer_is_not_a_function():
    with turnstate.Store() as store:
        store.reducer("todos", lambda state, action: None, initial=[])
        with pytest.raises(ArgumentError, match="must be callable"):
            store.replace_reducer("todos", None)
        store.replace_reducer("todos", lambda *x: None)     # a function is fine
