//! `olt-cost = artifact`: the BumbleBee artifact's prices — the fewest bytes (the paper's).

use super::{params_of, OltCostProtocol};
use crate::CostModel;
use nectar_math::registry::Protocol;

/// The price set `olt-cost = artifact`.
pub struct Artifact;

impl Protocol for Artifact {
    fn name(&self) -> &'static str {
        "artifact"
    }
    fn source(&self) -> &'static str {
        "BumbleBee artifact cost model"
    }
    fn params(&self) -> serde_json::Value {
        params_of(&self.cost_model())
    }
}

impl OltCostProtocol for Artifact {
    fn cost_model(&self) -> CostModel {
        CostModel::default()
    }
}
