//! Plaintext vision transformer (Dosovitskiy et al., ICLR'21; HF `ViTModel` /
//! `ViTForImageClassification`), the reference the secure ViT is checked against.
//!
//! Input: one image as normalised `f32` pixels `[C, H, W]` (channel-major, as a PyTorch
//! `pixel_values` tensor after the image processor; `H = W = image_size`). The image is cut into
//! `P = (image_size / patch_size)^2` non-overlapping patches in row-major patch order; each patch is
//! flattened as `(channel, row, column)` — the order of the patch-embedding convolution's weight
//! `[hidden, C, p, p]`, so that the stride-`p` convolution is exactly `patches · W^T + b` with
//! `W` read as `[hidden, C·p·p]`. A `[CLS]` row is prepended and the learned position embeddings
//! (`[P + 1, hidden]`) added. Pre-LN blocks: `x += Attn(LN_before(x))` (no mask),
//! `x += W2 gelu(W1 LN_after(x))`; a final LayerNorm; the classifier head reads the `[CLS]` row.
//!
//! Tensor names (under `vit.` in `ViTForImageClassification`): `embeddings.cls_token`
//! `[1, 1, h]`, `embeddings.position_embeddings` `[1, P + 1, h]`,
//! `embeddings.patch_embeddings.projection.{weight,bias}`,
//! `encoder.layer.{i}.{layernorm_before, attention.attention.{query,key,value},
//! attention.output.dense, layernorm_after, intermediate.dense, output.dense}`, `layernorm`,
//! and `classifier` (unprefixed) when the checkpoint has a head.

use crate::arch::{classifier_labels, output, ArchOps, ArchTensors, Decl, DenseDecl, NormDecl, TableDecl};
use crate::block::{run_blocks, BlockConfig, BlockNames, BlockOps, FfnKind, Layout, NormKind, Placement, Rows};
use crate::config::VitConfig;
use crate::reference::{BlockWeights, F32Block};
use crate::weights::{WeightSource, Weights};
use crate::ModelError;

/// The block of a ViT config: pre-LN, bidirectional, plain FFN, biases, `nn.Linear` layout.
pub fn block_config(c: &VitConfig) -> BlockConfig {
    BlockConfig {
        hidden: c.hidden_size,
        heads: c.num_attention_heads,
        kv_heads: c.num_attention_heads,
        intermediate: c.intermediate_size,
        norm: NormKind::LayerNorm,
        eps: c.layer_norm_eps,
        placement: Placement::Pre,
        causal: false,
        rope_theta: None,
        ffn: FfnKind::Plain,
        activation: c.hidden_act,
        bias: true,
        layout: Layout::OutIn,
    }
}

/// The checkpoint names of ViT block `l` (HF `ViTModel`).
pub fn block_names(l: usize) -> BlockNames {
    let p = format!("encoder.layer.{l}");
    BlockNames {
        norm1: format!("{p}.layernorm_before"),
        norm2: format!("{p}.layernorm_after"),
        qkv: ["query", "key", "value"]
            .iter()
            .map(|m| format!("{p}.attention.attention.{m}"))
            .collect(),
        o: format!("{p}.attention.output.dense"),
        ffn_in: vec![format!("{p}.intermediate.dense")],
        ffn_out: format!("{p}.output.dense"),
    }
}

/// The tensors of ViT's embeddings and head (HF `ViTModel`; the `classifier` of
/// `ViTForImageClassification` when the checkpoint has one). The patch embedding is the
/// convolution weight `[hidden, C, p, p]` read as an `nn.Linear` weight `[hidden, C·p·p]`.
#[derive(Clone, Debug)]
pub struct Tensors {
    pub proj: DenseDecl,
    pub cls: TableDecl,
    /// `[1, P + 1, hidden]`.
    pub position: TableDecl,
    pub norm: NormDecl,
    pub classifier: Option<DenseDecl>,
}

impl Tensors {
    /// The tensors of `c`; the classifier when `w` has one (without weights, the client: when
    /// the config names labels).
    pub fn new(c: &VitConfig, w: Option<&dyn WeightSource>) -> Result<Self, ModelError> {
        let (h, np) = (c.hidden_size, num_patches(c));
        let mut proj = DenseDecl::new("embeddings.patch_embeddings.projection", patch_dim(c), h, Layout::OutIn, true);
        proj.shape = vec![h, c.num_channels, c.patch_size, c.patch_size];
        Ok(Tensors {
            proj,
            cls: TableDecl::new("embeddings.cls_token", &[1, 1, h]),
            position: TableDecl::new("embeddings.position_embeddings", &[1, np + 1, h]),
            norm: NormDecl { name: "layernorm".into(), kind: NormKind::LayerNorm, dim: h },
            classifier: classifier_labels(w, c.num_labels)?
                .map(|k| DenseDecl::new("classifier", h, k, Layout::OutIn, true)),
        })
    }
}

