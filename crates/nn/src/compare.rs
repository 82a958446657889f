//! Comparison (`less_than_const`, `msb`, the max trees' and the clips' comparisons): the
//! operator kind ([`CompareProtocol`], [`ALL`]: one file per protocol in `compare/`). A
//! comparison protocol configures the secure backend of the session ([`SecureOpts::compare`]):
//! every operator's comparisons run on it.

pub mod millionaire;
pub mod rotl_lut;

use crate::secure::SecureOpts;
use nectar_math::registry::Protocol;

/// A comparison protocol (DESIGN.md "Where a protocol plugs in").
pub trait CompareProtocol: Protocol {
    /// The session's backend options with this protocol behind its comparisons.
    fn configure(&self, opts: SecureOpts) -> SecureOpts;
}

/// Every comparison protocol, in the order `nectar suites` lists them.
pub static ALL: &[&dyn CompareProtocol] = &[
    &millionaire::Millionaire,
    &rotl_lut::RotlLut,
];

nectar_math::kind!(
    /// The comparison kind in the registry.
    CompareKind,
    Compare,
    "compare",
    dyn CompareProtocol,
    ALL
);

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::CompareKind>().unwrap();
    }
}
