//! Whole-model two-party execution (BumbleBee NDSS'25 §II-C, §VII-B, Fig. 2): BERT, GPT-2,
//! LLaMA and ViT written once over an [`Engine`] — the fixed-point arithmetic of the protocols plus the
//! linear operators a transformer needs — so that the same code runs
//!
//! - on [`crate::twin::PlainEngine`], the plaintext fixed-point **twin** (one process holds everything; used
//!   to measure the fixed-point/approximation error against the f32 reference and as the
//!   expected output of the secure run), and
//! - on a secure engine (additive shares, OLT matmuls of `nectar-linear`, the OT-based
//!   nonlinear protocols behind `nectar-nn`'s `Backend`), where each party runs the code with
//!   its own secrets: the server passes the weights ([`WeightSource`]), the client the token ids
//!   (or, for ViT, its image's pixels: [`SecureModel::run_image`]).
//!
//! # Data flow (DESIGN.md "Data flow of one inference")
//!
//! 1. Embedding: the client's one-hot matrix (built locally from its ids, or obtained from
//!    secret-shared ids with `i_equal`, see [`crate::suite::Embed`]) × the server's table, an OLT.
//! 2. Per block ([`crate::block`], written once for every architecture and arithmetic; its
//!    steps on an engine in [`block`]): linear layers `[X]·W` by OLT
//!    followed by one truncation and the server adding its bias to its share; `Q·K^T` and `P·V`
//!    as batched shared×shared products; softmax with a public (padding / causal) mask;
//!    LayerNorm / RMSNorm; GeLU / SiLU — each nonlinear operator by the protocol the engine's
//!    [`crate::suite::Suite`] names ([`operators`]).
//! 3. Output: BERT mean pooling is computed on shares and the pooled vector is revealed **to the
//!    client only**, who L2-normalises it in plaintext (normalisation of a public-to-the-client
//!    vector leaks nothing more). Classifier logits, GPT-2/LLaMA argmax tokens: revealed to the
//!    client only; the argmax index is the client's next input id (generation).
//!
//! Public in the threat model: architecture and shapes, sequence length, position of the
//! generation step, fixed-point format and approximation parameters.
//!
//! Weights are never held as a full fixed-point copy: each tensor is read from the (memory-
//! mapped or pseudo-random) [`WeightSource`] and encoded right before the operator that uses it,
//! and dropped after it.

pub mod bert;
pub mod blb;
pub mod blb_call;
pub mod blb_spec;
pub mod block;
pub mod engine;
pub mod exact;
pub mod gpt2;
pub mod layers;
pub mod leaf;
pub mod llama;
pub mod operators;
pub mod profile;
pub mod secure_engine;
pub mod vit;
pub mod weight_cache;

pub use bert::SecureBert;
pub use engine::{timed, Engine, WeightRef};
pub use gpt2::SecureGpt2;
pub use llama::SecureLlama;
pub use profile::{OpRecord, Profile};
pub use secure_engine::SecureEngine;
pub use vit::SecureVit;

use crate::block::KvCache;
use crate::config::ModelConfig;
use crate::suite::SuiteError;
pub use crate::weights::WeightSource;
use crate::ModelError;
use nectar_nn::NnError;

