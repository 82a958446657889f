//! Plaintext LLaMA decoder (Touvron et al.; HF `LlamaForCausalLM`), the reference for secure
//! LLaMA inference.
//!
//! Pre-norm blocks with RMSNorm: `x += W_o Attn(RoPE(W_q n), RoPE(W_k n), W_v n)` with
//! `n = RMSNorm(x)` and grouped-query attention, then `x += W_down (silu(W_gate n) * W_up n)`.
//! Rotary embeddings use the HF "rotate half" layout (dimension `i` paired with `i + dh/2`,
//! frequency `theta^(-2i/dh)`). Projections carry no bias. The LM head is `lm_head.weight`, or
//! the token embedding when `tie_word_embeddings` is set. Greedy generation keeps a KV cache.

use crate::block::{
    run_blocks, BlockConfig, BlockNames, FfnKind, KvCache, Layout, NormKind, Placement, Rows,
};
use crate::config::LlamaConfig;
use crate::ops::{argmax, linear, rms_norm};
use crate::reference::{BlockWeights, F32Block};
use crate::weights::Weights;
use crate::ModelError;

/// The block of a LLaMA config: pre-norm with RMSNorm, causal, rotary positions, grouped
/// key/value heads, gated FFN, no biases, `nn.Linear` layout.
pub fn block_config(c: &LlamaConfig) -> BlockConfig {
    BlockConfig {
        hidden: c.hidden_size,
        heads: c.num_attention_heads,
        kv_heads: c.num_key_value_heads,
        intermediate: c.intermediate_size,
        norm: NormKind::RmsNorm,
        eps: c.rms_norm_eps,
        placement: Placement::Pre,
        causal: true,
        rope_theta: Some(c.rope_theta),
        ffn: FfnKind::Gated,
        activation: c.hidden_act,
        bias: false,
        layout: Layout::OutIn,
    }
}

/// The checkpoint names of LLaMA block `l` (HF `LlamaModel`).
pub fn block_names(l: usize) -> BlockNames {
    let p = format!("layers.{l}");
    BlockNames {
        norm1: format!("{p}.input_layernorm"),
        norm2: format!("{p}.post_attention_layernorm"),
        qkv: ["q_proj", "k_proj", "v_proj"]
            .iter()
            .map(|m| format!("{p}.self_attn.{m}"))
            .collect(),
        o: format!("{p}.self_attn.o_proj"),
        ffn_in: vec![format!("{p}.mlp.gate_proj"), format!("{p}.mlp.up_proj")],
        ffn_out: format!("{p}.mlp.down_proj"),
    }
}

/// LLaMA with its weights in memory (f32).
#[derive(Debug, Clone)]
pub struct Llama {
    pub config: LlamaConfig,
    embed: Vec<f32>,
    blocks: BlockWeights,
    norm: Vec<f32>,
    /// `None` when tied to `embed`.
    lm_head: Option<Vec<f32>>,
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
        let h = c.hidden_size;
        let dh = h / c.num_attention_heads;
        if dh % 2 == 1 {
            return Err(ModelError::Unsupported(format!(
                "RoPE needs an even head dimension, got {dh}"
            )));
        }
        let blocks = BlockWeights::load(w, &block_config(c), block_names, c.num_hidden_layers)?;
        let lm_head = if c.tie_word_embeddings && !w.contains("lm_head.weight") {
            None
        } else {
            Some(w.tensor("lm_head.weight", &[c.vocab_size, h])?)
        };
        Ok(Llama {
            config: c.clone(),
            embed: w.tensor("embed_tokens.weight", &[c.vocab_size, h])?,
            blocks,
            norm: w.tensor("norm.weight", &[h])?,
            lm_head,
        })
    }

    /// An empty key/value cache for this model.
    pub fn new_cache(&self) -> KvCache<Vec<f32>> {
        KvCache::new(self.config.num_hidden_layers)
    }

    /// Runs `ids` after the positions in `cache`, appending to it; returns the final-norm
    /// hidden states of the new positions, `[ids.len(), hidden]`.
    pub fn forward_step(&self, ids: &[u32], cache: &mut KvCache<Vec<f32>>) -> Result<Vec<f32>, ModelError> {
        let c = &self.config;
        let (n, h) = (ids.len(), c.hidden_size);
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
        let mut x = Vec::with_capacity(n * h);
        for &t in ids {
            x.extend_from_slice(&self.embed[t as usize * h..(t as usize + 1) * h]);
        }
        let mut ops = F32Block {
            weights: &self.blocks,
        };
        let rows = Rows { n, key_mask: None };
        let cfg = block_config(c);
        let layers = c.num_hidden_layers;
        let mut x = run_blocks(&mut ops, &cfg, block_names, layers, x, rows, Some(cache), None)?;
        rms_norm(&mut x, h, &self.norm, c.rms_norm_eps);
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
        let mut cache = self.new_cache();
        let x = self.forward_step(ids, &mut cache)?;
        Ok(self.logits(&x[x.len() - self.config.hidden_size..]))
    }

    /// Greedy generation of `n_new` tokens after `ids`; returns only the new tokens.
    pub fn generate(&self, ids: &[u32], n_new: usize) -> Result<Vec<u32>, ModelError> {
        let h = self.config.hidden_size;
        let mut cache = self.new_cache();
        let mut out = Vec::with_capacity(n_new.min(1024));
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
