#!/usr/bin/env python3
"""Lists the circles of imports between the files of a crate: groups of modules that import
each other, directly or in a loop (`crate::a::…` in b and `crate::b::…` in a; a file's
`#[cfg(test)] mod tests` is left out, and so is `super::`), and how many files read an item
of the crate root (`crate::Item`, not a module: imports that run back up to lib.rs, which
declares them all).

    .ci/cycles.py CRATE [CRATE ...]      # e.g. api engines imaging
    .ci/cycles.py --fail CRATE ...       # exit 1 when a listed crate has a circle

`.ci/run` runs it with `--fail` on every crate but `imaging`, which still has a circle (the
cut-out's mask and fusion); it joins once that is gone.
"""

import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def modules(src):
    """Module path (`a::b`, `` for the root) → file."""
    found = {}
    for top, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs") or name == "main.rs" and top != src:
                continue
            path = os.path.join(top, name)
            parts = os.path.relpath(path, src)[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib"):
                parts = parts[:-1]
            if parts and parts[0] == "bin":
                continue
            found["::".join(parts)] = path
    return found


def target(mods, path):
    """The module a `crate::…` path lands in: its longest prefix that is a module."""
    for k in range(len(path), 0, -1):
        candidate = "::".join(path[:k])
        if candidate in mods:
            return candidate
    return ""


def imports(mods, module, text):
    """The modules this one reads (the root as ``)."""
    text = re.sub(r"#\[cfg\(test\)\]\s*mod tests \{.*", "", text, flags=re.S)
    text = re.sub(r"(?<![:\"'])//[^\n]*", "", text)  # comments and docs name modules without reading them
    out = set()
    for m in re.finditer(r"\bcrate::((?:\w+::)*\w+)", text):
        out.add(target(mods, m.group(1).split("::")))
    for m in re.finditer(r"\buse crate::\{([^}]*)\}", text):
        for item in m.group(1).split(","):
            if item.strip():
                out.add(target(mods, item.strip().split("::")))
    out.discard(module)
    return out


def circles(crate):
    mods = modules(os.path.join(ROOT, "crates", crate, "src"))
    read = {m: imports(mods, m, open(p, encoding="utf-8").read()) for m, p in mods.items()}
    up = sum(1 for m, targets in read.items() if m and "" in targets)
    graph = {m: {t for t in targets if t} for m, targets in read.items() if m}
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found, up


def main():
    args = [a for a in sys.argv[1:] if a != "--fail"]
    any_found = False
    for crate in args:
        groups, up = circles(crate)
        any_found |= bool(groups)
        print(f"{crate}: " + ("no circles" if not groups else "; ".join(" <-> ".join(g) for g in groups))
              + f"; {up} files read items of the crate root")
    if any_found and "--fail" in sys.argv[1:]:
        sys.exit(1)


if __name__ == "__main__":
    main()
