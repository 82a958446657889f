#!/usr/bin/env python3
"""docs/results/llm-llamacpp.jsonl (+ llm-llamacpp.meta.json): llama.cpp's logits for SmolLM2-
135M-Instruct (GGUF, Q4_1) on a few fixed prompts, the reference that nectar's plaintext f32
LLaMA is checked against (issue 49 item 3; the check is crates/model/tests/llamacpp_reference.rs,
the page section is scripts/results_llm.py's "Plaintext reference against llama.cpp").

usage: scripts/llamacpp_logits.py [--model PATH] [--sdist TAR.GZ] [--nectar | --nectar-only]

  (default)      llama.cpp (`pip install llama-cpp-python`, which compiles llama.cpp from its
                 sdist) tokenises each prompt with the model's own tokenizer (BOS only where the
                 GGUF asks for it: SmolLM2's does not) and evaluates it with every position's
                 logits kept (`logits_all=True`), twice:
                   - "logits": the GGUF file as published (Q4_1 weights, Q8_0 embedding) with
                     llama.cpp's defaults: on CPU its quantised dot products quantise the
                     activations too (Q8_1 / Q8_0 blocks) and the KV cache is f16;
                   - "logits_f32": a copy of the file with every tensor dequantised to F32 by the
                     `gguf` package (the same numbers nectar computes with) and an F32 KV cache:
                     llama.cpp's arithmetic without any quantisation of its own.
                 One JSON line per prompt: the prompt, its ids, the last position's full logit
                 vectors (49152 floats; 6 and 7 significant digits), their top-5 ids and the text
                 of the 20 best tokens of each; and the
                 meta file (command, llama-cpp-python and llama.cpp versions, llama.cpp's system
                 info, date, machine).
  --nectar       also runs nectar's f32 reference on the same ids (`cargo run -p nectar-model
                 --example f32_logits`) and adds to each line a "nectar" object: its top-5 ids,
                 and against each of the two llama.cpp vectors (as recorded, i.e. rounded: what
                 the Rust test compares) top-1 equal, max |logit difference| and the cosine.
  --nectar-only  only that: reads the existing jsonl (no llama-cpp-python needed) and rewrites
                 its "nectar" objects.
"""
import argparse
import datetime
import json
import math
import os
import pathlib
import platform
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
res = root / "docs" / "results"
OUT = res / "llm-llamacpp.jsonl"
META = res / "llm-llamacpp.meta.json"
MODEL = pathlib.Path.home() / ".cache" / "nectar" / "models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"

# Four of llm.md's private-generation prompts (5 to 13 tokens) and its 32-token one.
PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def add(a, b):",
    "Water boils at a temperature of",
    "The history of the Roman Empire spans more than a thousand years, from the founding of the "
    "city to the fall of Constantinople. Its long legacy still shapes our modern",
]
N_CTX = 64


def top(v, k=5):
    return sorted(range(len(v)), key=lambda i: -v[i])[:k]


def round_to(x, digits):
    return float(f"{x:.{digits}g}")


def machine():
    cpu = "?"
    try:
        for l in open("/proc/cpuinfo"):
            if l.startswith("model name"):
                cpu = l.split(":", 1)[1].strip()
                break
        mem = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal"))
        ram = f"{round(mem / 2**20)} GiB RAM"
    except (OSError, StopIteration):
        ram = "? RAM"
    return f"{os.cpu_count()}-core VM (nproc = {os.cpu_count()}), {ram}, {cpu}"


def sdist_commit(path):
    """The llama.cpp commit vendored in a llama-cpp-python sdist (its .git/modules/.../HEAD)."""
    import tarfile

    with tarfile.open(path) as t:
        for m in t.getmembers():
            if m.name.endswith(".git/modules/vendor/llama.cpp/HEAD"):
                return t.extractfile(m).read().decode().strip()
    return None


