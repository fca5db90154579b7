#!/usr/bin/env python3
"""Prints the coverage table of `make coverage` and writes the list of
uncovered lines and branches.

    report.py SUMMARY.json ANNOTATED.txt UNCOVERED.txt ROOT

SUMMARY.json is `llvm-cov export -summary-only`, ANNOTATED.txt is
`llvm-cov show -format=text -show-branches=count`. Swift's coverage mapping
has no branch regions, so for Swift files the branch column shows regions
(every `if`, `guard`, `?:`, loop body and `catch` is a region of its own),
marked with "r"; C and C++ files show real branches (each condition's true
and false outcome)."""
import json
import re
import sys

summary_path, annotated_path, uncovered_path, root = sys.argv[1:5]
root = root.rstrip("/") + "/"
data = json.load(open(summary_path))["data"][0]


def rel(name):
    return name[len(root):] if name.startswith(root) else name


def pct(covered, count):
    return 100.0 * covered / count if count else 100.0


rows = []
for f in data["files"]:
    s = f["summary"]
    name = rel(f["filename"])
    lines = s["lines"]
    branches = s["branches"]
    kind = ""
    if branches["count"] == 0 and name.endswith(".swift"):
        branches = s["regions"]
        kind = "r"
    rows.append((name, lines["covered"], lines["count"], branches["covered"], branches["count"], kind))
rows.sort()

print(f"{'file':<48} {'lines':>15} {'branches':>17}")
for name, lc, ln, bc, bn, kind in rows:
    print(f"{name:<48} {pct(lc, ln):6.1f}% {lc:4}/{ln:<4} {pct(bc, bn):6.1f}%{kind or ' '} {bc:4}/{bn:<4}")

t = data["totals"]
lc, ln = t["lines"]["covered"], t["lines"]["count"]
# Branch total: real branches (C, C++) plus regions for Swift files, and each
# kind on its own.
cb = sum(r[3] for r in rows if not r[5]); nb = sum(r[4] for r in rows if not r[5])
sr = sum(r[3] for r in rows if r[5]); nr = sum(r[4] for r in rows if r[5])
print("-" * 83)
print(f"{'TOTAL lines':<48} {pct(lc, ln):6.1f}% {lc}/{ln}")
print(f"{'TOTAL branches (C, C++)':<48} {pct(cb, nb):6.1f}% {cb}/{nb}")
print(f"{'TOTAL regions (Swift, for want of branches)':<48} {pct(sr, nr):6.1f}% {sr}/{nr}")
print(f"{'TOTAL branches + Swift regions':<48} {pct(cb + sr, nb + nr):6.1f}% {cb + sr}/{nb + nr}")
print(f"{'TOTAL regions (all files)':<48} {pct(t['regions']['covered'], t['regions']['count']):6.1f}% "
      f"{t['regions']['covered']}/{t['regions']['count']}")
print(f"{'TOTAL functions':<48} {pct(t['functions']['covered'], t['functions']['count']):6.1f}% "
      f"{t['functions']['covered']}/{t['functions']['count']}")

# Uncovered lines and branches, file by file, from the annotated listing.
line_re = re.compile(r"^\s*(\d+)\|\s*([0-9.]+[kMG]?|)\|(.*)$")
branch_re = re.compile(r"^\s*\|\s*Branch \((\d+):(\d+)\): \[True: ([0-9.]+[kMG]?), False: ([0-9.]+[kMG]?)\]")
out = []
current = None
for raw in open(annotated_path, errors="replace"):
    raw = raw.rstrip("\n")
    if raw.startswith("/") and raw.endswith(":") and "|" not in raw:
        current = rel(raw[:-1])
        out.append(f"\n== {current}")
        continue
    m = line_re.match(raw)
    if m and m.group(2) == "0":
        out.append(f"{m.group(1):>5}: {m.group(3).strip()}")
        continue
    b = branch_re.match(raw)
    if b and (b.group(3) == "0" or b.group(4) == "0"):
        never = "true" if b.group(3) == "0" else "false"
        if b.group(3) == "0" and b.group(4) == "0":
            never = "either"
        out.append(f"{b.group(1):>5}: branch at column {b.group(2)} never {never}")
# Files with nothing uncovered get no section.
text = "\n".join(out).lstrip("\n")
sections = [part for part in text.split("\n\n== ") if "\n" in part.strip("\n")]
with open(uncovered_path, "w") as f:
    f.write("\n\n== ".join(sections).strip("\n") + "\n")
