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

use crate::arch::ArchTensors;
use crate::bert::{batch_positions, classify_rows, embeddings, mean_pool, mean_pool_batch, Tensors};
use crate::block::segment_starts;
use crate::config::BertConfig;
use crate::secure::block::{run_blocks, EngineBlock};
use crate::secure::engine::Engine;
use crate::secure::{check_ids, SecureError, Stack};

/// BERT over an engine; the server holds the weights, the client none.
pub struct SecureBert<'w> {
    pub config: BertConfig,
    pub(crate) stack: Stack<'w>,
}

impl<'w> SecureBert<'w> {
    /// The model; fails if the server's weights lack the embeddings or contradict the config.
    pub(crate) fn new(config: BertConfig, stack: Stack<'w>) -> Result<Self, SecureError> {
        stack.require(&Tensors::new(&config, stack.weights)?.embeddings())?;
        Ok(SecureBert { config, stack })
    }

    /// Last hidden states `[n, hidden]` as shares. `ids`: the client's (and the twin's).
    pub fn forward<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        n: usize,
    ) -> Result<E::Val, SecureError> {
        self.forward_batch(e, ids, &[n])
    }

    /// Last hidden states of a batch of inputs of lengths `lens` (public; issue 52): their
    /// rows one after another (`ids` concatenated likewise), each input at positions
    /// `0..n_s`, attention per input ([`crate::block::Rows::batch`]). `[Σ n_s, hidden]`.
    pub fn forward_batch<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        lens: &[usize],
    ) -> Result<E::Val, SecureError> {
        let c = &self.config;
        if lens.is_empty() {
            return Err(crate::ModelError::Input("an empty batch".into()).into());
        }
        for (off, &len) in segment_starts(lens).into_iter().zip(lens) {
            check_ids(ids.map(|all| all.get(off..off + len).unwrap_or(&[])), len, c.vocab_size, c.max_position_embeddings)?;
        }
        let n: usize = lens.iter().sum();
        if ids.is_some_and(|all| all.len() != n) {
            return Err(SecureError::Role(format!("{} ids for a batch of {n} tokens", ids.map_or(0, |a| a.len()))));
        }
        let src = self.stack.weights;
        let cfg = crate::bert::block_config(c);
        let tensors = Tensors::new(c, src)?;
        let positions = batch_positions(lens);
        let x = embeddings(&mut EngineBlock::new(e, src), &cfg, &tensors, ids, &vec![0; n], &positions)?;
        let layers = self.stack.layers(c.num_hidden_layers);
        run_blocks(
            e,
            src,
            &cfg,
            crate::bert::block_names,
            layers,
            x,
            lens,
            None,
            self.stack.progress.as_ref(),
            None,
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
        let x = self.forward(e, ids, n)?;
        mean_pool(&mut EngineBlock::new(e, self.stack.weights), &x, (n, self.config.hidden_size), None)
    }

    /// [`SecureBert::embed`] of each input of a batch: one pass, one pooling, one opening.
    pub fn embed_batch<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        lens: &[usize],
    ) -> Result<Option<Vec<Vec<f32>>>, SecureError> {
        let x = self.forward_batch(e, ids, lens)?;
        mean_pool_batch(&mut EngineBlock::new(e, self.stack.weights), &x, lens, self.config.hidden_size)
    }

    /// Classifier logits (pooler on `[CLS]`, tanh, classifier), revealed to the client.
    pub fn classify<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        n: usize,
    ) -> Result<Option<Vec<f32>>, SecureError> {
        Ok(self.classify_batch(e, ids, &[n])?.and_then(|mut v| v.pop()))
    }

    /// [`SecureBert::classify`] of each input of a batch: one pass, the `[CLS]` rows through
    /// one pooler and one classifier, one opening.
    pub fn classify_batch<E: Engine>(
        &self,
        e: &mut E,
        ids: Option<&[u32]>,
        lens: &[usize],
    ) -> Result<Option<Vec<Vec<f32>>>, SecureError> {
        let src = self.stack.weights;
        let Some((pooler, cls)) = Tensors::new(&self.config, src)?.head else {
            return Err(SecureError::Unsupported("this model has no classifier head".into()));
        };
        let x = self.forward_batch(e, ids, lens)?;
        classify_rows(&mut EngineBlock::new(e, src), (&pooler, &cls), &x, &segment_starts(lens))
    }
}
