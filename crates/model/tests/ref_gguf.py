#!/usr/bin/env python3
"""Independent reference for nectar's GGUF reader: the `gguf` Python package (llama.cpp's own)
writes and dequantises, numpy runs a float64 LLaMA forward the way llama.cpp does.

usage: ref_gguf.py tiny OUT_DIR IDS N_NEW
         writes OUT_DIR/tiny.gguf (a 2-layer LLaMA with a tensor of each of F32, F16, BF16, Q8_0,
         Q4_0, Q4_1, Q4_K, Q5_K, Q6_K; q/k rows in llama.cpp's rotary order; a 64-token
         byte-level vocabulary), OUT_DIR/NAME.f32 (each tensor as `gguf.quants.dequantize`
         returns it, raw little-endian float32, GGUF's row-major order) and prints JSON
         {"logits": [..], "generated": [..], "types": {name: type}}
       ref_gguf.py file PATH IDS N_NEW
         the same forward on an existing LLaMA GGUF file (e.g. SmolLM2), read with
         gguf.GGUFReader; prints {"logits": [..], "generated": [..]}

The forward is written against the file as llama.cpp reads it, not as nectar does: the stored
q/k weights are used as they are, with ggml's "normal" rotary embedding, which rotates adjacent
pairs (2i, 2i+1); nectar instead undoes the converter's row permutation and rotates (i, i+dh/2),
as Hugging Face does. Agreement therefore checks the permutation too. K-quants have no quantiser
in the `gguf` package, so their blocks are random bytes with small finite scales.
"""
import json
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

HIDDEN, HEADS, KV_HEADS, FFN, LAYERS, VOCAB, CTX = 256, 4, 2, 256, 2, 64, 64
THETA, EPS = 10000.0, 1e-5

# The type of each weight, per layer (every supported type appears at least once).
LAYER_TYPES = [
    {"attn_q": T.Q4_K, "attn_k": T.Q5_K, "attn_v": T.Q6_K, "attn_output": T.Q4_0,
     "ffn_gate": T.Q4_1, "ffn_up": T.F16, "ffn_down": T.BF16},
    {"attn_q": T.Q8_0, "attn_k": T.Q4_1, "attn_v": T.Q4_0, "attn_output": T.Q6_K,
     "ffn_gate": T.Q5_K, "ffn_up": T.Q4_K, "ffn_down": T.Q8_0},
]


