//! Plaintext GPT-2 (Radford et al.; HF `GPT2LMHeadModel`), the reference for secure generation.
//!
//! Pre-LN blocks: `x += Attn(LN1(x))` (causal), `x += W2 gelu_new(W1 LN2(x))`; learned absolute
//! positions; a final LayerNorm; the LM head is tied to the token embedding (`logits = h wte^T`).
//! Generation is greedy and keeps a key/value cache, so each new token costs one single-row
//! pass instead of re-running the prefix.

use crate::block::{
    run_blocks, BlockConfig, BlockNames, FfnKind, KvCache, Layout, NormKind, Placement, Rows,
};
use crate::config::Gpt2Config;
use crate::ops::{argmax, linear};
use crate::reference::{BlockWeights, F32Block, Norm};
use crate::weights::Weights;
use crate::ModelError;

/// The block of a GPT-2 config: pre-LN, causal, plain FFN, biases, `Conv1D` layout with a
/// fused `c_attn`.
pub fn block_config(c: &Gpt2Config) -> BlockConfig {
    BlockConfig {
        hidden: c.n_embd,
        heads: c.n_head,
        kv_heads: c.n_head,
        intermediate: c.n_inner,
        norm: NormKind::LayerNorm,
        eps: c.layer_norm_epsilon,
        placement: Placement::Pre,
        causal: true,
        rope_theta: None,
        ffn: FfnKind::Plain,
        activation: c.activation_function,
        bias: true,
        layout: Layout::InOut,
    }
}

/// The checkpoint names of GPT-2 block `l` (HF `GPT2Model`).
pub fn block_names(l: usize) -> BlockNames {
    let p = format!("h.{l}");
    BlockNames {
        norm1: format!("{p}.ln_1"),
        norm2: format!("{p}.ln_2"),
        qkv: vec![format!("{p}.attn.c_attn")],
        o: format!("{p}.attn.c_proj"),
        ffn_in: vec![format!("{p}.mlp.c_fc")],
        ffn_out: format!("{p}.mlp.c_proj"),
    }
}

/// GPT-2 with its weights in memory (f32).
#[derive(Debug, Clone)]
pub struct Gpt2 {
    pub config: Gpt2Config,
    wte: Vec<f32>,
    wpe: Vec<f32>,
    blocks: BlockWeights,
    ln_f: Norm,
}

impl Gpt2 {
    /// Loads the weights named as in HF `GPT2Model` (optionally under `transformer.`).
    pub fn load(config: &Gpt2Config, w: &Weights) -> Result<Self, ModelError> {
        let c = config;
        let e = c.n_embd;
        let blocks = BlockWeights::load(w, &block_config(c), block_names, c.n_layer)?;
        Ok(Gpt2 {
            config: c.clone(),
            wte: w.tensor("wte.weight", &[c.vocab_size, e])?,
            wpe: w.tensor("wpe.weight", &[c.n_positions, e])?,
            blocks,
            ln_f: Norm::load(w, "ln_f", e, NormKind::LayerNorm)?,
        })
    }

    /// An empty key/value cache for this model.
    pub fn new_cache(&self) -> KvCache<Vec<f32>> {
        KvCache::new(self.config.n_layer)
    }

    /// Runs `ids` as the positions following those in `cache` and appends them to it.
    /// Returns the final-LayerNorm hidden states of the new positions, `[ids.len(), n_embd]`.
    pub fn forward_step(&self, ids: &[u32], cache: &mut KvCache<Vec<f32>>) -> Result<Vec<f32>, ModelError> {
        let c = &self.config;
        let (n, e) = (ids.len(), c.n_embd);
        if n == 0 {
            return Err(ModelError::Input("empty token sequence".into()));
        }
        let start = cache.len();
        if start + n > c.n_positions {
            return Err(ModelError::Input(format!(
                "{} positions exceed n_positions = {}",
                start + n,
                c.n_positions
            )));
        }
        if let Some(&t) = ids.iter().find(|&&t| t as usize >= c.vocab_size) {
            return Err(ModelError::Input(format!(
                "token id {t} >= vocab_size {}",
                c.vocab_size
            )));
        }
        let mut x = vec![0f32; n * e];
        for (i, &t) in ids.iter().enumerate() {
            let (t, p) = (t as usize, start + i);
            for k in 0..e {
                x[i * e + k] = self.wte[t * e + k] + self.wpe[p * e + k];
            }
        }
        let mut ops = F32Block {
            weights: &self.blocks,
        };
        let rows = Rows { n, key_mask: None };
        let cfg = block_config(c);
        let mut x = run_blocks(&mut ops, &cfg, block_names, c.n_layer, x, rows, Some(cache), None)?;
        self.ln_f.apply(&mut x, c.layer_norm_epsilon);
        Ok(x)
    }

    /// Logits `[vocab]` of a hidden row (tied LM head).
    pub fn logits(&self, hidden_row: &[f32]) -> Vec<f32> {
        linear(
            hidden_row,
            1,
            &self.wte,
            None,
            self.config.n_embd,
            self.config.vocab_size,
        )
    }

    /// Logits of the token following `ids` (no cache kept).
    pub fn next_token_logits(&self, ids: &[u32]) -> Result<Vec<f32>, ModelError> {
        let mut cache = self.new_cache();
        let h = self.forward_step(ids, &mut cache)?;
        let e = self.config.n_embd;
        Ok(self.logits(&h[h.len() - e..]))
    }

    /// Greedy generation of `n_new` tokens after `ids`; returns only the new tokens.
    pub fn generate(&self, ids: &[u32], n_new: usize) -> Result<Vec<u32>, ModelError> {
        let e = self.config.n_embd;
        let mut cache = self.new_cache();
        let mut out = Vec::with_capacity(n_new.min(1024));
        if n_new == 0 {
            return Ok(out);
        }
        let mut h = self.forward_step(ids, &mut cache)?;
        loop {
            let next = argmax(&self.logits(&h[h.len() - e..])) as u32;
            out.push(next);
            if out.len() == n_new {
                return Ok(out);
            }
            h = self.forward_step(&[next], &mut cache)?;
        }
    }
}
