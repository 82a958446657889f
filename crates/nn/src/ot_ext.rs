//! The COT extension feeding every OT-based protocol: the kind ([`OtExtProtocol`], [`ALL`]:
//! `ot_ext/ferret.rs` holds Ferret's parameter sets, `ot_ext/iknp.rs` IKNP). An extension
//! configures the secure backend's COT producer ([`SecureOpts::producer`]).

pub mod ferret;
pub mod iknp;

use crate::secure::SecureOpts;
use nectar_math::registry::Protocol;

/// A COT extension (DESIGN.md "Where a protocol plugs in").
pub trait OtExtProtocol: Protocol {
    /// The session's backend options with this extension as its COT producer.
    fn configure(&self, opts: SecureOpts) -> SecureOpts;
}

/// Every COT extension, in the order `nectar suites` lists them.
pub static ALL: &[&dyn OtExtProtocol] = &[
    &ferret::B13,
    &ferret::B11,
    &ferret::B13_HALF_TREE,
    &ferret::B11_HALF_TREE,
    &ferret::SMALL,
    &iknp::Iknp,
];

nectar_math::kind!(
    /// The COT-extension kind in the registry.
    OtExtKind,
    OtExt,
    "ot",
    dyn OtExtProtocol,
    ALL
);

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::OtExtKind>().unwrap();
    }
}
