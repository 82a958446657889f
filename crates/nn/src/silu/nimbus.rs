//! `silu = nimbus` (Nimbus §4 applied to LLaMA's SiLU, `docs/notes/nimbus.md` §3): SiLU is of
//! GeLU's `|x|` form (`SiLU(x) = ReLU(x) − g(|x|)`, `g(t) = t·σ(−t)`), so `gelu = nimbus`'s
//! quartic from two squarings serves it, fitted to a LLaMA model's SiLU inputs
//! ([`crate::fit_dist::fit_abs_chain`], `nectar fit --model FILE --func silu`). Nimbus's paper
//! covers BERT's GeLU; the SiLU table is ours.

use super::SiluProtocol;
use crate::backend::DynBackend;
use crate::gelu::abs_form::{abs_chain, AbsChain};
use crate::gelu::SQ8_CMP_BITS;
use crate::mixed::ActRing;
use crate::poly::BUMBLEBEE_LESS;
use crate::NnError;
use nectar_math::registry::Protocol;

/// Fitted to SmolLM2-135M-Instruct's SiLU inputs (Q4_1 GGUF) on the six calibration texts
/// (5 575 680 inputs) with `nectar fit --func silu --model
/// ~/.cache/nectar/models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf --range 5` (floor 0.02):
/// over those inputs rms 9.5e−4; worst case on [−8, 8] 3.35e−2, the cut-off `g(5) = 5σ(−5)`
/// (AGREEMENT).
#[allow(clippy::excessive_precision)] // the fit's digits, verbatim
pub const NIMBUS_SILU: AbsChain = AbsChain {
    c: [
        6.691216867449148,
        1.023956421364469,
        -0.5608260061800524,
        -0.45556035878367057,
        -1.972257189496918,
        -0.8776817168921835,
        0.21625699710514332,
    ],
    range: 5.0,
    scale: 8.0,
    less: BUMBLEBEE_LESS,
};

/// The protocol `silu = nimbus`.
pub struct Nimbus;

impl Protocol for Nimbus {
    fn name(&self) -> &'static str {
        "nimbus"
    }
    fn source(&self) -> &'static str {
        "Nimbus §4 (our SiLU table): distribution-fitted ReLU(x) - Q(|x|), Q quartic by two squares"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "silu": NIMBUS_SILU, "compare_ring": SQ8_CMP_BITS })
    }
}

impl SiluProtocol for Nimbus {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, ring: ActRing) -> Result<Vec<u64>, NnError> {
        self.supports(ring).map_err(NnError::BadArgument)?;
        abs_chain(b, x, &NIMBUS_SILU, SQ8_CMP_BITS, "silu=nimbus")
    }
    fn supports(&self, ring: ActRing) -> Result<(), String> {
        ring.full_only("silu=nimbus", crate::gelu::p7::NO_MIXED)
    }
    fn tolerance(&self, _ring: ActRing) -> Result<i64, NnError> {
        Ok(NIMBUS_SILU.tolerance(nectar_math::FixedPoint::BUMBLEBEE.f()))
    }
    /// The fit's worst case on [−12, 12]: the cut-off at |x| = 5 (3.35e−2), with the twin's
    /// rounding.
    fn approx_error(&self, _ring: ActRing) -> Result<f64, NnError> {
        Ok(3.4e-2)
    }
    fn stated_accuracy(&self) -> &'static str {
        "— (ours; fit rms 9.5e-4 over SmolLM2's SiLU inputs)"
    }
    fn pivots(&self) -> Vec<f64> {
        vec![-NIMBUS_SILU.range, 0.0, NIMBUS_SILU.range]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_within_its_stated_error() {
        assert!(NIMBUS_SILU.u_max() <= 0.6 + 1e-9);
        let (lo, hi) = super::super::DOMAIN;
        let worst = crate::fit::grid(lo, hi, 24001)
            .into_iter()
            .map(|x| (NIMBUS_SILU.eval_f64(x) - nectar_math::real::silu(x)).abs())
            .fold(0.0, f64::max);
        assert!(worst <= 3.4e-2, "{worst}");
    }
}
