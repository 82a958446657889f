//! Secure BERT encoder (BumbleBee §VII-B, Fig. 2): the computation of [`crate::bert::Bert`] on
//! an [`Engine`].
//!
//! Embeddings: the client's one-hot rows × the server's word table (one OLT); the position rows
//! (public positions) and the token-type row are the server's and added to its share locally —
//! queries are single-segment (token type 0), as sentence-transformers encodes one text. Then
//! LayerNorm. Post-LN blocks: fused `Q|K|V` projection (one OLT with `3h` outputs, `1/√dh`
//! folded into `W_q`, `b_q`), attention (batched `Q·K^T`, softmax, batched `P·V`), output
//! projection, residual, LayerNorm, FFN with Seg4GeLU (approximating HF's exact `gelu`),
//! residual, LayerNorm. Queries are not padded (the length is public), so no key mask is needed.
//!
//! Outputs (revealed to the client only): [`SecureBert::embed`] reveals the mean-pooled vector
//! and the client L2-normalises it in plaintext; [`SecureBert::classify`] runs the pooler
//! (`tanh`, see [`crate::secure::layers::tanh`]) and the classifier on `[CLS]` and reveals the
//! logits.

use crate::config::BertConfig;
use crate::secure::engine::Engine;
use crate::secure::layers::{
    attention, embed_lookup, gelu, linear, load_dense, load_rows, mean_rows, named_layernorm,
    split_qkv, take_rows, tanh, AttnDims, ColScale, EncDense, Layout, NO_SCALE,
};
use crate::secure::profile::timed;
use crate::secure::{check_ids, SecureError, SecureOptions, WeightSource};
use nectar_net::Role;

/// Called after each block with (block index, number of blocks).
pub type Progress<'w> = Box<dyn Fn(usize, usize) + Send + Sync + 'w>;

/// BERT over an engine; the server holds `weights`, the client `None`.
pub struct SecureBert<'w> {
    pub config: BertConfig,
    weights: Option<&'w dyn WeightSource>,
    opts: SecureOptions,
    progress: Option<Progress<'w>>,
}

/// Concatenates dense layers along the output dimension (`in × Σout`).
pub(crate) fn concat_cols(
    parts: &[Option<EncDense>],
    in_dim: usize,
    outs: &[usize],
) -> Option<EncDense> {
    if parts.iter().any(|p| p.is_none()) {
        return None;
    }
    let parts: Vec<&EncDense> = parts.iter().flatten().collect();
    let total: usize = outs.iter().sum();
    let mut w = Vec::with_capacity(in_dim * total);
    for i in 0..in_dim {
        for (p, &o) in parts.iter().zip(outs) {
            w.extend_from_slice(&p.w[i * o..(i + 1) * o]);
        }
    }
    let b = if parts.iter().all(|p| p.b.is_some()) {
        Some(
            parts
                .iter()
                .flat_map(|p| p.b.iter().flatten().copied())
                .collect(),
        )
    } else {
        None
    };
    Some(EncDense { w, b })
}

