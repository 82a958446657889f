//! `rsqrt = newton-determine`: East §4.2 (`InvSqrt`) — Newton steps `y ← y(3 − x·y²)/2` from a
//! constant initial value, the value and the step count determined offline for the public
//! range ([`super::rsqrt_determine`], [`super::determine_rsqrt`]); no comparison.

use super::{check_determine, rsqrt_determine, RsqrtProtocol, RsqrtRange, DETERMINE_RSQRT_DELTA};
use crate::backend::DynBackend;
use crate::reciprocal::DETERMINE_MAX_ITERS;
use crate::tolerance::rsqrt_determine_tol;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `rsqrt = newton-determine`.
pub struct NewtonDetermine;

impl Protocol for NewtonDetermine {
    fn name(&self) -> &'static str {
        "newton-determine"
    }
    fn source(&self) -> &'static str {
        "East §4.2 Alg. 2"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "delta": DETERMINE_RSQRT_DELTA, "max_iters": DETERMINE_MAX_ITERS })
    }
}

impl RsqrtProtocol for NewtonDetermine {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RsqrtRange) -> Result<Vec<u64>, NnError> {
        rsqrt_determine(b, x, r.lo, r.hi)
    }
    fn check(&self, r: &RsqrtRange, fp: FixedPoint) -> Result<(), NnError> {
        check_determine(r.lo, r.hi, fp).map(|_| ())
    }
    fn tolerance(&self, r: &RsqrtRange, _fp: FixedPoint) -> Result<i64, NnError> {
        rsqrt_determine_tol(r.lo, r.hi)
    }
    /// Determine's relative target δ times `1/√lo`, plus the `6t` LSB of rounding of its `t`
    /// steps.
    fn approx_error(&self, r: &RsqrtRange) -> Result<f64, NnError> {
        let t = super::determine_rsqrt(r.lo, r.hi, DETERMINE_RSQRT_DELTA)?.iters;
        Ok(DETERMINE_RSQRT_DELTA / r.lo.sqrt() + (6 * t) as f64 / 18f64.exp2())
    }
}
