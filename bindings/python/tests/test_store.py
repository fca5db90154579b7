"""The store from Python: values, dispatch forms, reading, reducers, listeners,
middleware, and the rules of the C suite (ordering, snapshots, re-entrancy,
atomic failure)."""
import json
import math
import sys

import pytest

import turnstate
from turnstate import (JSON_NULL, Action, ArgumentError, JSONError, MisuseError, NotActionError, NotFoundError,
                       ReducerError, ReentrantError, RejectedError, Store, StoreGoneError, TurnstateError)


# ---- creating and reading ----

def test_initial_state_and_reading():
    with Store(initial={"todos": [{"title": "a", "done": False}], "n": 2 ** 63 - 1, "x": None}) as store:
        assert store.state == {"todos": [{"title": "a", "done": False}], "n": 2 ** 63 - 1, "x": None}
        assert store.get("/todos/0/title") == "a"
        assert store.get("/n") == 2 ** 63 - 1
        assert store.get("") == store.state
        assert store.get_json("/todos") == '[{"title":"a","done":false}]'


def test_get_missing_raises_or_gives_default(store):
    with pytest.raises(NotFoundError) as raised:
        store.get("/nope")
    assert raised.value.status == turnstate.Status.E_NOT_FOUND
    assert '"nope"' in raised.value.message
    assert isinstance(raised.value, LookupError)
    assert store.get("/nope", default=7) == 7
    with pytest.raises(ArgumentError):
        store.get("no-slash", default=7)  # a malformed pointer is not "missing"


def test_pointer_escapes_tokens():
    assert turnstate.pointer("a/b", "c~d", 0) == "/a~1b/c~0d/0"
    with Store(initial={"a/b": {"c~d": [5]}}) as store:
        assert store.get(turnstate.pointer("a/b", "c~d", 0)) == 5


def test_state_is_a_snapshot(counter):
    before = counter.state
    before["count"] = 99
    counter.dispatch("counter/add")
    assert before == {"count": 99}
    assert counter.state == {"count": 1}


