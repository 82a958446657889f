//! `reciprocal = lut`: ROTL §II-E — a `2^8`-entry table gives the initial value, Newton steps
//! refine it ([`crate::lut::reciprocal_lut`]); for `x ≥ 1` (softmax row sums).

use super::{RecipRange, ReciprocalProtocol, DETERMINE_DELTA};
use crate::backend::DynBackend;
use crate::lut::{reciprocal_lut, reciprocal_table, LUT_BITS};
use crate::tolerance::reciprocal_lut_tol;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `reciprocal = lut`.
pub struct Lut;

impl Protocol for Lut {
    fn name(&self) -> &'static str {
        "lut"
    }
    fn source(&self) -> &'static str {
        "ROTL §II-E LUT reciprocal"
    }
    /// The table is derived per call from the public range's top (`reciprocal_table(hi)`).
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "lut_bits": LUT_BITS, "delta": DETERMINE_DELTA })
    }
    fn security(&self) -> Result<nectar_math::registry::Security, String> {
        Ok(crate::lut::security())
    }
}

impl ReciprocalProtocol for Lut {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RecipRange) -> Result<Vec<u64>, NnError> {
        self.check(r)?;
        reciprocal_lut(b, x, r.hi)
    }
    fn check(&self, r: &RecipRange) -> Result<(), NnError> {
        if r.lo < 1.0 {
            return Err(NnError::BadArgument(format!("LUT reciprocal on [{}, {}]: its table starts at 1", r.lo, r.hi)));
        }
        Ok(())
    }
    fn tolerance(&self, r: &RecipRange, fp: FixedPoint) -> Result<i64, NnError> {
        reciprocal_lut_tol(r.hi, fp.f())
    }
    /// δ of the table's Newton steps plus their `4t` LSB of rounding.
    fn approx_error(&self, r: &RecipRange) -> Result<f64, NnError> {
        let (_, _, _, t) = reciprocal_table(r.hi)?;
        Ok(DETERMINE_DELTA + (4 * t) as f64 / 18f64.exp2())
    }
}
