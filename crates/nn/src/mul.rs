//! Element-wise products of shares (`mul`, `square`): the kind ([`ProductProtocol`], [`ALL`]:
//! one file per protocol in `mul/`). A product protocol configures the secure backend of the
//! session ([`SecureOpts::mul`]): every operator's products run on it.

pub mod bole;
pub mod bole_duplex;
pub mod ot;

use crate::secure::SecureOpts;
use nectar_math::registry::Protocol;

/// A product protocol (DESIGN.md "Where a protocol plugs in").
pub trait ProductProtocol: Protocol {
    /// The session's backend options with this protocol behind its products.
    fn configure(&self, opts: SecureOpts) -> SecureOpts;
}

/// Every product protocol, in the order `nectar suites` lists them.
pub static ALL: &[&dyn ProductProtocol] = &[
    &bole::Bole,
    &bole_duplex::BoleDuplex,
    &ot::Ot,
];

nectar_math::kind!(
    /// The product kind in the registry.
    MulKind,
    Mul,
    "mul",
    dyn ProductProtocol,
    ALL
);

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::MulKind>().unwrap();
    }
}
