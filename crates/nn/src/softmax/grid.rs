//! `softmax = grid` (nectar, issue 48): `coarse` with fewer rounds in its row max — every score
//! rounded once to the grid `2^−2`, then groups of up to 8 compared all pairs at once
//! ([`crate::max::grid::max_rows_grid`]; [`super::SoftmaxForm::Grid`]) — and the row sums kept
//! in `Z_{2^45}` where the reciprocal serves them there
//! ([`crate::reciprocal::ReciprocalProtocol::runs_in`]: rows of fewer than 64 keys at f = 18),
//! saving the extension to the full ring; the same exponential clip in `Z_{2^34}`, reciprocal
//! domain from 1/2 and inputs `|x| < 4096` at f = 18. The exponential must run in `(45, f)`.

use super::coarse::{check, sums, tolerance};
use super::{compose, grid_max, SoftmaxCall, SoftmaxForm, SoftmaxProtocol, COARSE_CMP_L, GRID_PRECISION, NARROW_L};
use crate::backend::DynBackend;
use crate::exp::Exp;
use crate::max::grid::GRID_MAX_RADIX;
use crate::reciprocal::{Reciprocal, RECIP_SOFTMAX};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `softmax = grid`.
pub struct Grid;

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

/// `coarse`'s check, row sums' range and bound (the max keeps an element within the same slack).
impl SoftmaxProtocol for Grid {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, c: &SoftmaxCall<'_>, exp: Exp, recip: Reciprocal) -> Result<Vec<u64>, NnError> {
        compose(b, x, c, SoftmaxForm::Grid, exp, recip, sums(c.cols))
    }
    fn check(&self, exp: Exp, recip: Reciprocal) -> Result<(), String> {
        check(self.name(), exp, recip)
    }
    fn tolerance(&self, exp: Exp, recip: Reciprocal, cols: usize, fp: FixedPoint) -> Result<i64, NnError> {
        tolerance(exp, recip, cols, fp)
    }
}
