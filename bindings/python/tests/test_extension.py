"""The compiled extension: read-only values kept between dispatches (and
always what the store holds), payloads that skip the JSON round trip,
patches (returned, and found by identity), on= filters, orjson, and every
bad input answered with the binding's exception, state unchanged."""
import copy
import json
import math
import pickle
import random
import threading

import pytest

import turnstate
from turnstate import (JSON_NULL, ArgumentError, FrozenDict, FrozenList, JSONError, NotActionError, NotFoundError,
                       Patch, ReducerError, Status, Store, StoreGoneError)
from turnstate import _ext

V03 = _ext.has("slice_id") if turnstate.library_path() else False
needs_03 = pytest.mark.skipif(not V03, reason="the loaded libturnstate has no ts_reducer_slice_id (0.3)")


def stats(store, index=-1):
    """The counters of a store's reducer (the last added by default)."""
    reducers = [ctx for ctx in store._keepalive if isinstance(ctx, _ext.Reducer)]
    return reducers[index].stats()


# ---- read-only values ----

MUTATIONS_DICT = [
    ("d['x'] = 1", lambda d: d.__setitem__("x", 1)),
    ("del d['a']", lambda d: d.__delitem__("a")),
    ("d.update(x=1)", lambda d: d.update(x=1)),
    ("d.pop('a')", lambda d: d.pop("a")),
    ("d.popitem()", lambda d: d.popitem()),
    ("d.clear()", lambda d: d.clear()),
    ("d.setdefault('x', 1)", lambda d: d.setdefault("x", 1)),
    ("d |= {}", lambda d: d.__ior__({"x": 1})),
    ("d.__init__({'x': 1})", lambda d: d.__init__({"x": 1})),
]
MUTATIONS_LIST = [
    ("l[0] = 9", lambda l: l.__setitem__(0, 9)),
    ("l[0:1] = [9]", lambda l: l.__setitem__(slice(0, 1), [9])),
    ("del l[0]", lambda l: l.__delitem__(0)),
    ("l.append(9)", lambda l: l.append(9)),
    ("l.extend([9])", lambda l: l.extend([9])),
    ("l.insert(0, 9)", lambda l: l.insert(0, 9)),
    ("l.remove(1)", lambda l: l.remove(1)),
    ("l.pop()", lambda l: l.pop()),
    ("l.clear()", lambda l: l.clear()),
    ("l.sort()", lambda l: l.sort()),
    ("l.reverse()", lambda l: l.reverse()),
    ("l += [9]", lambda l: l.__iadd__([9])),
    ("l *= 2", lambda l: l.__imul__(2)),
    ("l.__init__([9])", lambda l: l.__init__([9])),
]


@pytest.mark.parametrize("what,mutate", MUTATIONS_DICT + MUTATIONS_LIST, ids=[m[0] for m in MUTATIONS_DICT + MUTATIONS_LIST])
def test_every_mutation_of_a_reducers_state_is_refused_and_changes_nothing(store, what, mutate):
    seen = []

    @store.reducer("doc", initial={"a": 1, "list": [1, 2, 3]})
    def doc(state, action):
        seen.append(state)
        if action.type == "mutate":
            target = state if what.startswith("d") else state["list"]
            mutate(target)
        return None

    store.dispatch("look")
    before = store.state
    with pytest.raises(TypeError, match="read-only") as raised:
        store.dispatch("mutate")
    assert "copy.deepcopy(state)" in str(raised.value)
    assert store.state == before == {"doc": {"a": 1, "list": [1, 2, 3]}}
    store.dispatch("look")
    assert seen[-1] == before["doc"]  # the kept value too is as it was


# A reducer that answered a type with a new list gets its kept list for that
# type as a plain list (list(state) copies it ten times faster), checked after
# the call: every change in place fails the dispatch and changes nothing.
OPEN_MUTATIONS = [m for m in MUTATIONS_LIST if m[0] != "l.__init__([9])"] + [
    ("l.__init__([9])", lambda l: list.__init__(l, [9])),
    ("l[:] = reversed", lambda l: l.__setitem__(slice(None), l[::-1])),
]


