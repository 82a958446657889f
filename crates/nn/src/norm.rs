//! LayerNorm / RMSNorm: the operator kind ([`NormProtocol`], [`ALL`]: one file per formulation
//! in `norm/` — BumbleBee's, East's Eq. (9), and ours with `r ⊗ γ` by one OLT). A formulation
//! takes the suite's reciprocal square root ([`crate::rsqrt::ALL`]); the evaluators are
//! [`crate::layernorm`] and [`crate::rmsnorm`].

pub mod bumblebee;
pub mod east_eq9;
pub mod outer;

use crate::backend::DynBackend;
use crate::rsqrt::{Rsqrt, RsqrtParams, RsqrtRange};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// One norm call: rows of `cols`, the model's ε, the server's `γ` and (LayerNorm) `β`.
#[derive(Clone, Copy, Debug)]
pub struct NormCall<'a> {
    pub rows: usize,
    pub cols: usize,
    /// The model's ε (a formulation may raise it to what its rsqrt's domain resolves).
    pub eps: f64,
    /// `γ` as shares (the server's input: its share is `γ`, the client's 0; public ones as
    /// constants).
    pub gamma: &'a Vec<u64>,
    /// `γ`'s values on the server (`None` on the client), for formulations that multiply by `γ`
    /// as the server's private weight ([`crate::Backend::outer_weight`]); not scaled by a
    /// statistics shift (such a formulation applies `2^−k` itself).
    pub gamma_server: Option<&'a [u64]>,
    /// `β` as shares: LayerNorm; `None`: RMSNorm.
    pub beta: Option<&'a Vec<u64>>,
    /// RMSNorm only: the statistics are of `x·2^−k` (`gamma` and `eps` are given already
    /// scaled, by `2^−k` and `4^−k`; `gamma_server` is not), for inputs beyond the format's
    /// square and rsqrt domain
    /// ([`crate::rmsnorm`]); 0: none.
    pub stats_shift: u32,
}

/// A LayerNorm / RMSNorm formulation (DESIGN.md "Where a protocol plugs in").
pub trait NormProtocol: Protocol {
    /// The normalised rows (`rows × cols`) in the backend's format, with the suite's `rsqrt`.
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, call: &NormCall<'_>, rsqrt: Rsqrt) -> Result<Vec<u64>, NnError>;

    /// Whether it runs with `rsqrt` on rows of `cols` with ε `eps` in `fp` (refused at start,
    /// before any message: the rsqrt's own check on this formulation's range).
    fn check(&self, rsqrt: Rsqrt, cols: usize, eps: f64, fp: FixedPoint) -> Result<(), NnError>;

    /// Whether it multiplies by `γ` as the server's private weight ([`crate::Backend::outer_weight`]:
    /// it runs on the model's engines, not on a share-level backend).
    fn needs_weights(&self) -> bool {
        false
    }

    /// The stated twin-vs-protocol bound in LSB of `fp` for rows of `cols` with `γ = 1`,
    /// `β = 0` and inputs in `[−4, 4]` (the bench's); an error where none is stated for this
    /// rsqrt.
    fn tolerance(&self, rsqrt: Rsqrt, cols: usize, fp: FixedPoint) -> Result<i64, NnError>;
}

/// Every norm formulation, in the order `nectar suites` lists them.
pub static ALL: &[&dyn NormProtocol] = &[
    &bumblebee::Bumblebee,
    &east_eq9::EastEq9,
    &outer::Outer,
];

nectar_math::kind!(
    /// The norm kind in the registry.
    NormKind,
    Norm,
    "norm",
    dyn NormProtocol,
    ALL
);

/// The row length `Suite::validate` checks a formulation's rsqrt for (BERT-base's hidden size;
/// every call checks its own rows again before any message).
pub const CHECK_COLS: usize = 768;

/// The formulations the generated tests and `bench nn` cover on a share-level backend (those
/// that do not multiply by `γ` as a weight), each with every rsqrt its check accepts on rows
/// of [`CHECK_COLS`].
pub fn compositions() -> Vec<(Norm, Rsqrt)> {
    let fp = FixedPoint::BUMBLEBEE;
    let eps = crate::layernorm::LAYERNORM_DEFAULT.eps;
    Norm::all()
        .filter(|p| !p.needs_weights())
        .flat_map(|p| Rsqrt::all().map(move |r| (p, r)))
        .filter(|(p, r)| p.check(*r, CHECK_COLS, eps, fp).is_ok())
        .collect()
}

/// The ε BumbleBee's normalised Newton resolves at `fp`: the model's raised to `4·2^−f`
/// (≈ 1.5e−5 at f = 18; BERT's 1e−12 and LLaMA's 1e−6 are below the resolution).
pub fn resolved_eps(eps: f64, fp: FixedPoint) -> f64 {
    eps.max(4.0 / (fp.f() as f64).exp2())
}

/// The variances `Var + ε ∈ [ε, 4^9)` of BumbleBee's formulations (and ours) at `fp`, with
/// BumbleBee's Newton domain [`crate::rsqrt::RSQRT_LAYERNORM`].
pub fn variance_range(eps: f64, fp: FixedPoint) -> RsqrtRange {
    RsqrtRange { lo: resolved_eps(eps, fp), ..crate::rsqrt::LAYERNORM_RANGE }
}

/// The smallest power-of-four domain `[4^lo, 4^hi)` around `[lo, hi]`, BumbleBee's three
/// Newton steps (for an rsqrt asked on a range no constant names).
pub fn newton_domain(lo: f64, hi: f64) -> RsqrtParams {
    let lo4 = (lo.log2() / 2.0).floor() as i32;
    let hi4 = (hi.log2() / 2.0).floor() as i32 + 1;
    RsqrtParams { lo: lo4, hi: hi4, iters: crate::rsqrt::RSQRT_LAYERNORM.iters }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::NormKind>().unwrap();
    }

    #[test]
    fn newton_domain_covers_the_range() {
        for (lo, hi) in [(1.0, 1001.0), (0.21, 884_736.0), (1.0 / 65536.0, 262_143.0)] {
            let p = super::newton_domain(lo, hi);
            assert!((2.0 * p.lo as f64).exp2() <= lo && hi < (2.0 * p.hi as f64).exp2(), "{lo} {hi} {p:?}");
        }
    }
}
