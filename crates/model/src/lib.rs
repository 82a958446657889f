//! `nectar-model` (layer `model`, see `DESIGN.md`): Hugging Face model directories and the
//! plaintext reference forward that secure inference is checked against.
//!
//! - [`config`]: typed `config.json` for `bert`, `gpt2`, `vit`, `llama`.
//! - [`weights`]: `model.safetensors` read with positioned reads, shape-checked f32 access (F32/F16/BF16).
//! - [`gguf`]: llama.cpp's GGUF files (LLaMA architecture): metadata, tensors dequantised to
//!   f32 under their HF names, config, tokenizer; [`chat_template`]: the ChatML prompt of
//!   instruct models.
//! - [`tokenizer`]: `tokenizer.json` through the `tokenizers` crate.
//! - [`block`]: the transformer block, written once and configured by data, over any
//!   arithmetic ([`block::BlockOps`]): the f32 reference ([`reference`], kernels in [`ops`]),
//!   the fixed-point twin and the secure parties ([`secure::block`]).
//! - [`arch`]: what an architecture adds to the block — its embedding and head tensors,
//!   declared once, and their operators on any arithmetic ([`arch::ArchOps`]).
//! - [`bert`], [`gpt2`], [`llama`], [`vit`]: each architecture's embeddings, head and block
//!   mapping (`block_config`, `block_names`, shared with its secure form), and its plaintext
//!   f32 forward (sentence embeddings, classifier head, causal LMs with KV cache and greedy
//!   generation, image classification).
//! - [`home`]: the model cache, where `nectar fetch-model` puts the default model.
//! - [`suite`]: the typed protocol suite (which protocol per operator), its presets and grammar,
//!   and `suite::security`: its HE parameters and statistical security per session (`nectar params`).
//! - [`secure`]: the same architectures as two-party computations over an arithmetic engine
//!   (the secure protocols, [`secure::SecureEngine`], or the fixed-point twin, [`twin`]).
//! - [`twin`]: the whole-model fixed-point twin ([`twin::PlainEngine`]): one process, both
//!   parties' secrets, exactly what the protocols compute up to their randomised errors.
//!
//! [`Model`] ties these together: one loader for any supported HF directory or GGUF file.

pub mod arch;
pub mod bert;
pub mod block;
pub mod calibrate;
pub mod chat_template;
pub mod config;
pub mod encoded;
pub mod error;
pub mod gguf;
pub mod gpt2;
pub mod home;
pub mod llama;
pub mod ops;
pub mod reference;
pub mod secure;
pub mod shapes;
/// The protocol suite, in its own crate (`nectar-suite`) between the protocol crates and this one.
pub use nectar_suite as suite;
pub mod tokenizer;
pub mod twin;
pub mod vit;
pub mod weights;

use std::path::{Path, PathBuf};

pub use bert::Bert;
pub use config::{Activation, ModelConfig};
pub use error::ModelError;
pub use block::KvCache;
pub use gpt2::Gpt2;
pub use llama::Llama;
pub use suite::{Suite, SuiteError};
pub use tokenizer::{Encoded, TextTokenizer};
pub use vit::Vit;
pub use weights::Weights;

/// The runnable part of a model, by architecture.
#[derive(Debug)]
pub enum Network {
    Bert(Bert),
    Gpt2(Gpt2),
    Llama(Llama),
    Vit(Vit),
    /// A config without weights (LLaMA or ViT directories without `model.safetensors`).
    ConfigOnly,
}

/// A loaded Hugging Face model directory or GGUF file.
#[derive(Debug)]
pub struct Model {
    dir: PathBuf,
    config: ModelConfig,
    network: Network,
    tokenizer: Option<TextTokenizer>,
    /// (parameter count, dominant dtype), when `model.safetensors` is present.
    params: Option<(usize, String)>,
    /// What a GGUF file adds, when the model is one.
    gguf: Option<GgufSummary>,
}

/// What `nectar info` shows of a GGUF file beyond the architecture.
#[derive(Debug, Clone)]
pub struct GgufSummary {
    /// GGUF version.
    pub version: u32,
    /// Tensor counts per GGML type (`Q4_1 ×210, F32 ×61, Q8_0 ×1`).
    pub quantization: String,
    /// `tokenizer.chat_template`, if the file has one.
    pub chat_template: Option<String>,
    /// `tokenizer.ggml.eos_token_id`, if set.
    pub eos_id: Option<u32>,
}

