//! Secure BERT encoder (BumbleBee §VII-B, Fig. 2): the computation of [`crate::bert::Bert`] on
//! an [`Engine`].
//!
//! Embeddings: the client's one-hot rows × the server's word table (one OLT); the position rows
//! (public positions) and the token-type row are the server's and added to its share locally —
//! queries are single-segment (token type 0), as sentence-transformers encodes one text. Then
//! LayerNorm. Then post-LN blocks of [`crate::secure::block`] (bidirectional attention, plain
//! FFN with GeLU by the suite's protocol, approximating HF's exact `gelu`). Queries are not
//! padded (the length is public), so no key mask is needed.
//!
//! Outputs (revealed to the client only): [`SecureBert::embed`] reveals the mean-pooled vector
//! and the client L2-normalises it in plaintext; [`SecureBert::classify`] runs the pooler
//! (`tanh` by the suite, see [`crate::secure::operators::tanh`]) and the classifier on `[CLS]` and reveals the
//! logits.

use crate::config::BertConfig;
use crate::block::{Layout, NormKind, NO_SCALE};
use crate::secure::block::{named_norm, run_blocks};
use crate::secure::engine::{timed, Engine};
use crate::secure::layers::{
    embed_lookup, linear, load_dense, load_rows, mean_rows, take_rows,
};
use crate::secure::{check_ids, SecureError, Stack};
use nectar_net::Role;

/// BERT over an engine; the server holds the weights, the client none.
pub struct SecureBert<'w> {
    pub config: BertConfig,
    pub(crate) stack: Stack<'w>,
}

impl<'w> SecureBert<'w> {
    /// The model; fails if the server's weights lack the embeddings.
    pub(crate) fn new(config: BertConfig, stack: Stack<'w>) -> Result<Self, SecureError> {
        stack.require(&[
            "embeddings.word_embeddings.weight",
            "embeddings.position_embeddings.weight",
        ])?;
        Ok(SecureBert { config, stack })
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
        let h = c.hidden_size;
        let fp = e.format();
        let src = self.stack.weights;
        let x = timed(e, "embed", |e| {
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
            let words = embed_lookup(e, ids, n, c.vocab_size, h, table.as_ref().map(|t| t.w.as_slice()))?;
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
        let x = named_norm(e, src, NormKind::LayerNorm, "embeddings.LayerNorm", &x, n, h, c.layer_norm_eps)?;
        let layers = self.stack.layers(c.num_hidden_layers);
        run_blocks(
            e,
            src,
            &crate::bert::block_config(&self.config),
            crate::bert::block_names,
            layers,
            x,
            n,
            None,
            self.stack.progress.as_ref(),
        )
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
        let labels = match (self.stack.weights, self.config.num_labels) {
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
        let src = self.stack.weights;
        let x = self.forward(e, ids, n)?;
        let logits = timed(e, "classifier", |e| {
            let cls = take_rows(e, &x, 0..1, h)?;
            let wp = load_dense(src, fp, "pooler.dense", h, h, Layout::OutIn, true, NO_SCALE)?;
            let p = linear(e, &cls, 1, h, h, wp.as_ref(), true)?;
            let t = crate::secure::operators::tanh(e, &p)?;
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
