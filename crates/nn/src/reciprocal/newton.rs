//! `reciprocal = newton`: BumbleBee §V-B — normalisation by a secret power of two found by one
//! batched comparison, a linear initial value and Newton steps ([`super::reciprocal`], the
//! evaluator, with its cost and error in the module docs).

use super::{reciprocal, RecipRange, ReciprocalProtocol, RECIP_SOFTMAX, RECIP_Y0};
use crate::backend::DynBackend;
use crate::tolerance::RECIP_TOL;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `reciprocal = newton`.
pub struct Newton;

impl Protocol for Newton {
    fn name(&self) -> &'static str {
        "newton"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §V-B Newton"
    }
    /// The softmax's domain and the initial value; each call site's domain is its own
    /// AGREEMENT constant, fixed by the code both parties run.
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "softmax": RECIP_SOFTMAX, "y0": RECIP_Y0 })
    }
}

impl ReciprocalProtocol for Newton {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RecipRange) -> Result<Vec<u64>, NnError> {
        self.check(r)?;
        reciprocal(b, x, &r.newton)
    }
    fn check(&self, r: &RecipRange) -> Result<(), NnError> {
        super::check_newton_domain(r)
    }
    /// Its domain and the format bounds of [`super::check_recip_format`] (its products and
    /// thresholds stay inside the ring).
    fn runs_in(&self, r: &RecipRange, fp: FixedPoint) -> bool {
        super::check_newton_domain(r).is_ok() && super::check_recip_format(&r.newton, fp).is_ok()
    }
    fn tolerance(&self, _r: &RecipRange, _fp: FixedPoint) -> Result<i64, NnError> {
        Ok(RECIP_TOL)
    }
    /// Three steps from SPU's initial value reach the fixed-point resolution: the relative
    /// error 2.9e−9 times `1/x ≤ 1`, plus the rounding of the last products (8 LSB): 1e−4
    /// covers both with margin on `x ≥ 1`.
    fn approx_error(&self, _r: &RecipRange) -> Result<f64, NnError> {
        Ok(1e-4)
    }
}
