//! A LLaMA-architecture GGUF file (`general.architecture = "llama"`) as a Hugging Face
//! `LlamaForCausalLM` checkpoint: its [`LlamaConfig`] from the metadata, and its tensors under
//! the HF names nectar's LLaMA asks for, dequantised to `f32` ([`WeightSource`]), so the
//! plaintext LLaMA and the secure engines read a GGUF file unchanged.
//!
//! Names (llama.cpp's `convert_hf_to_gguf.py` tensor map):
//!
//! | HF (`model.` prefix optional) | GGUF |
//! |---|---|
//! | `embed_tokens` | `token_embd` |
//! | `layers.N.self_attn.{q,k,v,o}_proj` | `blk.N.attn_{q,k,v,output}` |
//! | `layers.N.mlp.{gate,up,down}_proj` | `blk.N.ffn_{gate,up,down}` |
//! | `layers.N.input_layernorm`, `post_attention_layernorm` | `blk.N.attn_norm`, `ffn_norm` |
//! | `norm`, `lm_head` | `output_norm`, `output` (absent when tied to the embedding) |
//!
//! The converter permutes the rows of `q_proj` and `k_proj` inside each head so that ggml's
//! rotary embedding, which rotates adjacent pairs `(2i, 2i+1)`, computes what HF's "rotate half"
//! computes on pairs `(i, i + dh/2)`: HF row `j·dh/2 + i` (`j` ∈ {0, 1}) is stored as row
//! `2i + j`. [`unpermute_rows`] puts them back, per head (`head_count` heads for `q`,
//! `head_count_kv` for `k`).

use std::collections::BTreeMap;

use crate::config::{Activation, LlamaConfig};
use crate::gguf::file::{GgufFile, Value};
use crate::weights::WeightSource;
use crate::ModelError;

/// The GGUF name of HF tensor `name` (`None` if it has no GGUF counterpart).
pub fn gguf_name(name: &str) -> Option<String> {
    let name = name.strip_prefix("model.").unwrap_or(name);
    let (module, suffix) = name.rsplit_once('.')?;
    if !matches!(suffix, "weight" | "bias") {
        return None;
    }
    let base = match module {
        "embed_tokens" => "token_embd".to_string(),
        "norm" => "output_norm".to_string(),
        "lm_head" => "output".to_string(),
        m => {
            let rest = m.strip_prefix("layers.")?;
            let (n, part) = rest.split_once('.')?;
            let n: usize = n.parse().ok()?;
            let g = match part {
                "self_attn.q_proj" => "attn_q",
                "self_attn.k_proj" => "attn_k",
                "self_attn.v_proj" => "attn_v",
                "self_attn.o_proj" => "attn_output",
                "mlp.gate_proj" => "ffn_gate",
                "mlp.up_proj" => "ffn_up",
                "mlp.down_proj" => "ffn_down",
                "input_layernorm" => "attn_norm",
                "post_attention_layernorm" => "ffn_norm",
                _ => return None,
            };
            format!("blk.{n}.{g}")
        }
    };
    Some(format!("{base}.{suffix}"))
}

/// Undoes the converter's rotary row permutation of a `[heads·dh, cols]` matrix (row-major):
/// within each head, stored row `2i + j` goes back to row `j·dh/2 + i`.
pub fn unpermute_rows(w: &[f32], heads: usize, cols: usize) -> Vec<f32> {
    let rows = w.len() / cols.max(1);
    let dh = rows / heads.max(1);
    let half = dh / 2;
    let mut out = vec![0f32; w.len()];
    for h in 0..heads {
        for i in 0..half {
            for j in 0..2 {
                let src = (h * dh + 2 * i + j) * cols;
                let dst = (h * dh + j * half + i) * cols;
                out[dst..dst + cols].copy_from_slice(&w[src..src + cols]);
            }
        }
    }
    out
}

/// A LLaMA GGUF file read as an HF checkpoint.
#[derive(Debug)]
pub struct GgufLlama {
    file: GgufFile,
    config: LlamaConfig,
}

impl GgufLlama {
    /// Checks that `file` is a LLaMA and reads its config (see [`llama_config`]).
    pub fn new(file: GgufFile) -> Result<Self, ModelError> {
        let config = llama_config(&file)?;
        Ok(GgufLlama { file, config })
    }

    pub fn file(&self) -> &GgufFile {
        &self.file
    }

    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// Tensor counts per GGML type, most frequent first (`Q4_1 ×210, F32 ×61, Q8_0 ×1`).
    pub fn quantization(&self) -> String {
        let mut by: BTreeMap<&str, usize> = BTreeMap::new();
        for t in self.file.tensors() {
            *by.entry(t.ty.name()).or_default() += 1;
        }
        let mut v: Vec<(&str, usize)> = by.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v.iter().map(|(t, n)| format!("{t} ×{n}")).collect::<Vec<_>>().join(", ")
    }

    /// (parameters, the type holding most of them).
    pub fn param_stats(&self) -> (usize, String) {
        let mut by: BTreeMap<&str, usize> = BTreeMap::new();
        for t in self.file.tensors() {
            *by.entry(t.ty.name()).or_default() += t.elements();
        }
        let total = by.values().sum();
        let main = by.iter().max_by_key(|(_, n)| **n).map(|(t, _)| t.to_string()).unwrap_or_else(|| "none".into());
        (total, main)
    }
}