/// The GGUF file `path` names: itself when it is a file, else the one `*.gguf` file of the
/// directory when it has no `config.json` (`None`: an HF directory).
pub fn gguf_path(path: &Path) -> Result<Option<PathBuf>, ModelError> {
    if path.is_file() {
        return Ok(Some(path.to_path_buf()));
    }
    if !path.is_dir() || path.join("config.json").exists() {
        return Ok(None);
    }
    let entries = std::fs::read_dir(path).map_err(|e| ModelError::io(path, e))?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "gguf"))
        .collect();
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        n => Err(ModelError::config(
            path,
            format!("holds {n} .gguf files and no config.json; name the one to load"),
        )),
    }
}

impl Model {
    /// Loads `dir/config.json`, `dir/model.safetensors` (required for BERT and GPT-2) and
    /// `dir/tokenizer.json` (if present); or a GGUF file (`dir` itself, or the one `*.gguf` of
    /// a directory without `config.json`): a LLaMA, its weights dequantised to f32 and its
    /// tokenizer built from its vocabulary.
    pub fn load(dir: &Path) -> Result<Model, ModelError> {
        if let Some(path) = gguf_path(dir)? {
            return Self::load_gguf(&path);
        }
        if !dir.is_dir() {
            return Err(ModelError::Io {
                path: dir.display().to_string(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "model directory not found",
                ),
            });
        }
        let config = ModelConfig::from_file(&dir.join("config.json"))?;
        let st_path = dir.join("model.safetensors");
        let needs_weights = matches!(config, ModelConfig::Bert(_) | ModelConfig::Gpt2(_));
        let weights = if needs_weights || st_path.exists() {
            Some(Weights::open(&st_path)?)
        } else {
            None
        };
        let params = weights.as_ref().map(|w| w.param_stats());
        let (network, max_len) = match (&config, &weights) {
            (ModelConfig::Bert(c), Some(w)) => (
                Network::Bert(Bert::load(c, w)?),
                sentence_max_len(dir)
                    .unwrap_or(c.max_position_embeddings)
                    .min(c.max_position_embeddings),
            ),
            (ModelConfig::Gpt2(c), Some(w)) => (Network::Gpt2(Gpt2::load(c, w)?), c.n_positions),
            (ModelConfig::Llama(c), Some(w)) => (
                Network::Llama(Llama::load(c, w)?),
                c.max_position_embeddings,
            ),
            (ModelConfig::Llama(c), None) => (Network::ConfigOnly, c.max_position_embeddings),
            (ModelConfig::Vit(c), Some(w)) => (Network::Vit(Vit::load(c, w)?), 512),
            _ => (Network::ConfigOnly, 512),
        };
        let tok_path = dir.join("tokenizer.json");
        let tokenizer = if tok_path.exists() {
            Some(TextTokenizer::from_file(&tok_path, max_len)?)
        } else {
            None
        };
        Ok(Model {
            dir: dir.to_path_buf(),
            config,
            network,
            tokenizer,
            params,
            gguf: None,
        })
    }

    /// Loads a LLaMA GGUF file (see [`gguf`]).
    fn load_gguf(path: &Path) -> Result<Model, ModelError> {
        let src = gguf::GgufLlama::new(gguf::GgufFile::open(path)?)?;
        let c = src.config().clone();
        let llama = Llama::load(&c, &src)?;
        let f = src.file();
        let tokenizer = gguf::vocab::tokenizer(f, c.max_position_embeddings)?;
        let summary = GgufSummary {
            version: f.version(),
            quantization: src.quantization(),
            chat_template: f.get("tokenizer.chat_template").and_then(|v| v.as_str()).map(str::to_string),
            eos_id: gguf::vocab::eos_id(f),
        };
        Ok(Model {
            dir: path.to_path_buf(),
            config: ModelConfig::Llama(c),
            network: Network::Llama(llama),
            tokenizer: Some(tokenizer),
            params: Some(src.param_stats()),
            gguf: Some(summary),
        })
    }

    /// What the GGUF file adds (version, quantisation, chat template), when the model is one.
    pub fn gguf(&self) -> Option<&GgufSummary> {
        self.gguf.as_ref()
    }

    /// `messages` as the prompt of the model's chat template (GGUF `tokenizer.chat_template`;
    /// ChatML only, see [`chat_template`]), ending with the assistant's turn.
    pub fn apply_chat_template(&self, messages: &[chat_template::Message]) -> Result<String, ModelError> {
        let t = self.gguf.as_ref().and_then(|g| g.chat_template.as_deref()).ok_or_else(|| {
            ModelError::Unsupported(format!("{} has no chat template", self.dir.display()))
        })?;
        let t = chat_template::ChatTemplate::parse(t)
            .map_err(|e| ModelError::Unsupported(format!("{}: {e}", self.dir.display())))?;
        Ok(t.render(messages, true))
    }

    /// The directory (or GGUF file) this model was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The parsed `config.json`.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The runnable network.
    pub fn network(&self) -> &Network {
        &self.network
    }

