"""The Python API on tiny random checkpoints (fast): Server / Client / run_local for each
task, the metrics dict, progress reports, and errors as NectarError with the CLI's message."""

import socket
import subprocess
import threading

import numpy as np
import pytest

import nectar
from conftest import FAST

IDS = [1, 5, 7, 9, 2]

OP_KEYS = {"op", "protocol", "calls", "seconds", "bytes_sent", "bytes_recv", "rounds", "prepro_bytes", "prepro_seconds"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_metrics_dict_shape(tiny):
    vec, m = nectar.run_local(tiny["bert"], [IDS, IDS[:3]], suite=FAST, net="lan", task="embed", return_metrics=True)
    assert vec.shape == (2, 16) and vec.dtype == np.float32
    for k in ("seconds", "setup_seconds", "inference_seconds"):
        assert isinstance(m[k], float) and m[k] > 0
    for k in ("bytes_client_to_server", "bytes_server_to_client", "bytes_total", "setup_bytes", "rounds"):
        assert isinstance(m[k], int) and m[k] > 0
    assert m["bytes_total"] == m["bytes_client_to_server"] + m["bytes_server_to_client"]
    assert m["setup_bytes"] < m["bytes_total"]
    assert m["seconds"] >= m["inference_seconds"]
    assert m["suite"] == FAST and m["protocols"]["ot"] == "ferret-small"
    assert [q["tokens"] for q in m["queries"]] == [5, 3]
    assert all(q["task"] == "Embed" for q in m["queries"])
    assert m["ops"] and all(set(row) == OP_KEYS for row in m["ops"])
    ops_bytes = sum(r["bytes_sent"] + r["bytes_recv"] for r in m["ops"])
    assert 0 < ops_bytes <= m["bytes_total"]
    # Without return_metrics: the result alone.
    assert isinstance(nectar.run_local(tiny["bert"], [IDS], suite=FAST, net="none", task="embed"), np.ndarray)


def test_server_client_every_task(tiny):
    with nectar.Server(tiny["bert"], suite=FAST) as server:
        assert server.running and server.model_type == "bert"
        client = nectar.Client("127.0.0.1", server.port, suite=FAST)
        emb = client.embed(IDS)
        assert emb.shape == (1, 16) and abs(float(np.linalg.norm(emb[0])) - 1) < 1e-5
        logits = client.logits(IDS)
        assert logits.shape == (3,)
        (label, scores), m = client.classify(IDS, return_metrics=True)
        assert label == f"LABEL_{int(np.argmax(logits))}" or np.sort(logits)[-1] - np.sort(logits)[-2] < 1e-2
        assert scores.shape == (3,) and abs(float(scores.sum()) - 1) < 1e-5
        assert m["queries"][0]["task"] == "Classify"
        with pytest.raises(nectar.NectarError, match="generation needs a GPT-2 or LLaMA"):
            client.generate(IDS, 2)
    assert not server.running
    local = nectar.run_local(tiny["bert"], [IDS], suite=FAST, net="none", task="classify")
    assert np.abs(local[0] - logits).max() < 1e-2


def test_generate_and_progress(tiny):
    calls = []
    with nectar.Server(tiny["gpt2"], suite=FAST) as server:
        client = nectar.Client("127.0.0.1", server.port, suite=FAST)
        tokens = client.generate([3, 14, 15], max_new_tokens=3, progress=lambda *a: calls.append(a))
    assert len(tokens) == 3 and all(0 <= t < 60 for t in tokens)
    # (query, queries, block, blocks): 2 blocks per step of the tiny GPT-2.
    assert calls and all(q == 0 and n == 1 and blocks == 2 and 1 <= b <= 2 for q, n, b, blocks in calls)
    local = nectar.run_local(tiny["gpt2"], [[3, 14, 15]], suite=FAST, net="none", max_new_tokens=3, progress=True)
    assert len(local) == 1 and len(local[0]) == 3


def test_generate_streams_the_same_tokens(tiny):
    with nectar.Server(tiny["gpt2"], suite=FAST, insecure_test_seed=5) as server:
        client = nectar.Client("127.0.0.1", server.port, suite=FAST, insecure_test_seed=5)
        whole = client.generate([3, 14, 15], max_new_tokens=3)
        stream = client.generate([3, 14, 15], max_new_tokens=3, stream=True)
        streamed = list(stream)
        # a model without a chat template (or tokenizer) cannot chat: one clear error
        with pytest.raises(nectar.NectarError, match="tokenizer|chat template"):
            client.chat([{"role": "user", "content": "hi"}])
        with pytest.raises(nectar.NectarError, match="role"):
            client.chat([{"text": "hi"}])
    assert streamed == whole and len(whole) == 3


def test_vit_from_pixels_and_bytes(tiny):
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
    with nectar.Server(tiny["vit"], suite=FAST) as server:
        client = nectar.Client("127.0.0.1", server.port, suite=FAST, model_dir=tiny["vit"])
        a = client.vit(img)
        # The same image normalised by hand (HF default mean / std 0.5): (C, H, W) floats.
        chw = ((img.astype(np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1)
        b = client.vit(chw)
    assert a.shape == b.shape == (3,)
    assert np.abs(a - b).max() < 1e-2


def test_serve_forever_ends_after_max_sessions(tiny):
    server = nectar.Server(tiny["bert"], suite=FAST, max_sessions=1)
    port = server.port
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    nectar.Client("127.0.0.1", port, suite=FAST).embed(IDS)
    t.join(timeout=60)
    assert not t.is_alive() and not server.running


def test_cli_server_and_python_client(tiny, nectar_bin):
    port = free_port()
    srv = subprocess.Popen(
        [nectar_bin, "serve", "--model", tiny["bert"], "--listen", f"127.0.0.1:{port}", "--op", "ot=ferret-small", "--max-sessions", "1"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "serving" in srv.stderr.readline()
        vec = nectar.Client("127.0.0.1", port, suite=FAST).embed(IDS)
        assert srv.wait(timeout=60) == 0
    finally:
        srv.kill()
    local = nectar.run_local(tiny["bert"], [IDS], suite=FAST, net="none")
    assert float(vec[0] @ local[0]) > 0.999


def test_errors_are_nectar_errors(tiny, tmp_path):
    assert issubclass(nectar.NectarError, RuntimeError)
    with pytest.raises(nectar.NectarError, match="unknown suite preset 'nope'"):
        nectar.Server(tiny["bert"], suite="nope")
    with pytest.raises(nectar.NectarError, match="unknown suite preset 'nope'"):
        nectar.run_local(tiny["bert"], [IDS], suite="nope")
    with pytest.raises(nectar.NectarError, match="matmul-shared must be ckks"):
        nectar.Server(tiny["bert"], suite="bumblebee+matmul=blb-fused")
    with pytest.raises(nectar.NectarError, match="model directory not found"):
        nectar.Server(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(nectar.NectarError, match="config.json"):
        nectar.Server(tmp_path / "empty")
    with pytest.raises(TypeError, match="unknown server limit"):
        nectar.Server(tiny["bert"], max_clients=3)
    with pytest.raises(nectar.NectarError, match="connect 127.0.0.1:.*refused"):
        nectar.Client("127.0.0.1", free_port(), suite=FAST).embed(IDS)
    with pytest.raises(nectar.NectarError, match="30 tokens exceed the 24 positions"):
        nectar.run_local(tiny["bert"], [list(range(1, 31))], suite=FAST, net="none")
    with pytest.raises(nectar.NectarError, match="exceeds the context window of 32"):
        nectar.run_local(tiny["gpt2"], [[1, 2, 3]], suite=FAST, net="none", max_new_tokens=40)
    with pytest.raises(nectar.NectarError, match="normalize=False is not implemented"):
        nectar.run_local(tiny["bert"], [IDS], normalize=False)
    with pytest.raises(nectar.NectarError, match="no tokenizer.json"):
        nectar.run_local(tiny["bert"], ["a text needs a tokenizer"], suite=FAST)
    with pytest.raises(nectar.NectarError, match="unknown link .moon.: none, MBPS/RTT_MS"):
        nectar.run_local(tiny["bert"], [IDS], suite=FAST, net="moon")
    with nectar.Server(tiny["bert"], suite=FAST) as server:
        # A query the client checks before any work (too long for the model).
        with pytest.raises(nectar.NectarError, match="exceed the 24 positions"):
            nectar.Client("127.0.0.1", server.port, suite=FAST).embed([list(range(1, 31))])
        # Both parties must resolve the same suite: the handshake names the operator.
        with pytest.raises(nectar.NectarError, match="suite mismatch: gelu"):
            nectar.Client("127.0.0.1", server.port, suite=FAST + "+gelu=p4").embed(IDS)
        # The server keeps serving after both.
        assert nectar.Client("127.0.0.1", server.port, suite=FAST).embed(IDS).shape == (1, 16)


def test_embed_in_batches(tiny):
    """Batches (issue 52): one forward pass per batch, the same embeddings as one query per
    input within the protocols' error, fewer flights; a batch above the server's bound on its
    tokens is refused in one line."""
    inputs = [IDS, IDS[:3], [4, 8, 2, 6], [9, 3, 1, 5, 7]]
    one, m1 = nectar.run_local(tiny["bert"], inputs, suite=FAST, net="lan", task="embed", return_metrics=True)
    two, m2 = nectar.run_local(tiny["bert"], inputs, suite=FAST, net="lan", task="embed", return_metrics=True, batch_size=2)
    assert two.shape == one.shape == (4, 16)
    assert float(np.min(np.sum(one * two, axis=1))) > 0.999
    assert len(m1["queries"]) == 4 and len(m2["queries"]) == 2
    assert m2["queries"][0]["task"] == {"Batch": {"each": "Embed", "lens": [5, 3]}}
    assert m2["rounds"] < m1["rounds"]
    with nectar.Server(tiny["bert"], suite=FAST) as server:
        client = nectar.Client("127.0.0.1", server.port, suite=FAST)
        got = client.embed(inputs, batch_size=4)
        assert float(np.min(np.sum(one * got, axis=1))) > 0.999
        with pytest.raises(nectar.NectarError, match="tokens per batch"):
            client.embed([list(range(1, 11))] * 4, batch_size=4)
    with pytest.raises(nectar.NectarError, match="batch_size must be a positive integer"):
        nectar.run_local(tiny["bert"], inputs, suite=FAST, net="none", batch_size=0)
