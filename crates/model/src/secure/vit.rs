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

use crate::config::VitConfig;
use crate::block::{Layout, NormKind, NO_SCALE};
use crate::secure::block::{named_norm, run_blocks};
use crate::secure::engine::{timed, Engine};
use crate::secure::layers::{encode, linear, load_dense, load_vec, take_rows, EncDense};
use crate::secure::{SecureError, Stack};
use crate::vit::{check_pixels, num_patches, patch_dim, patchify};
use crate::ModelError;
use nectar_net::Role;

const PROJ: &str = "embeddings.patch_embeddings.projection";
const CLS: &str = "embeddings.cls_token";
const POS: &str = "embeddings.position_embeddings";

/// ViT over an engine; the server holds the weights, the client none.
pub struct SecureVit<'w> {
    pub config: VitConfig,
    pub(crate) stack: Stack<'w>,
}

impl<'w> SecureVit<'w> {
    /// The model; fails if the server's weights lack the embeddings.
    pub(crate) fn new(config: VitConfig, stack: Stack<'w>) -> Result<Self, SecureError> {
        stack.require(&[&format!("{PROJ}.weight"), CLS, POS])?;
        Ok(SecureVit { config, stack })
    }



    /// Number of rows of the sequence, `P + 1` (public).
    pub fn seq_len(&self) -> usize {
        num_patches(&self.config) + 1
    }

    /// The client's patch matrix, encoded (`Some` on the client and the twin).
    fn client_patches<E: Engine>(
        &self,
        e: &E,
        pixels: Option<&[f32]>,
    ) -> Result<Option<Vec<u64>>, SecureError> {
        let client_has = e.role() == Role::Client || e.is_twin();
        if !client_has {
            return Ok(None);
        }
        let Some(px) = pixels else {
            return Err(SecureError::Role(
                "the client must provide its image's pixels (SecureModel::run_image)".into(),
            ));
        };
        check_pixels(&self.config, px)?;
        let fp = e.format();
        patchify(&self.config, px)
            .iter()
            .map(|&v| {
                fp.encode::<u64>(v as f64).map_err(|err| {
                    ModelError::Input(format!("pixel value {v} does not fit the format: {err}"))
                        .into()
                })
            })
            .collect::<Result<Vec<u64>, SecureError>>()
            .map(Some)
    }

    /// Embeddings `[P + 1, hidden]` as shares: `[cls; patches·W + b] + pos`.
    fn embed<E: Engine>(&self, e: &mut E, pixels: Option<&[f32]>) -> Result<E::Val, SecureError> {
        let c = &self.config;
        let (h, np, pd) = (c.hidden_size, num_patches(c), patch_dim(c));
        let fp = e.format();
        let src = self.stack.weights;
        let patches = self.client_patches(e, pixels)?;
        timed(e, "embed", |e| {
            let xp = e.client_input(patches.as_deref(), np * pd)?;
            // The convolution weight [hidden, C, p, p] is a [hidden, C·p·p] nn.Linear weight;
            // encode it as in × out.
            let proj = match src {
                None => None,
                Some(s) => {
                    let t = s.tensor(
                        &format!("{PROJ}.weight"),
                        &[h, c.num_channels, c.patch_size, c.patch_size],
                    )?;
                    let w = encode(
                        fp,
                        (0..pd * h).map(|q| t[(q % h) * pd + q / h] as f64),
                        PROJ,
                    )?;
                    let b = load_vec(src, fp, &format!("{PROJ}.bias"), h)?;
                    Some(EncDense { w, b })
                }
            };
            let emb = linear(e, &xp, np, pd, h, proj.as_ref(), true)?;
            // Server: row 0 = cls + pos_0, rows 1..=P: pos_i (added to the patch rows).
            let (first, rest) = match src {
                None => (None, None),
                Some(s) => {
                    let cls = s.tensor(CLS, &[1, 1, h])?;
                    let pos = s.tensor(POS, &[1, np + 1, h])?;
                    let first = encode(fp, (0..h).map(|k| cls[k] as f64 + pos[k] as f64), CLS)?;
                    let rest = encode(fp, pos[h..].iter().map(|&v| v as f64), POS)?;
                    (Some(first), Some(rest))
                }
            };
            let cls_row = e.server_input(first.as_deref(), h)?;
            let pos_rest = e.server_input(rest.as_deref(), np * h)?;
            let rows = e.add(&emb, &pos_rest)?;
            Ok(e.concat(&[&cls_row, &rows])?)
        })
    }

