//! Plaintext LLaMA decoder (Touvron et al.; HF `LlamaForCausalLM`), the reference for secure
//! LLaMA inference.
//!
//! Pre-norm blocks with RMSNorm: `x += W_o Attn(RoPE(W_q n), RoPE(W_k n), W_v n)` with
//! `n = RMSNorm(x)` and grouped-query attention, then `x += W_down (silu(W_gate n) * W_up n)`.
//! Rotary embeddings use the HF "rotate half" layout (dimension `i` paired with `i + dh/2`,
//! frequency `theta^(-2i/dh)`). Projections carry no bias. The LM head is `lm_head.weight`, or
//! the token embedding when `tie_word_embeddings` is set. Greedy generation keeps a KV cache.

use crate::config::LlamaConfig;
use crate::gpt2::KvCache;
use crate::ops::{activate, add_assign, argmax, attention, linear, AttnShape};
use crate::weights::Weights;
use crate::ModelError;

#[derive(Debug, Clone)]
struct Layer {
    attn_norm: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    o: Vec<f32>,
    mlp_norm: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    down: Vec<f32>,
}

/// LLaMA with its weights in memory (f32).
#[derive(Debug, Clone)]
pub struct Llama {
    pub config: LlamaConfig,
    embed: Vec<f32>,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    /// `None` when tied to `embed`.
    lm_head: Option<Vec<f32>>,
}

/// `x / sqrt(mean(x^2) + eps) * w`, row-wise, statistics in f64.
pub fn rms_norm(x: &mut [f32], d: usize, w: &[f32], eps: f64) {
    for row in x.chunks_mut(d) {
        let ms = row.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / d as f64;
        let inv = 1.0 / (ms + eps).sqrt();
        for (v, &g) in row.iter_mut().zip(w) {
            *v = (*v as f64 * inv) as f32 * g;
        }
    }
}

/// Rotates each head of `x` (`[n, heads*dh]`, rows at positions `start..start+n`) in place.
fn rope(x: &mut [f32], start: usize, heads: usize, dh: usize, theta: f64) {
    let half = dh / 2;
    for (i, row) in x.chunks_mut(heads * dh).enumerate() {
        let pos = (start + i) as f64;
        for head in row.chunks_mut(dh) {
            for t in 0..half {
                let freq = theta.powf(-2.0 * t as f64 / dh as f64);
                let (sin, cos) = (pos * freq).sin_cos();
                let (a, b) = (head[t] as f64, head[t + half] as f64);
                head[t] = (a * cos - b * sin) as f32;
                head[t + half] = (b * cos + a * sin) as f32;
            }
        }
    }
}

impl Llama {
    /// Loads the weights named as in HF `LlamaForCausalLM` (base model under `model.`).
    pub fn load(config: &LlamaConfig, w: &Weights) -> Result<Self, ModelError> {
        let c = config;
        if let Some(kind) = &c.rope_scaling {
            return Err(ModelError::Unsupported(format!(
                "plaintext llama with rope_scaling \"{kind}\" is not implemented yet"
            )));
        }
        if c.attention_bias {
            return Err(ModelError::Unsupported(
                "plaintext llama with attention_bias is not implemented yet".into(),
            ));
        }
        let (h, f) = (c.hidden_size, c.intermediate_size);
        let dh = h / c.num_attention_heads;
        if dh % 2 == 1 {
            return Err(ModelError::Unsupported(format!(
                "RoPE needs an even head dimension, got {dh}"
            )));
        }
        let kv = c.num_key_value_heads * dh;
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for l in 0..c.num_hidden_layers {
            let p = format!("layers.{l}");
            let t = |name: &str, shape: &[usize]| w.tensor(&format!("{p}.{name}.weight"), shape);
            layers.push(Layer {
                attn_norm: t("input_layernorm", &[h])?,
                q: t("self_attn.q_proj", &[h, h])?,
                k: t("self_attn.k_proj", &[kv, h])?,
                v: t("self_attn.v_proj", &[kv, h])?,
                o: t("self_attn.o_proj", &[h, h])?,
                mlp_norm: t("post_attention_layernorm", &[h])?,
                gate: t("mlp.gate_proj", &[f, h])?,
                up: t("mlp.up_proj", &[f, h])?,
                down: t("mlp.down_proj", &[h, f])?,
            });
        }
        let lm_head = if c.tie_word_embeddings && !w.contains("lm_head.weight") {
            None
        } else {
            Some(w.tensor("lm_head.weight", &[c.vocab_size, h])?)
        };
        Ok(Llama {
            config: c.clone(),
            embed: w.tensor("embed_tokens.weight", &[c.vocab_size, h])?,
            layers,
            norm: w.tensor("norm.weight", &[h])?,
            lm_head,
        })
    }

