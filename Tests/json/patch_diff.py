#!/usr/bin/env python3
"""Differential test of tsj_patch_apply against the jsonpatch package (PyPI).

    patch_diff.py LIBTSJ.so [--cases N] [--seed S] [--show K]

LIBTSJ.so is turnstate_json.cpp built as a shared object (Tests/json/run.sh
builds it). Random documents and random patches (mostly valid, some not: bad
paths, missing members, unknown ops, moves into their own children, wrong
types) come from a fixed seed; each patch goes through

  - tsj_patch_apply, without an index and with tsj_doc_index (which must give
    the same answer, byte for byte),
  - jsonpatch on the values of json.loads with every number parsed as a
    decimal.Decimal: "exact jsonpatch", RFC 6902 with numbers compared by
    exact value, as turnstate_json.h documents,
  - jsonpatch on plain json.loads values (numbers as int and float).

A case passes when tsj and exact jsonpatch both refuse the patch, or both
accept it with the same result: the same values, the same member order, and
numbers with the same digits (tsj's result is parsed the same way). On
success tsj must also report the paths of the changing operations, in order.
Cases where plain jsonpatch answers otherwise are counted by cause; they are
jsonpatch's, not tsj's (see the summary it prints). Ends with
"N passed, M failed".
"""
import argparse
import ctypes
import decimal
import json
import random
import re
import sys

import jsonpatch


class TsjError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("offset", ctypes.c_longlong), ("message", ctypes.c_char * 256)]


PATH_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
TSJ_ERR_PATCH = 12


class Tsj:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        lib.tsj_patch_apply.argtypes = [vp, sz, vp, ctypes.c_char_p, sz, sz, ctypes.POINTER(vp),
                                        ctypes.POINTER(sz), PATH_CB, vp, ctypes.POINTER(TsjError)]
        lib.tsj_minify.argtypes = [ctypes.c_char_p, sz, ctypes.POINTER(vp), ctypes.POINTER(sz),
                                   ctypes.POINTER(TsjError)]
        lib.tsj_doc_index.argtypes = [vp, sz, sz, ctypes.POINTER(TsjError)]
        lib.tsj_doc_index.restype = vp
        lib.tsj_doc_free.argtypes = [vp]
        lib.tsj_code_name.restype = ctypes.c_char_p
        self.lib = lib
        self.libc = ctypes.CDLL(None)
        self.libc.free.argtypes = [vp]

    def _take(self, out, out_len):
        text = ctypes.string_at(out.value, out_len.value)
        self.libc.free(out)
        return text

    def minify(self, text):
        out, out_len, err = ctypes.c_void_p(), ctypes.c_size_t(), TsjError()
        rc = self.lib.tsj_minify(text, len(text), ctypes.byref(out), ctypes.byref(out_len), ctypes.byref(err))
        if rc:
            raise ValueError(err.message.decode())
        return self._take(out, out_len)

    def patch(self, doc, patch, with_index):
        """("ok", text or None for unchanged, paths) or ("err", code name, message, offset)."""
        buf = ctypes.create_string_buffer(doc, len(doc))
        addr = ctypes.addressof(buf)
        err = TsjError()
        index = None
        if with_index:
            index = self.lib.tsj_doc_index(addr, len(doc), ctypes.c_size_t(-1).value, ctypes.byref(err))
            if not index:
                raise RuntimeError("tsj_doc_index: " + err.message.decode())
        paths = []
        cb = PATH_CB(lambda p, n, ctx: paths.append(ctypes.string_at(p, n).decode()))
        out, out_len = ctypes.c_void_p(), ctypes.c_size_t()
        rc = self.lib.tsj_patch_apply(addr, len(doc), index, patch, len(patch), 256, ctypes.byref(out),
                                      ctypes.byref(out_len), cb, None, ctypes.byref(err))
        if index:
            self.lib.tsj_doc_free(index)
        if rc:
            if out.value:
                raise RuntimeError("failure with a result")
            return ("err", self.lib.tsj_code_name(rc).decode(), err.message.decode(), err.offset)
        return ("ok", self._take(out, out_len) if out.value else None, paths)


# ---- random JSON, written in varied spellings --------------------------------

KEYS = ["a", "b", "c", "id", "done", "", "0", "1", "-", "~", "/", "a/b", "~1", "x y", "\u00e9", "\U0001f600",
        "k\"q", "back\\slash", "nul\u0000", "tab\t"]