    /// Hidden states `[P + 1, hidden]` after the blocks, before the final LayerNorm.
    fn encode_image<E: Engine>(
        &self,
        e: &mut E,
        pixels: Option<&[f32]>,
    ) -> Result<E::Val, SecureError> {
        let x = self.embed(e, pixels)?;
        let layers = self.stack.layers(self.config.num_hidden_layers);
        run_blocks(
            e,
            self.stack.weights,
            &crate::vit::block_config(&self.config),
            crate::vit::block_names,
            layers,
            x,
            self.seq_len(),
            None,
            self.stack.progress.as_ref(),
        )
    }

    /// Final LayerNorm of `rows` rows.
    fn final_norm<E: Engine>(
        &self,
        e: &mut E,
        x: &E::Val,
        rows: usize,
    ) -> Result<E::Val, SecureError> {
        let h = self.config.hidden_size;
        named_norm(e, self.stack.weights, NormKind::LayerNorm, "layernorm", x, rows, h, self.config.layer_norm_eps)
    }

    /// Final-LayerNorm hidden states `[P + 1, hidden]` as shares (row 0 is `[CLS]`).
    /// `pixels`: the client's (and the twin's) normalised `[C, H, W]` image.
    pub fn forward<E: Engine>(
        &self,
        e: &mut E,
        pixels: Option<&[f32]>,
    ) -> Result<E::Val, SecureError> {
        let x = self.encode_image(e, pixels)?;
        self.final_norm(e, &x, self.seq_len())
    }

    /// The final-LayerNorm `[CLS]` row as shares.
    fn cls_features<E: Engine>(
        &self,
        e: &mut E,
        pixels: Option<&[f32]>,
    ) -> Result<E::Val, SecureError> {
        let x = self.encode_image(e, pixels)?;
        let cls = take_rows(e, &x, 0..1, self.config.hidden_size)?;
        self.final_norm(e, &cls, 1)
    }

    /// Number of classes: the config's (public; both parties need it), checked against the
    /// server's head.
    fn labels(&self) -> Result<usize, SecureError> {
        let Some(k) = self.config.num_labels else {
            return Err(SecureError::Unsupported(
                "this ViT config names no labels (no classifier head)".into(),
            ));
        };
        if let Some(w) = self.stack.weights {
            if !w.contains("classifier.weight") {
                return Err(SecureError::Unsupported(
                    "this ViT checkpoint has no classifier head".into(),
                ));
            }
            if let Some(s) = w.shape("classifier.weight") {
                if s.len() != 2 || s[0] != k || s[1] != self.config.hidden_size {
                    return Err(SecureError::Role(format!(
                        "classifier weight has shape {s:?}, config names {k} labels"
                    )));
                }
            }
        }
        Ok(k)
    }

    /// Classifier logits of the client's image, revealed to the client only: `Some(logits)`
    /// there (and on the twin), `None` on the server.
    pub fn classify<E: Engine>(
        &self,
        e: &mut E,
        pixels: Option<&[f32]>,
    ) -> Result<Option<Vec<f32>>, SecureError> {
        let h = self.config.hidden_size;
        let labels = self.labels()?;
        let fp = e.format();
        let src = self.stack.weights;
        let cls = self.cls_features(e, pixels)?;
        let logits = timed(e, "classifier", |e| {
            let w = load_dense(
                src,
                fp,
                "classifier",
                h,
                labels,
                Layout::OutIn,
                true,
                NO_SCALE,
            )?;
            linear(e, &cls, 1, h, labels, w.as_ref(), true)
        })?;
        self.open(e, &logits)
    }

    /// The final-LayerNorm `[CLS]` features (`[hidden]`), revealed to the client only.
    pub fn features<E: Engine>(
        &self,
        e: &mut E,
        pixels: Option<&[f32]>,
    ) -> Result<Option<Vec<f32>>, SecureError> {
        let cls = self.cls_features(e, pixels)?;
        self.open(e, &cls)
    }

    fn open<E: Engine>(&self, e: &mut E, x: &E::Val) -> Result<Option<Vec<f32>>, SecureError> {
        let opened = timed(e, "output", |e| Ok(e.reveal_to(x, Role::Client)?))?;
        Ok(opened.map(|v| {
            e.format()
                .decode_vec(&v)
                .iter()
                .map(|&x| x as f32)
                .collect()
        }))
    }
}
