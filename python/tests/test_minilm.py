"""The Python package on the real all-MiniLM-L6-v2, next to the `nectar` CLI.

A secure run draws fresh randomness in every session (shares, masks, the probabilistic
truncations of fixed-point products), so two sessions on the same input agree up to the
protocol's error, never bit for bit: the Python client's vector and the CLI client's vector for
the same text are compared within that error (max |difference| below 2e-3, cosine above
0.9999), and each against the plaintext reference. With ``insecure_test_seed`` on both parties
(tests only: no privacy) the whole run is a function of the seeds, and the Python client's
vector equals the CLI's exactly. The plaintext reference itself is exact:
the binding and `nectar embed --plaintext --json` (full f32 values, not rounded) give equal
vectors, as the tokenization and the f32 forward are the same code.
"""

import json
import subprocess

import numpy as np

import nectar

TEXTS = ["The weather is lovely today.", "He drove to the stadium."]


def cli_json(nectar_bin, *args):
    out = subprocess.run([nectar_bin, *args], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def test_plaintext_reference_equals_the_cli_exactly(minilm, nectar_bin):
    lines = cli_json(nectar_bin, "embed", "--plaintext", "--json", "--model", minilm, *TEXTS)
    cli = np.asarray([line["embedding"] for line in lines], dtype=np.float32)
    py = nectar.embed_plaintext(minilm, TEXTS)
    assert py.shape == (2, 384)
    assert np.array_equal(py, cli)


def test_embed_through_a_server_matches_the_cli_client(minilm, nectar_bin):
    plain = nectar.embed_plaintext(minilm, TEXTS)
    with nectar.Server(minilm) as server:
        client = nectar.Client("127.0.0.1", server.port)
        vec, metrics = client.embed(TEXTS, return_metrics=True)
        # The CLI's client against the same (Python) server: one wire protocol.
        lines = cli_json(nectar_bin, "infer", "--connect", server.address, "--model", minilm, "--json", *TEXTS)
    assert server.stop(timeout=30)
    cli = np.asarray([line["private"]["Embedding"] for line in lines if "private" in line], dtype=np.float32)
    assert vec.dtype == np.float32 and vec.shape == cli.shape == (2, 384)
    assert np.abs(vec - cli).max() < 2e-3
    for a, b, p in zip(vec, cli, plain):
        assert float(a @ b) > 0.9999
        # the default suite (nectar) is plaintext-grade: issue 17's bound, 0.9999
        assert float(a @ p) > 0.9999
        assert abs(float(np.linalg.norm(a)) - 1.0) < 1e-5
    assert metrics["suite"] == "nectar" and len(metrics["queries"]) == 2
    assert [q["tokens"] for q in metrics["queries"]] == [line["tokens"] for line in lines if "private" in line]
    # Paraphrase structure survives: the two unrelated sentences are far apart.
    assert float(vec[0] @ vec[1]) < 0.5


def test_run_local_on_minilm(minilm):
    text = ["A man is playing a guitar."]
    vec, metrics = nectar.run_local(minilm, text, net="none", return_metrics=True)
    assert vec.shape == (1, 384)
    assert float(vec[0] @ nectar.embed_plaintext(minilm, text)[0]) > 0.999
    ops = {row["op"] for row in metrics["ops"]}
    assert {"embed", "layernorm", "gelu", "softmax"} <= ops


def test_seeded_python_client_equals_the_cli_client_exactly(minilm, nectar_bin):
    text = ["The weather is lovely today."]
    # A fresh server per run: its session 0 is seeded from (11, server, 0) both times.
    with nectar.Server(minilm, insecure_test_seed=11) as server:
        py = nectar.Client("127.0.0.1", server.port, insecure_test_seed=12).embed(text)
    with nectar.Server(minilm, insecure_test_seed=11) as server:
        args = ["infer", "--connect", server.address, "--model", minilm, "--json", "--insecure-test-seed", "12"]
        out = subprocess.run([nectar_bin, *args, *text], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "NO privacy" in out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    cli = np.asarray([line["private"]["Embedding"] for line in lines if "private" in line], dtype=np.float32)
    assert py.dtype == np.float32 and py.shape == cli.shape == (1, 384)
    assert np.array_equal(py, cli)
    assert float(py[0] @ nectar.embed_plaintext(minilm, text)[0]) > 0.999
    # The server's weight prefetch (memory_budget_mib) is its own computation: without it the
    # same seeded session gives the same embedding, bit for bit.
    with nectar.Server(minilm, insecure_test_seed=11, memory_budget_mib=0) as server:
        no_prefetch = nectar.Client("127.0.0.1", server.port, insecure_test_seed=12).embed(text)
    assert np.array_equal(py, no_prefetch)
