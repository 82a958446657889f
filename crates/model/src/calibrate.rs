//! Calibration of the scale shifts ([`crate::config::LlamaConfig::scale_shifts`]).
//!
//! Some LLaMA-family checkpoints carry "massive activations": a few residual channels of the
//! first positions grow to 10^4 (SmolLM2-135M: from its 12th layer on |x| reaches 2.5e4 and a
//! row's `mean(x²)` 1.1e6; that layer's FFN down projection outputs 2.5e4). In the (64, 18)
//! format three domains are exceeded:
//! - the secure RMSNorm's square wraps the ring for `|x|·2^f ≥ 2^((l−1)/2)`, i.e. `|x| ≥ 2^13.5`;
//! - its rsqrt serves `mean(x²) < 4^hi = 2^18`;
//! - a product under `olt-ring = narrow` must stay below `2^13` ([`nectar_linear::olt_ring`]).
//!
//! RMSNorm is scale-invariant, so such a norm takes its statistics of `x·2^−k`
//! ([`nectar_nn::rmsnorm`]); such a linear operator runs at `W·2^−k` and its shares are
//! multiplied by `2^k` (local). The server chooses each `k` from its own weights by running
//! the f32 model on [`CALIBRATION_TEXTS`], with margins: `mean(x²)·4^−k ≤ 4^hi / 16`,
//! `|x|·2^−k ≤ 2^(l/2 − f − 3)` (5.7× below the wrap) and a product's `|y|·2^−k ≤ 2^11` (4×).
//! The shifts travel in the public config (`nectar_scale_shifts`): the client learns, per
//! operator, a power of two bounding the activations' size on the calibration texts — a
//! property of the weights, as public as the architecture, and nothing about any input. An
//! input whose activations exceed the calibrated ones by more than the margins would overflow.

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::config::ScaleShifts;
use crate::llama::Llama;
use crate::reference::Site;
use crate::ModelError;
use nectar_math::FixedPoint;

/// Texts the server's calibration runs (raw and inside a chat turn when the model has a
/// template): questions, prose, code and numbers.
pub const CALIBRATION_TEXTS: [&str; 6] = [
    "What is the capital of France?",
    "The quick brown fox jumps over the lazy dog. It was a bright cold day in April, and the clocks were striking thirteen.",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "In 1969, 3 astronauts flew 384,400 km to the Moon; the mission lasted 8 days, 3 hours and 18 minutes.",
    "Write a short poem about the sea.",
    "Explain why the sky is blue in one sentence.",
];

/// Largest `|y|` of a product under `olt-ring = narrow`, the strictest ring (its `2^13`, 4×).
pub const LINEAR_CAP: f64 = 2048.0;

/// What one site's values looked like over the calibration texts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub site: Site,
    /// Largest and smallest row `mean(x²)`.
    pub max_ms: f64,
    pub min_ms: f64,
    /// Largest `|x|`.
    pub max_abs: f64,
}

/// Runs each of `prompts` through `llama` (f32) and records every norm's input and every
/// linear operator's output range, by name.
pub fn ranges(llama: &Llama, prompts: &[Vec<u32>]) -> Result<BTreeMap<String, Range>, ModelError> {
    let seen: RefCell<BTreeMap<String, Range>> = RefCell::new(BTreeMap::new());
    let hidden = llama.config.hidden_size;
    let observe = |site: Site, name: &str, x: &[f32]| {
        if !matches!(site, Site::NormInput | Site::LinearOutput) {
            return;
        }
        let mut seen = seen.borrow_mut();
        // norm inputs are rows of `hidden`; a product's rows are only needed for |y|
        let width = if site == Site::NormInput { hidden } else { x.len().max(1) };
        for row in x.chunks(width) {
            let ms = row.iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>() / row.len().max(1) as f64;
            let abs = row.iter().fold(0f64, |m, &v| m.max((v as f64).abs()));
            let e = seen.entry(name.to_string()).or_insert(Range { site, max_ms: ms, min_ms: ms, max_abs: abs });
            e.max_ms = e.max_ms.max(ms);
            e.min_ms = e.min_ms.min(ms);
            e.max_abs = e.max_abs.max(abs);
        }
    };
    for ids in prompts {
        let mut cache = llama.new_cache();
        llama.forward_observed(ids, &mut cache, Some(&observe))?;
    }
    Ok(seen.into_inner())
}

/// The smallest shift of each site that needs one in the format `fp` with an rsqrt domain of
/// `[·, 4^hi)` (margins in the module docs); sites that need none are left out.
pub fn shifts(ranges: &BTreeMap<String, Range>, fp: FixedPoint, hi: i32) -> Result<ScaleShifts, ModelError> {
    let ms_cap = (2.0 * hi as f64 - 4.0).exp2();
    let abs_cap = ((fp.l() as f64) / 2.0 - fp.f() as f64 - 3.0).exp2();
    let mut out = ScaleShifts::new();
    for (name, r) in ranges {
        if !r.max_ms.is_finite() || !r.max_abs.is_finite() {
            return Err(ModelError::Input(format!("{name}: non-finite activations in calibration")));
        }
        let fits = |k: u32| {
            let down = (-(k as f64)).exp2();
            match r.site {
                Site::NormInput => r.max_ms * down * down <= ms_cap && r.max_abs * down <= abs_cap,
                Site::LinearOutput => r.max_abs * down <= LINEAR_CAP,
                Site::ActivationInput | Site::SoftmaxInput => true, // not recorded by `ranges`
            }
        };
        let k = (0..24u32).find(|&k| fits(k)).ok_or_else(|| {
            ModelError::Unsupported(format!(
                "{name}: activations up to {:.3e} are beyond the fixed-point format even scaled by 2^-23",
                r.max_abs
            ))
        })?;
        if k > 0 {
            out.insert(name.clone(), k);
        }
    }
    Ok(out)
}

