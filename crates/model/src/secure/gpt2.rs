//! Secure GPT-2 (BumbleBee §VII-B): the computation of [`crate::gpt2::Gpt2`] on an [`Engine`],
//! with multi-token greedy generation over a **shared KV cache**.
//!
//! Step `t` processes only the new token(s): their embeddings (the client's one-hot × the
//! server's `wte`, plus the server's `wpe` rows at the public positions), pre-LN blocks with
//! causal attention against the cached key/value **shares** of all earlier positions (kept by
//! each party between steps, never opened), `gelu_new` by the suite's GeLU (the blocks of
//! [`crate::secure::block`]), final LayerNorm, the tied LM
//! head on the last row only, and a secure argmax whose index is revealed **to the client only**;
//! the client feeds it back as its next one-hot input. The server learns nothing but the public
//! length of the generation.

use crate::arch::{generate_with, last_logits, ArchTensors, Decode};
use crate::block::{BlockOps, KvCache};
use crate::config::Gpt2Config;
use crate::gpt2::{embeddings, Tensors};
use crate::secure::block::{run_blocks, EngineBlock};
use crate::secure::engine::Engine;
use crate::secure::{check_ids, SecureError, Stack};

/// GPT-2 over an engine; the server holds the weights, the client none.
pub struct SecureGpt2<'w> {
    pub config: Gpt2Config,
    pub(crate) stack: Stack<'w>,
}

impl<'w> SecureGpt2<'w> {
    /// The model; fails if the server's weights lack the embeddings.
    pub(crate) fn new(config: Gpt2Config, stack: Stack<'w>) -> Result<Self, SecureError> {
        stack.require(&Tensors::new(&config).embeddings())?;
        Ok(SecureGpt2 { config, stack })
    }

    /// An empty shared cache for this model.
    pub fn new_cache<V>(&self) -> KvCache<V> {
        KvCache::new(self.stack.layers(self.config.n_layer))
    }

    /// Runs `n` new tokens after the cached positions and appends their keys/values to `cache`.
    /// Returns the final-LayerNorm hidden shares of the new positions, `[n, n_embd]`.
    pub fn forward_step<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        n: usize,
        cache: &mut KvCache<E::Val>,
    ) -> Result<E::Val, SecureError> {
        let c = &self.config;
        let start = cache.len();
        check_ids(ids, n, c.vocab_size, c.n_positions.saturating_sub(start))?;
        let src = self.stack.weights;
        let t = Tensors::new(c);
        let cfg = crate::gpt2::block_config(c);
        let x = embeddings(&mut EngineBlock::new(e, src), &t, ids, n, start)?;
        let layers = cache.layers();
        let x = run_blocks(
            e,
            src,
            &cfg,
            crate::gpt2::block_names,
            layers,
            x,
            &[n],
            Some(cache),
            self.stack.progress.as_ref(),
            None,
        )?;
        EngineBlock::new(e, src).norm(&cfg, &t.ln_f.name, &x, n)
    }

    /// Logits `[vocab]` of the last of `n` hidden rows (tied LM head, shares).
    pub fn last_logits<E: Engine>(
        &self,
        e: &mut E,
        hidden: &E::Val,
        n: usize,
    ) -> Result<E::Val, SecureError> {
        last_logits(&mut EngineBlock::new(e, self.stack.weights), &Tensors::new(&self.config).wte, hidden, n)
    }

    /// Greedy generation of `n_new` tokens after the client's `len` prompt ids; `Some(tokens)` on
    /// the client (and the twin), `None` on the server. Step `t > 0` runs one token against the
    /// shared KV cache.
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