@needs_03
@pytest.mark.parametrize("what,mutate", OPEN_MUTATIONS, ids=[m[0] for m in OPEN_MUTATIONS])
def test_a_list_handed_as_a_plain_list_is_checked_and_a_change_in_place_fails_the_dispatch(store, what, mutate):
    seen = []

    @store.reducer("items", initial=[3, 1, 2])
    def items(state, action):
        seen.append((action.type, type(state)))
        if action.type == "add":
            if action.payload == "mutate":
                mutate(state)
                return state
            return state + [action.payload]
        return None

    store.dispatch("add", 4)  # a new list for "add": the next "add" gets a plain list
    assert seen[-1] == ("add", FrozenList)
    store.dispatch("add", 5)
    assert seen[-1] == ("add", list) and stats(store)["opened"] == 1
    store.dispatch("other")
    assert seen[-1] == ("other", FrozenList)  # other types: read-only as before
    before = store.state
    with pytest.raises(TypeError, match="changed its state .* in place") as raised:
        store.dispatch("add", "mutate")
    assert "read-only" in str(raised.value) and "'items'" in str(raised.value)
    assert store.state == before == {"items": [3, 1, 2, 4, 5]}
    store.dispatch("look")
    assert seen[-1][1] is FrozenList  # the kept value was dropped: parsed again, as the store holds it
    assert stats(store)["parses"] == 2
    assert store.state == before
    store.dispatch("add", 6)  # and still works
    assert store.state == {"items": [3, 1, 2, 4, 5, 6]}


@needs_03
def test_a_plain_list_snapshot_follows_every_change_and_refused_answers(store):
    """The pointers the check compares with are carried from one kept list
    to the next through the diff: random replaces, inserts and removals
    (some answers refused because another reducer fails) never give a false
    alarm, and a change in place is still caught after them."""
    rng = random.Random(19)
    model = list(range(300))
    seen = []

    @store.reducer("items", initial=model)
    def items(state, action):
        seen.append(type(state))
        if action.type != "op":
            return None
        kind, at = action.payload["kind"], action.payload["at"]
        if kind == "mutate":
            state[at] = -1
            return state
        new = list(state)
        if kind == "replace":
            new[at] = {"v": at}
        elif kind == "insert":
            new.insert(at, at)
        elif kind == "remove":
            del new[at]
        else:
            new.append(at)
        return new

    @store.reducer("guard", initial=0)
    def guard(state, action):
        if action.type == "op" and action.payload.get("fail"):
            raise ValueError("refused")
        return None

    for step in range(300):
        kind = rng.choice(["replace", "insert", "remove", "append"])
        at = rng.randrange(len(model)) if kind in ("replace", "remove") else rng.randrange(len(model) + 1)
        fail = rng.random() < 0.15
        if fail:
            with pytest.raises(ValueError, match="refused"):
                store.dispatch("op", {"kind": kind, "at": at, "fail": True})
        else:
            store.dispatch("op", {"kind": kind, "at": at})
            if kind == "replace":
                model[at] = {"v": at}
            elif kind == "insert":
                model.insert(at, at)
            elif kind == "remove":
                del model[at]
            else:
                model.append(at)
        assert store.get("/items") == model, step
    assert seen.count(list) > 200 and stats(store, 0)["parses"] == 1  # handed as a list; never parsed again
    with pytest.raises(TypeError, match="in place"):
        store.dispatch("op", {"kind": "mutate", "at": 7})
    assert store.get("/items") == model
    store.dispatch("look")
    assert seen[-1] is FrozenList


@needs_03
def test_a_list_handed_as_a_plain_list_is_read_only_again_after_the_call(store):
    held = []

    @store.reducer("items", initial=[1, 2])
    def items(state, action):
        held.append(state)
        return list(state) + [action.payload] if action.type == "add" else None

    store.dispatch("add", 3)
    store.dispatch("add", 4)
    assert type(held[-1]) is list or type(held[-1]) is FrozenList
    with pytest.raises(TypeError, match="read-only"):
        held[-1].append(9)  # kept by the reducer past its call: read-only there
    store.dispatch("look")
    assert held[-1] == [1, 2, 3, 4] and store.state == {"items": [1, 2, 3, 4]}


