//! Typed view of a Hugging Face `config.json` for the architectures nectar knows:
//! `bert`, `gpt2`, `vit`, `llama`.
//!
//! The architecture is public in nectar's threat model (DESIGN.md), so everything here is
//! plain data that both parties may read. Parsing is strict: a missing or ill-typed field
//! that the forward needs is an error naming the file and the field; fields the forward
//! does not need (dropout, initializer range...) are ignored.

use std::path::Path;

use serde_json::{Map, Value};

use crate::ModelError;

/// Element-wise activation of a feed-forward block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// Exact GeLU, `x/2 * (1 + erf(x/sqrt 2))` (HF `gelu`).
    Gelu,
    /// Tanh approximation of GeLU (HF `gelu_new`, `gelu_pytorch_tanh`), used by GPT-2.
    GeluTanh,
    /// `max(x, 0)`.
    Relu,
    /// `x * sigmoid(x)` (HF `silu` / `swish`), used by LLaMA.
    Silu,
}

impl Activation {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "gelu" => Some(Activation::Gelu),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Some(Activation::GeluTanh),
            "relu" => Some(Activation::Relu),
            "silu" | "swish" => Some(Activation::Silu),
            _ => None,
        }
    }

    /// The HF name of the activation.
    pub fn name(self) -> &'static str {
        match self {
            Activation::Gelu => "gelu",
            Activation::GeluTanh => "gelu_new",
            Activation::Relu => "relu",
            Activation::Silu => "silu",
        }
    }
}

/// BERT encoder (`model_type = "bert"`; also MiniLM, which is a BERT).
#[derive(Debug, Clone, PartialEq)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    pub hidden_act: Activation,
    /// Number of classifier outputs (length of `id2label`), if the config names labels.
    pub num_labels: Option<usize>,
}

/// GPT-2 causal language model (`model_type = "gpt2"`).
#[derive(Debug, Clone, PartialEq)]
pub struct Gpt2Config {
    pub vocab_size: usize,
    pub n_embd: usize,
    pub n_layer: usize,
    pub n_head: usize,
    pub n_positions: usize,
    /// Feed-forward width (`n_inner`, default `4 * n_embd`).
    pub n_inner: usize,
    pub layer_norm_epsilon: f64,
    pub activation_function: Activation,
}

/// Vision transformer (`model_type = "vit"`).
#[derive(Debug, Clone, PartialEq)]
pub struct VitConfig {
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub image_size: usize,
    pub patch_size: usize,
    pub num_channels: usize,
    pub layer_norm_eps: f64,
    pub hidden_act: Activation,
    /// Number of classes (length of `id2label`), if the config names labels.
    pub num_labels: Option<usize>,
}

/// LLaMA decoder (`model_type = "llama"`).
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    /// Grouped-query attention: number of key/value heads (default `num_attention_heads`).
    pub num_key_value_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub tie_word_embeddings: bool,
    pub hidden_act: Activation,
    /// `rope_scaling.rope_type` (or `type`) when the config rescales RoPE (LLaMA 3.1+).
    pub rope_scaling: Option<String>,
    /// Whether the attention projections carry biases (`attention_bias`).
    pub attention_bias: bool,
    /// nectar's calibration, not the architecture (`nectar_scale_shifts`, set by the server from
    /// its weights; [`crate::calibrate`]), for activations beyond the fixed-point format's
    /// domains: per RMSNorm prefix, the `k` whose `x·2^−k` its secure statistics are taken of;
    /// per linear operator (its first weight name), the `k` its product is computed at
    /// `W·2^−k` with, then multiplied by `2^k`. Empty: none.
    pub scale_shifts: ScaleShifts,
}

/// Per RMSNorm prefix (`layers.12.input_layernorm`) or linear operator
/// (`layers.11.mlp.down_proj`), its shift ([`LlamaConfig::scale_shifts`]).
pub type ScaleShifts = std::collections::BTreeMap<String, u32>;

