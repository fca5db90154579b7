#!/usr/bin/env python3
"""Writes the seed corpora of the fuzzers (Tests/fuzz/corpus/TARGET/NAME),
made from the interesting inputs of the test suites (Tests/c, Tests/json,
Tests/plugins). Run from anywhere; rewrites only the seed files it names
(inputs that fuzzing found, named found-*, are kept)."""
import os, zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

# Reproducers of open faults (Tests/fuzz/README.md): replayed only by hand.
OPEN = set()

def write(target, name, data):
    d = os.path.join(ROOT if (target, name) not in OPEN else os.path.join(ROOT, "..", "open"), target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

deep_ok = "{\"d\":" + "[" * 255 + "]" * 255 + "}"
deep_bad = "{\"d\":" + "[" * 256 + "]" * 256 + "}"
create = {
    "empty": "{}", "ws": " \t\n\r{ \"a\" : 1 }\n", "nested": "{\"a\":{\"b\":[1,{\"c\":\"d\"},[]]},\"e\":null}",
    "numbers": "{\"u\":18446744073709551615,\"i\":-9223372036854775808,\"f\":1.0,\"e\":1E+2,\"z\":-0,\"big\":123456789012345678901234567890}",
    "escapes": "{\"s\":\"\\u0041\\/\\\"\\\\\\b\\f\\n\\r\\t\",\"\\u00e9\":1,\"\\ud83d\\ude00\":2}",
    "key_escapes": "{\"a\\u0000b\":1,\"\\n\":2,\"\\u001f\":3,\"q\\\"\":4}",
    "dup_top": "{\"a\":1,\"a\":2}", "dup_escaped": "{\"a\":1,\"\\u0061\":2}", "dup_nested": "{\"a\":{\"b\":1,\"b\":2}}",
    "lone_high": "{\"a\":\"\\ud800\"}", "lone_low": "{\"a\":\"\\udc00\"}", "bad_utf8": b"{\"a\":\"\xc3\x28\"}",
    "overlong": b"{\"a\":\"\xc0\xaf\"}", "surrogate_raw": b"{\"a\":\"\xed\xa0\x80\"}", "utf8_4": "{\"\U0001F600\":\"\u00e9\u4e2d\"}",
    "not_object": "[1,2]", "scalar": "1", "trailing": "{} x", "trailing_comma": "{\"a\":1,}", "ctrl": "{\"a\":\"\x01\"}",
    "deep_ok": deep_ok, "deep_bad": deep_bad, "bad_number": "{\"a\":01}", "bad_number2": "{\"a\":1.}",
    "literals": "{\"t\":true,\"f\":false,\"n\":null}", "bad_literal": "{\"t\":tru}", "empty_key": "{\"\":0}",
    "many": "{" + ",".join("\"k%d\":%d" % (i, i) for i in range(40)) + "}",
}
for k, v in create.items():
    write("create", k, v)

dispatch = {
    "basic": "{\"type\":\"a=\",\"payload\":1}\n{\"type\":\"b+\",\"payload\":[true]}\n{\"type\":\"push\",\"payload\":\"x\"}",
    "raw_bad": "{\"type\":\"a!{bad\"}\n{\"type\":\"a!\\\"ok\\\"\"}",
    "raw_deep": "{\"type\":\"a!" + "[" * 257 + "]" * 257 + "\"}",
    "deny": "{\"type\":\"deny/all\",\"payload\":1}\n{\"type\":\"a=\",\"payload\":2}",
    "swallow": "{\"type\":\"swallow\",\"payload\":1}",
    "rewrite": "{\"type\":\"rewrite\",\"payload\":{\"type\":\"a=\",\"payload\":3}}\n{\"type\":\"rewrite\",\"payload\":[1]}",
    "nested": "{\"type\":\"nested\",\"payload\":{\"type\":\"c~/x=\",\"payload\":\"n\"}}\n{\"type\":\"nested\",\"payload\":{\"type\":\"nested\",\"payload\":{\"type\":\"a+\",\"payload\":0}}}",
    "after": "{\"type\":\"after\"}\n{\"type\":\"nested\",\"payload\":{\"type\":\"after\"}}",
    "reenter": "{\"type\":\"reenter\"}",
    "get": "{\"type\":\"get\",\"payload\":\"/b/0\"}\n{\"type\":\"get\",\"payload\":\"~x\"}",
    "pop": "{\"type\":\"push\",\"payload\":1}\n{\"type\":\"push\",\"payload\":{\"a\":[2]}}\n{\"type\":\"pop\"}\n{\"type\":\"pop\"}\n{\"type\":\"pop\"}",
    "not_action": "[1]\n{\"payload\":1}\n{\"type\":\"\"}\n{\"type\":1}\n{\"type\":\"a\\u0000\"}\n{\"type\":\"a=\",\"payload\":1,\"payload\":2}",
    "bad_json": "{\"type\":\"a=\",\"payload\":\"\\ud800\"}\n{\"type\":\"a=\"} x\nnope",
    "escaped_type": "{\"typ\\u0065\":\"a\\u003d\",\"payload\":{\"k\":\"\\u00e9\"}}\n{\"type\":\"caf\\u00e9 \\ud83d\\ude00\"}",
    "numbers": "{\"type\":\"a=\",\"payload\":18446744073709551615}\n{\"type\":\"a=\",\"payload\":1.0}\n{\"type\":\"a=\",\"payload\":1}",
    "set_same": "{\"type\":\"a=\",\"payload\":0}\n{\"type\":\"b=\",\"payload\":[1,2]}",
    "deepen": "\n".join(["{\"type\":\"a+\",\"payload\":0}"] * 12),
    "type_payload_null": "{\"payload\":null,\"type\":\"a=\"}",
}
for k, v in dispatch.items():
    write("dispatch", k, v)

pointer = {
    "whole": "", "a": "/a", "deep": "/a/b/1/c", "index": "/list/10", "index_oob": "/list/11", "leading_zero": "/list/01",
    "dash": "/list/-", "empty_key": "/a/", "escapes": "/a/~0~1", "escape_x": "/a/x~1y/~00", "bad_tilde": "/a/~2",
    "no_slash": "a", "e_acute": "/\u00e9", "string": "/s", "into_scalar": "/t/x",
    "null": "/n", "missing": "/zz", "state_given": "/k/0\n{\"k\":[{\"x\":1}],\"\":2}\n{\"y\":2}",
    "state_root_empty": "/\n{\"\":[1]}\n[2]", "state_dup_nested": "/k/a\n{\"k\":{\"a\":1,\"a\":2}}\n{\"a\":3}",
    "state_big": "/k/20\n{\"k\":{" + ",".join("\"%d\":%d" % (i, i) for i in range(30)) + "}}\n{}",
    "set_same": "/a\n{\"a\":[1]}\n[1]", "set_number_text": "/a\n{\"a\":1}\n1.0", "bad_utf8": b"/\xff",
    "nul_key": "/a\u0000b", "unicode_escape_key": "/\u00e9\n{\"\\u00e9\":1}\n2",
}
for k, v in pointer.items():
    write("pointer", k, v)

def rec(letter, json):
    return "%s %d %08x %s\n" % (letter, len(json.encode()), zlib.crc32((letter + json).encode()), json)

a1 = rec("A", "{\"type\":\"a=\",\"payload\":1}")
a2 = rec("A", "{\"type\":\"b+\",\"payload\":{\"x\":[true]}}")
s1 = rec("S", "{\"b\":[1,2],\"a\":1}")
journal = {
    "empty": "", "one": a1, "two": a1 + a2, "snapshot": a1 + s1 + a2, "torn": a1 + a2[:-5], "torn_newline": a1 + a2[:-1],
    "crc_bad_last": a1 + a2.replace("true", "fals"), "crc_bad_middle": a1.replace("1}", "2}") + a2,
    "garbage_middle": a1 + "xx\n" + a2, "header_bad": "A 12 zzzzzzzz {}\n", "length_long": "A 999 00000000 {}\n",
    "snapshot_only": s1, "snapshot_bad_json": rec("S", "{\"b\":}"), "snapshot_not_object": rec("S", "[1]"),
    "action_bad": rec("A", "{\"type\":\"a!{\"}"), "action_not_action": rec("A", "[1]"),
    "unknown_letter": rec("X", "{}"), "fix_basic": "#fix\nA {\"type\":\"a=\",\"payload\":{\"k\":1}}\nS {\"a\":5}\nA {\"type\":\"b+\",\"payload\":2}\n",
    "fix_bad": "#fix\nA {\"type\":\"a!\"}\nS {\"a\":1,\"a\":2}\n", "fix_torn": "#fix\nA {\"type\":\"a=\",\"payload\":1}\nA {\"type\"",
    "fix_deep": "#fix\nA {\"type\":\"a=\",\"payload\":" + "[" * 255 + "]" * 255 + "}\n", "nul": a1 + "\u0000" + a2,
}
for k, v in journal.items():
    write("journal", k, v)

config = {
    "guard_empty": "g{}", "guard_full": "g{\"allow\":[\"todos*\",\"inc\"],\"deny\":[\"debug*\"],\"require\":{\"todos*\":[\"title\"]},\"max_bytes\":100}",
    "guard_bad_allow": "g{\"allow\":\"x\"}", "guard_bad_elem": "g{\"deny\":[1]}", "guard_empty_pattern": "g{\"allow\":[\"\"]}",
    "guard_require_twice": "g{\"require\":{},\"require\":{}}", "guard_require_empty": "g{\"require\":{\"\":[\"a\"]}}",
    "guard_max_neg": "g{\"max_bytes\":-1}", "guard_unknown": "g{\"x\":1}", "guard_escapes": "g{\"allow\":[\"\\u0069nc\",\"@@delay\"]}",
    "guard_array": "g[]", "guard_bad_json": "g{\"allow\":[}", "delay_empty": "d{}", "delay_max": "d{\"max_pending\":1}",
    "delay_zero": "d{\"max_pending\":0}", "delay_frac": "d{\"max_pending\":1.5}", "delay_big": "d{\"max_pending\":99999999999999999999}",
    "delay_unknown": "d{\"ms\":1}", "journal_ok": "j{\"path\":\"j.log\",\"fsync\":\"never\",\"snapshot_every\":1}",
    "journal_fsync_n": "j{\"path\":\"j\",\"fsync\":3}", "journal_no_path": "j{\"fsync\":\"always\"}", "journal_empty_path": "j{\"path\":\"\"}",
    "journal_nul_path": "j{\"path\":\"a\\u0000b\"}", "journal_dir": "j{\"path\":\"..\"}", "journal_bad_fsync": "j{\"path\":\"j\",\"fsync\":0}",
    "journal_snap_neg": "j{\"path\":\"j\",\"snapshot_every\":-1}", "logger_stderr": "l{}", "logger_file": "l{\"path\":\"x.log\",\"exclude\":[\"debug*\",\"@@delay\"],\"changed\":true}",
    "logger_changed_false": "l{\"path\":\"x.log\",\"changed\":false}", "logger_bad_exclude": "l{\"exclude\":[\"ok\",3]}",
    "logger_empty_exclude": "l{\"exclude\":[\"\"]}", "logger_twice": "l{\"changed\":true,\"changed\":false}", "logger_unknown": "l{\"colour\":true}",
    "logger_array": "l[]", "logger_path_num": "l{\"path\":5}", "logger_ws": "l { \"path\" : \"y.log\" , \"exclude\" : [ ] } ",
    "undo_empty": "u{}", "undo_full": "u{\"keys\":[\"n\"],\"limit\":2,\"max_bytes\":64,\"include\":[\"in*\"],\"exclude\":[\"debug*\"],\"group_by\":\"field\",\"clear_types\":[\"c\"],\"init_types\":[\"i\"],\"sync_filter\":true,\"status\":true}",
    "undo_group_types": "u{\"group_by\":[\"inc\"]}", "undo_bad_keys": "u{\"keys\":[\"n\",\"n\"]}", "undo_limit_zero": "u{\"limit\":0}",
    "undo_bad_group": "u{\"group_by\":\"x\"}", "undo_unknown": "u{\"limt\":1}",
}
for k, v in config.items():
    write("plugin_config", k, v)

# fuzz_patch: the document on the first line, the patch after it.
def op(kind, path, value=None, frm=None):
    o = '{"op":"%s","path":"%s"' % (kind, path)
    if frm is not None:
        o += ',"from":"%s"' % frm
    if value is not None:
        o += ',"value":%s' % value
    return o + "}"

todos = '{"todos":[' + ",".join('{"id":%d,"done":false}' % i for i in range(20)) + '],"n":20}'
wide = "{" + ",".join('"k%d":[%d]' % (i, i) for i in range(40)) + "}"
patch = {
    "rfc_add_member": ('{"foo":"bar"}', "[" + op("add", "/baz", '"qux"') + "]"),
    "rfc_add_element": ('{"foo":["bar","baz"]}', "[" + op("add", "/foo/1", '"qux"') + "]"),
    "rfc_remove": ('{"baz":"qux","foo":"bar"}', "[" + op("remove", "/baz") + "]"),
    "rfc_remove_element": ('{"foo":["bar","qux","baz"]}', "[" + op("remove", "/foo/1") + "]"),
    "rfc_replace": ('{"baz":"qux","foo":"bar"}', "[" + op("replace", "/baz", '"boo"') + "]"),
    "rfc_move": ('{"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}', "[" + op("move", "/qux/thud", frm="/foo/waldo") + "]"),
    "rfc_move_element": ('{"foo":["all","grass","cows","eat"]}', "[" + op("move", "/foo/3", frm="/foo/1") + "]"),
    "rfc_test": ('{"baz":"qux","foo":["a",2,"c"]}', "[" + op("test", "/baz", '"qux"') + "," + op("test", "/foo/1", "2") + "]"),
    "rfc_test_fails": ('{"baz":"qux"}', "[" + op("test", "/baz", '"bar"') + "]"),
    "rfc_escapes": ('{"/":9,"~1":10}', "[" + op("test", "/~01", "10") + "]"),
    "rfc_append_array": ('{"foo":["bar"]}', "[" + op("add", "/foo/-", '["abc","def"]') + "]"),
    "copy": ('{"a":{"b":[1,{"c":2}]}}', "[" + op("copy", "/d", frm="/a/b") + "," + op("copy", "/a/b/0", frm="/a") + "]"),
    "move_into_child": ('{"a":{"b":1}}', "[" + op("move", "/a/b/c", frm="/a") + "]"),
    "root": ('[1,2]', "[" + op("replace", "", '{"x":[]}') + "," + op("add", "/x/-", "1") + "," + op("test", "", '{"x":[1.0]}') + "]"),
    "remove_root": ('{}', "[" + op("remove", "") + "]"),
    "bad_index": ('[0,1,2]', "[" + op("add", "/01", "1") + "," + op("add", "/4", "1") + "]"),
    "dash": ('{"a":[],"-":1}', "[" + op("add", "/a/-", "1") + "," + op("remove", "/-") + "," + op("replace", "/a/-", "1") + "]"),
    "numbers": ('{"n":1,"m":100,"z":-0}', "[" + op("test", "/n", "1.0") + "," + op("test", "/m", "1e2") + "," + op("test", "/z", "0") + "," + op("add", "/big", "123456789012345678901234567890") + "]"),
    "strings": ('{"\\u0041":"\\u00e9"}', "[" + op("test", "/A", '"\\u00e9"') + "," + op("add", "/a~1b~0", '"\\n"') + "," + op("add", "/\\u0000", "0") + "]"),
    "unordered_test": ('{"o":{"a":1,"b":[1,{"c":null}]}}', "[" + op("test", "/o", '{"b":[1,{"c":null}],"a":1}') + "]"),
    "todos_toggle": (todos, "[" + op("test", "/todos/7/id", "7") + "," + op("replace", "/todos/7/done", "true") + "]"),
    "todos_append": (todos, "[" + op("add", "/todos/-", '{"id":20,"done":false}') + "," + op("replace", "/n", "21") + "]"),
    "todos_remove": (todos, "[" + op("remove", "/todos/0") + "," + op("remove", "/todos/18") + "]"),
    "wide_object": (wide, "[" + op("replace", "/k33/0", '"x"') + "," + op("remove", "/k0") + "," + op("add", "/new", "{}") + "]"),
    "deep": ('{"d":' + "[" * 250 + "]" * 250 + "}", "[" + op("add", "/d/0/0/0", "[[[[[[[[]]]]]]]]") + "]"),
    "ws_patch": ('{"a":1}', ' [ { "op" : "test" , "path" : "/a" , "value" : 1 } ,\n { "op" : "remove" , "path" : "/a" } ] '),
    "not_array": ('{"a":1}', op("remove", "/a")),
    "missing_members": ('{"a":1}', '[{"op":"add","path":"/b"},{"path":"/a"},{"op":"move","path":"/c"},{"op":1,"path":"/a"}]'),
    "extra_members": ('{"a":1}', '[{"op":"remove","path":"/a","value":[1],"from":2,"x":null}]'),
    "unknown_op": ('{"a":1}', '[{"op":"delete","path":"/a"}]'),
    "bad_pointer": ('{"a":1}', '[{"op":"add","path":"a","value":1},{"op":"add","path":"/~2","value":1}]'),
    "dup_key": ('{"a":1}', '[{"op":"add","path":"/b","value":1,"op":"remove"}]'),
    "bad_json": ('{"a":1}', '[{"op":"add","path":"/b","value":01}]'),
    "bad_utf8": ('{"a":1}', b'[{"op":"add","path":"/b","value":"\xc3\x28"}]'),
    "scalar_doc": ('"s"', "[" + op("test", "", '"s"') + "," + op("add", "/x", "1") + "]"),
    "empty": ('{}', "[]"),
}
for k, (d, p) in patch.items():
    write("patch", k, (d.encode() if isinstance(d, str) else d) + b"\n" + (p.encode() if isinstance(p, str) else p))

# The inspector's import (POST /api/import, Plugins/inspector/session.h). The
# first ones are the headers that crashed the plugin or were wrongly taken
# (issue 18: sscanf took a sign, saturated, and its spaces skipped newlines).
def recb(letter, data):
    return b"%s %d %08x " % (letter.encode(), len(data), zlib.crc32(letter.encode() + data)) + data + b"\n"

crc_s = "%08x" % zlib.crc32(b"S{}")
state = "{\"count\":0,\"todos\":[],\"user\":{\"name\":\"ada\"}}"
inspector_import = {
    "crash_negative_length": "S -2 00000000\n\nX\n",
    "crash_20_digits": "S 99999999999999999999 00000000 {}\n",
    "crash_20_digits_crc": "S 18446744073709551617 " + crc_s + " {}\n",
    "crash_2p64_minus_1": "S 18446744073709551615 00000000 {}\n",
    "crash_19_digits": "S 1000000000000000000 00000000 {}\n",
    "signed_length": "S +2 " + crc_s + " {}\n",
    "header_across_lines": "S\n2\n" + crc_s + " {}\n",
    "upper_case_crc": "S 2 " + crc_s.upper() + " {}\n",
    "two_spaces": "S  2 " + crc_s + " {}\n",
    "short_crc": "S 2 1234 {}\n",
    "no_space_after_crc": "S 2 " + crc_s + "{}\n",
    "length_past_end": "S 5 " + crc_s + " {}\n",
    "no_newline": "S 2 " + crc_s + " {}",
    "empty": "",
    "no_snapshot": rec("A", "{\"type\":\"counter/inc\"}"),
    "action_first": rec("A", "{\"type\":\"counter/inc\"}") + rec("S", state),
    "session": rec("S", state) + rec("A", "{\"type\":\"counter/inc\"}") + rec("A", "{\"type\":\"counter/add\",\"payload\":5}"),
    "two_snapshots": rec("S", state) + rec("A", "{\"type\":\"counter/inc\"}") + rec("S", state) + rec("A", "{\"type\":\"x\"}"),
    "crc_bad": rec("S", state) + rec("A", "{\"type\":\"counter/inc\"}").replace("inc", "dec"),
    "nul_in_json": recb("S", b"{\"a\":\"\x00\"}"),
    "newline_in_json": rec("S", "{\n\"a\":1\n}") + rec("A", "{\"type\":\n\"x\"}") + "A 2 00000000 {}\n",
    "empty_action": rec("S", "{}") + rec("A", ""),
    "refused_actions": recb("S", b"{}") + recb("A", b"}{\"<script>alert(1)</script>\":1}") +
                       recb("A", b"{\"type\":\"\xff\xfe\"}") + recb("A", b"{\"type\":\"counter/inc\",\"type\":\"x\"}") +
                       recb("A", b"{\"type\":\"\\u0000\\ud800\"}") + recb("A", b"\xed\xa0\x80\xf4\x90\x80\x80\xc0\xaf"),
    "fix_session": "#fix\nS {\"count\":0}\nA {\"type\":\"counter/inc\"}\nA {\"type\":\"caf\\u00e9 \\ud83d\\ude00\"}\n",
    "fix_refused": b"#fix\nS {}\nA }{\"<script>\":1}\nA {\"type\":\"\xff\"}\nA \nA [1]\n",
}
for k, v in inspector_import.items():
    write("inspector_import", k, v)

# replicate.so's entry reader (fuzz_replicate_entry): "POS SEQ", then E/S/C/K
# records, tab-separated; "\xff" alone is an absent value. The damaged logs of
# issue 18 (items 7-11) are here as inputs.
def E(id, *fields):
    return "E\t" + id + "".join("\t" + f for f in fields) + "\n"
def act(n):
    return "{\"type\":\"push\",\"payload\":%d}" % n
ok3 = E("1-0", "n", "1", "a", act(1)) + E("1-1", "n", "2", "a", act(2)) + E("2-0", "n", "3", "a", act(3))
replicate = {
    "in_order": " 0\n" + ok3 + "C\t3\nK\n",
    "from_position": "1-1 2\n" + ok3 + "C\t3\nK\n",
    "negative_number": " 0\n" + E("1-0", "n", "1", "a", act(1)) + E("1-1", "n", "-1", "a", act(5)),
    "malformed_fields": " 0\n" + E("1-0", "colour", "blue") + E("1-1", "a", act(1), "n", "1") + E("1-2") + E("1-3", "n", "1", "a", act(1), "x", "y"),
    "nul_in_action": b" 0\nE\t1-0\tn\t1\ta\t{\"type\":\"push\",\"payload\":7}\x00{\"type\":\"push\",\"payload\":8}\n",
    "empty_action": " 0\n" + E("1-0", "n", "1", "a", ""),
    "gap": " 0\n" + E("1-0", "n", "1", "a", act(1)) + E("2-0", "n", "3", "a", act(3)),
    "number_twice": "2-0 3\n" + ok3 + E("3-0", "n", "3", "a", act(77)),
    "reset_after_flushall": "2-0 3\n" + E("1-5", "n", "1", "a", act(6)) + E("2-1", "n", "1", "a", act(6)),
    "injected_past_counter": " 0\n" + E("1-0", "n", "1", "a", act(1)) + E("1-1", "n", "2", "a", act(99)) + "C\t1\nK\n",
    "counter_missing": " 0\n" + ok3 + "C\nK\n",
    "counter_malformed": " 0\n" + ok3 + "C\t3x\nK\n" + "C\t03\nK\n",
    "numbers_edge": " 0\n" + "".join(E("5-%d" % i, "n", v, "a", act(i)) for i, v in enumerate(
        ["0", "01", "+1", " 1", "1 ", "1e3", "9007199254740991", "9007199254740992", "18446744073709551616", "", "\xff"])),
    "ids_edge": " 0\n" + "".join(E(i, "n", "1", "a", act(1)) for i in
        ["0-0", "18446744073709551615-18446744073709551615", "18446744073709551616-0", "1-18446744073709551616",
         "01-1", "1-01", "1", "-1", "1-", "-", "1-2-3", "a-b", "", "\xff", "1" * 47 + "-1"]),
    "snapshot_ok": " 0\n" + ok3 + "C\t3\nS\t{\"count\":2}\t1-1\t2\n",
    "snapshot_ahead": " 0\n" + ok3 + "C\t3\nS\t{\"count\":2}\t1-1\t10\nC\t12\nS\t{\"count\":2}\t1-1\t10\n",
    "snapshot_malformed": " 0\nS\t{}\tzzz\t4\nS\t{}\t1-0\tx1\nS\t\t1-0\t1\nS\t{}\t1-0\nS\nS\t\xff\t1-0\t1\n",
    "snapshot_nul": b" 0\nS\t{\"a\":\x001}\t1-0\t1\n",
    "trimmed_then_snapshot": "1-0 1\n" + E("9-0", "n", "40", "a", act(40)) + "C\t40\nS\t{\"count\":39}\t8-0\t39\n",
    "escapes_in_messages": b" 0\nE\t1-0\tn\t\x01\x7f\"\\\xc3\xa9\ta\tx\nE\t1-1\t\x00n\t1\n",
    # NATS messages of several actions (P PARTS DATA: rp_count_parts)
    "parts_ok": b" 0\nP\t3\t#pa:1 {}\x00#pa:2 {}\x00#pa:3 {}\nP\t\xff\t{}\nP\t1024\tx\n",
    "parts_damaged": b" 0\nP\t1\tx\x00y\nP\t2\tx\x00\nP\t2\t\x00y\nP\t3\tx\x00y\nP\t02\tx\x00y\nP\t1025\tx\n"
                     b"P\t2\t\nP\t2\nP\t-2\tx\x00y\nP\t0\tx\n",
}
for k, v in replicate.items():
    write("replicate_entry", k, v)
