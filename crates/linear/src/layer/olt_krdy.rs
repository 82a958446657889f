//! `matmul = olt-krdy`: Cheetah's OLT (USENIX Sec'22; BumbleBee §III-A's baseline, REFERENCE.md
//! §1.4) — the same encodings and window search as `olt`, every block product returned as it
//! is (no InterLeave / PackLWEs compression): the server's work drops, the response grows.

use super::MatmulProtocol;
use crate::protocol::{LinearCx, LinearProtocol};
use crate::{LinearError, Variant};
use nectar_math::registry::Protocol;

/// The protocol `matmul = olt-krdy`.
pub struct OltKrdy;

impl Protocol for OltKrdy {
    fn name(&self) -> &'static str {
        "olt-krdy"
    }
    fn source(&self) -> &'static str {
        "Cheetah (USENIX Sec'22) KRDY packing, BumbleBee §III-A baseline"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "he": format!("{:#x}", nectar_he::Params::bumblebee_olt().fingerprint()), "variant": Variant::Krdy.name() })
    }
}

impl LinearProtocol for OltKrdy {}

impl MatmulProtocol for OltKrdy {
    fn layer_matmul(&self, cx: &mut dyn LinearCx, x: &[u64], shape: (usize, usize, usize), w: Option<&[u64]>, _key: &str) -> Result<Vec<u64>, LinearError> {
        let f = cx.format().1;
        cx.olt_matmul_weight(x, shape, w, f, Variant::Krdy)
    }
}