def rand_number(rng):
    r = rng.random()
    if r < 0.6:
        return rng.randint(-5, 20)
    if r < 0.75:
        return rng.choice([0, -0.0, 1.5, -2.25, 0.1, 1e-7, 3.0, 1e21, 123.456])
    if r < 0.85:
        return rng.choice([2**53 + 1, 2**63 - 1, -2**63, 2**64 - 1, 2**64, 10**30])
    return rng.uniform(-1000, 1000)


def rand_value(rng, depth=0, container=False):
    r = 0.45 + 0.55 * rng.random() if container else rng.random()
    if depth >= 4 or r < 0.45:
        s = rng.random()
        if s < 0.15:
            return rng.choice([None, True, False])
        if s < 0.55:
            return rand_number(rng)
        return rng.choice(KEYS + ["text", "more text", "1", "true", ""])
    if r < 0.72:
        return [rand_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = rng.sample(KEYS, rng.randint(0, 5))
    return {k: rand_value(rng, depth + 1) for k in keys}


def spell_number(rng, v):
    """A JSON spelling of v: integers as 7, 7.0, 7e0, 70E-1 ...; floats as repr or with an exponent."""
    if isinstance(v, int):
        s = rng.random()
        if s < 0.6 or abs(v) > 10**15:
            return str(v)
        if s < 0.75:
            return "%d.0" % v
        if s < 0.9:
            return "%de0" % v
        if v == 0:
            return "-0.0e5"
        return ("-" if v < 0 else "") + "%d0E-1" % abs(v)
    if v != v or v in (float("inf"), float("-inf")):
        raise ValueError(v)
    text = repr(v)
    if "e" not in text and rng.random() < 0.3:
        text = "%se0" % text
    return text


def spell_string(rng, s):
    out = ['"']
    for ch in s:
        code = ord(ch)
        r = rng.random()
        if ch == '"' or ch == "\\" or code < 0x20 or r < 0.1:
            if ch == "/" and r < 0.05:
                out.append("\\/")
            elif code > 0xFFFF:
                code -= 0x10000
                out.append("\\u%04x\\u%04X" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)))
            elif ch in '"\\' and r < 0.5:
                out.append("\\" + ch)
            elif ch == "\n" and r < 0.5:
                out.append("\\n")
            else:
                out.append("\\u%04x" % code)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def spell(rng, v, shuffle=False):
    """JSON text of v with random white space, number and string spellings (and member order)."""
    ws = lambda: rng.choice(["", "", "", " ", "\n  ", "\t"])
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (int, float)):
        return spell_number(rng, v)
    if isinstance(v, str):
        return spell_string(rng, v)
    if isinstance(v, list):
        return "[" + ws() + ("," + ws()).join(spell(rng, x, shuffle) for x in v) + ws() + "]"
    items = list(v.items())
    if shuffle:
        rng.shuffle(items)
    return "{" + ws() + ",".join(ws() + spell_string(rng, k) + ws() + ":" + ws() + spell(rng, x, shuffle)
                                 for k, x in items) + ws() + "}"


# ---- pointers ---------------------------------------------------------------

def esc(token):
    return token.replace("~", "~0").replace("/", "~1")


def all_pointers(v, base=""):
    out = [(base, v)]
    if isinstance(v, list):
        for i, x in enumerate(v):
            out += all_pointers(x, base + "/" + str(i))
    elif isinstance(v, dict):
        for k, x in v.items():
            out += all_pointers(x, base + "/" + esc(k))
    return out


def bad_pointer(rng, doc):
    ptrs = all_pointers(doc)
    base, v = rng.choice(ptrs)
    choices = ["a", "/~2", "/a~", base + "/nope", base + "/-", base + "/01", base + "/x/y"]
    if isinstance(v, list):
        choices += [base + "/" + str(len(v) + 1), base + "/-1", base + "/1e0", base + "/ 1"]
    return rng.choice(choices)


def target_for_add(rng, doc):
    """A path that add can use: an existing value, a new member, an index 0..len or '-'."""
    conts = [(p, v) for p, v in all_pointers(doc) if isinstance(v, (list, dict))]
    if not conts or rng.random() < 0.25:
        return rng.choice(all_pointers(doc))[0]
    p, v = rng.choice(conts)
    if isinstance(v, list):
        return p + "/" + rng.choice([str(rng.randint(0, len(v))), "-"])
    return p + "/" + esc(rng.choice(KEYS))


