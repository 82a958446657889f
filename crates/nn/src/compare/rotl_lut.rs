//! `compare = rotl-lut`: ROTL §VI, Fig. 13 — comparison from small lookup tables over blocks
//! of [`ROTL_COMPARE_BLOCK`] bits (`nectar_mpc::lut_compare`).

use super::CompareProtocol;
use crate::secure::{Comparison, SecureOpts, ROTL_COMPARE_BLOCK};
use nectar_math::registry::Protocol;

/// The protocol `compare = rotl-lut`.
pub struct RotlLut;

impl Protocol for RotlLut {
    fn name(&self) -> &'static str {
        "rotl-lut"
    }
    fn source(&self) -> &'static str {
        "ROTL §VI comparison from LUTs"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "block": ROTL_COMPARE_BLOCK })
    }
    fn security(&self) -> Result<nectar_math::registry::Security, String> {
        Ok(crate::lut::security())
    }
}

impl CompareProtocol for RotlLut {
    fn configure(&self, opts: SecureOpts) -> SecureOpts {
        opts.with_compare(Comparison::RotlLut { block: ROTL_COMPARE_BLOCK })
    }
}
