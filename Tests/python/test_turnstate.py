"""Tests of the Turnstate C API from Python (ctypes, standard library only).

Run:  TURNSTATE_LIB=build/lib/libturnstate.so python3 -m unittest discover -s Tests/python -v
(or `make test-python`). The binding lives in turnstate_ctypes.py beside this file.
"""

import ctypes
import json
import threading
import time
import unittest
from ctypes import byref, c_uint64, c_void_p

from turnstate_ctypes import (LISTENER_FN, MIDDLEWARE_FN, REDUCER_FN, TS_E_ARGUMENT, TS_E_JSON, TS_E_MISUSE,
                              TS_E_NOT_ACTION, TS_E_NOT_FOUND, TS_E_REDUCER, TS_E_REENTRANT, TS_E_REJECTED,
                              TS_MAX_DEPTH, TS_OK, Store, TsStoreApi, TurnstateError, alloc_text, header_version,
                              last_error, lib, status_name, take_text)


def counter_reducer(slice_json, action):
    """A reducer in Python: the init call gets slice None and returns the first value."""
    if slice_json is None:
        return "0"
    if action.type == "counter/add":
        return str(int(slice_json) + int(action.payload))
    return None  # unchanged


def state(store, pointer=None):
    return json.loads(store.get_state(pointer))


class VersionAndStatusTests(unittest.TestCase):
    def test_version_matches_the_header(self):
        major, minor, patch = header_version()
        self.assertEqual(lib.ts_version_number(), major * 10000 + minor * 100 + patch)
        self.assertEqual(lib.ts_version_string(), b"%d.%d.%d" % (major, minor, patch))

    def test_status_names(self):
        names = {0: "TS_OK", -1: "TS_E_ARGUMENT", -2: "TS_E_JSON", -3: "TS_E_NOT_ACTION", -4: "TS_E_REDUCER",
                 -5: "TS_E_REENTRANT", -6: "TS_E_PLUGIN", -7: "TS_E_IO", -8: "TS_E_NOMEM", -9: "TS_E_NOT_FOUND",
                 -10: "TS_E_REJECTED", -11: "TS_E_STORE_GONE", -12: "TS_E_ABI", -13: "TS_E_UNKNOWN_ACTION",
                 -14: "TS_E_MISUSE"}
        for status, name in names.items():
            self.assertEqual(status_name(status), name)
        for unknown in (1, -15, -100, 2**31 - 1, -2**31):
            self.assertEqual(status_name(unknown), "TS_E_UNKNOWN")

    def test_free_is_null_safe(self):
        lib.ts_free(None)


class MemoryTests(unittest.TestCase):
    """ts_alloc / ts_strdup: memory that the store takes over, without libc."""

    def test_alloc_and_strdup(self):
        address = lib.ts_alloc(16)
        self.assertTrue(address)
        ctypes.memset(address, 0x41, 16)
        lib.ts_free(address)
        zero = lib.ts_alloc(0)
        self.assertTrue(zero)  # never NULL for 0 bytes: NULL means failure
        lib.ts_free(zero)
        copy = lib.ts_strdup("café".encode())
        self.assertEqual(ctypes.string_at(copy), "café".encode())
        lib.ts_free(copy)
        self.assertEqual(take_text(alloc_text('{"a": [1]}')), '{"a": [1]}')

    def test_failures_set_the_last_error(self):
        self.assertIsNone(lib.ts_alloc(2**62))
        self.assertIn("ts_alloc: no memory for %d bytes" % 2**62, last_error())
        self.assertIn("TS_E_NOMEM", last_error())
        self.assertIsNone(lib.ts_strdup(None))
        self.assertIn("ts_strdup: text is NULL", last_error())


