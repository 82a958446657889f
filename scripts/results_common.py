"""Shared by the scripts that generate docs/results/*.md from committed JSON: where the files
are, how they are read, and the provenance block every page starts with."""
import json
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parent.parent
res = root / "docs" / "results"


def load(name):
    """The JSON lines of docs/results/NAME; exits if there are none."""
    lines = [json.loads(l) for l in (res / name).read_text().splitlines() if l.strip()]
    if not lines:
        sys.exit(f"{name} is empty")
    return lines


def meta(name):
    """docs/results/NAME (a *.meta.json)."""
    return json.loads((res / name).read_text())


def provenance(w, m):
    """The build, machine and commands (each with its commit) of a meta file, as list items."""
    w(f"- build: {m['build']}")
    w(f"- machine: {m['machine']}")
    w("- commands (each with the commit it ran at):")
    for c in m["commands"]:
        w(f"  - `{c['command']}` at `{c['commit']}`")
