#!/usr/bin/env python3
"""Differential fuzz target: JSON Patches applied THROUGH THE STORE (a Python
reducer of the turnstate package that returns turnstate.Patch(ops), applied by
ts_reducer_patch) against the jsonpatch package (PyPI) on the same document.

    fuzz_store_patch.py FILE...                    replay: each file once (no atheris)
    fuzz_store_patch.py --seeded N [--seed S]      N random cases from seed S
    fuzz_store_patch.py --write-seeds DIR N        write N generated cases as corpus files
    fuzz_store_patch.py -atheris [libFuzzer options] [CORPUS...]   fuzz (atheris)

An input is the document (one line of JSON: the slice's value) and the patch
(the next line: a JSON array of operations); any other bytes seed the random
generator of Tests/json/patch_diff.py, which then makes the document and the
patch (so that the fuzzer's mutations reach every kind of case).

One case: a store {"doc": DOC, "other": {"n": 1}} whose reducer for "doc"
returns Patch(ops) for the action "apply" (half the cases added with on=,
ts_store_add_reducer_for), and jsonpatch applied to the same document
("exact jsonpatch": numbers parsed as decimal.Decimal and booleans tagged, so
that numbers compare by exact value as RFC 6902 section 4.6 says, and
1 == true does not hold as it does in Python). It passes when
  - both apply the patch and the store's slice, parsed with exact numbers,
    is jsonpatch's result (same types, member order, numbers of equal value),
    the other slice untouched; or
  - both refuse it, the dispatch raised ReducerError whose message names the
    operation that failed, as 'op I ("OP" at "PATH")' (I: the first
    operation jsonpatch refuses, applied one by one; the op name and path
    when they are strings), and the state is byte-identical to before
    (TypeError from Patch() when an operation is not a mapping);
and then the reducer's next call ("probe") gets its slice as the package
kept it (the kept value with the patch applied, or unchanged), equal to the
store's slice read again.
Known differences that are not checked: a result nested deeper than
TS_MAX_DEPTH (the store refuses it, jsonpatch has no limit) and documents the
store cannot hold are skipped and counted.
Ends with "store-patch: N passed, M failed".
"""
import decimal
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "json"))

FUZZING = len(sys.argv) > 1 and sys.argv[1] == "-atheris"
if FUZZING:
    import atheris  # only for fuzzing; the replay and the seeded run do without it

    with atheris.instrument_imports():
        import jsonpatch
        import patch_diff
        import turnstate
else:
    import jsonpatch
    import patch_diff
    import turnstate

MAX_DEPTH = 256  # TS_MAX_DEPTH: the state object, then the slice's own nesting


class JBool:
    """A JSON true/false that equals only itself: with plain bools, Python's
    1 == True would make jsonpatch's "test" hold where RFC 6902 says it fails."""
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, JBool) and self.v == other.v

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(("JBool", self.v))

    def __repr__(self):
        return "true" if self.v else "false"

    def __deepcopy__(self, memo):
        return self


def tag(v):
    if v is True or v is False:
        return JBool(v)
    if isinstance(v, dict):
        return {k: tag(x) for k, x in v.items()}
    if isinstance(v, list):
        return [tag(x) for x in v]
    return v


def exact_loads(text):
    """JSON text to values with every number a Decimal (exact)."""
    return json.loads(text, parse_float=decimal.Decimal, parse_int=decimal.Decimal)


