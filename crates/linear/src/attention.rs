//! The attention's shared × shared products (`Q·K^T`, `P·V`): the kind
//! ([`SharedMatmulProtocol`], [`ALL`]: one file per protocol in `attention/`), on the session of
//! [`crate::protocol::LinearCx`].

pub mod ckks;
pub mod olt;
pub mod olt_duplex;

use crate::protocol::{LinearCx, LinearProtocol};
use crate::LinearError;

/// A protocol for products of two shared operands per head (DESIGN.md "Where a protocol plugs
/// in").
pub trait SharedMatmulProtocol: LinearProtocol {
    /// Per head `A_h·B_h` (`A`: `heads × k × m`, `B`: `heads × m × n`, both shared), truncated by
    /// the format's `f`.
    fn attention_matmul(&self, cx: &mut dyn LinearCx, a: &[u64], b: &[u64], shape: (usize, usize, usize, usize)) -> Result<Vec<u64>, LinearError>;
}

/// Every shared-matmul protocol, in the order `nectar suites` lists them.
pub static ALL: &[&dyn SharedMatmulProtocol] = &[
    &olt::Olt,
    &olt_duplex::OltDuplex,
    &ckks::Ckks,
];

nectar_math::kind!(
    /// The shared × shared matmul kind in the registry.
    SharedMatmulKind,
    SharedMatmul,
    "matmul-shared",
    dyn SharedMatmulProtocol,
    ALL
);

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::SharedMatmulKind>().unwrap();
    }
}
