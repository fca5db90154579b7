#!/usr/bin/env python3
"""make test-testgen: recorded sessions become tests (issue 22, item 3).

    python3 Tests/testgen/run.py BUILD [--swift]

1. turnstate-testgen's refusals: a corrupt record in the middle, a torn last
   record (skipped, with a warning), no action, a missing reducers file,
   Python reducers for a C test, a journal snapshot the reducers do not give;
   the C test's diff names a key with "/" and "~" by its escaped pointer.
2. A journal of the todo demo (Examples/todo.c, with the journal and delay
   plugins) becomes a C and a pytest test that pass (the C one natively,
   under valgrind and under ASan); with one reducer changed (todo.c's ids start at 2) each
   fails naming the action (index and type) and the JSON Pointer.
3. A session recorded with the inspector (Tests/inspector/app.c, the inspector
   and guard plugins; actions dispatched, one refused by guard) and exported
   through its HTTP API (GET /api/export) becomes a C and a pytest test that
   pass; with app.c's counter changed, each fails naming the action and /count.
   The same for the session the browser test (make test-inspector) recorded
   in headless Chromium and exported: it leaves it in
   BUILD/inspector/testgen/browser.session; a missing one fails this suite.
4. A Python program's journal (Tests/testgen/py_todos.py, the journal plugin
   loaded from Python) becomes a pytest test of its Python reducers (pass;
   one reducer changed: fail naming the action and the path).
5. The flight recorder (Plugins/recorder): Tests/testgen/test_recorder.c (on
   the C harness, its registry from gen_registry.py), natively and under ASan
   (build/asan); its reducer-failure dump becomes a C test that fails at the
   failing action, and passes once the reducer is fixed (-DTS_BUG_FIXED); its crash dump becomes a C test that dies of the
   same SIGSEGV, and passes once fixed. Loaded from Python (py_bug.py), it
   dumps when a Python reducer raises, and the dump becomes a pytest test that
   fails at that action, and passes once fixed. From Rust
   (Tests/testgen/rust_recorder, cargo; also under valgrind) and C++
   (Tests/testgen/cpp_recorder.cpp, under ASan): a reducer fails, the dump is
   in the journal's format with the deny (Rust) or allow (C++) rules applied,
   and becomes a C test over the program's own reducers (a shared object with
   ts_testgen_setup) that fails at the failed action, and passes once fixed.
6. With --swift: one Swift test package (XCTest, the C face from Swift),
   with a test of the todo journal, of the inspector's export, of the
   browser test's export and of the recorder's reducer-failure dump, built
   once: the first three pass, and fail
   naming the action and the path when run with the changed reducers
   (TURNSTATE_TESTGEN_REDUCERS, no rebuild); the dump's fails at its action.
7. With --swift: --lang swift-teststore, TestStore tests of a typed Swift
   program (Tests/testgen/SwiftCounter: Codable state, TaggedActions, Swift
   reducer), from the session that program records when it runs:
   testgen-counter-recorder (Tests/testgen/SwiftCounterRecorder, the same
   Counter.swift; a target of the root package, built in .build, which make
   test has built already) loads the journal plugin with "snapshot_every": 1
   through TurnstatePlugins. One build of the test package; the tests pass,
   and with the reducer changed (COUNTER_CHANGED=1) the changed actions'
   tests fail with TestStore's diff; refusals of a session without a
   snapshot after each action, of a missing option and of a session that
   starts with an action without --initial-state.
The pytest tests run with TS_PACKAGE_PYTHON (a venv with the turnstate
package and pytest; the Makefile's). Ends with "checks: N passed, M failed".
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
SWIFT = "--swift" in sys.argv
LIB = os.path.join(BUILD, "lib", "libturnstate.so")
PLUGINS = os.path.join(BUILD, "plugins")
TESTGEN = os.path.join(ROOT, "Tools", "turnstate-testgen")
INCLUDE = os.path.join(ROOT, "Include")
CC = os.environ.get("CC", "cc")
CFLAGS = shlex.split(os.environ.get("TS_CFLAGS", "-std=c99 -O2 -g -Wall -Wextra -Werror -pedantic"))
LINK = ["-L" + os.path.dirname(LIB), "-Wl,-rpath," + os.path.dirname(LIB), "-lturnstate", "-lpthread"]
PYTHON = os.environ.get("TS_PACKAGE_PYTHON", sys.executable)
VALGRIND = shlex.split(os.environ.get("VALGRIND", "valgrind -q --error-exitcode=99 --leak-check=full "
                                     "--errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect "
                                     "--suppressions=" + os.path.join(ROOT, "Tests", "c", "valgrind.supp")))
ENV = dict(os.environ, TURNSTATE_LIB=LIB, SWIFT_BACKTRACE="enable=no")
# The ASan runs: leaks checked, with the suppressions the other ASan suites use.
ASAN_ENV = dict(ENV, ASAN_OPTIONS="detect_leaks=1:allow_user_segv_handler=1",
                LSAN_OPTIONS="suppressions=%s:print_suppressions=0" % os.path.join(ROOT, "Tests", "fuzz", "lsan.supp"))

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + name, flush=True)
    else:
        failed += 1
        detail = str(detail)
        print("FAIL " + name + (":\n    | " + detail.replace("\n", "\n    | ") if detail else ""), flush=True)
    return ok


def run(command, **kw):
    """(exit status, stdout + stderr) of a command."""
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=kw.pop("env", ENV), **kw)
    return result.returncode, result.stdout


def cc(sources, out, extra=()):
    status, output = run([CC] + CFLAGS + ["-I" + INCLUDE] + list(sources) + ["-o", out] + LINK + list(extra))
    if status != 0:
        raise SystemExit("cc failed:\n" + output)
    return out


def testgen(*args, python=sys.executable):
    return run([python, TESTGEN] + list(args))


def record(letter, text):
    data = text.encode()
    return b"%s %d %08x " % (letter.encode(), len(data), zlib.crc32(letter.encode() + data) & 0xFFFFFFFF) + data + b"\n"


def pytest(test, env=None):
    return run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", test], env=env or ENV)


def failure_named(output, index, action_type, path):
    """Whether a failure names the action (index, type) and the JSON Pointer."""
    return ("action %d (%s)" % (index, action_type)) in output and ("at %s" % path) in output


# ---- 1. Refusals --------------------------------------------------------------

def refusals(work):
    todo_reducers = os.path.join(ROOT, "Examples", "testgen", "todo_reducers.c")
    good = record("A", '{"type":"todos/add","payload":{"title":"a"}}')
    cases = [
        ("a corrupt record in the middle is refused with its line", good + good.replace(b"a\"}}", b"b\"}}") + good,
         "line 2 (byte %d): wrong CRC-32" % len(good)),
        ("a session without actions is refused", record("S", '{"todos":[]}'), "no action (A record)"),
        ("a record whose JSON is not an action is refused", record("A", '{"payload":1}'),
         "line 1: an action record that is not an action"),
        ("a snapshot after an action that the reducers do not give is refused, with the path",
         good + record("S", '{"todos":[{"id":7,"title":"a","done":false}],"filter":"all"}'),
         "line 2: the recorded snapshot after action 0 (todos/add) is not the state the reducers give: at "
         "/todos/0/id, recorded 7, replayed 1"),
    ]
    for name, data, message in cases:
        path = os.path.join(work, "bad.journal")
        with open(path, "wb") as f:
            f.write(data)
        status, output = testgen("--lang", "c", "--reducers", todo_reducers, "-I", INCLUDE, path,
                                 "-o", os.path.join(work, "bad.c"))
        check(name, status == 1 and message in output, output)
    with open(os.path.join(work, "torn.journal"), "wb") as f:
        f.write(good + good[:-9])
    status, output = testgen("--lang", "c", "--reducers", todo_reducers, "-I", INCLUDE,
                             os.path.join(work, "torn.journal"), "-o", os.path.join(work, "torn.c"))
    check("a torn last record is skipped with a warning, as the journal does",
          status == 0 and "the torn last record is skipped" in output and "1 actions" in output, output)
    status, output = testgen("--lang", "c", "--reducers", os.path.join(work, "nothere.c"),
                             os.path.join(work, "torn.journal"), "-o", os.path.join(work, "x.c"))
    check("a missing reducers file is refused", status == 1 and "nothere.c: no such file" in output, output)
    status, output = testgen("--lang", "c", "--reducers", "py_todos:setup", os.path.join(work, "torn.journal"),
                             "-o", os.path.join(work, "x.c"))
    check("Python reducers for a C test are refused", status == 1 and "only --lang python can use them" in output,
          output)
    status, output = testgen("--lang", "c", "--reducers", todo_reducers, "--setup", "no_such_setup", "-I", INCLUDE,
                             os.path.join(work, "torn.journal"), "-o", os.path.join(work, "x.c"))
    check("a setup function the reducers do not define is refused",
          status == 1 and "does not define no_such_setup(ts_store *)" in output, output)


def pointer_escapes(work):
    """The C test's diff names a member whose key holds "/" and "~" by its RFC
    6901 pointer (~1, ~0), and an escaped string is compared by its content:
    the expected state of a generated test edited by hand stands for a
    reducer that changed."""
    bug = os.path.join(HERE, "bug_reducers.c")
    session = os.path.join(work, "escapes.session")
    with open(session, "wb") as f:
        f.write(record("S", '{"count":0,"session":{"token":null},"items":[]}') +
                record("A", '{"type":"secret/login","payload":{"a/b~c":1,"t":"caf\\u00e9 \\"q\\""}}'))
    status, output = testgen("--lang", "c", "--reducers", bug, "-I", INCLUDE, session,
                             "-o", os.path.join(work, "test_escapes.c"))
    check("testgen writes a C test of a state with \"/\", \"~\" and escapes in it", status == 0, output)
    with open(os.path.join(work, "test_escapes.c")) as f:
        text = f.read()
    test = cc([os.path.join(work, "test_escapes.c"), bug], os.path.join(work, "test_escapes"))
    status, output = run([test])
    check("it passes (escaped strings compared by their content)", status == 0 and "2 passed, 0 failed" in output,
          output)
    before, _, after = text.rpartition('a/b~c\\":1')  # the last one: in the expected state, not the action
    edited = before + 'a/b~c\\":2' + after
    with open(os.path.join(work, "test_escapes_edited.c"), "w") as f:
        f.write(edited)
    test = cc([os.path.join(work, "test_escapes_edited.c"), bug], os.path.join(work, "test_escapes_edited"))
    status, output = run([test])
    check("with the expected value changed, it fails at /session/a~1b~0c, expected 2, actual 1",
          edited != text and status == 1 and failure_named(output, 0, "secret/login", "/session/a~1b~0c")
          and "expected: 2" in output and "actual:   1" in output, output)


# ---- 2. The todo demo's journal ------------------------------------------------------

def mutant_todo(work):
    """A copy of the todo demo whose todos/add gives ids from 2 (one reducer changed)."""
    folder = os.path.join(work, "mutant")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(ROOT, "Examples", "todo.c")) as f:
        text = f.read()
    changed = text.replace("(long long)max_id + 1", "(long long)max_id + 2")
    assert changed != text
    with open(os.path.join(folder, "todo.c"), "w") as f:
        f.write(changed)
    with open(os.path.join(ROOT, "Examples", "testgen", "todo_reducers.c")) as f:
        setup = f.read().replace('"../todo.c"', '"todo.c"')
    with open(os.path.join(folder, "todo_reducers.c"), "w") as f:
        f.write(setup)
    return os.path.join(folder, "todo_reducers.c")


def shared(source, out, flags=()):
    return cc(["-shared", "-fPIC"] + list(flags) + [source], out)


def todo_journal(work):
    todo = cc([os.path.join(ROOT, "Examples", "todo.c")], os.path.join(work, "todo"))
    plugins = os.path.join(work, "todo-plugins")
    os.makedirs(plugins)
    shutil.copy(os.path.join(PLUGINS, "delay.so"), os.path.join(plugins, "30-delay.so"))
    shutil.copy(os.path.join(PLUGINS, "journal.so"), os.path.join(plugins, "90-journal.so"))
    journal = os.path.join(work, "todo.journal")
    with open(os.path.join(plugins, "90-journal.json"), "w") as f:
        json.dump({"path": journal}, f)
    status, output = run([todo, plugins])
    check("the todo demo runs with the journal and records its actions", status == 0 and os.path.exists(journal),
          output[-2000:])
    return journal


def todo_tests(work, journal):
    reducers = os.path.join(ROOT, "Examples", "testgen", "todo_reducers.c")
    mutant = mutant_todo(work)
    out = os.path.join(work, "todo-tests")
    os.makedirs(out)
    status, output = testgen("--lang", "c", "--reducers", reducers, "-I", INCLUDE, journal,
                             "-o", os.path.join(out, "test_todo.c"))
    check("testgen writes a C test of the todo journal", status == 0, output)
    test = cc([os.path.join(out, "test_todo.c"), reducers], os.path.join(out, "test_todo"))
    status, output = run([test])
    check("the generated C test passes against todo.c's reducers", status == 0 and "9 passed, 0 failed" in output,
          output)
    status, output = run(VALGRIND + [test])
    check("the generated C test passes under valgrind", status == 0, output[-3000:])
    fuzz_cc = os.environ.get("FUZZ_CC")
    asan_lib = os.path.join(BUILD, "asan", "lib")
    if fuzz_cc and os.path.exists(os.path.join(asan_lib, "libturnstate.so")):
        status, output = run([fuzz_cc] + shlex.split(os.environ.get("TS_SAN_CFLAGS", "-std=c99 -O1 -g")) +
                             ["-fsanitize=address", "-I" + INCLUDE, os.path.join(out, "test_todo.c"), reducers,
                              "-o", os.path.join(out, "test_todo-asan"), "-fuse-ld=lld", "-L" + asan_lib,
                              "-Wl,-rpath," + asan_lib, "-lturnstate", "-lpthread"])
        if status == 0:
            status, output = run([os.path.join(out, "test_todo-asan")], env=ASAN_ENV)
        check("the generated C test passes under AddressSanitizer (leaks checked)",
              status == 0 and "9 passed, 0 failed" in output, output[-3000:])
    bad = cc([os.path.join(out, "test_todo.c"), mutant], os.path.join(out, "test_todo_mutant"))
    status, output = run([bad])
    check("with todos/add changed, the C test fails naming action 0 (todos/add) and /todos/0/id",
          status == 1 and failure_named(output, 0, "todos/add", "/todos/0/id") and "expected: 1" in output
          and "actual:   2" in output, output)
    print("    | " + output.strip().replace("\n", "\n    | "))

    status, output = testgen("--lang", "python", "--reducers", reducers, "-I", INCLUDE, journal,
                             "-o", os.path.join(out, "test_todo.py"))
    check("testgen writes a pytest test of the todo journal", status == 0, output)
    status, output = pytest(os.path.join(out, "test_todo.py"))
    check("the generated pytest test passes", status == 0 and "1 passed" in output, output)
    mutant_so = shared(mutant, os.path.join(out, "mutant.so"))
    status, output = pytest(os.path.join(out, "test_todo.py"), env=dict(ENV, TURNSTATE_TESTGEN_REDUCERS=mutant_so))
    check("with todos/add changed, the pytest test fails naming action 0 (todos/add) and /todos/0/id",
          status == 1 and failure_named(output, 0, "todos/add", "/todos/0/id"), output)
    return mutant_so


# ---- 3. A session recorded with the inspector ------------------------------------------

def inspector_session(work):
    app = cc([os.path.join(ROOT, "Tests", "inspector", "app.c")], os.path.join(work, "inspector-app"))
    proc = subprocess.Popen([app, os.path.join(PLUGINS, "inspector.so"), json.dumps({"port": 0}),
                             os.path.join(PLUGINS, "guard.so")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, bufsize=1, env=ENV)
    try:
        first = proc.stdout.readline().strip()
        url = None
        deadline = time.time() + 15
        while url is None and time.time() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            m = re.search(r"turnstate inspector: (http://\S+)", line)
            url = m and m.group(1)
        if not check("the inspector's test program starts", first == "ready" and url, first):
            return None

        def ask(line):
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            return proc.stdout.readline().strip()
        answers = [ask("d " + json.dumps(a)) for a in (
            {"type": "counter/inc"}, {"type": "todos/add", "payload": {"title": "from the inspector"}},
            {"type": "todos/add", "payload": {"done": True}},  # refused by guard: no title
            {"type": "counter/add", "payload": 5}, {"type": "counter/inc"})]
        check("the actions are dispatched (one refused by guard)",
              [a.split()[1] for a in answers] == ["TS_OK", "TS_OK", "TS_E_REJECTED", "TS_OK", "TS_OK"], answers)
        m = re.match(r"http://([^/]+)/\?token=(\w+)", url)
        request = urllib.request.Request("http://%s/api/export" % m.group(1),
                                         headers={"X-Turnstate-Token": m.group(2), "Host": m.group(1)})
        with urllib.request.urlopen(request, timeout=15) as response:
            exported = response.read()
        path = os.path.join(work, "inspector.session")
        with open(path, "wb") as f:
            f.write(exported)
        check("GET /api/export gives the session: a snapshot and the 4 actions that reached the reducers",
              exported.startswith(b"S ") and exported.count(b"\nA ") == 4, exported.decode(errors="replace"))
        ask("q")
        return path
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def first_action(session, action_type):
    """The index of the first action of `action_type` in a session file, or None."""
    index = 0
    with open(session, "rb") as f:
        for line in f:
            if line.startswith(b"A "):
                if json.loads(line.split(b" ", 3)[3]).get("type") == action_type:
                    return index
                index += 1
    return None


def inspector_tests(work, session, what="the inspector's export"):
    """C and pytest tests of an inspector session (the HTTP export of 3., or
    the browser test's): they pass against app.c's reducers, and with
    counter/inc changed (it adds 2) fail naming its first counter/inc and
    /count. Returns the changed reducers' shared object (for Swift)."""
    reducers = os.path.join(HERE, "app_reducers.c")
    name = os.path.splitext(os.path.basename(session))[0]
    out = os.path.join(work, name)
    os.makedirs(out, exist_ok=True)
    # app.c changed: counter/inc adds 2.
    with open(os.path.join(ROOT, "Tests", "inspector", "app.c")) as f:
        text = f.read()
    changed = text.replace('if (strcmp(a->type, "counter/inc") == 0) n++;',
                           'if (strcmp(a->type, "counter/inc") == 0) n += 2;', 1)
    assert changed != text
    os.makedirs(os.path.join(out, "mutant", "inspector"))
    os.makedirs(os.path.join(out, "mutant", "testgen"))
    with open(os.path.join(out, "mutant", "inspector", "app.c"), "w") as f:
        f.write(changed)
    shutil.copy(reducers, os.path.join(out, "mutant", "testgen", "app_reducers.c"))
    mutant = os.path.join(out, "mutant", "testgen", "app_reducers.c")
    index = first_action(session, "counter/inc")
    if not check("%s has a counter/inc action (the reducer changed here)" % what, index is not None, session):
        return None
    named = "action %d (counter/inc) and /count" % index

    status, output = testgen("--lang", "c", "--reducers", reducers, "-I", INCLUDE, session,
                             "-o", os.path.join(out, "test_%s.c" % name))
    check("testgen writes a C test of %s" % what, status == 0 and "from a snapshot" in output, output)
    test = cc([os.path.join(out, "test_%s.c" % name), reducers], os.path.join(out, "test_" + name))
    status, output = run([test])
    with open(session, "rb") as f:
        actions = sum(1 for line in f if line.startswith(b"A "))
    # One check for the state before the first action, one per action.
    check("the generated C test of %s passes (%d actions)" % (what, actions),
          status == 0 and "%d passed, 0 failed" % (actions + 1) in output, output)
    bad = cc([os.path.join(out, "test_%s.c" % name), mutant], os.path.join(out, "test_%s_mutant" % name))
    status, output = run([bad])
    check("with counter/inc changed, the C test of %s fails naming %s" % (what, named),
          status == 1 and failure_named(output, index, "counter/inc", "/count"), output)
    status, output = testgen("--lang", "python", "--reducers", reducers, "-I", INCLUDE, session,
                             "-o", os.path.join(out, "test_%s.py" % name))
    check("testgen writes a pytest test of %s" % what, status == 0, output)
    status, output = pytest(os.path.join(out, "test_%s.py" % name))
    check("the generated pytest test of %s passes" % what, status == 0 and "1 passed" in output, output)
    mutant_so = shared(mutant, os.path.join(out, "mutant.so"))
    status, output = pytest(os.path.join(out, "test_%s.py" % name),
                            env=dict(ENV, TURNSTATE_TESTGEN_REDUCERS=mutant_so))
    check("with counter/inc changed, the pytest test of %s fails naming %s" % (what, named),
          status == 1 and failure_named(output, index, "counter/inc", "/count"), output)
    return mutant_so


def browser_session(work):
    """The session the browser test (make test-inspector, Tests/inspector/run.py)
    recorded in headless Chromium and exported: that suite leaves it in
    BUILD/inspector/testgen/browser.session (removed when it starts, so an
    earlier run's is never found). make test runs test-inspector before this
    suite; run alone, this suite fails when the file is missing."""
    kept = os.path.join(BUILD, "inspector", "testgen", "browser.session")
    if not check("the browser test's exported session is there (%s)" % kept, os.path.isfile(kept),
                 "missing: run make test-inspector first (it records the session in headless Chromium)"):
        return None
    path = os.path.join(work, "browser.session")
    shutil.copyfile(kept, path)
    with open(path, "rb") as f:
        data = f.read()
    check("it is the browser's export: a snapshot, then actions", data.startswith(b"S ") and b"\nA " in data,
          data[:300])
    return path


# ---- 4. A Python program's journal, Python reducers ---------------------------------------

def python_program(work):
    out = os.path.join(work, "python")
    os.makedirs(out)
    module = shutil.copy(os.path.join(HERE, "py_todos.py"), os.path.join(out, "py_todos.py"))
    journal = os.path.join(out, "py.journal")
    status, output = run([PYTHON, module, os.path.join(PLUGINS, "journal.so"), journal])
    if not check("a Python program records a journal (the journal plugin loaded from Python)", status == 0, output):
        return
    status, output = testgen("--lang", "python", "--reducers", "py_todos:setup", "--python-path", out, journal,
                             "-o", os.path.join(out, "test_py_todos.py"), python=PYTHON)
    check("testgen writes a pytest test of the Python reducers", status == 0, output)
    status, output = pytest(os.path.join(out, "test_py_todos.py"))
    check("the generated pytest test passes against the Python reducers", status == 0 and "1 passed" in output,
          output)
    with open(module) as f:
        text = f.read()
    with open(module, "w") as f:
        f.write(text.replace("dict(t, done=not t[\"done\"])", "dict(t, done=False)"))
    status, output = pytest(os.path.join(out, "test_py_todos.py"))
    check("with todos/toggle changed, it fails naming action 2 (todos/toggle) and /todos/0/done",
          status == 1 and failure_named(output, 2, "todos/toggle", "/todos/0/done"), output)


def versioned_journal(work):
    """A journal of a store that declares a state version (its first record
    is V) becomes a pytest test; a session of another version than the
    reducers' store, or of two versions, is refused with the reason."""
    out = os.path.join(work, "versioned")
    os.makedirs(out)
    with open(os.path.join(out, "py_versioned.py"), "w") as f:
        f.write("import sys\n"
                "import turnstate\n\n\n"
                "def setup(store, version=2):\n"
                "    store.version = version\n"
                "    store.reducer('count', lambda s, a: 0 if s is None else s + 1 if a['type'] == 'inc' else s)\n\n\n"
                "def setup3(store):\n"
                "    setup(store, 3)\n\n\n"
                "if __name__ == '__main__':\n"
                "    store = turnstate.Store()\n"
                "    setup(store)\n"
                "    store.load_plugin(sys.argv[1], {'path': sys.argv[2], 'snapshot_every': 2})\n"
                "    for _ in range(3):\n"
                "        store.dispatch('inc')\n")
    journal = os.path.join(out, "v2.journal")
    status, output = run([PYTHON, os.path.join(out, "py_versioned.py"), os.path.join(PLUGINS, "journal.so"), journal])
    if not check("a Python program of state version 2 records a journal", status == 0 and os.path.exists(journal),
                 output):
        return
    with open(journal, "rb") as f:
        data = f.read()
    check("the journal starts with its version record", data.startswith(b"V ") and b'{"version":2}' in data[:40],
          data[:80])
    test = os.path.join(out, "test_versioned.py")
    status, output = testgen("--lang", "python", "--reducers", "py_versioned:setup", "--python-path", out, journal,
                             "-o", test, python=PYTHON)
    check("testgen writes a pytest test of a versioned journal", status == 0, output)
    status, output = pytest(test)
    check("the generated test of the versioned journal passes", status == 0 and "1 passed" in output, output)
    status, output = testgen("--lang", "python", "--reducers", "py_versioned:setup3", "--python-path", out, journal,
                             "-o", test, python=PYTHON)
    check("a session of version 2 against reducers of version 3 is refused, naming both",
          status == 1 and "recorded at state version 2" in output and "is of version 3" in output, output)
    mixed = os.path.join(out, "mixed.journal")
    with open(mixed, "wb") as f:
        f.write(record("A", '{"type":"inc"}') + record("V", '{"version":2}') + record("A", '{"type":"inc"}'))
    status, output = testgen("--lang", "python", "--reducers", "py_versioned:setup", "--python-path", out, mixed,
                             "-o", test, python=PYTHON)
    check("a session of two state versions is refused", status == 1 and "state versions 0, 2" in output, output)


def python_recorder(work):
    """The recorder loaded from Python: a Python reducer that raises makes the
    dispatch fail (TS_E_REDUCER in the chain), the recorder dumps, and the
    dump becomes a pytest test that fails at that action until it is fixed."""
    out = os.path.join(work, "python-recorder")
    os.makedirs(out)
    module = shutil.copy(os.path.join(HERE, "py_bug.py"), os.path.join(out, "py_bug.py"))
    plugin = os.path.join(work, "recorder", "recorder.so")
    dump = os.path.join(out, "bug.session")
    status, output = run([PYTHON, module, plugin, dump])
    check("from Python, a reducer that raises makes the recorder dump", status == 0 and os.path.exists(dump)
          and "a reducer failed (TS_E_REDUCER) for \"items/boom\"" in output, output)
    status, output = testgen("--lang", "python", "--reducers", "py_bug:setup", "--python-path", out, dump,
                             "-o", os.path.join(out, "test_bug.py"), python=PYTHON)
    check("testgen makes a pytest test of the dump, warning that the action fails now",
          status == 0 and "(items/boom) fails now: raised ValueError" in output, output)
    status, output = pytest(os.path.join(out, "test_bug.py"))
    check("that test fails at the action, with the reducer's exception",
          status == 1 and "action 2 (items/boom): the dispatch gave raised ValueError, expected TS_OK: boom is not "
                          "handled" in output, output[-3000:])
    with open(module) as f:
        text = f.read()
    with open(module, "w") as f:
        f.write(text.replace('raise ValueError("boom is not handled")', "return list(state)"))
    status, output = pytest(os.path.join(out, "test_bug.py"))
    check("and passes once the reducer is fixed", status == 0 and "1 passed" in output, output[-3000:])


# ---- 5. The flight recorder -----------------------------------------------------------------

def recorder_tests(work):
    out = os.path.join(work, "recorder")
    os.makedirs(out)
    plugin = os.path.join(out, "recorder.so")
    status, output = run([CC] + CFLAGS + ["-shared", "-fPIC", "-I" + INCLUDE,
                                          os.path.join(ROOT, "Plugins", "recorder", "recorder.c"), "-o", plugin,
                                          "-lpthread"])
    check("recorder.so builds from the headers alone", status == 0, output)
    # test_recorder.c is on the one C harness (Tests/harness/ts_test.h): its
    # registry and main() come from gen_registry.py, for both builds.
    harness = os.path.join(ROOT, "Tests", "harness")
    registry = os.path.join(out, "registry_recorder.c")
    status, output = run([sys.executable, os.path.join(harness, "gen_registry.py"), "-o", registry,
                          os.path.join(HERE, "test_recorder.c")])
    if status != 0:
        raise SystemExit("gen_registry.py failed:\n" + output)
    harness_sources = ["-I" + harness, os.path.join(harness, "ts_test.c"), os.path.join(HERE, "test_recorder.c"),
                       registry]
    test = cc(harness_sources, os.path.join(out, "test_recorder"))
    status, output = run([test, plugin, out])
    print("    | " + output.strip().replace("\n", "\n    | "))
    check("test_recorder passes (config refusals, reducer-failure and crash dumps, deny rules, handlers)",
          status == 0 and " 0 failed" in output, "")

    fuzz_cc = os.environ.get("FUZZ_CC")
    asan_lib = os.path.join(BUILD, "asan", "lib")
    if fuzz_cc and os.path.exists(os.path.join(asan_lib, "libturnstate.so")):
        flags = shlex.split(os.environ.get("TS_SAN_CFLAGS", "-std=c99 -O1 -g")) + ["-fsanitize=address", "-I" + INCLUDE]
        status1, o1 = run([fuzz_cc] + flags + ["-shared", "-fPIC", os.path.join(ROOT, "Plugins", "recorder",
                                                                                "recorder.c"),
                                                 "-o", os.path.join(out, "recorder-asan.so"), "-lpthread"])
        status2, o2 = run([fuzz_cc] + flags + harness_sources + ["-o",
                                                 os.path.join(out, "test_recorder-asan"), "-fuse-ld=lld",
                                                 "-L" + asan_lib, "-Wl,-rpath," + asan_lib, "-lturnstate",
                                                 "-lpthread"])
        asan_work = os.path.join(out, "asan")
        os.makedirs(asan_work)
        status, output = run([os.path.join(out, "test_recorder-asan"), os.path.join(out, "recorder-asan.so"),
                              asan_work], env=ASAN_ENV)
        check("test_recorder passes under AddressSanitizer (leaks checked)",
              status1 == 0 and status2 == 0 and status == 0 and " 0 failed" in output, o1 + o2 + output[-3000:])
    else:
        check("test_recorder under ASan: FUZZ_CC and build/asan/lib (make asan-lib) are needed", False,
              "FUZZ_CC=%s" % fuzz_cc)

    bug = os.path.join(HERE, "bug_reducers.c")
    session = os.path.join(out, "reducer.session")
    status, output = testgen("--lang", "c", "--reducers", bug, "-I", INCLUDE, session,
                             "-o", os.path.join(out, "test_bug.c"))
    check("testgen makes a test of the reducer-failure dump, warning that the action fails now",
          status == 0 and "(items/boom) fails now: TS_E_REDUCER" in output, output)
    test = cc([os.path.join(out, "test_bug.c"), bug], os.path.join(out, "test_bug"))
    status, output = run([test])
    check("that test fails at the failed action, with the reducer's reason",
          status == 1 and re.search(r"FAIL action \d+ \(items/boom\): the dispatch returned TS_E_REDUCER, expected "
                                    r"TS_OK: the reducer for \"items\" failed for \"items/boom\": boom is not handled",
                                    output), output)
    fixed = cc([os.path.join(out, "test_bug.c"), bug], os.path.join(out, "test_bug_fixed"), ["-DTS_BUG_FIXED"])
    status, output = run([fixed])
    check("and passes once the reducer is fixed", status == 0 and " 0 failed" in output, output)

    session = os.path.join(out, "crash.session")
    status, output = testgen("--lang", "c", "--reducers", bug, "-I", INCLUDE, session,
                             "-o", os.path.join(out, "test_crash.c"))
    check("testgen makes a test of the crash dump, naming the action that crashed",
          status == 0 and "action 2 (items/crash): the replay crashed (SIGSEGV)" in output, output)
    test = cc([os.path.join(out, "test_crash.c"), bug], os.path.join(out, "test_crash"))
    status, output = run([test])
    check("that test dies of the same SIGSEGV", status == -signal.SIGSEGV, "exit status %d: %s" % (status, output))
    fixed = cc([os.path.join(out, "test_crash.c"), bug], os.path.join(out, "test_crash_fixed"), ["-DTS_BUG_FIXED"])
    status, output = run([fixed])
    check("and passes once the reducer is fixed", status == 0 and " 0 failed" in output, output)


# ---- 5b. The flight recorder from Rust and C++ ------------------------------------------

def read_session(path):
    """The records of a session file as (letter, JSON value), each one's
    length and CRC-32 checked (the journal's format); raises ValueError."""
    records = []
    with open(path, "rb") as f:
        for number, line in enumerate(f.read().split(b"\n")[:-1], 1):
            letter, length, crc, data = line.split(b" ", 3)
            if len(data) != int(length) or zlib.crc32(letter + data) & 0xFFFFFFFF != int(crc, 16):
                raise ValueError("line %d: wrong length or CRC-32: %r" % (number, line))
            records.append((letter.decode(), json.loads(data)))
    return records


def recorder_face(work, face, program, reducers_so, fixed_so, config, env=ENV):
    """A program of another face (Rust, C++) loads recorder.so with `config`
    (its path is added): its reducer fails for items/boom; the dump is in the
    journal's format with the rules applied (the secret/login action and the
    session key left out: no token in the file), and turnstate-testgen makes a
    C test of it over the program's own reducers (reducers_so: their
    ts_testgen_setup) that fails at items/boom with the reducer's message,
    and passes with the reducers fixed (fixed_so)."""
    out = os.path.join(work, face.lower().replace("+", "p") + "-recorder")
    os.makedirs(out)
    dump = os.path.join(out, "%s.session" % face.lower().replace("+", "p"))
    status, output = run(program + [json.dumps(dict(config, path=dump))], env=env)
    check("%s: the reducer fails for items/boom and the recorder dumps" % face,
          status == 0 and "items/boom: " in output and "boom is not handled" in output and os.path.exists(dump)
          and "a reducer failed (TS_E_REDUCER) for \"items/boom\"" in output, output[-3000:])
    if not os.path.exists(dump):
        return
    try:
        records = read_session(dump)
    except ValueError as error:
        records = []
        check("%s: the dump is in the journal's record format" % face, False, error)
    with open(dump, "rb") as f:
        data = f.read()
    check("%s: the dump is the state before, then the actions the reducers saw, the failed one last" % face,
          [r[0] for r in records] == ["S", "A", "A", "A", "A", "A"] and records[0][1] == {"count": 0, "items": []}
          and [r[1]["type"] for r in records[1:]] == ["items/add", "counter/inc", "items/add", "counter/inc",
                                                       "items/boom"], data.decode(errors="replace"))
    check("%s: the rules applied: no secret/login action, no session key, no token in the file (%s)"
          % (face, ", ".join(sorted(k for k in config if k != "path"))),
          records and b"secret" not in data and b"session" not in data and b"hunter2" not in data,
          data.decode(errors="replace"))
    status, output = testgen("--lang", "c", "--reducers", reducers_so, "-I", INCLUDE, dump,
                             "-o", os.path.join(out, "test_dump.c"))
    check("%s: testgen makes a C test of the dump over the program's reducers, warning that items/boom fails"
          % face, status == 0 and "action 4 (items/boom) fails now: TS_E_REDUCER" in output, output)
    test = cc([os.path.join(out, "test_dump.c"), reducers_so], os.path.join(out, "test_dump"))
    status, output = run([test])
    check("%s: that test reproduces the failure: action 4 (items/boom), with the reducer's message" % face,
          status == 1 and 'FAIL action 4 (items/boom): the dispatch returned TS_E_REDUCER, expected TS_OK: the '
                          'reducer for "items" failed for "items/boom": boom is not handled' in output
          and "5 passed, 1 failed" in output, output)
    test = cc([os.path.join(out, "test_dump.c"), fixed_so], os.path.join(out, "test_dump_fixed"))
    status, output = run([test])
    check("%s: and passes with the reducer fixed" % face, status == 0 and "6 passed, 0 failed" in output, output)


def rust_recorder(work):
    """Tests/testgen/rust_recorder: a Rust program (a turnstate::Store, the
    bindings of bindings/rust) loads recorder.so; its reducers, built as a
    cdylib with ts_testgen_setup, are what the test of its dump replays. Built
    with cargo in BUILD/rust (test-rust's target folder); the program also runs
    under valgrind, as test-rust's misuse tests do."""
    crate = os.path.join(HERE, "rust_recorder")
    cargo = os.environ.get("CARGO", "cargo")
    out = os.path.join(work, "rust-build")
    os.makedirs(out)
    env = dict(ENV, CARGO_TARGET_DIR=os.path.join(BUILD, "rust"), TURNSTATE_LIB_DIR=os.path.dirname(LIB),
               TURNSTATE_PLUGINS_DIR=PLUGINS)
    target = os.path.join(BUILD, "rust", "debug")
    built = {}
    # The buggy build last: the program (record) copied below is that one.
    for name, features in (("fixed", ["--features", "bug_fixed"]), ("buggy", [])):
        status, output = run([cargo, "build", "--offline", "--quiet"] + features, cwd=crate, env=env)
        if not check("cargo builds Tests/testgen/rust_recorder (%s)" % name, status == 0, output[-3000:]):
            return
        built[name] = shutil.copy(os.path.join(target, "librust_recorder.so"),
                                  os.path.join(out, "librust_recorder-%s.so" % name))
    program = shutil.copy(os.path.join(target, "record"), os.path.join(out, "record"))
    env = dict(ENV, LD_LIBRARY_PATH=os.path.dirname(LIB))
    config = {"deny_types": ["secret/*"], "deny_keys": ["session"]}
    recorder_face(work, "Rust", [program, os.path.join(PLUGINS, "recorder.so")], built["buggy"], built["fixed"],
                  config, env=env)
    dump = os.path.join(out, "valgrind.session")
    status, output = run(VALGRIND + [program, os.path.join(PLUGINS, "recorder.so"),
                                     json.dumps(dict(config, path=dump))], env=env)
    check("Rust: the program and its dump under valgrind (no invalid access, no leak)",
          status == 0 and os.path.exists(dump) and "boom is not handled" in output, output[-3000:])


def cpp_recorder(work):
    """Tests/testgen/cpp_recorder.cpp: a C++ program (Include/turnstate.hpp)
    loads recorder.so, built with -fsanitize=address by the Swift toolchain's
    clang++ (ASAN_CXX) against the ASan library and an ASan recorder.so, run
    with leak checks, as test-cpp's misuse.cpp; its reducers, built with $CXX
    as a shared object with ts_testgen_setup, are what the test of its dump
    replays."""
    source = os.path.join(HERE, "cpp_recorder.cpp")
    out = os.path.join(work, "cpp-build")
    os.makedirs(out)
    cxx = os.environ.get("CXX", "c++")
    flags = ["-std=c++17", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-I" + INCLUDE]
    reducers = {}
    for name, extra in (("buggy", []), ("fixed", ["-DTS_BUG_FIXED"])):
        so = os.path.join(out, "libcpp_recorder-%s.so" % name)
        status, output = run([cxx] + flags + ["-shared", "-fPIC", "-DTS_TESTGEN_REDUCERS_ONLY"] + extra +
                             [source, "-o", so] + LINK)
        if not check("%s builds cpp_recorder.cpp's reducers as a shared object (%s)" % (cxx, name), status == 0,
                     output[-3000:]):
            return
        reducers[name] = so
    asan_cxx = os.environ.get("ASAN_CXX")
    asan_lib = os.path.join(BUILD, "asan", "lib")
    asan_recorder = os.path.join(work, "recorder", "recorder-asan.so")
    if not check("C++: ASAN_CXX, build/asan/lib and the ASan recorder.so are there",
                 asan_cxx and os.path.exists(os.path.join(asan_lib, "libturnstate.so"))
                 and os.path.exists(asan_recorder), "ASAN_CXX=%s" % asan_cxx):
        return
    program = os.path.join(out, "cpp_recorder-asan")
    status, output = run([asan_cxx] + flags + ["-fsanitize=address", source, "-o", program, "-fuse-ld=lld",
                                               "-L" + asan_lib, "-Wl,-rpath," + asan_lib, "-lturnstate",
                                               "-lpthread"])
    if not check("C++: cpp_recorder.cpp builds with -fsanitize=address", status == 0, output[-3000:]):
        return
    recorder_face(work, "C++", [program, asan_recorder], reducers["buggy"], reducers["fixed"],
                  {"allow_types": ["items/*", "counter/*"], "allow_keys": ["count", "items"]}, env=ASAN_ENV)


# ---- 6. Swift --------------------------------------------------------------------------------

def swift_tests(work, journal, mutant_so, inspector, inspector_mutant_so, browser, browser_mutant_so):
    """One package for every session (built once): the todo journal, the
    inspector's export, the browser test's export and the recorder's
    reducer-failure dump."""
    package = os.path.join(BUILD, "testgen-swift")
    shutil.rmtree(os.path.join(package, "Tests"), ignore_errors=True)
    made = []
    for session, reducers in ((journal, os.path.join(ROOT, "Examples", "testgen", "todo_reducers.c")),
                              (inspector, os.path.join(HERE, "app_reducers.c")),
                              (browser, os.path.join(HERE, "app_reducers.c")),
                              (os.path.join(work, "recorder", "reducer.session"), os.path.join(HERE, "bug_reducers.c"))):
        if session is None:
            continue
        status, output = testgen("--lang", "swift", "--reducers", reducers, "-I", INCLUDE, session, "-o", package)
        made.append(status == 0)
        check("testgen adds a Swift test of %s to the package" % os.path.basename(session), status == 0, output)
    swift = os.environ.get("SWIFT", "swift")
    status, output = run([swift, "build", "--build-tests", "--package-path", package], cwd=package)
    if not check("the generated Swift test package builds", status == 0, output[-3000:]):
        return

    def swift_test(test, env=ENV):
        return run([swift, "test", "--skip-build", "--package-path", package, "--filter", test], cwd=package, env=env)
    status, output = swift_test("TodoJournalTests")
    check("the Swift test of the todo journal passes", status == 0 and "with 0 failures" in output, output[-3000:])
    status, output = swift_test("TodoJournalTests", dict(ENV, TURNSTATE_TESTGEN_REDUCERS=mutant_so))
    check("with todos/add changed, the Swift test fails naming action 0 (todos/add) and /todos/0/id",
          status != 0 and failure_named(output, 0, "todos/add", "/todos/0/id"), output[-3000:])
    for session, test, what, changed in ((inspector, "InspectorSessionTests", "the inspector's export",
                                          inspector_mutant_so),
                                         (browser, "BrowserSessionTests", "the browser test's export",
                                          browser_mutant_so)):
        if not session or not changed:
            continue
        status, output = swift_test(test)
        check("the Swift test of %s passes" % what, status == 0 and "with 0 failures" in output, output[-3000:])
        index = first_action(session, "counter/inc")
        status, output = swift_test(test, dict(ENV, TURNSTATE_TESTGEN_REDUCERS=changed))
        check("with counter/inc changed, the Swift test of %s fails naming action %d (counter/inc) and /count"
              % (what, index), status != 0 and failure_named(output, index, "counter/inc", "/count"), output[-3000:])
    status, output = swift_test("ReducerSessionTests")
    check("the Swift test of the recorder's dump fails at the failed action",
          status != 0 and re.search(r"action \d+ \(items/boom\): the dispatch gave TS_E_REDUCER, expected TS_OK",
                                    output), output[-3000:])


# ---- 7. TestStore tests of a typed Swift store ---------------------------------------

def counter_session(path, actions, snapshot_every_action=True):
    """A session of Tests/testgen/SwiftCounter in the journal's record format,
    written here (a model of the program's reducer gives the states): the
    initial snapshot, then each action and the snapshot after it, as the
    journal plugin writes them with "snapshot_every": 1."""
    state = {"count": 0, "notes": []}
    data = record("S", json.dumps(state))
    for i, action in enumerate(actions):
        data += record("A", json.dumps(action))
        if action["type"] == "counter/add":
            state["count"] += action["payload"]["by"]
        else:
            state["notes"].append(action["payload"]["text"])
        if snapshot_every_action or i == 0:
            data += record("S", json.dumps(state))
    with open(path, "wb") as f:
        f.write(data)
    return path


def recorded_counter_session(work):
    """The typed Swift program records its session: testgen-counter-recorder
    (Tests/testgen/SwiftCounterRecorder, a target of the root package, built
    in .build with the debug build make test has made already) runs a
    Store<CounterState> with the journal plugin loaded through
    TurnstatePlugins, "snapshot_every": 1. Returns the journal (no snapshot
    before the first action: the journal writes none), or None."""
    swift = os.environ.get("SWIFT", "swift")
    status, output = run([swift, "build", "--scratch-path", os.path.join(ROOT, ".build"), "--product",
                          "testgen-counter-recorder"], cwd=ROOT)
    if not check("the typed Swift program that records (testgen-counter-recorder) builds", status == 0,
                 output[-3000:]):
        return None
    journal = os.path.join(work, "counter.journal")
    status, output = run([os.path.join(ROOT, ".build", "debug", "testgen-counter-recorder"),
                          os.path.join(PLUGINS, "journal.so"), journal])
    final = json.loads(output.strip().splitlines()[-1]) if status == 0 and output.strip() else None
    if not check("it runs its Store<CounterState> with the journal plugin and records 4 actions, a snapshot after each",
                 final == {"count": 5, "notes": ["milk"]} and os.path.exists(journal), output[-3000:]):
        return None
    try:
        records = read_session(journal)
    except ValueError as error:
        records = error
    check("the journal holds the typed actions in their wire form, each followed by its state",
          isinstance(records, list) and [r[0] for r in records] == ["A", "S"] * 4
          and records[0][1] == {"type": "counter/add", "payload": {"by": 2}}
          and records[-1][1] == final, records)
    return journal


def teststore_tests(work):
    """--lang swift-teststore: a session that a typed Swift program recorded
    (recorded_counter_session: Tests/testgen/SwiftCounter's state, actions
    and reducer, Counter.swift, run with the journal plugin) becomes TestStore
    tests of its Swift reducer; built once, they pass, and with the reducer
    changed (COUNTER_CHANGED=1, read by the reducer: no second build) the
    tests of the changed actions fail with TestStore's diff, named by the
    action. The refusals use sessions written here."""
    program = os.path.join(HERE, "SwiftCounter")
    options = ["--lang", "swift-teststore", "--package", program, "--import", "Counter",
               "--state-type", "CounterState", "--reducer", "counterReducer", "--actions", "try counterActions()"]
    actions = [{"type": "counter/add", "payload": {"by": 2}}, {"type": "notes/add", "payload": {"text": "milk"}},
               {"type": "counter/add", "payload": {"by": 0}}, {"type": "counter/add", "payload": {"by": 3}}]
    torn = counter_session(os.path.join(work, "sparse.journal"), actions, snapshot_every_action=False)
    status, output = testgen(*options, torn, "-o", os.path.join(work, "sparse-teststore"))
    check("swift-teststore refuses a session without a snapshot after every action, naming the action",
          status == 1 and "action 1 (notes/add) has no snapshot (S record) after it" in output, output)
    status, output = testgen("--lang", "swift-teststore", "--import", "Counter", "--state-type", "CounterState",
                             "--reducer", "counterReducer", "--actions", "try counterActions()", torn,
                             "-o", os.path.join(work, "no-package"))
    check("swift-teststore without --package is refused with a message",
          status == 1 and "--lang swift-teststore needs --package" in output, output)
    session = recorded_counter_session(work)
    if session is None:
        return
    status, output = testgen(*options, session, "-o", os.path.join(work, "no-initial"))
    check("a session that starts with an action, without --initial-state, is refused with a message",
          status == 1 and "--initial-state" in output, output)
    package = os.path.join(BUILD, "testgen-teststore")
    shutil.rmtree(os.path.join(package, "Tests"), ignore_errors=True)
    status, output = testgen(*options, "--initial-state", "CounterState()", session, "-o", package)
    if not check("testgen writes TestStore tests of the session the Swift program recorded", status == 0, output):
        return
    swift = os.environ.get("SWIFT", "swift")
    env = dict(ENV, TURNSTATE_PACKAGE=ROOT)
    status, output = run([swift, "build", "--build-tests", "--package-path", package], cwd=package, env=env)
    if not check("the generated TestStore package builds", status == 0, output[-3000:]):
        return

    def swift_test(env):
        return run([swift, "test", "--skip-build", "--disable-swift-testing", "--package-path", package],
                   cwd=package, env=env)
    status, output = swift_test(env)
    check("the TestStore tests of the recorded session pass (4 actions)",
          status == 0 and "Executed 4 tests, with 0 failures" in output, output[-3000:])
    status, output = swift_test(dict(env, COUNTER_CHANGED="1"))
    failed_tests = set(re.findall(r"CounterJournalTests\.(testAction\w+) : failed", output))
    check("with counter/add changed, the tests of actions 0, 2, 3 (counter/add) fail, and 1 (notes/add) passes",
          status != 0 and failed_tests == {"testAction0_counter_add", "testAction2_counter_add",
                                           "testAction3_counter_add"}, output[-3000:])
    check("the failure of action 0 is TestStore's diff of the count",
          re.search(r"testAction0_counter_add : failed - The state does not match the expectation.*\n"
                    r"(?:.*\n)*?\s*\u2212\s+count: 2,\n\s*\+\s+count: 3,", output) is not None, output[-3000:])
    if os.environ.get("TS_TESTGEN_SHOW"):
        print(output[-2500:])


def main():
    work = tempfile.mkdtemp(prefix="turnstate-testgen-suite.")
    os.chmod(work, 0o755)
    try:
        refusals(work)
        pointer_escapes(work)
        journal = todo_journal(work)
        mutant_so = todo_tests(work, journal)
        session = inspector_session(work)
        inspector_mutant_so = inspector_tests(work, session) if session else None
        browser = browser_session(work)
        browser_mutant_so = inspector_tests(work, browser, "the browser test's export") if browser else None
        python_program(work)
        versioned_journal(work)
        recorder_tests(work)
        python_recorder(work)
        rust_recorder(work)
        cpp_recorder(work)
        if SWIFT:
            swift_tests(work, journal, mutant_so, session, inspector_mutant_so, browser, browser_mutant_so)
            teststore_tests(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("checks: %d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