class RawApiTests(unittest.TestCase):
    """The C API used directly, exactly as a C program would (no Store class)."""

    def test_create_dispatch_get_state_with_a_python_reducer(self):
        calls = []

        def reducer(slice_json, action, ctx):
            action = action.contents
            calls.append((slice_json, action.type, action.payload, action.json))
            if slice_json is None:
                value = 0
            elif action.type == b"counter/add":
                value = int(slice_json) + int(action.payload)
            else:
                return None
            # The store takes over what a reducer returns: ts_strdup memory
            # (or ts_alloc, or the C library's malloc).
            return lib.ts_strdup(str(value).encode())

        reducer_fn = REDUCER_FN(reducer)  # kept alive until the store is destroyed
        store = c_void_p()
        self.assertEqual(lib.ts_store_create(b'{"title": "demo"}', byref(store)), TS_OK)
        self.assertTrue(store.value)
        try:
            self.assertEqual(lib.ts_store_add_reducer(store, b"counter", reducer_fn, None), TS_OK)
            self.assertEqual(calls, [(None, b"@@turnstate/init", None, calls[0][3])])
            self.assertEqual(json.loads(calls[0][3]), {"type": "@@turnstate/init"})

            self.assertEqual(lib.ts_store_dispatch(store, b'{"type": "counter/add", "payload": 5}'), TS_OK)
            self.assertEqual(calls[-1], (b"0", b"counter/add", b"5", b'{"type": "counter/add", "payload": 5}'))
            self.assertEqual(lib.ts_store_dispatch(store, b'{"type":"counter/add","payload":-2}'), TS_OK)
            self.assertEqual(lib.ts_store_dispatch(store, b'{"type":"other"}'), TS_OK)  # reducer: unchanged

            out = c_void_p()
            self.assertEqual(lib.ts_store_get_state(store, None, byref(out)), TS_OK)
            self.assertEqual(take_text(out), '{"title":"demo","counter":3}')  # minified, keys in order
            self.assertEqual(lib.ts_store_get_state(store, b"", byref(out)), TS_OK)
            self.assertEqual(take_text(out), '{"title":"demo","counter":3}')
            self.assertEqual(lib.ts_store_get_state(store, b"/counter", byref(out)), TS_OK)
            self.assertEqual(take_text(out), "3")
        finally:
            lib.ts_store_destroy(store)

    def test_payload_views(self):
        seen = []

        def reducer(slice_json, action):
            if slice_json is None:
                return "null"
            seen.append((action.type, action.payload))
            return None

        with Store() as store:
            store.add_reducer("x", reducer)
            store.dispatch('{"type":"a"}')
            store.dispatch('{"type":"b","payload":null}')
            store.dispatch('{"payload": { "k" : [1, 2] }, "type": "c\\/d\\u00e9", "meta": 1}')
        self.assertEqual(seen, [("a", None), ("b", "null"), ("c/d\u00e9", '{"k":[1,2]}')])

    def test_listener_reads_the_state_through_its_store_argument(self):
        seen = []

        def listener(store_pointer, ctx):
            out = c_void_p()
            status = lib.ts_store_get_state(store_pointer, b"/counter", byref(out))
            seen.append((status, take_text(out), ctx))

        listener_fn = LISTENER_FN(listener)
        with Store() as store:
            store.add_reducer("counter", counter_reducer)
            token = c_uint64()
            self.assertEqual(lib.ts_store_subscribe(store.handle, b"/counter", listener_fn, 1234, byref(token)),
                             TS_OK)
            store.dispatch('{"type":"counter/add","payload":7}')
            self.assertEqual(seen, [(TS_OK, "7", 1234)])


