//! `gelu = lut`: ROTL's shifted lookup table (§II-E; CipherGPT): one `2^8`-entry table of
//! lines over `[−4, 4)` for the checkpoint's GeLU form; the evaluator is [`crate::lut`].

use super::{by_form, GeluForm, GeluProtocol};
use crate::backend::DynBackend;
use crate::lut::{lut_activation, lut_activation_mixed, ActLut, GELU_LUT, GELU_TANH_LUT};
use crate::mixed::{ActRing, ACT_FORMAT};
use crate::tolerance::lut_act_tol;
use crate::NnError;
use nectar_math::registry::Protocol;

/// The protocol `gelu = lut`.
pub struct Lut;

fn table(form: GeluForm) -> &'static ActLut {
    by_form(form, &GELU_LUT, &GELU_TANH_LUT)
}

impl Protocol for Lut {
    fn name(&self) -> &'static str {
        "lut"
    }
    fn source(&self) -> &'static str {
        "ROTL §II-E LUT GELU"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "erf": GELU_LUT.params(), "tanh": GELU_TANH_LUT.params(), "mixed_format": (ACT_FORMAT.l(), ACT_FORMAT.f()) })
    }
    fn security(&self) -> Result<nectar_math::registry::Security, String> {
        Ok(crate::lut::security())
    }
}

impl GeluProtocol for Lut {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, form: GeluForm, ring: ActRing) -> Result<Vec<u64>, NnError> {
        match ring {
            ActRing::Full => lut_activation(b, x, table(form)),
            ActRing::Mixed => lut_activation_mixed(b, x, table(form)),
        }
    }
    /// [`lut_act_tol`] at f = 18; in the mixed ring (32, 12) the entering truncation (1 LSB'
    /// times a slope ≤ 1.13) on top of the bound at f' = 12, scaled by 2^6.
    fn tolerance(&self, form: GeluForm, ring: ActRing) -> Result<i64, NnError> {
        let p = table(form);
        Ok(ring.pick(lut_act_tol(p, 18), (lut_act_tol(p, ACT_FORMAT.f()) + 2) << 6))
    }
    /// The lines' max error against the form ([`ActLut::max_error`]) plus the twin's rounding
    /// at its scale f: the product `a·x` (2 LSB), the two table entries (1) and 1 (as in
    /// [`lut_act_tol`]); in the mixed ring also the entering truncation (1 LSB' times a slope
    /// ≤ 1.13: 2).
    fn approx_error(&self, form: GeluForm, ring: ActRing) -> Result<f64, NnError> {
        let lsb = ring.pick(4.0 / 18f64.exp2(), 6.0 / (ACT_FORMAT.f() as f64).exp2());
        Ok(table(form).max_error() + lsb)
    }
}
