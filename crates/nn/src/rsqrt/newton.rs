//! `rsqrt = newton`: BumbleBee §V-B — normalisation by a secret power of four found by one
//! batched comparison, a linear initial value and Newton steps ([`super::rsqrt`], the
//! evaluator, with its cost and error in the module docs).

use super::{check_newton_format, rsqrt, RsqrtProtocol, RsqrtRange, BY_FOUR, RSQRT_LAYERNORM, RSQRT_Y0};
use crate::backend::DynBackend;
use crate::tolerance::RSQRT_TOL;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `rsqrt = newton`.
pub struct Newton;

impl Protocol for Newton {
    fn name(&self) -> &'static str {
        "newton"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §V-B Newton"
    }
    /// The LayerNorm's domain and the initial value; each call site's domain is its own
    /// AGREEMENT constant, fixed by the code both parties run.
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "layernorm": RSQRT_LAYERNORM, "y0": RSQRT_Y0 })
    }
}

impl RsqrtProtocol for Newton {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RsqrtRange) -> Result<Vec<u64>, NnError> {
        self.check(r, b.format())?;
        rsqrt(b, x, &r.newton, &BY_FOUR)
    }
    fn check(&self, r: &RsqrtRange, fp: FixedPoint) -> Result<(), NnError> {
        let p = &r.newton;
        super::check_newton_domain(r)?;
        check_newton_format(p, &BY_FOUR, fp)
    }
    fn tolerance(&self, _r: &RsqrtRange, _fp: FixedPoint) -> Result<i64, NnError> {
        Ok(RSQRT_TOL)
    }
    /// Three steps leave a relative 2.2e−7 (module docs); `1/√x ≤ 1/√lo`; plus the rounding of
    /// the products ([`RSQRT_TOL`] LSB at f = 18).
    fn approx_error(&self, r: &RsqrtRange) -> Result<f64, NnError> {
        Ok(2.2e-7 / r.lo.sqrt() + RSQRT_TOL as f64 / 18f64.exp2())
    }
}
