//! Exponential of non-positive inputs (softmax, and the BERT pooler's tanh): the operator kind
//! ([`ExpProtocol`]), its list ([`ALL`]) and what the clipped Taylor forms share
//! ([`ExpParams`], the clip). One file per protocol: [`taylor`] (BumbleBee §V-B), [`taylor2`]
//! and [`taylor4`] (nectar), [`nimbus`] (Nimbus §4), [`oppe`] (East §4.1), [`lut`] (ROTL §II-E). Adding one: its file
//! and one line in [`ALL`] (`CONTRIBUTING.md`).

pub mod lut;
pub mod nimbus;
pub mod oppe;
pub mod taylor;
pub mod taylor2;
pub mod taylor4;

use crate::backend::{enc, Backend, DynBackend};
use crate::poly::LessMode;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

pub use taylor::{exp_neg, exp_neg_f64, exp_neg_mixed, exp_taylor, EXP_BUMBLEBEE, EXP_MIXED_TOL, EXP_TOL};
pub use taylor2::{exp_neg_taylor2, exp_neg_taylor2_f64, taylor2_scale, EXP_TAYLOR2};
pub use taylor4::{exp_neg_taylor4, exp_neg_taylor4_f64, taylor4_scales, EXP_TAYLOR4};

/// An exponential protocol: `e^x` for `x ≤ 0`, 0 below its clip (DESIGN.md "Where a protocol
/// plugs in").
pub trait ExpProtocol: Protocol {
    /// `e^x` of non-positive `x` in the backend's current format — the full ring, or the
    /// narrower ring of `softmax = narrow | coarse` — leaving the format as found. `clip_l`:
    /// the ring of the clip's comparison when the inputs are known to be bounded (the coarse
    /// softmax; [`ExpParams::clip_l`]); a protocol without such a comparison ignores it.
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, clip_l: Option<u32>) -> Result<Vec<u64>, NnError>;

    /// Whether it runs in format `fp` (the narrow softmax's (45, 18)); the reason when not.
    fn fits(&self, fp: FixedPoint) -> Result<(), String> {
        let _ = fp;
        Ok(())
    }

    /// `tanh` by the protocol's own method, when it has one (East's OPPE tanh table); `None`:
    /// the model composes tanh from this exponential and a reciprocal.
    fn tanh(&self, b: &mut DynBackend<'_>, x: &Vec<u64>) -> Option<Result<Vec<u64>, NnError>> {
        let _ = (b, x);
        None
    }

    /// The stated twin-vs-protocol bound of [`ExpProtocol::tanh`] in LSB of `fp`.
    fn tanh_tolerance(&self, fp: FixedPoint) -> Result<i64, NnError> {
        let _ = fp;
        Err(NnError::BadArgument(format!("exp={} has no tanh of its own (the model composes it)", self.name())))
    }

    /// The stated twin-vs-protocol bound in LSB of format `fp`'s output, for inputs in
    /// [`DOMAIN`] off the pivots.
    fn tolerance(&self, fp: FixedPoint) -> Result<i64, NnError>;

    /// The stated bound on |twin − e^x| over [`DOMAIN`] in (64, 18) (0 below the clip counts
    /// as the approximation).
    fn approx_error(&self) -> Result<f64, NnError>;

    /// The accuracy figure its source states.
    fn stated_accuracy(&self) -> &'static str {
        "—"
    }

    /// Thresholds of its approximate comparisons (the clip).
    fn pivots(&self) -> Vec<f64> {
        Vec::new()
    }
}

/// Every exponential protocol, in the order `nectar suites` lists them.
pub static ALL: &[&dyn ExpProtocol] = &[
    &taylor::Taylor,
    &taylor2::Taylor2,
    &taylor4::Taylor4,
    &nimbus::Nimbus,
    &oppe::Oppe,
    &lut::Lut,
];

nectar_math::kind!(
    /// The exponential kind in the registry.
    ExpKind,
    Exp,
    "exp",
    dyn ExpProtocol,
    ALL
);

/// The input range benches and the generated tests draw exponential inputs from.
pub const DOMAIN: (f64, f64) = (-16.0, 0.0);

/// Parameters of the clipped exponential (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ExpParams {
    /// Clipping threshold T_exp (exp(x) := 0 below).
    pub t_exp: f64,
    /// Squarings n: (1 + x/2^n)^(2^n).
    pub n: u32,
    pub less: LessMode,
    /// The ring `Z_{2^l}` of the clip's comparison: `None` = the current ring; `Some(l)` =
    /// shares reduced locally to `l` bits first ([`crate::poly::less_than_in_ring`]), valid for
    /// inputs `|x| < 2^(l − 2 − f)` (the coarse softmax, [`crate::softmax::COARSE_CMP_L`]).
    pub clip_l: Option<u32>,
}

/// The clip bit `1{x < T_exp}` in the ring `p.clip_l` names, negated: the `keep` selector of
/// every clipped exponential here.
pub(crate) fn keep_bit<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ExpParams) -> Result<B::Bit, NnError> {
    let clip = match p.clip_l {
        None => {
            let fp = b.format();
            let t = enc(b, p.t_exp)?;
            b.less_than_const(x, &[t], p.less.ignore_bits(fp))?
        }
        Some(l) => crate::poly::less_than_in_ring(b, x, l, &[p.t_exp], p.less)?,
    };
    match clip.first() {
        Some(c) => b.not(c),
        None => Err(NnError::BadArgument("less_than_const returned no bits".into())),
    }
}


#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::ExpKind>().unwrap();
    }
}
