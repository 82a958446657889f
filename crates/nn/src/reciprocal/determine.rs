//! `reciprocal = newton-determine`: East §4.2 Alg. 2 — Newton steps from a constant initial
//! value, the value and the step count determined offline for the public range
//! ([`super::reciprocal_determine`], [`super::determine_reciprocal`]).

use super::{determine_reciprocal, reciprocal_determine, RecipRange, ReciprocalProtocol, DETERMINE_DELTA, DETERMINE_MAX_ITERS};
use crate::backend::DynBackend;
use crate::tolerance::determine_tol;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `reciprocal = newton-determine`.
pub struct NewtonDetermine;

impl Protocol for NewtonDetermine {
    fn name(&self) -> &'static str {
        "newton-determine"
    }
    fn source(&self) -> &'static str {
        "East §4.2 Alg. 2"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "delta": DETERMINE_DELTA, "max_iters": DETERMINE_MAX_ITERS })
    }
}

impl ReciprocalProtocol for NewtonDetermine {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RecipRange) -> Result<Vec<u64>, NnError> {
        reciprocal_determine(b, x, r.lo, r.hi)
    }
    fn tolerance(&self, r: &RecipRange, _fp: FixedPoint) -> Result<i64, NnError> {
        determine_tol(r.lo, r.hi)
    }
    /// Determine's target δ on the range plus the `4t` LSB of rounding of its `t` steps.
    fn approx_error(&self, r: &RecipRange) -> Result<f64, NnError> {
        let t = determine_reciprocal(r.lo, r.hi, DETERMINE_DELTA)?.iters;
        Ok(DETERMINE_DELTA + (4 * t) as f64 / 18f64.exp2())
    }
}