impl ArchTensors for Tensors {
    fn embeddings(&self) -> Vec<Decl> {
        vec![Decl::Dense(self.proj.clone()), Decl::Table(self.cls.clone()), Decl::Table(self.position.clone())]
    }
    fn heads(&self) -> Vec<Decl> {
        let mut v = vec![Decl::Norm(self.norm.clone())];
        v.extend(self.classifier.iter().map(|d| Decl::Dense(d.clone())));
        v
    }
}

/// ViT's embeddings `[P + 1, hidden]`: the client's patch matrix ([`patchify`] of its
/// `pixels`, checked) times the server's projection (the stride-`p` convolution) plus its
/// bias, under the server's `[CLS]` row; the server's position rows added (row 0:
/// `cls + pos_0`, summed before encoding).
pub fn embeddings<O: ArchOps>(o: &mut O, c: &VitConfig, t: &Tensors, pixels: Option<&[f32]>) -> Result<O::Val, O::Error> {
    let (np, pd) = (num_patches(c), patch_dim(c));
    let patches = match pixels {
        Some(px) => {
            check_pixels(c, px)?;
            Some(patchify(c, px))
        }
        None => None,
    };
    o.step("embed", |o| {
        let xp = o.client_values(patches.as_deref(), np * pd, "its image's pixels (SecureModel::run_image)")?;
        let emb = o.dense(&t.proj, &xp, np)?;
        let first = o.server_rows(&[(&t.cls, &[0]), (&t.position, &[0])])?;
        let rest: Vec<usize> = (1..=np).collect();
        let pos = o.server_rows(&[(&t.position, &rest)])?;
        let rows = o.add(&emb, &pos)?;
        o.concat_rows(&first, &rows)
    })
}

/// The final-LayerNorm `[CLS]` row of the hidden states after the blocks (LayerNorm is
/// row-wise and the head reads nothing else).
pub fn cls_features<O: ArchOps>(o: &mut O, cfg: &BlockConfig, t: &Tensors, x: &O::Val) -> Result<O::Val, O::Error> {
    let cls = o.take_rows(x, 0..1, cfg.hidden)?;
    o.norm(cfg, &t.norm.name, &cls, 1)
}

/// Classifier logits (`ViTForImageClassification`: the head on the final `[CLS]` row),
/// revealed to the client.
pub fn classify<O: ArchOps>(o: &mut O, classifier: &DenseDecl, cls: &O::Val) -> Result<Option<Vec<f32>>, O::Error> {
    let logits = o.step("classifier", |o| o.dense(classifier, cls, 1))?;
    output(o, &logits)
}

/// ViT with its weights in memory (f32).
#[derive(Debug, Clone)]
pub struct Vit {
    pub config: VitConfig,
    tensors: Tensors,
    weights: BlockWeights,
}

/// Number of patches `P` of an image of `config` (the sequence is `P + 1` rows with `[CLS]`).
pub fn num_patches(c: &VitConfig) -> usize {
    (c.image_size / c.patch_size).pow(2)
}

/// Length of the flattened patch vector, `C·p·p`.
pub fn patch_dim(c: &VitConfig) -> usize {
    c.num_channels * c.patch_size * c.patch_size
}

/// Number of pixel values of one input image, `C·H·W`.
pub fn pixel_count(c: &VitConfig) -> usize {
    c.num_channels * c.image_size * c.image_size
}

/// Checks that `pixels` is one finite `[C, H, W]` image of `config`.
pub fn check_pixels(c: &VitConfig, pixels: &[f32]) -> Result<(), ModelError> {
    let want = pixel_count(c);
    if pixels.len() != want {
        return Err(ModelError::Input(format!(
            "{} pixel values, expected {want} ({} channels x {size} x {size})",
            pixels.len(),
            c.num_channels,
            size = c.image_size,
        )));
    }
    if let Some(i) = pixels.iter().position(|v| !v.is_finite()) {
        return Err(ModelError::Input(format!(
            "pixel value {i} is not finite ({})",
            pixels[i]
        )));
    }
    Ok(())
}