/// A parsed `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelConfig {
    Bert(BertConfig),
    Gpt2(Gpt2Config),
    Vit(VitConfig),
    Llama(LlamaConfig),
}

/// Reads typed fields of one JSON object, with errors naming the file and the field.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    file: &'a Path,
}

impl Fields<'_> {
    fn err(&self, msg: String) -> ModelError {
        ModelError::config(self.file, msg)
    }

    /// `nectar_scale_shifts`: an object of small shifts (absent: none).
    fn scale_shifts(&self) -> Result<ScaleShifts, ModelError> {
        let mut out = ScaleShifts::new();
        match self.obj.get("nectar_scale_shifts") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    match v.as_u64() {
                        Some(s) if s < 32 => {
                            out.insert(k.clone(), s as u32);
                        }
                        _ => return Err(self.err(format!("field \"nectar_scale_shifts\": {k:?} must be a shift below 32, got {v}"))),
                    }
                }
            }
            Some(v) => return Err(self.err(format!("field \"nectar_scale_shifts\" must be an object, got {v}"))),
        }
        Ok(out)
    }

    fn usize_opt(&self, name: &str) -> Result<Option<usize>, ModelError> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(x) if x > 0 && x <= u32::MAX as u64 => Ok(Some(x as usize)),
                _ => Err(self.err(format!(
                    "field \"{name}\" must be a positive integer, got {v}"
                ))),
            },
        }
    }

    fn usize(&self, name: &str) -> Result<usize, ModelError> {
        self.usize_opt(name)?
            .ok_or_else(|| self.err(format!("missing field \"{name}\"")))
    }

    fn f64_opt(&self, name: &str) -> Result<Option<f64>, ModelError> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
                _ => Err(self.err(format!(
                    "field \"{name}\" must be a non-negative number, got {v}"
                ))),
            },
        }
    }

    fn f64(&self, name: &str) -> Result<f64, ModelError> {
        self.f64_opt(name)?
            .ok_or_else(|| self.err(format!("missing field \"{name}\"")))
    }

    fn bool_or(&self, name: &str, default: bool) -> Result<bool, ModelError> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.err(format!("field \"{name}\" must be a boolean, got {v}"))),
        }
    }

    fn str_opt(&self, name: &str) -> Result<Option<&str>, ModelError> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.err(format!("field \"{name}\" must be a string, got {v}"))),
        }
    }

    fn activation(&self, name: &str, default: Activation) -> Result<Activation, ModelError> {
        match self.str_opt(name)? {
            None => Ok(default),
            Some(s) => Activation::parse(s).ok_or_else(|| {
                self.err(format!("field \"{name}\": unsupported activation \"{s}\""))
            }),
        }
    }

    /// Number of labels from `id2label` (or `num_labels`), if any.
    fn num_labels(&self) -> Result<Option<usize>, ModelError> {
        match self.obj.get("id2label") {
            None | Some(Value::Null) => self.usize_opt("num_labels"),
            Some(Value::Object(m)) if !m.is_empty() => Ok(Some(m.len())),
            Some(v) => Err(self.err(format!(
                "field \"id2label\" must be a non-empty object, got {v}"
            ))),
        }
    }

    /// `a` must be divisible by `b` (e.g. hidden size by head count).
    fn divisible(&self, a: (&str, usize), b: (&str, usize)) -> Result<(), ModelError> {
        if a.1.rem_euclid(b.1) > 0 {
            return Err(self.err(format!(
                "field \"{}\" = {} is not divisible by \"{}\" = {}",
                a.0, a.1, b.0, b.1
            )));
        }
        Ok(())
    }
}

