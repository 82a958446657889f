//! Deterministic pseudo-random weights at the real shapes of the benchmarked architectures, so
//! that `nectar bench model --random-weights` measures time and communication (which depend on
//! the shapes only) without downloading checkpoints.
//!
//! [`RandomWeights`] generates each tensor on demand from a PRG keyed by `(seed, name)` — the
//! same tensor every time it is asked for, nothing kept in memory — so a LLaMA-7B-shaped layer
//! costs the memory of the tensors of one operator at a time. Scales keep activations in a
//! sane range (normalisation weights ≈ 1, biases ≈ 0, matrices `~ 1/√fan`), not a trained model.

use crate::config::{Activation, BertConfig, Gpt2Config, LlamaConfig, ModelConfig, VitConfig};
use crate::secure::WeightSource;
use crate::ModelError;
use nectar_math::Prg;
use rand_core::RngCore;

/// An architecture with real shapes for benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RandomArch {
    /// BERT-tiny shapes (google/bert_uncased_L-2_H-128_A-2): smoke tests of the bench path.
    BertTiny,
    BertBase,
    BertLarge,
    Gpt2,
    VitBase,
    /// LLaMA-7B shapes (use `layers` to run one block).
    Llama7b,
}

impl RandomArch {
    /// The CLI names: `bert-tiny`, `bert-base`, `bert-large`, `gpt2`, `vit-base`, `llama` (or
    /// `llama-7b`).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "bert-tiny" => RandomArch::BertTiny,
            "bert-base" => RandomArch::BertBase,
            "bert-large" => RandomArch::BertLarge,
            "gpt2" | "gpt2-base" => RandomArch::Gpt2,
            "vit-base" => RandomArch::VitBase,
            "llama" | "llama-7b" => RandomArch::Llama7b,
            _ => return None,
        })
    }

    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            RandomArch::BertTiny => "bert-tiny",
            RandomArch::BertBase => "bert-base",
            RandomArch::BertLarge => "bert-large",
            RandomArch::Gpt2 => "gpt2",
            RandomArch::VitBase => "vit-base",
            RandomArch::Llama7b => "llama-7b",
        }
    }
}

/// The configuration of `arch` (HF values), with `layers` blocks if given.
pub fn random_config(arch: RandomArch, layers: Option<usize>) -> ModelConfig {
    let bert = |hidden, n_layers, heads, inter| BertConfig {
        vocab_size: 30522,
        hidden_size: hidden,
        num_hidden_layers: layers.unwrap_or(n_layers),
        num_attention_heads: heads,
        intermediate_size: inter,
        max_position_embeddings: 512,
        type_vocab_size: 2,
        layer_norm_eps: 1e-12,
        hidden_act: Activation::Gelu,
        num_labels: None,
    };
    match arch {
        RandomArch::BertTiny => ModelConfig::Bert(bert(128, 2, 2, 512)),
        RandomArch::BertBase => ModelConfig::Bert(bert(768, 12, 12, 3072)),
        RandomArch::BertLarge => ModelConfig::Bert(bert(1024, 24, 16, 4096)),
        RandomArch::Gpt2 => ModelConfig::Gpt2(Gpt2Config {
            vocab_size: 50257,
            n_embd: 768,
            n_layer: layers.unwrap_or(12),
            n_head: 12,
            n_positions: 1024,
            n_inner: 3072,
            layer_norm_epsilon: 1e-5,
            activation_function: Activation::GeluTanh,
        }),
        RandomArch::VitBase => ModelConfig::Vit(VitConfig {
            hidden_size: 768,
            num_hidden_layers: layers.unwrap_or(12),
            num_attention_heads: 12,
            intermediate_size: 3072,
            image_size: 224,
            patch_size: 16,
            num_channels: 3,
            layer_norm_eps: 1e-12,
            hidden_act: Activation::Gelu,
            num_labels: Some(1000),
        }),
        RandomArch::Llama7b => ModelConfig::Llama(LlamaConfig {
            vocab_size: 32000,
            hidden_size: 4096,
            num_hidden_layers: layers.unwrap_or(32),
            num_attention_heads: 32,
            num_key_value_heads: 32,
            intermediate_size: 11008,
            max_position_embeddings: 4096,
            rms_norm_eps: 1e-6,
            rope_theta: 10000.0,
            tie_word_embeddings: false,
            hidden_act: Activation::Silu,
            rope_scaling: None,
            attention_bias: false,
        }),
    }
}

