#!/usr/bin/env python3
"""genman.py - the manual pages of Turnstate's C API, made from its headers.

    docs/man/genman.py [--out DIR] [--date YYYY-MM-DD] HEADER...
    docs/man/genman.py --list HEADER...

The headers are the one source: every page is made from a declaration and
the comment block right above it, so a page says what the header says. For
Include/turnstate.h and Include/turnstate_plugin.h it writes

  DIR/man3/NAME.3   a page per function declared with TS_API and per type
                    (typedef, struct, enum; not an opaque struct without a
                    comment): NAME, SYNOPSIS (the #include, the declaration
                    as the header has it, how to compile and link),
                    DESCRIPTION (the comment; a struct's fields and an enum's
                    values with their comments), RETURN VALUE (for a function
                    that returns a ts_status: the header's convention for
                    those), ERRORS (the comment's "Errors:" part), SEE ALSO
                    (every page the page names). Declarations written one
                    after the other under one comment share it: each gets a
                    page that shows them all.
  DIR/man7/turnstate.7, DIR/man7/turnstate-plugins.7
                    a header's overview: its top comment (the model and the
                    conventions), then part by part (the header's
                    /* ---- Title ---- */ sections) its free-standing
                    comments, its constants with their comments, and a line
                    for each page.

--list prints the paths of the pages, relative to DIR (man3/ts_free.3, ...),
one a line, and writes nothing (make uninstall reads it).

The style the headers are written in, which is all this relies on:
- a comment block right above what it describes (no blank line between);
  several declarations one after the other under one comment share it;
  a comment followed by a blank line is text of its section;
- declarations end with ';' (a prototype may span lines); TS_API and
  TS_DEPRECATED("...") are left out of the synopsis;
- a struct's or enum's members have a comment above (it describes every
  member up to the next comment or blank line) or trailing on their line;
- #define lines: a comment above a group of them, or trailing each one;
  a comment above #ifndef NAME describes the macro NAME;
- the first comment is "FILE.h - what it is." and then the overview;
- inside a comment: paragraphs (a blank comment line between), "- " and
  "1. " lists (continuation lines indented under the text), lines indented
  two or more columns (code, shown as it is), "term:  text" lines indented
  alike (definitions), `name` for a parameter or code, and "Errors: ..." or
  "Errors (note): ..." (the ERRORS section: a list "TS_E_X (why), TS_E_Y",
  or a "- TS_E_X: why" list after it, or text).
Python 3 standard library only.
"""

import argparse
import datetime
import os
import re
import sys

# ---- Reading a header ------------------------------------------------------


def scan(text, in_comment):
    """Walks one line from the state `in_comment`; returns its code with the
    comments removed (a space each), the comments' text, and the state at the
    end of the line. Strings and character literals are code."""
    code, comments, current = [], [], []
    i, n, quote = 0, len(text), None
    while i < n:
        c = text[i]
        if in_comment:
            if text.startswith("*/", i):
                in_comment = False
                comments.append("".join(current))
                current = []
                code.append(" ")
                i += 2
            else:
                current.append(c)
                i += 1
            continue
        if quote:
            code.append(c)
            if c == "\\" and i + 1 < n:
                code.append(text[i + 1])
                i += 2
                continue
            if c == quote:
                quote = None
            i += 1
            continue
        if text.startswith("/*", i):
            in_comment = True
            i += 2
            continue
        if text.startswith("//", i):
            comments.append(text[i + 2:])
            break
        if c in "\"'":
            quote = c
        code.append(c)
        i += 1
    if in_comment:
        comments.append("".join(current))
    return "".join(code), comments, in_comment


class Token:
    """A comment, a preprocessor directive, a declaration or a blank line,
    with its source lines and its first and last line numbers."""

    def __init__(self, kind, lines, start, end):
        self.kind, self.lines, self.start, self.end = kind, lines, start, end

    def word(self):
        m = re.match(r"#\s*(\w+)", self.lines[0].strip())
        return m.group(1) if m else ""


def tokenize(source):
    lines = source.split("\n")
    tokens, i, n = [], 0, len(lines)
    while i < n:
        s = lines[i].strip()
        if not s:
            tokens.append(Token("blank", [lines[i]], i, i))
            i += 1
            continue
        start = i
        if s.startswith("//"):
            while i + 1 < n and lines[i + 1].strip().startswith("//"):
                i += 1
            kind = "comment"
        elif s.startswith("/*"):
            _, _, open_ = scan(lines[i], False)
            while open_ and i + 1 < n:
                i += 1
                _, _, open_ = scan(lines[i], True)
            kind = "comment"
        elif s.startswith("#"):
            _, _, open_ = scan(lines[i], False)
            while (lines[i].rstrip().endswith("\\") or open_) and i + 1 < n:
                i += 1
                _, _, open_ = scan(lines[i], open_)
            kind = "directive"
        elif re.match(r'^(extern\s+"C"\s*\{|\})$', s):
            kind = "code"   # the C++ guard's braces
        else:
            # A declaration: up to a ';' outside braces and parentheses.
            depth, in_comment = 0, False
            while True:
                code, _, in_comment = scan(lines[i], in_comment)
                done = False
                for c in code:
                    if c in "{(":
                        depth += 1
                    elif c in "})":
                        depth -= 1
                    elif c == ";" and depth == 0:
                        done = True
                if done or i + 1 >= n:
                    break
                i += 1
            kind = "code"
        tokens.append(Token(kind, lines[start:i + 1], start, i))
        i += 1
    return tokens