class ReducerTests(unittest.TestCase):
    def test_reducers_own_keys_and_run_in_order(self):
        order = []

        def make(key):
            def reducer(slice_json, action):
                order.append(key)
                return '"%s-init"' % key if slice_json is None else None
            return reducer

        with Store('{"keep": true}') as store:
            store.add_reducer("b", make("b"))
            store.add_reducer("a", make("a"))
            del order[:]
            store.dispatch('{"type":"any"}')
            self.assertEqual(order, ["b", "a"])
            self.assertEqual(state(store), {"keep": True, "b": "b-init", "a": "a-init"})

    def test_existing_key_is_not_initialized(self):
        with Store('{"counter": 41}') as store:
            store.add_reducer("counter", counter_reducer)
            store.dispatch('{"type":"counter/add","payload":1}')
            self.assertEqual(store.get_state("/counter"), "42")

    def test_a_key_takes_one_reducer(self):
        with Store() as store:
            store.add_reducer("counter", counter_reducer)
            with self.assertRaises(TurnstateError) as caught:
                store.add_reducer("counter", counter_reducer)
            self.assertEqual(caught.exception.status, TS_E_ARGUMENT)
            self.assertIn("counter", caught.exception.message)

    def test_init_returning_null_or_invalid_json_adds_nothing(self):
        with Store() as store:
            for result in (None, "{oops", ""):
                with self.assertRaises(TurnstateError) as caught:
                    store.add_reducer("bad", lambda slice_json, action, result=result: result)
                self.assertEqual(caught.exception.status, TS_E_REDUCER, result)
            self.assertEqual(store.get_state(), "{}")
            store.add_reducer("bad", lambda slice_json, action: "1" if slice_json is None else None)
            self.assertEqual(store.get_state(), '{"bad":1}')

    def test_invalid_reducer_output_leaves_the_state_exactly_as_it_was(self):
        notified = []

        def breaking(slice_json, action):
            if slice_json is None:
                return "[]"
            return "[1,]" if action.type == "boom" else None

        with Store() as store:
            store.add_reducer("counter", counter_reducer)   # runs first and succeeds
            store.add_reducer("list", breaking)
            store.subscribe(None, lambda s: notified.append(1))
            status = lib.ts_store_dispatch(store.handle, b'{"type":"boom"}')
            self.assertEqual(status, TS_E_REDUCER, last_error())
            self.assertNotEqual(last_error(), "")
            store.dispatch('{"type":"counter/add","payload":2}')
            notified.clear()
            # counter's reducer would succeed for this action, but "list" fails: nothing applies.
            status = lib.ts_store_dispatch(store.handle, b'{"type":"boom","payload":100}')
            self.assertEqual(status, TS_E_REDUCER)
            self.assertEqual(state(store), {"counter": 2, "list": []})
            self.assertEqual(notified, [])

    def test_python_exception_in_a_reducer_fails_the_dispatch(self):
        def raising(slice_json, action):
            if slice_json is None:
                return "0"
            raise ValueError("bad reducer: caf\u00e9 \u2615")

        with Store() as store:
            store.add_reducer("x", raising)
            with self.assertRaises(TurnstateError) as caught:
                store.dispatch('{"type":"a"}')
            self.assertEqual(caught.exception.status, TS_E_REDUCER)
            self.assertIsInstance(caught.exception.__cause__, ValueError)
            # The exception reaches the error text (ts_reducer_fail), not
            # "returned invalid JSON".
            self.assertEqual(caught.exception.message,
                             'the reducer for "x" failed for "a": ValueError: bad reducer: caf\u00e9 \u2615')
            self.assertEqual(last_error(), caught.exception.message)
            self.assertEqual(store.get_state(), '{"x":0}')

    def test_python_exception_in_a_reducers_init_call_is_its_reason(self):
        def no_start(slice_json, action):
            raise KeyError("settings")

        with Store() as store:
            with self.assertRaises(TurnstateError) as caught:
                store.add_reducer("settings", no_start)
            self.assertEqual(caught.exception.status, TS_E_REDUCER)
            self.assertIsInstance(caught.exception.__cause__, KeyError)
            self.assertEqual(caught.exception.message,
                             'the reducer for "settings" failed for "@@turnstate/init": KeyError: \'settings\'')
            self.assertEqual(store.get_state(), "{}")

    def test_reducer_fail_through_the_raw_api(self):
        statuses = []

        def reducer(slice_json, action, ctx):
            if slice_json is None:
                return lib.ts_strdup(b"0")
            statuses.append(lib.ts_reducer_fail(b"full"))
            statuses.append(lib.ts_reducer_fail(b"ignored: the first reason stands"))
            return lib.ts_strdup(b"1")  # freed and ignored: the failure holds

        reducer_fn = REDUCER_FN(reducer)
        store = c_void_p()
        self.assertEqual(lib.ts_store_create(None, byref(store)), TS_OK)
        try:
            self.assertEqual(lib.ts_store_add_reducer(store, b"n", reducer_fn, None), TS_OK)
            self.assertEqual(lib.ts_store_dispatch(store, b'{"type":"inc"}'), TS_E_REDUCER)
            self.assertEqual(statuses, [TS_OK, TS_OK])
            self.assertEqual(last_error(), 'the reducer for "n" failed for "inc": full')
            out = c_void_p()
            self.assertEqual(lib.ts_store_get_state(store, None, byref(out)), TS_OK)
            self.assertEqual(take_text(out), '{"n":0}')
        finally:
            lib.ts_store_destroy(store)

    def test_reducer_fail_outside_a_reducer_is_misuse(self):
        self.assertEqual(lib.ts_reducer_fail(b"not in a reducer"), TS_E_MISUSE)
        self.assertIn("ts_reducer_fail: called outside a reducer", last_error())

    def test_a_reducer_may_not_call_back_into_its_store(self):
        inner = []

        with Store() as store:
            def impure(slice_json, action):
                if slice_json is None:
                    return "0"
                out = c_void_p()
                inner.append(("get_state", lib.ts_store_get_state(store.handle, None, byref(out))))
                take_text(out)
                inner.append(("dispatch", lib.ts_store_dispatch(store.handle, b'{"type":"x"}')))
                return "1"

            store.add_reducer("n", impure)
            status = lib.ts_store_dispatch(store.handle, b'{"type":"go"}')
            self.assertEqual(status, TS_E_REENTRANT)
            self.assertEqual(inner, [("get_state", TS_E_REENTRANT), ("dispatch", TS_E_REENTRANT)])
            self.assertEqual(store.get_state(), '{"n":0}')


