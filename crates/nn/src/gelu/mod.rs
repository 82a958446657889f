//! GeLU: the operator kind ([`GeluProtocol`]), its list of protocols ([`ALL`]) and the exact
//! function they approximate (`nectar_math::real::gelu`). One file per protocol:
//!
//! | file | protocol | source |
//! |---|---|---|
//! | [`seg4`] | `seg4` | BumbleBee §V-A Eq. (2), Alg. 3 |
//! | [`p4`] | `p4` | BOLT's P4 (BumbleBee App. D; BLB App. B Alg. 4) |
//! | [`p7`] | `p7` | nectar: `ReLU(x) − Q(|x|)`, degree 7 |
//! | [`sq8`] | `sq8` | nectar: `ReLU(x) − Q(|x|)`, degree 8 by three squarings |
//! | [`nimbus`] | `nimbus` | Nimbus §4: `ReLU(x) − Q(|x|)`, a quartic fitted to the model's inputs |
//! | [`oppe`] | `oppe` | East §4.1 |
//! | [`lut`] | `lut` | ROTL §II-E |
//!
//! Adding a protocol: its file (a unit struct implementing [`GeluProtocol`]) and one line in
//! [`ALL`] (with its `mod` line). The suite, the engine, the benches, `nectar accuracy` and the
//! generated twin-vs-protocol tests read the list (`CONTRIBUTING.md`).

pub mod abs_form;
pub mod lut;
pub mod nimbus;
pub mod oppe;
pub mod p4;
pub mod p4_spu;
pub mod p7;
pub mod seg4;
pub mod sq8;

use crate::backend::DynBackend;
use crate::mixed::ActRing;
use crate::NnError;
use nectar_math::registry::Protocol;

pub use nectar_math::real::GeluForm;
pub use p4::{p4_gelu, p4_gelu_mixed, P4Params, P4_BOLT};
pub use p7::{p7_gelu, p7_w_coefficients, AbsPolyParams, P7_CMP_BITS, P7_ERF, P7_TANH};
pub use abs_form::P7_POLY_BITS;
pub use seg4::{seg4_f64, seg4_gelu, seg4_gelu_mixed, Seg4Params, SEG4_ACT, SEG4_BUMBLEBEE};
pub use sq8::{sq8_f64, sq8_gelu, sq8_q_f64, ChainParams, SQ8_CMP_BITS, SQ8_ERF, SQ8_TANH};

/// A GeLU protocol (DESIGN.md "Where a protocol plugs in").
pub trait GeluProtocol: Protocol {
    /// GeLU of `x` (the checkpoint's `form`) in the backend's current format, evaluated in the
    /// activation ring `ring`; the backend's format is left as it was found. The same code runs
    /// on the twin and on either secure party.
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, form: GeluForm, ring: ActRing) -> Result<Vec<u64>, NnError>;

    /// Whether it runs in `ring`; the reason when not (a suite naming the combination is
    /// refused at start, before any key is generated).
    fn supports(&self, ring: ActRing) -> Result<(), String> {
        let _ = ring;
        Ok(())
    }

    /// The stated twin-vs-protocol bound, in LSB of the (64, 18) output, for inputs in
    /// [`DOMAIN`] more than [`crate::tolerance::PIVOT_GAP`] away from [`GeluProtocol::pivots`]
    /// (derivations next to each bound).
    fn tolerance(&self, form: GeluForm, ring: ActRing) -> Result<i64, NnError>;

    /// The stated bound on |protocol output − exact GeLU| over [`DOMAIN`] in reals, apart from
    /// the protocol's own LSB error: the approximation's error plus the twin's rounding in its
    /// ring (what the accuracy tests assert, with [`GeluProtocol::tolerance`] added).
    fn approx_error(&self, form: GeluForm, ring: ActRing) -> Result<f64, NnError>;

    /// The accuracy figure its source states (the `paper` column of `nectar_nn::accuracy`).
    fn stated_accuracy(&self) -> &'static str {
        "—"
    }

    /// Thresholds of its approximate comparisons (an input within the pivot gap of one may take
    /// either neighbouring branch; benches and tests keep their inputs off them).
    fn pivots(&self) -> Vec<f64> {
        Vec::new()
    }
}

/// Every GeLU protocol, in the order `nectar suites` lists them.
pub static ALL: &[&dyn GeluProtocol] = &[
    &seg4::Seg4,
    &p4::P4,
    &p4_spu::P4Spu,
    &p7::P7,
    &sq8::Sq8,
    &nimbus::Nimbus,
    &oppe::Oppe,
    &lut::Lut,
];

nectar_math::kind!(
    /// The GeLU kind in the registry.
    GeluKind,
    Gelu,
    "gelu",
    dyn GeluProtocol,
    ALL
);

/// The input range benches and the generated tests draw GeLU inputs from (real checkpoints'
/// GeLU inputs spread wider, but every protocol is the identity or 0 beyond it).
pub const DOMAIN: (f64, f64) = (-6.0, 6.0);

/// Bound on `log2` of each Seg4 / P4 polynomial's value on its segment (|P| ≤ 3 + Σ|terms| < 16).
pub(crate) const POLY_LOG2: u32 = 4;

/// The reference GeLU of the paper (tanh form, §V-A).
pub fn gelu_f64(x: f64) -> f64 {
    nectar_math::real::gelu(x, GeluForm::Tanh)
}

/// Per-form parameters of a protocol: `erf` for [`GeluForm::Erf`], `tanh` otherwise.
pub(crate) fn by_form<T>(form: GeluForm, erf: T, tanh: T) -> T {
    match form {
        GeluForm::Erf => erf,
        GeluForm::Tanh => tanh,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::GeluKind>().unwrap();
    }
}
