//! `matmul-shared = olt`: BumbleBee §III, §VII — the two cross terms `A_0·B_1`, `A_1·B_0` by two
//! batched OLTs (each party's own term local), the session's OLT keys.

use super::SharedMatmulProtocol;
use crate::protocol::{LinearCx, LinearProtocol};
use crate::LinearError;
use nectar_math::registry::Protocol;

/// The protocol `matmul-shared = olt`.
pub struct Olt;

impl Protocol for Olt {
    fn name(&self) -> &'static str {
        "olt"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §III, two OLTs"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({})
    }
}

impl LinearProtocol for Olt {}

impl SharedMatmulProtocol for Olt {
    fn attention_matmul(&self, cx: &mut dyn LinearCx, a: &[u64], b: &[u64], shape: (usize, usize, usize, usize)) -> Result<Vec<u64>, LinearError> {
        let f = cx.format().1;
        cx.olt_batch_matmul(a, b, shape, f, false)
    }
}
