#!/usr/bin/env python3
"""Tests/harness/gen_registry.py: the registry of a C test program (ts_test.h).

    gen_registry.py [--suite NAME] -o OUT.c SOURCE.c...

Scans the sources for the definitions of test functions and writes OUT.c: a
prototype for each, the table {name, function} in the order of the sources
and of the definitions in each, and main() calling ts_test_main (NAME, if
given, prefixes the summary line: "NAME: N passed, M failed"). The suite
hooks of ts_test.h are found by name and handed to ts_test_main:
`int ts_test_suite_option(int argc, char **argv, int i)` (the program's own
options), `void ts_test_suite_setup(void)` (before the tests) and
`void ts_test_suite_teardown(void)` (after them); each at most once, not
static, and a ts_test_suite_* name that is none of them is refused (a typo
would leave a hook uncalled).

A test is `void test_<topic>__<rule>(void) {` at the start of a line (not
static): topic lower_snake ([a-z][a-z0-9_]*, no "__"), rule lowerCamelCase
([a-z][A-Za-z0-9]*). In a file named test_<topic>.c every test's topic is
<topic>. Anything else is refused, with file:line, and nothing is written:
  - a function named test_* returning void that does not follow the pattern
    (a static one included: it could not be registered);
  - a test_* name at the start of a line (its return type on the line
    before), which this line-by-line scan would otherwise miss;
  - the same name defined twice (in one file or two);
  - a file test_<topic>.c with no test at all.
Other sources (a suite's helpers, as Tests/c/check.c) may hold no test.
So a test cannot be defined and left out of the table, or listed twice.
Exit status: 0 written (or unchanged), 1 refused, 2 usage.
"""
import os
import re
import sys

# The definitions of the suite hooks (a prototype, which ends with ';', is not
# one: a header may declare a hook that a program does not define).
HOOKS = {
    "option": re.compile(r"^int\s+ts_test_suite_option\s*\(\s*int\s+\w+\s*,\s*char\s*\*\*\s*\w+\s*,\s*int\s+\w+\s*\)\s*(\{|$)"),
    "setup": re.compile(r"^void\s+ts_test_suite_setup\s*\(\s*void\s*\)\s*(\{|$)"),
    "teardown": re.compile(r"^void\s+ts_test_suite_teardown\s*\(\s*void\s*\)\s*(\{|$)"),
}
HOOK_PROTOTYPES = {
    "option": "int ts_test_suite_option(int argc, char **argv, int i);",
    "setup": "void ts_test_suite_setup(void);",
    "teardown": "void ts_test_suite_teardown(void);",
}
# Any definition of a ts_test_suite_* function: it must be one of HOOKS.
ANY_HOOK = re.compile(r"^(static\s+)?(?:inline\s+)?\w+\s+\**\s*(ts_test_suite_\w*)\s*\(([^)]*)\)\s*(\{|$)")
# Any definition of a void test_* function, static or not (a prototype, which
# ends with ';', is not a definition).
DEFINITION = re.compile(r"^(static\s+)?(?:inline\s+)?void\s+(test_\w*)\s*\(([^)]*)\)\s*(\{|$)")
# A definition whose return type is on the line before: it would be missed.
SPLIT = re.compile(r"^(test_\w*)\s*\(")
NAME = re.compile(r"^test_([a-z][a-z0-9]*(?:_[a-z0-9]+)*)__([a-z][A-Za-z0-9]*)$")


def scan(path, errors, hooks):
    """The (name, line) of each test defined in path; appends to hooks[kind]
    where a suite hook is defined."""
    found = []
    base = os.path.basename(path)
    file_topic = base[5:-2] if base.startswith("test_") and base.endswith(".c") else None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, 1):
        # A prototype split over lines ends with ';' on the next line.
        prototype = number < len(lines) and lines[number].lstrip().startswith(";")
        kind = next((k for k, r in HOOKS.items() if r.match(line)), None)
        if kind is not None and not (line.rstrip().endswith(")") and prototype):
            hooks[kind].append(f"{path}:{number}")
            continue
        h = ANY_HOOK.match(line)
        if h and not (h.group(4) == "" and prototype):
            errors.append(f"{path}:{number}: {h.group(2)}: a suite hook is one of, not static: "
                          + " ".join(HOOK_PROTOTYPES.values()))
            continue
        m = DEFINITION.match(line)
        if not m:
            split = SPLIT.match(line)
            if split:
                errors.append(f"{path}:{number}: {split.group(1)}: write `void {split.group(1)}(void)` on one line "
                              "(the registry reads definitions line by line)")
            continue
        # A prototype split over lines ends with ';' on the next line.
        if m.group(4) == "" and number < len(lines) and lines[number].lstrip().startswith(";"):
            continue
        static, name, params = m.group(1), m.group(2), m.group(3).strip()
        where = f"{path}:{number}"
        n = NAME.match(name)
        if not n:
            errors.append(f"{where}: {name}: a test is named test_<topic>__<rule> "
                          "(topic lower_snake, rule lowerCamelCase saying what it guards)")
            continue
        if static:
            errors.append(f"{where}: {name} is static: a test is not static (the registry calls it)")
            continue
        if params != "void":
            errors.append(f"{where}: {name}({params}): a test takes (void)")
            continue
        if file_topic is not None and n.group(1) != file_topic:
            errors.append(f"{where}: {name}: the tests of {base} have the topic '{file_topic}'")
            continue
        found.append((name, where))
    if not found and file_topic is not None:
        errors.append(f"{path}: no test defined (void test_<topic>__<rule>(void))")
    return found


def main(argv):
    args = argv[1:]
    suite, out, sources = None, None, []
    while args:
        a = args.pop(0)
        if a == "--suite" and args:
            suite = args.pop(0)
        elif a == "-o" and args:
            out = args.pop(0)
        elif a.startswith("-"):
            sources = []
            break
        else:
            sources.append(a)
    if out is None or not sources:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    errors, tests, seen, hooks = [], [], {}, {k: [] for k in HOOKS}
    for path in sources:
        for name, where in scan(path, errors, hooks):
            if name in seen:
                errors.append(f"{where}: {name} is defined twice (first at {seen[name]})")
                continue
            seen[name] = where
            tests.append(name)
    for kind, places in hooks.items():
        if len(places) > 1:
            errors.append(f"ts_test_suite_{kind} is defined more than once: " + ", ".join(places))
    if errors:
        for e in errors:
            print(f"gen_registry: {e}", file=sys.stderr)
        print(f"gen_registry: {out} not written ({len(errors)} problem(s))", file=sys.stderr)
        return 1
    suite_c = "NULL" if suite is None else '"' + suite + '"'
    text = [f"/* Written by Tests/harness/gen_registry.py from {' '.join(sources)}: do not edit. */",
            '#include "ts_test.h"', ""]
    text += [f"void {t}(void);" for t in tests]
    text += [HOOK_PROTOTYPES[k] for k in HOOKS if hooks[k]]
    text += ["", "static const ts_test_case cases[] = {"]
    text += [f'    {{"{t[5:]}", {t}}},' for t in tests]
    text += ["};", "",
             "static const ts_test_hooks hooks = {"
             + ", ".join(f"ts_test_suite_{k}" if hooks[k] else "NULL" for k in HOOKS) + "};", "",
             "int main(int argc, char **argv) {",
             f"    return ts_test_main(argc, argv, {suite_c}, cases, sizeof cases / sizeof cases[0], &hooks);",
             "}", ""]
    text = "\n".join(text)
    try:
        with open(out, encoding="utf-8") as f:
            if f.read() == text:
                return 0
    except OSError:
        pass
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(out + ".tmp", out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
