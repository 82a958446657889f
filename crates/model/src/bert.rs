//! Plaintext BERT encoder (Devlin et al.; HF `BertModel`), the reference the secure BERT is
//! checked against.
//!
//! Post-LN blocks: `x = LN(x + Attn(x))`, `x = LN(x + W2 act(W1 x))`; embeddings are word +
//! absolute position + token type, then LayerNorm. Sentence embeddings follow
//! sentence-transformers: mean of the last hidden states over the attention mask, then L2
//! normalisation. When the checkpoint has them, the pooler (`tanh(W h_CLS)`) and the
//! classifier head of `BertForSequenceClassification` are loaded as well.

use crate::arch::{classifier_labels, output, ArchOps, ArchTensors, Decl, DenseDecl, NormDecl, TableDecl};
use crate::block::{
    run_blocks, BlockConfig, BlockNames, FfnKind, Layout, NormKind, Placement, Rows,
};
use crate::config::BertConfig;
use crate::reference::{BlockWeights, F32Block, Observer};
use crate::weights::WeightSource;
use crate::weights::Weights;
use crate::ModelError;

/// The block of a BERT config: post-LN, bidirectional, plain FFN, biases, `nn.Linear` layout.
pub fn block_config(c: &BertConfig) -> BlockConfig {
    BlockConfig {
        hidden: c.hidden_size,
        heads: c.num_attention_heads,
        kv_heads: c.num_attention_heads,
        intermediate: c.intermediate_size,
        norm: NormKind::LayerNorm,
        eps: c.layer_norm_eps,
        placement: Placement::Post,
        causal: false,
        rope_theta: None,
        ffn: FfnKind::Plain,
        activation: c.hidden_act,
        bias: true,
        layout: Layout::OutIn,
    }
}

/// The checkpoint names of BERT block `l` (HF `BertModel`).
pub fn block_names(l: usize) -> BlockNames {
    let p = format!("encoder.layer.{l}");
    BlockNames {
        norm1: format!("{p}.attention.output.LayerNorm"),
        norm2: format!("{p}.output.LayerNorm"),
        qkv: ["query", "key", "value"]
            .iter()
            .map(|m| format!("{p}.attention.self.{m}"))
            .collect(),
        o: format!("{p}.attention.output.dense"),
        ffn_in: vec![format!("{p}.intermediate.dense")],
        ffn_out: format!("{p}.output.dense"),
    }
}

/// The tensors of BERT's embeddings and heads (HF `BertModel`, and the pooler and classifier
/// of `BertForSequenceClassification` when the checkpoint has them).
#[derive(Clone, Debug)]
pub struct Tensors {
    pub word: DenseDecl,
    pub position: TableDecl,
    pub token_type: TableDecl,
    pub norm: NormDecl,
    /// `(pooler, classifier)`.
    pub head: Option<(DenseDecl, DenseDecl)>,
}

impl Tensors {
    /// The tensors of `c`; the head when `w` has one (without weights, the client: when the
    /// config names labels).
    pub fn new(c: &BertConfig, w: Option<&dyn WeightSource>) -> Result<Self, ModelError> {
        let h = c.hidden_size;
        let pooler = w.is_none_or(|w| w.contains("pooler.dense.weight"));
        let labels = if pooler { classifier_labels(w, c.num_labels)? } else { None };
        Ok(Tensors {
            word: DenseDecl::table("embeddings.word_embeddings", c.vocab_size, h),
            position: TableDecl::new("embeddings.position_embeddings.weight", &[c.max_position_embeddings, h]),
            token_type: TableDecl::new("embeddings.token_type_embeddings.weight", &[c.type_vocab_size, h]),
            norm: NormDecl { name: "embeddings.LayerNorm".into(), kind: NormKind::LayerNorm, dim: h },
            head: labels.map(|k| {
                (
                    DenseDecl::new("pooler.dense", h, h, Layout::OutIn, true),
                    DenseDecl::new("classifier", h, k, Layout::OutIn, true),
                )
            }),
        })
    }
}

impl ArchTensors for Tensors {
    fn embeddings(&self) -> Vec<Decl> {
        vec![
            Decl::Dense(self.word.clone()),
            Decl::Table(self.position.clone()),
            Decl::Table(self.token_type.clone()),
            Decl::Norm(self.norm.clone()),
        ]
    }
    fn heads(&self) -> Vec<Decl> {
        self.head
            .iter()
            .flat_map(|(p, c)| [Decl::Dense(p.clone()), Decl::Dense(c.clone())])
            .collect()
    }
}