    /// The tokenizer, if the directory has a `tokenizer.json`.
    pub fn tokenizer(&self) -> Option<&TextTokenizer> {
        self.tokenizer.as_ref()
    }

    /// Parameter count of the floating-point tensors in `model.safetensors`.
    pub fn param_count(&self) -> Option<usize> {
        self.params.as_ref().map(|p| p.0)
    }

    /// Architecture summary (multi-line), as printed by `nectar info`.
    pub fn summary(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let (layers, hidden, heads, ffn, vocab) = self.config.dims();
        let _ = writeln!(s, "model:         {}", self.dir.display());
        let _ = writeln!(s, "type:          {}", self.config.model_type());
        let _ = writeln!(s, "layers:        {layers}");
        let _ = writeln!(s, "hidden:        {hidden}");
        let _ = writeln!(s, "heads:         {heads} (head dim {})", hidden / heads);
        let _ = writeln!(s, "intermediate:  {ffn}");
        if let Some(v) = vocab {
            let _ = writeln!(s, "vocab:         {v}");
        }
        match &self.config {
            ModelConfig::Bert(c) => {
                let _ = writeln!(s, "max positions: {}", c.max_position_embeddings);
                let _ = writeln!(
                    s,
                    "activation:    {}; LayerNorm eps {:e} (post-LN)",
                    c.hidden_act.name(),
                    c.layer_norm_eps
                );
            }
            ModelConfig::Gpt2(c) => {
                let _ = writeln!(s, "max positions: {}", c.n_positions);
                let _ = writeln!(
                    s,
                    "activation:    {}; LayerNorm eps {:e} (pre-LN)",
                    c.activation_function.name(),
                    c.layer_norm_epsilon
                );
            }
            ModelConfig::Vit(c) => {
                let patches = (c.image_size / c.patch_size).pow(2);
                let _ = writeln!(
                    s,
                    "image:         {0}x{0}x{1}, patch {2} ({patches} patches + [CLS])",
                    c.image_size, c.num_channels, c.patch_size
                );
                let _ = writeln!(
                    s,
                    "activation:    {}; LayerNorm eps {:e} (pre-LN)",
                    c.hidden_act.name(),
                    c.layer_norm_eps
                );
                if let Some(n) = c.num_labels {
                    let _ = writeln!(s, "labels:        {n}");
                }
            }
            ModelConfig::Llama(c) => {
                let _ = writeln!(s, "max positions: {}", c.max_position_embeddings);
                let _ = writeln!(
                    s,
                    "kv heads:      {} (grouped-query attention)",
                    c.num_key_value_heads
                );
                let _ = writeln!(
                    s,
                    "activation:    {} (gated); RMSNorm eps {:e}; RoPE theta {}",
                    c.hidden_act.name(),
                    c.rms_norm_eps,
                    c.rope_theta
                );
                let _ = writeln!(s, "tied embed:    {}", c.tie_word_embeddings);
            }
        }
        match &self.params {
            Some((n, dtype)) => {
                let _ = writeln!(
                    s,
                    "parameters:    {} ({:.1} M, {dtype})",
                    group_digits(*n),
                    *n as f64 / 1e6
                );
            }
            None => {
                let _ = writeln!(s, "parameters:    unknown (no model.safetensors)");
            }
        }
        if let Some(g) = &self.gguf {
            let _ = writeln!(s, "format:        GGUF v{}, dequantised to f32 when loaded", g.version);
            let _ = writeln!(s, "quantisation:  {}", g.quantization);
            let chat = match g.chat_template.as_deref().map(chat_template::ChatTemplate::parse) {
                None => "none".to_string(),
                Some(Ok(_)) => "ChatML".to_string(),
                Some(Err(_)) => "present, not supported (only ChatML is rendered)".to_string(),
            };
            let _ = writeln!(s, "chat template: {chat}");
        }
        let tok_source = if self.gguf.is_some() { "GGUF vocabulary, byte-level BPE" } else { "tokenizer.json" };
        let _ = writeln!(
            s,
            "tokenizer:     {}",
            match &self.tokenizer {
                Some(t) => format!("{tok_source} (max {} tokens)", t.max_len()),
                None => "none".into(),
            }
        );
        let forward = match &self.network {
            Network::Bert(b) if b.has_classifier() => {
                "encoder, sentence embedding (mean pooling + L2), classifier head"
            }
            Network::Bert(_) => "encoder, sentence embedding (mean pooling + L2)",
            Network::Gpt2(_) | Network::Llama(_) => "causal LM, greedy generation with KV cache",
            Network::Vit(v) if v.has_classifier() => {
                "image encoder, classifier head on [CLS] (input: normalised [C, H, W] pixels)"
            }
            Network::Vit(_) => "image encoder, final [CLS] features (no classifier head)",
            Network::ConfigOnly
                if matches!(self.config, ModelConfig::Llama(_) | ModelConfig::Vit(_)) =>
            {
                "none (no model.safetensors)"
            }
            Network::ConfigOnly => "not implemented yet for this architecture",
        };
        let _ = write!(s, "plaintext:     {forward}");
        s
    }

