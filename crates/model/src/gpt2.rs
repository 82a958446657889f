//! Plaintext GPT-2 (Radford et al.; HF `GPT2LMHeadModel`), the reference for secure generation.
//!
//! Pre-LN blocks: `x += Attn(LN1(x))` (causal), `x += W2 gelu_new(W1 LN2(x))`; learned absolute
//! positions; a final LayerNorm; the LM head is tied to the token embedding (`logits = h wte^T`).
//! Generation is greedy and keeps a key/value cache, so each new token costs one single-row
//! pass instead of re-running the prefix.

use crate::bert::{Dense, Norm};
use crate::config::Gpt2Config;
use crate::ops::{activate, add_assign, argmax, attention, layer_norm, linear, AttnShape};
use crate::weights::Weights;
use crate::ModelError;

#[derive(Debug, Clone)]
struct Block {
    ln1: Norm,
    qkv: Dense,
    proj: Dense,
    ln2: Norm,
    fc: Dense,
    fc_proj: Dense,
}

/// GPT-2 with its weights in memory (f32).
#[derive(Debug, Clone)]
pub struct Gpt2 {
    pub config: Gpt2Config,
    wte: Vec<f32>,
    wpe: Vec<f32>,
    blocks: Vec<Block>,
    ln_f: Norm,
}

/// Keys and values of the positions processed so far, per layer (`[len, n_embd]` each).
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    k: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
    len: usize,
}

impl KvCache {
    /// Number of cached positions.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether nothing is cached yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub(crate) fn ensure_layers(&mut self, layers: usize) {
        if self.k.is_empty() {
            self.k = vec![Vec::new(); layers];
            self.v = vec![Vec::new(); layers];
        }
    }
    pub(crate) fn layer_mut(&mut self, l: usize) -> (&mut Vec<f32>, &mut Vec<f32>) {
        (&mut self.k[l], &mut self.v[l])
    }
    pub(crate) fn advance(&mut self, n: usize) {
        self.len += n;
    }
}

/// Loads an HF `Conv1D` (`weight [in, out]`) as a [`Dense`] (`[out, in]`).
fn conv1d(w: &Weights, name: &str, in_dim: usize, out_dim: usize) -> Result<Dense, ModelError> {
    let t = w.tensor(&format!("{name}.weight"), &[in_dim, out_dim])?;
    let mut wt = vec![0f32; in_dim * out_dim];
    for i in 0..in_dim {
        for o in 0..out_dim {
            wt[o * in_dim + i] = t[i * out_dim + o];
        }
    }
    Ok(Dense {
        w: wt,
        b: w.tensor(&format!("{name}.bias"), &[out_dim])?,
        in_dim,
        out_dim,
    })
}

impl Gpt2 {
    /// Loads the weights named as in HF `GPT2Model` (optionally under `transformer.`).
    pub fn load(config: &Gpt2Config, w: &Weights) -> Result<Self, ModelError> {
        let c = config;
        let (e, f) = (c.n_embd, c.n_inner);
        let mut blocks = Vec::with_capacity(c.n_layer);
        for l in 0..c.n_layer {
            let p = format!("h.{l}");
            blocks.push(Block {
                ln1: Norm::load(w, &format!("{p}.ln_1"), e)?,
                qkv: conv1d(w, &format!("{p}.attn.c_attn"), e, 3 * e)?,
                proj: conv1d(w, &format!("{p}.attn.c_proj"), e, e)?,
                ln2: Norm::load(w, &format!("{p}.ln_2"), e)?,
                fc: conv1d(w, &format!("{p}.mlp.c_fc"), e, f)?,
                fc_proj: conv1d(w, &format!("{p}.mlp.c_proj"), f, e)?,
            });
        }
        Ok(Gpt2 {
            config: c.clone(),
            wte: w.tensor("wte.weight", &[c.vocab_size, e])?,
            wpe: w.tensor("wpe.weight", &[c.n_positions, e])?,
            blocks,
            ln_f: Norm::load(w, "ln_f", e)?,
        })
    }

    /// Runs `ids` as the positions following those in `cache` and appends them to it.
    /// Returns the final-LayerNorm hidden states of the new positions, `[ids.len(), n_embd]`.
    pub fn forward_step(&self, ids: &[u32], cache: &mut KvCache) -> Result<Vec<f32>, ModelError> {
        let c = &self.config;
        let (n, e, heads) = (ids.len(), c.n_embd, c.n_head);
        if n == 0 {
            return Err(ModelError::Input("empty token sequence".into()));
        }
        let start = cache.len;
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
        cache.ensure_layers(c.n_layer);
        let mut x = vec![0f32; n * e];
        for (i, &t) in ids.iter().enumerate() {
            let (t, p) = (t as usize, start + i);
            for k in 0..e {
                x[i * e + k] = self.wte[t * e + k] + self.wpe[p * e + k];
            }
        }
        let eps = c.layer_norm_epsilon;
        for (l, b) in self.blocks.iter().enumerate() {
            let mut a = x.clone();
            layer_norm(&mut a, e, &b.ln1.g, &b.ln1.b, eps);
            let qkv = b.qkv.apply(&a, n);
            let mut q = Vec::with_capacity(n * e);
            for i in 0..n {
                let row = &qkv[i * 3 * e..(i + 1) * 3 * e];
                q.extend_from_slice(&row[..e]);
                cache.k[l].extend_from_slice(&row[e..2 * e]);
                cache.v[l].extend_from_slice(&row[2 * e..]);
            }
            let m = start + n;
            let ctx = attention(
                &q,
                &cache.k[l],
                &cache.v[l],
                AttnShape {
                    n,
                    m,
                    heads,
                    kv_heads: heads,
                    dh: e / heads,
                },
                None,
                true,
            );
            add_assign(&mut x, &b.proj.apply(&ctx, n));
            let mut a = x.clone();
            layer_norm(&mut a, e, &b.ln2.g, &b.ln2.b, eps);
            let mut f = b.fc.apply(&a, n);
            activate(&mut f, c.activation_function);
            add_assign(&mut x, &b.fc_proj.apply(&f, n));
        }
        cache.len += n;
        layer_norm(&mut x, e, &self.ln_f.g, &self.ln_f.b, eps);
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
        let mut cache = KvCache::default();
        let h = self.forward_step(ids, &mut cache)?;
        let e = self.config.n_embd;
        Ok(self.logits(&h[h.len() - e..]))
    }

    /// Greedy generation of `n_new` tokens after `ids`; returns only the new tokens.
    pub fn generate(&self, ids: &[u32], n_new: usize) -> Result<Vec<u32>, ModelError> {
        let e = self.config.n_embd;
        let mut cache = KvCache::default();
        let mut out = Vec::with_capacity(n_new);
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
