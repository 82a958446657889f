//! Deterministic tiny BERT, GPT-2, LLaMA and ViT checkpoints for tests.
//!
//! Each writer puts a real `config.json` and `model.safetensors` (F32, HF tensor names) into a
//! directory, with weights drawn from a [`Prg`] seeded by the caller, so the same seed always
//! gives the same files. No tokenizer is written: tests feed token ids directly
//! ([`crate::Bert::forward_ids`], [`crate::Gpt2::generate`]).
//!
//! The tiny BERT is stored as `BertForSequenceClassification` (base weights under `bert.`,
//! with pooler and a 3-way classifier); the tiny GPT-2 as `GPT2LMHeadModel` (under
//! `transformer.`), so both prefix conventions of HF checkpoints are exercised. The tiny LLaMA
//! (`LlamaForCausalLM`, under `model.`, untied `lm_head`) uses grouped-query attention. The tiny
//! ViT is `ViTForImageClassification` (under `vit.`, 3-way `classifier`); its input is pixels,
//! see [`tiny_image`].

use std::path::Path;

use nectar_math::Prg;
use rand_core::RngCore;
use safetensors::tensor::TensorView;
use safetensors::Dtype;

use crate::ModelError;

/// Sizes of the tiny BERT.
pub const BERT_VOCAB: usize = 50;
pub const BERT_HIDDEN: usize = 16;
pub const BERT_LAYERS: usize = 2;
pub const BERT_HEADS: usize = 4;
pub const BERT_FFN: usize = 40;
pub const BERT_MAX_POS: usize = 24;
pub const BERT_LABELS: usize = 3;

/// Sizes of the tiny GPT-2.
pub const GPT2_VOCAB: usize = 60;
pub const GPT2_EMBD: usize = 16;
pub const GPT2_LAYERS: usize = 2;
pub const GPT2_HEADS: usize = 2;
pub const GPT2_POSITIONS: usize = 32;

/// Sizes of the tiny LLaMA.
pub const LLAMA_VOCAB: usize = 40;
pub const LLAMA_HIDDEN: usize = 16;
pub const LLAMA_LAYERS: usize = 2;
pub const LLAMA_HEADS: usize = 4;
pub const LLAMA_KV_HEADS: usize = 2;
pub const LLAMA_FFN: usize = 24;
pub const LLAMA_POSITIONS: usize = 32;

/// Sizes of the tiny ViT: an 8x8 RGB image in 4x4 patches (4 patches + `[CLS]`).
pub const VIT_IMAGE: usize = 8;
pub const VIT_PATCH: usize = 4;
pub const VIT_CHANNELS: usize = 3;
pub const VIT_HIDDEN: usize = 16;
pub const VIT_LAYERS: usize = 2;
pub const VIT_HEADS: usize = 2;
pub const VIT_FFN: usize = 32;
pub const VIT_LABELS: usize = 3;

struct Writer {
    prg: Prg,
    tensors: Vec<(String, Vec<usize>, Vec<u8>)>,
}

impl Writer {
    fn new(seed: u64) -> Self {
        let mut block = [0u8; 16];
        block[..8].copy_from_slice(&seed.to_le_bytes());
        block[8..].copy_from_slice(b"nectiny\0");
        Writer {
            prg: Prg::new(block),
            tensors: Vec::new(),
        }
    }

    /// Uniform in `[-1, 1)` with 24 random bits.
    fn unit(&mut self) -> f32 {
        (self.prg.next_u32() >> 8) as f32 / 8_388_608.0 - 1.0
    }

    /// A tensor with entries `center + scale * U[-1, 1)`.
    fn add(&mut self, name: &str, shape: &[usize], center: f32, scale: f32) {
        let n: usize = shape.iter().product();
        let data: Vec<u8> = (0..n)
            .flat_map(|_| (center + scale * self.unit()).to_le_bytes())
            .collect();
        self.tensors.push((name.to_string(), shape.to_vec(), data));
    }

    fn linear(&mut self, name: &str, shape: &[usize], fan_in: usize, bias_len: usize) {
        self.add(
            &format!("{name}.weight"),
            shape,
            0.0,
            1.5 / (fan_in as f32).sqrt(),
        );
        self.add(&format!("{name}.bias"), &[bias_len], 0.0, 0.1);
    }

    fn norm(&mut self, name: &str, d: usize) {
        self.add(&format!("{name}.weight"), &[d], 1.0, 0.2);
        self.add(&format!("{name}.bias"), &[d], 0.0, 0.1);
    }