impl ModelConfig {
    /// Reads and parses `path` (a `config.json`).
    pub fn from_file(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::config(path, format!("cannot read: {e}")))?;
        Self::from_json_str(&text, path)
    }

    /// Parses the text of a `config.json`; `file` is only used in error messages.
    pub fn from_json_str(text: &str, file: &Path) -> Result<Self, ModelError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| ModelError::config(file, format!("not valid JSON: {e}")))?;
        let obj = value
            .as_object()
            .ok_or_else(|| ModelError::config(file, "top level must be a JSON object"))?;
        let f = Fields { obj, file };
        let model_type = f
            .str_opt("model_type")?
            .ok_or_else(|| f.err("missing field \"model_type\"".into()))?;
        match model_type {
            "bert" => {
                let c = BertConfig {
                    vocab_size: f.usize("vocab_size")?,
                    hidden_size: f.usize("hidden_size")?,
                    num_hidden_layers: f.usize("num_hidden_layers")?,
                    num_attention_heads: f.usize("num_attention_heads")?,
                    intermediate_size: f.usize("intermediate_size")?,
                    max_position_embeddings: f.usize("max_position_embeddings")?,
                    type_vocab_size: f.usize_opt("type_vocab_size")?.unwrap_or(2),
                    layer_norm_eps: f.f64_opt("layer_norm_eps")?.unwrap_or(1e-12),
                    hidden_act: f.activation("hidden_act", Activation::Gelu)?,
                    num_labels: f.num_labels()?,
                };
                if let Some(p) = f.str_opt("position_embedding_type")? {
                    if p != "absolute" {
                        return Err(f.err(format!(
                            "field \"position_embedding_type\": only \"absolute\" is supported, got \"{p}\""
                        )));
                    }
                }
                f.divisible(("hidden_size", c.hidden_size), ("num_attention_heads", c.num_attention_heads))?;
                Ok(ModelConfig::Bert(c))
            }
            "gpt2" => {
                let n_embd = f.usize("n_embd")?;
                let c = Gpt2Config {
                    vocab_size: f.usize("vocab_size")?,
                    n_embd,
                    n_layer: f.usize("n_layer")?,
                    n_head: f.usize("n_head")?,
                    n_positions: f.usize("n_positions")?,
                    n_inner: f.usize_opt("n_inner")?.unwrap_or(4 * n_embd),
                    layer_norm_epsilon: f.f64_opt("layer_norm_epsilon")?.unwrap_or(1e-5),
                    activation_function: f.activation("activation_function", Activation::GeluTanh)?,
                };
                f.divisible(("n_embd", c.n_embd), ("n_head", c.n_head))?;
                Ok(ModelConfig::Gpt2(c))
            }
            "vit" => {
                let c = VitConfig {
                    hidden_size: f.usize("hidden_size")?,
                    num_hidden_layers: f.usize("num_hidden_layers")?,
                    num_attention_heads: f.usize("num_attention_heads")?,
                    intermediate_size: f.usize("intermediate_size")?,
                    image_size: f.usize("image_size")?,
                    patch_size: f.usize("patch_size")?,
                    num_channels: f.usize_opt("num_channels")?.unwrap_or(3),
                    layer_norm_eps: f.f64_opt("layer_norm_eps")?.unwrap_or(1e-12),
                    hidden_act: f.activation("hidden_act", Activation::Gelu)?,
                    num_labels: f.num_labels()?,
                };
                f.divisible(("hidden_size", c.hidden_size), ("num_attention_heads", c.num_attention_heads))?;
                f.divisible(("image_size", c.image_size), ("patch_size", c.patch_size))?;
                Ok(ModelConfig::Vit(c))
            }
            "llama" => {
                let heads = f.usize("num_attention_heads")?;
                let c = LlamaConfig {
                    vocab_size: f.usize("vocab_size")?,
                    hidden_size: f.usize("hidden_size")?,
                    num_hidden_layers: f.usize("num_hidden_layers")?,
                    num_attention_heads: heads,
                    num_key_value_heads: f.usize_opt("num_key_value_heads")?.unwrap_or(heads),
                    intermediate_size: f.usize("intermediate_size")?,
                    max_position_embeddings: f.usize("max_position_embeddings")?,
                    rms_norm_eps: f.f64("rms_norm_eps")?,
                    rope_theta: f.f64_opt("rope_theta")?.unwrap_or(10000.0),
                    tie_word_embeddings: f.bool_or("tie_word_embeddings", false)?,
                    hidden_act: f.activation("hidden_act", Activation::Silu)?,
                    rope_scaling: match obj.get("rope_scaling") {
                        None | Some(Value::Null) => None,
                        Some(Value::Object(m)) => Some(
                            m.get("rope_type")
                                .or_else(|| m.get("type"))
                                .and_then(|t| t.as_str())
                                .unwrap_or("unknown")
                                .to_string(),
                        ),
                        Some(v) => return Err(f.err(format!("field \"rope_scaling\" must be an object, got {v}"))),
                    },
                    attention_bias: f.bool_or("attention_bias", false)?,
                    scale_shifts: f.scale_shifts()?,
                };
                f.divisible(("hidden_size", c.hidden_size), ("num_attention_heads", heads))?;
                f.divisible(("num_attention_heads", heads), ("num_key_value_heads", c.num_key_value_heads))?;
                Ok(ModelConfig::Llama(c))
            }
            other => Err(f.err(format!(
                "field \"model_type\": unsupported model type \"{other}\" (supported: bert, gpt2, vit, llama)"
            ))),
        }
    }

    /// A GGUF checkpoint's architecture as the `config.json` a server sends in its `Welcome`
    /// (HF `LlamaForCausalLM` fields; [`ModelConfig::from_json_str`] reads it back equal).
    pub fn llama_json(c: &LlamaConfig) -> String {
        serde_json::json!({
            "model_type": "llama",
            "architectures": ["LlamaForCausalLM"],
            "vocab_size": c.vocab_size,
            "hidden_size": c.hidden_size,
            "num_hidden_layers": c.num_hidden_layers,
            "num_attention_heads": c.num_attention_heads,
            "num_key_value_heads": c.num_key_value_heads,
            "intermediate_size": c.intermediate_size,
            "max_position_embeddings": c.max_position_embeddings,
            "rms_norm_eps": c.rms_norm_eps,
            "rope_theta": c.rope_theta,
            "tie_word_embeddings": c.tie_word_embeddings,
            "hidden_act": c.hidden_act.name(),
            "rope_scaling": c.rope_scaling.as_ref().map(|k| serde_json::json!({ "rope_type": k })),
            "attention_bias": c.attention_bias,
            "nectar_scale_shifts": c.scale_shifts,
        })
        .to_string()
    }

    /// Equal architectures, whatever the calibration ([`LlamaConfig::scale_shifts`]): what a
    /// client compares its own copy of the model with (it cannot calibrate without weights).
    pub fn same_architecture(&self, other: &ModelConfig) -> bool {
        match (self, other) {
            (ModelConfig::Llama(a), ModelConfig::Llama(b)) => {
                LlamaConfig { scale_shifts: ScaleShifts::new(), ..a.clone() } == LlamaConfig { scale_shifts: ScaleShifts::new(), ..b.clone() }
            }
            _ => self == other,
        }
    }

    /// HF `model_type`.
    pub fn model_type(&self) -> &'static str {
        match self {
            ModelConfig::Bert(_) => "bert",
            ModelConfig::Gpt2(_) => "gpt2",
            ModelConfig::Vit(_) => "vit",
            ModelConfig::Llama(_) => "llama",
        }
    }

    /// (layers, hidden, heads, intermediate, vocab or None for ViT).
    pub fn dims(&self) -> (usize, usize, usize, usize, Option<usize>) {
        match self {
            ModelConfig::Bert(c) => (
                c.num_hidden_layers,
                c.hidden_size,
                c.num_attention_heads,
                c.intermediate_size,
                Some(c.vocab_size),
            ),
            ModelConfig::Gpt2(c) => (c.n_layer, c.n_embd, c.n_head, c.n_inner, Some(c.vocab_size)),
            ModelConfig::Vit(c) => (
                c.num_hidden_layers,
                c.hidden_size,
                c.num_attention_heads,
                c.intermediate_size,
                None,
            ),
            ModelConfig::Llama(c) => (
                c.num_hidden_layers,
                c.hidden_size,
                c.num_attention_heads,
                c.intermediate_size,
                Some(c.vocab_size),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<ModelConfig, ModelError> {
        ModelConfig::from_json_str(s, Path::new("dir/config.json"))
    }

    #[test]
    fn llama_json_reads_back_equal() {
        let mut c = LlamaConfig {
            vocab_size: 49152,
            hidden_size: 576,
            num_hidden_layers: 30,
            num_attention_heads: 9,
            num_key_value_heads: 3,
            intermediate_size: 1536,
            max_position_embeddings: 8192,
            rms_norm_eps: 1e-5,
            rope_theta: 100000.0,
            tie_word_embeddings: true,
            hidden_act: Activation::Silu,
            rope_scaling: None,
            attention_bias: false,
            scale_shifts: [("model.layers.12.input_layernorm".to_string(), 3)].into(),
        };
        for scaling in [None, Some("llama3".to_string())] {
            c.rope_scaling = scaling;
            assert_eq!(parse(&ModelConfig::llama_json(&c)).unwrap(), ModelConfig::Llama(c.clone()));
        }
    }

    #[test]
    fn parses_all_four_types() {
        let bert = parse(
            r#"{"model_type":"bert","vocab_size":30522,"hidden_size":384,"num_hidden_layers":6,
            "num_attention_heads":12,"intermediate_size":1536,"max_position_embeddings":512,
            "layer_norm_eps":1e-12,"hidden_act":"gelu","type_vocab_size":2}"#,
        )
        .unwrap();
        assert_eq!(bert.dims(), (6, 384, 12, 1536, Some(30522)));
        let gpt2 = parse(
            r#"{"model_type":"gpt2","vocab_size":50257,"n_embd":768,"n_layer":12,"n_head":12,
            "n_positions":1024,"layer_norm_epsilon":1e-5,"activation_function":"gelu_new","n_inner":null}"#,
        )
        .unwrap();
        assert_eq!(gpt2.dims(), (12, 768, 12, 3072, Some(50257)));
        let vit = parse(
            r#"{"model_type":"vit","hidden_size":768,"num_hidden_layers":12,"num_attention_heads":12,
            "intermediate_size":3072,"image_size":224,"patch_size":16,"num_channels":3,
            "id2label":{"0":"a","1":"b","2":"c"}}"#,
        )
        .unwrap();
        match vit {
            ModelConfig::Vit(ref c) => assert_eq!(c.num_labels, Some(3)),
            _ => panic!("not vit"),
        }
        let llama = parse(
            r#"{"model_type":"llama","vocab_size":32000,"hidden_size":2048,"num_hidden_layers":22,
            "num_attention_heads":32,"num_key_value_heads":4,"intermediate_size":5632,
            "max_position_embeddings":2048,"rms_norm_eps":1e-5,"rope_theta":10000.0,
            "tie_word_embeddings":false,"hidden_act":"silu"}"#,
        )
        .unwrap();
        match llama {
            ModelConfig::Llama(ref c) => {
                assert_eq!(c.num_key_value_heads, 4);
                assert_eq!(c.hidden_act, Activation::Silu);
            }
            _ => panic!("not llama"),
        }
    }

    #[test]
    fn errors_name_file_and_field() {
        let e = parse(r#"{"model_type":"bert","vocab_size":10}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "dir/config.json: missing field \"hidden_size\"");
        let e = parse(r#"{"model_type":"t5"}"#).unwrap_err().to_string();
        assert!(
            e.starts_with("dir/config.json: field \"model_type\": unsupported"),
            "{e}"
        );
        let e = parse(r#"{"model_type":"gpt2","n_embd":8,"vocab_size":"many"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"vocab_size\" must be a positive integer"),
            "{e}"
        );
        let e = parse("{not json").unwrap_err().to_string();
        assert!(e.starts_with("dir/config.json: not valid JSON"), "{e}");
        let e = parse(r#"{"hidden_size":4}"#).unwrap_err().to_string();
        assert_eq!(e, "dir/config.json: missing field \"model_type\"");
        assert!(!e.contains('\n'));
    }
}
