//! `mul = bole`: BumbleBee §IV — Π_mul / Π_square from batch OLE with error, with BumbleBee's
//! refinements (the narrow 2-prime key set for rings up to [`NARROW_MAX_L`] bits, query reuse
//! inside an operator, OT products below [`BOLE_MIN_LEN`] elements and wherever they cost fewer
//! bits than bOLEe's whole ciphertexts, [`crate::secure::bole_pays`]; `nectar_nn::secure`).

use super::ProductProtocol;
use crate::secure::{MulProtocol, SecureOpts, BOLE_MIN_LEN, NARROW_MAX_L, QUERY_CACHE};
use nectar_math::registry::{Protocol, Security, StatRow};

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
            "choice": "the fewer bits of bOLEe (whole chunks) and OT products (graded COTs)",
            "narrow_max_l": NARROW_MAX_L,
            "reuse": QUERY_CACHE,
        })
    }
    /// Its HE set and the H2A's noise flooding over a whole session.
    fn security(&self) -> Result<Security, String> {
        use nectar_linear::h2a::{flood_bits, product_noise_bits, session_security_bits, SESSION_FLOODS_LOG2, SESSION_KEYS_LOG2, STAT_SECURITY_BITS};
        let p = nectar_he::Params::bumblebee_bole();
        let terms = 2;
        Ok(Security {
            he: vec![p.security_row("bole")],
            statistical: vec![StatRow {
                step: "bOLEe H2A noise flooding (SIMD branch)",
                session_bits: Some(session_security_bits(&p, terms)),
                detail: format!(
                    "flood {} bits over a product noise of at most 2^{} ({} terms); at most 2^{} flooded \
                     coefficients per key (enforced) under at most 2^{} keys per session: {} + {} + {} bits",
                    flood_bits(&p, 0, terms),
                    product_noise_bits(&p, 0, terms),
                    terms,
                    SESSION_FLOODS_LOG2,
                    SESSION_KEYS_LOG2,
                    STAT_SECURITY_BITS,
                    SESSION_FLOODS_LOG2,
                    SESSION_KEYS_LOG2
                ),
            }],
        })
    }
}

impl ProductProtocol for Bole {
    fn configure(&self, opts: SecureOpts) -> SecureOpts {
        opts.with_mul(MulProtocol::Bole)
    }
}