/// The shifts of a LLaMA `model` in the format `fp` with an rsqrt domain of `[·, 4^hi)`:
/// [`CALIBRATION_TEXTS`] raw and, when the model has a chat template, each as a user turn
/// (without a tokenizer: ids spread over the vocabulary; other architectures: none).
pub fn model_scale_shifts(model: &crate::Model, fp: FixedPoint, hi: i32) -> Result<ScaleShifts, ModelError> {
    let crate::Network::Llama(llama) = model.network() else {
        return Ok(ScaleShifts::new());
    };
    let mut prompts = Vec::new();
    match model.tokenizer() {
        Some(tok) => {
            for text in CALIBRATION_TEXTS {
                prompts.push(tok.encode(text)?.ids);
                if model.gguf().is_some_and(|g| g.chat_template.is_some()) {
                    let turn = [crate::chat_template::Message { role: "user".into(), content: text.into() }];
                    prompts.push(tok.encode(&model.apply_chat_template(&turn)?)?.ids);
                }
            }
        }
        None => {
            // no tokenizer: token ids spread over the vocabulary
            let vocab = llama.config.vocab_size.max(1) as u64;
            let len = 32.min(llama.config.max_position_embeddings);
            for stride in [7919u64, 104_729] {
                prompts.push((0..len as u64).map(|i| ((i * stride + 1) % vocab) as u32).collect());
            }
        }
    }
    shifts(&ranges(llama, &prompts)?, fp, hi)
}

/// The inputs of every activation (keyed by its name: `gelu`, `gelu_tanh`, `silu`, `relu`) and
/// of the softmax exponentials (`softmax`: `score − row max` of the visible keys) when `model`
/// (f32) runs on each of `texts` (tokenized with the model's tokenizer): the distributions a
/// distribution-aware approximation is fitted to (Nimbus §4, `nectar fit --model`).
pub fn activation_samples(model: &crate::Model, texts: &[String]) -> Result<BTreeMap<String, Vec<f32>>, ModelError> {
    let tok = model
        .tokenizer()
        .ok_or_else(|| ModelError::Unsupported("activation samples need the model's tokenizer".into()))?;
    let seen: RefCell<BTreeMap<String, Vec<f32>>> = RefCell::new(BTreeMap::new());
    let observe = |site: Site, name: &str, x: &[f32]| {
        if matches!(site, Site::ActivationInput | Site::SoftmaxInput) {
            seen.borrow_mut().entry(name.to_string()).or_default().extend_from_slice(x);
        }
    };
    for text in texts {
        let e = tok.encode(text)?;
        match model.network() {
            crate::Network::Bert(bert) => {
                bert.forward_observed(&e.ids, &e.type_ids, &e.attention_mask, Some(&observe))?;
            }
            crate::Network::Gpt2(gpt2) => {
                gpt2.forward_observed(&e.ids, &mut gpt2.new_cache(), Some(&observe))?;
            }
            crate::Network::Llama(llama) => {
                llama.forward_observed(&e.ids, &mut llama.new_cache(), Some(&observe))?;
            }
            crate::Network::Vit(_) | crate::Network::ConfigOnly => {
                return Err(ModelError::Unsupported(
                    "activation samples are taken from text models with weights (BERT, GPT-2, LLaMA)".into(),
                ))
            }
        }
    }
    Ok(seen.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifts_are_the_smallest_within_the_margins() {
        let fp = FixedPoint::BUMBLEBEE;
        let norm = |max_ms: f64, max_abs: f64| Range { site: Site::NormInput, max_ms, min_ms: 1.0, max_abs };
        let lin = |max_abs: f64| Range { site: Site::LinearOutput, max_ms: 1.0, min_ms: 1.0, max_abs };
        let ranges: BTreeMap<String, Range> = [
            ("small".to_string(), norm(1.0e3, 800.0)),
            // SmolLM2's 12th layer: mean square 1.09e6, |x| 2.49e4
            ("massive".to_string(), norm(1.09e6, 2.49e4)),
            ("edge".to_string(), norm(16384.0, 2048.0)),
            ("down".to_string(), lin(2.49e4)),
            ("qkv".to_string(), lin(2048.0)),
        ]
        .into();
        let s = shifts(&ranges, fp, 9).unwrap();
        assert_eq!(s.get("small"), None);
        assert_eq!(s.get("edge"), None);
        assert_eq!(s.get("qkv"), None);
        // |x| 2.49e4 under the cap 2^11 of (64, 18) needs k = 4; then 1.09e6 / 4^4 = 4258 <= 2^14
        assert_eq!(s.get("massive"), Some(&4));
        assert_eq!(s.get("down"), Some(&4));
        let bad: BTreeMap<String, Range> = [("x".to_string(), norm(f64::INFINITY, 1.0))].into();
        assert!(shifts(&bad, fp, 9).is_err());
    }
}
