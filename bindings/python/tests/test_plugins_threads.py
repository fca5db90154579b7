"""Plugins (the shipped ones, by name and by folder; refusals), threads
(many Python threads, and the delay plugin's worker running Python
callbacks under the GIL), and exceptions on a library thread."""
import os
import re
import shutil
import sys
import threading
import time

import pytest

import turnstate
from turnstate import JSONError, NotFoundError, PluginError, RejectedError, Store

WAIT = 60  # seconds: generous, only reached when something is broken


def wait_until(predicate, what):
    deadline = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for " + what)
        time.sleep(0.002)


# ---- plugins ----

# What make install ships (INSTALL_PLUGINS in the Makefile), and so what a
# wheel bundles: not the inspector, a development tool (README, Inspector).
SHIPPED = {"guard", "delay", "journal", "recorder", "undo", "logger", "replicate"}


def _makefile_install_plugins(repo):
    """INSTALL_PLUGINS of the repository's Makefile, its $(VAR)s expanded."""
    variables = dict(re.findall(r"^([A-Z_]+) *:?= *(.*?) *$", open(os.path.join(repo, "Makefile")).read(), re.M))

    def expand(text):
        return re.sub(r"\$\(([A-Z_]+)\)", lambda m: expand(variables[m.group(1)]), text)
    return set(expand(variables["INSTALL_PLUGINS"]).split())


def test_the_shipped_plugins_are_beside_the_library(plugins):
    for name in SHIPPED:
        assert os.path.isfile(os.path.join(plugins, name + ".so")), name


def test_the_plugins_folder_holds_what_make_install_ships_and_no_inspector(plugins):
    present = {name[:-3] for name in os.listdir(plugins) if name.endswith(".so")}
    assert present == SHIPPED
    repo = os.environ.get("TURNSTATE_REPO")
    if repo:
        assert _makefile_install_plugins(repo) == SHIPPED


def test_the_inspector_by_bare_name_is_refused_with_where_to_find_it(counter, plugins):
    with pytest.raises(NotFoundError) as raised:
        counter.load_plugin("inspector", {"port": 0})
    assert "not shipped" in raised.value.message and "inspector.so" in raised.value.message
    for name in SHIPPED:
        assert name in raised.value.message                # the names it does know
    counter.dispatch("counter/add")                         # nothing was added to the chain
    assert counter.state == {"count": 1}


def test_guard_by_name_refuses_with_its_message(counter, plugins):
    counter.load_plugin("guard", {"deny": ["admin/*"], "require": {"counter/add": ["n"]}})
    with pytest.raises(RejectedError) as raised:
        counter.dispatch("admin/reset")
    assert "admin/reset" in raised.value.message
    with pytest.raises(RejectedError) as raised:
        counter.dispatch("counter/add", {"x": 1})
    assert '"n"' in raised.value.message
    assert counter.state == {"count": 0}


def test_plugin_refusals(counter, plugins, tmp_path):
    with pytest.raises(NotFoundError):
        counter.load_plugin(str(tmp_path / "missing.so"))
    fake = tmp_path / "fake.so"
    fake.write_text("not a shared object")
    os.chmod(tmp_path, 0o755)
    with pytest.raises(PluginError) as raised:
        counter.load_plugin(str(fake))
    assert "fake.so" in raised.value.message
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)  # writable by others, not sticky: not trusted
    shutil.copy(os.path.join(plugins, "guard.so"), open_dir / "guard.so")
    with pytest.raises(PluginError) as raised:
        counter.load_plugin(str(open_dir / "guard.so"))
    assert "chmod" in raised.value.message
    with pytest.raises(PluginError):
        counter.load_plugin("guard", {"no such field": 1})
    with pytest.raises(ValueError):
        counter.load_plugin("guard", {"max_bytes": float("nan")})
    counter.dispatch("counter/add")  # nothing was added to the chain
    assert counter.get("/count") == 1