def rand_op(rng, doc):
    """One operation (a dict), mostly valid for doc."""
    ptrs = all_pointers(doc)
    existing = lambda: rng.choice(ptrs)[0] if rng.random() < 0.85 else bad_pointer(rng, doc)
    kind = rng.choices(["add", "remove", "replace", "move", "copy", "test"], [25, 15, 15, 12, 10, 23])[0]
    if kind == "add":
        path = target_for_add(rng, doc) if rng.random() < 0.9 else bad_pointer(rng, doc)
        return {"op": "add", "path": path, "value": rand_value(rng, 2)}
    if kind == "remove":
        inner = [p for p, _ in ptrs if p]  # removing "" always fails: now and then
        return {"op": "remove", "path": rng.choice(inner) if inner and rng.random() < 0.95 else existing()}
    if kind == "replace":
        return {"op": "replace", "path": existing(), "value": rand_value(rng, 2)}
    if kind in ("move", "copy"):
        src = existing()
        if kind == "move" and rng.random() < 0.1:
            return {"op": "move", "from": src, "path": src + "/" + rng.choice(["0", "a", "-"])}
        return {"op": kind, "from": src, "path": target_for_add(rng, doc) if rng.random() < 0.9 else src}
    path = existing()
    actual = dict(ptrs).get(path, None)
    r = rng.random()
    numeric = isinstance(actual, (int, float)) and not isinstance(actual, bool) and path in dict(ptrs)
    if numeric and r < 0.25:
        # equal to actual only as doubles (0.1 and 0.1000000000000000055511151231257827021181583404541015625),
        # or only exactly (9007199254740993 and 9007199254740993.0): where jsonpatch's numbers part from RFC 6902's
        value = (decimal.Decimal(actual) if isinstance(actual, float)
                 else decimal.Decimal("%d.0" % actual))
    elif r < 0.6 and path in dict(ptrs):
        value = actual  # the same value, spelled differently when the patch is written
    elif r < 0.7 and numeric:
        value = rng.choice([actual + 1, -actual, True, 1])
    else:
        value = rand_value(rng, 3)
    return {"op": "test", "path": path, "value": value}


def break_op(rng, op):
    """Makes an operation invalid (or adds members that must be ignored)."""
    op = dict(op)
    r = rng.randrange(9)
    if r == 0:
        del op["op"]
    elif r == 1:
        op["op"] = rng.choice(["delete", "ADD", "append", "", "_get"])
    elif r == 2:
        op["op"] = rng.choice([1, None, ["add"]])
    elif r == 3:
        del op["path"]
    elif r == 4:
        op["path"] = rng.choice([1, None, ["/a"], {"p": "/a"}])
    elif r == 5:
        op.pop("value", None)
        op.pop("from", None)
    elif r == 6:
        op["from"] = rng.choice([7, False, "x", "/~3"])
    elif r == 7:
        op["extra"] = rand_value(rng, 3)  # ignored
    else:
        return rng.choice([[], 0, "op", None])
    return op


def rand_patch(rng, doc):
    """A patch as Python values: ops made against the document as it evolves."""
    ops, cur = [], doc
    for _ in range(rng.choices([0, 1, 2, 3, 4], [2, 50, 25, 13, 10])[0]):
        op = rand_op(rng, cur)
        if rng.random() < 0.06:
            op = break_op(rng, op)
        ops.append(op)
        try:
            cur = exact_apply(cur, [op])
        except Exception:  # later operations are made against the last good state
            pass
    if rng.random() < 0.01:
        return rng.choice([{}, "[]", 1, None])
    return ops


# ---- the references ---------------------------------------------------------

def exact_loads(text):
    return json.loads(text, parse_float=decimal.Decimal, parse_int=decimal.Decimal)


def exact_apply(doc, patch):
    return jsonpatch.JsonPatch(patch).apply(doc)


