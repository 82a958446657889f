//! `olt-ring = full`: `Z_{2^64}`, the shares' ring: `t = 2^64` ([`nectar_he::Params::bumblebee_olt`]).

use super::{params_of, security_of, OltRingProtocol};
use nectar_math::registry::{Protocol, Security};

/// The ring `olt-ring = full`.
pub struct Full;

impl Protocol for Full {
    fn name(&self) -> &'static str {
        "full"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §III, t = 2^64"
    }
    fn params(&self) -> serde_json::Value {
        params_of(&self.he_params())
    }
    fn security(&self) -> Result<Security, String> {
        Ok(security_of(&self.he_params()))
    }
}

impl OltRingProtocol for Full {
    fn he_params(&self) -> nectar_he::Params {
        nectar_he::Params::bumblebee_olt()
    }
    fn narrow(&self) -> bool {
        false
    }
}
