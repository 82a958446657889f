//! `norm = east-eq9`: East §4.2 Eq. (9), Alg. 4 — no division: `z = n·x − Σx` scaled by a
//! public `2^k`, `η = InvSqrt(Σz'² + c·ε)` by the suite's rsqrt at `f + 6` fractional bits
//! (East's is the Determine rsqrt, `rsqrt = newton-determine`), `y = z'·(η·√n)·γ + β`
//! ([`crate::layernorm::layernorm_east_with`]).

use super::{newton_domain, NormCall, NormProtocol};
use crate::backend::DynBackend;
use crate::layernorm::{east_rsqrt_range, layernorm_east_with, EastNormParams, EAST_NORM_DEFAULT, EAST_NORM_EXTRA_BITS};
use crate::rsqrt::{Rsqrt, RsqrtRange};
use crate::tolerance::{east_norm_tol, rsqrt_determine_tol};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `norm = east-eq9`.
pub struct EastEq9;

impl Protocol for EastEq9 {
    fn name(&self) -> &'static str {
        "east-eq9"
    }
    fn source(&self) -> &'static str {
        "East §4.2 Eq. (9)"
    }
    fn params(&self) -> serde_json::Value {
        let p = EAST_NORM_DEFAULT;
        serde_json::json!({ "var_lo": p.var_lo, "var_hi": p.var_hi, "extra_bits": EAST_NORM_EXTRA_BITS })
    }
}

/// The rsqrt's range for rows of `cols` (with BumbleBee's Newton domain around it).
fn range(cols: usize, layer: bool, p: &EastNormParams) -> RsqrtRange {
    let (lo, hi) = east_rsqrt_range(cols, layer, p);
    RsqrtRange { lo, hi, newton: newton_domain(lo, hi) }
}

/// The format the rsqrt runs in.
fn fine(fp: FixedPoint) -> Result<FixedPoint, NnError> {
    Ok(FixedPoint::new(fp.l(), fp.f() + EAST_NORM_EXTRA_BITS)?)
}

impl NormProtocol for EastEq9 {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, c: &NormCall<'_>, rsqrt: Rsqrt) -> Result<Vec<u64>, NnError> {
        let p = EastNormParams { eps: c.eps, ..EAST_NORM_DEFAULT };
        self.check(rsqrt, c.cols, c.eps, b.format())?;
        if c.stats_shift > 0 {
            return Err(NnError::BadArgument(
                "norm east-eq9 has no statistics shift (a model with massive activations needs norm = outer or bumblebee)".into(),
            ));
        }
        let inv = |b: &mut DynBackend<'_>, s: &Vec<u64>, lo: f64, hi: f64| {
            rsqrt.eval(b, s, &RsqrtRange { lo, hi, newton: newton_domain(lo, hi) })
        };
        layernorm_east_with(b, x, c.rows, c.cols, c.gamma, c.beta, &p, inv)
    }
    fn check(&self, rsqrt: Rsqrt, cols: usize, eps: f64, fp: FixedPoint) -> Result<(), NnError> {
        let p = EastNormParams { eps, ..EAST_NORM_DEFAULT };
        for layer in [true, false] {
            rsqrt.check(&range(cols, layer, &p), fine(fp)?)?;
        }
        Ok(())
    }
    /// [`east_norm_tol`], derived with the rounding of East's Determine rsqrt at `f + 6` bits
    /// ([`rsqrt_determine_tol`] on the range): stated for an rsqrt within that bound.
    fn tolerance(&self, rsqrt: Rsqrt, cols: usize, fp: FixedPoint) -> Result<i64, NnError> {
        let r = range(cols, true, &EAST_NORM_DEFAULT);
        let (t, derived) = (rsqrt.tolerance(&r, fine(fp)?)?, rsqrt_determine_tol(r.lo, r.hi)?);
        if t > derived {
            return Err(NnError::BadArgument(format!(
                "norm=east-eq9 with rsqrt={}: no stated bound (its {t} LSB at f + {EAST_NORM_EXTRA_BITS} exceed the {derived} of the Determine rsqrt the bound is derived with)",
                rsqrt.name()
            )));
        }
        Ok(east_norm_tol(EAST_NORM_DEFAULT.var_lo, 1.0))
    }
}