def same(a, b):
    """Equal JSON values of the same types, members in the same order, numbers with the same digits."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, decimal.Decimal):
        return repr(a) == repr(b)
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def as_floats(v):
    """v with every number as a float (bools stay), to compare plain and exact results."""
    if isinstance(v, dict):
        return {k: as_floats(x) for k, x in v.items()}
    if isinstance(v, list):
        return [as_floats(x) for x in v]
    if isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool):
        return float(v)
    return v


def reference(doc_text, patch_text, loads):
    """("ok", value) or ("err", exception class name) from jsonpatch on values of loads()."""
    try:
        return ("ok", jsonpatch.JsonPatch(loads(patch_text)).apply(loads(doc_text)))
    except Exception as ex:  # jsonpatch raises more than JsonPatchException on some bad patches
        return ("err", type(ex).__name__)


def reason_of(message):
    """A tsj message without its particulars: 'op 1 ("add" at "/a/3"): index "3" is out of range ...'
    -> 'index is out of range'."""
    m = re.sub(r'^op \d+( \([^)]*\))?: ', "", message)
    m = re.sub(r'"([^"\\]|\\.)*"|\(.*\)|at byte \d+|\d+', "", m)
    return " ".join(m.split()[:6])


def expected_paths(patch):
    out = []
    for op in patch:
        if op["op"] == "test":
            continue
        if op["op"] == "move":
            out.append(op["from"])
        out.append(op["path"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--show", type=int, default=8)
    args = ap.parse_args()
    tsj = Tsj(args.lib)
    rng = random.Random(args.seed)
    counts = {"both applied, same result": 0, "both refused": 0}
    plain_differs = {}
    failures = []
    codes = {}
    reasons = {}
    examples = []
    for case in range(args.cases):
        doc_value = rand_value(rng, container=True) if rng.random() < 0.9 else rng.choice([1, "s", None, [], {}])
        doc = tsj.minify(spell(rng, doc_value).encode())
        patch_value = rand_patch(rng, json.loads(doc))
        patch = spell(rng, patch_value, shuffle=True).encode() if rng.random() < 0.98 else b'[{"op":"add","path":"/a","value":1,"op":"test"}]'
        a = tsj.patch(doc, patch, False)
        b = tsj.patch(doc, patch, True)
        exact = reference(doc, patch, exact_loads)
        plain = reference(doc, patch, json.loads)
        why = None
        if a != b:
            why = "with and without the index differ: %r / %r" % (a, b)
        elif a[0] == "ok" and exact[0] == "ok":
            got = exact_loads(a[1] if a[1] is not None else doc)
            if not same(got, exact[1]):
                why = "results differ: tsj %s, jsonpatch %s" % (a[1] or doc, json.dumps(exact[1], default=str))
            elif a[2] != expected_paths(json.loads(patch)):
                why = "paths reported %r, want %r" % (a[2], expected_paths(json.loads(patch)))
            else:
                counts["both applied, same result"] += 1
        elif a[0] == "err" and exact[0] == "err":
            counts["both refused"] += 1
            codes[a[1]] = codes.get(a[1], 0) + 1
            reason = reason_of(a[2])
            reasons[reason] = reasons.get(reason, 0) + 1
        else:
            why = "tsj %s, jsonpatch %s" % (a if a[0] == "err" else "applied: %s" % (a[1] or doc), exact[0] == "ok" and "applied: " + json.dumps(exact[1], default=str) or "refused: " + exact[1])
        if why:
            failures.append("case %d: doc %s patch %s: %s" % (case, doc.decode(), patch.decode(), why))
        # where plain jsonpatch (numbers as Python int/float) answers otherwise than exact
        if plain[0] != exact[0]:
            cause = ("accepts a test that exact refuses" if plain[0] == "ok" else
                     "refuses a test that exact accepts")
            plain_differs[cause] = plain_differs.get(cause, 0) + 1
            if len(examples) < 2:
                examples.append("doc %s patch %s" % (doc.decode(), " ".join(patch.decode().split())))
        elif plain[0] == "ok" and not same(as_floats(plain[1]), as_floats(exact[1])):
            plain_differs["other"] = plain_differs.get("other", 0) + 1
            print("note: plain jsonpatch gives another result: doc %s patch %s" % (doc.decode(), patch.decode()))
    for f in failures[:args.show]:
        print("FAIL " + f)
    print("patch-diff: %d cases (seed %d), jsonpatch %s" % (args.cases, args.seed, jsonpatch.__version__))
    for k, v in counts.items():
        print("  %-28s %d" % (k, v))
    print("  refusals by tsj code: " + ", ".join("%s %d" % kv for kv in sorted(codes.items())))
    print("  refusals by reason: " + ", ".join("%s %d" % kv for kv in sorted(reasons.items(), key=lambda kv: -kv[1])))
    print("  disagreements with exact jsonpatch: %d" % len(failures))
    for k, v in sorted(plain_differs.items()):
        print("  plain jsonpatch (numbers as Python int/float) %s: %d" % (k, v))
    for e in examples:
        print("    e.g. " + e)
    passed = args.cases - len(failures)
    print("%d passed, %d failed" % (passed, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