/// Errors of secure model execution.
#[derive(Debug, thiserror::Error)]
pub enum SecureError {
    /// An operator or a protocol failed (includes channel errors of the secure engine).
    #[error("operator: {0}")]
    Nn(#[from] NnError),
    /// Loading weights or checking inputs failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// This party is missing something only it can provide (the server's weights, the
    /// client's input), or holds something of the wrong shape.
    #[error("{0}")]
    Role(String),
    /// Not implemented for this architecture / option.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The suite names a protocol that cannot run.
    #[error(transparent)]
    Suite(#[from] SuiteError),
}

/// Called after each block with (block index, number of blocks).
pub type Progress<'w> = Box<dyn Fn(usize, usize) + Send + Sync + 'w>;

/// BLB's refusals read as the engine's; its bad inputs as the model's.
impl From<nectar_blb::BlbError> for SecureError {
    fn from(e: nectar_blb::BlbError) -> Self {
        match e {
            nectar_blb::BlbError::Unsupported(m) => SecureError::Unsupported(m),
            e @ nectar_blb::BlbError::Input(_) => SecureError::Model(e.into()),
        }
    }
}

impl From<nectar_math::MathError> for SecureError {
    fn from(e: nectar_math::MathError) -> Self {
        SecureError::Nn(NnError::Math(e))
    }
}

/// What a query asks for.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Task {
    /// BERT sentence embedding (mean pooling + L2 normalisation).
    Embed,
    /// Classifier logits: BERT (pooler + classifier head) or ViT (head on `[CLS]`; the client's
    /// pixels go through [`SecureModel::run_image`]).
    Classify,
    /// Greedy generation of `n_new` tokens (GPT-2, LLaMA).
    Generate { n_new: usize },
    /// A turn of a conversation (GPT-2, LLaMA; [`SecureModel::run_turn`]): the `len` new
    /// tokens after the positions the session's KV cache kept from earlier turns (cleared
    /// first when `reset`), then up to `n_new` greedy tokens; the client may stop after any
    /// token (an end-of-sequence token), and the server learns where. The cache is kept.
    Chat { n_new: usize, reset: bool },
    /// A batch of inputs in one pass (issue 52; BERT): `each` (`Embed` or `Classify`) of every
    /// input, whose lengths `lens` are public; the ids are the inputs' one after another and
    /// the query's `len` is their sum. Attention runs per input; the output is one
    /// [`Output::Batch`] entry per input, in order.
    Batch { each: Box<Task>, lens: Vec<usize> },
}

/// The most inputs one batch may hold ([`Task::Batch`]; a server bounds the batch's tokens by
/// its memory budget as well).
pub const MAX_BATCH_INPUTS: usize = 256;

/// One query as each party sees it: the client holds the ids, the server only their number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    pub task: Task,
    /// The token ids (client; `None` on the server).
    pub ids: Option<Vec<u32>>,
    /// Number of tokens (public).
    pub len: usize,
}

/// What the client learns (the server learns `Output::Nothing`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Output {
    /// L2-normalised sentence embedding.
    Embedding(Vec<f32>),
    /// Classifier logits.
    Logits(Vec<f32>),
    /// Generated token ids.
    Tokens(Vec<u32>),
    /// This party learns nothing (the server, by default).
    Nothing,
    /// The outputs of a [`Task::Batch`], one per input in order.
    Batch(Vec<Output>),
}