class ListenerTests(unittest.TestCase):
    def setUp(self):
        self.store = Store('{"other": 0}')
        self.store.add_reducer("counter", counter_reducer)

        def other(slice_json, action):
            if action.type == "other/set":
                return action.payload
            return None
        self.store.add_reducer("other", other)

    def tearDown(self):
        self.store.destroy()

    def test_without_pointer_runs_after_every_dispatch(self):
        calls = []
        self.store.subscribe(None, lambda s: calls.append(s.get_state()))
        self.store.dispatch('{"type":"counter/add","payload":1}')
        self.store.dispatch('{"type":"nothing/changes"}')
        self.assertEqual(calls, ['{"other":0,"counter":1}'] * 2)

    def test_whole_state_pointer_runs_only_when_it_changed(self):
        calls = []
        self.store.subscribe("", lambda s: calls.append(s.get_state()))
        self.store.dispatch('{"type":"nothing/changes"}')
        self.assertEqual(calls, [])
        self.store.dispatch('{"type":"other/set","payload":5}')
        self.assertEqual(calls, ['{"other":5,"counter":0}'])
        self.store.dispatch('{"type":"other/set","payload":5}')  # same value: no change
        self.assertEqual(len(calls), 1)

    def test_pointer_runs_only_when_its_value_changed(self):
        counter_calls, other_calls = [], []
        token = self.store.subscribe("/counter", lambda s: counter_calls.append(s.get_state("/counter")))
        other_token = self.store.subscribe("/other", lambda s: other_calls.append(s.get_state("/other")))
        self.assertNotEqual(token, other_token)
        self.store.dispatch('{"type":"other/set","payload":{"a":[1]}}')
        self.assertEqual((counter_calls, other_calls), ([], ['{"a":[1]}']))
        self.store.dispatch('{"type":"counter/add","payload":3}')
        self.store.dispatch('{"type":"counter/add","payload":0}')  # same value again
        self.store.dispatch('{"type":"other/set","payload":{"a":[1]}}')  # equal value, rebuilt
        self.assertEqual((counter_calls, other_calls), (["3"], ['{"a":[1]}']))
        self.store.unsubscribe(token)
        self.store.unsubscribe(token)  # idempotent
        self.store.unsubscribe(987654321)  # unknown token: not an error
        self.store.dispatch('{"type":"counter/add","payload":1}')
        self.assertEqual(counter_calls, ["3"])
        self.assertEqual(self.store.get_state("/counter"), "4")

    def test_a_value_that_appears_or_disappears_is_a_change(self):
        def items(slice_json, action):
            if slice_json is None:
                return "[]"
            values = json.loads(slice_json)
            if action.type == "push":
                return json.dumps(values + [json.loads(action.payload)])
            if action.type == "pop":
                return json.dumps(values[:-1])
            return None

        calls = []
        self.store.add_reducer("items", items)
        self.store.subscribe("/items/1", lambda s: calls.append(len(json.loads(s.get_state("/items")))))
        self.store.dispatch('{"type":"push","payload":"a"}')
        self.assertEqual(calls, [])
        self.store.dispatch('{"type":"push","payload":"b"}')  # /items/1 appears
        self.store.dispatch('{"type":"push","payload":"c"}')  # /items/1 is still "b"
        self.store.dispatch('{"type":"pop"}')
        self.assertEqual(calls, [2])
        self.store.dispatch('{"type":"pop"}')                 # /items/1 disappears
        self.assertEqual(calls, [2, 1])

    def test_the_listener_list_is_fixed_when_notifications_start(self):
        log = []
        tokens = {}

        def first(store):
            log.append("first")
            if "late" not in tokens:
                tokens["late"] = store.subscribe(None, lambda s: log.append("late"))
                store.unsubscribe(tokens["second"])

        tokens["first"] = self.store.subscribe(None, first)
        tokens["second"] = self.store.subscribe(None, lambda s: log.append("second"))
        self.store.dispatch('{"type":"a"}')
        self.assertEqual(log, ["first", "second"])  # added: not yet; removed: still called
        del log[:]
        self.store.dispatch('{"type":"b"}')
        self.assertEqual(log, ["first", "late"])
        self.assertEqual(len(set(tokens.values())), 3)

    def test_a_swallowed_action_calls_no_listener(self):
        calls = []
        self.store.subscribe(None, lambda s: calls.append(1))
        self.store.add_middleware("swallow", lambda api, next_fn, action: TS_OK)
        self.assertEqual(lib.ts_store_dispatch(self.store.handle, b'{"type":"counter/add","payload":1}'), TS_OK)
        self.assertEqual(calls, [])
        self.assertEqual(self.store.get_state("/counter"), "0")

    def test_a_listener_may_dispatch(self):
        log = []

        def chain(store):
            value = int(store.get_state("/counter"))
            log.append(("chain", value))
            if value < 3:
                store.dispatch('{"type":"counter/add","payload":1}')  # runs at once

        self.store.subscribe(None, chain)
        self.store.subscribe("/counter", lambda s: log.append(("watch", s.get_state("/counter"))))
        self.store.dispatch('{"type":"counter/add","payload":1}')
        self.assertEqual(self.store.get_state("/counter"), "3")
        # The nested dispatches told "watch" about 3 already: the outer ones,
        # which saw no change since then, do not call it again.
        self.assertEqual(log, [("chain", 1), ("chain", 2), ("chain", 3), ("watch", "3")])

    def test_escaped_pointer_tokens(self):
        calls = []
        with Store('{"a/b": {"~k": 1}}') as store:
            store.add_reducer("a/b", lambda s, a: None if s is not None else "{}")
            self.assertEqual(store.get_state("/a~1b/~0k"), "1")
            store.subscribe("/a~1b/~0k", lambda s: calls.append(1))
            store.dispatch('{"type":"x"}')
            self.assertEqual(calls, [])

    def test_bad_pointers(self):
        with self.assertRaises(TurnstateError) as caught:
            self.store.get_state("/missing/deeper")
        self.assertEqual(caught.exception.status, TS_E_NOT_FOUND)
        self.assertIn("missing", caught.exception.message)
        with self.assertRaises(TurnstateError) as caught:
            self.store.get_state("counter")  # no leading "/"
        self.assertEqual(caught.exception.status, TS_E_ARGUMENT)
        with self.assertRaises(TurnstateError) as caught:
            self.store.subscribe("counter", lambda s: None)
        self.assertEqual(caught.exception.status, TS_E_ARGUMENT)
        token = c_uint64(77)
        listener = LISTENER_FN(lambda s, c: None)
        self.assertEqual(lib.ts_store_subscribe(self.store.handle, b"/x~2", listener, None, byref(token)),
                         TS_E_ARGUMENT)
        self.assertEqual(token.value, 77)
        out = c_void_p(0x77)
        self.assertEqual(lib.ts_store_get_state(self.store.handle, b"/nope", byref(out)), TS_E_NOT_FOUND)
        self.assertEqual(out.value, 0x77)


