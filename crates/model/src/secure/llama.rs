//! Secure LLaMA (the computation of [`crate::llama::Llama`] on an [`Engine`]): RMSNorm, fused
//! `Q|K|V` projection (no bias; `1/√dh` folded into `W_q`), rotary position embeddings as a
//! public rotation applied locally to the shares (then one truncation,
//! [`crate::secure::layers::rope`]), grouped-query attention (query head `h` reads key/value
//! head `h / (heads / kv_heads)`, duplicated locally), SwiGLU FFN: fused `gate|up` projection,
//! SiLU (BumbleBee App. D four-segment approximation), one `Π_mul`, down projection. Greedy
//! generation with the shared KV cache as for GPT-2 (argmax revealed to the client only).

use crate::config::LlamaConfig;
use crate::secure::bert::{concat_cols, Progress};
use crate::secure::engine::Engine;
use crate::secure::gpt2::{append, generate_loop, SharedKvCache};
use crate::secure::layers::{
    attention, embed_lookup, linear, load_dense, named_rmsnorm, rope, silu_op, take_rows, AttnDims,
    ColScale, Layout, NO_SCALE,
};
use crate::secure::profile::timed;
use crate::secure::{check_ids, SecureError, SecureOptions, WeightSource};

/// LLaMA over an engine; the server holds `weights`, the client `None`.
pub struct SecureLlama<'w> {
    pub config: LlamaConfig,
    weights: Option<&'w dyn WeightSource>,
    opts: SecureOptions,
    progress: Option<Progress<'w>>,
}

