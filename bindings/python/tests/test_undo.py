"""The undo plugin (undo.so, docs/undo.md) through the package: loaded by its
bare name, undo and redo, a jump refused with its message, the history's
counts through @@undo/status, and a bad config refused."""
import pytest

from turnstate import PluginError, RejectedError


@pytest.fixture
def undoable(counter, plugins):
    @counter.reducer("history", initial=None)
    def history(state, action):
        return action.payload if action.type == "@@undo/status" else None
    counter.load_plugin("undo", {"keys": ["count"], "limit": 10, "status": True})
    return counter


def test_undo_and_redo_by_bare_name(undoable):
    for _ in range(3):
        undoable.dispatch("counter/add")
    assert undoable.state["history"]["past"] == 3
    undoable.dispatch("@@undo")
    undoable.dispatch("@@undo")
    assert undoable.state["count"] == 1
    assert (undoable.state["history"]["past"], undoable.state["history"]["future"]) == (1, 2)
    undoable.dispatch("@@redo")
    assert undoable.state["count"] == 2


def test_a_jump_out_of_range_is_refused_and_changes_nothing(undoable):
    undoable.dispatch("counter/add", 5)
    with pytest.raises(RejectedError) as raised:
        undoable.dispatch("@@undo/jump", -3)
    assert "cannot jump 3 steps back" in raised.value.message
    assert undoable.state["count"] == 5
    undoable.dispatch("@@undo/jump", -1)
    assert undoable.state["count"] == 0


def test_a_bad_config_is_refused_with_its_message(counter, plugins):
    with pytest.raises(PluginError) as raised:
        counter.load_plugin("undo", {"group_by": "everything"})
    assert '"group_by" must be "type"' in raised.value.message
