//! Secure LLaMA (the computation of [`crate::llama::Llama`] on an [`Engine`]): RMSNorm, fused
//! `Q|K|V` projection (no bias; `1/√dh` folded into `W_q`), rotary position embeddings as a
//! public rotation applied locally to the shares (then one truncation,
//! [`crate::secure::layers::rope`]), grouped-query attention (query head `h` reads key/value
//! head `h / (heads / kv_heads)`, duplicated locally), SwiGLU FFN: fused `gate|up` projection,
//! SiLU by the suite's protocol, one `Π_mul`, down projection — the blocks of
//! [`crate::secure::block`]. Greedy
//! generation with the shared KV cache as for GPT-2 (argmax revealed to the client only).

use crate::arch::{generate_with, last_logits, ArchTensors, Decode};
use crate::block::{BlockOps, KvCache};
use crate::config::LlamaConfig;
use crate::llama::{embeddings, Tensors};
use crate::secure::block::{run_blocks, EngineBlock};
use crate::secure::engine::Engine;
use crate::secure::{check_ids, SecureError, Stack};

/// LLaMA over an engine; the server holds the weights, the client none.
pub struct SecureLlama<'w> {
    pub config: LlamaConfig,
    pub(crate) stack: Stack<'w>,
}

impl<'w> SecureLlama<'w> {
    /// The model; rejects configurations the plaintext reference rejects as well.
    pub(crate) fn new(config: LlamaConfig, stack: Stack<'w>) -> Result<Self, SecureError> {
        if let Some(kind) = &config.rope_scaling {
            return Err(SecureError::Unsupported(format!(
                "llama with rope_scaling \"{kind}\""
            )));
        }
        if config.attention_bias {
            return Err(SecureError::Unsupported("llama with attention_bias".into()));
        }
        let dh = config.hidden_size / config.num_attention_heads;
        if dh % 2 == 1
            || config.num_key_value_heads == 0
            || !config
                .num_attention_heads
                .is_multiple_of(config.num_key_value_heads)
        {
            return Err(SecureError::Unsupported(format!(
                "head dimension {dh} with {} heads over {} key/value heads",
                config.num_attention_heads, config.num_key_value_heads
            )));
        }
        stack.require(&Tensors::new(&config, stack.weights).embeddings())?;
        Ok(SecureLlama { config, stack })
    }



    /// An empty shared cache for this model.
    pub fn new_cache<V>(&self) -> KvCache<V> {
        KvCache::new(self.stack.layers(self.config.num_hidden_layers))
    }

    /// Runs `n` new tokens after the cached positions; returns the final-norm hidden shares.
    pub fn forward_step<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        n: usize,
        cache: &mut KvCache<E::Val>,
    ) -> Result<E::Val, SecureError> {
        let c = &self.config;
        let start = cache.len();
        check_ids(ids, n, c.vocab_size, c.max_position_embeddings.saturating_sub(start))?;
        let src = self.stack.weights;
        let t = Tensors::new(c, src);
        let cfg = crate::llama::block_config(c);
        let x = embeddings(&mut EngineBlock::new(e, src), &t, ids, n)?;
        let layers = cache.layers();
        let x = run_blocks(
            e,
            src,
            &cfg,
            crate::llama::block_names,
            layers,
            x,
            &[n],
            Some(cache),
            self.stack.progress.as_ref(),
            Some(&c.scale_shifts),
        )?;
        EngineBlock::new(e, src).with_scale_shifts(&c.scale_shifts).norm(&cfg, &t.norm.name, &x, n)
    }

    /// Logits of the last of `n` hidden rows (`lm_head`, or the tied embedding).
    pub fn last_logits<E: Engine>(
        &self,
        e: &mut E,
        hidden: &E::Val,
        n: usize,
    ) -> Result<E::Val, SecureError> {
        let src = self.stack.weights;
        last_logits(&mut EngineBlock::new(e, src), Tensors::new(&self.config, src).head(), hidden, n)
    }

    /// Greedy generation (see [`crate::secure::SecureGpt2::generate`]).
    pub fn generate<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        len: usize,
        n_new: usize,
    ) -> Result<Option<Vec<u32>>, SecureError> {
        self.generate_in(e, &mut self.new_cache(), ids, len, n_new, &mut Decode::default())
    }

    /// [`Self::generate`] after the positions in `cache` (a conversation's earlier turns),
    /// which it extends, with the options of `d` ([`crate::arch::generate_with`]).
    pub fn generate_in<E: Engine>(
        &self,
        e: &mut E,
        cache: &mut KvCache<E::Val>,
        ids: Option<&[u32]>,
        len: usize,
        n_new: usize,
        d: &mut Decode<'_>,
    ) -> Result<Option<Vec<u32>>, SecureError> {
        let vocab = self.config.vocab_size;
        generate_with(&mut EngineBlock::new(e, self.stack.weights), ids, len, n_new, vocab, cache, |o, ids, n, cache| {
            let h = self.forward_step(o.e, ids, n, cache)?;
            self.last_logits(o.e, &h, n)
        }, d)
    }
}
