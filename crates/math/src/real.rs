//! The exact real functions nectar's approximations target, written once: every reference
//! (the f32 model, the twin's exact operators, the fits, the accuracy tables, the tests) calls
//! these.

/// The two GeLU forms checkpoints use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GeluForm {
    /// `x·Φ(x) = x/2 (1 + erf(x/√2))` (BERT, ViT: `hidden_act = "gelu"`).
    Erf,
    /// GPT-2's `gelu_new`: `x/2 (1 + tanh(√(2/π) (x + 0.044715 x³)))` (the form of BumbleBee §V-A).
    Tanh,
}

impl GeluForm {
    /// Both forms, erf first.
    pub const ALL: [GeluForm; 2] = [GeluForm::Erf, GeluForm::Tanh];
}

/// Exact GeLU in the given form.
pub fn gelu(x: f64, form: GeluForm) -> f64 {
    match form {
        GeluForm::Erf => 0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2)),
        GeluForm::Tanh => {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
        }
    }
}

/// Exact SiLU `x·σ(x) = x/(1 + e^{−x})`.
pub fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(gelu(0.0, GeluForm::Erf), 0.0);
        assert!((gelu(1.0, GeluForm::Erf) - 0.841_344_746_068_542_9).abs() < 1e-15);
        assert!((gelu(1.0, GeluForm::Tanh) - 0.841_191_990_608_276_8).abs() < 1e-12);
        // the forms differ by < 1e−3 everywhere
        let worst = (-800..800).map(|i| i as f64 / 100.0).map(|x| (gelu(x, GeluForm::Erf) - gelu(x, GeluForm::Tanh)).abs());
        assert!(worst.fold(0.0, f64::max) < 1e-3);
        assert!((silu(1.0) - 0.731_058_578_630_004_9).abs() < 1e-15);
    }
}