/// BERT's embeddings (`[n, hidden]`, `n = positions.len()`): word (the client's ids against
/// the server's table) + absolute position (`positions`, public: `0..n`, or each input's
/// `0..n_s` in a batch) + token type (`type_ids`, public: the engines run single-segment
/// queries, type 0), then LayerNorm.
pub fn embeddings<O: ArchOps>(
    o: &mut O,
    cfg: &BlockConfig,
    t: &Tensors,
    ids: Option<&[u32]>,
    type_ids: &[usize],
    positions: &[usize],
) -> Result<O::Val, O::Error> {
    let n = positions.len();
    let x = o.step("embed", |o| {
        let words = o.lookup(&t.word, ids, n)?;
        let pos = o.server_rows(&[(&t.position, positions)])?;
        let x = o.add(&words, &pos)?;
        let typ = o.server_rows(&[(&t.token_type, type_ids)])?;
        o.add(&x, &typ)
    })?;
    o.norm(cfg, &t.norm.name, &x, n)
}

/// Sentence embedding (sentence-transformers): the mean of the hidden rows (`[n, hidden]`)
/// over `mask`, revealed to the client, who L2-normalises it (normalising a vector it already
/// holds leaks nothing more).
pub fn mean_pool<O: ArchOps>(
    o: &mut O,
    hidden: &O::Val,
    (n, width): (usize, usize),
    mask: Option<&[bool]>,
) -> Result<Option<Vec<f32>>, O::Error> {
    let pooled = o.step("pool", |o| o.mean_rows(hidden, n, width, mask))?;
    let opened = o.step("output", |o| o.reveal(&pooled))?;
    Ok(opened.map(|m| l2_normalised(&m)))
}

fn l2_normalised(m: &[f64]) -> Vec<f32> {
    let norm = m.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
    m.iter().map(|v| (v / norm) as f32).collect()
}

/// [`mean_pool`] of each input of a batch (issue 52; `hidden` holds `lens[0]` rows of the
/// first input, then the next's): one pooling and one opening for all.
pub fn mean_pool_batch<O: ArchOps>(
    o: &mut O,
    hidden: &O::Val,
    lens: &[usize],
    width: usize,
) -> Result<Option<Vec<Vec<f32>>>, O::Error> {
    let pooled = o.step("pool", |o| o.mean_segments(hidden, lens, width))?;
    let opened = o.step("output", |o| o.reveal(&pooled))?;
    Ok(opened.map(|m| m.chunks(width.max(1)).map(l2_normalised).collect()))
}

/// Classifier logits (`BertForSequenceClassification`: pooler `tanh(W h_CLS + b)` on the
/// `[CLS]` row, then the classifier), revealed to the client.
pub fn classify<O: ArchOps>(
    o: &mut O,
    heads: (&DenseDecl, &DenseDecl),
    hidden: &O::Val,
) -> Result<Option<Vec<f32>>, O::Error> {
    Ok(classify_rows(o, heads, hidden, &[0])?.and_then(|mut v| v.pop()))
}

/// [`classify`] of each input of a batch, whose `[CLS]` rows are `cls_rows`: one pooler, one
/// classifier and one opening for all.
pub fn classify_rows<O: ArchOps>(
    o: &mut O,
    (pooler, classifier): (&DenseDecl, &DenseDecl),
    hidden: &O::Val,
    cls_rows: &[usize],
) -> Result<Option<Vec<Vec<f32>>>, O::Error> {
    let b = cls_rows.len();
    let logits = o.step("classifier", |o| {
        let cls = o.pick_rows(hidden, cls_rows, pooler.in_dim)?;
        let p = o.dense(pooler, &cls, b)?;
        let t = o.tanh(&p)?;
        o.dense(classifier, &t, b)
    })?;
    let k = classifier.out_dim.max(1);
    Ok(output(o, &logits)?.map(|v| v.chunks(k).map(|c| c.to_vec()).collect()))
}

/// The positions of a batch's rows: each input's `0..n_s`, one after another.
pub fn batch_positions(lens: &[usize]) -> Vec<usize> {
    lens.iter().flat_map(|&l| 0..l).collect()
}


/// BERT encoder with its weights in memory (f32).
#[derive(Debug, Clone)]
pub struct Bert {
    pub config: BertConfig,
    tensors: Tensors,
    weights: BlockWeights,
}

impl Bert {
    /// Loads the weights named as in HF `BertModel` (optionally under `bert.`).
    pub fn load(config: &BertConfig, w: &Weights) -> Result<Self, ModelError> {
        let c = config;
        let mut weights = BlockWeights::load(w, &block_config(c), block_names, c.num_hidden_layers)?;
        let tensors = Tensors::new(c, Some(w)).map_err(|e| ModelError::weights(w.path(), e.to_string()))?;
        weights.load_decls(w, &tensors.all())?;
        Ok(Bert { config: c.clone(), tensors, weights })
    }