impl<'w> SecureBert<'w> {
    /// The model; fails if the server's weights lack a tensor of the expected shape.
    pub fn new(
        config: BertConfig,
        weights: Option<&'w dyn WeightSource>,
        opts: SecureOptions,
    ) -> Result<Self, SecureError> {
        if let Some(w) = weights {
            for name in [
                "embeddings.word_embeddings.weight",
                "embeddings.position_embeddings.weight",
            ] {
                if !w.contains(name) {
                    return Err(SecureError::Role(format!(
                        "the server's weights lack \"{name}\""
                    )));
                }
            }
        }
        Ok(SecureBert {
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

    /// Last hidden states `[n, hidden]` as shares. `ids`: the client's (and the twin's).
    pub fn forward<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        n: usize,
    ) -> Result<E::Val, SecureError> {
        let c = &self.config;
        check_ids(ids, n, c.vocab_size, c.max_position_embeddings)?;
        let (h, ff, heads) = (c.hidden_size, c.intermediate_size, c.num_attention_heads);
        let dh = h / heads;
        let fp = e.format();
        let src = self.weights;
        let mut x = timed(e, "embed", |e| {
            let table = load_dense(
                src,
                fp,
                "embeddings.word_embeddings",
                c.vocab_size,
                h,
                Layout::InOut,
                false,
                NO_SCALE,
            )?;
            let words = embed_lookup(
                e,
                ids,
                n,
                c.vocab_size,
                h,
                table.as_ref().map(|t| t.w.as_slice()),
                self.opts.embed,
            )?;
            let pos = load_rows(
                src,
                fp,
                "embeddings.position_embeddings.weight",
                [c.max_position_embeddings, h],
                0..n,
            )?;
            let typ = load_rows(
                src,
                fp,
                "embeddings.token_type_embeddings.weight",
                [c.type_vocab_size, h],
                0..1,
            )?;
            let add = pos.zip(typ).map(|(p, t)| {
                p.iter()
                    .enumerate()
                    .map(|(i, &v)| v.wrapping_add(t[i % h]))
                    .collect::<Vec<u64>>()
            });
            let a = e.server_input(add.as_deref(), n * h)?;
            Ok(e.add(&words, &a)?)
        })?;
        x = named_layernorm(e, src, "embeddings.LayerNorm", &x, n, h, c.layer_norm_eps)?;
        let scale = 1.0 / (dh as f64).sqrt();
        let total = self.layers();
        for l in 0..total {
            let p = format!("encoder.layer.{l}");
            let qkv = timed(e, "linear.qkv", |e| {
                let parts = [
                    load_dense(
                        src,
                        fp,
                        &format!("{p}.attention.self.query"),
                        h,
                        h,
                        Layout::OutIn,
                        true,
                        ColScale { cols: h, by: scale },
                    )?,
                    load_dense(
                        src,
                        fp,
                        &format!("{p}.attention.self.key"),
                        h,
                        h,
                        Layout::OutIn,
                        true,
                        NO_SCALE,
                    )?,
                    load_dense(
                        src,
                        fp,
                        &format!("{p}.attention.self.value"),
                        h,
                        h,
                        Layout::OutIn,
                        true,
                        NO_SCALE,
                    )?,
                ];
                let w = concat_cols(&parts, h, &[h, h, h]);
                linear(e, &x, n, h, 3 * h, w.as_ref(), true)
            })?;
            let (q, k, v) = split_qkv(e, &qkv, n, h)?;
            let ctx = attention(
                e,
                &q,
                &k,
                &v,
                AttnDims {
                    n,
                    m: n,
                    heads,
                    kv_heads: heads,
                    dh,
                },
                None,
                false,
            )?;
            let o = timed(e, "linear.o", |e| {
                let w = load_dense(
                    src,
                    fp,
                    &format!("{p}.attention.output.dense"),
                    h,
                    h,
                    Layout::OutIn,
                    true,
                    NO_SCALE,
                )?;
                let o = linear(e, &ctx, n, h, h, w.as_ref(), true)?;
                Ok(e.add(&o, &x)?)
            })?;
            let a = named_layernorm(
                e,
                src,
                &format!("{p}.attention.output.LayerNorm"),
                &o,
                n,
                h,
                c.layer_norm_eps,
            )?;
            let f1 = timed(e, "linear.ffn1", |e| {
                let w = load_dense(
                    src,
                    fp,
                    &format!("{p}.intermediate.dense"),
                    h,
                    ff,
                    Layout::OutIn,
                    true,
                    NO_SCALE,
                )?;
                linear(e, &a, n, h, ff, w.as_ref(), true)
            })?;
            let g = timed(e, "gelu", |e| gelu(e, &f1, self.opts.mixed_activations))?;
            let f2 = timed(e, "linear.ffn2", |e| {
                let w = load_dense(
                    src,
                    fp,
                    &format!("{p}.output.dense"),
                    ff,
                    h,
                    Layout::OutIn,
                    true,
                    NO_SCALE,
                )?;
                let y = linear(e, &g, n, ff, h, w.as_ref(), true)?;
                Ok(e.add(&y, &a)?)
            })?;
            x = named_layernorm(
                e,
                src,
                &format!("{p}.output.LayerNorm"),
                &f2,
                n,
                h,
                c.layer_norm_eps,
            )?;
            if let Some(pr) = &self.progress {
                pr(l + 1, total);
            }
        }
        Ok(x)
    }

    /// Sentence embedding: mean pooling on shares, the pooled vector revealed to the client,
    /// who L2-normalises it. Returns `Some(embedding)` on the client (and the twin).
    pub fn embed<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        n: usize,
    ) -> Result<Option<Vec<f32>>, SecureError> {
        let h = self.config.hidden_size;
        let x = self.forward(e, ids, n)?;
        let pooled = timed(e, "pool", |e| mean_rows(e, &x, n, h))?;
        let opened = timed(e, "output", |e| Ok(e.reveal_to(&pooled, Role::Client)?))?;
        Ok(opened.map(|v| {
            let m = e.format().decode_vec(&v);
            let norm = m.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
            m.iter().map(|v| (v / norm) as f32).collect()
        }))
    }

    /// Classifier logits (pooler on `[CLS]`, tanh, classifier), revealed to the client.
    pub fn classify<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        n: usize,
    ) -> Result<Option<Vec<f32>>, SecureError> {
        let h = self.config.hidden_size;
        let labels = match (self.weights, self.config.num_labels) {
            (Some(w), _) if w.contains("classifier.weight") => {
                w.shape("classifier.weight").map_or(0, |s| s[0])
            }
            (None, Some(k)) => k,
            _ => {
                return Err(SecureError::Unsupported(
                    "this model has no classifier head".into(),
                ))
            }
        };
        if let Some(k) = self.config.num_labels {
            if k != labels {
                return Err(SecureError::Role(format!(
                    "classifier has {labels} outputs, config names {k} labels"
                )));
            }
        }
        let fp = e.format();
        let src = self.weights;
        let x = self.forward(e, ids, n)?;
        let logits = timed(e, "classifier", |e| {
            let cls = take_rows(e, &x, 0..1, h)?;
            let wp = load_dense(src, fp, "pooler.dense", h, h, Layout::OutIn, true, NO_SCALE)?;
            let p = linear(e, &cls, 1, h, h, wp.as_ref(), true)?;
            let t = tanh(e, &p)?;
            let wc = load_dense(
                src,
                fp,
                "classifier",
                h,
                labels,
                Layout::OutIn,
                true,
                NO_SCALE,
            )?;
            linear(e, &t, 1, h, labels, wc.as_ref(), true)
        })?;
        let opened = timed(e, "output", |e| Ok(e.reveal_to(&logits, Role::Client)?))?;
        Ok(opened.map(|v| {
            e.format()
                .decode_vec(&v)
                .iter()
                .map(|&x| x as f32)
                .collect()
        }))
    }
}