/// The patch matrix `[P, C·p·p]` of a `[C, H, W]` image (see module docs for the order).
/// `pixels` must have [`pixel_count`] values (checked by [`check_pixels`]).
pub fn patchify(c: &VitConfig, pixels: &[f32]) -> Vec<f32> {
    let (ch, img, p) = (c.num_channels, c.image_size, c.patch_size);
    let g = img / p;
    let mut out = Vec::with_capacity(num_patches(c) * patch_dim(c));
    for gy in 0..g {
        for gx in 0..g {
            for k in 0..ch {
                for ky in 0..p {
                    let row = k * img * img + (gy * p + ky) * img + gx * p;
                    out.extend_from_slice(&pixels[row..row + p]);
                }
            }
        }
    }
    out
}

impl Vit {
    /// Loads the weights named as in HF `ViTModel` (optionally under `vit.`), and the
    /// `classifier` head of `ViTForImageClassification` when present.
    pub fn load(config: &VitConfig, w: &Weights) -> Result<Self, ModelError> {
        let c = config;
        let mut weights = BlockWeights::load(w, &block_config(c), block_names, c.num_hidden_layers)?;
        let tensors = Tensors::new(c, Some(w)).map_err(|e| ModelError::weights(w.path(), e.to_string()))?;
        weights.load_decls(w, &tensors.all())?;
        Ok(Vit { config: c.clone(), tensors, weights })
    }

    /// Whether a classifier head was loaded.
    pub fn has_classifier(&self) -> bool {
        self.tensors.classifier.is_some()
    }

    /// Number of classifier outputs, if a head was loaded.
    pub fn num_labels(&self) -> Option<usize> {
        self.tensors.classifier.as_ref().map(|d| d.out_dim)
    }

    /// Hidden states `[P + 1, hidden]` after the blocks, before the final LayerNorm.
    fn encode(&self, ops: &mut F32Block<'_>, pixels: &[f32]) -> Result<Vec<f32>, ModelError> {
        let c = &self.config;
        let x = embeddings(ops, c, &self.tensors, Some(pixels))?;
        let rows = Rows::new(num_patches(c) + 1);
        run_blocks(ops, &block_config(c), block_names, c.num_hidden_layers, x, rows, None, None)
    }

    /// Final-LayerNorm hidden states `[P + 1, hidden]` (row 0 is `[CLS]`) of one image.
    pub fn forward(&self, pixels: &[f32]) -> Result<Vec<f32>, ModelError> {
        let mut ops = F32Block::new(&self.weights);
        let x = self.encode(&mut ops, pixels)?;
        ops.norm(&block_config(&self.config), &self.tensors.norm.name, &x, num_patches(&self.config) + 1)
    }

    /// Classifier logits of one image (`ViTForImageClassification`: the head on the final
    /// `[CLS]` row).
    pub fn classify(&self, pixels: &[f32]) -> Result<Vec<f32>, ModelError> {
        let Some(head) = &self.tensors.classifier else {
            return Err(ModelError::Unsupported(
                "this ViT checkpoint has no classifier weights".into(),
            ));
        };
        let mut ops = F32Block::new(&self.weights);
        let x = self.encode(&mut ops, pixels)?;
        let cls = cls_features(&mut ops, &block_config(&self.config), &self.tensors, &x)?;
        classify(&mut ops, head, &cls)?.ok_or_else(|| ModelError::Input("the logits were not opened".into()))
    }
}

/// One image for a ViT whose files are in `dir` (the client side needs only the config and
/// `preprocessor_config.json`): a binary PPM (`.ppm`, 8-bit RGB, already `image_size` square)
/// normalised with the directory's `preprocessor_config.json` (HF defaults 0.5 / 0.5), or
/// pre-normalised `[C, H, W]` values ([`read_pixels`]); checked against the config's shape.
pub fn read_image(
    dir: &std::path::Path,
    c: &VitConfig,
    path: &std::path::Path,
) -> Result<Vec<f32>, ModelError> {
    let is_ppm = path
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("ppm"));
    let px = if is_ppm {
        let norm = Normalize::from_dir(dir, c.num_channels)?;
        read_ppm(path, c, &norm)?
    } else {
        read_pixels(path)?
    };
    check_pixels(c, &px)?;
    Ok(px)
}

