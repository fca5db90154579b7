"""py_bug.py - a Python program's reducers with a bug ("items/boom" raises),
for the flight recorder from Python (run.py): the recorder dumps when the
reducer fails, and turnstate-testgen makes a pytest test of the dump
(--reducers py_bug:setup) that fails at that action."""


def setup(store):
    """Adds the reducers to a turnstate.Store (the function testgen names)."""

    @store.reducer("items", initial=[])
    def items(state, action):
        if action.type == "items/add":
            return list(state) + [action.payload]
        if action.type == "items/boom":
            raise ValueError("boom is not handled")
        return None


if __name__ == "__main__":
    # python3 py_bug.py RECORDER.so DUMP_FILE: records, then fails.
    import sys

    import turnstate
    with turnstate.Store() as store:
        setup(store)
        store.load_plugin(sys.argv[1], {"path": sys.argv[2], "signals": False})
        store.dispatch("items/add", {"n": 1})
        store.dispatch("items/add", {"n": 2})
        try:
            store.dispatch("items/boom")
        except ValueError as e:
            print("items/boom raised:", e)
