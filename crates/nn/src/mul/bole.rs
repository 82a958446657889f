//! `mul = bole`: BumbleBee §IV — Π_mul / Π_square from batch OLE with error, with BumbleBee's
//! refinements (the narrow 2-prime key set for rings up to [`NARROW_MAX_L`] bits, query reuse
//! inside an operator, OT products below the crossover [`BOLE_MIN_LEN`]; `nectar_nn::secure`).

use super::ProductProtocol;
use crate::secure::{MulProtocol, SecureOpts, BOLE_MIN_LEN, NARROW_MAX_L, QUERY_CACHE};
use nectar_math::registry::Protocol;

/// The protocol `mul = bole`.
pub struct Bole;

impl Protocol for Bole {
    fn name(&self) -> &'static str {
        "bole"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §IV bOLEe"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({
            "he": format!("{:#x}", nectar_he::Params::bumblebee_bole().fingerprint()),
            "min_len": BOLE_MIN_LEN,
            "narrow_max_l": NARROW_MAX_L,
            "reuse": QUERY_CACHE,
        })
    }
}

impl ProductProtocol for Bole {
    fn configure(&self, opts: SecureOpts) -> SecureOpts {
        opts.with_mul(MulProtocol::Bole)
    }
}
