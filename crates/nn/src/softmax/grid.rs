//! `softmax = grid` (nectar, issue 48): `coarse` with fewer rounds in its row max — every score
//! rounded once to the grid `2^−2`, then groups of up to 8 compared all pairs at once
//! ([`crate::max::grid::max_rows_grid`]; [`super::SoftmaxForm::Grid`]) — and the row sums kept
//! in `Z_{2^45}` where the reciprocal serves them there
//! ([`crate::reciprocal::ReciprocalProtocol::runs_in`]: rows of fewer than 64 keys at f = 18),
//! saving the extension to the full ring; the same exponential clip in `Z_{2^34}`, reciprocal
//! domain from 1/2 and inputs `|x| < 4096` at f = 18. The exponential must run in `(45, f)`.

use super::narrow::exp_fits_narrow;
use super::{coarse_recip, compose, grid_max, narrow_format, SoftmaxCall, SoftmaxForm, SoftmaxProtocol, CHECK_COLS, COARSE_CMP_L, GRID_PRECISION, NARROW_L};
use crate::backend::DynBackend;
use crate::exp::Exp;
use crate::max::grid::GRID_MAX_RADIX;
use crate::reciprocal::{RecipRange, Reciprocal, RECIP_SOFTMAX};
use crate::tolerance::{coarse_softmax_tol, softmax_tol};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `softmax = grid`.
pub struct Grid;

/// The row sums' range for rows of `cols`: `[1/2, cols]` (the max's slack is 1/2).
fn sums(cols: usize) -> RecipRange {
    RecipRange { lo: 0.5, hi: (cols as f64).max(2.0), newton: coarse_recip(cols, RECIP_SOFTMAX) }
}

impl Protocol for Grid {
    fn name(&self) -> &'static str {
        "grid"
    }
    fn source(&self) -> &'static str {
        "nectar: narrow softmax, row max by grid rounding and all-pairs groups"
    }
    fn params(&self) -> serde_json::Value {
        let cmp_l = grid_max(FixedPoint::BUMBLEBEE.f()).map(|g| g.l).ok();
        serde_json::json!({
            "recip_iters": RECIP_SOFTMAX.iters, "l": NARROW_L, "clip_l": COARSE_CMP_L,
            "grid": format!("2^-{GRID_PRECISION}"), "max_radix": GRID_MAX_RADIX, "cmp_l_at_f18": cmp_l,
        })
    }
}

impl SoftmaxProtocol for Grid {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, c: &SoftmaxCall<'_>, exp: Exp, recip: Reciprocal) -> Result<Vec<u64>, NnError> {
        compose(b, x, c, SoftmaxForm::Grid, exp, recip, sums(c.cols))
    }
    fn check(&self, exp: Exp, recip: Reciprocal) -> Result<(), String> {
        exp_fits_narrow(self.name(), exp)?;
        recip.check(&sums(CHECK_COLS)).map_err(|e| format!("softmax={} with reciprocal={}: {e}", self.name(), recip.name()))
    }
    /// As `coarse`'s: the secure max may keep another element than the twin's (each within the
    /// slack), so the two evaluate the same approximate softmax at different shifts.
    fn tolerance(&self, exp: Exp, recip: Reciprocal, cols: usize, fp: FixedPoint) -> Result<i64, NnError> {
        let narrow = softmax_tol(exp.tolerance(narrow_format(fp)?)?, recip.tolerance(&sums(cols), fp)?);
        Ok(coarse_softmax_tol(narrow, fp.f()))
    }
}
