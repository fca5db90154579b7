"""py_todos.py - a Python program's reducers, for turnstate-testgen's Python
mode (--reducers py_todos:setup): run.py records a journal with them (the
journal plugin loaded from Python) and makes a pytest module of it."""


def setup(store):
    """Adds the reducers to a turnstate.Store (the function testgen names)."""

    @store.reducer("todos", initial=[], on=["todos/add", "todos/toggle"])
    def todos(state, action):
        if action.type == "todos/add":
            return list(state) + [{"id": len(state) + 1, "title": action.payload["title"], "done": False}]
        return [dict(t, done=not t["done"]) if t["id"] == action.payload["id"] else t for t in state]

    @store.reducer("filter", initial="all", on=["filter/set"])
    def filter_(state, action):
        return action.payload["filter"]


if __name__ == "__main__":
    # python3 py_todos.py JOURNAL.so JOURNAL_FILE: records a session.
    import sys

    import turnstate
    with turnstate.Store() as store:
        setup(store)
        store.load_plugin(sys.argv[1], {"path": sys.argv[2]})
        store.dispatch("todos/add", {"title": "Buy milk"})
        store.dispatch("todos/add", {"title": "Write the tests"})
        store.dispatch("todos/toggle", {"id": 1})
        store.dispatch("filter/set", {"filter": "done"})