/// Reads one image's pixel values from `path`: a `.json` file holding numbers (a flat array or
/// nested `[C][H][W]` arrays, flattened in order), or any other file as raw little-endian `f32`.
/// The values are taken as already normalised; the length is checked by the forward.
pub fn read_pixels(path: &std::path::Path) -> Result<Vec<f32>, ModelError> {
    let bytes = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
    let is_json = path
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("json"));
    if is_json {
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| ModelError::Input(format!("{}: not valid JSON: {e}", path.display())))?;
        let mut out = Vec::new();
        flatten_json(&v, &mut out)
            .map_err(|m| ModelError::Input(format!("{}: {m}", path.display())))?;
        Ok(out)
    } else {
        if bytes.len() % 4 != 0 {
            return Err(ModelError::Input(format!(
                "{}: {} bytes is not a whole number of little-endian f32 values",
                path.display(),
                bytes.len()
            )));
        }
        Ok(bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

/// Per-channel normalisation of the HF image processor: `(v / 255 - mean) / std`.
#[derive(Clone, Debug, PartialEq)]
pub struct Normalize {
    pub mean: Vec<f32>,
    pub std: Vec<f32>,
}

impl Normalize {
    /// `image_mean` / `image_std` of `dir/preprocessor_config.json`, or HF ViT's default 0.5 / 0.5
    /// per channel when the file or a field is absent.
    pub fn from_dir(dir: &std::path::Path, channels: usize) -> Result<Self, ModelError> {
        let path = dir.join("preprocessor_config.json");
        let v: serde_json::Value = match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b)
                .map_err(|e| ModelError::config(&path, format!("not valid JSON: {e}")))?,
            Err(_) => serde_json::Value::Null,
        };
        let field = |name: &str| -> Result<Vec<f32>, ModelError> {
            match v.get(name) {
                None | Some(serde_json::Value::Null) => Ok(vec![0.5; channels]),
                Some(serde_json::Value::Array(a)) if a.len() == channels => a
                    .iter()
                    .map(|x| {
                        x.as_f64().map(|x| x as f32).ok_or_else(|| {
                            ModelError::config(&path, format!("field \"{name}\" must hold numbers"))
                        })
                    })
                    .collect(),
                Some(other) => Err(ModelError::config(
                    &path,
                    format!("field \"{name}\" must be {channels} numbers, got {other}"),
                )),
            }
        };
        let n = Normalize {
            mean: field("image_mean")?,
            std: field("image_std")?,
        };
        if n.std.iter().any(|&s| s.is_nan() || s <= 0.0) {
            return Err(ModelError::config(
                &path,
                "field \"image_std\" must be positive",
            ));
        }
        Ok(n)
    }
}

