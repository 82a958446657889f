//! `softmax = narrow` (nectar, issue 17): BumbleBee's composition with everything element-wise
//! in `Z_{2^45}` — the exact max tree and the exp compare 45-bit values, the products use the
//! narrow bOLEe key set — and only the row sums extended back to the full ring for the
//! reciprocal, on the Newton domain narrowed to `[1, cols]` ([`super::recip_for_rows`];
//! [`super::softmax_narrow_with`]). The exponential must run in `(45, f)`.

use super::{compose, narrow_format, recip_for_rows, SoftmaxCall, SoftmaxForm, SoftmaxProtocol, CHECK_COLS, MASK_VALUE, NARROW_L};
use crate::backend::DynBackend;
use crate::exp::Exp;
use crate::reciprocal::{RecipRange, Reciprocal, RECIP_SOFTMAX};
use crate::tolerance::softmax_tol;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `softmax = narrow`.
pub struct Narrow;

/// The row sums' range for rows of `cols`: `[1, cols]`, the Newton domain narrowed to it.
fn sums(cols: usize) -> RecipRange {
    RecipRange { lo: 1.0, hi: (cols as f64).max(2.0), newton: recip_for_rows(cols, RECIP_SOFTMAX) }
}

/// Whether `exp` runs in the narrow ring (shared with `softmax = coarse`).
pub(crate) fn exp_fits_narrow(op: &str, exp: Exp) -> Result<(), String> {
    let fp = narrow_format(FixedPoint::BUMBLEBEE).map_err(|e| e.to_string())?;
    exp.fits(fp)
        .map_err(|why| format!("softmax={op} runs exp in ({}, {}), where exp={}: {why}", fp.l(), fp.f(), exp.name()))
}

impl Protocol for Narrow {
    fn name(&self) -> &'static str {
        "narrow"
    }
    fn source(&self) -> &'static str {
        "nectar: BumbleBee softmax in Z_2^45"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "recip_base": RECIP_SOFTMAX, "l": NARROW_L, "mask": MASK_VALUE })
    }
}

impl SoftmaxProtocol for Narrow {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, c: &SoftmaxCall<'_>, exp: Exp, recip: Reciprocal) -> Result<Vec<u64>, NnError> {
        compose(b, x, c, SoftmaxForm::Narrow, exp, recip, sums(c.cols))
    }
    fn check(&self, exp: Exp, recip: Reciprocal) -> Result<(), String> {
        exp_fits_narrow(self.name(), exp)?;
        recip.check(&sums(CHECK_COLS)).map_err(|e| format!("softmax={} with reciprocal={}: {e}", self.name(), recip.name()))
    }
    fn tolerance(&self, exp: Exp, recip: Reciprocal, cols: usize, fp: FixedPoint) -> Result<i64, NnError> {
        Ok(softmax_tol(exp.tolerance(narrow_format(fp)?)?, recip.tolerance(&sums(cols), fp)?))
    }
}
