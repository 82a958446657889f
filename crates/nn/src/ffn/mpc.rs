//! `ffn = mpc`: BumbleBee §VII — the FFN block as the suite's own protocols: its `matmul` for
//! `X·W1` and `·W2`, its activation (`gelu`, `silu`) between them. No protocol of its own.

use super::FfnProtocol;
use nectar_math::registry::Protocol;

/// The protocol `ffn = mpc`.
pub struct Mpc;

impl Protocol for Mpc {
    fn name(&self) -> &'static str {
        "mpc"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §VII"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({})
    }
}

impl FfnProtocol for Mpc {
    fn whole_block(&self) -> bool {
        false
    }
}
