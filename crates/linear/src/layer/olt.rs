//! `matmul = olt`: BumbleBee §III — one OLT per product (InterLeave packing, the windows the
//! suite's `olt-cost` prices), the session's OLT keys; the server may prepare the next layer's
//! weight blocks ahead.

use super::MatmulProtocol;
use crate::protocol::{LinearCx, LinearProtocol};
use crate::{LinearError, Variant};
use nectar_math::registry::Protocol;

/// The protocol `matmul = olt`.
pub struct Olt;

impl Protocol for Olt {
    fn name(&self) -> &'static str {
        "olt"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §III OLT + InterLeave"
    }
    /// The OLT's HE set of the full ring (`olt-ring` names the ring; its parameters are its own).
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "he": format!("{:#x}", nectar_he::Params::bumblebee_olt().fingerprint()) })
    }
}

impl LinearProtocol for Olt {}

impl MatmulProtocol for Olt {
    fn layer_matmul(&self, cx: &mut dyn LinearCx, x: &[u64], shape: (usize, usize, usize), w: Option<&[u64]>, _key: &str) -> Result<Vec<u64>, LinearError> {
        let f = cx.format().1;
        cx.olt_matmul_weight(x, shape, w, f, Variant::Interleave)
    }
    fn prefetch(&self, _rows: usize) -> bool {
        true
    }
}
