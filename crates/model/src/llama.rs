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
use crate::arch::{generate, last_logits, ArchOps, ArchTensors, Decl, DenseDecl, NormDecl};
use crate::block::BlockOps;
use crate::config::LlamaConfig;
use crate::reference::{BlockWeights, F32Block, Observer};
use crate::weights::WeightSource;
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

/// The tensors of LLaMA's embeddings and head (HF `LlamaForCausalLM`): `lm_head`, or the
/// token embedding when `tie_word_embeddings` is set and the checkpoint has no `lm_head`.
#[derive(Clone, Debug)]
pub struct Tensors {
    pub embed: DenseDecl,
    pub norm: NormDecl,
    /// `None`: tied to `embed`.
    pub lm_head: Option<DenseDecl>,
}

impl Tensors {
    /// The tensors of `c` (without weights, the client: tied as the config says).
    pub fn new(c: &LlamaConfig, w: Option<&dyn WeightSource>) -> Self {
        let (h, vocab) = (c.hidden_size, c.vocab_size);
        let tied = c.tie_word_embeddings && w.is_none_or(|w| !w.contains("lm_head.weight"));
        Tensors {
            embed: DenseDecl::table("embed_tokens", vocab, h),
            norm: NormDecl { name: "norm".into(), kind: NormKind::RmsNorm, dim: h },
            lm_head: (!tied).then(|| DenseDecl::table("lm_head", vocab, h)),
        }
    }

    /// The LM head's weight.
    pub fn head(&self) -> &DenseDecl {
        self.lm_head.as_ref().unwrap_or(&self.embed)
    }
}

impl ArchTensors for Tensors {
    fn embeddings(&self) -> Vec<Decl> {
        vec![Decl::Dense(self.embed.clone())]
    }
    fn heads(&self) -> Vec<Decl> {
        let mut v = vec![Decl::Norm(self.norm.clone())];
        v.extend(self.lm_head.iter().map(|d| Decl::Dense(d.clone())));
        v
    }
}

/// LLaMA's embeddings: the token rows of the client's ids (positions enter by RoPE in the
/// blocks).
pub fn embeddings<O: ArchOps>(o: &mut O, t: &Tensors, ids: Option<&[u32]>, n: usize) -> Result<O::Val, O::Error> {
    o.step("embed", |o| o.lookup(&t.embed, ids, n))
}

/// LLaMA with its weights in memory (f32).
#[derive(Debug, Clone)]
pub struct Llama {
    pub config: LlamaConfig,
    tensors: Tensors,
    weights: BlockWeights,
}

impl Llama {
    /// Loads the weights named as in HF `LlamaForCausalLM` (base model under `model.`), from
    /// `model.safetensors` or a GGUF file ([`crate::gguf::GgufLlama`]).
    pub fn load(config: &LlamaConfig, w: &dyn WeightSource) -> Result<Self, ModelError> {
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
        let dh = c.hidden_size / c.num_attention_heads;
        if dh % 2 == 1 {
            return Err(ModelError::Unsupported(format!(
                "RoPE needs an even head dimension, got {dh}"
            )));
        }
        let mut weights = BlockWeights::load(w, &block_config(c), block_names, c.num_hidden_layers)?;
        let tensors = Tensors::new(c, Some(w));
        weights.load_decls(w, &tensors.all())?;
        Ok(Llama { config: c.clone(), tensors, weights })
    }

    /// An empty key/value cache for this model.
    pub fn new_cache(&self) -> KvCache<Vec<f32>> {
        KvCache::new(self.config.num_hidden_layers)
    }

    /// Runs `ids` after the positions in `cache`, appending to it; returns the final-norm
    /// hidden states of the new positions, `[ids.len(), hidden]`.
    pub fn forward_step(&self, ids: &[u32], cache: &mut KvCache<Vec<f32>>) -> Result<Vec<f32>, ModelError> {
        self.forward_observed(ids, cache, None)
    }

    /// [`Llama::forward_step`], telling `observe` each norm's input and each linear operator's
    /// output ([`F32Block::observe`]).
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
        let mut ops = F32Block { observe, ..F32Block::new(&self.weights) };
        let x = embeddings(&mut ops, &self.tensors, Some(ids), n)?;
        let rows = Rows::new(n);
        let cfg = block_config(c);
        let layers = c.num_hidden_layers;
        let x = run_blocks(&mut ops, &cfg, block_names, layers, x, rows, Some(cache), None)?;
        ops.norm(&cfg, &self.tensors.norm.name, &x, n)
    }

    /// Logits `[vocab]` of a hidden row.
    pub fn logits(&self, hidden_row: &[f32]) -> Result<Vec<f32>, ModelError> {
        last_logits(&mut F32Block::new(&self.weights), self.tensors.head(), &hidden_row.to_vec(), 1)
    }

    /// Logits of the token following `ids` (no cache kept).
    pub fn next_token_logits(&self, ids: &[u32]) -> Result<Vec<f32>, ModelError> {
        let mut cache = self.new_cache();
        let x = self.forward_step(ids, &mut cache)?;
        self.logits(&x[x.len() - self.config.hidden_size..])
    }

    /// Greedy generation of `n_new` tokens after `ids`; returns only the new tokens.
    pub fn generate(&self, ids: &[u32], n_new: usize) -> Result<Vec<u32>, ModelError> {
        let mut cache = self.new_cache();
        let mut ops = F32Block::new(&self.weights);
        let tokens = generate(&mut ops, Some(ids), ids.len(), n_new, self.config.vocab_size, &mut cache, |o, ids, n, cache| {
            let h = self.forward_step(ids.unwrap_or_default(), cache)?;
            last_logits(o, self.tensors.head(), &h, n)
        })?;
        tokens.ok_or_else(|| ModelError::Input("the tokens were not opened".into()))
    }
}
