//! `ot = iknp`: the IKNP extension (CRYPTO'03; 128 bits per COT), refilled in batches of
//! [`nectar_ot::pool::IKNP_REFILL`].

use super::OtExtProtocol;
use crate::secure::SecureOpts;
use nectar_math::registry::Protocol;
use nectar_ot::Producer;

/// The protocol `ot = iknp`.
pub struct Iknp;

impl Protocol for Iknp {
    fn name(&self) -> &'static str {
        "iknp"
    }
    fn source(&self) -> &'static str {
        "IKNP (CRYPTO'03)"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "refill": nectar_ot::pool::IKNP_REFILL })
    }
}

impl OtExtProtocol for Iknp {
    fn configure(&self, opts: SecureOpts) -> SecureOpts {
        opts.with_producer(Producer::Iknp)
    }
}