def random_k_blocks(rng, qtype, rows, cols):
    """Random K-quant blocks (raw bytes) whose f16 scales are small and finite."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    nb = rows * cols // block
    raw = rng.integers(0, 256, size=(nb, size), dtype=np.uint8)

    def put_f16(col, lo, hi):
        v = rng.uniform(lo, hi, size=nb).astype(np.float16)
        raw[:, col:col + 2] = v.view(np.uint8).reshape(nb, 2)

    if qtype in (T.Q4_K, T.Q5_K):
        put_f16(0, 1e-4, 4e-4)  # d
        put_f16(2, 1e-4, 4e-4)  # dmin
    elif qtype == T.Q6_K:
        put_f16(208, 5e-5, 2e-4)  # d (last field)
    return raw.reshape(rows, cols * size // block)


def store(rng, qtype, rows, cols, scale):
    """(array for GGUFWriter.add_tensor, raw_dtype) of a [rows, cols] weight of type qtype."""
    if qtype in (T.Q4_K, T.Q5_K, T.Q6_K):
        return random_k_blocks(rng, qtype, rows, cols), qtype
    w = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
    if qtype == T.F32:
        return w, None
    if qtype == T.F16:
        return w.astype(np.float16), None
    return gguf.quants.quantize(w, qtype), qtype


def write_tiny(out_dir):
    rng = np.random.default_rng(49)
    path = os.path.join(out_dir, "tiny.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_block_count(LAYERS)
    w.add_context_length(CTX)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(THETA)
    w.add_layer_norm_rms_eps(EPS)
    w.add_rope_dimension_count(HIDDEN // HEADS)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list([chr(ord("a") + i) if i < 26 else "ab" if i == 26 else chr(0x100 + i) for i in range(VOCAB)])
    w.add_token_types([1] * VOCAB)
    w.add_token_merges(["a b"])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    w.add_add_bos_token(False)
    w.add_chat_template("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
    types = {}

    def add(name, qtype, rows, cols, scale):
        data, raw = store(rng, qtype, rows, cols, scale)
        if raw is None:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, data, raw_dtype=raw)
        types[name] = qtype.name

    add("token_embd.weight", T.Q8_0, VOCAB, HIDDEN, 1.0)
    dh = HIDDEN // HEADS
    shapes = {"attn_q": (HIDDEN, HIDDEN), "attn_k": (KV_HEADS * dh, HIDDEN), "attn_v": (KV_HEADS * dh, HIDDEN),
              "attn_output": (HIDDEN, HIDDEN), "ffn_gate": (FFN, HIDDEN), "ffn_up": (FFN, HIDDEN),
              "ffn_down": (HIDDEN, FFN)}
    for layer, lt in enumerate(LAYER_TYPES):
        for part, qtype in lt.items():
            rows, cols = shapes[part]
            add(f"blk.{layer}.{part}.weight", qtype, rows, cols, 1.0 / np.sqrt(cols))
        for norm in ("attn_norm", "ffn_norm"):
            w.add_tensor(f"blk.{layer}.{norm}.weight", (1 + 0.2 * rng.standard_normal(HIDDEN)).astype(np.float32))
            types[f"blk.{layer}.{norm}.weight"] = "F32"
    w.add_tensor("output_norm.weight", (1 + 0.2 * rng.standard_normal(HIDDEN)).astype(np.float32))
    types["output_norm.weight"] = "F32"
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path, types


def load(path):
    """name -> float32 row-major array (dequantised by the gguf package), and the metadata."""
    r = gguf.GGUFReader(path)
    tensors = {}
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type)
        shape = [int(d) for d in reversed(t.shape)]
        tensors[t.name] = np.asarray(a, dtype=np.float32).reshape(shape)

    def field(k):
        return r.fields[k].contents()

    return tensors, field


def rope_pairs(x, pos):
    """ggml's normal-mode rotary embedding: pairs (2i, 2i+1) of each head, x: [T, H, dh]."""
    dh = x.shape[-1]
    inv = THETA_OF[0] ** (-np.arange(0, dh, 2, dtype=np.float64) / dh)
    ang = pos[:, None] * inv[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


THETA_OF = [THETA]


def rms(x, g, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def forward(t, cfg, ids):
    heads, kv, layers, eps = cfg["heads"], cfg["kv"], cfg["layers"], cfg["eps"]
    emb = t["token_embd.weight"].astype(np.float64)
    head = t.get("output.weight", t["token_embd.weight"]).astype(np.float64)
    x = emb[ids]
    n = len(ids)
    pos = np.arange(n, dtype=np.float64)
    for l in range(layers):
        g = lambda k: t[f"blk.{l}.{k}.weight"].astype(np.float64)
        h = rms(x, g("attn_norm"), eps)
        q = (h @ g("attn_q").T).reshape(n, heads, -1)
        k = (h @ g("attn_k").T).reshape(n, kv, -1)
        v = (h @ g("attn_v").T).reshape(n, kv, -1)
        dh = q.shape[-1]
        q, k = rope_pairs(q, pos), rope_pairs(k, pos)
        att = np.empty((n, heads, dh))
        mask = np.triu(np.full((n, n), -np.inf), 1)
        for hd in range(heads):
            kh = hd // (heads // kv)
            s = q[:, hd, :] @ k[:, kh, :].T / np.sqrt(dh) + mask
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            att[:, hd, :] = p @ v[:, kh, :]
        x = x + att.reshape(n, -1) @ g("attn_output").T
        h = rms(x, g("ffn_norm"), eps)
        a = h @ g("ffn_gate").T
        x = x + ((a / (1 + np.exp(-a))) * (h @ g("ffn_up").T)) @ g("ffn_down").T
    x = rms(x, t["output_norm.weight"].astype(np.float64), eps)
    return x[-1] @ head.T


def generate(t, cfg, ids, n_new):
    ids = list(ids)
    logits = forward(t, cfg, ids)
    first = logits
    out = []
    for _ in range(n_new):
        nxt = int(np.argmax(logits))
        out.append(nxt)
        ids.append(nxt)
        logits = forward(t, cfg, ids)
    return first, out


def main():
    mode, target, ids, n_new = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    ids = [int(i) for i in ids.split(",")]
    result = {}
    if mode == "tiny":
        path, types = write_tiny(target)
        result["types"] = types
    else:
        path = target
    tensors, field = load(path)
    if mode == "tiny":
        for name, a in tensors.items():
            a.astype("<f4").tofile(os.path.join(target, name + ".f32"))
    THETA_OF[0] = float(field("llama.rope.freq_base"))
    cfg = {
        "heads": int(field("llama.attention.head_count")),
        "kv": int(field("llama.attention.head_count_kv")),
        "layers": int(field("llama.block_count")),
        "eps": float(field("llama.attention.layer_norm_rms_epsilon")),
    }
    logits, gen = generate(tensors, cfg, ids, n_new)
    result["logits"] = logits.tolist()
    result["generated"] = gen
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
