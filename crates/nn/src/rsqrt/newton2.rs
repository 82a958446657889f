//! `rsqrt = newton2` (nectar, issue 48): BumbleBee's Newton rsqrt (§V-B, [`super::rsqrt`]) with
//! the secret normalisation by a power of **two** instead of four ([`super::BY_TWO`]):
//! `u = x·2^−e ∈ [1/2, 1)` and `1/√x = u^−1/2·2^−e/2`, the odd exponents' `√2` a public
//! weight of the same telescoping sum, so still one batched comparison (twice the thresholds,
//! on one value per row) and one b2a. On `[1/2, 1)` the linear initial guess
//! [`super::RSQRT2_Y0`] is within 2.23 % (BumbleBee's on `[1/4, 1)`: 8.7 %), and two Newton
//! steps reach a relative 8.4e−7 (`1.5·e²` per step: 7.5e−4, 8.4e−7) where `newton` needs
//! three (2.2e−7): one step fewer, i.e. two product layers (four flights, measured) fewer per
//! LayerNorm or RMSNorm.

use super::{check_newton_format, rsqrt, RsqrtParams, RsqrtProtocol, RsqrtRange, BY_TWO, RSQRT_LAYERNORM};
use crate::backend::DynBackend;
use crate::tolerance::RSQRT_TOL;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// Newton steps of `newton2` (AGREEMENT).
pub const NEWTON2_ITERS: u32 = 2;

/// Relative error of `newton2` in exact arithmetic over `[1/2, 1)` after [`NEWTON2_ITERS`]
/// steps from [`super::RSQRT2_Y0`] (`1.5·e²` twice from 2.23 %; checked by the unit test).
pub const NEWTON2_REL_ERROR: f64 = 8.5e-7;

/// A call site's Newton parameters (its domain) with `newton2`'s step count.
pub fn params(p: &RsqrtParams) -> RsqrtParams {
    RsqrtParams { iters: NEWTON2_ITERS, ..*p }
}

/// The protocol `rsqrt = newton2`.
pub struct Newton2;

impl Protocol for Newton2 {
    fn name(&self) -> &'static str {
        "newton2"
    }
    fn source(&self) -> &'static str {
        "nectar: BumbleBee's Newton normalised by powers of two, two steps"
    }
    /// The LayerNorm's domain, the normalisation and the step count.
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "layernorm": params(&RSQRT_LAYERNORM), "norm": BY_TWO })
    }
}

impl RsqrtProtocol for Newton2 {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RsqrtRange) -> Result<Vec<u64>, NnError> {
        self.check(r, b.format())?;
        rsqrt(b, x, &params(&r.newton), &BY_TWO)
    }
    fn check(&self, r: &RsqrtRange, fp: FixedPoint) -> Result<(), NnError> {
        let p = params(&r.newton);
        super::check_newton_domain(r)?;
        check_newton_format(&p, &BY_TWO, fp)
    }
    /// The rounding of two steps is below that of three ([`RSQRT_TOL`]'s derivation: the
    /// last step's products and the final scaling; `1.5^2·2^−e/2` ≤ `1.5^3·2^−e`'s bound).
    fn tolerance(&self, _r: &RsqrtRange, _fp: FixedPoint) -> Result<i64, NnError> {
        Ok(RSQRT_TOL)
    }
    /// [`NEWTON2_REL_ERROR`] relative, `1/√x ≤ 1/√lo`; plus the rounding of the products.
    fn approx_error(&self, r: &RsqrtRange) -> Result<f64, NnError> {
        Ok(NEWTON2_REL_ERROR / r.lo.sqrt() + RSQRT_TOL as f64 / 18f64.exp2())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rsqrt::RSQRT2_Y0;

    /// The initial guess is within 2.23 % on [1/2, 1] and two exact Newton steps within
    /// [`NEWTON2_REL_ERROR`]; one step would not reach the fixed-point resolution.
    #[test]
    fn two_steps_from_the_guess_reach_the_stated_error() {
        let step = |v: f64| v * (3.0 - v * v) / 2.0;
        let (mut e0, mut e1, mut e2) = (0f64, 0f64, 0f64);
        for i in 0..=20_000 {
            let u = 0.5 + 0.5 * i as f64 / 20_000.0;
            let v = (RSQRT2_Y0.0 + RSQRT2_Y0.1 * u) * u.sqrt();
            e0 = e0.max((v - 1.0).abs());
            e1 = e1.max((step(v) - 1.0).abs());
            e2 = e2.max((step(step(v)) - 1.0).abs());
        }
        assert!(e0 < 0.0224, "guess {e0}");
        assert!(e1 > 1.0 / 262_144.0, "one step {e1}");
        assert!(e2 <= NEWTON2_REL_ERROR, "two steps {e2}");
    }
}
