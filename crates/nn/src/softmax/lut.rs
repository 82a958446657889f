//! `softmax = lut`: CipherGPT's five steps as ROTL runs them (§II-E) — BumbleBee's composition
//! with ROTL's two-table exponential and the LUT-initialised Newton reciprocal, **whatever the
//! suite's `exp` and `reciprocal`** ([`softmax_lut`]; the `rotl` preset names those
//! same two protocols, so its table says what runs).

use super::{softmax_with, SoftmaxCall, SoftmaxProtocol, MASK_VALUE};
use crate::backend::{Backend, DynBackend};
use crate::exp::Exp;
use crate::lut::{exp_lut, reciprocal_lut, EXP_LUT};
use crate::reciprocal::Reciprocal;
use crate::tolerance::{exp_lut_tol, reciprocal_lut_tol, softmax_tol};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// Row softmax of `rows × cols` with the LUT exp and reciprocal (CipherGPT, ROTL §II-E).
pub fn softmax_lut<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    mask: Option<&[bool]>,
) -> Result<B::Val, NnError> {
    let hi = (cols as f64).max(2.0);
    softmax_with(b, x, rows, cols, mask, |b, d| exp_lut(b, d, &EXP_LUT), |b, s| reciprocal_lut(b, s, hi))
}

/// The protocol `softmax = lut`.
pub struct Lut;

impl Protocol for Lut {
    fn name(&self) -> &'static str {
        "lut"
    }
    fn source(&self) -> &'static str {
        "ROTL §II-E LUT softmax"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "exp": format!("{EXP_LUT:?}"), "reciprocal": "lut", "mask": MASK_VALUE })
    }
    fn security(&self) -> Result<nectar_math::registry::Security, String> {
        Ok(crate::lut::security())
    }
}

impl SoftmaxProtocol for Lut {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, c: &SoftmaxCall<'_>, _exp: Exp, _recip: Reciprocal) -> Result<Vec<u64>, NnError> {
        softmax_lut(b, x, c.rows, c.cols, c.mask)
    }
    fn composes(&self) -> bool {
        false
    }
    fn tolerance(&self, _exp: Exp, _recip: Reciprocal, cols: usize, fp: FixedPoint) -> Result<i64, NnError> {
        let hi = (cols as f64).max(2.0);
        Ok(softmax_tol(exp_lut_tol(&EXP_LUT, fp.f()), reciprocal_lut_tol(hi, fp.f())?))
    }
}