def test_read_only_values_read_like_dicts_and_lists(store):
    got = []
    store.reducer("doc", lambda state, action: got.append(state), initial={"a": [1, {"b": None}], "c": "x"})
    store.dispatch("look")
    state = got[0]
    assert isinstance(state, dict) and isinstance(state, FrozenDict) and isinstance(state["a"], FrozenList)
    assert isinstance(state["a"], list) and isinstance(state["a"][1], FrozenDict)
    assert state == {"a": [1, {"b": None}], "c": "x"} and state["a"] + [2] == [1, {"b": None}, 2]
    assert {**state, "c": "y"} == {"a": [1, {"b": None}], "c": "y"} and dict(state, c=1)["c"] == 1
    assert json.loads(json.dumps(state)) == state and repr(state) == repr(dict(state))
    assert state["a"][:1] == [1] and type(state["a"][:1]) is list  # a slice is a new, plain list
    thawed = copy.deepcopy(state)
    assert type(thawed) is dict and type(thawed["a"]) is list and type(thawed["a"][1]) is dict
    thawed["a"][1]["b"] = 2  # a deep copy is mutable all the way down
    assert state["a"][1]["b"] is None
    shallow = copy.copy(state)
    assert type(shallow) is dict and shallow["a"] is state["a"]
    assert type(pickle.loads(pickle.dumps(state))) is dict and pickle.loads(pickle.dumps(state)) == state
    with pytest.raises(TypeError, match="cannot create"):
        FrozenDict({"a": 1})
    with pytest.raises(TypeError, match="cannot create"):
        FrozenList([1])


def test_what_a_reducer_returns_becomes_read_only_and_is_handed_back_unparsed(store):
    got = []
    made = {}

    @store.reducer("items", initial=[])
    def items(state, action):
        got.append(state)
        if action.type == "add":
            made["list"] = state + [{"n": len(state)}]
            return made["list"]
        return None

    store.dispatch("add")
    store.dispatch("look")
    if V03:
        assert got[-1] is made["list"]  # the value it returned, not a parse of the text
        assert stats(store)["parses"] == 1  # only the first call parsed (initial=)
    assert isinstance(made["list"], FrozenList) and isinstance(made["list"][0], FrozenDict)
    with pytest.raises(TypeError, match="read-only"):
        made["list"].append(1)


@needs_03
def test_a_slice_replaced_behind_the_reducer_is_read_again(plugins, tmp_path):
    """The journal plugin restores a snapshot with replace_state: the
    reducer's kept value is stale, and its next call gets the new slice."""
    journal = str(tmp_path / "state.journal")

    def add(state, action):
        return state + action.payload if action.type == "add" else None

    with Store() as first:
        first.reducer("count", add, initial=0)
        first.load_plugin("journal", {"path": journal, "snapshot_every": 1})
        for n in (1, 2, 3):
            first.dispatch("add", n)
    with Store() as second:
        seen = []
        second.reducer("count", lambda s, a: (seen.append(s), add(s, a))[1], initial=0)
        second.dispatch("add", 100)
        second.dispatch("add", 0)  # kept: 100
        second.load_plugin("journal", {"path": journal, "snapshot_every": 1})
        assert second.get("/count") == 6
        second.dispatch("add", 1)
        assert seen[-1] == 6 and second.get("/count") == 7


@needs_03
def test_an_answer_the_dispatch_threw_away_is_not_kept(store):
    """A reducer answers; a reducer after it fails: the state is as it was,
    and the first reducer's next call gets the old value, not its answer."""
    seen = {"text": [], "patch": [], "diff": []}

    def reducer(kind):
        def fn(state, action):
            seen[kind].append(state)
            if action.type != "change":
                return None
            if kind == "text":
                return state + 1
            if kind == "patch":
                return Patch([{"op": "add", "path": "/-", "value": len(state)}])
            return state + [len(state)]
        return fn

    store.reducer("text", reducer("text"), initial=0)
    store.reducer("patch", reducer("patch"), initial=[])
    store.reducer("diff", reducer("diff"), initial=[])

    @store.reducer("fails", initial=0)
    def fails(state, action):
        if action.type == "change" and action.payload:
            raise ValueError("no")
        return None

    store.dispatch("change", False)
    assert store.state == {"text": 1, "patch": [0], "diff": [0], "fails": 0}
    with pytest.raises(ValueError):
        store.dispatch("change", True)
    store.dispatch("look")
    assert seen["text"][-1] == 1 and seen["patch"][-1] == [0] and seen["diff"][-1] == [0]
    store.dispatch("change", False)
    assert store.state == {"text": 2, "patch": [0, 1], "diff": [0, 1], "fails": 0}


