//! `olt-ring = narrow`: `Z_{2^51}` under [`nectar_he::Params::nectar_olt_narrow`] (every prime
//! below 2^50, where the NTT is 2.3× faster), then one truncation with extension back to
//! `Z_{2^64}` (`nectar_mpc::Mpc::trunc_extend`, one truncation's cost) in place of the
//! truncation. Products must satisfy `|x·w| < 2^13` (raw `< 2^49` at scale `2f`), within the
//! domains the LayerNorm (`|x − μ| < 2^9`) and softmax (`|x| < 4096`) already impose.
//! The client's queries against the server's weights are encrypted fresh at the response level
//! (two of the three primes: 102 instead of 154 KB per ciphertext; [`crate::QueryLevel`]),
//! where the server's weight products run anyway; a weight too large for it is an error that
//! names `olt-ring = full`.

use super::{params_of, security_of, OltRingProtocol};
use nectar_math::registry::{Protocol, Security};

/// The ring `olt-ring = narrow`.
pub struct Narrow;

impl Protocol for Narrow {
    fn name(&self) -> &'static str {
        "narrow"
    }
    fn source(&self) -> &'static str {
        "nectar: OLT mod 2^51 with IFMA-sized primes"
    }
    fn params(&self) -> serde_json::Value {
        let mut p = params_of(&self.he_params());
        p["weight_query"] = serde_json::json!("response level");
        p
    }
    fn security(&self) -> Result<Security, String> {
        Ok(security_of(&self.he_params()))
    }
}

impl OltRingProtocol for Narrow {
    fn he_params(&self) -> nectar_he::Params {
        nectar_he::Params::nectar_olt_narrow()
    }
    fn narrow(&self) -> bool {
        true
    }
    fn low_weight_queries(&self) -> bool {
        true
    }
}