class MiddlewareTests(unittest.TestCase):
    def setUp(self):
        self.store = Store()
        self.reduced = []

        def counter(slice_json, action):
            if slice_json is not None:
                self.reduced.append(action.json)
            return counter_reducer(slice_json, action)
        self.store.add_reducer("counter", counter)

    def tearDown(self):
        self.store.destroy()

    def test_middleware_passes_a_changed_action_on(self):
        def doubler(api, next_fn, action):
            self.assertGreaterEqual(api.contents.struct_size, ctypes.sizeof(TsStoreApi))
            if action.contents.type == b"counter/add-ten":
                return next_fn(b'{"type":"counter/add","payload":10}')
            return next_fn(action.contents.json)

        self.store.add_middleware("doubler", doubler)
        self.store.dispatch('{"type":"counter/add-ten"}')
        self.store.dispatch('{"type":"counter/add","payload":1}')
        self.assertEqual(self.reduced, ['{"type":"counter/add","payload":10}', '{"type":"counter/add","payload":1}'])
        self.assertEqual(self.store.get_state("/counter"), "11")

    def test_middleware_refuses_with_a_message(self):
        notified = []
        self.store.subscribe(None, lambda s: notified.append(1))

        def guard(api, next_fn, action):
            if action.contents.type == b"counter/add" and int(action.contents.payload) < 0:
                return api.contents.fail(TS_E_REJECTED, b'"payload" must not be negative')
            return next_fn(action.contents.json)

        self.store.add_middleware("guard", guard)
        status = lib.ts_store_dispatch(self.store.handle, b'{"type":"counter/add","payload":-5}')
        self.assertEqual(status, TS_E_REJECTED)
        self.assertEqual(status_name(status), "TS_E_REJECTED")
        self.assertIn('"payload" must not be negative', last_error())
        self.assertEqual(self.reduced, [])
        self.assertEqual(notified, [])
        self.assertEqual(self.store.get_state("/counter"), "0")
        # A later success does not clear the message.
        self.store.dispatch('{"type":"counter/add","payload":5}')
        self.assertIn('"payload" must not be negative', last_error())
        self.assertEqual(self.store.get_state("/counter"), "5")

    def test_middleware_dispatches_through_the_table(self):
        def thunk(api, next_fn, action):
            if action.contents.type != b"counter/add-twice":
                return next_fn(action.contents.json)
            # Read the state through the table, free it with the table's free.
            out = c_void_p()
            status = api.contents.get_state(b"/counter", byref(out))
            if status != TS_OK:
                return status
            before = int(ctypes.string_at(out.value))
            api.contents.free(out.value)
            amount = int(action.contents.payload)
            for _ in range(2):
                status = api.contents.dispatch(b'{"type":"counter/add","payload":%d}' % amount)
                if status != TS_OK:
                    return status
            self.assertEqual(self.store.get_state("/counter"), str(before + 2 * amount))
            return TS_OK  # swallowed: not passed on

        self.store.add_middleware("thunk", thunk)
        self.store.dispatch('{"type":"counter/add","payload":1}')
        self.store.dispatch('{"type":"counter/add-twice","payload":4}')
        self.assertEqual(self.store.get_state("/counter"), "9")
        self.assertEqual(self.reduced, ['{"type":"counter/add","payload":1}',
                                        '{"type":"counter/add","payload":4}',
                                        '{"type":"counter/add","payload":4}'])

    def test_replace_state_through_the_table(self):
        calls = []
        self.store.subscribe("/counter", lambda s: calls.append(s.get_state()))
        statuses = []

        def restore(api, next_fn, action):
            if action.contents.type == b"restore":
                statuses.append(api.contents.replace_state(action.contents.payload))
                return TS_OK  # handled here (a failure was recorded in statuses)
            if action.contents.type == b"restore_duplicate":  # no action can carry a key twice
                statuses.append(api.contents.replace_state(b'{"a":1,"b":{"c":1,"\\u0063":2}}'))
                return TS_OK
            return next_fn(action.contents.json)

        self.store.add_middleware("restore", restore)
        self.store.dispatch('{"type":"counter/add","payload":5}')
        self.store.dispatch('{"type":"restore","payload":{"counter":9,"saved":[1]}}')
        self.assertEqual(self.store.get_state(), '{"counter":9,"saved":[1]}')
        # A key that has a reducer but is missing gets its first value again.
        self.store.dispatch('{"type":"restore","payload":{"other":true}}')
        self.assertEqual(self.store.get_state(), '{"other":true,"counter":0}')
        self.assertEqual(calls, ['{"counter":5}', '{"counter":9,"saved":[1]}', '{"other":true,"counter":0}'])
        # Atomic: refused states change nothing and call no listener.
        self.store.dispatch('{"type":"restore","payload":[1]}')
        self.store.dispatch('{"type":"restore_duplicate"}')
        self.assertIn('duplicate key "c" at byte 18', last_error())
        self.assertEqual(statuses, [TS_OK, TS_OK, TS_E_JSON, TS_E_JSON])
        # An action with a key twice never reaches the middleware.
        self.assertEqual(lib.ts_store_dispatch(self.store.handle, b'{"type":"restore","payload":{"a":1,"a":2}}'),
                         TS_E_JSON)
        self.assertIn('duplicate key "a" at byte 35', last_error())
        self.assertEqual(len(statuses), 4)
        self.assertEqual(self.store.get_state(), '{"other":true,"counter":0}')
        self.assertEqual(len(calls), 3)
        self.assertEqual(self.reduced, ['{"type":"counter/add","payload":5}'])  # no reducer call for restores

    def test_a_kept_table_dispatches_later_from_another_thread(self):
        kept = []

        def keeper(api, next_fn, action):
            if not kept:
                kept.append(api)
            return next_fn(action.contents.json)

        self.store.add_middleware("keeper", keeper)
        self.store.dispatch('{"type":"counter/add","payload":1}')
        api = kept[0]
        results = []
        thread = threading.Thread(target=lambda: results.append(
            api.contents.dispatch(b'{"type":"counter/add","payload":2}')))
        thread.start()
        thread.join()
        self.assertEqual(results, [TS_OK])
        self.assertEqual(self.store.get_state("/counter"), "3")

    def test_middleware_runs_in_order_and_sees_the_rest_of_the_dispatch(self):
        log = []

        def make(name):
            def middleware(api, next_fn, action):
                log.append(name + ">")
                status = next_fn(action.contents.json)
                log.append("<%s %s" % (name, status_name(status)))
                return status
            return middleware

        def breaking(slice_json, action):
            if slice_json is None:
                return "0"
            return "not json" if action.type == "break" else None

        self.store.add_reducer("fragile", breaking)
        self.store.add_middleware("first", make("first"))
        self.store.add_middleware("second", make("second"))
        self.store.dispatch('{"type":"ok"}')
        self.assertEqual(log, ["first>", "second>", "<second TS_OK", "<first TS_OK"])
        del log[:]
        status = lib.ts_store_dispatch(self.store.handle, b'{"type":"break"}')
        self.assertEqual(status, TS_E_REDUCER)
        self.assertEqual(log, ["first>", "second>", "<second TS_E_REDUCER", "<first TS_E_REDUCER"])

    def test_next_with_invalid_json(self):
        statuses = []

        def broken(api, next_fn, action):
            statuses.append(next_fn(b'{"type":'))
            statuses.append(next_fn(b'{"kind":"x"}'))
            return statuses[0]

        self.store.add_middleware("broken", broken)
        status = lib.ts_store_dispatch(self.store.handle, b'{"type":"x"}')
        self.assertEqual(statuses, [TS_E_JSON, TS_E_NOT_ACTION])
        self.assertEqual(status, TS_E_JSON)
        self.assertEqual(self.reduced, [])

    def test_python_exception_in_a_middleware_refuses_the_action(self):
        def raising(api, next_fn, action):
            raise RuntimeError("no")

        self.store.add_middleware("raising", raising)
        with self.assertRaises(TurnstateError) as caught:
            self.store.dispatch('{"type":"counter/add","payload":1}')
        self.assertEqual(caught.exception.status, TS_E_REJECTED)
        self.assertIsInstance(caught.exception.__cause__, RuntimeError)
        self.assertEqual(self.store.get_state("/counter"), "0")