    /// Whether a pooler + classifier head was loaded.
    pub fn has_classifier(&self) -> bool {
        self.tensors.head.is_some()
    }

    fn check_ids(&self, ids: &[u32], type_ids: &[u32], mask: &[u32]) -> Result<(), ModelError> {
        let c = &self.config;
        if ids.is_empty() {
            return Err(ModelError::Input("empty token sequence".into()));
        }
        if ids.len() > c.max_position_embeddings {
            return Err(ModelError::Input(format!(
                "{} tokens exceed max_position_embeddings = {}",
                ids.len(),
                c.max_position_embeddings
            )));
        }
        if type_ids.len() != ids.len() || mask.len() != ids.len() {
            return Err(ModelError::Input(
                "ids, type ids and attention mask differ in length".into(),
            ));
        }
        if let Some(&t) = ids.iter().find(|&&t| t as usize >= c.vocab_size) {
            return Err(ModelError::Input(format!(
                "token id {t} >= vocab_size {}",
                c.vocab_size
            )));
        }
        if let Some(&t) = type_ids.iter().find(|&&t| t as usize >= c.type_vocab_size) {
            return Err(ModelError::Input(format!(
                "token type {t} >= type_vocab_size {}",
                c.type_vocab_size
            )));
        }
        Ok(())
    }

    /// Last hidden states `[n, hidden]` for one sequence. `mask[j] = 0` marks padding keys.
    pub fn forward(
        &self,
        ids: &[u32],
        type_ids: &[u32],
        mask: &[u32],
    ) -> Result<Vec<f32>, ModelError> {
        self.forward_observed(ids, type_ids, mask, None)
    }

    /// [`Bert::forward`], telling `observe` what [`F32Block::observe`] sees.
    pub fn forward_observed(
        &self,
        ids: &[u32],
        type_ids: &[u32],
        mask: &[u32],
        observe: Option<Observer<'_>>,
    ) -> Result<Vec<f32>, ModelError> {
        self.check_ids(ids, type_ids, mask)?;
        let c = &self.config;
        let n = ids.len();
        let mut ops = F32Block { observe, ..F32Block::new(&self.weights) };
        let cfg = block_config(c);
        let types: Vec<usize> = type_ids.iter().map(|&t| t as usize).collect();
        let positions: Vec<usize> = (0..n).collect();
        let x = embeddings(&mut ops, &cfg, &self.tensors, Some(ids), &types, &positions)?;
        let key_mask: Vec<bool> = mask.iter().map(|&m| m != 0).collect();
        let rows = Rows {
            n,
            key_mask: Some(&key_mask),
            segments: None,
        };
        run_blocks(&mut ops, &cfg, block_names, c.num_hidden_layers, x, rows, None, None)
    }

    /// Convenience: single segment, no padding.
    pub fn forward_ids(&self, ids: &[u32]) -> Result<Vec<f32>, ModelError> {
        let zeros = vec![0u32; ids.len()];
        let ones = vec![1u32; ids.len()];
        self.forward(ids, &zeros, &ones)
    }

    /// sentence-transformers embedding: mean pooling over `mask`, then L2 normalisation.
    pub fn embed(
        &self,
        ids: &[u32],
        type_ids: &[u32],
        mask: &[u32],
    ) -> Result<Vec<f32>, ModelError> {
        let hidden = self.forward(ids, type_ids, mask)?;
        let key_mask: Vec<bool> = mask.iter().map(|&m| m != 0).collect();
        let mut ops = F32Block::new(&self.weights);
        let pooled = mean_pool(&mut ops, &hidden, (ids.len(), self.config.hidden_size), Some(&key_mask))?;
        pooled.ok_or_else(|| ModelError::Input("the embedding was not opened".into()))
    }

    /// [`Bert::embed`] for a single segment without padding.
    pub fn embed_ids(&self, ids: &[u32]) -> Result<Vec<f32>, ModelError> {
        let zeros = vec![0u32; ids.len()];
        let ones = vec![1u32; ids.len()];
        self.embed(ids, &zeros, &ones)
    }

    /// Classifier logits (`BertForSequenceClassification`: pooler on `[CLS]`, then linear).
    pub fn classify_ids(&self, ids: &[u32]) -> Result<Vec<f32>, ModelError> {
        let Some((pooler, cls)) = &self.tensors.head else {
            return Err(ModelError::Unsupported(
                "this checkpoint has no pooler/classifier weights".into(),
            ));
        };
        let hidden = self.forward_ids(ids)?;
        let mut ops = F32Block::new(&self.weights);
        classify(&mut ops, (pooler, cls), &hidden)?
            .ok_or_else(|| ModelError::Input("the logits were not opened".into()))
    }
}