def comment_lines(raw):
    """A comment's text lines without its decoration (/*, the leading ' * ',
    */), indented as they are relative to the text."""
    if raw[0].strip().startswith("//"):
        out = [re.sub(r"^\s*// ?", "", l) for l in raw]
    else:
        text = "\n".join(raw).strip()
        text = re.sub(r"^/\*+", "", text)
        text = re.sub(r"\s*\*+/$", "", text)
        out = []
        for k, l in enumerate(text.split("\n")):
            if k == 0:
                out.append(l[1:] if l.startswith(" ") else l)
            else:
                m = re.match(r"^\s*\*(?!/) ?(.*)$", l)
                out.append(m.group(1) if m else l.strip())
    out = [l.rstrip() for l in out]
    while out and not out[-1]:
        out.pop()
    while out and not out[0]:
        out.pop(0)
    return out


def strip_comments(raw):
    out, in_comment = [], False
    for l in raw:
        code, _, in_comment = scan(l, in_comment)
        out.append(code.rstrip())
    return out


def normalize(text):
    """C text on one line, white space as the pages' check compares it."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\(\s+", "(", text)
    text = re.sub(r"\s+\)", ")", text)
    return re.sub(r"\s+([,;])", r"\1", text)


ATTRIBUTES = re.compile(r'\bTS_API\b\s*|\bTS_DEPRECATED\s*\((?:[^()"]|"(?:[^"\\]|\\.)*")*\)\s*')


class Member:
    """Fields of a struct or values of an enum that one comment describes."""

    def __init__(self, names, doc):
        self.names, self.doc = names, doc


class Decl:
    """What a header documents: a function, a type, a group of #defines, or
    free-standing text ('prose')."""

    def __init__(self, kind, name, doc, header, section):
        self.kind = kind            # 'function', 'type', 'macros', 'prose'
        self.name = name
        self.doc = doc              # the comment's lines
        self.header = header
        self.section = section
        self.lines = []             # the declaration's code lines
        self.members = []
        self.member_kind = None     # 'struct' or 'enum'
        self.macros = []            # (name, parameters, value, trailing comment)
        self.deprecated = None      # TS_DEPRECATED's message
        self.group = [self]         # the declarations that share the comment


def declared_name(code):
    """The name a declaration declares: the function's, or the type's."""
    code = ATTRIBUTES.sub("", code)
    outer = re.sub(r"\{.*\}", " ", code, flags=re.S)
    if outer.lstrip().startswith("typedef"):
        m = re.search(r"\(\s*\*\s*(\w+)\s*\)", outer)
        if m:
            return m.group(1)
        words = re.findall(r"\w+", outer)
        return words[-1] if words else None
    m = re.match(r"\s*(?:struct|enum|union)\s+(\w+)\s*\{", code)
    if m:
        return m.group(1)
    m = re.match(r"\s*[^(]*?(\w+)\s*\(", outer)
    return m.group(1) if m else None


def member_name(decl):
    m = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
    if m:
        return m.group(1)
    decl = re.sub(r"\[[^\]]*\]", "", decl.split("=")[0])
    words = re.findall(r"\w+", decl)
    return words[-1] if words else decl


def parse_members(raw, kind):
    """The members between a struct's or enum's braces, grouped by comment:
    a comment above describes the members after it up to the next comment or
    blank line; a comment on a member's own line describes that member."""
    body = "\n".join(raw)
    body = body[body.index("{") + 1:body.rindex("}")]
    lines = body.split("\n")
    members, above = [], None
    i, n = 0, len(lines)
    while i < n:
        s = lines[i].strip()
        if not s:
            above = None
            i += 1
            continue
        if s.startswith("/*") or s.startswith("//"):
            start = i
            _, _, open_ = scan(lines[i], False)
            while open_ and i + 1 < n:
                i += 1
                _, _, open_ = scan(lines[i], True)
            above = Member([], comment_lines(lines[start:i + 1]))
            i += 1
            continue
        # A member (a struct's: up to its ';'; an enum's: its line) and the
        # comment on its line, which may go on over the next lines.
        code, trailing, in_comment = "", [], False
        while True:
            c, comments, in_comment = scan(lines[i], in_comment)
            code += " " + c
            trailing.extend(x.strip() for x in comments)
            done = not in_comment and (kind == "enum" or code.strip().endswith(";"))
            if done or i + 1 >= n:
                break
            i += 1
        decl = normalize(code)
        for part in ([decl] if kind == "struct" else [p for p in decl.split(",") if p.strip()]):
            name = member_name(part.strip())
            text = " ".join(t for t in trailing if t)
            if text:
                members.append(Member([name], [text]))
                above = None
            elif above is not None:
                if above not in members:
                    members.append(above)
                above.names.append(name)
            else:
                members.append(Member([name], []))
        i += 1
    return members