class ErrorTests(unittest.TestCase):
    def setUp(self):
        self.store = Store()
        self.store.add_reducer("counter", counter_reducer)

    def tearDown(self):
        self.store.destroy()

    def assertDispatchFails(self, action, expected):
        status = lib.ts_store_dispatch(self.store.handle, action)
        self.assertEqual(status_name(status), status_name(expected), (action, last_error()))
        self.assertNotEqual(last_error(), "", action)
        self.assertEqual(self.store.get_state(), '{"counter":0}')

    def test_invalid_json_is_refused(self):
        for action in (b'{"type":', b'{"type":"a"} x', b'{"type":"a",}', b"{'type':'a'}", b'{"type":"\xff"}',
                       b'{"type":"a","payload":01}', b'{"type":"a","payload":NaN}', b"", b" ",
                       b'{"type":"a","payload":{"x":{"y":1,"y":2}}}', b'{"type":"a","typ\\u0065":"b"}'):
            self.assertDispatchFails(action, TS_E_JSON)

    def test_nesting_deeper_than_max_depth_is_refused(self):
        def action(depth):  # the action object itself is one level
            inner = depth - 1
            return b'{"type":"deep","payload":' + b"[" * inner + b"]" * inner + b"}"

        self.assertEqual(lib.ts_store_dispatch(self.store.handle, action(TS_MAX_DEPTH)), TS_OK, last_error())
        self.assertDispatchFails(action(TS_MAX_DEPTH + 1), TS_E_JSON)
        self.assertDispatchFails(action(100000), TS_E_JSON)

    def test_valid_json_that_is_not_an_action(self):
        for action in (b"[1]", b'"counter/add"', b"null", b"{}", b'{"type":""}', b'{"type":5}',
                       b'{"type":null}', b'{"payload":1}', b'{"Type":"x"}'):
            self.assertDispatchFails(action, TS_E_NOT_ACTION)

    def test_null_arguments(self):
        out = c_void_p()
        token = c_uint64()
        nothing = REDUCER_FN(lambda s, a, c: None)
        listener = LISTENER_FN(lambda s, c: None)
        middleware = MIDDLEWARE_FN(lambda api, n, a, c: TS_OK)
        handle = self.store.handle
        # A CFUNCTYPE called with no argument is a NULL function pointer.
        calls = {
            "create(out NULL)": lib.ts_store_create(b"{}", None),
            "dispatch(NULL store)": lib.ts_store_dispatch(None, b'{"type":"a"}'),
            "dispatch(NULL action)": lib.ts_store_dispatch(handle, None),
            "get_state(NULL store)": lib.ts_store_get_state(None, None, byref(out)),
            "get_state(NULL out)": lib.ts_store_get_state(handle, None, None),
            "add_reducer(NULL store)": lib.ts_store_add_reducer(None, b"k", nothing, None),
            "add_reducer(NULL key)": lib.ts_store_add_reducer(handle, None, nothing, None),
            "add_reducer(NULL fn)": lib.ts_store_add_reducer(handle, b"k", REDUCER_FN(), None),
            "add_reducer(bad UTF-8 key)": lib.ts_store_add_reducer(handle, b"\xc3(", nothing, None),
            "subscribe(NULL store)": lib.ts_store_subscribe(None, None, listener, None, byref(token)),
            "subscribe(NULL fn)": lib.ts_store_subscribe(handle, None, LISTENER_FN(), None, byref(token)),
            "subscribe(NULL token)": lib.ts_store_subscribe(handle, None, listener, None, None),
            "unsubscribe(NULL store)": lib.ts_store_unsubscribe(None, 1),
            "add_middleware(NULL store)": lib.ts_store_add_middleware(None, b"m", middleware, None),
            "add_middleware(NULL name)": lib.ts_store_add_middleware(handle, None, middleware, None),
            "add_middleware(NULL fn)": lib.ts_store_add_middleware(handle, b"m", MIDDLEWARE_FN(), None),
        }
        for call, status in calls.items():
            self.assertEqual(status_name(status), "TS_E_ARGUMENT", call)
        self.assertIsNone(out.value)
        self.assertEqual(token.value, 0)
        lib.ts_store_destroy(None)  # NULL-safe
        # Nothing was added by the refused calls.
        self.store.dispatch('{"type":"counter/add","payload":1}')
        self.assertEqual(self.store.get_state(), '{"counter":1}')

    def test_create_refuses_bad_initial_state_and_writes_nothing(self):
        for initial in (b"[1]", b"1", b'"x"', b"null", b'{"a":1,"a":2}', b'{"a":', b'{"a":1} {}', b"\xff"):
            sentinel = 0x5151
            out = c_void_p(sentinel)
            status = lib.ts_store_create(initial, byref(out))
            self.assertEqual(status_name(status), "TS_E_JSON", (initial, last_error()))
            self.assertEqual(out.value, sentinel, initial)
            self.assertNotEqual(last_error(), "")
        with Store(None) as store:
            self.assertEqual(store.get_state(), "{}")
        with Store(' { "a" : [ 1 , { } ] } ') as store:
            self.assertEqual(store.get_state(), '{"a":[1,{}]}')

    def test_last_error_text_stays_valid_until_the_next_failure(self):
        raw = ctypes.CFUNCTYPE(c_void_p)(("ts_last_error", lib))  # the pointer itself, not a copy
        lib.ts_store_dispatch(self.store.handle, b"{")
        address = raw()
        message = ctypes.string_at(address)
        self.assertIn(b"byte 1", message)
        for _ in range(200):  # successful calls of every kind
            self.store.dispatch('{"type":"counter/add","payload":1}')
            self.store.get_state("/counter")
            with Store('{"a":1}') as other:
                other.get_state()
        self.assertEqual(raw(), address)
        self.assertEqual(ctypes.string_at(address), message)
        self.assertEqual(lib.ts_last_error(), message)

    def test_last_error_is_per_thread(self):
        lib.ts_store_dispatch(self.store.handle, b"[]")
        mine = last_error()
        self.assertNotEqual(mine, "")
        theirs = []

        def other():
            theirs.append(last_error())
            lib.ts_store_dispatch(self.store.handle, b"{")
            theirs.append(last_error())

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        self.assertEqual(theirs[0], "")
        self.assertNotEqual(theirs[1], mine)
        self.assertEqual(last_error(), mine)