    fn need_tokenizer(&self) -> Result<&TextTokenizer, ModelError> {
        self.tokenizer
            .as_ref()
            .ok_or_else(|| ModelError::Tokenizer {
                file: self.dir.join("tokenizer.json").display().to_string(),
                msg: "not found (needed to turn text into token ids)".into(),
            })
    }

    fn unsupported(&self, what: &str) -> ModelError {
        ModelError::Unsupported(format!(
            "plaintext {what} for {} is not implemented yet",
            self.config.model_type()
        ))
    }

    /// Sentence embeddings (mean pooling + L2 normalisation), one per text (BERT family).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        let Network::Bert(bert) = &self.network else {
            return Err(match self.network {
                Network::Gpt2(_) => ModelError::Unsupported(
                    "sentence embeddings need a BERT-family model, this is gpt2".into(),
                ),
                _ => self.unsupported("embedding"),
            });
        };
        let tok = self.need_tokenizer()?;
        texts
            .iter()
            .map(|t| {
                let e = tok.encode(t)?;
                bert.embed(&e.ids, &e.type_ids, &e.attention_mask)
            })
            .collect()
    }

    /// Classifier logits of one image, normalised `f32` pixels `[C, H, W]` (ViT; see
    /// [`vit::read_pixels`] to read them from a file).
    pub fn classify_image(&self, pixels: &[f32]) -> Result<Vec<f32>, ModelError> {
        match &self.network {
            Network::Vit(v) => v.classify(pixels),
            Network::ConfigOnly => Err(ModelError::Unsupported(format!(
                "{} has no model.safetensors",
                self.dir.display()
            ))),
            _ => Err(ModelError::Unsupported(format!(
                "image classification needs a ViT model, this is {}",
                self.config.model_type()
            ))),
        }
    }

    /// Reads one image for [`Model::classify_image`] (ViT): a binary PPM (`.ppm`, 8-bit RGB,
    /// already `image_size` square) normalised with the directory's
    /// `preprocessor_config.json` (HF defaults 0.5 / 0.5), or pre-normalised `[C, H, W]`
    /// values (`.json` numbers, otherwise raw little-endian f32). The result is checked
    /// against the config's image shape.
    pub fn read_image(&self, path: &Path) -> Result<Vec<f32>, ModelError> {
        let ModelConfig::Vit(c) = &self.config else {
            return Err(ModelError::Unsupported(format!(
                "image input needs a ViT model, this is {}",
                self.config.model_type()
            )));
        };
        vit::read_image(&self.dir, c, path)
    }

    /// Greedy continuation of `prompt` by `n_new` tokens (GPT-2, LLaMA); returns the new text only.
    pub fn generate(&self, prompt: &str, n_new: usize) -> Result<String, ModelError> {
        let tok = self.need_tokenizer()?;
        let ids = self.generate_ids(&tok.encode(prompt)?.ids, n_new)?;
        tok.decode(&ids)
    }

    /// Greedy continuation of token ids `ids` by `n_new` tokens (GPT-2, LLaMA; KV cache);
    /// returns the new ids only.
    pub fn generate_ids(&self, ids: &[u32], n_new: usize) -> Result<Vec<u32>, ModelError> {
        match &self.network {
            Network::Gpt2(m) => m.generate(ids, n_new),
            Network::Llama(m) => m.generate(ids, n_new),
            Network::Bert(_) => Err(ModelError::Unsupported(
                "text generation needs a causal LM (gpt2, llama), this is bert".into(),
            )),
            Network::ConfigOnly => Err(ModelError::Unsupported(format!(
                "plaintext generation needs the weights: {} has no model.safetensors",
                self.dir.display()
            ))),
            Network::Vit(_) => Err(self.unsupported("generation")),
        }
    }
}

/// `max_seq_length` from sentence-transformers' `sentence_bert_config.json`, if present.
fn sentence_max_len(dir: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(dir.join("sentence_bert_config.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("max_seq_length")?
        .as_u64()
        .map(|x| x as usize)
        .filter(|&x| x > 0)
}

fn group_digits(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).rem_euclid(3) == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Cosine similarity of two vectors (0 if either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (x as f64, y as f64);
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        return 0.0;
    }
    (ab / (aa.sqrt() * bb.sqrt())) as f32
}