class Header:
    """One header: its overview (the top comment) and its declarations in
    order, each in its section."""

    def __init__(self, path):
        self.path = path
        self.base = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            self.source = f.read()
        self.title = ""
        self.overview = []
        self.decls = []
        self.sections = []
        self._parse(tokenize(self.source))

    def _parse(self, tokens):
        section, depth, guard = "", 0, None   # guard: the include guard's macro
        seen_comment = False
        doc, doc_end = None, -2      # the comment waiting for its declaration
        last, last_end = None, -2    # the last declaration, for groups
        skip = 0                     # inside #ifdef __cplusplus / undocumented #if
        for t in tokens:
            if skip:
                if t.kind == "directive" and t.word() in ("if", "ifdef", "ifndef"):
                    skip += 1
                elif t.kind == "directive" and t.word() == "endif":
                    skip -= 1
                continue
            follows = doc is not None and t.start == doc_end + 1
            pending = doc if follows else None
            if doc is not None and not follows:
                self.decls.append(Decl("prose", None, doc, self, section))
            doc = None
            self._used = False
            try:
                if t.kind == "blank":
                    last = None
                    continue
                if t.kind == "comment":
                    lines = comment_lines(t.lines)
                    flat = " ".join(lines).strip()
                    m = re.match(r"^-{2,}\s*(.*?)\s*-{2,}$", flat)
                    if m:
                        section = m.group(1)
                        self.sections.append(section)
                    elif not seen_comment:
                        m = re.match(r"^\S+\s+-\s+(.*)$", lines[0]) if lines else None
                        if m:
                            self.title = m.group(1).rstrip(".")
                            lines = lines[1:]
                        while lines and not lines[0]:
                            lines.pop(0)
                        self.overview = lines
                    else:
                        doc, doc_end = lines, t.end
                    seen_comment = True
                    last = None
                    continue
                seen_comment = True
                if t.kind == "directive":
                    word = t.word()
                    if word in ("if", "ifdef", "ifndef"):
                        if re.match(r"#\s*ifdef\s+__cplusplus\b", t.lines[0].strip()):
                            skip = 1
                            continue
                        m = re.match(r"#\s*ifndef\s+(\w+)", t.lines[0].strip())
                        if guard is None and m and depth == 0:
                            guard = m.group(1)   # the include guard
                            depth += 1
                            continue
                        if pending and m:
                            # /* comment */ #ifndef NAME ... #define NAME: the macro NAME
                            d = Decl("macros", m.group(1), pending, self, section)
                            params = re.search(r"#\s*define\s+%s(\([^)]*\))?" % m.group(1), self.source)
                            d.macros.append((m.group(1), params.group(1) or "" if params else "", "", ""))
                            self.decls.append(d)
                            self._used = True
                        skip = 1   # what the condition holds is not the API's
                        continue
                    if word == "endif":
                        depth -= 1
                        continue
                    if word == "define":
                        name, params, value, trailing = parse_define(t)
                        if name == guard:
                            continue
                        if last is not None and last.kind == "macros" and t.start == last_end + 1 and not pending:
                            group = last
                        else:
                            group = Decl("macros", name, pending or [], self, section)
                            self.decls.append(group)
                            self._used = True
                        group.macros.append((name, params, value, trailing))
                        last, last_end = group, t.end
                    continue
                # Code.
                code_lines = strip_comments(t.lines)
                flat = normalize(" ".join(code_lines))
                name = declared_name("\n".join(code_lines))
                is_typedef = flat.startswith("typedef")
                is_tagged = re.match(r"^(typedef\s+)?(struct|enum|union)\b[^;]*\{", flat) is not None
                if not name or flat.startswith("extern") or flat == "}":
                    continue
                if not (is_typedef or is_tagged) and not re.search(r"\bTS_API\b", flat):
                    continue  # neither exported nor a type
                if re.match(r"^typedef\s+(struct|enum|union)\s+\w+\s+\w+;$", flat) and not pending:
                    continue  # an opaque type without a comment: no page
                d = Decl("type" if is_typedef or is_tagged else "function", name, pending or [], self, section)
                self._used = True
                d.lines = code_lines
                m = re.search(r'\bTS_DEPRECATED\s*\(\s*((?:"(?:[^"\\]|\\.)*"\s*)*)\)', flat)
                if m:
                    d.deprecated = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
                if is_tagged:
                    d.member_kind = "enum" if re.match(r"^(typedef\s+)?enum\b", flat) else "struct"
                    d.members = parse_members(t.lines, d.member_kind)
                if not pending and last is not None and last.kind in ("function", "type") and t.start == last_end + 1:
                    # Under the same comment as the declaration right above it.
                    d.doc = last.doc
                    d.group = last.group
                    d.group.append(d)
                self.decls.append(d)
                last, last_end = d, t.end
            finally:
                # A comment that nothing took is text of its section.
                if pending and not self._used:
                    self.decls.append(Decl("prose", None, pending, self, section))
        if doc is not None:
            self.decls.append(Decl("prose", None, doc, self, section))

    def pages(self):
        return [d for d in self.decls if d.kind in ("function", "type")]

    def prose(self, section):
        return [d for d in self.decls if d.kind == "prose" and d.section == section]

    def version(self):
        parts = [re.search(r"^#define TS_VERSION_%s (\d+)" % p, self.source, re.M) for p in ("MAJOR", "MINOR", "PATCH")]
        return ".".join(m.group(1) for m in parts) if all(parts) else None