class IntegerTests(unittest.TestCase):
    BIG = {"u64max": "18446744073709551615", "i64max": "9223372036854775807", "i64min": "-9223372036854775808",
           "two53plus1": "9007199254740993", "neg53": "-9007199254740993", "zero": "0"}

    def test_initial_state_keeps_64_bit_integers(self):
        text = "{" + ",".join('"%s":%s' % item for item in self.BIG.items()) + "}"
        with Store(text) as store:
            self.assertEqual(store.get_state(), text)
            for key, value in self.BIG.items():
                self.assertEqual(store.get_state("/" + key), value)

    def test_integers_survive_dispatch_and_reducers(self):
        seen = []

        def keep(slice_json, action):
            if slice_json is None:
                return "[]"
            seen.append(action.payload)
            if action.type == "set":
                return action.payload  # the payload text as the new slice
            return None

        with Store() as store:
            store.add_reducer("numbers", keep)
            payload = "[" + ",".join(self.BIG.values()) + "]"
            store.dispatch('{"type":"set","payload":%s}' % payload)
            self.assertEqual(seen, [payload])
            self.assertEqual(store.get_state("/numbers"), payload)
            self.assertEqual([int(v) for v in json.loads(store.get_state("/numbers"))],
                             [int(v) for v in self.BIG.values()])
            self.assertEqual(store.get_state("/numbers/0"), "18446744073709551615")
            self.assertEqual(store.get_state("/numbers/2"), "-9223372036854775808")


