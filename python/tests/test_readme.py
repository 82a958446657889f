"""README.md's Python example runs verbatim (the code block of its "## Python" section)."""

import re

from conftest import REPO


def readme_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the Python section holds one example"
    return blocks[0]


def test_readme_example_runs(minilm, capsys):
    code = readme_example()
    assert 8 <= len(code.strip().splitlines()) <= 14
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    cosine = float(re.search(r"cosine (\S+)", out).group(1))
    assert 0.5 < cosine < 1.0  # a paraphrase pair
    assert re.search(r"\d+\.\d s, \d+ MB, \d+ rounds", out)
    assert len(out.strip().splitlines()) == 5