def test_bad_initial_states():
    with pytest.raises(JSONError):
        Store(initial=[1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Store(initial={"x": math.nan})
    with pytest.raises(TypeError):
        Store(initial={"x": {1, 2}})


def test_unicode_and_numbers_round_trip():
    value = {"text": "żółw \u2603 \U0001F600 \"q\" \\", "f": 1.5, "neg": -3, "big": 2 ** 64 - 1, "t": True}
    with Store(initial=value) as store:
        assert store.state == value


# ---- dispatching ----

def test_dispatch_forms(store):
    seen = []

    @store.reducer("log", initial=[])
    def log(state, action):
        if action.type.startswith("@@"):
            return None
        seen.append(action)
        return state + [[action.type, action.payload, action.has_payload]]

    store.dispatch("a")
    store.dispatch("b", {"title": "x"})
    store.dispatch("c", None)
    store.dispatch({"type": "d", "payload": [1, 2], "meta": {"k": 1}})
    store.dispatch(seen[1])  # an Action received earlier
    store.dispatch_json('{"type": "e", "payload": 3}')
    assert store.get("/log") == [["a", None, False], ["b", {"title": "x"}, True], ["c", None, True],
                                 ["d", [1, 2], True], ["b", {"title": "x"}, True], ["e", 3, True]]
    assert seen[3].data == {"type": "d", "payload": [1, 2], "meta": {"k": 1}}
    assert isinstance(seen[0], Action) and "a" in repr(seen[0])


def test_invalid_actions_are_refused_and_change_nothing(counter):
    with pytest.raises(NotActionError):
        counter.dispatch({"payload": 1})
    with pytest.raises(NotActionError):
        counter.dispatch("")
    with pytest.raises(JSONError):
        counter.dispatch_json('{"type": "x", "type": "y"}')
    with pytest.raises(JSONError):
        counter.dispatch_json("{")
    with pytest.raises(TypeError):
        counter.dispatch("x", {1, 2})
    with pytest.raises(TypeError):
        counter.dispatch(42)  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        counter.dispatch({"type": "x"}, 1)  # type: ignore[call-overload]
    assert counter.state == {"count": 0}


# ---- reducers ----

def test_reducers_own_keys_and_run_in_order(store):
    calls = []

    @store.reducer("a", initial=0)
    def a(state, action):
        calls.append("a")
        return state + 1

    @store.reducer("b", initial=0)
    def b(state, action):
        calls.append("b")
        return state + 10

    calls.clear()
    store.dispatch("x")
    assert calls == ["a", "b"]
    assert store.state == {"a": 1, "b": 10}


def test_init_call_and_existing_keys():
    with Store(initial={"kept": 5}) as store:
        inits = []

        @store.reducer("kept")
        def kept(state, action):
            inits.append(state)
            return None

        @store.reducer("fresh")
        def fresh(state, action):
            if state is None:
                inits.append(action.type)
                return {"n": 0}
            return None

        assert inits == ["@@turnstate/init"]  # "kept" exists: no init call
        assert store.state == {"kept": 5, "fresh": {"n": 0}}


def test_a_key_takes_one_reducer(counter):
    with pytest.raises(ArgumentError):
        counter.reducer("count", lambda s, a: None)


def test_init_failures_add_nothing(store):
    with pytest.raises(ValueError, match="returned None"):
        store.reducer("a", lambda s, a: None)
    with pytest.raises(KeyError):
        store.reducer("b", lambda s, a: {}["missing"])
    assert store.state == {}
    store.reducer("a", lambda s, a: None, initial=1)  # the key is still free
    assert store.state == {"a": 1}


def test_none_is_unchanged_and_json_null_is_null(store):
    @store.reducer("v", initial=1)
    def v(state, action):
        return JSON_NULL if action.type == "clear" else None

    store.dispatch("other")
    assert store.get("/v") == 1
    store.dispatch("clear")
    assert store.state == {"v": None}


def test_reducer_exception_is_raised_as_itself_and_the_state_is_unchanged(store):
    @store.reducer("a", initial=0)
    def a(state, action):
        return state + 1

    error = ValueError("no thanks")

    @store.reducer("b", initial=0)
    def b(state, action):
        if action.type == "boom":
            raise error
        return state

    store.dispatch("x")
    with pytest.raises(ValueError) as raised:
        store.dispatch("boom")
    assert raised.value is error
    if sys.version_info >= (3, 11):  # the library's account, through ts_reducer_fail, as a note
        assert raised.value.__notes__[-1] == ('turnstate: dispatch failed with TS_E_REDUCER: the reducer for "b" '
                                              'failed for "boom": ValueError: no thanks')
    assert store.state == {"a": 1, "b": 0}  # "a"'s result for "boom" was not applied
    store.dispatch("x")
    assert store.state == {"a": 2, "b": 0}


def test_reducer_returning_what_json_cannot_hold(store):
    @store.reducer("a", initial=0)
    def a(state, action):
        return {1, 2} if action.type == "set" else (math.inf if action.type == "inf" else None)

    with pytest.raises(TypeError):
        store.dispatch("set")
    with pytest.raises(ValueError):
        store.dispatch("inf")
    assert store.state == {"a": 0}


@pytest.mark.parametrize("call", ["dispatch", "get", "state", "subscribe"])
def test_a_reducer_may_not_call_back_into_its_store(counter, call):
    def calls_back(state, action):
        if action.type == "go":
            if call == "dispatch":
                counter.dispatch("counter/add")
            elif call == "get":
                counter.get("/count")
            elif call == "state":
                counter.state
            else:
                counter.subscribe(lambda s: None)
        return None

    counter.reducer("bad", calls_back, initial=0)
    with pytest.raises(ReentrantError):
        counter.dispatch("go")
    assert counter.state == {"count": 0, "bad": 0}


def test_a_reducer_may_use_another_store(counter):
    with Store() as other:
        other.reducer("n", lambda s, a: s + 1, initial=0)

        def uses_other(state, action):
            other.dispatch("x")
            return other.get("/n")

        counter.reducer("mirror", uses_other, initial=0)
        counter.dispatch("counter/add")
        assert counter.get("/mirror") == other.get("/n") >= 1


# ---- listeners ----

def test_listeners_run_in_order_after_every_dispatch(counter):
    calls = []
    counter.subscribe(lambda s: calls.append(("first", s.get("/count"))))
    counter.subscribe(lambda s: calls.append(("second", s.get("/count"))))
    counter.dispatch("counter/add")
    counter.dispatch("other")  # no change, no pointer: still called
    assert calls == [("first", 1), ("second", 1), ("first", 1), ("second", 1)]


def test_path_listeners_run_only_on_change(counter):
    counter.reducer("other", lambda s, a: s + 1 if a.type == "other" else None, initial=0)
    calls = []
    counter.subscribe(lambda s: calls.append(s.get("/count")), path="/count")
    counter.dispatch("other")
    counter.dispatch("counter/add", 2)
    counter.dispatch("counter/add", 0)
    assert calls == [2]


def test_a_value_that_appears_is_a_change(store):
    store.reducer("m", lambda s, a: {"k": 1} if a.type == "set" else ({} if a.type == "unset" else None),
                  initial={})
    calls = []
    store.subscribe(lambda s: calls.append(s.get("/m/k", None)), path="/m/k")
    store.dispatch("set")
    store.dispatch("set")
    store.dispatch("unset")
    assert calls == [1, None]


def test_unsubscribe_handle_and_context_manager(counter):
    calls = []
    subscription = counter.subscribe(lambda s: calls.append("a"))
    with counter.subscribe(lambda s: calls.append("b")) as inner:
        assert inner.active
        counter.dispatch("counter/add")
    assert not inner.active
    counter.dispatch("counter/add")
    subscription.unsubscribe()
    subscription.unsubscribe()  # idempotent
    counter.dispatch("counter/add")
    assert calls == ["a", "b", "a"]
    assert subscription.token != inner.token


def test_the_listener_list_is_fixed_when_notifications_start(counter):
    calls = []
    later = []

    def first(s):
        calls.append("first")
        if not later:
            later.append(s.subscribe(lambda s: calls.append("added")))
            second_sub.unsubscribe()

    counter.subscribe(first)
    second_sub = counter.subscribe(lambda s: calls.append("second"))
    counter.dispatch("counter/add")
    assert calls == ["first", "second"]  # removed during it: still called; added: not yet
    calls.clear()
    counter.dispatch("counter/add")
    assert calls == ["first", "added"]


def test_a_listener_may_dispatch(counter):
    def again(s):
        if s.get("/count") < 3:
            s.dispatch("counter/add")
    counter.subscribe(again)
    counter.dispatch("counter/add")
    assert counter.get("/count") == 3


def test_listener_exception_reaches_the_dispatcher_and_others_still_run(counter):
    error = RuntimeError("listener broke")
    calls = []

    def broken(s):
        raise error

    counter.subscribe(broken)
    counter.subscribe(lambda s: calls.append(s.get("/count")))
    with pytest.raises(RuntimeError) as raised:
        counter.dispatch("counter/add")
    assert raised.value is error
    assert calls == [1]
    assert counter.get("/count") == 1  # listeners run after the change: it stays


def test_nested_dispatch_errors_stay_with_their_call(counter):
    """An inner dispatch (from a listener) raises its own reducer's exception
    to the listener; the outer dispatch gets only what escaped the listener."""
    counter.reducer("strict", lambda s, a: (_ for _ in ()).throw(KeyError("inner")) if a.type == "bad" else None,
                    initial=0)
    caught = []

    def listener(s):
        if s.get("/count") == 1:
            try:
                s.dispatch("bad")
            except KeyError as error:
                caught.append(error)

    counter.subscribe(listener)
    counter.dispatch("counter/add")  # does not raise
    assert len(caught) == 1 and caught[0].args == ("inner",)


# ---- middleware ----

def test_middleware_order_changes_and_sees_the_rest(counter):
    calls = []

    def outer(store, next, action):
        calls.append(("outer", action.type))
        next(action)
        calls.append(("outer after", store.get("/count")))

    def double(store, next, action):
        calls.append(("double", action.type))
        if action.type == "counter/add":
            next("counter/add", action.payload * 2)
        else:
            next(action)

    counter.add_middleware(outer)
    counter.middleware(double)
    counter.dispatch("counter/add", 5)
    assert calls == [("outer", "counter/add"), ("double", "counter/add"), ("outer after", 10)]


def test_middleware_swallowing_calls_nothing_after_it(counter):
    calls = []
    counter.add_middleware(lambda store, next, action: None if action.type == "drop" else next(action))
    counter.subscribe(lambda s: calls.append(1))
    counter.dispatch("drop")
    assert calls == [] and counter.get("/count") == 0


def test_middleware_refuses_with_a_turnstate_error(counter):
    refusal = RejectedError('"title" is required')

    def guard(store, next, action):
        if action.type == "counter/add" and action.payload is None:
            raise refusal
        next(action)

    counter.add_middleware(guard)
    with pytest.raises(RejectedError) as raised:
        counter.dispatch("counter/add", None)
    assert raised.value is refusal and raised.value.status == -10
    assert counter.get("/count") == 0
    counter.dispatch("counter/add", 1)
    assert counter.get("/count") == 1


def test_middleware_exception_is_raised_as_itself(counter):
    error = ZeroDivisionError("mw")
    counter.add_middleware(lambda store, next, action: (_ for _ in ()).throw(error))
    with pytest.raises(ZeroDivisionError) as raised:
        counter.dispatch("counter/add")
    assert raised.value is error
    assert counter.get("/count") == 0


def test_next_raises_what_the_rest_raised_and_a_middleware_may_handle_it(counter):
    counter.reducer("picky", lambda s, a: (_ for _ in ()).throw(ValueError("picky")) if a.type == "bad" else None,
                    initial=0)
    seen = []

    def tolerant(store, next, action):
        try:
            next(action)
        except ValueError as error:
            seen.append(error)

    counter.add_middleware(tolerant)
    counter.dispatch("bad")  # handled by the middleware: no exception here
    assert [str(e) for e in seen] == ["picky"]
    assert counter.get("/count") == 0


def test_unhandled_next_error_reaches_the_dispatcher(counter):
    counter.reducer("picky", lambda s, a: (_ for _ in ()).throw(ValueError("picky")) if a.type == "bad" else None,
                    initial=0)
    counter.add_middleware(lambda store, next, action: next(action))
    with pytest.raises(ValueError, match="picky"):
        counter.dispatch("bad")


def test_next_twice_is_misuse(counter):
    results = []

    def twice(store, next, action):
        next(action)
        try:
            next(action)
        except MisuseError as error:
            results.append(error.status)

    counter.add_middleware(twice)
    counter.dispatch("counter/add")
    assert results == [turnstate.Status.E_MISUSE]
    assert counter.get("/count") == 1


def test_middleware_may_dispatch(counter):
    def echo(store, next, action):
        next(action)
        if action.type == "ping":
            store.dispatch("counter/add", 100)

    counter.add_middleware(echo)
    counter.dispatch("ping")
    assert counter.get("/count") == 100


# ---- errors and lifetime ----

def test_one_exception_class_per_status():
    classes = {cls.STATUS: cls for cls in turnstate.TurnstateError.__subclasses__()}
    assert set(classes) == {s.value for s in turnstate.Status if s != 0}
    for status, cls in classes.items():
        error = cls("why")
        assert error.status == status and error.message == "why"
        assert str(error) == "%s: why" % turnstate.Status(status).c_name
    assert isinstance(JSONError("x"), ValueError)
    assert isinstance(turnstate.IOFailedError("x"), OSError)
    assert isinstance(turnstate.NoMemoryError("x"), MemoryError)
    assert issubclass(ReducerError, TurnstateError)


def test_closed_store_raises_store_gone():
    store = Store()
    store.close()
    store.close()
    assert store.closed
    with pytest.raises(StoreGoneError):
        store.dispatch("x")
    with pytest.raises(StoreGoneError):
        store.state


def test_close_from_inside_a_listener(counter):
    calls = []
    counter.subscribe(lambda s: s.close())
    counter.subscribe(lambda s: calls.append("still called"))
    counter.dispatch("counter/add")
    assert calls == ["still called"] and counter.closed


def test_reducer_values_are_read_only_and_what_it_kept_never_changes(store):
    kept = []

    @store.reducer("items", initial=[])
    def items(state, action):
        kept.append(state)
        if action.type == "mutate":
            state.append(len(state))  # refused: the store keeps this value
        return state + [len(state)]

    store.dispatch("x")
    store.dispatch("x")
    with pytest.raises(TypeError, match="read-only"):
        store.dispatch("mutate")
    assert store.get("/items") == [0, 1]  # the failed dispatch changed nothing
    store.dispatch("x")
    # What each call got is as it was then: later dispatches changed none of them.
    assert json.dumps(kept) == "[[], [0], [0, 1], [0, 1]]"
    assert store.get("/items") == [0, 1, 2]


def nested(depth):
    value = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_nesting_deeper_than_the_library_allows():
    with pytest.raises(JSONError) as raised:
        Store(initial={"deep": nested(300)})
    assert "deeper than 256" in raised.value.message
    with Store() as store:
        @store.reducer("deep", initial=0)
        def deep(state, action):
            return nested(300) if action.type == "deepen" else None

        with pytest.raises(ReducerError) as raised:  # valid to Python, refused by the library
            store.dispatch("deepen")
        assert raised.value.status == turnstate.Status.E_REDUCER and '"deep"' in raised.value.message
        assert store.state == {"deep": 0}


def test_subscribing_while_other_threads_dispatch(counter):
    import threading
    stop = threading.Event()

    def work():
        while not stop.is_set():
            counter.dispatch("counter/add")

    workers = [threading.Thread(target=work) for _ in range(2)]
    for worker in workers:
        worker.start()
    try:
        for _ in range(200):
            calls = []
            with counter.subscribe(lambda s: calls.append(1)):
                pass
    finally:
        stop.set()
        for worker in workers:
            worker.join()
    total = counter.get("/count")
    counter.dispatch("counter/add")
    assert counter.get("/count") == total + 1


def test_actions_with_unicode_types_and_keys():
    with Store() as store:
        store.reducer("zähler", lambda s, a: s + 1 if a.type == "ünïcode/➕" else None, initial=0)
        store.dispatch("ünïcode/➕")
        assert store.get("/zähler") == 1
        assert store.get(turnstate.pointer("zähler")) == 1


def test_an_exception_whose_str_fails_still_fails_the_dispatch(counter):
    class Weird(Exception):
        def __str__(self):
            raise RuntimeError("no str")

    def reducer(state, action):
        if action.type == "weird":
            raise Weird()
        return None

    counter.reducer("w", reducer, initial=0)
    with pytest.raises(Weird):
        counter.dispatch("weird")
    assert counter.state == {"count": 0, "w": 0}


def test_the_note_is_added_once(counter):
    counter.reducer("picky", lambda s, a: (_ for _ in ()).throw(ValueError("picky")) if a.type == "bad" else None,
                    initial=0)
    counter.add_middleware(lambda store, next, action: next(action))
    with pytest.raises(ValueError) as raised:
        counter.dispatch("bad")
    notes = getattr(raised.value, "__notes__", [])
    assert len([n for n in notes if n.startswith("turnstate: ")]) == (1 if sys.version_info >= (3, 11) else 0)


def test_any_mapping_is_an_initial_state_or_an_action():
    from types import MappingProxyType
    with Store(initial=MappingProxyType({"n": 1})) as store:
        store.reducer("n", lambda s, a: s + a.payload if a.type == "add" else None)
        store.dispatch(MappingProxyType({"type": "add", "payload": 2}))
        assert store.state == {"n": 3}


# ---- replacing and removing reducers and middleware ----

def test_replace_reducer_keeps_the_state_and_announces_itself(counter):
    seen = []
    counter.add_middleware(lambda s, nxt, a: (seen.append(a.type), nxt(a)), name="spy")
    counter.dispatch("counter/add", 5)

    def doubling(state, action):
        if action.type == "counter/add":
            return state + 2 * (action.payload if action.has_payload else 1)
        return None

    counter.replace_reducer("count", doubling)
    assert counter.get("/count") == 5                       # the state is kept
    assert seen[-1] == "@@turnstate/replace"                # middleware saw the replace action
    counter.dispatch("counter/add", 1)
    assert counter.get("/count") == 7                       # the new reducer runs


def test_replace_reducer_is_atomic_when_the_replace_action_fails(counter):
    def refusing(store, nxt, action):
        if action.type == "@@turnstate/replace":
            raise RejectedError("not now")
        nxt(action)

    counter.add_middleware(refusing, name="refusing")
    with pytest.raises(RejectedError):
        counter.replace_reducer("count", lambda state, action: 100)
    counter.dispatch("counter/add", 1)
    assert counter.get("/count") == 1                       # the old reducer is back


def test_replace_and_remove_unknown_keys_are_not_found(store):
    with pytest.raises(NotFoundError):
        store.replace_reducer("nope", lambda state, action: None)
    with pytest.raises(NotFoundError):
        store.remove_reducer("nope")


def test_remove_reducer_leaves_its_slice(counter):
    counter.dispatch("counter/add", 3)
    counter.remove_reducer("count")
    counter.dispatch("counter/add", 3)
    assert counter.get("/count") == 3


def test_remove_middleware_by_name(counter):
    calls = []
    counter.add_middleware(lambda s, nxt, a: (calls.append(a.type), nxt(a)), name="counting")
    counter.dispatch("counter/add")
    counter.remove_middleware("counting")
    counter.dispatch("counter/add")
    assert calls == ["counter/add"]
    assert counter.get("/count") == 2
    with pytest.raises(NotFoundError):
        counter.remove_middleware("counting")
