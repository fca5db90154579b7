"""Numbers the library holds that a float or an int cannot take from text:
read as decimal.Decimal with their exact value, and written back (issue 18,
14). Before, 1e400 was read as inf (and 1e-400 as 0.0), and a value read
that way could not be written back; an integer of more than 4300 digits
could not be read at all."""
import json
import math
from decimal import Decimal

import pytest

import turnstate
from turnstate import Store

HUGE_INT = "9" * 5000          # more digits than int() takes from text (sys.get_int_max_str_digits)

# (JSON text the library holds, the exact value Python reads)
OUT_OF_RANGE = [
    ("1e400", Decimal("1e400")),
    ("-1E+400", Decimal("-1e400")),
    ("1.5e309", Decimal("1.5e309")),
    ("1" * 400 + ".5", Decimal("1" * 400 + ".5")),      # no exponent, still beyond a float
    ("1e-400", Decimal("1e-400")),                     # not zero, but a float would make it 0.0
    ("-2.5E-999", Decimal("-2.5e-999")),
    (HUGE_INT, Decimal(HUGE_INT)),
]
IN_RANGE = [                    # what a float or an int holds stays one
    ("1.5", 1.5), ("1e300", 1e300), ("-1.7976931348623157e308", -1.7976931348623157e308),
    ("5e-324", 5e-324), ("0e-400", 0.0), ("-0.0", -0.0), ("12345678901234567890123", 12345678901234567890123),
]


def _holding(value_text):
    """A store whose "v" slice is set from the payload of a "set" action (JSON text)."""
    store = Store(initial={"v": 0})
    store.reducer("v", lambda state, action: action.payload if action.type == "set" else None)
    store.dispatch_json('{"type":"set","payload":%s}' % value_text)
    return store


@pytest.mark.parametrize("text,exact", OUT_OF_RANGE, ids=lambda v: v[:20] if isinstance(v, str) else "")
def test_a_number_beyond_float_and_int_is_read_exactly_and_written_back(text, exact):
    with _holding("[%s]" % text) as store:
        value = store.get("/v/0")
        assert isinstance(value, Decimal) and value == exact
        assert not (isinstance(value, float) and math.isinf(value))
        # Written back unchanged: into the state by a reducer, and as a new state.
        store.reducer("copy", lambda state, action: store_value if action.type == "copy" else None, initial=[])
        store_value = store.state["v"]
        store.dispatch("copy")
        assert store.get("/copy") == [exact]
        assert Decimal(store.get_json("/copy/0")) == exact       # the library holds the exact number
        with Store(initial=store.state) as again:
            assert again.state == {"v": [exact], "copy": [exact]}


@pytest.mark.parametrize("text,exact", OUT_OF_RANGE, ids=lambda v: v[:20] if isinstance(v, str) else "")
def test_a_reducer_whose_slice_is_such_a_number_gets_it_exactly(text, exact):
    seen = []
    with _holding(text) as store:                           # the slice "v" is the number itself
        store.replace_reducer("v", lambda state, action: seen.append(state) or state)
        assert seen and all(isinstance(state, Decimal) and state == exact for state in seen)
        assert store.get("/v") == exact


@pytest.mark.parametrize("text,expected", IN_RANGE, ids=lambda v: v[:20] if isinstance(v, str) else "")
def test_numbers_a_float_or_an_int_holds_stay_float_or_int(text, expected):
    with _holding(text) as store:
        value = store.get("/v")
        assert type(value) is type(expected) and value == expected
        assert math.copysign(1, value) == math.copysign(1, expected)


def test_a_reducer_and_a_middleware_see_the_exact_value():
    seen = []
    with Store(initial={"n": 0}) as store:
        store.add_middleware(lambda s, nxt, action: (seen.append(("middleware", action.payload)), nxt(action)))

        @store.reducer("n")
        def n(state, action):
            if action.type == "set":
                seen.append(("reducer", action.payload, action.data["payload"]))
                return action.payload
            if action.type == "double":
                seen.append(("state", state))
                return state * 2
            return None

        store.dispatch_json('{"type":"set","payload":1e400}')
        store.dispatch("double")
        assert seen == [("middleware", Decimal("1e400")), ("reducer", Decimal("1e400"), Decimal("1e400")),
                        ("middleware", None), ("state", Decimal("1e400"))]
        assert store.get("/n") == Decimal("2e400")


def test_a_decimal_is_written_as_its_exact_text():
    values = {"price": Decimal("19.99"), "tiny": Decimal("1e-400"), "nested": [{"d": Decimal("-0")}],
              "plain": 1.25, "tuple": (Decimal("1"), "x"), 3: "int key"}
    with Store(initial=values) as store:
        assert json.loads(store.get_json("/price"), parse_float=Decimal) == Decimal("19.99")
        assert store.get_json("/tiny") == "1E-400"
        assert store.get("/nested/0/d") == 0
        assert store.get("/plain") == 1.25
        assert store.get("/tuple") == [1, "x"]
        assert store.get("/3") == "int key"                 # keys as json.dumps converts them
        store.dispatch("set", Decimal("1e400"))             # a payload, too
        store.dispatch({"type": "set", "payload": [Decimal("1e400")]})


@pytest.mark.parametrize("bad", [Decimal("NaN"), Decimal("-Infinity"), Decimal("sNaN")], ids=str)
def test_a_decimal_json_cannot_hold_is_refused_as_a_float_one_is(bad):
    with pytest.raises(ValueError, match="not JSON compliant"):
        Store(initial={"x": [bad]})
    with Store(initial={"a": 0}) as store:
        store.reducer("a", lambda state, action: {"x": bad} if action.type == "set" else None)
        with pytest.raises(ValueError, match="not JSON compliant"):
            store.dispatch("set")
        assert store.state == {"a": 0}


def test_what_json_cannot_hold_beside_a_decimal_is_still_refused():
    with pytest.raises(TypeError, match="set"):
        Store(initial={"d": Decimal(1), "x": {1, 2}})
    with pytest.raises(TypeError, match="keys must be"):
        Store(initial={"d": Decimal(1), "x": {(1, 2): 3}})
    loop = [Decimal(1)]
    loop.append(loop)
    with pytest.raises(ValueError, match="[Cc]ircular"):
        Store(initial={"x": loop})
