//! Plaintext GPT-2 (Radford et al.; HF `GPT2LMHeadModel`), the reference for secure generation.
//!
//! Pre-LN blocks: `x += Attn(LN1(x))` (causal), `x += W2 gelu_new(W1 LN2(x))`; learned absolute
//! positions; a final LayerNorm; the LM head is tied to the token embedding (`logits = h wte^T`).
//! Generation is greedy and keeps a key/value cache, so each new token costs one single-row
//! pass instead of re-running the prefix.

use crate::block::{
    run_blocks, BlockConfig, BlockNames, FfnKind, KvCache, Layout, NormKind, Placement, Rows,
};
use crate::arch::{generate, last_logits, ArchOps, ArchTensors, Decl, DenseDecl, NormDecl, TableDecl};
use crate::block::BlockOps;
use crate::config::Gpt2Config;
use crate::reference::{BlockWeights, F32Block, Observer};
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

/// The tensors of GPT-2's embeddings and head (HF `GPT2Model`; the LM head is tied to `wte`).
#[derive(Clone, Debug)]
pub struct Tensors {
    pub wte: DenseDecl,
    pub wpe: TableDecl,
    pub ln_f: NormDecl,
}

impl Tensors {
    pub fn new(c: &Gpt2Config) -> Self {
        let e = c.n_embd;
        Tensors {
            wte: DenseDecl::table("wte", c.vocab_size, e),
            wpe: TableDecl::new("wpe.weight", &[c.n_positions, e]),
            ln_f: NormDecl { name: "ln_f".into(), kind: NormKind::LayerNorm, dim: e },
        }
    }
}

impl ArchTensors for Tensors {
    fn embeddings(&self) -> Vec<Decl> {
        vec![Decl::Dense(self.wte.clone()), Decl::Table(self.wpe.clone())]
    }
    fn heads(&self) -> Vec<Decl> {
        vec![Decl::Norm(self.ln_f.clone())]
    }
}

/// GPT-2's embeddings of `n` new tokens at positions `start ..`: `wte` rows of the client's
/// ids plus the server's `wpe` rows at the public positions.
pub fn embeddings<O: ArchOps>(
    o: &mut O,
    t: &Tensors,
    ids: Option<&[u32]>,
    n: usize,
    start: usize,
) -> Result<O::Val, O::Error> {
    o.step("embed", |o| {
        let words = o.lookup(&t.wte, ids, n)?;
        let positions: Vec<usize> = (start..start + n).collect();
        let pos = o.server_rows(&[(&t.wpe, &positions)])?;
        o.add(&words, &pos)
    })
}

/// GPT-2 with its weights in memory (f32).
#[derive(Debug, Clone)]
pub struct Gpt2 {
    pub config: Gpt2Config,
    tensors: Tensors,
    weights: BlockWeights,
}

impl Gpt2 {
    /// Loads the weights named as in HF `GPT2Model` (optionally under `transformer.`).
    pub fn load(config: &Gpt2Config, w: &Weights) -> Result<Self, ModelError> {
        let c = config;
        let mut weights = BlockWeights::load(w, &block_config(c), block_names, c.n_layer)?;
        let tensors = Tensors::new(c);
        weights.load_decls(w, &tensors.all())?;
        Ok(Gpt2 { config: c.clone(), tensors, weights })
    }

    /// An empty key/value cache for this model.
    pub fn new_cache(&self) -> KvCache<Vec<f32>> {
        KvCache::new(self.config.n_layer)
    }

    /// Runs `ids` as the positions following those in `cache` and appends them to it.
    /// Returns the final-LayerNorm hidden states of the new positions, `[ids.len(), n_embd]`.
    pub fn forward_step(&self, ids: &[u32], cache: &mut KvCache<Vec<f32>>) -> Result<Vec<f32>, ModelError> {
        self.forward_observed(ids, cache, None)
    }

    /// [`Gpt2::forward_step`], telling `observe` what [`F32Block::observe`] sees.
    pub fn forward_observed(
        &self,
        ids: &[u32],
        cache: &mut KvCache<Vec<f32>>,
        observe: Option<Observer<'_>>,
    ) -> Result<Vec<f32>, ModelError> {
        let c = &self.config;
        let n = ids.len();
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
        let mut ops = F32Block { observe, ..F32Block::new(&self.weights) };
        let x = embeddings(&mut ops, &self.tensors, Some(ids), n, start)?;
        let rows = Rows::new(n);
        let cfg = block_config(c);
        let x = run_blocks(&mut ops, &cfg, block_names, c.n_layer, x, rows, Some(cache), None)?;
        ops.norm(&cfg, &self.tensors.ln_f.name, &x, n)
    }

    /// Logits `[vocab]` of a hidden row (tied LM head).
    pub fn logits(&self, hidden_row: &[f32]) -> Result<Vec<f32>, ModelError> {
        last_logits(&mut F32Block::new(&self.weights), &self.tensors.wte, &hidden_row.to_vec(), 1)
    }

    /// Logits of the token following `ids` (no cache kept).
    pub fn next_token_logits(&self, ids: &[u32]) -> Result<Vec<f32>, ModelError> {
        let mut cache = self.new_cache();
        let h = self.forward_step(ids, &mut cache)?;
        self.logits(&h[h.len() - self.config.n_embd..])
    }

    /// Greedy generation of `n_new` tokens after `ids`; returns only the new tokens.
    pub fn generate(&self, ids: &[u32], n_new: usize) -> Result<Vec<u32>, ModelError> {
        let mut cache = self.new_cache();
        let mut ops = F32Block::new(&self.weights);
        let tokens = generate(&mut ops, Some(ids), ids.len(), n_new, self.config.vocab_size, &mut cache, |o, ids, n, cache| {
            let h = self.forward_step(ids.unwrap_or_default(), cache)?;
            last_logits(o, &self.tensors.wte, &h, n)
        })?;
        tokens.ok_or_else(|| ModelError::Input("the tokens were not opened".into()))
    }
}