def dequantised(src, dst):
    """A copy of the GGUF file src with every tensor dequantised to F32 by the `gguf` package
    (llama.cpp's own): the very numbers nectar computes with (tests/gguf_reference.rs checks
    nectar's dequantisation against `gguf.quants.dequantize` bit for bit)."""
    import gguf
    import numpy as np

    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(dst, r.fields["general.architecture"].contents())
    for k, f in r.fields.items():
        if k.startswith("GGUF.") or k == "general.architecture":
            continue
        if k == "general.file_type":
            w.add_key_value(k, 0, gguf.GGUFValueType.UINT32)  # all F32
            continue
        vt = f.types[0]
        w.add_key_value(k, f.contents(), vt, f.types[-1] if vt == gguf.GGUFValueType.ARRAY else None)
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        w.add_tensor(t.name, a.reshape([int(x) for x in reversed(t.shape)]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def evaluate(model, texts_or_ids, **kw):
    """llama.cpp's last-position logits (float32 numpy arrays) and the ids of each prompt."""
    import llama_cpp
    import numpy as np

    out = []
    for p in texts_or_ids:
        # a fresh context per prompt: no state carried from the previous one
        llm = llama_cpp.Llama(model_path=str(model), logits_all=True, n_ctx=N_CTX, n_threads=2,
                              n_threads_batch=2, seed=0, verbose=False, **kw)
        ids = llm.tokenize(p.encode(), add_bos=True, special=False) if isinstance(p, str) else p
        llm.reset()
        llm.eval(ids)
        logits = np.asarray(llm.scores[len(ids) - 1], dtype=np.float32)
        assert logits.shape == (llm.n_vocab(),), logits.shape
        out.append((list(map(int, ids)), logits, bool(llm._model.add_bos_token())))
        del llm
    return out


def llamacpp(model):
    import tempfile

    import llama_cpp

    lines = []
    for text, (ids, logits, bos) in zip(PROMPTS, evaluate(model, PROMPTS)):
        rounded = [round_to(float(x), 6) for x in logits]
        lines.append({
            "prompt": text,
            "ids": ids,
            "add_bos": bos,
            "llama_cpp_python": llama_cpp.__version__,
            "top5": top(rounded),
            "logits": rounded,
        })
    with tempfile.TemporaryDirectory() as d:
        f32 = pathlib.Path(d) / "f32.gguf"
        dequantised(str(model), str(f32))
        got = evaluate(f32, [l["ids"] for l in lines], type_k=llama_cpp.GGML_TYPE_F32,
                       type_v=llama_cpp.GGML_TYPE_F32)
    vocab = llama_cpp.Llama(model_path=str(model), vocab_only=True, n_ctx=N_CTX, verbose=False)
    for l, (_, logits, _) in zip(lines, got):
        rounded = [round_to(float(x), 7) for x in logits]
        l["top5_f32"] = top(rounded)
        l["logits_f32"] = rounded
        # the text of each of the 20 best tokens of both vectors, for the page
        ids = sorted(set(top(l["logits"], 20)) | set(top(rounded, 20)))
        l["token_text"] = {str(i): vocab.detokenize([i]).decode("utf-8", "replace") for i in ids}
    info = llama_cpp.llama_print_system_info()
    info = info.decode() if isinstance(info, bytes) else str(info)
    lib = llama_cpp.llama_version()
    lib = lib.decode() if isinstance(lib, bytes) else str(lib)
    return lines, llama_cpp.__version__, info.strip(), lib


def compare(a, b):
    """nectar's logits a against llama.cpp's b: top-5 of a, top-1 equal, max |a - b|, cosine."""
    dot = sum(x * y for x, y in zip(a, b))
    cos = dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    t5 = top(a)
    return t5, t5[0] == top(b)[0], max(abs(x - y) for x, y in zip(a, b)), cos


def nectar(model, lines):
    """Runs nectar's f32 reference on each line's ids; adds the comparison to each line."""
    cmd = ["cargo", "run", "--quiet", "-p", "nectar-model", "--example", "f32_logits", "--", str(model)]
    cmd += [",".join(map(str, l["ids"])) for l in lines]
    out = subprocess.run(cmd, cwd=root, check=True, capture_output=True, text=True).stdout
    got = [json.loads(s) for s in out.splitlines() if s.strip()]
    assert len(got) == len(lines)
    for l, g in zip(lines, got):
        assert g["ids"] == l["ids"]
        t5, eq, d, cos = compare(g["logits"], l["logits"])
        _, eq32, d32, cos32 = compare(g["logits"], l["logits_f32"])
        l["nectar"] = {"top5": t5, "top1_equal": eq, "max_abs_diff": d, "cosine": cos,
                       "top1_equal_f32": eq32, "max_abs_diff_f32": d32, "cosine_f32": cos32}
        print(f"{l['prompt'][:40]!r:44} top-1 {t5[0]} vs {l['top5'][0]}  max|Δ| {d:.4f}  cos {cos:.7f}  "
              f"| F32: top-1 {'=' if eq32 else '≠'}  max|Δ| {d32:.2e}  cos {cos32:.9f}", file=sys.stderr)


def write(lines):
    with open(OUT, "w") as f:
        for l in lines:
            f.write(json.dumps(l, separators=(",", ":")) + "\n")
    print("wrote", OUT, f"({OUT.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(MODEL))
    ap.add_argument("--sdist", help="the llama-cpp-python sdist that was installed (`pip download --no-binary "
                    ":all: llama-cpp-python`): its vendored llama.cpp commit goes into the meta file")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--nectar", action="store_true")
    g.add_argument("--nectar-only", action="store_true")
    a = ap.parse_args()
    model = pathlib.Path(a.model)
    if not model.is_file():
        sys.exit(f"{model} not found: run `nectar fetch-model smollm2`")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                            text=True).stdout.strip()
    argv = " ".join(["scripts/llamacpp_logits.py"] + sys.argv[1:])
    if a.nectar_only:
        lines = [json.loads(s) for s in OUT.read_text().splitlines() if s.strip()]
        nectar(model, lines)
        write(lines)
        m = json.loads(META.read_text())
        m["commands"] = [c for c in m["commands"] if "--nectar-only" not in c["command"]]
        m["commands"].append({"command": argv, "commit": commit})
        META.write_text(json.dumps(m, indent=2) + "\n")
        return
    lines, version, info, lib = llamacpp(model)
    if a.nectar:
        nectar(model, lines)
    write(lines)
    meta = {
        "commands": [{"command": argv, "commit": commit}],
        "build": (f"llama-cpp-python {version} (`MAKEFLAGS=-j2 CMAKE_ARGS=-DLLAVA_BUILD=OFF pip install "
                  f"llama-cpp-python=={version}`: llama.cpp compiled from the sdist, CPU backend, otherwise "
                  f"default options, i.e. native CPU flags); nectar's side: dev profile (`cargo run -p "
                  f"nectar-model --example f32_logits`, opt-level 2)"),
        "machine": machine(),
        "llama_cpp_python": version,
        "llama_cpp_version": lib,
        "llama_cpp_commit": sdist_commit(a.sdist) if a.sdist else None,
        "llama_cpp_system_info": info,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "model": model.name,
        "n_ctx": N_CTX,
        "n_threads": 2,
    }
    META.write_text(json.dumps(meta, indent=2) + "\n")
    print("wrote", META, file=sys.stderr)


if __name__ == "__main__":
    main()
