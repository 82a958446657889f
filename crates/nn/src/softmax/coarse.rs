//! `softmax = coarse` (nectar, issue 17): `narrow` with a coarse row max — the max tree and the
//! exp clip compare in `Z_{2^34}` on a `2^−4` grid, the rows shifted by the max's slack, the
//! reciprocal's domain starting at 1/2 ([`super::SoftmaxForm::Coarse`], [`super::coarse_recip`]).
//! Inputs `|x| < 4096` at f = 18. The exponential must run in `(45, f)`.

use super::narrow::exp_fits_narrow;
use super::{coarse_recip, compose, narrow_format, SoftmaxCall, SoftmaxForm, SoftmaxProtocol, CHECK_COLS, COARSE_CMP_L, NARROW_L};
use crate::backend::DynBackend;
use crate::exp::Exp;
use crate::reciprocal::{RecipRange, Reciprocal, RECIP_SOFTMAX};
use crate::tolerance::{coarse_softmax_tol, softmax_tol};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `softmax = coarse`.
pub struct Coarse;

/// The row sums' range for rows of `cols`: `[1/2, cols]` (the max's slack is at most 1/2; also
/// `softmax = grid`'s).
pub(super) fn sums(cols: usize) -> RecipRange {
    RecipRange { lo: 0.5, hi: (cols as f64).max(2.0), newton: coarse_recip(cols, RECIP_SOFTMAX) }
}

impl Protocol for Coarse {
    fn name(&self) -> &'static str {
        "coarse"
    }
    fn source(&self) -> &'static str {
        "nectar: narrow softmax with a coarse row max"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "recip_iters": RECIP_SOFTMAX.iters, "l": NARROW_L, "cmp_l": COARSE_CMP_L, "mask": "−2^(cmp_l−4−f)" })
    }
}

impl SoftmaxProtocol for Coarse {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, c: &SoftmaxCall<'_>, exp: Exp, recip: Reciprocal) -> Result<Vec<u64>, NnError> {
        compose(b, x, c, SoftmaxForm::Coarse, exp, recip, sums(c.cols))
    }
    fn check(&self, exp: Exp, recip: Reciprocal) -> Result<(), String> {
        check(self.name(), exp, recip)
    }
    fn tolerance(&self, exp: Exp, recip: Reciprocal, cols: usize, fp: FixedPoint) -> Result<i64, NnError> {
        tolerance(exp, recip, cols, fp)
    }
}

/// The check of the compositions with a shifted row max (`coarse`, `grid`): the exponential in
/// the narrow ring, the reciprocal on [`sums`].
pub(super) fn check(name: &str, exp: Exp, recip: Reciprocal) -> Result<(), String> {
    exp_fits_narrow(name, exp)?;
    recip.check(&sums(CHECK_COLS)).map_err(|e| format!("softmax={name} with reciprocal={}: {e}", recip.name()))
}

/// Their twin-vs-protocol bound: the secure max may keep another element than the twin's (each
/// within the slack), so the two evaluate the same approximate softmax at different shifts
/// ([`coarse_softmax_tol`]).
pub(super) fn tolerance(exp: Exp, recip: Reciprocal, cols: usize, fp: FixedPoint) -> Result<i64, NnError> {
    let narrow = softmax_tol(exp.tolerance(narrow_format(fp)?)?, recip.tolerance(&sums(cols), fp)?);
    Ok(coarse_softmax_tol(narrow, fp.f()))
}
