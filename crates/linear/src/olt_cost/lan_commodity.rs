//! `olt-cost = lan_commodity`: prices measured on a 2-core machine on a 1 Gbit/s LAN
//! (`docs/results/linear.md`): faster, more bytes.

use super::{params_of, OltCostProtocol};
use crate::CostModel;
use nectar_math::registry::Protocol;

/// The price set `olt-cost = lan_commodity`.
pub struct LanCommodity;

impl Protocol for LanCommodity {
    fn name(&self) -> &'static str {
        "lan_commodity"
    }
    fn source(&self) -> &'static str {
        "nectar, docs/results/linear.md"
    }
    fn params(&self) -> serde_json::Value {
        params_of(&self.cost_model())
    }
}

impl OltCostProtocol for LanCommodity {
    fn cost_model(&self) -> CostModel {
        CostModel::lan_commodity()
    }
}
