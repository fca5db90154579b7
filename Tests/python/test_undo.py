"""The undo plugin (Plugins/undo) from Python, through the ctypes binding:
undo, redo, limit, a filter, grouping, jumps, clearing, the status, and a
bad config refused with its message.

Run:  TURNSTATE_LIB=build/lib/libturnstate.so python3 -m unittest discover -s Tests/python -v
The plugin is build/plugins/undo.so beside the library's build/lib, or
TURNSTATE_PLUGINS_DIR.
"""

import json
import os
import unittest

from turnstate_ctypes import Store, TurnstateError, status_name


def _plugins_dir():
    env = os.environ.get("TURNSTATE_PLUGINS_DIR")
    if env:
        return env
    lib = os.environ.get("TURNSTATE_LIB", "build/lib/libturnstate.so")
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(lib))), "plugins")


UNDO_SO = os.path.join(_plugins_dir(), "undo.so")


def count(slice_json, action):
    if slice_json is None:
        return "0"
    if action.type == "INCREMENT":
        return str(int(slice_json) + 1)
    if action.type == "DECREMENT":
        return str(int(slice_json) - 1)
    return None


def status(slice_json, action):
    if slice_json is None:
        return "null"
    if action.type == "@@undo/status":
        return action.payload
    return None


class UndoPluginTest(unittest.TestCase):
    def store(self, **config):
        store = Store()
        self.addCleanup(store.destroy)
        store.add_reducer("count", count)
        store.add_reducer("status", status)
        config.setdefault("keys", ["count"])
        store.load_plugin(UNDO_SO, json.dumps(config))
        return store

    def value(self, store):
        return json.loads(store.get_state("/count"))

    def counts(self, store):
        store.dispatch('{"type":"@@undo/status"}')
        s = json.loads(store.get_state("/status"))
        return s["past"], s["future"]

    def test_undo_redo(self):
        store = self.store()
        for _ in range(3):
            store.dispatch('{"type":"INCREMENT"}')
        store.dispatch('{"type":"@@undo"}')
        self.assertEqual(self.value(store), 2)
        self.assertEqual(self.counts(store), (2, 1))
        store.dispatch('{"type":"@@redo"}')
        self.assertEqual(self.value(store), 3)
        self.assertEqual(self.counts(store), (3, 0))

    def test_limit(self):
        store = self.store(limit=2)
        for _ in range(5):
            store.dispatch('{"type":"INCREMENT"}')
        for _ in range(5):
            store.dispatch('{"type":"@@undo"}')
        self.assertEqual(self.value(store), 3)

    def test_filter_and_group(self):
        store = self.store(exclude=["DECREMENT"], group_by="field")
        store.dispatch('{"type":"INCREMENT","group":"typing"}')
        store.dispatch('{"type":"INCREMENT","group":"typing"}')
        store.dispatch('{"type":"DECREMENT"}')
        self.assertEqual(self.counts(store), (1, 0))
        store.dispatch('{"type":"@@undo"}')
        self.assertEqual(self.value(store), 0)

    def test_jump_and_clear(self):
        store = self.store()
        for _ in range(4):
            store.dispatch('{"type":"INCREMENT"}')
        store.dispatch('{"type":"@@undo/jump_to_past","payload":1}')
        self.assertEqual(self.value(store), 1)
        store.dispatch('{"type":"@@undo/jump","payload":2}')
        self.assertEqual(self.value(store), 3)
        with self.assertRaises(TurnstateError) as caught:
            store.dispatch('{"type":"@@undo/jump","payload":-9}')
        self.assertEqual(status_name(caught.exception.status), "TS_E_REJECTED")
        self.assertIn("cannot jump 9 steps back", caught.exception.message)
        store.dispatch('{"type":"@@undo/clear"}')
        self.assertEqual(self.counts(store), (0, 0))
        self.assertEqual(self.value(store), 3)

    def test_bad_config(self):
        store = Store()
        self.addCleanup(store.destroy)
        with self.assertRaises(TurnstateError) as caught:
            store.load_plugin(UNDO_SO, '{"limit": 0}')
        self.assertIn('"limit" must be an integer from 1 to 1000000', caught.exception.message)


if __name__ == "__main__":
    unittest.main()
