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

use crate::config::Gpt2Config;
use crate::block::{KvCache, Layout, NormKind, NO_SCALE};
use crate::secure::block::{named_norm, run_blocks};
use crate::secure::engine::{timed, Engine};
use crate::secure::layers::{embed_lookup, linear, load_dense, load_rows, take_rows};
use crate::secure::{check_ids, SecureError, Stack};
use nectar_net::Role;
use nectar_nn::max::argmax_rows;

/// Greedy argmax of the logits row, revealed to the client only (`Some(id)` there).
pub(crate) fn next_token<E: Engine>(
    e: &mut E,
    logits: &E::Val,
    vocab: usize,
) -> Result<Option<u32>, SecureError> {
    let (_, idx) = timed(e, "argmax", |e| Ok(argmax_rows(e, logits, 1, vocab)?))?;
    let opened = timed(e, "output", |e| Ok(e.reveal_to(&idx, Role::Client)?))?;
    match opened.as_deref() {
        None => Ok(None),
        Some([t]) if (*t as usize) < vocab => Ok(Some(*t as u32)),
        Some(v) => Err(SecureError::Role(format!(
            "argmax opened to {v:?}, not a token id < {vocab}"
        ))),
    }
}

/// GPT-2 over an engine; the server holds the weights, the client none.
pub struct SecureGpt2<'w> {
    pub config: Gpt2Config,
    pub(crate) stack: Stack<'w>,
}

impl<'w> SecureGpt2<'w> {
    /// The model; fails if the server's weights lack the embeddings.
    pub(crate) fn new(config: Gpt2Config, stack: Stack<'w>) -> Result<Self, SecureError> {
        stack.require(&["wte.weight", "wpe.weight"])?;
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
        let d = c.n_embd;
        let fp = e.format();
        let src = self.stack.weights;
        let x = timed(e, "embed", |e| {
            let table = load_dense(src, fp, "wte", c.vocab_size, d, Layout::InOut, false, NO_SCALE)?;
            let words = embed_lookup(e, ids, n, c.vocab_size, d, table.as_ref().map(|t| t.w.as_slice()))?;
            let pos = load_rows(src, fp, "wpe.weight", [c.n_positions, d], start..start + n)?;
            let a = e.server_input(pos.as_deref(), n * d)?;
            Ok(e.add(&words, &a)?)
        })?;
        let layers = cache.layers();
        let x = run_blocks(
            e,
            src,
            &crate::gpt2::block_config(&self.config),
            crate::gpt2::block_names,
            layers,
            x,
            n,
            Some(cache),
            self.stack.progress.as_ref(),
        )?;
        named_norm(e, src, NormKind::LayerNorm, "ln_f", &x, n, d, c.layer_norm_epsilon)
    }

    /// Logits `[vocab]` of the last of `n` hidden rows (tied LM head, shares).
    pub fn last_logits<E: Engine>(
        &self,
        e: &mut E,
        hidden: &E::Val,
        n: usize,
    ) -> Result<E::Val, SecureError> {
        let (d, vocab) = (self.config.n_embd, self.config.vocab_size);
        let fp = e.format();
        let src = self.stack.weights;
        timed(e, "lm_head", |e| {
            let last = take_rows(e, hidden, n - 1..n, d)?;
            let w = load_dense(src, fp, "wte", d, vocab, Layout::OutIn, false, NO_SCALE)?;
            linear(e, &last, 1, d, vocab, w.as_ref(), false)
        })
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

/// The greedy loop shared by GPT-2 and LLaMA: `step(ids, n, cache)` returns the logits shares
/// of the last new position.
pub(crate) fn generate_loop<E, F>(
    e: &mut E,
    ids: Option<&[u32]>,
    len: usize,
    n_new: usize,
    vocab: usize,
    cache: &mut KvCache<E::Val>,
    mut step: F,
) -> Result<Option<Vec<u32>>, SecureError>
where
    E: Engine,
    F: FnMut(
        &mut E,
        Option<&[u32]>,
        usize,
        &mut KvCache<E::Val>,
    ) -> Result<E::Val, SecureError>,
{
    // `n_new` may come from the network: never size an allocation by it.
    let mut tokens = Vec::with_capacity(n_new.min(1024));
    let mut learned = true;
    if n_new == 0 {
        return Ok(Some(tokens));
    }
    if n_new > 1 && e.suite().matmul == crate::suite::Matmul::Fused {
        return Err(SecureError::Unsupported(format!(
            "suite blb generates one token per prompt ({n_new} asked): BLB plans a prompt of L tokens, not KV-cache decoding steps"
        )));
    }
    let mut logits = step(e, ids, len, cache)?;
    for t in 0..n_new {
        let tok = next_token(e, &logits, vocab)?;
        match tok {
            Some(x) => tokens.push(x),
            None => learned = false,
        }
        if t + 1 == n_new {
            break;
        }
        let next = tok.map(|x| [x]);
        logits = step(e, next.as_ref().map(|a| &a[..]), 1, cache)?;
    }
    Ok(learned.then_some(tokens))
}
