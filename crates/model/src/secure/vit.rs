//! Secure ViT (BumbleBee §VII-B, the ViT-base rows of Table VI): the computation of
//! [`crate::vit::Vit`] on an [`Engine`]; the client's image is its private input, the server's
//! weights are its.
//!
//! Patch embedding: the client cuts its normalised `[C, H, W]` pixels into the patch matrix
//! `[P, C·p·p]` in plaintext ([`crate::vit::patchify`]; the order of the convolution weight),
//! encodes it at the fixed-point format and inputs it as its share (the server's is zero). The
//! stride-`p` convolution is then one weight product, patches × the server's projection
//! `[C·p·p, hidden]` — the same `matmul_weight` (one OLT) as every linear layer — truncated once,
//! plus the server's bias. The `[CLS]` row and the position embeddings are the server's and
//! enter its share locally (no communication): row 0 is `cls + pos_0`, rows `1..=P` are the
//! patch embeddings plus `pos_1..pos_P`.
//!
//! Pre-LN blocks of [`crate::secure::block`] as in HF `ViTLayer`: `x += Attn(LN_before(x))`
//! with a fused `Q|K|V` projection (`1/√dh` folded into the server's `W_q`, `b_q`) and no mask
//! (every image has the same public number of rows, `P + 1`), `x += W2 gelu(W1 LN_after(x))`
//! with the suite's GeLU (approximating HF's exact `gelu`).
//!
//! Output: [`SecureVit::classify`] takes the `[CLS]` row, applies the final LayerNorm to that
//! row only (LayerNorm is row-wise and the head reads nothing else), the classifier, and
//! reveals the logits **to the client only** — the same convention as the BERT classifier.
//! [`SecureVit::features`] reveals the final-LayerNorm `[CLS]` row instead (checkpoints
//! without a head, `ViTModel`).
//!
//! Public: the architecture, the image size (hence the `P + 1` rows), the fixed-point format.
//! Cost per inference: one OLT for the patch embedding (`P × C·p·p × hidden`), then per block
//! what a BERT block on `P + 1` tokens costs (ViT-base: 197 rows).

use crate::arch::ArchTensors;
use crate::block::BlockOps;
use crate::config::VitConfig;
use crate::secure::block::{run_blocks, EngineBlock};
use crate::secure::engine::Engine;
use crate::secure::{SecureError, Stack};
use crate::arch::output;
use crate::vit::{classify, cls_features, embeddings, num_patches, Tensors};

/// ViT over an engine; the server holds the weights, the client none.
pub struct SecureVit<'w> {
    pub config: VitConfig,
    pub(crate) stack: Stack<'w>,
}

impl<'w> SecureVit<'w> {
    /// The model; fails if the server's weights lack the embeddings or contradict the config.
    pub(crate) fn new(config: VitConfig, stack: Stack<'w>) -> Result<Self, SecureError> {
        stack.require(&Tensors::new(&config, stack.weights)?.embeddings())?;
        Ok(SecureVit { config, stack })
    }

    /// Number of rows of the sequence, `P + 1` (public).
    pub fn seq_len(&self) -> usize {
        num_patches(&self.config) + 1
    }

    /// Hidden states `[P + 1, hidden]` after the blocks, before the final LayerNorm.
    fn encode_image<E: Engine>(
        &self,
        e: &mut E,
        t: &Tensors,
        pixels: Option<&[f32]>,
    ) -> Result<E::Val, SecureError> {
        let src = self.stack.weights;
        let x = embeddings(&mut EngineBlock::new(e, src), &self.config, t, pixels)?;
        let layers = self.stack.layers(self.config.num_hidden_layers);
        run_blocks(
            e,
            src,
            &crate::vit::block_config(&self.config),
            crate::vit::block_names,
            layers,
            x,
            &[self.seq_len()],
            None,
            self.stack.progress.as_ref(),
            None,
        )
    }

    /// Final-LayerNorm hidden states `[P + 1, hidden]` as shares (row 0 is `[CLS]`).
    /// `pixels`: the client's (and the twin's) normalised `[C, H, W]` image.
    pub fn forward<E: Engine>(
        &self,
        e: &mut E,
        pixels: Option<&[f32]>,
    ) -> Result<E::Val, SecureError> {
        let src = self.stack.weights;
        let t = Tensors::new(&self.config, src)?;
        let x = self.encode_image(e, &t, pixels)?;
        let cfg = crate::vit::block_config(&self.config);
        EngineBlock::new(e, src).norm(&cfg, &t.norm.name, &x, self.seq_len())
    }

    /// The final-LayerNorm `[CLS]` row as shares.
    fn cls_features<E: Engine>(
        &self,
        e: &mut E,
        t: &Tensors,
        pixels: Option<&[f32]>,
    ) -> Result<E::Val, SecureError> {
        let x = self.encode_image(e, t, pixels)?;
        let cfg = crate::vit::block_config(&self.config);
        cls_features(&mut EngineBlock::new(e, self.stack.weights), &cfg, t, &x)
    }

    /// Classifier logits of the client's image, revealed to the client only: `Some(logits)`
    /// there (and on the twin), `None` on the server. The number of classes is the config's
    /// (public; both parties need it), checked against the server's head.
    pub fn classify<E: Engine>(
        &self,
        e: &mut E,
        pixels: Option<&[f32]>,
    ) -> Result<Option<Vec<f32>>, SecureError> {
        if self.config.num_labels.is_none() {
            return Err(SecureError::Unsupported(
                "this ViT config names no labels (no classifier head)".into(),
            ));
        }
        let t = Tensors::new(&self.config, self.stack.weights)?;
        let Some(head) = &t.classifier else {
            return Err(SecureError::Unsupported(
                "this ViT checkpoint has no classifier head".into(),
            ));
        };
        let cls = self.cls_features(e, &t, pixels)?;
        classify(&mut EngineBlock::new(e, self.stack.weights), head, &cls)
    }

    /// The final-LayerNorm `[CLS]` features (`[hidden]`), revealed to the client only.
    pub fn features<E: Engine>(
        &self,
        e: &mut E,
        pixels: Option<&[f32]>,
    ) -> Result<Option<Vec<f32>>, SecureError> {
        let t = Tensors::new(&self.config, self.stack.weights)?;
        let cls = self.cls_features(e, &t, pixels)?;
        output(&mut EngineBlock::new(e, self.stack.weights), &cls)
    }
}
