"""Every relative link of the Markdown files named: to a file or folder that
exists, and, for FILE.md#fragment (or #fragment), to a heading of that file
as GitHub makes its anchor. Prints each broken link; exits 1 if any."""
import os
import re
import sys


def anchors(path):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)
    seen, result = {}, set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        result.add(slug if n == 0 else f"{slug}-{n}")
    return result


broken = 0
for path in sys.argv[1:]:
    text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto:
        file, _, fragment = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        if not os.path.exists(resolved):
            print(f"{path}: {target}: no file {resolved}")
            broken += 1
        elif fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
            print(f"{path}: {target}: {resolved} has no heading #{fragment}")
            broken += 1
sys.exit(1 if broken else 0)