@needs_03
def test_state_always_equals_what_the_store_holds(store):
    """Random answers (new text, patches, new lists and dicts sharing items,
    no change, failures): every call's state equals the store's slice as it
    was just before, read fresh from the text."""
    rng = random.Random(19)
    seen = []

    @store.reducer("doc", initial={"items": [], "meta": {"n": 0}})
    def doc(state, action):
        seen.append(state)
        kind = action.payload["kind"]
        items = state["items"]
        if kind == "append":
            return {**state, "items": items + [{"id": len(items), "done": False}]}
        if kind == "toggle" and items:
            i = action.payload["i"] % len(items)
            new = list(items)
            new[i] = {**items[i], "done": not items[i]["done"]}
            return {**state, "items": new}
        if kind == "remove" and items:
            i = action.payload["i"] % len(items)
            return {**state, "items": items[:i] + items[i + 1:]}
        if kind == "patch" and items:
            i = action.payload["i"] % len(items)
            return Patch([{"op": "replace", "path": "/items/%d/done" % i, "value": True},
                          {"op": "copy", "from": "/items/%d" % i, "path": "/meta/last"},
                          {"op": "test", "path": "/meta/last/done", "value": True}])
        if kind == "move" and len(items) > 1:
            return Patch([{"op": "move", "from": "/items/0", "path": "/items/-"}])
        if kind == "meta":
            return {**state, "meta": {**state["meta"], "n": state["meta"]["n"] + 1}}
        if kind == "whole":
            return {"items": [dict(item) for item in items], "meta": {"n": 0}}
        if kind == "fail":
            raise RuntimeError("refused")
        return state

    expected = store.get("/doc")
    for step in range(400):
        kind = rng.choice(["append", "append", "toggle", "remove", "patch", "move", "meta", "whole", "same", "fail"])
        payload = {"kind": kind, "i": rng.randrange(1000)}
        try:
            store.dispatch("step", payload)
        except RuntimeError:
            assert kind == "fail"
        assert seen[-1] == expected, "step %d (%s)" % (step, kind)
        expected = store.get("/doc")
    counters = stats(store)
    assert counters["parses"] < 10 and counters["patches"] > 100, counters


# ---- payloads ----

def test_a_payload_dispatched_from_python_reaches_the_reducer_without_json(store):
    big = 10 ** 15 + 7  # an int object no parse would return (ints beyond 256 are not shared)
    seen = []
    store.reducer("x", lambda state, action: seen.append(action.payload), initial=0)
    store.dispatch("number", big)
    assert seen[-1] is big
    payload = {"title": "a", "tags": ["x"]}
    store.dispatch("dict", payload)
    got = seen[-1]
    assert got == payload and got is not payload and isinstance(got, FrozenDict) and isinstance(got["tags"], FrozenList)
    payload["title"] = "changed after"  # the caller's object stays its own, mutable
    assert got["title"] == "a"
    with pytest.raises(TypeError, match="read-only"):
        got["title"] = "b"
    # A payload a read-only copy cannot hold exactly (a tuple, a key that is
    # not a str) reaches it as its JSON text reads.
    store.dispatch("odd", {"t": (1, 2), 3: "three"})
    assert seen[-1] == {"t": [1, 2], "3": "three"}


@pytest.mark.skipif(not _ext.has("dispatch_parts"), reason="no ts_store_dispatch_parts in the loaded libturnstate")
def test_dispatch_hands_the_type_and_payload_apart_and_reducers_see_the_same_action(store):
    """dispatch("type", payload) goes through ts_store_dispatch_parts: no
    action text to make or parse; reducers and middleware see the same."""
    seen, through = [], []
    big = 10 ** 15 + 7
    store.reducer("x", lambda state, action: seen.append(action), initial=0)

    def rewrite(store_, next, action):
        through.append(action.json_text)
        if action.type == "rewrite":
            next("rewritten", action.payload + 1)  # another action: its own payload, read from its text
        else:
            next(action)

    store.add_middleware(rewrite)
    store.dispatch("number", big)
    assert seen[-1].payload is big and seen[-1].type == "number"  # the Python object itself: not parsed
    assert json.loads(seen[-1].json_text) == {"type": "number", "payload": big} == json.loads(through[-1])
    store.dispatch("rewrite", big)
    assert seen[-1].type == "rewritten" and seen[-1].payload == big + 1 and seen[-1].payload is not big
    store.dispatch('q"u\\o\nte/é', {"a": [1, "x"]})
    assert seen[-1].type == 'q"u\\o\nte/é' and seen[-1].payload == {"a": [1, "x"]}
    assert json.loads(seen[-1].json_text) == {"type": 'q"u\\o\nte/é', "payload": {"a": [1, "x"]}}
    store.dispatch("bare")
    assert not seen[-1].has_payload and seen[-1].json_text == b'{"type":"bare"}'
    count = len(seen)
    # A type with NUL in it is refused as a text with \u0000 is (not cut at the NUL).
    with pytest.raises(NotActionError, match="u0000"):
        store.dispatch("a\x00b", 1)
    with pytest.raises(NotActionError, match="empty"):
        store.dispatch("", 1)
    assert len(seen) == count and store.state == {"x": 0}