def same(a, b):
    """The same JSON value: types, member order, numbers by exact value."""
    if isinstance(a, JBool) or isinstance(b, JBool):
        return isinstance(a, JBool) and isinstance(b, JBool) and a.v == b.v
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def same_python(a, b):
    """As the package reads JSON: dicts and lists (read-only or not), floats by repr."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same_python(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_python(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def depth(v):
    if isinstance(v, dict):
        return 1 + max((depth(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((depth(x) for x in v), default=0)
    return 0


def reference(doc, ops):
    """("ok", result) or ("err", index of the first operation that fails, exception)."""
    try:
        return ("ok", jsonpatch.JsonPatch(tag(ops)).apply(tag(doc)))
    except Exception as whole:  # jsonpatch raises more than JsonPatchException on bad patches
        if not isinstance(ops, list):
            return ("err", None, whole)
        cur = tag(doc)
        for i, op in enumerate(ops):
            try:
                cur = jsonpatch.JsonPatch([tag(op)]).apply(cur)
            except Exception as ex:
                return ("err", i, ex)
        return ("err", None, whole)


OPS = ("add", "remove", "replace", "move", "copy", "test")


def pointer_tokens(p):
    """The tokens of an RFC 6901 pointer, or None when it is not one."""
    if not isinstance(p, str) or (p and not p.startswith("/")):
        return None
    if re.search(r"~(?![01])", p):
        return None
    return [t.replace("~1", "/").replace("~0", "~") for t in p.split("/")[1:]]


def malformed(op):
    """Is the operation wrong whatever the document (its form, not its target)?"""
    name = op.get("op")
    if name not in OPS or not isinstance(name, str) or pointer_tokens(op.get("path")) is None:
        return True
    if name in ("add", "replace", "test"):
        return "value" not in op
    if name in ("move", "copy"):
        source = pointer_tokens(op.get("from"))
        if source is None:
            return True
        path = pointer_tokens(op["path"])
        return name == "move" and len(path) > len(source) and path[:len(source)] == source
    return False


def expected_index(ops, ref):
    """The operation the store names when it refuses: the patch's form is
    checked first (the first malformed operation), then the operations are
    applied in order (the first that jsonpatch refuses)."""
    for i, op in enumerate(ops):
        if malformed(op):
            return i
    return ref[1]


def quote(text):
    """A string as the store's messages quote it: JSON, control characters as \\u00XX."""
    out = json.dumps(text, ensure_ascii=False)
    return re.sub(r"\\([\\\"]|[bfnrt])", lambda m: m.group(0) if m.group(1) in '\\"' else
                  "\\u%04x" % ord({"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}[m.group(1)]), out)


def message_names(message, i, op):
    """Does the store's message name operation i (and its op and path)?"""
    head = 'returned a patch that failed for "apply": op %d' % i
    if head + " " not in message and head + ":" not in message:
        return False
    if isinstance(op.get("op"), str) and isinstance(op.get("path"), str) and op["op"] in OPS:
        # A long path is cut: "/aaaa..."...
        m = re.search(re.escape('%s ("%s" at ' % (head, op["op"])) + r'("(?:[^"\\]|\\.)*")(\.\.\.)?\)', message)
        if not m:
            return False
        return m.group(1) == quote(op["path"]) if not m.group(2) else quote(op["path"]).startswith(m.group(1)[:-1])
    return True


def unordered(v):
    if isinstance(v, dict):
        return sorted((k, unordered(x)) for k, x in v.items())
    if isinstance(v, list):
        return [unordered(x) for x in v]
    return repr(v) if isinstance(v, float) else v


def known_fault(name, ops, kept, want):
    """An open fault (Tests/fuzz/README.md), stepped over only when TS_FUZZ_KNOWN names it.
    py-kept-move-noop: a "move" whose "from" is its "path" (a no-op in RFC 6902, and in
    the store) moves the member to the end of its object in the package's kept value
    when the patch changes something else too; the next call then sees another order."""
    if name not in os.environ.get("TS_FUZZ_KNOWN", "").split(","):
        return False
    if name == "py-kept-move-noop":
        return any(op.get("op") == "move" and op.get("from") == op.get("path") for op in ops) and \
            unordered(kept) == unordered(want)
    return False


class Stats:
    def __init__(self):
        self.cases = 0
        self.counts = {}
        self.failures = []

    def count(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1


def check(doc_text, patch_text, filtered, stats):
    """One case; returns None when it passes (or is skipped), else what went wrong."""
    try:
        doc = exact_loads(doc_text)
        ops = exact_loads(patch_text)
    except (ValueError, RecursionError):
        stats.count("skipped: not JSON")
        return None
    try:
        (doc_text + patch_text).encode("utf-8")
        json.dumps([doc, ops], ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        # An escaped lone surrogate: Python reads it, strict JSON (the store's) has none.
        stats.count("skipped: a lone surrogate (not JSON the store can be given)")
        return None
    if depth(doc) >= MAX_DEPTH - 1 or depth(ops) >= MAX_DEPTH - 3:
        stats.count("skipped: nested too deep for the store")
        return None
    try:
        store = turnstate.Store(initial={"doc": doc, "other": {"n": 1}})
    except turnstate.TurnstateError:
        stats.count("skipped: the store does not take the document")
        return None
    seen = []

    def reducer(state, action):
        if action.type == "apply":
            return turnstate.Patch(ops)
        if action.type == "probe":
            seen.append(state)
        return None

    try:
        store.reducer("doc", reducer, on=["apply", "probe"] if filtered else None)
        before = store.get_json("")
        error = None
        try:
            store.dispatch("apply")
        except Exception as ex:  # what the dispatch raised is checked below
            error = ex
        after = store.get_json("")
        ref = reference(doc, ops)
        if ref[0] == "ok" and error is None:
            got = tag(exact_loads(store.get_json("/doc")))
            if not same(got, ref[1]):
                return "results differ: store %s, jsonpatch %r" % (store.get_json("/doc"), ref[1])
            if store.get_json("/other") != '{"n":1}':
                return "the other slice changed: %s" % store.get_json("/other")
            stats.count("both applied, same result")
        elif ref[0] == "err" and error is not None:
            if after != before:
                return "refused (%s), but the state changed: %s -> %s" % (error, before, after)
            if not (isinstance(ops, list) and all(isinstance(op, dict) for op in ops)):
                # Patch() takes a list of mappings: it refuses the rest before the store sees them.
                if not isinstance(error, TypeError):
                    return "Patch(%r) raised %s, not TypeError: %s" % (ops, type(error).__name__, error)
                stats.count("both refused (Patch() refused a non-list or non-mapping)")
            elif not isinstance(error, turnstate.ReducerError):
                return "refused with %s, not ReducerError: %s" % (type(error).__name__, error)
            elif expected_index(ops, ref) is None:
                return "jsonpatch refused the whole patch but no single operation: %s" % ref[2]
            elif not message_names(str(error), expected_index(ops, ref), ops[expected_index(ops, ref)]):
                i = expected_index(ops, ref)
                return "the message does not name op %d %s: %s" % (i, json.dumps(ops[i], default=str), error)
            else:
                stats.count("both refused")
        elif error is not None and ref[0] == "ok" and isinstance(error, turnstate.ReducerError) and \
                "deeper" in str(error) and depth(ref[1]) >= MAX_DEPTH - 1:
            if after != before:
                return "refused (%s), but the state changed" % error
            stats.count("skipped: the result is nested too deep for the store (refused, state unchanged)")
            return None
        elif error is not None:
            return "the store refused (%s: %s), jsonpatch applied: %r" % (type(error).__name__, error, ref[1])
        else:
            return "the store applied it (%s), jsonpatch refused: %s: %s" % (
                store.get_json("/doc"), type(ref[2]).__name__, ref[2])
        # The reducer's next call gets its kept value (patched, or unchanged).
        store.dispatch("probe")
        want = store.get("/doc")
        if len(seen) == 1 and not same_python(seen[0], want) and known_fault("py-kept-move-noop", ops, seen[0], want):
            stats.count("stepped over: open fault py-kept-move-noop (TS_FUZZ_KNOWN)")
            return None
        if len(seen) != 1 or not same_python(seen[0], want):
            return "the reducer's next call got %r, the store holds %s" % (seen[:1], store.get_json("/doc"))
        return None
    finally:
        store.close()


def case_of(data):
    """(doc text, patch text) of an input: two lines of JSON, else generated from its bytes."""
    lines = data.split(b"\n")
    if len(lines) >= 2 and not any(lines[2:]):
        try:
            doc_text, patch_text = lines[0].decode("utf-8"), lines[1].decode("utf-8")
            json.loads(doc_text), json.loads(patch_text)
            return doc_text, patch_text
        except (UnicodeDecodeError, ValueError, RecursionError):
            pass
    return generate(random.Random(data))


def dumps_exact(v):
    """One line of JSON; a Decimal as its exact digits."""
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + dumps_exact(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(dumps_exact(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


def generate(rng):
    doc_value = patch_diff.rand_value(rng, container=True) if rng.random() < 0.9 else \
        rng.choice([1, "s", None, [], {}, True, 2.5])
    doc_text = dumps_exact(doc_value)
    ops = patch_diff.rand_patch(rng, exact_loads(doc_text))
    return doc_text, dumps_exact(ops)


def run_one(data, stats, label):
    doc_text, patch_text = case_of(data)
    stats.cases += 1
    filtered = (sum(data) & 1) == 1
    why = check(doc_text, patch_text, filtered, stats)
    if why:
        stats.failures.append("%s: doc %s patch %s: %s" % (label, doc_text, patch_text, why))
    return why


def report(stats, what):
    for f in stats.failures[:10]:
        print("FAIL " + f)
    for k, v in sorted(stats.counts.items()):
        print("  %-60s %d" % (k, v))
    total = stats.cases
    print("%s: jsonpatch %s, turnstate %s (%s)" % (what, jsonpatch.__version__, turnstate.__version__,
                                                  turnstate.library_path()))
    print("store-patch: %d passed, %d failed" % (total - len(stats.failures), len(stats.failures)))
    return 1 if stats.failures else 0


def main(argv):
    stats = Stats()
    if argv and argv[0] == "-atheris":
        def one(data):
            why = run_one(data, stats, "input")
            if why:
                raise AssertionError("INVARIANT VIOLATED: " + stats.failures[-1])
        atheris.Setup([sys.argv[0]] + argv[1:], one)
        atheris.Fuzz()
        return 0
    if argv and argv[0] == "--seeded":
        n = int(argv[1])
        seed = int(argv[3]) if len(argv) > 3 and argv[2] == "--seed" else 19
        rng = random.Random(seed)
        for case in range(n):
            doc_text, patch_text = generate(rng)
            data = ("%s\n%s\n" % (doc_text, patch_text)).encode()
            run_one(data, stats, "case %d" % case)
        return report(stats, "%d seeded cases (seed %d)" % (n, seed))
    if argv and argv[0] == "--write-seeds":
        folder, n = argv[1], int(argv[2])
        rng = random.Random(6902)
        os.makedirs(folder, exist_ok=True)
        for case in range(n):
            doc_text, patch_text = generate(rng)
            with open(os.path.join(folder, "gen_%03d" % case), "w", encoding="utf-8") as f:
                f.write("%s\n%s\n" % (doc_text, patch_text))
        return 0
    if not argv:
        print(__doc__)
        return 2
    for path in argv:
        with open(path, "rb") as f:
            run_one(f.read(), stats, os.path.basename(path))
    return report(stats, "%d inputs replayed" % len(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