    /// Runs `ids` after the positions in `cache`, appending to it; returns the final-norm
    /// hidden states of the new positions, `[ids.len(), hidden]`.
    pub fn forward_step(&self, ids: &[u32], cache: &mut KvCache) -> Result<Vec<f32>, ModelError> {
        let c = &self.config;
        let (n, h, f) = (ids.len(), c.hidden_size, c.intermediate_size);
        let (heads, kv_heads) = (c.num_attention_heads, c.num_key_value_heads);
        let dh = h / heads;
        if n == 0 {
            return Err(ModelError::Input("empty token sequence".into()));
        }
        let start = cache.len();
        if start + n > c.max_position_embeddings {
            return Err(ModelError::Input(format!(
                "{} positions exceed max_position_embeddings = {}",
                start + n,
                c.max_position_embeddings
            )));
        }
        if let Some(&t) = ids.iter().find(|&&t| t as usize >= c.vocab_size) {
            return Err(ModelError::Input(format!(
                "token id {t} >= vocab_size {}",
                c.vocab_size
            )));
        }
        cache.ensure_layers(c.num_hidden_layers);
        let mut x = Vec::with_capacity(n * h);
        for &t in ids {
            x.extend_from_slice(&self.embed[t as usize * h..(t as usize + 1) * h]);
        }
        let eps = c.rms_norm_eps;
        for (l, b) in self.layers.iter().enumerate() {
            let mut a = x.clone();
            rms_norm(&mut a, h, &b.attn_norm, eps);
            let mut q = linear(&a, n, &b.q, None, h, h);
            let mut k = linear(&a, n, &b.k, None, h, kv_heads * dh);
            let v = linear(&a, n, &b.v, None, h, kv_heads * dh);
            rope(&mut q, start, heads, dh, c.rope_theta);
            rope(&mut k, start, kv_heads, dh, c.rope_theta);
            let (ck, cv) = cache.layer_mut(l);
            ck.extend_from_slice(&k);
            cv.extend_from_slice(&v);
            let shape = AttnShape {
                n,
                m: start + n,
                heads,
                kv_heads,
                dh,
            };
            let ctx = attention(&q, ck, cv, shape, None, true);
            add_assign(&mut x, &linear(&ctx, n, &b.o, None, h, h));
            let mut a = x.clone();
            rms_norm(&mut a, h, &b.mlp_norm, eps);
            let mut g = linear(&a, n, &b.gate, None, h, f);
            activate(&mut g, c.hidden_act);
            let u = linear(&a, n, &b.up, None, h, f);
            for (gi, ui) in g.iter_mut().zip(&u) {
                *gi *= ui;
            }
            add_assign(&mut x, &linear(&g, n, &b.down, None, f, h));
        }
        cache.advance(n);
        rms_norm(&mut x, h, &self.norm, eps);
        Ok(x)
    }

    /// Logits `[vocab]` of a hidden row.
    pub fn logits(&self, hidden_row: &[f32]) -> Vec<f32> {
        let head = self.lm_head.as_deref().unwrap_or(&self.embed);
        linear(
            hidden_row,
            1,
            head,
            None,
            self.config.hidden_size,
            self.config.vocab_size,
        )
    }

    /// Logits of the token following `ids` (no cache kept).
    pub fn next_token_logits(&self, ids: &[u32]) -> Result<Vec<f32>, ModelError> {
        let mut cache = KvCache::default();
        let x = self.forward_step(ids, &mut cache)?;
        Ok(self.logits(&x[x.len() - self.config.hidden_size..]))
    }

    /// Greedy generation of `n_new` tokens after `ids`; returns only the new tokens.
    pub fn generate(&self, ids: &[u32], n_new: usize) -> Result<Vec<u32>, ModelError> {
        let h = self.config.hidden_size;
        let mut cache = KvCache::default();
        let mut out = Vec::with_capacity(n_new);
        if n_new == 0 {
            return Ok(out);
        }
        let mut x = self.forward_step(ids, &mut cache)?;
        loop {
            let next = argmax(&self.logits(&x[x.len() - h..])) as u32;
            out.push(next);
            if out.len() == n_new {
                return Ok(out);
            }
            x = self.forward_step(&[next], &mut cache)?;
        }
    }
}