def test_action_reads_as_a_dict(store):
    seen = []
    store.reducer("x", lambda state, action: seen.append(action), initial=0)
    store.dispatch({"type": "t", "payload": {"a": 1}, "meta": {"m": 2}})
    action = seen[-1]
    assert action["type"] == "t" and action["payload"] == {"a": 1} and action["meta"] == {"m": 2}
    assert action.get("missing") is None and action.get("missing", 5) == 5
    with pytest.raises(KeyError):
        action["missing"]
    store.dispatch("bare")
    with pytest.raises(KeyError):
        seen[-1]["payload"]
    assert seen[-1].get("payload") is None and not seen[-1].has_payload
    kept = pickle.loads(pickle.dumps(action))
    assert kept.type == "t" and kept.payload == {"a": 1}


# ---- patches ----

@needs_03
def test_patch_answers_apply_and_failures_change_nothing(store):
    @store.reducer("todos", initial=[{"t": "a", "done": False}, {"t": "b", "done": False}])
    def todos(state, action):
        return Patch(action.payload) if action.type == "patch" else None

    store.dispatch("patch", [{"op": "replace", "path": "/1/done", "value": True},
                             {"op": "add", "path": "/-", "value": {"t": "c", "done": False}}])
    assert store.get("/todos") == [{"t": "a", "done": False}, {"t": "b", "done": True}, {"t": "c", "done": False}]
    before = store.state
    for ops, needle in [([{"op": "test", "path": "/0/done", "value": True}], 'op 0 ("test" at "/0/done")'),
                        ([{"op": "replace", "path": "/0/done", "value": 1}, {"op": "remove", "path": "/9"}],
                         'op 1 ("remove" at "/9")'),
                        ([{"op": "nope", "path": ""}], "op 0")]:
        with pytest.raises(ReducerError) as raised:
            store.dispatch("patch", ops)
        assert needle in raised.value.message and raised.value.status == Status.E_REDUCER
        assert store.state == before
    with pytest.raises(TypeError, match="not JSON serializable"):
        store.dispatch("patch", [{"op": "add", "path": "/-", "value": {1, 2}}])
    assert store.state == before
    store.dispatch("look")
    assert stats(store)["parses"] == 1


def test_patch_takes_a_list_of_mappings():
    assert Patch(iter([{"op": "remove", "path": "/0"}])).ops == [{"op": "remove", "path": "/0"}]
    for bad in ({"op": "remove"}, "ops", [["op", "remove"]], [1]):
        with pytest.raises(TypeError):
            Patch(bad)


@needs_03
def test_a_new_list_sharing_items_is_sent_as_a_patch(store):
    @store.reducer("items", initial=[{"n": i} for i in range(100)])
    def items(state, action):
        if action.type == "toggle":
            new = list(state)
            new[5] = {**state[5], "on": True}
            return new
        if action.type == "all":
            return [{**item, "on": True} for item in state]
        return None

    store.dispatch("toggle")
    assert stats(store)["patches"] == 1 and stats(store)["texts"] == 0
    store.dispatch("all")  # every item new: the whole text is cheaper
    assert stats(store)["texts"] == 1
    assert store.get("/items") == [{"n": i, "on": True} for i in range(100)]


def test_diff_by_identity():
    old = _ext.loads(b'{"a":[1,2,3],"b":{"c":1},"d":"x"}', True)
    assert _ext.diff(old, old) == b"[]"
    new = {**old, "a": old["a"] + [4]}
    assert json.loads(_ext.diff(old, new)) == [{"op": "add", "path": "/a/-", "value": 4}]
    new = {"a": old["a"], "b": old["b"]}
    assert json.loads(_ext.diff(old, new)) == [{"op": "remove", "path": "/d"}]
    new = {"a": old["a"][1:], "b": {"c": 2}, "d": "x", "e/~": 1}
    assert json.loads(_ext.diff(old, new)) == [{"op": "remove", "path": "/a/0"},
                                                {"op": "replace", "path": "/b/c", "value": 2},
                                                {"op": "add", "path": "/e~1~0", "value": 1}]
    assert _ext.diff(old, {"d": "x", "a": old["a"], "b": old["b"]}) is None  # another order: the store keeps its own
    assert _ext.diff(old, [1]) is None


