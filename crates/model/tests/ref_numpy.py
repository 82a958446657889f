#!/usr/bin/env python3
"""Independent numpy reference for nectar's plaintext BERT, GPT-2, LLaMA and ViT forwards.

Reads a Hugging Face directory (config.json + model.safetensors) with nothing but the standard
library and numpy (the safetensors format is an 8-byte little-endian header length, a JSON header
of {name: {dtype, shape, data_offsets}}, then the raw little-endian data), runs the forward in
float64 for the token ids (or, for ViT, the image) given on the command line and prints JSON on
stdout.

usage: ref_numpy.py bert DIR ID,ID,...          -> {"hidden": [[..]], "embedding": [..], "logits": [..]|null}
       ref_numpy.py gpt2 DIR ID,ID,... N_NEW    -> {"logits": [..], "generated": [..]}
       ref_numpy.py llama DIR ID,ID,... N_NEW   -> {"logits": [..], "generated": [..]}
       ref_numpy.py vit DIR PIXELS.f32          -> {"hidden": [[..]], "logits": [..]|null}
         (PIXELS.f32: the image [C, H, W] as raw little-endian float32)
"""
import json
import math
import struct
import sys

import numpy as np

DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2"}


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        buf = raw[base + a : base + b]
        if info["dtype"] == "BF16":
            u = np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16
            arr = u.view(np.float32)
        else:
            arr = np.frombuffer(buf, dtype=DTYPES[info["dtype"]])
        out[name] = arr.astype(np.float64).reshape(info["shape"])
    return out


