//! Plaintext BERT encoder (Devlin et al.; HF `BertModel`), the reference the secure BERT is
//! checked against.
//!
//! Post-LN blocks: `x = LN(x + Attn(x))`, `x = LN(x + W2 act(W1 x))`; embeddings are word +
//! absolute position + token type, then LayerNorm. Sentence embeddings follow
//! sentence-transformers: mean of the last hidden states over the attention mask, then L2
//! normalisation. When the checkpoint has them, the pooler (`tanh(W h_CLS)`) and the
//! classifier head of `BertForSequenceClassification` are loaded as well.

use crate::block::{
    run_blocks, BlockConfig, BlockNames, FfnKind, Layout, NormKind, Placement, Rows,
};
use crate::config::BertConfig;
use crate::reference::{BlockWeights, Dense, F32Block, Norm};
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

/// BERT encoder with its weights in memory (f32).
#[derive(Debug, Clone)]
pub struct Bert {
    pub config: BertConfig,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    emb_ln: Norm,
    blocks: BlockWeights,
    pooler: Option<Dense>,
    classifier: Option<Dense>,
}

impl Bert {
    /// Loads the weights named as in HF `BertModel` (optionally under `bert.`).
    pub fn load(config: &BertConfig, w: &Weights) -> Result<Self, ModelError> {
        let c = config;
        let h = c.hidden_size;
        let blocks = BlockWeights::load(w, &block_config(c), block_names, c.num_hidden_layers)?;
        let pooler = if w.contains("pooler.dense.weight") {
            Some(Dense::load(w, "pooler.dense", h, h, Layout::OutIn, true)?)
        } else {
            None
        };
        let classifier = match (w.shape("classifier.weight"), &pooler) {
            (Some(s), Some(_)) if s.len() == 2 => Some(Dense::load(w, "classifier", h, s[0], Layout::OutIn, true)?),
            _ => None,
        };
        if let (Some(cls), Some(n)) = (&classifier, c.num_labels) {
            if cls.out_dim != n {
                return Err(ModelError::weights(
                    w.path(),
                    format!(
                        "tensor \"classifier.weight\" has {} outputs but config names {n} labels",
                        cls.out_dim
                    ),
                ));
            }
        }
        Ok(Bert {
            config: c.clone(),
            word: w.tensor("embeddings.word_embeddings.weight", &[c.vocab_size, h])?,
            position: w.tensor(
                "embeddings.position_embeddings.weight",
                &[c.max_position_embeddings, h],
            )?,
            token_type: w.tensor(
                "embeddings.token_type_embeddings.weight",
                &[c.type_vocab_size, h],
            )?,
            emb_ln: Norm::load(w, "embeddings.LayerNorm", h, NormKind::LayerNorm)?,
            blocks,
            pooler,
            classifier,
        })
    }

    /// Whether a pooler + classifier head was loaded.
    pub fn has_classifier(&self) -> bool {
        self.classifier.is_some()
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
        self.check_ids(ids, type_ids, mask)?;
        let c = &self.config;
        let (n, h) = (ids.len(), c.hidden_size);
        let mut x = vec![0f32; n * h];
        for (i, (&t, &tt)) in ids.iter().zip(type_ids).enumerate() {
            let row = &mut x[i * h..(i + 1) * h];
            let (t, tt) = (t as usize, tt as usize);
            let word = &self.word[t * h..(t + 1) * h];
            let pos = &self.position[i * h..(i + 1) * h];
            let typ = &self.token_type[tt * h..(tt + 1) * h];
            for (k, r) in row.iter_mut().enumerate() {
                *r = word[k] + pos[k] + typ[k];
            }
        }
        self.emb_ln.apply(&mut x, c.layer_norm_eps);
        let key_mask: Vec<bool> = mask.iter().map(|&m| m != 0).collect();
        let rows = Rows {
            n,
            key_mask: Some(&key_mask),
        };
        let mut ops = F32Block {
            weights: &self.blocks,
        };
        let cfg = block_config(c);
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
        Ok(mean_pool_normalize(&hidden, mask, self.config.hidden_size))
    }

    /// [`Bert::embed`] for a single segment without padding.
    pub fn embed_ids(&self, ids: &[u32]) -> Result<Vec<f32>, ModelError> {
        let zeros = vec![0u32; ids.len()];
        let ones = vec![1u32; ids.len()];
        self.embed(ids, &zeros, &ones)
    }

    /// Classifier logits (`BertForSequenceClassification`: pooler on `[CLS]`, then linear).
    pub fn classify_ids(&self, ids: &[u32]) -> Result<Vec<f32>, ModelError> {
        let (Some(pooler), Some(cls)) = (&self.pooler, &self.classifier) else {
            return Err(ModelError::Unsupported(
                "this checkpoint has no pooler/classifier weights".into(),
            ));
        };
        let hidden = self.forward_ids(ids)?;
        let mut p = pooler.apply(&hidden[..self.config.hidden_size], 1);
        p.iter_mut().for_each(|v| *v = v.tanh());
        Ok(cls.apply(&p, 1))
    }
}

/// Mean of the rows of `hidden` (`[n, d]`) whose mask is non-zero, L2-normalised.
pub fn mean_pool_normalize(hidden: &[f32], mask: &[u32], d: usize) -> Vec<f32> {
    let mut sum = vec![0f64; d];
    let mut count = 0f64;
    for (row, &m) in hidden.chunks(d).zip(mask) {
        if m != 0 {
            count += 1.0;
            for (s, &v) in sum.iter_mut().zip(row) {
                *s += v as f64;
            }
        }
    }
    let count = count.max(1e-9); // sentence-transformers clamps the token count likewise
    let mean: Vec<f64> = sum.iter().map(|s| s / count).collect();
    let norm = mean.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
    mean.iter().map(|v| (v / norm) as f32).collect()
}
