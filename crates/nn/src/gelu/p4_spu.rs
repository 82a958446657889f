//! `gelu = p4-spu`: BOLT's P4 polynomial on `[−3, 3]` instead of `[−2.7, 2.7]` — the GeLU that
//! BumbleBee's public artifact actually ships (SecretFlow SPU, `f_seg3_gelu`; REFERENCE.md
//! §3.1 "discrepancy", §3.2): the same coefficients and protocol as [`super::p4`] (one
//! three-threshold comparison, `x², x³, x⁴`, one batched mux), the wider range trading the jump
//! at `|x| = 2.7` (8.9e−3) for a smaller one at `|x| = 3` (max error 5.2e−3 from the erf form,
//! 5.6e−3 from the tanh form, against `p4`'s 9.4e−3 / 8.9e−3; REFERENCE.md §3.2). Same cost as
//! `p4`.
//!
//! The artifact evaluates it in `Z_{2^32}` at f = 12; here `x⁴ < 3⁴ = 81 < 2^7` before its
//! truncation needs `2f + 9 ≤ l` bits, which (32, 12) does not have (33 > 32), so the mixed
//! activation ring is refused and the protocol runs in the full ring.

use super::p4::{p4_gelu, P4Params, P4_BOLT};
use super::{by_form, GeluForm, GeluProtocol};
use crate::backend::DynBackend;
use crate::mixed::ActRing;
use crate::NnError;
use nectar_math::registry::Protocol;

/// BOLT's coefficients on the artifact's range `[−3, 3]` (AGREEMENT).
pub const P4_SPU: P4Params = P4Params { range: 3.0, ..P4_BOLT };

/// Twin vs protocol at f = 18 (|x| < 3), as [`super::p4::P4_TOL`] with the wider range: x² 2,
/// x³ 2 + 3·2 = 8, x⁴ 2 + 2·9·2 = 38; weighted by |c2|, |c3|, |c4| = 0.54, 0.18, 0.021: 3.3,
/// + 1 (truncation) + 1 (floor of the sum) → 6.
pub const P4_SPU_TOL: i64 = 6;

/// The protocol `gelu = p4-spu` (one set of coefficients for both forms).
pub struct P4Spu;

impl Protocol for P4Spu {
    fn name(&self) -> &'static str {
        "p4-spu"
    }
    fn source(&self) -> &'static str {
        "BumbleBee artifact (SPU f_seg3_gelu): BOLT P4 on [-3, 3]"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "p4": P4_SPU })
    }
}

impl GeluProtocol for P4Spu {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, _form: GeluForm, ring: ActRing) -> Result<Vec<u64>, NnError> {
        self.supports(ring).map_err(NnError::BadArgument)?;
        p4_gelu(b, x, &P4_SPU)
    }
    fn supports(&self, ring: ActRing) -> Result<(), String> {
        ring.full_only("gelu=p4-spu:", "x⁴ for |x| < 3 needs 2f + 9 <= l bits, more than the activation format (32, 12) has: use act-ring=full")
    }
    fn tolerance(&self, _form: GeluForm, _ring: ActRing) -> Result<i64, NnError> {
        Ok(P4_SPU_TOL)
    }
    /// The polynomial's max error on the real line in f64 — 5.22e−3 from the erf form,
    /// 5.631e−3 from the tanh form, both at `|x| = 3` — plus the twin's rounding (bounded like
    /// the protocol's own, 6 LSB).
    fn approx_error(&self, form: GeluForm, _ring: ActRing) -> Result<f64, NnError> {
        Ok(by_form(form, 5.22e-3, 5.631e-3) + P4_SPU_TOL as f64 / 18f64.exp2())
    }
    fn stated_accuracy(&self) -> &'static str {
        "— (artifact; max 5.6e−3, REFERENCE.md §3.2)"
    }
    fn pivots(&self) -> Vec<f64> {
        vec![-P4_SPU.range, 0.0, P4_SPU.range]
    }
}
