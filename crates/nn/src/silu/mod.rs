//! SiLU (LLaMA's gated FFN): the operator kind ([`SiluProtocol`]), its list ([`ALL`]) and the
//! exact function (`nectar_math::real::silu`). One file per protocol: [`seg4`] (BumbleBee
//! App. D), [`nimbus`] (Nimbus §4), [`oppe`] (East §4.1), [`lut`] (ROTL §II-E). Adding one: its file and one line in
//! [`ALL`] (`CONTRIBUTING.md`).

pub mod lut;
pub mod nimbus;
pub mod oppe;
pub mod seg4;

use crate::backend::DynBackend;
use crate::mixed::ActRing;
use crate::NnError;
use nectar_math::registry::Protocol;

pub use seg4::{silu, silu_approx_f64, silu_mixed, SiluParams, SILU_ACT, SILU_BUMBLEBEE};

/// A SiLU protocol (the shape of [`crate::gelu::GeluProtocol`], with one form).
pub trait SiluProtocol: Protocol {
    /// SiLU of `x` in the backend's current format, evaluated in `ring`; the format is left as
    /// it was found.
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, ring: ActRing) -> Result<Vec<u64>, NnError>;

    /// Whether it runs in `ring`; the reason when not (refused at start).
    fn supports(&self, ring: ActRing) -> Result<(), String> {
        let _ = ring;
        Ok(())
    }

    /// The stated twin-vs-protocol bound, in LSB of the (64, 18) output, for inputs in
    /// [`DOMAIN`] off [`SiluProtocol::pivots`].
    fn tolerance(&self, ring: ActRing) -> Result<i64, NnError>;

    /// The stated bound on |twin − exact SiLU| over [`DOMAIN`] in reals.
    fn approx_error(&self, ring: ActRing) -> Result<f64, NnError>;

    /// The accuracy figure its source states.
    fn stated_accuracy(&self) -> &'static str {
        "—"
    }

    /// Thresholds of its approximate comparisons.
    fn pivots(&self) -> Vec<f64> {
        Vec::new()
    }
}

/// Every SiLU protocol, in the order `nectar suites` lists them.
pub static ALL: &[&dyn SiluProtocol] = &[
    &seg4::Seg4,
    &nimbus::Nimbus,
    &oppe::Oppe,
    &lut::Lut,
];

nectar_math::kind!(
    /// The SiLU kind in the registry.
    SiluKind,
    Silu,
    "silu",
    dyn SiluProtocol,
    ALL
);

/// The input range benches and the generated tests draw SiLU inputs from.
pub const DOMAIN: (f64, f64) = (-12.0, 12.0);

/// Exact SiLU.
pub fn silu_f64(x: f64) -> f64 {
    nectar_math::real::silu(x)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::SiluKind>().unwrap();
    }
}
