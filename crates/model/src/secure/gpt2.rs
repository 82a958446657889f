//! Secure GPT-2 (BumbleBee §VII-B): the computation of [`crate::gpt2::Gpt2`] on an [`Engine`],
//! with multi-token greedy generation over a **shared KV cache**.
//!
//! Step `t` processes only the new token(s): their embeddings (the client's one-hot × the
//! server's `wte`, plus the server's `wpe` rows at the public positions), pre-LN blocks with
//! causal attention against the cached key/value **shares** of all earlier positions (kept by
//! each party between steps, never opened), `gelu_new` by Seg4GeLU, final LayerNorm, the tied LM
//! head on the last row only, and a secure argmax whose index is revealed **to the client only**;
//! the client feeds it back as its next one-hot input. The server learns nothing but the public
//! length of the generation.

use crate::config::Gpt2Config;
use crate::secure::bert::Progress;
use crate::secure::engine::Engine;
use crate::secure::layers::{
    attention, embed_lookup, gelu, linear, load_dense, load_rows, named_layernorm, split_qkv,
    take_rows, AttnDims, ColScale, Layout, NO_SCALE,
};
use crate::secure::profile::timed;
use crate::secure::{check_ids, SecureError, SecureOptions, WeightSource};
use nectar_net::Role;
use nectar_nn::max::argmax_rows;

/// Key/value shares of the positions processed so far, per layer (`[len, kv_dim]` each).
#[derive(Clone, Debug)]
pub struct SharedKvCache<V> {
    pub(crate) k: Vec<Option<V>>,
    pub(crate) v: Vec<Option<V>>,
    len: usize,
}

impl<V> SharedKvCache<V> {
    /// An empty cache for `layers` blocks.
    pub fn new(layers: usize) -> Self {
        SharedKvCache {
            k: (0..layers).map(|_| None).collect(),
            v: (0..layers).map(|_| None).collect(),
            len: 0,
        }
    }
    /// Number of cached positions.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub(crate) fn advance(&mut self, n: usize) {
        self.len += n;
    }
}

/// Appends `new` to the cached shares of one layer; returns the whole cache of that layer.
pub(crate) fn append<E: Engine>(
    e: &mut E,
    slot: &mut Option<E::Val>,
    new: E::Val,
) -> Result<E::Val, SecureError> {
    let all = match slot.take() {
        None => new,
        Some(old) => e.concat(&[&old, &new])?,
    };
    *slot = Some(all.clone());
    Ok(all)
}

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

/// GPT-2 over an engine; the server holds `weights`, the client `None`.
pub struct SecureGpt2<'w> {
    pub config: Gpt2Config,
    weights: Option<&'w dyn WeightSource>,
    opts: SecureOptions,
    progress: Option<Progress<'w>>,
}

impl<'w> SecureGpt2<'w> {
    /// The model; fails if the server's weights lack the embeddings.
    pub fn new(
        config: Gpt2Config,
        weights: Option<&'w dyn WeightSource>,
        opts: SecureOptions,
    ) -> Result<Self, SecureError> {
        if let Some(w) = weights {
            for name in ["wte.weight", "wpe.weight"] {
                if !w.contains(name) {
                    return Err(SecureError::Role(format!(
                        "the server's weights lack \"{name}\""
                    )));
                }
            }
        }
        Ok(SecureGpt2 {
            config,
            weights,
            opts,
            progress: None,
        })
    }

    /// Reports progress after each block.
    pub fn with_progress(mut self, p: Progress<'w>) -> Self {
        self.progress = Some(p);
        self
    }

    fn layers(&self) -> usize {
        self.opts
            .max_layers
            .map_or(self.config.n_layer, |m| m.min(self.config.n_layer))
    }

    /// An empty shared cache for this model.
    pub fn new_cache<V>(&self) -> SharedKvCache<V> {
        SharedKvCache::new(self.layers())
    }