@pytest.mark.parametrize("n", [1, 63, 64, 65, 128, 200, 511, 512, 513, 1000, 1100])
def test_diff_of_big_lists_finds_each_change_at_any_place(n):
    """The common ends of two lists are skipped 512, then 64 items at a
    time: changes just inside and outside those blocks, at both ends."""
    old = _ext.loads(json.dumps(list(range(n))).encode(), True)
    edges = [0, 1, 62, 63, 64, 65, 127, 128, 129, 511, 512, 513, 575, 576, 577, n // 2]
    places = sorted({p for e in edges for p in (e, n - 1 - e) if 0 <= p < n})
    for at in places:
        new = list(old)
        new[at] = -1
        assert json.loads(_ext.diff(old, new)) == [{"op": "replace", "path": "/%d" % at, "value": -1}], at
        assert json.loads(_ext.diff(old, old[:at] + old[at + 1:])) == [{"op": "remove", "path": "/%d" % at}], at
        added = json.loads(_ext.diff(old, old[:at] + [-1] + old[at:]))
        assert _ext.apply(list(range(n)), added) == list(range(at)) + [-1] + list(range(at, n)), at
    assert json.loads(_ext.diff(old, old + [-1])) == [{"op": "add", "path": "/-", "value": -1}]
    assert _ext.diff(old, list(old)) == b"[]"
    # The same item everywhere: the common ends must not overlap.
    same = _ext.loads(json.dumps([0] * n).encode(), True)
    for new in (same + [0], same[1:], [0] + same + [0], same[: n // 2] + [1] + same[n // 2:], same[:-3]):
        ops = json.loads(_ext.diff(same, new))
        assert _ext.apply([0] * n, ops) == list(new) and len(ops) == abs(len(new) - n), (n, ops)


# ---- on= ----

@pytest.mark.skipif(not _ext.has("add_reducer_for"), reason="no ts_store_add_reducer_for (0.3)")
def test_on_calls_a_reducer_only_for_its_types(store):
    calls = []
    store.reducer("todos", lambda state, action: calls.append(action.type), initial=[], on=["todos/add", "todos/edit/*"])
    for type_ in ("todos/add", "todos/remove", "todos/edit/title", "todos/edit", "other"):
        store.dispatch(type_)
    assert calls == ["todos/add", "todos/edit/title"]
    store.replace_reducer("todos", lambda state, action: calls.append(action.type), on=["other"])
    store.dispatch("todos/add")
    store.dispatch("other")
    assert calls[-2:] == ["@@turnstate/replace", "other"]
    for bad in (["todos*"], [""], ["*"], ["a/*/b"]):
        with pytest.raises(ArgumentError):
            store.reducer("more", lambda s, a: None, initial=0, on=bad)
        assert "more" not in store.state
    with pytest.raises(TypeError):
        store.reducer("more", lambda s, a: None, initial=0, on="todos/add")
    with pytest.raises(TypeError):
        store.reducer("more", lambda s, a: None, initial=0, on=[1])
    assert "more" not in store.state


# ---- JSON ----

def test_json_goes_through_orjson(store):
    before = _ext.counters()
    store.reducer("doc", lambda state, action: {**state, "n": action.payload}, initial={"a": [1, "x", None, 1.5]})
    for n in range(5):
        store.dispatch("set", {"v": [n, "s", None, True, 0.25]})
    assert store.get("/doc") == {"a": [1, "x", None, 1.5], "n": {"v": [4, "s", None, True, 0.25]}}
    after = _ext.counters()
    assert after["dumps_fallbacks"] == before["dumps_fallbacks"]
    assert after["exact_parses"] == before["exact_parses"]


def test_what_orjson_cannot_write_exactly_goes_through_json(store):
    before = _ext.counters()["dumps_fallbacks"]
    store.reducer("doc", lambda state, action: action.data["payload"], initial=None)
    store.dispatch({"type": "set", "payload": {3: 2 ** 70}})
    assert store.get_json("/doc") == '{"3":1180591620717411303424}'
    assert _ext.counters()["dumps_fallbacks"] > before


# ---- bad input: the binding's exception, state unchanged ----

@pytest.mark.parametrize("call,error,status", [
    (lambda s: s.dispatch(42), TypeError, None),
    (lambda s: s.dispatch({"type": "x"}, 1), TypeError, None),
    (lambda s: s.dispatch("x", {1, 2}), TypeError, None),
    (lambda s: s.dispatch("x", float("nan")), ValueError, None),
    (lambda s: s.dispatch("x", "\ud800"), UnicodeEncodeError, None),
    (lambda s: s.dispatch({"no": "type"}), NotActionError, Status.E_NOT_ACTION),
    (lambda s: s.dispatch_json("{"), JSONError, Status.E_JSON),
    (lambda s: s.dispatch_json('{"type":"x","type":"y"}'), JSONError, Status.E_JSON),
    (lambda s: s.get("no/slash"), ArgumentError, Status.E_ARGUMENT),
    (lambda s: s.get("/nothing"), NotFoundError, Status.E_NOT_FOUND),
    (lambda s: s.get(3), TypeError, None),
    (lambda s: s.reducer("count", lambda st, a: None), ArgumentError, Status.E_ARGUMENT),
    (lambda s: s.reducer("bad", lambda st, a: {1, 2}), TypeError, None),
    (lambda s: s.reducer("bad", lambda st, a: math.inf), ValueError, None),
    (lambda s: s.reducer("bad", lambda st, a: None), ValueError, None),
    (lambda s: s.remove_reducer("nothing"), NotFoundError, Status.E_NOT_FOUND),
    (lambda s: s.remove_middleware("nothing"), NotFoundError, Status.E_NOT_FOUND),
    (lambda s: s.subscribe(print, path="bad"), ArgumentError, Status.E_ARGUMENT),
    (lambda s: s.load_plugin("/no/such/plugin.so"), turnstate.TurnstateError, None),
    (lambda s: s.load_plugins("/no/such/folder"), turnstate.TurnstateError, None),
])
def test_bad_input_raises_the_bindings_exception_and_changes_nothing(counter, call, error, status):
    counter.dispatch("counter/add", 2)
    before = counter.state
    with pytest.raises(error) as raised:
        call(counter)
    if status is not None:
        assert raised.value.status == status and raised.value.message
    assert counter.state == before
    counter.dispatch("counter/add")  # still works
    assert counter.get("/count") == 3


def test_a_reducers_bad_answer_fails_the_dispatch_and_changes_nothing(counter):
    answers = iter([{1, 2}, float("nan"), "\ud800", object()])

    @counter.reducer("other", initial=0)
    def other(state, action):
        return next(answers) if action.type == "bad" else None

    before = counter.state
    for error in (TypeError, ValueError, UnicodeEncodeError, TypeError):
        with pytest.raises(error) as raised:
            counter.dispatch("bad")
        assert any("TS_E_REDUCER" in note for note in getattr(raised.value, "__notes__", ["TS_E_REDUCER"]))
        assert counter.state == before


def test_every_call_on_a_closed_store_raises_store_gone(counter):
    counter.close()
    for call in (lambda: counter.dispatch("x"), lambda: counter.dispatch_json('{"type":"x"}'),
                 lambda: counter.get(), lambda: counter.state, lambda: counter.get_json(),
                 lambda: counter.reducer("k", lambda s, a: 0), lambda: counter.remove_reducer("count"),
                 lambda: counter.subscribe(print), lambda: counter.add_middleware(lambda s, n, a: None),
                 lambda: counter.remove_middleware("x"), lambda: counter.load_plugin("/x.so"),
                 lambda: counter.load_plugins("/x")):
        with pytest.raises(StoreGoneError):
            call()


# ---- threads ----

def test_python_threads_and_a_store_without_plugins_keep_the_gil_safely(store):
    """A store without plugins keeps the GIL from its first callback to the
    end of the call: threads dispatching to it, and to each other's stores
    from listeners, lose nothing and do not deadlock."""
    other = Store()
    other.reducer("n", lambda s, a: s + 1, initial=0)
    store.reducer("n", lambda s, a: s + 1 if a.type == "add" else None, initial=0)
    store.subscribe(lambda s: other.dispatch("add"))
    per_thread, count = 500, 4

    def work():
        for _ in range(per_thread):
            store.dispatch("add")
            other.get("/n")

    threads = [threading.Thread(target=work) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
        assert not thread.is_alive()
    assert store.get("/n") == per_thread * count
    assert other.get("/n") == per_thread * count  # one "add" from each listener call
    other.close()


def test_a_callback_that_gives_up_the_gil_does_not_block_other_threads(store):
    """A listener that sleeps (giving the GIL up) while its dispatch holds
    the store: another thread's dispatch meanwhile waits for the store
    without holding the GIL, and both finish."""
    store.reducer("n", lambda s, a: s + 1 if a.type == "add" else None, initial=0)
    sleeping = threading.Event()

    def listener(s):
        if s.get("/n") == 1:
            sleeping.set()
            threading.Event().wait(0.2)  # gives the GIL up, the store still held

    store.subscribe(listener)
    first = threading.Thread(target=lambda: store.dispatch("add"))
    first.start()
    assert sleeping.wait(60)
    second = threading.Thread(target=lambda: store.dispatch("add"))
    second.start()
    for thread in (first, second):
        thread.join(60)
        assert not thread.is_alive(), "deadlock"
    assert store.get("/n") == 2


@needs_03
def test_a_patchs_values_become_read_only_when_it_is_returned(store):
    value = {"a": 1}

    @store.reducer("items", initial=[])
    def items(state, action):
        if action.type == "add":
            return Patch([{"op": "add", "path": "/-", "value": value}])
        return None

    store.dispatch("add")
    with pytest.raises(TypeError, match="read-only"):
        value["a"] = 2  # it is the store's now: changing it would leave the kept value behind the store's
    store.dispatch("look")
    assert store.get("/items") == [{"a": 1}] and stats(store)["parses"] == 1


def test_a_replaced_or_removed_reducer_lets_its_kept_value_go(store):
    store.reducer("doc", lambda state, action: None, initial={"big": list(range(1000))})
    store.dispatch("look")
    first = [ctx for ctx in store._keepalive if isinstance(ctx, _ext.Reducer)][-1]
    assert first.stats()["kept"] == (1 if V03 else 0)
    store.replace_reducer("doc", lambda state, action: None)
    assert first.stats()["kept"] == 0
    second = [ctx for ctx in store._keepalive if isinstance(ctx, _ext.Reducer)][-1]
    store.remove_reducer("doc")
    assert second.stats()["kept"] == 0 and store.get("/doc/big/999") == 999


# ---- patch reducers: big slices kept as trees ----

needs_patch_reducer = pytest.mark.skipif(not (V03 and _ext.has("add_patch_reducer")),
                                         reason="the loaded libturnstate has no ts_store_add_patch_reducer")


def big_doc():
    """Over 64 KiB, with a split array, a split object (escaped keys) and
    numbers that only the exact reader takes (an int beyond 64 bits)."""
    return {
        "items": [{"id": i, "title": "todo number %d" % i, "done": False} for i in range(2000)],
        "by_name": {"k%03d \"q\" \\ \u00e9 \u0001" % i: {"n": i, "text": "x" * 40} for i in range(200)},
        "huge": 2 ** 70,
        "small": [1.5, -0.0, None, True],
    }


@needs_patch_reducer
@pytest.mark.parametrize("start", ["initial", "store"])
def test_a_split_slice_that_the_kept_value_does_not_match_is_read_whole(store, start):
    # A patch whose value the kept copy cannot hold exactly (a tuple) is not
    # kept: the next call gets the slice, split into a tree since the patch,
    # with an id the reducer does not know, and must read all of it.
    seen = []

    def doc(state, action):
        seen.append(state)
        if action.type == "tuple":
            return Patch([{"op": "add", "path": "/items/-", "value": (1, 2)},
                          {"op": "replace", "path": "/by_name/k007 \"q\" \\ \u00e9 \u0001/n", "value": -7}])
        return None

    if start == "initial":
        store.reducer("doc", doc, initial=big_doc())
    else:  # the slice as the store was made with it: one text, parsed on the first call
        store = Store({"doc": big_doc()})
        store.reducer("doc", doc)
    store.dispatch("look")
    store.dispatch("tuple")
    before = stats(store)
    store.dispatch("look")
    after = stats(store)
    expected = big_doc()
    expected["items"].append([1, 2])
    expected["by_name"]["k007 \"q\" \\ \u00e9 \u0001"]["n"] = -7
    assert seen[-1] == expected and isinstance(seen[-1]["huge"], int)
    assert after["parses"] == before["parses"] + 1 and after["joins"] == before["joins"] + 1
    store.dispatch("look")  # kept again: no parse
    assert stats(store)["parses"] == after["parses"] and seen[-1] is seen[-2]
    assert store.get("/doc") == expected
    if start == "store":
        store.close()


@needs_patch_reducer
def test_a_big_slice_patched_by_identity_never_needs_its_text(store):
    @store.reducer("todos", initial=big_doc()["items"])
    def todos(state, action):
        if action.type == "toggle":
            new = list(state)
            new[action.payload] = {**state[action.payload], "done": not state[action.payload]["done"]}
            return new
        return state

    store.dispatch("look")  # the first call reads the slice (initial= made it)
    first = stats(store)
    for i in (3, 1999, 3):
        store.dispatch("toggle", i)
    counters = stats(store)
    assert first["parses"] == 1 and counters["patches"] == 3
    assert counters["parses"] == 1 and counters["joins"] == first["joins"]
    assert store.get("/todos/1999/done") is True and store.get("/todos/3/done") is False