/// Pseudo-random tensors keyed by `(seed, name)` (see module docs). Every name exists except
/// the optional pooler/classifier head (unless [`RandomWeights::with_classifier`]).
#[derive(Clone, Debug)]
pub struct RandomWeights {
    seed: u64,
    classifier: bool,
}

impl RandomWeights {
    /// Weights derived from `seed`.
    pub fn new(seed: u64) -> Self {
        RandomWeights {
            seed,
            classifier: false,
        }
    }

    /// Also provides `classifier.{weight,bias}` (the ViT benchmark classifies; its shape comes
    /// from the config's label count).
    pub fn with_classifier(mut self) -> Self {
        self.classifier = true;
        self
    }

    fn prg(&self, name: &str) -> Prg {
        // FNV-1a of the name, next to the seed: distinct names give distinct PRG keys.
        let mut hsh: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            hsh = (hsh ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&self.seed.to_le_bytes());
        key[8..].copy_from_slice(&hsh.to_le_bytes());
        Prg::new(key)
    }
}

fn is_norm(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.ends_with(".weight") && (n.contains("layernorm") || n.contains("ln_") || n.contains("norm."))
}

fn is_embedding(name: &str) -> bool {
    [
        "word_embeddings",
        "position_embeddings",
        "token_type_embeddings",
        "wte.",
        "wpe.",
        "embed_tokens",
    ]
    .iter()
    .any(|k| name.contains(k))
}

impl WeightSource for RandomWeights {
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        if !self.contains(name) {
            return Err(ModelError::Weights {
                file: "<random weights>".into(),
                msg: format!("missing tensor \"{name}\""),
            });
        }
        let n: usize = shape.iter().product();
        let (center, half) = if is_norm(name) {
            (1.0f32, 0.1f32)
        } else if name.ends_with(".bias") {
            (0.0, 0.02)
        } else if is_embedding(name) {
            (0.0, 0.5)
        } else {
            let fan = shape.iter().copied().max().unwrap_or(1).max(1) as f32;
            (0.0, 3f32.sqrt() / fan.sqrt())
        };
        let mut bytes = vec![0u8; n * 4];
        self.prg(name).fill_bytes(&mut bytes);
        Ok(bytes
            .chunks_exact(4)
            .map(|c| {
                let u = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32 / u32::MAX as f32; // [0, 1]
                center + half * (2.0 * u - 1.0)
            })
            .collect())
    }
    fn contains(&self, name: &str) -> bool {
        !(name.starts_with("pooler") || (name.starts_with("classifier") && !self.classifier))
    }
    fn shape(&self, _name: &str) -> Option<Vec<usize>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_per_name_and_scaled() {
        let w = RandomWeights::new(7);
        let a = w.tensor("h.0.attn.c_attn.weight", &[8, 24]).unwrap();
        assert_eq!(a, w.tensor("h.0.attn.c_attn.weight", &[8, 24]).unwrap());
        assert_ne!(a, w.tensor("h.1.attn.c_attn.weight", &[8, 24]).unwrap());
        assert!(a
            .iter()
            .all(|v| v.abs() <= 3f32.sqrt() / 24f32.sqrt() + 1e-6));
        let g = w.tensor("h.0.ln_1.weight", &[16]).unwrap();
        assert!(g.iter().all(|v| (v - 1.0).abs() <= 0.1 + 1e-6));
        assert!(!w.contains("classifier.weight"));
        assert!(w.clone().with_classifier().contains("classifier.weight"));
        assert_eq!(RandomArch::parse("llama"), Some(RandomArch::Llama7b));
        match random_config(RandomArch::Llama7b, Some(1)) {
            ModelConfig::Llama(c) => assert_eq!(c.num_hidden_layers, 1),
            _ => panic!("llama config expected"),
        }
    }
}
