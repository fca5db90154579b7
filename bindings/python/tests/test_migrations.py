"""Versioned state and migrations (docs/migrations.md): Store.version,
add_migration, replace_state_from, and the journal plugin restoring a
journal of an older version."""
import pytest

import turnstate


def v1_to_v2(state):
    """1: {"todos": ["a"]} -> 2: {"todos": [{"title": "a"}]}."""
    return {"todos": [{"title": title} for title in state["todos"]]}


def v2_to_v3(state):
    """2 -> 3: {"todos": {"items": [{"title": "a", "done": False}]}}."""
    return {"todos": {"items": [dict(item, done=False) for item in state["todos"]]}}


def program(version, migrations=(v1_to_v2, v2_to_v3)):
    """The todo program at ``version`` (1 or 3); at 3 with the migrations
    1->2 and 2->3 (``migrations``)."""
    store = turnstate.Store()
    store.version = version
    if version == 3:
        for step, fn in enumerate(migrations, start=1):
            store.add_migration(step, fn)

        @store.reducer("todos", initial={"items": []})
        def todos3(state, action):
            if action.type == "add":
                return {"items": list(state["items"]) + [{"title": action.payload, "done": False}]}
            return None
    else:
        @store.reducer("todos", initial=[])
        def todos1(state, action):
            if action.type == "add":
                return list(state) + [action.payload]
            return None
    return store


def test_the_version_is_0_until_set(store):
    assert store.version == 0
    store.version = 4
    assert store.version == 4
    with pytest.raises(ValueError):
        store.version = -1
    with pytest.raises(TypeError):
        store.version = "3"


def test_migrations_run_in_order_from_the_saved_version():
    calls = []
    with program(3, (lambda s: calls.append("1->2") or v1_to_v2(s),
                     lambda s: calls.append("2->3") or v2_to_v3(s))) as store:
        seen = []
        store.subscribe(lambda *_: seen.append(store.state))
        store.replace_state_from({"todos": ["a", "b"]}, 1)
        assert calls == ["1->2", "2->3"]
        assert store.state == {"todos": {"items": [{"title": "a", "done": False}, {"title": "b", "done": False}]}}
        assert len(seen) == 1
        calls.clear()
        store.replace_state_from({"todos": {"items": []}}, 3)
        assert calls == []
        assert store.state == {"todos": {"items": []}}


def test_a_downgrade_is_refused_and_the_state_unchanged():
    with program(3) as store:
        with pytest.raises(turnstate.ArgumentError) as error:
            store.replace_state_from({"todos": 1}, 4)
        assert ("the state is of version 4, newer than this program's version 3: a downgrade is refused, "
                "nothing was loaded") in str(error.value)
        assert store.state == {"todos": {"items": []}}


def test_a_failing_migration_raises_its_exception_and_names_the_step():
    def broken(state):
        raise ValueError("a todo has no title")

    with program(3, (v1_to_v2, broken)) as store:
        with pytest.raises(ValueError, match="a todo has no title") as error:
            store.replace_state_from({"todos": ["a"]}, 1)
        notes = " ".join(getattr(error.value, "__notes__", []))
        assert "migration 2->3 failed: ValueError: a todo has no title" in notes
        assert store.state == {"todos": {"items": []}}


def test_a_missing_step_and_a_wrong_result_are_refused():
    with program(3, (v1_to_v2,)) as store:
        with pytest.raises(turnstate.NotFoundError, match="no migration from version 2 to 3"):
            store.replace_state_from({"todos": ["a"]}, 1)
        assert store.state == {"todos": {"items": []}}
    with program(3, (v1_to_v2, lambda state: [1, 2])) as store:
        with pytest.raises(TypeError, match="returned list, not the state"):
            store.replace_state_from({"todos": ["a"]}, 1)
        assert store.state == {"todos": {"items": []}}
    with program(3) as store:
        with pytest.raises(turnstate.ArgumentError, match="from version 1 to 2 already"):
            store.add_migration(1, v1_to_v2)
        with pytest.raises(turnstate.ArgumentError):
            store.add_migration(4, "not callable")


def test_a_version_1_journal_restarts_at_version_3(plugins, tmp_path):
    config = {"path": str(tmp_path / "todos.journal"), "fsync": "never", "snapshot_every": 2}
    with program(1) as store:
        store.load_plugin("journal", config)
        for title in "abc":
            store.dispatch("add", title)
        assert store.state == {"todos": ["a", "b", "c"]}
    with program(3) as store:
        store.load_plugin("journal", config)
        assert store.state == {"todos": {"items": [{"title": t, "done": False} for t in "abc"]}}
    # The journal is of version 3 now: version 1 is refused it, and keeps its state.
    with program(1) as store:
        with pytest.raises(turnstate.PluginError, match="newer than this program's version 1: a downgrade is refused"):
            store.load_plugin("journal", config)
        assert store.state == {"todos": []}


def test_a_failing_migration_refuses_the_journal(plugins, tmp_path):
    config = {"path": str(tmp_path / "todos.journal"), "fsync": "never", "snapshot_every": 1}
    with program(1) as store:
        store.load_plugin("journal", config)
        store.dispatch("add", "a")
    before = (tmp_path / "todos.journal").read_bytes()

    def broken(state):
        raise KeyError("title")

    with program(3, (v1_to_v2, broken)) as store:
        with pytest.raises(KeyError) as error:
            store.load_plugin("journal", config)
        assert "migration 2->3 failed: KeyError: 'title'" in " ".join(getattr(error.value, "__notes__", []))
        assert store.state == {"todos": {"items": []}}
    assert (tmp_path / "todos.journal").read_bytes() == before