    /// Runs `n` new tokens after the cached positions and appends their keys/values to `cache`.
    /// Returns the final-LayerNorm hidden shares of the new positions, `[n, n_embd]`.
    pub fn forward_step<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        n: usize,
        cache: &mut SharedKvCache<E::Val>,
    ) -> Result<E::Val, SecureError> {
        let c = &self.config;
        let start = cache.len();
        check_ids(ids, n, c.vocab_size, c.n_positions.saturating_sub(start))?;
        let (d, ff, heads) = (c.n_embd, c.n_inner, c.n_head);
        let dh = d / heads;
        let fp = e.format();
        let src = self.weights;
        let eps = c.layer_norm_epsilon;
        let mut x = timed(e, "embed", |e| {
            let table = load_dense(
                src,
                fp,
                "wte",
                c.vocab_size,
                d,
                Layout::InOut,
                false,
                NO_SCALE,
            )?;
            let words = embed_lookup(
                e,
                ids,
                n,
                c.vocab_size,
                d,
                table.as_ref().map(|t| t.w.as_slice()),
                self.opts.embed,
            )?;
            let pos = load_rows(src, fp, "wpe.weight", [c.n_positions, d], start..start + n)?;
            let a = e.server_input(pos.as_deref(), n * d)?;
            Ok(e.add(&words, &a)?)
        })?;
        let scale = 1.0 / (dh as f64).sqrt();
        let total = self.layers();
        for l in 0..total {
            let p = format!("h.{l}");
            let a = named_layernorm(e, src, &format!("{p}.ln_1"), &x, n, d, eps)?;
            let qkv = timed(e, "linear.qkv", |e| {
                let w = load_dense(
                    src,
                    fp,
                    &format!("{p}.attn.c_attn"),
                    d,
                    3 * d,
                    Layout::InOut,
                    true,
                    ColScale { cols: d, by: scale },
                )?;
                linear(e, &a, n, d, 3 * d, w.as_ref(), true)
            })?;
            let (q, k, v) = split_qkv(e, &qkv, n, d)?;
            let kc = append(e, &mut cache.k[l], k)?;
            let vc = append(e, &mut cache.v[l], v)?;
            let m = start + n;
            let ctx = attention(
                e,
                &q,
                &kc,
                &vc,
                AttnDims {
                    n,
                    m,
                    heads,
                    kv_heads: heads,
                    dh,
                },
                None,
                true,
            )?;
            x = timed(e, "linear.o", |e| {
                let w = load_dense(
                    src,
                    fp,
                    &format!("{p}.attn.c_proj"),
                    d,
                    d,
                    Layout::InOut,
                    true,
                    NO_SCALE,
                )?;
                let o = linear(e, &ctx, n, d, d, w.as_ref(), true)?;
                Ok(e.add(&o, &x)?)
            })?;
            let a = named_layernorm(e, src, &format!("{p}.ln_2"), &x, n, d, eps)?;
            let f1 = timed(e, "linear.ffn1", |e| {
                let w = load_dense(
                    src,
                    fp,
                    &format!("{p}.mlp.c_fc"),
                    d,
                    ff,
                    Layout::InOut,
                    true,
                    NO_SCALE,
                )?;
                linear(e, &a, n, d, ff, w.as_ref(), true)
            })?;
            let g = timed(e, "gelu", |e| gelu(e, &f1, self.opts.mixed_activations))?;
            x = timed(e, "linear.ffn2", |e| {
                let w = load_dense(
                    src,
                    fp,
                    &format!("{p}.mlp.c_proj"),
                    ff,
                    d,
                    Layout::InOut,
                    true,
                    NO_SCALE,
                )?;
                let y = linear(e, &g, n, ff, d, w.as_ref(), true)?;
                Ok(e.add(&y, &x)?)
            })?;
            if let Some(pr) = &self.progress {
                pr(l + 1, total);
            }
        }
        cache.advance(n);
        named_layernorm(e, src, "ln_f", &x, n, d, eps)
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
        let src = self.weights;
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
    cache: &mut SharedKvCache<E::Val>,
    mut step: F,
) -> Result<Option<Vec<u32>>, SecureError>
where
    E: Engine,
    F: FnMut(
        &mut E,
        Option<&[u32]>,
        usize,
        &mut SharedKvCache<E::Val>,
    ) -> Result<E::Val, SecureError>,
{
    let mut tokens = Vec::with_capacity(n_new);
    let mut learned = true;
    if n_new == 0 {
        return Ok(Some(tokens));
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
