//! Secure LLaMA (the computation of [`crate::llama::Llama`] on an [`Engine`]): RMSNorm, fused
//! `Q|K|V` projection (no bias; `1/√dh` folded into `W_q`), rotary position embeddings as a
//! public rotation applied locally to the shares (then one truncation,
//! [`crate::secure::layers::rope`]), grouped-query attention (query head `h` reads key/value
//! head `h / (heads / kv_heads)`, duplicated locally), SwiGLU FFN: fused `gate|up` projection,
//! SiLU by the suite's protocol, one `Π_mul`, down projection — the blocks of
//! [`crate::secure::block`]. Greedy
//! generation with the shared KV cache as for GPT-2 (argmax revealed to the client only).

use crate::config::LlamaConfig;
use crate::block::{KvCache, Layout, NormKind, NO_SCALE};
use crate::secure::block::{named_norm, run_blocks};
use crate::secure::engine::{timed, Engine};
use crate::secure::gpt2::generate_loop;
use crate::secure::layers::{embed_lookup, linear, load_dense, take_rows};
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
        stack.require(&["embed_tokens.weight"])?;
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
        let h = c.hidden_size;
        let fp = e.format();
        let src = self.stack.weights;
        let x = timed(e, "embed", |e| {
            let table = load_dense(src, fp, "embed_tokens", c.vocab_size, h, Layout::InOut, false, NO_SCALE)?;
            embed_lookup(e, ids, n, c.vocab_size, h, table.as_ref().map(|t| t.w.as_slice()))
        })?;
        let layers = cache.layers();
        let x = run_blocks(
            e,
            src,
            &crate::llama::block_config(&self.config),
            crate::llama::block_names,
            layers,
            x,
            n,
            Some(cache),
            self.stack.progress.as_ref(),
        )?;
        named_norm(e, src, NormKind::RmsNorm, "norm", &x, n, h, c.rms_norm_eps)
    }

    /// Logits of the last of `n` hidden rows (`lm_head`, or the tied embedding).
    pub fn last_logits<E: Engine>(
        &self,
        e: &mut E,
        hidden: &E::Val,
        n: usize,
    ) -> Result<E::Val, SecureError> {
        let (h, vocab) = (self.config.hidden_size, self.config.vocab_size);
        let fp = e.format();
        let src = self.stack.weights;
        let head = match src {
            Some(w) if self.config.tie_word_embeddings && !w.contains("lm_head.weight") => {
                "embed_tokens"
            }
            _ => "lm_head",
        };
        timed(e, "lm_head", |e| {
            let last = take_rows(e, hidden, n - 1..n, h)?;
            let w = load_dense(src, fp, head, h, vocab, Layout::OutIn, false, NO_SCALE)?;
            linear(e, &last, 1, h, vocab, w.as_ref(), false)
        })
    }

    /// Greedy generation (see [`crate::secure::SecureGpt2::generate`]).
    pub fn generate<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        len: usize,
        n_new: usize,
    ) -> Result<Option<Vec<u32>>, SecureError> {
        let mut cache = self.new_cache();
        generate_loop(
            e,
            ids,
            len,
            n_new,
            self.config.vocab_size,
            &mut cache,
            |e, ids, n, cache| {
                let h = self.forward_step(e, ids, n, cache)?;
                self.last_logits(e, &h, n)
            },
        )
    }
}