impl<'w> SecureLlama<'w> {
    /// The model; rejects configurations the plaintext reference rejects as well.
    pub fn new(
        config: LlamaConfig,
        weights: Option<&'w dyn WeightSource>,
        opts: SecureOptions,
    ) -> Result<Self, SecureError> {
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
        if let Some(w) = weights {
            if !w.contains("embed_tokens.weight") {
                return Err(SecureError::Role(
                    "the server's weights lack \"embed_tokens.weight\"".into(),
                ));
            }
        }
        Ok(SecureLlama {
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
            .map_or(self.config.num_hidden_layers, |m| {
                m.min(self.config.num_hidden_layers)
            })
    }

    /// An empty shared cache for this model.
    pub fn new_cache<V>(&self) -> SharedKvCache<V> {
        SharedKvCache::new(self.layers())
    }

    /// Runs `n` new tokens after the cached positions; returns the final-norm hidden shares.
    pub fn forward_step<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        n: usize,
        cache: &mut SharedKvCache<E::Val>,
    ) -> Result<E::Val, SecureError> {
        let c = &self.config;
        let start = cache.len();
        check_ids(
            ids,
            n,
            c.vocab_size,
            c.max_position_embeddings.saturating_sub(start),
        )?;
        let (h, ff) = (c.hidden_size, c.intermediate_size);
        let (heads, kv_heads) = (c.num_attention_heads, c.num_key_value_heads);
        let dh = h / heads;
        let kv = kv_heads * dh;
        let fp = e.format();
        let src = self.weights;
        let eps = c.rms_norm_eps;
        let mut x = timed(e, "embed", |e| {
            let table = load_dense(
                src,
                fp,
                "embed_tokens",
                c.vocab_size,
                h,
                Layout::InOut,
                false,
                NO_SCALE,
            )?;
            embed_lookup(
                e,
                ids,
                n,
                c.vocab_size,
                h,
                table.as_ref().map(|t| t.w.as_slice()),
                self.opts.embed,
            )
        })?;
        let scale = 1.0 / (dh as f64).sqrt();
        let total = self.layers();
        for l in 0..total {
            let p = format!("layers.{l}");
            let a = named_rmsnorm(e, src, &format!("{p}.input_layernorm"), &x, n, h, eps)?;
            let qkv = timed(e, "linear.qkv", |e| {
                let parts = [
                    load_dense(
                        src,
                        fp,
                        &format!("{p}.self_attn.q_proj"),
                        h,
                        h,
                        Layout::OutIn,
                        false,
                        ColScale { cols: h, by: scale },
                    )?,
                    load_dense(
                        src,
                        fp,
                        &format!("{p}.self_attn.k_proj"),
                        h,
                        kv,
                        Layout::OutIn,
                        false,
                        NO_SCALE,
                    )?,
                    load_dense(
                        src,
                        fp,
                        &format!("{p}.self_attn.v_proj"),
                        h,
                        kv,
                        Layout::OutIn,
                        false,
                        NO_SCALE,
                    )?,
                ];
                let w = concat_cols(&parts, h, &[h, kv, kv]);
                linear(e, &a, n, h, h + 2 * kv, w.as_ref(), false)
            })?;
            let width = h + 2 * kv;
            let cols = |e: &mut E, off: usize, len: usize| -> Result<E::Val, SecureError> {
                let idx: Vec<usize> = (0..n * len)
                    .map(|q| (q / len) * width + off + q % len)
                    .collect();
                Ok(e.gather(&qkv, &idx)?)
            };
            let (q, k, v) = (cols(e, 0, h)?, cols(e, h, kv)?, cols(e, h + kv, kv)?);
            let (q, k) = timed(e, "rope", |e| {
                Ok((
                    rope(e, &q, n, start, heads, dh, c.rope_theta)?,
                    rope(e, &k, n, start, kv_heads, dh, c.rope_theta)?,
                ))
            })?;
            let kc = append(e, &mut cache.k[l], k)?;
            let vc = append(e, &mut cache.v[l], v)?;
            let ctx = attention(
                e,
                &q,
                &kc,
                &vc,
                AttnDims {
                    n,
                    m: start + n,
                    heads,
                    kv_heads,
                    dh,
                },
                None,
                true,
            )?;
            x = timed(e, "linear.o", |e| {
                let w = load_dense(
                    src,
                    fp,
                    &format!("{p}.self_attn.o_proj"),
                    h,
                    h,
                    Layout::OutIn,
                    false,
                    NO_SCALE,
                )?;
                let o = linear(e, &ctx, n, h, h, w.as_ref(), false)?;
                Ok(e.add(&o, &x)?)
            })?;
            let a = named_rmsnorm(
                e,
                src,
                &format!("{p}.post_attention_layernorm"),
                &x,
                n,
                h,
                eps,
            )?;
            let gu = timed(e, "linear.ffn1", |e| {
                let parts = [
                    load_dense(
                        src,
                        fp,
                        &format!("{p}.mlp.gate_proj"),
                        h,
                        ff,
                        Layout::OutIn,
                        false,
                        NO_SCALE,
                    )?,
                    load_dense(
                        src,
                        fp,
                        &format!("{p}.mlp.up_proj"),
                        h,
                        ff,
                        Layout::OutIn,
                        false,
                        NO_SCALE,
                    )?,
                ];
                let w = concat_cols(&parts, h, &[ff, ff]);
                linear(e, &a, n, h, 2 * ff, w.as_ref(), false)
            })?;
            let gi: Vec<usize> = (0..n * ff).map(|q| (q / ff) * 2 * ff + q % ff).collect();
            let ui: Vec<usize> = (0..n * ff)
                .map(|q| (q / ff) * 2 * ff + ff + q % ff)
                .collect();
            let (g, u) = (e.gather(&gu, &gi)?, e.gather(&gu, &ui)?);
            let act = timed(e, "silu", |e| silu_op(e, &g, self.opts.mixed_activations))?;
            let prod = timed(e, "mul", |e| Ok(e.mul(&act, &u)?))?;
            x = timed(e, "linear.ffn2", |e| {
                let w = load_dense(
                    src,
                    fp,
                    &format!("{p}.mlp.down_proj"),
                    ff,
                    h,
                    Layout::OutIn,
                    false,
                    NO_SCALE,
                )?;
                let y = linear(e, &prod, n, ff, h, w.as_ref(), false)?;
                Ok(e.add(&y, &x)?)
            })?;
            if let Some(pr) = &self.progress {
                pr(l + 1, total);
            }
        }
        cache.advance(n);
        named_rmsnorm(e, src, "norm", &x, n, h, eps)
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
        let src = self.weights;
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