    fn finish(self, dir: &Path, config: &serde_json::Value) -> Result<(), ModelError> {
        std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
        let cfg_path = dir.join("config.json");
        let text = serde_json::to_string_pretty(config)
            .map_err(|e| ModelError::config(&cfg_path, e.to_string()))?;
        std::fs::write(&cfg_path, text).map_err(|e| ModelError::io(&cfg_path, e))?;
        let st_path = dir.join("model.safetensors");
        let views = self
            .tensors
            .iter()
            .map(|(name, shape, data)| {
                TensorView::new(Dtype::F32, shape.clone(), data)
                    .map(|v| (name.clone(), v))
                    .map_err(|e| ModelError::weights(&st_path, format!("{e:?}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        safetensors::serialize_to_file(views, &None, &st_path)
            .map_err(|e| ModelError::weights(&st_path, format!("cannot write: {e:?}")))
    }
}

/// Writes the tiny BERT (with classifier head) into `dir`.
pub fn write_tiny_bert(dir: &Path, seed: u64) -> Result<(), ModelError> {
    let (h, f) = (BERT_HIDDEN, BERT_FFN);
    let mut w = Writer::new(seed);
    w.add(
        "bert.embeddings.word_embeddings.weight",
        &[BERT_VOCAB, h],
        0.0,
        1.0,
    );
    w.add(
        "bert.embeddings.position_embeddings.weight",
        &[BERT_MAX_POS, h],
        0.0,
        0.5,
    );
    w.add(
        "bert.embeddings.token_type_embeddings.weight",
        &[2, h],
        0.0,
        0.5,
    );
    w.norm("bert.embeddings.LayerNorm", h);
    for l in 0..BERT_LAYERS {
        let p = format!("bert.encoder.layer.{l}");
        for m in ["query", "key", "value"] {
            w.linear(&format!("{p}.attention.self.{m}"), &[h, h], h, h);
        }
        w.linear(&format!("{p}.attention.output.dense"), &[h, h], h, h);
        w.norm(&format!("{p}.attention.output.LayerNorm"), h);
        w.linear(&format!("{p}.intermediate.dense"), &[f, h], h, f);
        w.linear(&format!("{p}.output.dense"), &[h, f], f, h);
        w.norm(&format!("{p}.output.LayerNorm"), h);
    }
    w.linear("bert.pooler.dense", &[h, h], h, h);
    w.linear("classifier", &[BERT_LABELS, h], h, BERT_LABELS);
    let config = serde_json::json!({
        "architectures": ["BertForSequenceClassification"],
        "model_type": "bert",
        "vocab_size": BERT_VOCAB,
        "hidden_size": h,
        "num_hidden_layers": BERT_LAYERS,
        "num_attention_heads": BERT_HEADS,
        "intermediate_size": f,
        "max_position_embeddings": BERT_MAX_POS,
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
        "hidden_act": "gelu",
        "position_embedding_type": "absolute",
        "id2label": {"0": "neg", "1": "neutral", "2": "pos"},
    });
    w.finish(dir, &config)
}

/// Writes the tiny GPT-2 into `dir`.
pub fn write_tiny_gpt2(dir: &Path, seed: u64) -> Result<(), ModelError> {
    let e = GPT2_EMBD;
    let f = 4 * e;
    let mut w = Writer::new(seed);
    w.add("transformer.wte.weight", &[GPT2_VOCAB, e], 0.0, 1.0);
    w.add("transformer.wpe.weight", &[GPT2_POSITIONS, e], 0.0, 0.5);
    for l in 0..GPT2_LAYERS {
        let p = format!("transformer.h.{l}");
        w.norm(&format!("{p}.ln_1"), e);
        // Conv1D weights are [in, out].
        w.linear(&format!("{p}.attn.c_attn"), &[e, 3 * e], e, 3 * e);
        w.linear(&format!("{p}.attn.c_proj"), &[e, e], e, e);
        w.norm(&format!("{p}.ln_2"), e);
        w.linear(&format!("{p}.mlp.c_fc"), &[e, f], e, f);
        w.linear(&format!("{p}.mlp.c_proj"), &[f, e], f, e);
    }
    w.norm("transformer.ln_f", e);
    let config = serde_json::json!({
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": GPT2_VOCAB,
        "n_embd": e,
        "n_layer": GPT2_LAYERS,
        "n_head": GPT2_HEADS,
        "n_positions": GPT2_POSITIONS,
        "n_inner": null,
        "layer_norm_epsilon": 1e-5,
        "activation_function": "gelu_new",
    });
    w.finish(dir, &config)
}

/// Writes the tiny LLaMA into `dir`.
pub fn write_tiny_llama(dir: &Path, seed: u64) -> Result<(), ModelError> {
    let (h, f) = (LLAMA_HIDDEN, LLAMA_FFN);
    let kv = LLAMA_KV_HEADS * (h / LLAMA_HEADS);
    let mut w = Writer::new(seed);
    w.add("model.embed_tokens.weight", &[LLAMA_VOCAB, h], 0.0, 1.0);
    let s = |fan_in: usize| 1.5 / (fan_in as f32).sqrt();
    for l in 0..LLAMA_LAYERS {
        let p = format!("model.layers.{l}");
        w.add(&format!("{p}.input_layernorm.weight"), &[h], 1.0, 0.2);
        w.add(&format!("{p}.self_attn.q_proj.weight"), &[h, h], 0.0, s(h));
        w.add(&format!("{p}.self_attn.k_proj.weight"), &[kv, h], 0.0, s(h));
        w.add(&format!("{p}.self_attn.v_proj.weight"), &[kv, h], 0.0, s(h));
        w.add(&format!("{p}.self_attn.o_proj.weight"), &[h, h], 0.0, s(h));
        w.add(
            &format!("{p}.post_attention_layernorm.weight"),
            &[h],
            1.0,
            0.2,
        );
        w.add(&format!("{p}.mlp.gate_proj.weight"), &[f, h], 0.0, s(h));
        w.add(&format!("{p}.mlp.up_proj.weight"), &[f, h], 0.0, s(h));
        w.add(&format!("{p}.mlp.down_proj.weight"), &[h, f], 0.0, s(f));
    }
    w.add("model.norm.weight", &[h], 1.0, 0.2);
    w.add("lm_head.weight", &[LLAMA_VOCAB, h], 0.0, s(h));
    let config = serde_json::json!({
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": LLAMA_VOCAB,
        "hidden_size": h,
        "num_hidden_layers": LLAMA_LAYERS,
        "num_attention_heads": LLAMA_HEADS,
        "num_key_value_heads": LLAMA_KV_HEADS,
        "intermediate_size": f,
        "max_position_embeddings": LLAMA_POSITIONS,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "rope_scaling": null,
        "tie_word_embeddings": false,
        "hidden_act": "silu",
    });
    w.finish(dir, &config)
}

/// Writes the tiny ViT (with classifier head) into `dir`.
pub fn write_tiny_vit(dir: &Path, seed: u64) -> Result<(), ModelError> {
    let (h, f) = (VIT_HIDDEN, VIT_FFN);
    let patches = (VIT_IMAGE / VIT_PATCH).pow(2);
    let pd = VIT_CHANNELS * VIT_PATCH * VIT_PATCH;
    let mut w = Writer::new(seed);
    w.add("vit.embeddings.cls_token", &[1, 1, h], 0.0, 0.5);
    w.add(
        "vit.embeddings.position_embeddings",
        &[1, patches + 1, h],
        0.0,
        0.5,
    );
    w.linear(
        "vit.embeddings.patch_embeddings.projection",
        &[h, VIT_CHANNELS, VIT_PATCH, VIT_PATCH],
        pd,
        h,
    );
    for l in 0..VIT_LAYERS {
        let p = format!("vit.encoder.layer.{l}");
        w.norm(&format!("{p}.layernorm_before"), h);
        for m in ["query", "key", "value"] {
            w.linear(&format!("{p}.attention.attention.{m}"), &[h, h], h, h);
        }
        w.linear(&format!("{p}.attention.output.dense"), &[h, h], h, h);
        w.norm(&format!("{p}.layernorm_after"), h);
        w.linear(&format!("{p}.intermediate.dense"), &[f, h], h, f);
        w.linear(&format!("{p}.output.dense"), &[h, f], f, h);
    }
    w.norm("vit.layernorm", h);
    w.linear("classifier", &[VIT_LABELS, h], h, VIT_LABELS);
    let config = serde_json::json!({
        "architectures": ["ViTForImageClassification"],
        "model_type": "vit",
        "hidden_size": h,
        "num_hidden_layers": VIT_LAYERS,
        "num_attention_heads": VIT_HEADS,
        "intermediate_size": f,
        "image_size": VIT_IMAGE,
        "patch_size": VIT_PATCH,
        "num_channels": VIT_CHANNELS,
        "layer_norm_eps": 1e-12,
        "hidden_act": "gelu",
        "qkv_bias": true,
        "id2label": {"0": "cat", "1": "dog", "2": "bird"},
    });
    w.finish(dir, &config)
}

/// A deterministic pseudo-random image `[channels, size, size]` with values in `[-1, 1)` (the
/// range of pixels normalised with mean 0.5 and std 0.5), for tests and benchmarks.
pub fn tiny_image(channels: usize, size: usize, seed: u64) -> Vec<f32> {
    let mut w = Writer::new(seed ^ 0x1a6e);
    (0..channels * size * size).map(|_| w.unit()).collect()
}
