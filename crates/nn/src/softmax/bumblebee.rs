//! `softmax = bumblebee`: BumbleBee §V-B — in the backend's ring, the exact row max tree, the
//! suite's exponential of `x − max`, the row sums, the suite's reciprocal on `[1, cols]` (one
//! per row) and one product ([`super::softmax_in_ring`], [`super::SoftmaxForm::Full`]).

use super::{compose, SoftmaxCall, SoftmaxForm, SoftmaxProtocol, CHECK_COLS, MASK_VALUE};
use crate::backend::DynBackend;
use crate::exp::Exp;
use crate::reciprocal::{RecipRange, Reciprocal, RECIP_SOFTMAX};
use crate::tolerance::softmax_tol;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `softmax = bumblebee`.
pub struct Bumblebee;

/// The row sums' range for rows of `cols`: `[1, cols]`, in BumbleBee's Newton domain.
fn sums(cols: usize) -> RecipRange {
    RecipRange { lo: 1.0, hi: (cols as f64).max(2.0), newton: RECIP_SOFTMAX }
}

impl Protocol for Bumblebee {
    fn name(&self) -> &'static str {
        "bumblebee"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §V-B softmax"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "recip_domain": RECIP_SOFTMAX, "mask": MASK_VALUE })
    }
}

impl SoftmaxProtocol for Bumblebee {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, c: &SoftmaxCall<'_>, exp: Exp, recip: Reciprocal) -> Result<Vec<u64>, NnError> {
        compose(b, x, c, SoftmaxForm::Full, exp, recip, sums(c.cols))
    }
    fn check(&self, _exp: Exp, recip: Reciprocal) -> Result<(), String> {
        recip.check(&sums(CHECK_COLS)).map_err(|e| format!("softmax={} with reciprocal={}: {e}", self.name(), recip.name()))
    }
    fn tolerance(&self, exp: Exp, recip: Reciprocal, cols: usize, fp: FixedPoint) -> Result<i64, NnError> {
        Ok(softmax_tol(exp.tolerance(fp)?, recip.tolerance(&sums(cols), fp)?))
    }
}
