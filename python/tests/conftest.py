"""Fixtures of the Python tests: the fetched MiniLM, tiny checkpoints, the `nectar` binary."""

import os
import shutil
from pathlib import Path

import pytest

import nectar

REPO = Path(__file__).resolve().parents[2]

#: Suite of the tiny-model tests: the default suite (nectar) with the small Ferret parameter set
#: (fast setup), as the Rust session tests use; a `nectar serve --op ot=ferret-small` agrees.
FAST = "nectar+ot=ferret-small"


@pytest.fixture(scope="session")
def minilm() -> str:
    """The fetched all-MiniLM-L6-v2 (`make model` / `nectar fetch-model minilm`)."""
    d = nectar.default_model_dir()
    if not os.path.exists(os.path.join(d, "model.safetensors")):
        pytest.fail(f"MiniLM is not in {d}: run `make model` (or `nectar fetch-model minilm`) first")
    return d


@pytest.fixture(scope="session")
def nectar_bin() -> str:
    """The `nectar` CLI: $NECTAR_BIN, else the cargo build of this checkout."""
    candidates = [os.environ.get("NECTAR_BIN")]
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    candidates += [str(target / "debug" / "nectar"), str(target / "release" / "nectar"), shutil.which("nectar")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    pytest.fail("no nectar binary: set NECTAR_BIN or run `cargo build -p nectar-app` first")


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """Tiny random checkpoints (real HF format, no tokenizer): kind -> directory."""
    root = tmp_path_factory.mktemp("tiny")
    return {k: nectar.write_tiny_model(k, root / k, seed=7) for k in ("bert", "gpt2", "vit")}