def test_load_plugins_from_a_folder_in_name_order(counter, plugins, tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(folder, 0o755)
    shutil.copy(os.path.join(plugins, "guard.so"), folder / "10-guard.so")
    (folder / "10-guard.json").write_text('{"allow": ["counter/*"]}')
    shutil.copy(os.path.join(plugins, "journal.so"), folder / "90-journal.so")
    (folder / "90-journal.json").write_text('{"path": "%s", "fsync": "never"}' % (tmp_path / "j"))
    counter.load_plugins(str(folder))
    counter.dispatch("counter/add", 2)
    with pytest.raises(RejectedError):
        counter.dispatch("other")
    assert counter.state == {"count": 2}
    assert (tmp_path / "j").read_text().count("counter/add") == 1


def test_journal_restores_the_state_and_tells_the_listeners(plugins, tmp_path):
    journal = str(tmp_path / "state.journal")
    with Store() as first:
        first.reducer("count", lambda s, a: s + a.payload if a.type == "add" else None, initial=0)
        first.load_plugin("journal", {"path": journal})
        for n in (1, 2, 3):
            first.dispatch("add", n)
    with Store() as second:
        second.reducer("count", lambda s, a: s + a.payload if a.type == "add" else None, initial=0)
        seen = []
        second.subscribe(lambda s: seen.append(s.get("/count")))
        second.load_plugin("journal", {"path": journal})
        assert second.state == {"count": 6}
        assert seen[-1] == 6  # the journal replays its actions: the listeners see each


# ---- threads ----

def test_threads_dispatching_lose_nothing(counter):
    calls = []
    counter.subscribe(lambda s: calls.append(1))
    per_thread, threads = 500, 4
    workers = [threading.Thread(target=lambda: [counter.dispatch("counter/add") for _ in range(per_thread)])
               for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.get("/count") == per_thread * threads
    assert len(calls) == per_thread * threads


def test_errors_stay_on_the_thread_that_caused_them(counter):
    counter.reducer("picky", lambda s, a: (_ for _ in ()).throw(ValueError(a.payload)) if a.type == "bad" else None,
                    initial=0)
    results = {}

    def work(name):
        got = []
        for i in range(200):
            try:
                counter.dispatch("bad" if i % 2 else "counter/add", "%s-%d" % (name, i) if i % 2 else 1)
            except ValueError as error:
                got.append(str(error))
        results[name] = got

    workers = [threading.Thread(target=work, args=("t%d" % n,)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for name, got in results.items():
        assert got == ["%s-%d" % (name, i) for i in range(1, 200, 2)]
    assert counter.get("/count") == 400


def test_delay_worker_runs_python_callbacks_under_the_gil(counter, plugins):
    """The delay plugin's worker (a thread the library made, not Python)
    dispatches later: the Python reducer and listener run on it, and Python
    threads dispatching at the same time lose nothing."""
    counter.load_plugin("delay")
    threads_seen = set()
    done = threading.Event()
    delayed = 100
    per_thread, python_threads = 300, 3
    total = delayed + per_thread * python_threads

    def listener(s):
        thread = threading.current_thread()
        threads_seen.add((thread.ident, isinstance(thread, threading._DummyThread)))
        if s.get("/count") == total:
            done.set()

    counter.subscribe(listener)
    for i in range(delayed):
        counter.dispatch("@@delay", {"ms": i % 7, "action": {"type": "counter/add"}})
    workers = [threading.Thread(target=lambda: [counter.dispatch("counter/add") for _ in range(per_thread)])
               for _ in range(python_threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert done.wait(WAIT), "count is %d, not %d" % (counter.get("/count"), total)
    assert counter.get("/count") == total
    library_threads = {ident for ident, dummy in threads_seen if dummy}
    assert len(library_threads) == 1  # the delay worker: a thread Python did not start


def test_exception_on_a_library_thread_goes_to_unraisablehook(counter, plugins, monkeypatch):
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: reported.append(info))
    error = RuntimeError("on the worker")

    def listener(s):
        if s.get("/count") == 1:
            raise error

    counter.subscribe(listener)
    counter.load_plugin("delay")
    counter.dispatch("@@delay", {"ms": 1, "action": {"type": "counter/add"}})
    wait_until(lambda: reported, "the worker's exception")
    assert reported[0].exc_value is error
    assert "library thread" in reported[0].err_msg


def test_close_with_delayed_actions_pending(plugins):
    store = Store()
    store.reducer("count", lambda s, a: s + 1, initial=0)
    store.load_plugin("delay")
    for _ in range(10):
        store.dispatch("@@delay", {"ms": 60000, "action": {"type": "x"}})
    store.close()  # joins the worker; the pending actions are dropped
    assert store.closed


def test_store_left_open_with_a_worker_is_closed_at_exit(plugins, tmp_path):
    import subprocess
    script = ("import turnstate\n"
              "s = turnstate.Store()\n"
              "s.reducer('n', lambda st, a: st + 1, initial=0)\n"
              "s.load_plugin('delay')\n"
              "for i in range(50): s.dispatch('@@delay', {'ms': i % 3, 'action': {'type': 'x'}})\n"
              "print('exiting')\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=WAIT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "exiting"


def test_loading_a_bad_plugin_config_text_is_a_json_error(counter, plugins, tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(folder, 0o755)
    shutil.copy(os.path.join(plugins, "guard.so"), folder / "guard.so")
    (folder / "guard.json").write_text("{")
    with pytest.raises(JSONError):
        counter.load_plugins(str(folder))


def test_a_listener_on_the_worker_gets_its_own_dispatchs_exception(counter, plugins, monkeypatch):
    """On a library thread, a Python call into the store (here a listener's
    dispatch) still gets the exceptions of the callbacks it ran, as themselves;
    only what escapes the outermost callback goes to sys.unraisablehook."""
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: reported.append(info))
    counter.reducer("picky", lambda s, a: (_ for _ in ()).throw(KeyError("inner")) if a.type == "bad" else None,
                    initial=0)
    caught = []

    def listener(s):
        if s.get("/count") == 1 and not caught:
            try:
                s.dispatch("bad")
            except KeyError as error:
                caught.append((error, isinstance(threading.current_thread(), threading._DummyThread)))

    counter.subscribe(listener)
    counter.load_plugin("delay")
    counter.dispatch("@@delay", {"ms": 1, "action": {"type": "counter/add"}})
    wait_until(lambda: caught, "the listener on the worker")
    assert caught[0][0].args == ("inner",) and caught[0][1]
    assert reported == []


def test_c_middleware_sees_a_python_reducers_failure_as_ts_e_reducer(counter, plugins, tmp_path):
    """The journal (C) records only what reached the reducers and succeeded:
    a Python reducer's exception is a failed dispatch for C code too."""
    journal = tmp_path / "j"
    counter.reducer("picky", lambda s, a: (_ for _ in ()).throw(ValueError("no")) if a.type == "bad" else None,
                    initial=0)
    counter.load_plugin("journal", {"path": str(journal), "fsync": "never"})
    counter.dispatch("counter/add")
    with pytest.raises(ValueError):
        counter.dispatch("bad")
    text = journal.read_text()
    assert "counter/add" in text and '"bad"' not in text
