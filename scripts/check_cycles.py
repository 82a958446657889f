#!/usr/bin/env python3
"""Fails when the files of a crate import each other in a cycle (issue 46: "no import cycle
among the files of any crate"; `make test` runs it).

For every crate under crates/, each source file is a node; `a -> b` when `a`'s non-test code
(everything before its first `#[cfg(test)]`, comments removed) names a path `crate::...`,
`super::...` or `self::...` that resolves to module file `b` (the longest module prefix of the
path that is a file; `{...}` groups expanded one level). Cycles are the strongly connected sets
of more than one file. Usage: scripts/check_cycles.py [REPO]; exit status 1 when any is found.
"""
import os
import re
import sys


def modules(src):
    """Module path (tuple) -> file, for one crate's src/ (bin targets left out)."""
    out = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)[:-3].split(os.sep)
            if rel[0] == "bin":
                continue
            if rel[-1] in ("lib", "main", "mod"):
                rel = rel[:-1]
            out[tuple(rel)] = os.path.join(root, f)
    return out


def code_of(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    cut = text.find("#[cfg(test)]")
    if cut >= 0:
        text = text[:cut]
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)(::\{([^{}]*)\})?")


def targets(mod, code, mods):
    """Module files the code of module `mod` refers to."""
    found = set()
    for m in PATH.finditer(code):
        head, tail, group = m.group(1), m.group(2), m.group(4)
        base = {"crate": [], "super": list(mod[:-1]), "self": list(mod)}[head]
        parts = [p for p in tail.split("::") if p]
        # `super::super::x`
        while parts and parts[0] == "super":
            base = base[:-1]
            parts = parts[1:]
        stems = [parts]
        if group is not None:
            stems = [parts + [g.strip().split("::")[0].split(" ")[0]] for g in group.split(",") if g.strip()]
        for stem in stems:
            full = base + stem
            for n in range(len(full), 0, -1):
                if tuple(full[:n]) in mods:
                    found.add(mods[tuple(full[:n])])
                    break
    return found


def cycles(graph):
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else "."
    found = 0
    for crate in sorted(os.listdir(os.path.join(repo, "crates"))):
        src = os.path.join(repo, "crates", crate, "src")
        if not os.path.isdir(src):
            continue
        mods = modules(src)
        graph = {f: set() for f in mods.values()}
        for mod, f in mods.items():
            graph[f] = {t for t in targets(mod, code_of(f), mods) if t != f}
        for comp in cycles(graph):
            found += 1
            print(f"{crate}: import cycle among {len(comp)} files: " + ", ".join(os.path.relpath(c, repo) for c in comp))
    if found:
        sys.exit(1)
    print("no import cycle among the files of any crate")


if __name__ == "__main__":
    main()