def parse_define(t):
    code = " ".join(l.rstrip().rstrip("\\") for l in strip_comments(t.lines))
    m = re.match(r"\s*#\s*define\s+(\w+)(\([^)]*\))?\s*(.*)$", code)
    trailing, in_comment = [], False
    for l in t.lines:
        _, comments, in_comment = scan(l, in_comment)
        trailing.extend(c.strip() for c in comments)
    return m.group(1), m.group(2) or "", normalize(m.group(3)), " ".join(x for x in trailing if x)


# ---- Comment text as blocks ------------------------------------------------

ITEM = re.compile(r"^( ?)(- |\d+\. )(.*)$")


def indent_of(line):
    return len(line) - len(line.lstrip())


def blocks(doc):
    """Comment lines as blocks: ('p', lines), ('list', 'ul'|'ol', items: each
    a list of lines, code lines marked with a leading NUL), ('code', lines),
    ('defs', [(term, lines)])."""
    out, i, n = [], 0, len(doc)
    while i < n:
        line = doc[i]
        if not line.strip():
            i += 1
            continue
        m = ITEM.match(line)
        if m:
            ordered = m.group(2)[0].isdigit()
            items = []
            while i < n and ITEM.match(doc[i]):
                m = ITEM.match(doc[i])
                cont = len(m.group(1)) + len(m.group(2))
                lines = [m.group(3)]
                i += 1
                while i < n and doc[i].strip() and indent_of(doc[i]) >= cont:
                    if indent_of(doc[i]) >= cont + 2:
                        lines.append("\0" + doc[i][cont:])   # code inside the item
                    else:
                        lines.append(doc[i].strip())
                    i += 1
                items.append(lines)
            out.append(("list", "ol" if ordered else "ul", items))
            continue
        if indent_of(line) >= 2:
            code = []
            while i < n and doc[i].strip() and indent_of(doc[i]) >= 2:
                code.append(doc[i])
                i += 1
            out.append(defs_or_code(code))
            continue
        p = []
        while i < n and doc[i].strip() and indent_of(doc[i]) < 2 and not ITEM.match(doc[i]):
            p.append(doc[i].strip())
            i += 1
        out.append(("p", p))
    return out


def defs_or_code(lines):
    """Lines "  term:   text", continuation lines aligned under the text, are
    definitions; other indented lines are code."""
    base = min(indent_of(l) for l in lines)
    head = re.compile(r"^ {%d}(\w+):( +)(\S.*)$" % base)
    m = head.match(lines[0])
    if m:
        col = base + len(m.group(1)) + 1 + len(m.group(2))
        defs = []
        for l in lines:
            mm = head.match(l)
            if mm and base + len(mm.group(1)) + 1 + len(mm.group(2)) == col:
                defs.append((mm.group(1), [mm.group(3)]))
            elif defs and indent_of(l) == col:
                defs[-1][1].append(l.strip())
            else:
                break
        else:
            return ("defs", defs)
    return ("code", [l[base:] for l in lines])


ERRORS = re.compile(r"(?:^|(?<=[.;:)] ))Errors(?: ?(\((?:[^()]|\([^()]*\))*\)))?: ?")


def split_errors(doc):
    """The comment's blocks without its "Errors:" part, and that part as
    (note, text, list items or None). The part runs from "Errors" to the end
    of its paragraph, and takes the list that follows when the paragraph
    ends with the ':' of "Errors (...):"."""
    desc, errors = [], None
    bl = blocks(doc)
    k = 0
    while k < len(bl):
        b = bl[k]
        if errors is None and b[0] == "p":
            joined = "\n".join(b[1])
            m = ERRORS.search(joined.replace("\n", " "))
            if m:
                flat = joined.replace("\n", " ")
                before = flat[:m.start()].rstrip()
                if before:
                    desc.append(("p", reflow(before, b[1])))
                text = flat[m.end():].strip()
                items = None
                if not text and k + 1 < len(bl) and bl[k + 1][0] == "list":
                    items = bl[k + 1][2]
                    k += 1
                errors = ((m.group(1) or "").strip(), text, items)
                k += 1
                continue
        desc.append(b)
        k += 1
    return desc, errors


def reflow(flat, like):
    """`flat` (a paragraph's lines joined) as lines again, about as long as
    the lines it came from."""
    width = max(len(l) for l in like)
    out, cur = [], ""
    for w in flat.split(" "):
        if cur and len(cur) + 1 + len(w) > width:
            out.append(cur)
            cur = w
        else:
            cur = (cur + " " + w) if cur else w
    if cur:
        out.append(cur)
    return out


# ---- roff ------------------------------------------------------------------


def esc(text, code=False):
    """Text for a roff line: backslashes and non-ASCII escaped; in code every
    '-' is a minus (\\-, what one types) and quotes are ASCII; in text, a '-'
    that starts an option (-std=c99, --flag) is a minus, a word's hyphen
    stays a hyphen and a spaced " - " is a dash."""
    text = text.replace("\\", "\\e")
    if code:
        text = text.replace("-", "\\-").replace("'", "\\(aq").replace("`", "\\(ga")
    else:
        text = re.sub(r"(?<![\w\\-])--(?=\w)", r"\\-\\-", text)
        text = re.sub(r"(?<![\w\\-])-(?=[\w$])", r"\\-", text)
        text = re.sub(r"(?<= )-(?= )", r"\\(en", text)
        text = text.replace(MINUS, "\\-")
    return "".join("\\[u%04X]" % ord(c) if ord(c) > 126 or (ord(c) < 32 and c != "\t") else c for c in text)


