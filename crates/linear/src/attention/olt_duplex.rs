//! `matmul-shared = olt-duplex` (nectar, issues 48/52): [`super::olt`]'s two cross-term OLTs
//! (BumbleBee §III) in the same two flights — each party encrypts the query of one cross term
//! and evaluates the other's, both queries crossing the link at once, then both responses
//! ([`crate::matmul::batch_matmul_shared_shared_duplex`]). The same messages and bytes.

use super::SharedMatmulProtocol;
use crate::protocol::{LinearCx, LinearProtocol};
use crate::LinearError;
use nectar_math::registry::Protocol;

/// The protocol `matmul-shared = olt-duplex`.
pub struct OltDuplex;

impl Protocol for OltDuplex {
    fn name(&self) -> &'static str {
        "olt-duplex"
    }
    fn source(&self) -> &'static str {
        "nectar: BumbleBee §III's two OLTs in the same flights"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "flights": "both queries, then both responses" })
    }
}

impl LinearProtocol for OltDuplex {}

impl SharedMatmulProtocol for OltDuplex {
    fn attention_matmul(&self, cx: &mut dyn LinearCx, a: &[u64], b: &[u64], shape: (usize, usize, usize, usize)) -> Result<Vec<u64>, LinearError> {
        let f = cx.format().1;
        cx.olt_batch_matmul(a, b, shape, f, true)
    }
}
