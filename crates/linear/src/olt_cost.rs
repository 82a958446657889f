//! The window prices the OLT planner minimises (`olt-cost`, a parameter of every OLT: the
//! layers', the attention's, the heads' and embeddings'): the kind ([`OltCostProtocol`],
//! [`ALL`]: one file per price set in `olt_cost/`). AGREEMENT: both parties must plan the same
//! windows.

pub mod artifact;
pub mod balanced;
pub mod lan_commodity;

use crate::CostModel;
use nectar_math::registry::Protocol;

/// A price set of the OLT window search (DESIGN.md "Where a protocol plugs in").
pub trait OltCostProtocol: Protocol {
    /// The prices.
    fn cost_model(&self) -> CostModel;
}

/// Every price set, in the order `nectar suites` lists them.
pub static ALL: &[&dyn OltCostProtocol] = &[
    &artifact::Artifact,
    &lan_commodity::LanCommodity,
    &balanced::Balanced,
];

nectar_math::kind!(
    /// The OLT price kind in the registry.
    OltCostKind,
    OltCost,
    "olt-cost",
    dyn OltCostProtocol,
    ALL
);

/// The serialized prices (what the digest hashes).
pub(crate) fn params_of(c: &CostModel) -> serde_json::Value {
    serde_json::Value::from(format!("{c:?}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::OltCostKind>().unwrap();
    }
}