/// Any supported architecture, ready to run over an [`Engine`].
pub enum SecureModel<'w> {
    Bert(SecureBert<'w>),
    Gpt2(SecureGpt2<'w>),
    Llama(SecureLlama<'w>),
    Vit(SecureVit<'w>),
}

impl<'w> SecureModel<'w> {
    /// The model of `config` with the server's `weights` (`None` on the client).
    pub fn new(
        config: &ModelConfig,
        weights: Option<&'w dyn WeightSource>,
    ) -> Result<Self, SecureError> {
        let stack = Stack::new(weights);
        // The block's activation must have a protocol before any key is generated.
        block::check_activation(match config {
            ModelConfig::Bert(c) => c.hidden_act,
            ModelConfig::Gpt2(c) => c.activation_function,
            ModelConfig::Llama(c) => c.hidden_act,
            ModelConfig::Vit(c) => c.hidden_act,
        })?;
        Ok(match config {
            ModelConfig::Bert(c) => SecureModel::Bert(SecureBert::new(c.clone(), stack)?),
            ModelConfig::Gpt2(c) => SecureModel::Gpt2(SecureGpt2::new(c.clone(), stack)?),
            ModelConfig::Llama(c) => SecureModel::Llama(SecureLlama::new(c.clone(), stack)?),
            ModelConfig::Vit(c) => SecureModel::Vit(SecureVit::new(c.clone(), stack)?),
        })
    }

    fn stack_mut(&mut self) -> &mut Stack<'w> {
        match self {
            SecureModel::Bert(m) => &mut m.stack,
            SecureModel::Gpt2(m) => &mut m.stack,
            SecureModel::Llama(m) => &mut m.stack,
            SecureModel::Vit(m) => &mut m.stack,
        }
    }

    /// Reports progress after each transformer block (e.g. a progress line on stderr).
    pub fn with_progress(mut self, p: Progress<'w>) -> Self {
        self.stack_mut().progress = Some(p);
        self
    }

    /// Runs at most `max` transformer blocks (`None`: all); for per-layer benchmarks.
    pub fn with_max_layers(mut self, max: Option<usize>) -> Self {
        self.stack_mut().max_layers = max;
        self
    }

    /// Checks a query's public fields against the model before anything is allocated, sent or
    /// computed: the task fits the architecture, `1 <= len <= positions` (ViT: `len` is its
    /// fixed row count), and a generation fits the context window, `len + n_new <= positions`.
    /// The server calls this on every query it receives (the fields come from the network).
    pub fn check_query(&self, q: &Query) -> Result<(), SecureError> {
        let bad = |m: String| Err(ModelError::Input(m).into());
        if let Task::Batch { each, lens } = &q.task {
            return self.check_batch(each, lens, q.len);
        }
        let (positions, n_new) = match (self, &q.task) {
            (SecureModel::Bert(m), Task::Embed | Task::Classify) => {
                (m.config.max_position_embeddings, 0)
            }
            (SecureModel::Gpt2(m), Task::Generate { n_new } | Task::Chat { n_new, .. }) => (m.config.n_positions, *n_new),
            (SecureModel::Llama(m), Task::Generate { n_new } | Task::Chat { n_new, .. }) => {
                (m.config.max_position_embeddings, *n_new)
            }
            (SecureModel::Vit(m), Task::Classify) => {
                if q.len != m.seq_len() {
                    return bad(format!(
                        "an image query has {} rows, not {}",
                        m.seq_len(),
                        q.len
                    ));
                }
                return Ok(());
            }
            (_, t) => {
                return Err(SecureError::Unsupported(format!(
                    "task {t:?} for this architecture"
                )))
            }
        };
        if q.len == 0 {
            return bad("empty token sequence".into());
        }
        if q.len > positions {
            return bad(format!(
                "{} tokens exceed the {positions} positions of the model",
                q.len
            ));
        }
        if n_new > positions - q.len {
            return bad(format!(
                "n_new {n_new} after {} prompt tokens exceeds the context window of {positions} positions",
                q.len
            ));
        }
        Ok(())
    }

    /// [`SecureModel::check_query`] of a [`Task::Batch`]: a BERT model, `each` an embedding or
    /// a classification, `1..=`[`MAX_BATCH_INPUTS`] inputs of `1..=positions` tokens, summing
    /// to `len`.
    fn check_batch(&self, each: &Task, lens: &[usize], len: usize) -> Result<(), SecureError> {
        let bad = |m: String| Err(ModelError::Input(m).into());
        let SecureModel::Bert(m) = self else {
            return Err(SecureError::Unsupported("a batch of inputs needs an encoder (BERT); decoders and ViT run one input per query".into()));
        };
        if !matches!(each, Task::Embed | Task::Classify) {
            return Err(SecureError::Unsupported(format!("a batch of {each:?} (batches embed or classify)")));
        }
        if lens.is_empty() || lens.len() > MAX_BATCH_INPUTS {
            return bad(format!("a batch of {} inputs (1 to {MAX_BATCH_INPUTS})", lens.len()));
        }
        let positions = m.config.max_position_embeddings;
        if let Some(l) = lens.iter().find(|&&l| l == 0 || l > positions) {
            return bad(format!("a batch input of {l} tokens (1 to the model's {positions} positions)"));
        }
        if lens.iter().sum::<usize>() != len {
            return bad(format!("a batch of {} tokens announced as {len}", lens.iter().sum::<usize>()));
        }
        Ok(())
    }

    /// Runs `q` (checked first by [`SecureModel::check_query`]); returns what this party learns.
    ///
    /// ViT: `Task::Classify` runs the image classifier; the server may call this (its query
    /// carries no input), the client must call [`SecureModel::run_image`] with its pixels.
    pub fn run<E: Engine>(&self, e: &mut E, q: &Query) -> Result<Output, SecureError> {
        if !matches!(self, SecureModel::Vit(_)) {
            self.check_query(q)?;
        }
        match (self, &q.task) {
            (SecureModel::Bert(m), Task::Embed) => Ok(m
                .embed(e, q.ids.as_deref(), q.len)?
                .map_or(Output::Nothing, Output::Embedding)),
            (SecureModel::Bert(m), Task::Classify) => Ok(m
                .classify(e, q.ids.as_deref(), q.len)?
                .map_or(Output::Nothing, Output::Logits)),
            (SecureModel::Gpt2(m), Task::Generate { n_new }) => Ok(m
                .generate(e, q.ids.as_deref(), q.len, *n_new)?
                .map_or(Output::Nothing, Output::Tokens)),
            (SecureModel::Llama(m), Task::Generate { n_new }) => Ok(m
                .generate(e, q.ids.as_deref(), q.len, *n_new)?
                .map_or(Output::Nothing, Output::Tokens)),
            (SecureModel::Vit(_), Task::Classify) => self.run_image(e, None),
            (SecureModel::Bert(m), Task::Batch { each, lens }) => {
                let ids = q.ids.as_deref();
                let outs = match **each {
                    Task::Embed => m.embed_batch(e, ids, lens)?.map(|v| v.into_iter().map(Output::Embedding).collect()),
                    _ => m.classify_batch(e, ids, lens)?.map(|v| v.into_iter().map(Output::Logits).collect()),
                };
                Ok(outs.map_or(Output::Nothing, Output::Batch))
            }
            (_, t) => Err(SecureError::Unsupported(format!(
                "task {t:?} for this architecture"
            ))),
        }
    }
}

impl SecureModel<'_> {
    /// The session setup's transfers of the model's static tables, run by both parties once
    /// right after [`SecureEngine::setup`], before any query: the token table of an `embed`
    /// protocol with a lookup (`nimbus-cop`: the encrypted table, about 0.5 GB for SmolLM2
    /// unless the client's weight cache holds it), which the first query would otherwise send.
    /// A no-op for other suites and for ViT.
    pub fn preload<E: Engine>(&self, e: &mut E) -> Result<(), SecureError> {
        let (src, table) = match self {
            SecureModel::Bert(m) => (m.stack.weights, crate::bert::Tensors::new(&m.config, m.stack.weights)?.word),
            SecureModel::Gpt2(m) => (m.stack.weights, crate::gpt2::Tensors::new(&m.config).wte),
            SecureModel::Llama(m) => (m.stack.weights, crate::llama::Tensors::new(&m.config, m.stack.weights).embed),
            SecureModel::Vit(_) => return Ok(()),
        };
        block::preload_lookup(e, src, &table)
    }

    /// An empty KV cache for this model's conversations ([`Task::Chat`]).
    pub fn new_cache<V>(&self) -> KvCache<V> {
        match self {
            SecureModel::Gpt2(m) => m.new_cache(),
            SecureModel::Llama(m) => m.new_cache(),
            SecureModel::Bert(_) | SecureModel::Vit(_) => KvCache::new(0),
        }
    }

    /// Checks a conversation turn against the positions `cached` from earlier turns (the
    /// whole context window bounds them; a clear error past it), then as
    /// [`SecureModel::check_query`].
    pub fn check_turn(&self, q: &Query, cached: usize) -> Result<(), SecureError> {
        self.check_query(q)?;
        let Task::Chat { n_new, reset } = q.task else { return Ok(()) };
        if n_new == 0 {
            return Err(ModelError::Input("a conversation turn generates at least one token".into()).into());
        }
        let positions = match self {
            SecureModel::Gpt2(m) => m.config.n_positions,
            SecureModel::Llama(m) => m.config.max_position_embeddings,
            _ => return Ok(()),
        };
        let before = if reset { 0 } else { cached };
        if before + q.len + n_new > positions {
            return Err(ModelError::Input(format!(
                "the conversation would reach {} positions ({before} kept, {} new, {n_new} to generate), past the context window of {positions}: start a new one (reset)",
                before + q.len + n_new,
                q.len
            ))
            .into());
        }
        Ok(())
    }

    /// Runs `q` as [`SecureModel::run`] does, and generations with `on_token` told each token
    /// as the client learns it (streaming; the server passes `None`); [`Task::Chat`] continues
    /// the conversation in `cache` (kept across turns).
    pub fn run_turn<E: Engine>(
        &self,
        e: &mut E,
        q: &Query,
        cache: &mut KvCache<E::Val>,
        on_token: Option<&mut dyn FnMut(u32) -> bool>,
    ) -> Result<Output, SecureError> {
        let (n_new, stoppable) = match q.task {
            Task::Generate { n_new } => (n_new, false),
            Task::Chat { n_new, reset } => {
                self.check_turn(q, cache.len())?;
                if reset {
                    *cache = self.new_cache();
                }
                (n_new, true)
            }
            _ => return self.run(e, q),
        };
        self.check_query(q)?;
        let mut d = crate::arch::Decode { on_token, stoppable };
        let mut fresh;
        let cache = if stoppable {
            cache
        } else {
            fresh = self.new_cache();
            &mut fresh
        };
        let ids = q.ids.as_deref();
        let out = match self {
            SecureModel::Gpt2(m) => m.generate_in(e, cache, ids, q.len, n_new, &mut d)?,
            SecureModel::Llama(m) => m.generate_in(e, cache, ids, q.len, n_new, &mut d)?,
            _ => return Err(SecureError::Unsupported(format!("task {:?} for this architecture", q.task))),
        };
        Ok(out.map_or(Output::Nothing, Output::Tokens))
    }
}

impl SecureModel<'_> {
    /// Classifies an image (ViT): the client passes its normalised `[C, H, W]` pixels
    /// (`Some`; the twin too), the server `None`. Returns `Output::Logits` on the client,
    /// `Output::Nothing` on the server. The number of rows is public (fixed by the config's
    /// image size), so no length is exchanged.
    pub fn run_image<E: Engine>(
        &self,
        e: &mut E,
        pixels: Option<&[f32]>,
    ) -> Result<Output, SecureError> {
        match self {
            SecureModel::Vit(m) => Ok(m
                .classify(e, pixels)?
                .map_or(Output::Nothing, Output::Logits)),
            _ => Err(SecureError::Unsupported(
                "image input needs a ViT model".into(),
            )),
        }
    }
}