MINUS = "\x01"   # a '-' that Linker.text found to be a minus


def line_safe(line):
    """A text line must not begin with a control character ('.' or "'")."""
    return "\\&" + line if line.startswith((".", "'")) else line


def quote_arg(text):
    return '"' + text.replace('"', "\\(dq") + '"'


def bold(name):
    return "\\fB" + esc(name, code=True) + "\\fR"


class Linker:
    """Comment text to roff: `x` in italics; a name that has a page, a TS_
    constant and NULL in bold. Remembers the pages it named (SEE ALSO)."""

    WORD = re.compile(r"\b(ts_\w+|TS_[A-Z0-9_]+|NULL)\b")

    def __init__(self, pages, self_names=()):
        self.pages = pages
        self.self_names = set(self_names)
        self.mentioned = []
        self.params = set()   # names not to capitalize

    def note(self, text):
        for m in self.WORD.finditer(text):
            if m.group(1) in self.pages and m.group(1) not in self.self_names:
                self.mentioned.append(m.group(1))

    def text(self, s):
        s = re.sub(r"(?<=\w) - (?=\d)", " %s " % MINUS, s)   # TS_MAX_DEPTH - 1: a minus
        out = []
        for part in re.split(r"(`[^`]+`)", s):
            if len(part) > 2 and part[0] == "`" and part[-1] == "`":
                self.note(part)
                out.append("\\fI" + esc(part[1:-1], code=True) + "\\fR")
                continue
            pos = 0
            for m in self.WORD.finditer(part):
                out.append(esc(part[pos:m.start()]))
                name = m.group(1)
                self.note(name)
                out.append(bold(name) if name in self.pages or not name.startswith("ts_") else esc(name, code=True))
                pos = m.end()
            out.append(esc(part[pos:]))
        return "".join(out)

    def lines(self, lines):
        return [line_safe(self.text(l)) for l in lines]


def code_lines(lines, linker):
    linker.note(" ".join(lines))
    return [line_safe(esc(l, code=True)) for l in lines]


def render(bl, linker, out, nested=False):
    """Appends the roff of blocks `bl` to `out`. Nested: the body of a
    tagged paragraph (.TP), whose indentation every block keeps."""
    para = ".IP" if nested else ".PP"
    begun = False
    for b in bl:
        if b[0] == "p":
            if begun:
                out.append(para)
            out.extend(linker.lines(b[1]))
            begun = True
            continue
        if b[0] == "list":
            if nested:
                out.append(".RS")
            for k, item in enumerate(b[2]):
                out.append(".IP %s 4" % ("\\(bu" if b[1] == "ul" else "%d." % (k + 1)))
                code = []
                for l in item + [None]:
                    if l is not None and l.startswith("\0"):
                        code.append(l[1:])
                        continue
                    if code:
                        out.extend([".RS", '.IP "" 4', ".EX"] + code_lines(code, linker) + [".EE", ".RE"])
                        if l is not None:
                            out.append('.IP "" 4')
                        code = []
                    if l is not None:
                        out.append(line_safe(linker.text(l)))
            if nested:
                out.append(".RE")
        elif b[0] == "defs":
            if nested:
                out.append(".RS")
            for term, lines in b[1]:
                out.append(".TP")
                out.append(line_safe("\\fI" + esc(term, code=True) + "\\fR"))
                out.extend(linker.lines(lines))
            if nested:
                out.append(".RE")
        else:
            out.extend([".RS", '.IP "" 4'] if nested else [".PP", ".RS 4"])
            out.append(".EX")
            out.extend(code_lines(b[1], linker))
            out.extend([".EE", ".RE"])
        out.append(para)
        begun = False
    while out and out[-1] in (".PP", ".IP"):
        out.pop()


# ---- Synopsis --------------------------------------------------------------

WIDTH = 78


def synopsis(d, names):
    """The declaration as the header has it (without TS_API and
    TS_DEPRECATED; a prototype on one line, a struct or enum line by line;
    a line longer than the page broken after a comma), the page's names in
    bold, the parameters in italics."""
    if d.members:
        code = [ATTRIBUTES.sub("", l).rstrip() for l in d.lines]
        code = [l for l in code if l.strip()]
        base = min(indent_of(l) for l in code)
        code = [l[base:] for l in code]
    else:
        code = [normalize(ATTRIBUTES.sub("", " ".join(d.lines)))]
    params = parameter_names(" ".join(code))
    out = []
    for line in code:
        for l in wrap_code(line, WIDTH):
            s = []
            for p in re.split(r"(\w+)", l):
                if p in names:
                    s.append(bold(p))
                elif p in params:
                    s.append("\\fI" + esc(p, code=True) + "\\fR")
                else:
                    s.append(esc(p, code=True))
            out.append(line_safe("".join(s)))
    return out


