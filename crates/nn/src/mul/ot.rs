//! `mul = ot`: products from OT (Gilboa: one COT per multiplier bit; `nectar_mpc::Mpc::mul`).

use super::ProductProtocol;
use crate::secure::{MulProtocol, SecureOpts};
use nectar_math::registry::Protocol;

/// The protocol `mul = ot`.
pub struct Ot;

impl Protocol for Ot {
    fn name(&self) -> &'static str {
        "ot"
    }
    fn source(&self) -> &'static str {
        "Gilboa products from OT"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({})
    }
}

impl ProductProtocol for Ot {
    fn configure(&self, opts: SecureOpts) -> SecureOpts {
        opts.with_mul(MulProtocol::Ot)
    }
}
