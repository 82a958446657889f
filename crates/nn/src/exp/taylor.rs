//! `exp = taylor`: the exponential of non-positive inputs by BumbleBee §V-B: `exp(x) ≈ (1 + x/2^n)^(2^n)` for
//! `x ∈ [T_exp, 0]`, and 0 for `x < T_exp`.
//!
//! Protocol: one truncation by `n` (the division), `+1` locally, `n` squarings, one (approximate)
//! less-than against `T_exp` and one mux to clip. Cost on m elements: trunc m, square n·m,
//! less_than m × 1, mux m; n + 2 rounds of arithmetic plus one comparison (in parallel with the
//! first). Error (f64 vs twin, f = 18, n = 6, T_exp = −14): see `docs/results/nonlinear.md`
//! (REFERENCE.md §3.4: max 4.3e−3, mean 1.1e−3 for the approximation itself).
//! Input domain: x ≤ 0 (inputs > 0 are evaluated by the same polynomial, which is not exp);
//! `|x| < 2^(l−2−f)`.

use super::{keep_bit, ExpParams, ExpProtocol};
use crate::backend::{enc, Backend, DynBackend};
use crate::poly::BUMBLEBEE_LESS;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// BumbleBee §VII: T_exp = −14, n = 6 (for f = 18). The artifact config uses n = 5
/// (REFERENCE.md §3.4 discrepancy); we follow the paper.
pub const EXP_BUMBLEBEE: ExpParams = ExpParams { t_exp: -14.0, n: 6, less: BUMBLEBEE_LESS, clip_l: None };

/// `(1 + x/2^n)^(2^n)` without clipping (n squarings).
pub fn exp_taylor<B: Backend + ?Sized>(b: &mut B, x: &B::Val, n: u32) -> Result<B::Val, NnError> {
    let y = b.trunc(x, n)?;
    let one = enc(b, 1.0)?;
    let mut y = b.add_const(&y, &[one])?;
    for _ in 0..n {
        y = b.square(&y)?;
    }
    Ok(y)
}

/// Clipped exponential of non-positive inputs.
pub fn exp_neg<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ExpParams) -> Result<B::Val, NnError> {
    let keep = keep_bit(b, x, p)?;
    let y = exp_taylor(b, x, p.n)?;
    b.mux(&keep, &y)
}

/// Clipped exponential under mixed bit-width in (32, 12) (§V-C, §VII for BERT/GPT2/ViT).
pub fn exp_neg_mixed<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ExpParams) -> Result<B::Val, NnError> {
    crate::mixed::with_format(b, x, crate::mixed::ACT_FORMAT, |b, y| exp_neg(b, y, p))
}

/// The approximation in f64 (no fixed point).
pub fn exp_neg_f64(x: f64, p: &ExpParams) -> f64 {
    if x < p.t_exp {
        0.0
    } else {
        (1.0 + x / (p.n as f64).exp2()).powi(1 << p.n)
    }
}

/// exp = (1 + x/2^n)^(2^n), y_k ≤ 1: e_0 ≤ 1 (trunc), e_{k+1} ≤ 2·e_k + 2, so e_n ≤ 3·2^n − 2
/// = 190 for n = 6 (by OT products: 2^(n+1) − 1 = 127, which is attained).
pub const EXP_TOL: i64 = 190;
/// exp mixed at f' = 12: e_0 ≤ 2 (entering δ and the division's truncation): 4·2^n − 2 = 254 LSB'
/// · 2^6.
pub const EXP_MIXED_TOL: i64 = 254 << 6;

/// The protocol `exp = taylor`.
pub struct Taylor;

impl Protocol for Taylor {
    fn name(&self) -> &'static str {
        "taylor"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §V-B exp"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "exp": EXP_BUMBLEBEE })
    }
}

impl ExpProtocol for Taylor {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, clip_l: Option<u32>) -> Result<Vec<u64>, NnError> {
        exp_neg(b, x, &ExpParams { clip_l, ..EXP_BUMBLEBEE })
    }
    /// [`EXP_TOL`]: the derivation holds in any ring wide enough for the squarings.
    fn tolerance(&self, _fp: FixedPoint) -> Result<i64, NnError> {
        Ok(EXP_TOL)
    }
    /// REFERENCE.md §3.4: max 4.3e−3 for the approximation on [T_exp, 0]; 5e−3 with the twin's
    /// rounding and the clip (e^−14 = 8.3e−7).
    fn approx_error(&self) -> Result<f64, NnError> {
        Ok(5e-3)
    }
    fn stated_accuracy(&self) -> &'static str {
        "avg err within 2^−10 ≈ 9.8e−4 (§V-B)"
    }
    fn pivots(&self) -> Vec<f64> {
        vec![EXP_BUMBLEBEE.t_exp]
    }
}
