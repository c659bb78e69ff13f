#!/usr/bin/env python3
"""Checks the Markdown files of the repository: every relative link names a file that exists
and, with `#anchor`, a heading of it (GitHub's anchors); and the decisions' index
(docs/decisions/README.md) has one line for every decision (`###` heading) of every area file,
and nothing else.

    .ci/links.py

Exits 1 and names each broken link or missing index line.
"""

import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SKIP = {"target", "node_modules", ".git"}


def slug(heading):
    """GitHub's anchor for a heading: lower case, links and code marks dropped, punctuation
    removed, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower()).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(path):
    """(level, text) of each heading outside fenced code."""
    out, fenced = [], False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            m = None if fenced else re.match(r"^(#{1,6}) (.*)", line)
            if m:
                out.append((len(m.group(1)), m.group(2).strip()))
    return out


def anchors(path):
    seen, out = {}, set()
    for _, text in headings(path):
        s = slug(text)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def markdown_files():
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIP)
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(top, name)


def broken_links(path):
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        link = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):
            continue
        target, _, anchor = link.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
        if not os.path.exists(resolved):
            yield f"{link}: no such file"
        elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
            yield f"{link}: no such heading"


def unindexed_decisions():
    folder = os.path.join(ROOT, "docs", "decisions")
    index = os.path.join(folder, "README.md")
    with open(index, encoding="utf-8") as f:
        listed = set(re.findall(r"^- \[.*\]\(([^)]+)\)$", f.read(), flags=re.M))
    wanted = set()
    for name in sorted(os.listdir(folder)):
        if name.endswith(".md") and name != "README.md":
            for level, text in headings(os.path.join(folder, name)):
                if level == 3:
                    wanted.add(f"{name}#{slug(text)}")
    for entry in sorted(wanted - listed):
        yield f"docs/decisions/README.md: no line for {entry}"
    for entry in sorted(listed - wanted):
        yield f"docs/decisions/README.md: {entry} is no decision"


def main():
    problems = []
    for path in markdown_files():
        problems += [f"{os.path.relpath(path, ROOT)}: {p}" for p in broken_links(path)]
    problems += list(unindexed_decisions())
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print("links and the decisions' index: all resolve")


if __name__ == "__main__":
    main()
