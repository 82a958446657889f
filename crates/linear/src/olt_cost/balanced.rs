//! `olt-cost = balanced`: the fewest bytes first, but one more MB where it saves at least
//! 0.1 s of computation ([`CostModel::balanced_olt`]): the default suite's.

use super::{params_of, OltCostProtocol};
use crate::CostModel;
use nectar_math::registry::Protocol;

/// The price set `olt-cost = balanced`.
pub struct Balanced;

impl Protocol for Balanced {
    fn name(&self) -> &'static str {
        "balanced"
    }
    fn source(&self) -> &'static str {
        "nectar, CostModel::balanced"
    }
    fn params(&self) -> serde_json::Value {
        params_of(&self.cost_model())
    }
}

impl OltCostProtocol for Balanced {
    fn cost_model(&self) -> CostModel {
        CostModel::balanced_olt()
    }
}
