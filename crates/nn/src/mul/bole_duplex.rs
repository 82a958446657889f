//! `mul = bole-duplex` (nectar, issue 52): [`super::bole`]'s products with the chunks of every
//! product of two chunks or more split between the parties — each queries its half under its
//! own key and answers the other's, both halves crossing the link in the same two flights
//! ([`crate::secure::duplex_split`], `SecureBackend::bole_duplex`). The same bytes in total,
//! half of them each way at once; one more one-way latency per split product.

use super::ProductProtocol;
use crate::secure::{MulProtocol, SecureOpts, BOLE_MIN_LEN, NARROW_MAX_L, QUERY_CACHE};
use nectar_math::registry::{Protocol, Security};

/// The protocol `mul = bole-duplex`.
pub struct BoleDuplex;

impl Protocol for BoleDuplex {
    fn name(&self) -> &'static str {
        "bole-duplex"
    }
    fn source(&self) -> &'static str {
        "nectar: BumbleBee §IV bOLEe, each product's halves queried by both parties at once"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({
            "he": format!("{:#x}", nectar_he::Params::bumblebee_bole().fingerprint()),
            "min_len": BOLE_MIN_LEN,
            "narrow_max_l": NARROW_MAX_L,
            "reuse": 2 * QUERY_CACHE,
            "duplex": "products of 2 chunks or more: P0 queries the first ⌈c/2⌉ chunks, P1 the rest",
        })
    }
    /// [`super::bole::Bole`]'s, now for both parties' keys: each party's share is flooded
    /// under the peer's key only, so each decryptor's view is the simplex protocol's
    /// (at most 2^36 flooded coefficients per key, 2 keys per decryptor).
    fn security(&self) -> Result<Security, String> {
        let mut s = super::bole::Bole.security()?;
        for row in &mut s.statistical {
            row.detail.push_str("; duplex: each party floods under the peer's keys only, so each decryptor's view is bounded as above");
        }
        Ok(s)
    }
}

impl ProductProtocol for BoleDuplex {
    fn configure(&self, opts: SecureOpts) -> SecureOpts {
        opts.with_mul(MulProtocol::Bole).with_bole_duplex(true)
    }
}
