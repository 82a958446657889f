//! `gelu = sq8` (the default suite's): `ReLU(x) − Q(|x|)` with `Q` of degree 8 from three
//! squarings, fitted to the checkpoint's GeLU form, in `Z_{2^45}` (nectar, issue 17).

use super::abs_form::{abs_form_eval, abs_form_shift, chain_affine, P7_G, P7_POLY_BITS};
use super::p7::NO_MIXED;
use super::{by_form, GeluForm, GeluProtocol};
use crate::backend::{Backend, DynBackend};
use crate::mixed::ActRing;
use crate::poly::{LessMode, BUMBLEBEE_LESS};
use crate::NnError;
use nectar_math::registry::Protocol;

/// Ring width of [`sq8_gelu`]'s three-threshold comparison (shares reduced locally,
/// [`crate::poly::less_than_in_ring`]): 34 − 1 − (f − 4) = 19 millionaire bits (5 digits)
/// instead of 25 in `Z_{2^40}`. The input domain is `|x| < 2^(34 − 2 − f)` = 16384 at f = 18,
/// 16× above the largest GeLU input of the real checkpoints we run (below 10^3). AGREEMENT.
pub const SQ8_CMP_BITS: u32 = 34;

/// The `sq8` GeLU (nectar, issue 17): `p7`'s `ReLU(x) − Q(|x|)` on `|x| < r` with `Q` a
/// degree-8 polynomial in `w = |x|/r − 1/2` built from three squarings instead of a degree-7
/// one from four products:
///
/// ```text
/// p1 = w²,  u2 = a1·p1 + b1·w + c1,  p2 = u2²,  u3 = a2·p2 + b2·p1 + c2·w + d2,  p3 = u3²
/// Q  = k3·p3 + k2·p2 + k1·p1 + kw·w + k0
/// ```
///
/// Each square is one bOLEe query and one response (Π_square, BumbleBee §IV), so `Q` costs
/// three queries and three responses where Paterson–Stockmeyer's `w², w³, w⁴, w⁴·B` cost four
/// of each. The chain is not every degree-8 polynomial: its twelve coefficients are fitted
/// directly (`scripts/fit_gelu_chain.py`: Nelder–Mead over the shape, minimax outer
/// coefficients, objective = max error + the chain's worst-case rounding at scale 2^−22), with
/// `|u2|, |u3| ≤ 0.68` on `w ∈ [−1/2 − δ, 1/2 + δ]` so every square is below `2^43` at scale
/// `2·22` (the truncation domain of `Z_2^45`). Max error on `[−0.07, r + 0.07]`: 1.82e−4 (erf
/// form), 1.64e−4 (tanh form), vs `p7`'s 2.36e−4 / 2.26e−4; rounding bound 5.2e−6.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ChainParams {
    /// `[a1, b1, c1, a2, b2, c2, d2, k3, k2, k1, kw, k0]`.
    pub c: [f64; 12],
    /// Range `r` (a power of two).
    pub range: f64,
    pub less: LessMode,
}

/// `sq8` for the erf GeLU (BERT, ViT). `scripts/fit_gelu_chain.py` (AGREEMENT).
#[allow(clippy::excessive_precision)] // the fit's digits, verbatim
pub const SQ8_ERF: ChainParams = ChainParams {
    c: [
        1.70647801698084067e+00,
        -8.35985673705146981e-01,
        -5.77614861989037665e-01,
        2.11556884262751943e+00,
        5.63876373928775765e-01,
        4.00797506525304936e-01,
        -6.09289026283639901e-01,
        1.32792079443330491e-01,
        -5.88008089375714471e-01,
        -6.14280427045710065e-01,
        1.61303927504356959e-01,
        2.40389113061467402e-01,
    ],
    range: 4.0,
    less: BUMBLEBEE_LESS,
};

/// `sq8` for GPT-2's `gelu_new` (tanh form). `scripts/fit_gelu_chain.py` (AGREEMENT).
#[allow(clippy::excessive_precision)] // the fit's digits, verbatim
pub const SQ8_TANH: ChainParams = ChainParams {
    c: [
        1.66155209037023588e+00,
        -8.22474246295642364e-01,
        -5.78218098984939477e-01,
        2.12596164154035216e+00,
        6.33629966031810099e-01,
        3.60026738158432336e-01,
        -6.35804188703923856e-01,
        1.40739207238180231e-01,
        -6.05316615578810668e-01,
        -6.37740747230490013e-01,
        1.78475080022274246e-01,
        2.46931122843853906e-01,
    ],
    range: 4.0,
    less: BUMBLEBEE_LESS,
};

/// [`ChainParams`]'s chain evaluated in f64 (the approximation alone, no fixed point): `Q(w)`.
pub fn sq8_q_f64(p: &ChainParams, w: f64) -> f64 {
    let [a1, b1, c1, a2, b2, c2, d2, k3, k2, k1, kw, k0] = p.c;
    let p1 = w * w;
    let u2 = a1 * p1 + b1 * w + c1;
    let p2 = u2 * u2;
    let u3 = a2 * p2 + b2 * p1 + c2 * w + d2;
    let p3 = u3 * u3;
    k3 * p3 + k2 * p2 + k1 * p1 + kw * w + k0
}