def getter(tensors, prefixes):
    def get(name):
        for p in [""] + prefixes:
            if p + name in tensors:
                return tensors[p + name]
        raise KeyError(name)

    return get


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def erf(x):
    return np.vectorize(math.erf)(x)


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def mha(q, k, v, heads, causal, kv_heads=None):
    n, d = q.shape
    dh = d // heads
    kv_heads = kv_heads or heads
    q = q.reshape(n, heads, dh).transpose(1, 0, 2)
    k = np.repeat(k.reshape(-1, kv_heads, dh).transpose(1, 0, 2), heads // kv_heads, axis=0)
    v = np.repeat(v.reshape(-1, kv_heads, dh).transpose(1, 0, 2), heads // kv_heads, axis=0)
    s = q @ k.transpose(0, 2, 1) / math.sqrt(dh)
    if causal:
        s = s + np.triu(np.full((n, n), -np.inf), 1)
    return (softmax(s) @ v).transpose(1, 0, 2).reshape(n, d)


def bert(cfg, t, ids):
    get = getter(t, ["bert."])
    eps = cfg.get("layer_norm_eps", 1e-12)
    heads = cfg["num_attention_heads"]
    act = gelu if cfg.get("hidden_act", "gelu") == "gelu" else gelu_new
    lin = lambda x, name: x @ get(name + ".weight").T + get(name + ".bias")
    ln = lambda x, name: layer_norm(x, get(name + ".weight"), get(name + ".bias"), eps)
    n = len(ids)
    x = get("embeddings.word_embeddings.weight")[ids]
    x = x + get("embeddings.position_embeddings.weight")[:n]
    x = x + get("embeddings.token_type_embeddings.weight")[0]
    x = ln(x, "embeddings.LayerNorm")
    for l in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % l
        q, k, v = (lin(x, p + "attention.self." + m) for m in ("query", "key", "value"))
        x = ln(x + lin(mha(q, k, v, heads, False), p + "attention.output.dense"), p + "attention.output.LayerNorm")
        f = act(lin(x, p + "intermediate.dense"))
        x = ln(x + lin(f, p + "output.dense"), p + "output.LayerNorm")
    emb = x.mean(0)
    emb = emb / np.linalg.norm(emb)
    logits = None
    try:
        pooled = np.tanh(lin(x[0], "pooler.dense"))
        logits = lin(pooled, "classifier").tolist()
    except KeyError:
        pass
    return {"hidden": x.tolist(), "embedding": emb.tolist(), "logits": logits}


def gpt2_logits(cfg, get, ids):
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    heads = cfg["n_head"]
    e = cfg["n_embd"]
    conv = lambda x, name: x @ get(name + ".weight") + get(name + ".bias")  # Conv1D: [in, out]
    ln = lambda x, name: layer_norm(x, get(name + ".weight"), get(name + ".bias"), eps)
    n = len(ids)
    x = get("wte.weight")[ids] + get("wpe.weight")[:n]
    for l in range(cfg["n_layer"]):
        p = "h.%d." % l
        qkv = conv(ln(x, p + "ln_1"), p + "attn.c_attn")
        q, k, v = qkv[:, :e], qkv[:, e : 2 * e], qkv[:, 2 * e :]
        x = x + conv(mha(q, k, v, heads, True), p + "attn.c_proj")
        x = x + conv(gelu_new(conv(ln(x, p + "ln_2"), p + "mlp.c_fc")), p + "mlp.c_proj")
    x = ln(x, "ln_f")
    return x[-1] @ get("wte.weight").T



def rms_norm(x, w, eps):
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * w


def rope(x, heads, theta):
    # HF "rotate half": dimension i pairs with i + dh/2.
    n, d = x.shape
    dh = d // heads
    x = x.reshape(n, heads, dh)
    inv = theta ** (-np.arange(0, dh, 2) / dh)
    ang = np.arange(n)[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, -1)[:, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, -1)[:, None, :]
    rot = np.concatenate([-x[..., dh // 2 :], x[..., : dh // 2]], -1)
    return (x * cos + rot * sin).reshape(n, d)


def llama_logits(cfg, get, ids):
    eps = cfg["rms_norm_eps"]
    heads = cfg["num_attention_heads"]
    kvh = cfg.get("num_key_value_heads", heads)
    theta = cfg.get("rope_theta", 10000.0)
    lin = lambda x, name: x @ get(name + ".weight").T
    silu = lambda x: x / (1.0 + np.exp(-x))
    x = get("embed_tokens.weight")[ids]
    for l in range(cfg["num_hidden_layers"]):
        p = "layers.%d." % l
        a = rms_norm(x, get(p + "input_layernorm.weight"), eps)
        q = rope(lin(a, p + "self_attn.q_proj"), heads, theta)
        k = rope(lin(a, p + "self_attn.k_proj"), kvh, theta)
        v = lin(a, p + "self_attn.v_proj")
        x = x + lin(mha(q, k, v, heads, True, kvh), p + "self_attn.o_proj")
        a = rms_norm(x, get(p + "post_attention_layernorm.weight"), eps)
        x = x + lin(silu(lin(a, p + "mlp.gate_proj")) * lin(a, p + "mlp.up_proj"), p + "mlp.down_proj")
    x = rms_norm(x, get("norm.weight"), eps)
    head = get("lm_head.weight") if not cfg.get("tie_word_embeddings") else get("embed_tokens.weight")
    return x[-1] @ head.T


def vit(cfg, t, pixels):
    get = getter(t, ["vit."])
    eps = cfg.get("layer_norm_eps", 1e-12)
    heads = cfg["num_attention_heads"]
    c, size, p = cfg.get("num_channels", 3), cfg["image_size"], cfg["patch_size"]
    lin = lambda x, name: x @ get(name + ".weight").T + get(name + ".bias")
    ln = lambda x, name: layer_norm(x, get(name + ".weight"), get(name + ".bias"), eps)
    img = pixels.reshape(c, size, size)
    # The patch embedding as the stride-p convolution it is: one output row per window.
    wconv = get("embeddings.patch_embeddings.projection.weight")  # [hidden, C, p, p]
    bconv = get("embeddings.patch_embeddings.projection.bias")
    g = size // p
    rows = []
    for gy in range(g):
        for gx in range(g):
            window = img[:, gy * p : (gy + 1) * p, gx * p : (gx + 1) * p]
            rows.append(np.einsum("ocyx,cyx->o", wconv, window) + bconv)
    cls = get("embeddings.cls_token").reshape(1, -1)
    x = np.concatenate([cls, np.array(rows)], 0) + get("embeddings.position_embeddings")[0]
    for l in range(cfg["num_hidden_layers"]):
        pre = "encoder.layer.%d." % l
        a = ln(x, pre + "layernorm_before")
        q, k, v = (lin(a, pre + "attention.attention." + m) for m in ("query", "key", "value"))
        x = x + lin(mha(q, k, v, heads, False), pre + "attention.output.dense")
        a = ln(x, pre + "layernorm_after")
        x = x + lin(gelu(lin(a, pre + "intermediate.dense")), pre + "output.dense")
    x = ln(x, "layernorm")
    logits = lin(x[0], "classifier").tolist() if "classifier.weight" in t else None
    return {"hidden": x.tolist(), "logits": logits}


def decoder(logits_fn, cfg, get, ids, n_new):
    logits = logits_fn(cfg, get, ids)
    seq = list(ids)
    gen = []
    for _ in range(n_new):
        nxt = int(np.argmax(logits_fn(cfg, get, seq)))  # no cache: recompute the prefix
        gen.append(nxt)
        seq.append(nxt)
    return {"logits": logits.tolist(), "generated": gen}


def main():
    arch, d = sys.argv[1], sys.argv[2]
    with open(d + "/config.json") as f:
        cfg = json.load(f)
    t = load_safetensors(d + "/model.safetensors")
    if arch == "vit":
        with open(sys.argv[3], "rb") as f:
            pixels = np.frombuffer(f.read(), dtype="<f4").astype(np.float64)
        json.dump(vit(cfg, t, pixels), sys.stdout)
        return
    ids = [int(i) for i in sys.argv[3].split(",")]
    if arch == "bert":
        out = bert(cfg, t, ids)
    elif arch == "gpt2":
        out = decoder(gpt2_logits, cfg, getter(t, ["transformer."]), ids, int(sys.argv[4]))
    elif arch == "llama":
        out = decoder(llama_logits, cfg, getter(t, ["model."]), ids, int(sys.argv[4]))
    else:
        raise SystemExit("unknown architecture " + arch)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