def wrap_code(line, width):
    """Breaks a line of C after the last ", " that fits; the rest aligned
    under the text after the innermost open parenthesis (8 columns in when
    that is past the middle)."""
    out, col = [], None
    while len(line) > width:
        cut = line.rfind(", ", 0, width)
        if cut < 0 or (col is not None and cut <= col):
            break
        if col is None:
            opens = []
            for i, c in enumerate(line[:cut]):
                if c == "(":
                    opens.append(i)
                elif c == ")" and opens:
                    opens.pop()
            col = opens[-1] + 1 if opens else indent_of(line) + 8
            if col > width // 2:
                col = indent_of(line) + 8
        out.append(line[:cut + 1])
        line = " " * col + line[cut + 2:]
    out.append(line)
    return out


def parameter_names(decl):
    """The parameters' names in a prototype, a function-pointer type or a
    struct's function-pointer fields."""
    names = set()
    for m in re.finditer(r"\(([^()]*(?:\([^()]*\)[^()]*)*)\)", decl):
        inner = m.group(1)
        if re.match(r"^\s*\*\s*\w+\s*$", inner):
            continue  # the (*name) of a function pointer
        for p in split_top(inner):
            p = p.strip()
            fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", p)
            if fp:
                names.add(fp.group(1))
                names |= parameter_names(p[fp.end():])
                continue
            mm = re.match(r"^(.*[\s*])(\w+)(\s*\[[^\]]*\])?$", p)
            if mm and mm.group(1).strip() and mm.group(2) != "void":
                names.add(mm.group(2))
    return names


def split_top(s, sep=","):
    parts, depth, cur = [], 0, []
    for c in s:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


# ---- Pages -----------------------------------------------------------------

# The NAME line of the declarations that the headers give no comment (nor a
# paragraph of their section that names them). A comment in the header wins.
FALLBACK_SUMMARY = {
    "ts_status": "the status that every function that can fail returns",
    "ts_plugin": "the descriptor that a plugin's entry function returns",
}


def summary_of(lines):
    """A NAME line from comment text: its first sentence without asides in
    parentheses or braces, cut at ': ' or '; ' when what comes before says
    enough, lower case first."""
    text = " ".join(l.strip() for l in lines if l.strip() and not l.startswith("\0"))
    m = re.search(r"[.](\s|$)", text)
    first = text[:m.start()] if m else text
    prev = None
    while prev != first:
        prev = first
        first = re.sub(r"\s+\((?:[^()]|\([^()]*\))*\)", "", first)
        first = re.sub(r"\s+\{[^{}]*\}", "", first)
    for sep in (": ", "; "):
        head = first.split(sep)[0]
        if sep in first and len(head.split()) >= 3:
            first = head
            break
    first = first.strip().rstrip(",:;")
    word = first.split(" ")[0]
    if word[:1].isupper() and not (len(word) > 1 and word.isupper()):
        first = first[0].lower() + first[1:]
    return first


def overview_name(path):
    base = os.path.splitext(os.path.basename(path))[0]
    return {"turnstate_plugin": "turnstate-plugins"}.get(base, base.replace("_", "-"))