/// `sq8` evaluated in f64: `ReLU(x) − Q(|x|/r − 1/2)` on `−r ≤ x < r` (the comparisons'
/// [`sq8_gelu`] makes), `ReLU(x)` outside.
pub fn sq8_f64(p: &ChainParams, x: f64) -> f64 {
    let t = x.abs();
    let relu = x.max(0.0);
    if -p.range <= x && x < p.range {
        relu - sq8_q_f64(p, t / p.range - 0.5)
    } else {
        relu
    }
}

/// The `sq8` GeLU in the current format ([`ChainParams`]). Branch selection by one
/// three-threshold comparison of `x` in `Z_{2^34}` ([`SQ8_CMP_BITS`]; `p7`'s is in `Z_{2^40}`):
/// `1{x < −r}`, the sign `s = 1{x < 0}` (then `t = |x|` and `ReLU(x)` from one mux) and
/// `1{x < r}`, whence `z = 1{−r ≤ x < r}` by XOR. One 19-bit millionaire with three thresholds
/// costs 2.8× the bytes of a one-threshold one (49 instead of 29 COTs per element) but one
/// comparison's rounds, and runs in less time than the two sequential one-threshold comparisons
/// (sign, then `|x| < r` on `t`) it replaced. Input domain `|x| < 2^(34 − 2 − f)` (2^14 at
/// f = 18). A wrong approximate sign near 0 (`|x| < 2^−4`) gives `t = −|x|`, inside the fit's
/// `[−0.07, r + 0.07]` like `p7`'s; an approximate `z` at `|x| ≈ r` selects `Q` only inside it. `Q` as in [`ChainParams`] in `Z_2^45` at scale 22 (narrow
/// bOLEe key set), its selection `mux(z, Q)` there too, then extension back and `ReLU(x) − ·`.
/// Needs `f + log2 r ≤ 22` and a ring wider than 45 bits.
/// Cost: one three-threshold less_than on n, mux n (full ring), three squares on n (3 queries,
/// 3 responses), six truncations of n, mux n and extension n in `Z_{2^45}`.
pub fn sq8_gelu<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ChainParams) -> Result<B::Val, NnError> {
    let shift = abs_form_shift("sq8_gelu", b.format(), p.range)?;
    let [a1, b1, c1, a2, b2, c2, d2, k3, k2, k1, kw, k0] = p.c;
    abs_form_eval(b, x, SQ8_CMP_BITS, p.range, shift, p.less, |b, w, f| {
        let p1 = b.square(w)?;
        let u2 = chain_affine(b, &[(&p1, a1), (w, b1)], c1, P7_G)?;
        let p2 = b.square(&u2)?;
        let u3 = chain_affine(b, &[(&p2, a2), (&p1, b2), (w, c2)], d2, P7_G)?;
        let p3 = b.square(&u3)?;
        chain_affine(b, &[(&p3, k3), (&p2, k2), (&p1, k1), (w, kw)], k0, f)
    })
}

/// SQ8 (`gelu=sq8`, chain of squares in `Z_2^45`) at f = 18, in LSB_22 (each square: product
/// {0, ±1} + truncation ≤ 1 → 2; each affine sum: one truncation): p1 2; u2 |a1|·2 + 1 = 4.4;
/// p2 2·|u2|·4.4 + 2 = 8; u3 |a2|·8 + |b2|·2 + 1 = 19; p3 2·|u3|·19 + 2 = 28; Q at scale 18:
/// (|k3|·28 + |k2|·8 + |k1|·2)/16 = 0.6 + 1 (truncation) → 2, rounded up to 3 (the mux and the
/// extension are exact; `|u2|, |u3| ≤ 0.68`, coefficients of `SQ8_ERF` / `SQ8_TANH`).
pub const SQ8_TOL: i64 = 3;

/// The protocol `gelu = sq8` (a fit per form).
pub struct Sq8;

impl Protocol for Sq8 {
    fn name(&self) -> &'static str {
        "sq8"
    }
    fn source(&self) -> &'static str {
        "nectar: ReLU(x) - Q(|x|), degree 8 by three squares"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "erf": SQ8_ERF, "tanh": SQ8_TANH, "compare_ring": SQ8_CMP_BITS, "poly_ring": P7_POLY_BITS })
    }
}

impl GeluProtocol for Sq8 {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, form: GeluForm, ring: ActRing) -> Result<Vec<u64>, NnError> {
        self.supports(ring).map_err(NnError::BadArgument)?;
        sq8_gelu(b, x, by_form(form, &SQ8_ERF, &SQ8_TANH))
    }
    fn supports(&self, ring: ActRing) -> Result<(), String> {
        ring.full_only("gelu=sq8", NO_MIXED)
    }
    fn tolerance(&self, _form: GeluForm, _ring: ActRing) -> Result<i64, NnError> {
        Ok(SQ8_TOL)
    }
    /// The fits' 1.82e−4 (erf) and 1.64e−4 (tanh) on `[−0.07, r + 0.07]`, with the twin's
    /// rounding (5.2e−6 bound).
    fn approx_error(&self, form: GeluForm, _ring: ActRing) -> Result<f64, NnError> {
        Ok(by_form(form, 1.9e-4, 1.75e-4))
    }
    fn stated_accuracy(&self) -> &'static str {
        "— (nectar; fit 1.8e−4 erf, 1.6e−4 tanh)"
    }
    fn pivots(&self) -> Vec<f64> {
        vec![-SQ8_ERF.range, 0.0, SQ8_ERF.range]
    }
}