/// Reads a binary PPM (`P6`, 8-bit RGB) of exactly `image_size × image_size` pixels (resize it
/// beforehand, e.g. `convert in.jpg -resize 224x224! in.ppm`) and returns the normalised
/// `[3, H, W]` pixel values.
pub fn read_ppm(
    path: &std::path::Path,
    c: &VitConfig,
    norm: &Normalize,
) -> Result<Vec<f32>, ModelError> {
    let bytes = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
    let bad = |m: &str| ModelError::Input(format!("{}: {m}", path.display()));
    // Header: "P6" then width, height, maxval as ASCII decimals separated by whitespace
    // (comments from '#' to the end of a line), then one whitespace byte before the data.
    let mut fields = Vec::new();
    let mut i = 0;
    while fields.len() < 4 {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'#') {
            if bytes[i] == b'#' {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'#' {
            i += 1;
        }
        if start == i {
            return Err(bad("truncated PPM header"));
        }
        fields.push(String::from_utf8_lossy(&bytes[start..i]).into_owned());
    }
    if fields[0] != "P6" {
        return Err(bad("not a binary PPM (P6) file"));
    }
    let num = |s: &str| {
        s.parse::<usize>()
            .map_err(|_| bad("bad number in the PPM header"))
    };
    let (w, h, maxval) = (num(&fields[1])?, num(&fields[2])?, num(&fields[3])?);
    if maxval != 255 {
        return Err(bad("only 8-bit PPM (maxval 255) is supported"));
    }
    if w != c.image_size || h != c.image_size {
        return Err(bad(&format!(
            "image is {w}x{h}, the model takes {0}x{0} (resize it first)",
            c.image_size
        )));
    }
    if c.num_channels != 3 || norm.mean.len() != 3 || norm.std.len() != 3 {
        return Err(bad(
            "PPM images have 3 channels, the model takes another number",
        ));
    }
    let data = bytes.get(i + 1..).unwrap_or(&[]);
    if data.len() < w * h * 3 {
        return Err(bad("truncated PPM pixel data"));
    }
    let mut out = vec![0f32; 3 * w * h];
    for p in 0..w * h {
        for k in 0..3 {
            let v = data[p * 3 + k] as f32 / 255.0;
            out[k * w * h + p] = (v - norm.mean[k]) / norm.std[k];
        }
    }
    Ok(out)
}

fn flatten_json(v: &serde_json::Value, out: &mut Vec<f32>) -> Result<(), String> {
    match v {
        serde_json::Value::Array(a) => a.iter().try_for_each(|x| flatten_json(x, out)),
        serde_json::Value::Number(n) => {
            out.push(n.as_f64().ok_or("number out of range")? as f32);
            Ok(())
        }
        other => Err(format!(
            "expected numbers or arrays of numbers, found {other}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Activation;

    fn cfg() -> VitConfig {
        VitConfig {
            hidden_size: 4,
            num_hidden_layers: 0,
            num_attention_heads: 1,
            intermediate_size: 4,
            image_size: 4,
            patch_size: 2,
            num_channels: 2,
            layer_norm_eps: 1e-12,
            hidden_act: Activation::Gelu,
            num_labels: None,
        }
    }

    #[test]
    fn patch_order_matches_the_convolution_weight() {
        let c = cfg();
        // pixel (k, y, x) = 100k + 10y + x
        let px: Vec<f32> = (0..2)
            .flat_map(|k| {
                (0..4).flat_map(move |y| (0..4).map(move |x| (100 * k + 10 * y + x) as f32))
            })
            .collect();
        let p = patchify(&c, &px);
        assert_eq!(p.len(), 4 * 8);
        // patch 1 = (gy 0, gx 1): channel 0 rows 0..2 cols 2..4, then channel 1.
        assert_eq!(&p[8..16], &[2., 3., 12., 13., 102., 103., 112., 113.]);
        // patch 2 = (gy 1, gx 0).
        assert_eq!(&p[16..20], &[20., 21., 30., 31.]);
        assert!(check_pixels(&c, &px[1..]).is_err());
        let mut bad = px.clone();
        bad[3] = f32::NAN;
        assert!(check_pixels(&c, &bad).is_err());
    }

    #[test]
    fn ppm_images_are_normalised_channel_major() {
        let dir = tempfile::tempdir().unwrap();
        let c = VitConfig {
            num_channels: 3,
            image_size: 2,
            ..cfg()
        };
        let p = dir.path().join("img.ppm");
        let mut f = b"P6\n# comment\n2 2\n255\n".to_vec();
        f.extend_from_slice(&[255, 0, 51, 0, 0, 0, 0, 0, 0, 0, 0, 255]);
        std::fs::write(&p, &f).unwrap();
        let n = Normalize::from_dir(dir.path(), 3).unwrap();
        assert_eq!(n.mean, vec![0.5; 3]);
        let px = read_ppm(&p, &c, &n).unwrap();
        // channel 0 of pixel 0 is 255 -> 1; channel 2 of pixel 0 is 51 -> 0.2*2-1 = -0.6.
        assert_eq!(px.len(), 12);
        assert!((px[0] - 1.0).abs() < 1e-6 && (px[1] + 1.0).abs() < 1e-6);
        assert!((px[8] + 0.6).abs() < 1e-6 && (px[11] - 1.0).abs() < 1e-6);
        std::fs::write(
            dir.path().join("preprocessor_config.json"),
            r#"{"image_mean": [0.0, 0.0, 0.0], "image_std": [1.0, 1.0, 0.5]}"#,
        )
        .unwrap();
        let n = Normalize::from_dir(dir.path(), 3).unwrap();
        let px = read_ppm(&p, &c, &n).unwrap();
        assert!((px[0] - 1.0).abs() < 1e-6 && (px[8] - 0.4).abs() < 1e-6);
        let big = VitConfig {
            image_size: 4,
            ..c.clone()
        };
        let e = read_ppm(&p, &big, &n).unwrap_err().to_string();
        assert!(e.contains("resize"), "{e}");
        std::fs::write(&p, b"P6\n2 2\n255\n\x01").unwrap();
        assert!(read_ppm(&p, &c, &n).is_err());
        std::fs::write(&p, b"P3\n2 2\n255\n").unwrap();
        assert!(read_ppm(&p, &c, &n).is_err());
    }

    #[test]
    fn pixels_from_json_and_raw_files() {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("img.json");
        std::fs::write(&j, "[[[1, 2], [3, 4.5]]]").unwrap();
        assert_eq!(read_pixels(&j).unwrap(), vec![1.0, 2.0, 3.0, 4.5]);
        let r = dir.path().join("img.f32");
        let raw: Vec<u8> = [0.5f32, -1.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        std::fs::write(&r, raw).unwrap();
        assert_eq!(read_pixels(&r).unwrap(), vec![0.5, -1.0]);
        std::fs::write(&r, [0u8; 3]).unwrap();
        assert!(read_pixels(&r).is_err());
        std::fs::write(&j, "[1, \"x\"]").unwrap();
        assert!(read_pixels(&j).is_err());
    }
}
