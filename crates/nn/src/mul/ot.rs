//! `mul = ot`: products from OT (Gilboa: one COT per multiplier bit, bit `j`'s over
//! `Z_{2^(l−j)}`; `nectar_mpc::Mpc::mul`).

use super::ProductProtocol;
use crate::secure::{MulProtocol, SecureOpts};
use nectar_math::registry::{Protocol, Security, StatRow};

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
        serde_json::json!({ "cots": "graded: bit j of the chooser's share over Z_2^(l−j)" })
    }
    fn security(&self) -> Result<Security, String> {
        Ok(Security {
            he: Vec::new(),
            statistical: vec![StatRow {
                step: "products from OT (Gilboa)",
                session_bits: None,
                detail: "masks are uniform ring elements carried by COTs (perfect in the OT-hybrid model)".into(),
            }],
        })
    }
}

impl ProductProtocol for Ot {
    fn configure(&self, opts: SecureOpts) -> SecureOpts {
        opts.with_mul(MulProtocol::Ot)
    }
}
