//! `silu = lut`: ROTL's shifted lookup table (§II-E): one `2^8`-entry table of lines over
//! `[−8, 8)`; the evaluator is [`crate::lut`].

use super::SiluProtocol;
use crate::backend::DynBackend;
use crate::lut::{lut_activation, lut_activation_mixed, SILU_LUT};
use crate::mixed::{ActRing, ACT_FORMAT};
use crate::tolerance::lut_act_tol;
use crate::NnError;
use nectar_math::registry::Protocol;

/// The protocol `silu = lut`.
pub struct Lut;

impl Protocol for Lut {
    fn name(&self) -> &'static str {
        "lut"
    }
    fn source(&self) -> &'static str {
        "ROTL §II-E LUT SiLU"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "silu": SILU_LUT.params(), "mixed_format": (ACT_FORMAT.l(), ACT_FORMAT.f()) })
    }
    fn security(&self) -> Result<nectar_math::registry::Security, String> {
        Ok(crate::lut::security())
    }
}

impl SiluProtocol for Lut {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, ring: ActRing) -> Result<Vec<u64>, NnError> {
        match ring {
            ActRing::Full => lut_activation(b, x, &SILU_LUT),
            ActRing::Mixed => lut_activation_mixed(b, x, &SILU_LUT),
        }
    }
    /// As `gelu = lut` ([`lut_act_tol`]; in the mixed ring the entering truncation times a
    /// slope ≤ 1.1 on top of the bound at f' = 12, scaled by 2^6).
    fn tolerance(&self, ring: ActRing) -> Result<i64, NnError> {
        Ok(ring.pick(lut_act_tol(&SILU_LUT, 18), (lut_act_tol(&SILU_LUT, ACT_FORMAT.f()) + 2) << 6))
    }
    /// The lines' max error plus the twin's rounding, as `gelu = lut`.
    fn approx_error(&self, ring: ActRing) -> Result<f64, NnError> {
        let lsb = ring.pick(4.0 / 18f64.exp2(), 6.0 / (ACT_FORMAT.f() as f64).exp2());
        Ok(SILU_LUT.max_error() + lsb)
    }
}
