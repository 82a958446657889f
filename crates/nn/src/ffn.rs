//! The feed-forward block `act(X·W1 + b1)·W2 + b2`: the operator kind ([`FfnProtocol`], [`ALL`]:
//! one file per protocol in `ffn/`). Either the block is the suite's other protocols composed
//! (`mpc`: its `matmul` and its activation), or one protocol evaluates `act(X·W1 + b1)` as a
//! whole (LEAF's non-interactive FHE block), with keys of its own exchanged once per session.

pub mod leaf;
pub mod mpc;

use nectar_math::registry::Protocol;
use nectar_math::Prg;
use nectar_net::{Channel, Role};

/// A protocol's per-session state (its keys), kept by the engine under [`FfnProtocol::state_key`].
pub type State = Box<dyn std::any::Any + Send>;

/// An FFN block protocol (DESIGN.md "Where a protocol plugs in").
pub trait FfnProtocol: Protocol {
    /// Whether it evaluates `act(X·W1 + b1)` itself (the model's block hands it the whole
    /// first half of the FFN) instead of the suite's matmul and activation.
    fn whole_block(&self) -> bool;

    /// The key its session state is kept under (`None`: it has none).
    fn state_key(&self) -> Option<&'static str> {
        None
    }

    /// Its session setup over `ch` (both parties call it, AGREEMENT): the keys it exchanges
    /// once per session.
    fn setup(&self, _ch: &mut dyn Channel, _role: Role, _prg: &mut Prg) -> Result<Option<State>, nectar_fhe::FheError> {
        Ok(None)
    }
}

/// Every FFN block protocol, in the order `nectar suites` lists them.
pub static ALL: &[&dyn FfnProtocol] = &[
    &mpc::Mpc,
    &leaf::Leaf,
];

nectar_math::kind!(
    /// The FFN block kind in the registry.
    FfnKind,
    Ffn,
    "ffn",
    dyn FfnProtocol,
    ALL
);

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::FfnKind>().unwrap();
    }
}