class Book:
    """Every page of the headers."""

    def __init__(self, paths, date):
        self.headers = [Header(p) for p in paths]
        self.date = date
        self.version = next((h.version() for h in self.headers if h.version()), "")
        self.by_name = {}
        for h in self.headers:
            for d in h.pages():
                if d.name in self.by_name:
                    raise SystemExit("genman: %s is declared twice (%s)" % (d.name, h.path))
                self.by_name[d.name] = d
        self.overviews = {overview_name(h.path): h for h in self.headers}
        # From the top comments: the convention for a ts_status, and a build
        # line (an indented line with pkg-config in it).
        self.status_convention, self.build_line = [], {}
        for h in self.headers:
            for b in blocks(h.overview):
                if b[0] == "list":
                    for item in b[2]:
                        if re.search(r"\breturn an? ts_status\b", " ".join(item)):
                            self.status_convention = [l for l in item if not l.startswith("\0")]
                elif b[0] == "code":
                    for l in b[1]:
                        if "pkg-config" in l:
                            self.build_line[h.base] = l.strip()

    def paths(self):
        out = ["man3/%s.3" % name for name in self.by_name]
        return out + ["man7/%s.7" % name for name in self.overviews]

    def head(self, names, section, what):
        return [
            '.\\" Made by docs/man/genman.py from the comments of Include/*.h: edit those, not this.',
            ".TH %s %s %s %s %s" % (names[0], section, self.date, quote_arg("Turnstate " + self.version),
                                    quote_arg("Turnstate Manual")),
            ".nh",
            ".SH NAME",
            line_safe(", ".join(esc(n, code=True) for n in names) + " \\- " + esc(what.replace("`", ""))),
        ]

    def build(self, h):
        if h.base in self.build_line:
            text, line = "Build a plugin with the headers alone (it does not link libturnstate):", self.build_line[h.base]
        else:
            text, line = "Compile and link with:", "cc file.c $(pkg-config --cflags --libs turnstate)"
        return [".PP", text, ".PP", ".RS 4", ".EX", line_safe(esc(line, code=True)), ".EE", ".RE"]

    @staticmethod
    def see_also(names, extra):
        refs = ["%s(3)" % bold(n) for n in sorted(set(names))]
        refs += ["%s(%s)" % (bold(n), s) for n, s in extra]
        return [".SH SEE ALSO", ",\n".join(refs)] if refs else []

    def summary(self, d):
        if d.doc:
            return summary_of(d.doc)
        about = self.about(d)
        if d.name in FALLBACK_SUMMARY or not about:
            return FALLBACK_SUMMARY.get(d.name, "declared in <%s>" % d.header.base)
        return summary_of(about[0][1])

    def about(self, d):
        """For a declaration without a comment: the paragraphs of its
        section's text that name it."""
        out = []
        for p in d.header.prose(d.section):
            for b in blocks(p.doc):
                if b[0] == "p" and re.search(r"\b%s\b" % re.escape(d.name), " ".join(b[1])):
                    return [b]
        return out

    def page(self, d):
        h = d.header
        names = [g.name for g in d.group]
        linker = Linker(self.by_name, names)
        for g in d.group:
            linker.params |= parameter_names(normalize(" ".join(g.lines)))
        # A function with a type of its own (ts_plugin_entry, ts_plugin_entry_fn):
        # the type's comment describes it too.
        own = self.by_name.get(d.name + "_fn") if d.kind == "function" else None
        doc = d.doc
        if own is not None and own.doc:
            doc = own.doc + [""] + d.doc
            linker.mentioned.append(own.name)
            what = summary_of(own.doc)
        else:
            what = self.summary(d)
        out = self.head(names, 3, what)

        out += [".SH SYNOPSIS", ".nf", ".B #include <%s>" % h.base]
        for g in d.group:
            if g.members or g is d.group[0]:
                out.append(".PP")
            out.extend(synopsis(g, names))
            linker.note(" ".join(g.lines))
        out.append(".fi")
        out.extend(self.build(h))

        desc, errors = split_errors(doc)
        out.append(".SH DESCRIPTION")
        for g in d.group:
            if g.deprecated is not None:
                why = (g.deprecated or "a later version removes it").rstrip(".") + "."
                out.append(line_safe("%s is deprecated: %s" % (bold(g.name), linker.text(why))))
                out.append(".PP")
        body = []
        render(desc or self.about(d), linker, body)
        if not body and d.name != "ts_status":
            body = [line_safe(linker.text(what[:1].upper() + what[1:] + "."))]
        out.extend(body)
        for g in d.group:
            if g.members and any(m.doc for m in g.members):
                out += [".PP", "The %s of \\fB%s\\fR:" % ("fields" if g.member_kind == "struct" else "values",
                                                         esc(g.name, code=True))]
                for m in g.members:
                    out.append(".TP")
                    out.append(line_safe(", ".join(bold(n) for n in m.names)))
                    if m.doc:
                        render(blocks(m.doc), linker, out, nested=True)
                    else:
                        out.append("(no comment in the header)")
        if d.name == "ts_status":
            out.extend(self.status_codes(linker, bool(body)))
        if d.section and h.prose(d.section):
            out.append(".PP")
            out.append(line_safe("What holds for all of \\(lq%s\\(rq: see \\fBturnstate\\fR(7)." % esc(d.section)
                                 if h.base == "turnstate.h" else
                                 "What holds for all of \\(lq%s\\(rq: see \\fB%s\\fR(7)." % (esc(d.section),
                                                                                         overview_name(h.path))))

        if any(g.kind == "function" and re.match(r"^ts_status\b", normalize(ATTRIBUTES.sub("", " ".join(g.lines))))
               for g in d.group) and self.status_convention:
            out.append(".SH RETURN VALUE")
            out.extend(linker.lines(self.status_convention))
        if errors:
            out.append(".SH ERRORS")
            out.extend(render_errors(errors, linker))
        while out[-1] in (".PP", ".IP"):
            out.pop()
        extra = [("turnstate", 7)]
        if h.base != "turnstate.h" or "plugin" in d.name:
            extra.append(("turnstate-plugins", 7))
        out.extend(self.see_also(linker.mentioned, extra))
        return "\n".join(out) + "\n"

    def status_codes(self, linker, after_text):
        out = []
        if self.status_convention:
            if after_text:
                out.append(".PP")
            out.extend(linker.lines(self.status_convention))
        out += [".PP", "The statuses:"]
        for h in self.headers:
            for d in h.decls:
                for name, params, value, trailing in d.macros:
                    if name == "TS_OK" or name.startswith("TS_E_"):
                        out += [".TP", line_safe("%s %s" % (bold(name), esc(value, code=True)))]
                        out.append(line_safe(linker.text(trailing or " ".join(d.doc))))
        return out

    def overview(self, name, h):
        linker = Linker(self.by_name)
        out = self.head([name], 7, h.title or "the declarations of <%s>" % h.base)
        out += [".SH SYNOPSIS", ".nf", ".B #include <%s>" % h.base, ".fi"]
        out.extend(self.build(h))
        out.append(".SH DESCRIPTION")
        render(blocks(h.overview), linker, out)
        out.append(".SH %s" % quote_arg("THE HEADER, PART BY PART" if h.sections else "DECLARATIONS"))
        current, shown = None, set()
        for d in h.decls:
            if d.section != current and d.section:
                current = d.section
                out.append(".SS %s" % quote_arg(current))
            if d.kind == "prose":
                if not out[-1].startswith(".SS"):
                    out.append(".PP")
                render(blocks(d.doc), linker, out)
            elif d.kind == "macros":
                if any(t for _, _, _, t in d.macros):
                    for n, p, v, t in d.macros:
                        out += [".TP", line_safe("%s%s %s" % (bold(n), esc(p, code=True), esc(v, code=True)))]
                        out.append(line_safe(linker.text(t or "(no comment in the header)")))
                elif d.doc:
                    out += [".TP", line_safe(", ".join(bold(n) + esc(p, code=True) for n, p, _, _ in d.macros))]
                    render(blocks(d.doc), linker, out, nested=True)
            elif d.group[0].name not in shown:
                shown.add(d.group[0].name)
                out += [".TP", line_safe(", ".join("%s(3)" % bold(g.name) for g in d.group))]
                linker.mentioned.extend(g.name for g in d.group)
                out.append(line_safe(linker.text(self.summary(d))))
        while out[-1] in (".PP", ".IP"):
            out.pop()
        out.extend(self.see_also([], [(n, 7) for n in self.overviews if n != name] + [("pkg-config", 1)]))
        return "\n".join(out) + "\n"

    def write(self, outdir):
        for sub in ("man3", "man7"):
            os.makedirs(os.path.join(outdir, sub), exist_ok=True)
        pages = [("man3/%s.3" % d.name, self.page(d)) for d in self.by_name.values()]
        pages += [("man7/%s.7" % n, self.overview(n, h)) for n, h in self.overviews.items()]
        for rel, text in pages:
            path = os.path.join(outdir, rel)
            with open(path + ".new", "w", encoding="ascii") as f:
                f.write(text)
            os.replace(path + ".new", path)
        return len(pages)