class RoundTripTests(unittest.TestCase):
    """What get_state returns is a state that ts_store_create accepts again
    (saving and restoring a state, as the journal plugin does)."""

    def round_trip(self, slice_text):
        with Store() as store:
            store.add_reducer("k", lambda s, a: "0" if s is None else (slice_text if a.type == "set" else None))
            status = lib.ts_store_dispatch(store.handle, b'{"type":"set"}')
            if status != TS_OK:
                return status, None, None
            whole = store.get_state()
        again = c_void_p()
        created = lib.ts_store_create(whole.encode(), byref(again))
        message = last_error()
        lib.ts_store_destroy(again if created == TS_OK else None)
        return status, created, message

    def test_state_text_round_trips(self):
        for slice_text in ('{"a":[1,{"b":null}],"c":"\\u00e9"}', "[" * 255 + "]" * 255, "18446744073709551615"):
            status, created, message = self.round_trip(slice_text)
            self.assertEqual((status, created), (TS_OK, TS_OK), (slice_text[:20], message))

    def test_a_reducer_cannot_make_a_state_too_deep_to_read_back(self):
        # A slice nested TS_MAX_DEPTH deep is within the limit on its own, but in
        # the state it is one level deeper. Either the reducer's result is refused
        # (TS_E_REDUCER) or the state text it leads to must be accepted again by
        # ts_store_create (and replace_state): the library must not hand out JSON
        # that its own parser refuses.
        depth = TS_MAX_DEPTH
        status, created, message = self.round_trip("[" * depth + "]" * depth)
        if status != TS_OK:
            self.assertEqual(status, TS_E_REDUCER)
        else:
            self.assertEqual(created, TS_OK, "the state text is refused by ts_store_create: %s" % message)


class ThreadTests(unittest.TestCase):
    THREADS = 4
    ACTIONS = 2000

    def test_four_threads_dispatching_lose_nothing(self):
        seen = []
        active = [0]
        overlaps = [0]
        guard = threading.Lock()

        def counter(slice_json, action):
            if slice_json is None:
                return "0"
            with guard:
                active[0] += 1
                if active[0] > 1:
                    overlaps[0] += 1
            try:
                seen.append(json.loads(action.payload)["id"])
                if len(seen) % 97 == 0:
                    time.sleep(0)  # let the other threads run while "inside"
                return str(int(slice_json) + 1)
            finally:
                with guard:
                    active[0] -= 1

        notified = []
        failures = []
        with Store() as store:
            store.add_reducer("count", counter)
            store.subscribe(None, lambda s: notified.append(1))
            store.subscribe("/count", lambda s: notified.append(2))
            start = threading.Barrier(self.THREADS)

            def work(worker):
                start.wait()
                for i in range(self.ACTIONS):
                    action = b'{"type":"count/inc","payload":{"id":"%d-%d"}}' % (worker, i)
                    status = lib.ts_store_dispatch(store.handle, action)
                    if status != TS_OK:
                        failures.append((status, last_error()))

            threads = [threading.Thread(target=work, args=(n,)) for n in range(self.THREADS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            total = self.THREADS * self.ACTIONS
            self.assertEqual(failures, [])
            self.assertEqual(store.get_state("/count"), str(total))
            self.assertEqual(len(seen), total)
            self.assertEqual(len(set(seen)), total)
            self.assertEqual(notified.count(1), total)
            self.assertEqual(notified.count(2), total)
            self.assertEqual(overlaps[0], 0, "reducers ran at the same time on one store")
            # Each thread's actions arrived in the order it sent them.
            for worker in range(self.THREADS):
                mine = [int(x.split("-")[1]) for x in seen if x.startswith("%d-" % worker)]
                self.assertEqual(mine, list(range(self.ACTIONS)))

    def test_subscribing_while_other_threads_dispatch(self):
        tokens = []
        failures = []
        with Store() as store:
            store.add_reducer("count", lambda s, a: "0" if s is None else str(int(s) + 1))
            start = threading.Barrier(self.THREADS)

            def dispatcher():
                start.wait()
                for _ in range(self.ACTIONS // 2):
                    status = lib.ts_store_dispatch(store.handle, b'{"type":"inc"}')
                    if status != TS_OK:
                        failures.append(last_error())

            def subscriber():
                start.wait()
                mine = []
                for i in range(300):
                    mine.append(store.subscribe("/count" if i % 2 else None, lambda s: None))
                    if i % 10 != 0:  # keep a few: listeners run while others come and go
                        store.unsubscribe(mine[-1])
                tokens.extend(mine)

            threads = [threading.Thread(target=dispatcher), threading.Thread(target=dispatcher),
                       threading.Thread(target=subscriber), threading.Thread(target=subscriber)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            self.assertEqual(failures, [])
            self.assertEqual(store.get_state("/count"), str(self.ACTIONS))
            self.assertEqual(len(tokens), 600)
            self.assertEqual(len(set(tokens)), 600, "a token was given twice")


if __name__ == "__main__":
    unittest.main()
