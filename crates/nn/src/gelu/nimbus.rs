//! `gelu = nimbus` (Nimbus §4, `docs/notes/nimbus.md` §3): GeLU as `ReLU(x) − Q(|x|)` with `Q`
//! a quartic from two squarings, fitted to the distribution of a model's GeLU inputs
//! ([`crate::fit_dist::fit_abs_chain`], `nectar fit --model DIR --func gelu`).
//!
//! Deviation from Nimbus's code (`x`, a quadratic on `[−1.8, 0.5]`, `0`, with placeholder
//! coefficients that err by 0.17): a quadratic of `x` cannot follow GeLU's bend to a 0.9999
//! cosine; the `|x|` form (the symmetric part `t − GeLU(t)` is smooth and small) with a quartic
//! keeps Nimbus's two comparisons' worth of branching (one three-threshold comparison) and its
//! distribution weighting at one square fewer than `sq8`.

use super::abs_form::{abs_chain, AbsChain};
use super::p7::NO_MIXED;
use super::{by_form, GeluForm, GeluProtocol, SQ8_CMP_BITS};
use crate::backend::DynBackend;
use crate::mixed::ActRing;
use crate::poly::BUMBLEBEE_LESS;
use crate::NnError;
use nectar_math::registry::Protocol;

/// `gelu = nimbus` for the erf GeLU (BERT, ViT): fitted to all-MiniLM-L6-v2's GeLU inputs on
/// the six calibration texts (1 096 704 inputs) with
/// `nectar fit --func gelu --model ~/.cache/nectar/models/minilm --range 3` (floor 0.02):
/// over those inputs rms 1.09e−3, max 4.05e−3; worst case on [−8, 8] 4.05e−3 (AGREEMENT).
#[allow(clippy::excessive_precision)] // the fit's digits, verbatim
pub const NIMBUS_ERF: AbsChain = AbsChain {
    c: [
        4.149723625917755,
        -0.3133104770670325,
        -0.5940861450129548,
        -0.3303808948501152,
        -0.6585595662294115,
        -0.23740259285400322,
        0.1615220652419539,
    ],
    range: 3.0,
    scale: 4.0,
    less: BUMBLEBEE_LESS,
};

/// `gelu = nimbus` for GPT-2's tanh GeLU: the tanh form fitted to the same MiniLM GeLU inputs
/// (no GPT-2 checkpoint is reachable here) with `nectar fit --func gelu_tanh --model
/// ~/.cache/nectar/models/minilm --range 3`: over those inputs max 3.64e−3 (AGREEMENT).
#[allow(clippy::excessive_precision)] // the fit's digits, verbatim
pub const NIMBUS_TANH: AbsChain = AbsChain {
    c: [
        4.12670681337865,
        -0.32393277034608897,
        -0.5936430885177071,
        -0.3313260236426836,
        -0.6540720422427476,
        -0.23579618777108194,
        0.1616009358862876,
    ],
    range: 3.0,
    scale: 4.0,
    less: BUMBLEBEE_LESS,
};

/// The protocol `gelu = nimbus` (a fit per form).
pub struct Nimbus;

impl Protocol for Nimbus {
    fn name(&self) -> &'static str {
        "nimbus"
    }
    fn source(&self) -> &'static str {
        "Nimbus §4: distribution-fitted ReLU(x) - Q(|x|), Q quartic by two squares"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "erf": NIMBUS_ERF, "tanh": NIMBUS_TANH, "compare_ring": SQ8_CMP_BITS, "poly_ring": super::P7_POLY_BITS })
    }
}

impl GeluProtocol for Nimbus {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, form: GeluForm, ring: ActRing) -> Result<Vec<u64>, NnError> {
        self.supports(ring).map_err(NnError::BadArgument)?;
        abs_chain(b, x, by_form(form, &NIMBUS_ERF, &NIMBUS_TANH), SQ8_CMP_BITS, "gelu=nimbus")
    }
    fn supports(&self, ring: ActRing) -> Result<(), String> {
        ring.full_only("gelu=nimbus", NO_MIXED)
    }
    fn tolerance(&self, form: GeluForm, _ring: ActRing) -> Result<i64, NnError> {
        Ok(by_form(form, &NIMBUS_ERF, &NIMBUS_TANH).tolerance(nectar_math::FixedPoint::BUMBLEBEE.f()))
    }
    /// The fits' worst case on [−8, 8] (4.05e−3 erf, 3.64e−3 tanh over MiniLM's inputs; the
    /// tanh fit's worst case on the domain is 3.7e−3), with the twin's rounding.
    fn approx_error(&self, form: GeluForm, _ring: ActRing) -> Result<f64, NnError> {
        Ok(by_form(form, 4.1e-3, 3.8e-3))
    }
    fn stated_accuracy(&self) -> &'static str {
        "0.08 % task accuracy loss (Nimbus abstract); our fit: rms 1.1e-3 over MiniLM's GeLU inputs"
    }
    fn pivots(&self) -> Vec<f64> {
        vec![-NIMBUS_ERF.range, 0.0, NIMBUS_ERF.range]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_are_within_their_stated_error() {
        for (p, form, bound) in [(NIMBUS_ERF, GeluForm::Erf, 4.1e-3), (NIMBUS_TANH, GeluForm::Tanh, 3.8e-3)] {
            assert!(p.u_max() <= 0.6 + 1e-9, "|u| {}", p.u_max());
            let worst = crate::fit::grid(-8.0, 8.0, 16001)
                .into_iter()
                .map(|x| (p.eval_f64(x) - nectar_math::real::gelu(x, form)).abs())
                .fold(0.0, f64::max);
            assert!(worst <= bound, "{form:?}: {worst}");
        }
    }
}
