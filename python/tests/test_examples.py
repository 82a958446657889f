"""The examples on tiny checkpoints run as scripts (the MiniLM corpus search is run by hand:
it takes about a minute)."""

import subprocess
import sys

import pytest

from conftest import REPO


@pytest.mark.parametrize("script", ["classify.py", "generate.py"])
def test_example_runs(script):
    out = subprocess.run([sys.executable, str(REPO / "examples" / script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert ("label " if script == "classify.py" else " -> ") in out.stdout
    assert " s" in out.stdout