def render_errors(errors, linker):
    """The ERRORS section: "TS_E_A (why), TS_E_B, or ..." or a "- TS_E_A:
    why" list as tagged paragraphs, text that is neither as it is."""
    note, text, items = errors
    out = []
    if note:
        out += linker.lines([note]) + [".PP"]
    if items is not None:
        tagged = []
        for item in items:
            m = re.match(r"^(TS_[A-Z0-9_]+\*?):\s*(.*)$", item[0])
            if not m:
                tagged = None
                break
            tagged.append((m.group(1), [m.group(2)] + item[1:]))
        if tagged is None:
            render([("list", "ul", items)], linker, out)
            return out
        for code, lines in tagged:
            out += [".TP", bold(code)]
            text = " ".join(l for l in lines if not l.startswith("\0"))
            out.extend(linker.lines(reflow(sentence(text, linker.params), ["x" * 72])))
        return out
    # "TS_E_A (why), TS_E_B, ..., or whatever": the first sentence.
    depth, cut = 0, len(text)
    for i, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "." and depth == 0 and (i + 1 == len(text) or text[i + 1] == " "):
            cut = i
            break
    first, rest = text[:cut], text[cut + 1:].strip()
    codes, others = [], []
    for p in (x.strip() for x in split_top(first)):
        m = re.match(r"^(?:or\s+)?(TS_[A-Z0-9_]+)(?:\s*\((.*)\))?$", p, re.S)
        if m and not others:
            codes.append((m.group(1), m.group(2)))
        else:
            others.append(p)
    if not codes:
        return linker.lines(reflow(capitalize(text, linker.params), ["x" * 72]))
    for code, why in codes:
        out += [".TP", bold(code)]
        out.append(line_safe(linker.text(sentence(why, linker.params)) if why else
                             "See %s(3)." % bold("ts_status")))
        linker.note("ts_status")
    tail = sentence(", ".join(others), linker.params) if others else ""
    tail = (tail + " " + rest).strip()
    if tail:
        out.append(".PP")
        out.extend(linker.lines(reflow(tail, ["x" * 72])))
    return out


def capitalize(s, keep=()):
    """Upper case first, unless the first word is a name (a parameter in
    `keep`, one with '_', an acronym)."""
    word = re.sub(r"\W+$", "", s.split(" ")[0]) if s else ""
    if not s or word in keep or (len(word) > 1 and word.isupper()) or "_" in word or "`" in word:
        return s
    return s[0].upper() + s[1:]


def sentence(s, keep=()):
    """`s` as a sentence: upper case first, a full stop last."""
    s = capitalize(s.strip().rstrip(";,"), keep)
    return s if s.endswith((".", "!", "?")) else s + "."


def main(argv):
    ap = argparse.ArgumentParser(description="Manual pages from the comments of Turnstate's headers.")
    ap.add_argument("headers", nargs="+", help="Include/turnstate.h Include/turnstate_plugin.h")
    ap.add_argument("--out", default="build/man", help="the folder of man3/ and man7/ (build/man)")
    ap.add_argument("--date", default="", help="the pages' date, YYYY-MM-DD (default: SOURCE_DATE_EPOCH's, "
                                               "else the headers' last change)")
    ap.add_argument("--list", action="store_true", help="print the pages' paths, write nothing")
    args = ap.parse_args(argv)
    date = args.date
    if not date:
        epoch = os.environ.get("SOURCE_DATE_EPOCH")
        stamp = int(epoch) if epoch else int(max(os.path.getmtime(h) for h in args.headers))
        date = datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).strftime("%Y-%m-%d")
    book = Book(args.headers, date)
    if args.list:
        print("\n".join(book.paths()))
        return 0
    n = book.write(args.out)
    print("man: %d pages in %s" % (n, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
