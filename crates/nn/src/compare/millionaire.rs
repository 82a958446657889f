//! `compare = millionaire`: BumbleBee §V-A — the batched millionaires' protocol from 1-of-N OT
//! (`nectar_mpc::Mpc::less_than`).

use super::CompareProtocol;
use crate::secure::{Comparison, SecureOpts};
use nectar_math::registry::Protocol;

/// The protocol `compare = millionaire`.
pub struct Millionaire;

impl Protocol for Millionaire {
    fn name(&self) -> &'static str {
        "millionaire"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §V-A millionaire"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({})
    }
}

impl CompareProtocol for Millionaire {
    fn configure(&self, opts: SecureOpts) -> SecureOpts {
        opts.with_compare(Comparison::Millionaire)
    }
}