/// The [`LlamaConfig`] of a LLaMA GGUF file: dims and heads from `llama.*`, the vocabulary size
/// from `tokenizer.ggml.tokens` (else `llama.vocab_size`, else the embedding's rows), tied output
/// when the file has no `output.weight`. Errors name the file and the key.
pub fn llama_config(f: &GgufFile) -> Result<LlamaConfig, ModelError> {
    let err = |m: String| ModelError::config(f.path(), m);
    let arch = f.get("general.architecture").and_then(Value::as_str).unwrap_or("(none)");
    if arch != "llama" {
        return Err(ModelError::Unsupported(format!(
            "{}: general.architecture is {arch:?}; only \"llama\" GGUF files are supported",
            f.path().display()
        )));
    }
    let int = |k: &str| -> Result<Option<usize>, ModelError> {
        match f.get(&format!("llama.{k}")) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(x) if x > 0 && x <= u32::MAX as u64 => Ok(Some(x as usize)),
                _ => Err(err(format!("llama.{k} must be a positive integer, got {}", v.describe()))),
            },
        }
    };
    let need = |k: &str| int(k)?.ok_or_else(|| err(format!("missing metadata key llama.{k}")));
    let float = |k: &str| -> Result<Option<f64>, ModelError> {
        match f.get(&format!("llama.{k}")) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && x > 0.0 => Ok(Some(x)),
                _ => Err(err(format!("llama.{k} must be a positive number, got {}", v.describe()))),
            },
        }
    };
    let hidden = need("embedding_length")?;
    let heads = need("attention.head_count")?;
    let kv_heads = int("attention.head_count_kv")?.unwrap_or(heads);
    if hidden % heads != 0 || heads % kv_heads != 0 {
        return Err(err(format!(
            "llama.embedding_length = {hidden}, attention.head_count = {heads}, head_count_kv = {kv_heads}: heads must divide both"
        )));
    }
    if let Some(rd) = int("rope.dimension_count")? {
        if rd != hidden / heads {
            return Err(ModelError::Unsupported(format!(
                "{}: partial rotary embeddings (llama.rope.dimension_count = {rd}, head dim {})",
                f.path().display(),
                hidden / heads
            )));
        }
    }
    let vocab = match f.get("tokenizer.ggml.tokens").and_then(Value::as_array) {
        Some(a) => a.len(),
        None => match int("vocab_size")? {
            Some(v) => v,
            None => f
                .tensor_info("token_embd.weight")
                .and_then(|t| t.shape().first().copied())
                .ok_or_else(|| err("no vocabulary (tokenizer.ggml.tokens) and no token_embd.weight".into()))?,
        },
    };
    let rope_scaling = f
        .get("llama.rope.scaling.type")
        .and_then(Value::as_str)
        .filter(|t| *t != "none")
        .map(str::to_string);
    Ok(LlamaConfig {
        vocab_size: vocab,
        hidden_size: hidden,
        num_hidden_layers: need("block_count")?,
        num_attention_heads: heads,
        num_key_value_heads: kv_heads,
        intermediate_size: need("feed_forward_length")?,
        max_position_embeddings: need("context_length")?,
        rms_norm_eps: float("attention.layer_norm_rms_epsilon")?.unwrap_or(1e-5),
        rope_theta: float("rope.freq_base")?.unwrap_or(10000.0),
        tie_word_embeddings: f.tensor_info("output.weight").is_none(),
        hidden_act: Activation::Silu,
        rope_scaling,
        attention_bias: f.tensor_info("blk.0.attn_q.bias").is_some(),
        scale_shifts: Default::default(),
    })
}

impl GgufLlama {
    /// Row-major shape of HF tensor `name`, with its GGUF name.
    fn resolve(&self, name: &str) -> Option<(String, Vec<usize>)> {
        let g = gguf_name(name)?;
        let shape = self.file.tensor_info(&g)?.shape();
        Some((g, shape))
    }
}

impl WeightSource for GgufLlama {
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let (g, got) = self
            .resolve(name)
            .ok_or_else(|| ModelError::weights(self.file.path(), format!("missing tensor \"{name}\"")))?;
        if got != shape {
            return Err(ModelError::weights(
                self.file.path(),
                format!("tensor \"{g}\" (\"{name}\") has shape {got:?}, expected {shape:?}"),
            ));
        }
        let w = self.file.read_f32(&g)?;
        let heads = if g.ends_with(".attn_q.weight") {
            self.config.num_attention_heads
        } else if g.ends_with(".attn_k.weight") {
            self.config.num_key_value_heads
        } else {
            return Ok(w);
        };
        let cols = shape.get(1).copied().unwrap_or(1);
        if shape.len() != 2 || !shape[0].is_multiple_of(2 * heads) {
            return Err(ModelError::weights(
                self.file.path(),
                format!("tensor \"{g}\" of shape {shape:?} does not split into {heads} heads of even size"),
            ));
        }
        Ok(unpermute_rows(&w, heads, cols))
    }

    fn contains(&self, name: &str) -> bool {
        self.resolve(name).is_some()
    }

    fn shape(&self, name: &str) -> Option<Vec<usize>> {
        self.resolve(name).map(|(_, s)| s)
    }

    fn check(&self, name: &str, shape: &[usize]) -> Result<(), ModelError> {
        match self.resolve(name) {
            None => Err(ModelError::weights(self.file.path(), format!("missing tensor \"{name}\""))),
            Some((g, got)) if got != shape => Err(ModelError::weights(
                self.file.path(),
                format!("tensor \"{g}\" (\"{name}\") has shape {got:?}, expected {shape:?}"),
            )),
            Some(_) => Ok(()),
        }
    }
}