/// What every architecture holds besides its config: the server's weights (`None` on the
/// client), a block limit and a progress callback.
pub struct Stack<'w> {
    pub(crate) weights: Option<&'w dyn WeightSource>,
    pub(crate) max_layers: Option<usize>,
    pub(crate) progress: Option<Progress<'w>>,
}

impl<'w> Stack<'w> {
    pub(crate) fn new(weights: Option<&'w dyn WeightSource>) -> Self {
        Stack {
            weights,
            max_layers: None,
            progress: None,
        }
    }

    /// Blocks to run of a model with `total`.
    pub(crate) fn layers(&self, total: usize) -> usize {
        self.max_layers.map_or(total, |m| m.min(total))
    }

    /// Fails unless the server's weights hold every tensor of `decls`.
    pub(crate) fn require(&self, decls: &[crate::arch::Decl]) -> Result<(), SecureError> {
        if let Some(w) = self.weights {
            for (name, _) in decls.iter().flat_map(|d| d.expected()) {
                if !w.contains(&name) {
                    return Err(SecureError::Role(format!(
                        "the server's weights lack \"{name}\""
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Client-side check of its own ids (the server cannot check what it does not see).
pub(crate) fn check_ids(
    ids: Option<&[u32]>,
    len: usize,
    vocab: usize,
    max_pos: usize,
) -> Result<(), SecureError> {
    if len == 0 {
        return Err(ModelError::Input("empty token sequence".into()).into());
    }
    if len > max_pos {
        return Err(ModelError::Input(format!(
            "{len} tokens exceed the {max_pos} positions of the model"
        ))
        .into());
    }
    if let Some(ids) = ids {
        if ids.len() != len {
            return Err(SecureError::Role(format!(
                "{} ids for a query of {len} tokens",
                ids.len()
            )));
        }
        if let Some(&t) = ids.iter().find(|&&t| t as usize >= vocab) {
            return Err(ModelError::Input(format!("token id {t} >= vocab_size {vocab}")).into());
        }
    }
    Ok(())
}
