//! GeLU: BumbleBee's Seg4GeLU (§V-A, Eq. (2), Alg. 3, App. D) and the BOLT P4 variant
//! (§V-C, App. D; split by sign as in BLB App. B Alg. 4).
//!
//! Seg4GeLU(x) = −ε (x < −5); P3(x) (−5 ≤ x < −1.97); P6(x) (−1.97 ≤ x < 3); x − ε (x ≥ 3).
//! The three BumbleBee optimisations, expressed through the backend:
//! 1. approximated branch selection: comparisons ignore the low `f − 4` bits
//!    ([`crate::poly::LessMode`]);
//! 2. batched branch selection: all three thresholds in ONE `less_than_const` call
//!    (one (M choose 1)-OT_6 per digit in the secure backend);
//! 3. even powers by squares (`x² = sq(x)`, `x⁴ = sq(x²)`, `x⁶ = sq(x³)`) and `x³ = mul(x², x)`
//!    (the secure `mul` reuses the ciphertexts of x and x² already sent for the squares).
//!
//! Cost (one call on n elements): square 3n, mul n, one truncation of 2n (both polynomials in one
//! call), one less_than on n × 3 thresholds, one mux of 3n; 4 interactive rounds of arithmetic +
//! comparison + mux. Error vs GeLU: see `docs/results/nonlinear.md` (paper: max ≈ 1.5e−2 on
//! [−5, 3]; average ULP ≈ 11).
//!
//! Boundaries: the paper's Eq. (2) uses `x ≤ −1.97`, `x ≤ 3`; we use half-open `[a, b)`
//! segments (`1{x < t}` bits). Both polynomials agree at the pivots within the approximation
//! error, which is what makes the approximate comparison safe (§V-A1).
//! Input domain: `|x| < 2^(l−2−f)` (comparisons by MSB of `x − t` must not wrap).

use crate::backend::{enc, enc_scaled, Backend};
use crate::poly::{check_headroom, extra_bits, select_sum, take3, LessMode, BUMBLEBEE_LESS};
use crate::NnError;
use nectar_math::FixedPoint;

/// Seg4GeLU coefficients and segment bounds (BumbleBee Eq. (2) and App. D; AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seg4Params {
    /// P3 on [t0, t1): a0 + a1 x + a2 x² + a3 x³.
    pub a: [f64; 4],
    /// P6 on [t1, t2): b0 + b1 x + b2 x² + b4 x⁴ + b6 x⁶, as `[b0, b1, b2, b4, b6]`.
    pub b: [f64; 5],
    /// Segment bounds −5, −1.97, 3.
    pub t: [f64; 3],
    /// ε = 1e−5.
    pub eps: f64,
    /// Comparison mode for branch selection.
    pub less: LessMode,
}

/// The paper's parameters (BumbleBee App. D; REFERENCE.md §3.1).
#[allow(clippy::excessive_precision)] // the paper's digits, verbatim
pub const SEG4_BUMBLEBEE: Seg4Params = Seg4Params {
    a: [-0.5054031199708174, -0.4222658115198386, -0.1180761295118195, -0.0110341340306157],
    b: [0.0085263215410380, 0.5, 0.3603292692789629, -0.037688200365904, 0.0018067462606141],
    t: [-5.0, -1.97, 3.0],
    eps: 1e-5,
    less: BUMBLEBEE_LESS,
};

/// The activation format Seg4GeLU uses under mixed bit-width: `l' = 32` with `f' = 10`, because
/// `x⁶ · 2^(2f')` for `|x| ≤ 3` must fit `l' − 2` bits (f' = 12 of §V-C does not fit; the
/// artifact uses P4 at f' = 12 instead — REFERENCE.md §3.1 discrepancy). AGREEMENT.
pub const SEG4_ACT: (u32, u32) = (32, 10);

/// Largest `log2 |x^k|` before truncation: `3^6 = 729 < 2^10` on the P6 segment, `5^3 < 2^7`.
const SEG4_POWER_LOG2: u32 = 10;
/// Bound on `log2` of each polynomial's value on its segment (|P| ≤ 3 + Σ|terms| < 16).
const POLY_LOG2: u32 = 4;

/// Seg4GeLU (Alg. 3) in the backend's current format.
pub fn seg4_gelu<B: Backend>(b: &mut B, x: &B::Val, p: &Seg4Params) -> Result<B::Val, NnError> {
    let fp = b.format();
    check_headroom("seg4_gelu", fp, SEG4_POWER_LOG2)?;
    let n = b.len(x);
    // Step 3 first (independent of the powers; one batched comparison).
    let ulp = 1u64;
    let t2 = enc(b, p.t[2])?.wrapping_add(ulp) & crate::backend::ring_of(fp).mask();
    let th = [enc(b, p.t[0])?, enc(b, p.t[1])?, t2];
    let bits = b.less_than_const(x, &th, p.less.ignore_bits(fp))?;
    let [b0, b1, c] = take3(b, bits, n)?;
    // Step 1: powers.
    let x2 = b.square(x)?;
    let x3 = b.mul(&x2, x)?;
    let x4 = b.square(&x2)?;
    let x6 = b.square(&x3)?;
    // Step 2: both polynomials (+ε) with one truncation call.
    let s = extra_bits(fp, POLY_LOG2);
    let xx = b.concat(&[x, x])?;
    let x2x2 = b.concat(&[&x2, &x2])?;
    let zero = b.constant(&vec![0u64; n])?;
    let x3z = b.concat(&[&x3, &zero])?;
    let zx4 = b.concat(&[&zero, &x4])?;
    let zx6 = b.concat(&[&zero, &x6])?;
    let (f, sh) = (fp.f(), fp.f() + s);
    let per = |b: &B, c3: f64, c6: f64| -> Result<Vec<u64>, NnError> {
        let (u, v) = (enc_scaled(b, c3, sh)?, enc_scaled(b, c6, sh)?);
        Ok((0..2 * n).map(|i| if i < n { u } else { v }).collect())
    };
    let c1 = per(b, p.a[1], p.b[1])?;
    let c2 = per(b, p.a[2], p.b[2])?;
    let c3 = per(b, p.a[3], 0.0)?;
    let c4 = per(b, 0.0, p.b[3])?;
    let c6 = per(b, 0.0, p.b[4])?;
    let k0 = {
        let (u, v) = (enc_scaled(b, p.a[0] + p.eps, 2 * f + s)?, enc_scaled(b, p.b[0] + p.eps, 2 * f + s)?);
        (0..2 * n).map(|i| if i < n { u } else { v }).collect::<Vec<u64>>()
    };
    let mut acc = b.mul_const(&xx, &c1, 0)?;
    for (pw, c) in [(&x2x2, &c2), (&x3z, &c3), (&zx4, &c4), (&zx6, &c6)] {
        let t = b.mul_const(pw, c, 0)?;
        acc = b.add(&acc, &t)?;
    }
    acc = b.add_const(&acc, &k0)?;
    let polys = b.trunc(&acc, sh)?;
    let p3 = b.gather(&polys, &(0..n).collect::<Vec<_>>())?;
    let p6 = b.gather(&polys, &(n..2 * n).collect::<Vec<_>>())?;
    // Step 3 (local): z0 = 1{t0 ≤ x < t1}, z1 = 1{t1 ≤ x < t2}, z2 = 1{x ≥ t2}.
    let z0 = b.xor(&b0, &b1)?;
    let z1 = b.xor(&b1, &c)?;
    let z2 = b.not(&c)?;
    // Step 4: one batched mux, local sum, then −ε (gives −ε left of t0 and x − ε right of t2).
    let y = select_sum(b, &[&z0, &z1, &z2], &[&p3, &p6, x])?;
    let e = enc(b, -p.eps)?;
    b.add_const(&y, &[e])
}

/// Seg4GeLU under mixed bit-width: enter [`SEG4_ACT`], evaluate, extend back (§V-C).
pub fn seg4_gelu_mixed<B: Backend>(b: &mut B, x: &B::Val, p: &Seg4Params) -> Result<B::Val, NnError> {
    let act = FixedPoint::new(SEG4_ACT.0, SEG4_ACT.1)?;
    crate::mixed::with_format(b, x, act, |b, y| seg4_gelu(b, y, p))
}

/// BOLT's P4 GeLU (BumbleBee App. D, BOLT [58]): 0 for x < −r; 0.5x + Σ c_i |x|^i for |x| < r;
/// x for x ≥ r, evaluated without |x| as F0 on [−r, 0) and F1 on [0, r) (BLB App. B Alg. 4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct P4Params {
    /// c0..c4.
    pub c: [f64; 5],
    /// Range r: 2.7 in BOLT / BumbleBee App. D, 3.0 in the artifact (OBB `f_seg3_gelu`).
    pub range: f64,
    pub less: LessMode,
}

/// BOLT's coefficients on [−2.7, 2.7] (BumbleBee App. D; REFERENCE.md §3.2; AGREEMENT).
#[allow(clippy::excessive_precision)] // the paper's digits, verbatim
pub const P4_BOLT: P4Params = P4Params {
    c: [0.001620808531841547, -0.03798164612714154, 0.5410550166368381, -0.18352506127082727, 0.020848611754127593],
    range: 2.7,
    less: BUMBLEBEE_LESS,
};

/// BOLT P4 GeLU in the current format (fits the activation format (32, 12) of §V-C).
/// Cost: square 2n, mul n, one truncation of 2n, one less_than on n × 3, one mux of 3n.
pub fn p4_gelu<B: Backend>(b: &mut B, x: &B::Val, p: &P4Params) -> Result<B::Val, NnError> {
    let fp = b.format();
    // Powers are only used on |x| < r: x⁴ < r⁴ (2.7⁴ ≈ 53 < 2^6: fits (32, 12)).
    let pow_log2 = (p.range.powi(4)).log2().ceil().max(0.0) as u32;
    check_headroom("p4_gelu", fp, pow_log2)?;
    let n = b.len(x);
    let th = [enc(b, -p.range)?, 0, enc(b, p.range)?];
    let bits = b.less_than_const(x, &th, p.less.ignore_bits(fp))?;
    let [b0, s, c] = take3(b, bits, n)?;
    let x2 = b.square(x)?;
    let x3 = b.mul(&x2, x)?;
    let x4 = b.square(&x2)?;
    let [c0, c1, c2, c3, c4] = p.c;
    let xx = b.concat(&[x, x])?;
    let x2x2 = b.concat(&[&x2, &x2])?;
    let x3x3 = b.concat(&[&x3, &x3])?;
    let x4x4 = b.concat(&[&x4, &x4])?;
    // F0 (x < 0): c4x⁴ − c3x³ + c2x² + (0.5 − c1)x + c0; F1 (x ≥ 0): c4x⁴ + c3x³ + c2x² + (0.5 + c1)x + c0.
    let s_extra = extra_bits(fp, POLY_LOG2);
    let sh = fp.f() + s_extra;
    let two = |b: &B, u: f64, v: f64| -> Result<Vec<u64>, NnError> {
        let (u, v) = (enc_scaled(b, u, sh)?, enc_scaled(b, v, sh)?);
        Ok((0..2 * n).map(|i| if i < n { u } else { v }).collect())
    };
    let k1 = two(b, 0.5 - c1, 0.5 + c1)?;
    let k2 = two(b, c2, c2)?;
    let k3 = two(b, -c3, c3)?;
    let k4 = two(b, c4, c4)?;
    let mut acc = b.mul_const(&xx, &k1, 0)?;
    for (pw, k) in [(&x2x2, &k2), (&x3x3, &k3), (&x4x4, &k4)] {
        let t = b.mul_const(pw, k, 0)?;
        acc = b.add(&acc, &t)?;
    }
    let k0 = enc_scaled(b, c0, 2 * fp.f() + s_extra)?;
    acc = b.add_const(&acc, &[k0])?;
    let polys = b.trunc(&acc, sh)?;
    let f0 = b.gather(&polys, &(0..n).collect::<Vec<_>>())?;
    let f1 = b.gather(&polys, &(n..2 * n).collect::<Vec<_>>())?;
    let z0 = b.xor(&b0, &s)?; // −r ≤ x < 0
    let z1 = b.xor(&s, &c)?; // 0 ≤ x < r
    let z2 = b.not(&c)?; // x ≥ r
    select_sum(b, &[&z0, &z1, &z2], &[&f0, &f1, x])
}

/// The `p7` GeLU (nectar, issue 17 item 1). `GeLU(x) = x·S(x)` with `S(x) + S(−x) = 1` (`S = Φ`
/// for the erf form, `(1 + tanh(…))/2` for GPT-2's), so `GeLU(x) = ReLU(x) − g(|x|)` with
/// `g(t) = t − GeLU(t) = t·S(−t)`, analytic and decaying to 0 (`g(4) = 1.3e−4`). `p7` evaluates
/// `ReLU(x) − Q(|x|)` on `|x| < r` and `ReLU(x)` outside, `Q` a degree-7 minimax fit of `g` on
/// `[−0.07, r + 0.07]`, `r = 4`: max error 2.4e−4 (erf form), 2.3e−4 (tanh form) on the real
/// line, vs Seg4's 1.5e−2 (3.3e−2 off the erf form). Because `g` is analytic, a wrong sign
/// from the approximate comparison near 0 (it ignores the bits below 2^−4) still gives
/// `ReLU(x) − g(|x|) = GeLU(x)`: the fit extends past 0 for that. Coefficients:
/// `scripts/fit_gelu_abs.py 7 4.0` (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AbsPolyParams {
    /// `c0..c7` of `Q(t) = Σ c_k t^k`.
    pub c: [f64; 8],
    /// Range `r`.
    pub range: f64,
    pub less: LessMode,
}

/// `p7` for the erf GeLU (BERT, ViT: `hidden_act = "gelu"`).
#[allow(clippy::excessive_precision)] // the fit's digits, verbatim
pub const P7_ERF: AbsPolyParams = AbsPolyParams {
    c: [
        -1.13343634985068177e-04,
        5.02103443123945059e-01,
        -3.96636467032915885e-01,
        -3.41981028573490956e-02,
        1.33707902318160571e-01,
        -5.51963131862335601e-02,
        9.47420818414095034e-03,
        -6.09603296292709020e-04,
    ],
    range: 4.0,
    less: BUMBLEBEE_LESS,
};

/// `p7` for GPT-2's `gelu_new` (tanh form).
#[allow(clippy::excessive_precision)] // the fit's digits, verbatim
pub const P7_TANH: AbsPolyParams = AbsPolyParams {
    c: [
        -9.34749210462791147e-05,
        5.02132291091130223e-01,
        -3.97950148859479436e-01,
        -3.04530070181622953e-02,
        1.30239442134269995e-01,
        -5.37886025278662278e-02,
        9.21167700207162904e-03,
        -5.91116186229477189e-04,
    ],
    range: 4.0,
    less: BUMBLEBEE_LESS,
};

/// Ring width of [`p7_gelu`]'s comparisons: `x` is reduced to `Z_{2^40}` (local) before its
/// three-threshold comparison, which then compares 40 − 2 − (f − 4) bits instead of 64 − 2 −
/// (f − 4): 84 instead of 176 bytes per element (`nectar bench nn --op less3 --bits 40|64
/// --shift 14`). The input domain is `|x| < 2^(40 − 2 − f)` = 2^20 at f = 18 (a million; GeLU
/// inputs of real checkpoints are below 10^3).
pub const P7_CMP_BITS: u32 = 40;

/// Ring width of [`sq8_gelu`]'s three-threshold comparison (shares reduced locally,
/// [`crate::poly::less_than_in_ring`]): 34 − 1 − (f − 4) = 19 millionaire bits (5 digits)
/// instead of 25 in `Z_{2^40}`. The input domain is `|x| < 2^(34 − 2 − f)` = 16384 at f = 18,
/// 16× above the largest GeLU input of the real checkpoints we run (below 10^3). AGREEMENT.
pub const SQ8_CMP_BITS: u32 = 34;

/// Ring of [`p7_gelu`]'s polynomial: `Q` runs in `Z_{2^45}`, the widest ring the 2-prime bOLEe
/// key set serves ([`crate::secure::NARROW_MAX_L`]), so its four products cost 2/3 of the full
/// ring's (2 ciphertexts per query and response instead of 3).
pub const P7_POLY_BITS: u32 = crate::secure::NARROW_MAX_L;

/// Scale of `w = t/r − 1/2 ∈ [−1/2, 1/2]` and of its powers in [`p7_gelu`]: `w²` before its
/// truncation is `≤ 0.27·2^44 < 2^43` (the truncation's domain in `Z_{2^45}`).
const P7_G: u32 = 22;
/// Scale `B(w)` is summed at (`|B| ≤ 7 < 2^3`: `< 2^42`), then truncated to `P7_G − 1`, so that
/// `w⁴·B` (`≤ 0.43`) before its truncation is `< 2^42`.
const P7_SB: u32 = 39;
/// Scale `A(w) + w⁴·B(w)` is summed at (`|A|, |w⁴B| ≤ 0.43`: `< 2^42`).
const P7_SA: u32 = 43;

/// Checks of the `|x|`-form GeLUs ([`p7_gelu`], [`sq8_gelu`]) in format `fp`: a power-of-two
/// range `r` with `f + log2 r ≤ P7_G` and a ring wider than [`P7_POLY_BITS`]. Returns
/// `P7_G − f − log2 r`, the shift taking `t = |x|` at scale f to `t/r` at scale `P7_G`.
fn abs_form_shift(op: &'static str, fp: FixedPoint, range: f64) -> Result<u32, NnError> {
    let f = fp.f();
    let rho = range.log2();
    let narrow = |why: String| NnError::FormatTooNarrow { op, l: fp.l(), f, why };
    if rho.fract() != 0.0 || rho < 0.0 || f + rho as u32 > P7_G {
        return Err(narrow(format!("needs a power-of-two range r (got {range}) with f + log2 r <= {P7_G}")));
    }
    if fp.l() <= P7_POLY_BITS {
        return Err(narrow(format!("Q runs in Z_2^{P7_POLY_BITS}, so the format must be wider")));
    }
    Ok(P7_G - f - rho as u32)
}

/// `w = t/r − 1/2` at scale `P7_G` (the backend in `(P7_POLY_BITS, P7_G)`): `t`'s raw value
/// times `2^shift` ([`abs_form_shift`]), minus `2^(P7_G − 1)`. Local and exact.
fn centred_w<B: Backend>(b: &mut B, tn: &B::Val, shift: u32) -> Result<B::Val, NnError> {
    let w = b.mul_const(tn, &[1u64 << shift], 0)?;
    b.add_const(&w, &[enc(b, -0.5)?])
}

/// `Q`'s coefficients in `w = t/r − 1/2` (`t = r·(w + 1/2)`):
/// `e_k = Σ_{j ≥ k} c_j · C(j, k) · r^j · 2^(k − j)`. With them `|A(w)| ≤ 0.43`, `|B(w)| ≤ 7` and
/// `|w⁴B(w)| ≤ 0.43` on `w ∈ [−1/2, 1/2 + 2^−6]` for both fits (tested), where in `t` the two
/// halves of Paterson–Stockmeyer reach 34 and cancel to `|Q| ≤ 0.17`.
pub fn p7_w_coefficients(p: &AbsPolyParams) -> [f64; 8] {
    let binom = |j: usize, k: usize| (0..k).fold(1.0, |acc, i| acc * (j - i) as f64 / (i + 1) as f64);
    let mut e = [0.0; 8];
    for (k, ek) in e.iter_mut().enumerate() {
        *ek = (k..8).map(|j| p.c[j] * binom(j, k) * p.range.powi(j as i32) * 0.5f64.powi((j - k) as i32)).sum();
    }
    e
}

/// The `p7` GeLU in the current format. `t = |x|` and `ReLU(x)` from one mux; `Q(t)` in
/// `Z_{2^45}` ([`P7_POLY_BITS`]; `t` enters by local reduction) in the variable
/// `w = t/r − 1/2` (a local affine map of `t`'s shares: `r = 4 = 2^2`), by
/// Paterson–Stockmeyer `Q = A(w) + w⁴·B(w)`, `A`, `B` of degree 3 in the baby steps
/// `w, w², w³` ([`p7_w_coefficients`]): four products (`w² = sq(w)`, `w³ = w²·w`, `w⁴ = sq(w²)`,
/// `w⁴·B`; queries of `w`, `w²`, `w⁴`, `B`) on n elements instead of Seg4's five, at scale 22.
/// The selection `mux(|x| < r, Q)` runs in `Z_{2^45}` too; the result is extended back (App. E
/// Alg. 5) and subtracted from `ReLU(x)`.
/// Centring `t` at `r/2` keeps every term below 0.43 (in `t` the halves reach 34 and cancel),
/// so 45 bits hold `Q` to ≈ 1e−6, like the full ring. Needs `f + 2 ≤ 22` and a ring wider than
/// 45 bits (the full ring (64, 18), not (32, 12)).
/// Cost: one less_than on n × 3 in `Z_{2^40}` ([`P7_CMP_BITS`]), mux n (full ring), square 2n,
/// mul 2n (2-prime bOLEe), truncation 4n, mux n and extension n in `Z_{2^45}`.
pub fn p7_gelu<B: Backend>(b: &mut B, x: &B::Val, p: &AbsPolyParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    let f = fp.f();
    let shift = abs_form_shift("p7_gelu", fp, p.range)?;
    let n = b.len(x);
    // The comparisons in the smaller ring (shares reduced locally; the bits are ring-free).
    let bits = crate::poly::less_than_in_ring(b, x, P7_CMP_BITS, &[-p.range, 0.0, p.range], p.less);
    let [lo, s, hi] = take3(b, bits?, n)?;
    let neg = b.mux(&s, x)?; // x where x < 0
    let relu = b.sub(x, &neg)?;
    let t = b.sub(&relu, &neg)?; // |x|
    let z = b.xor(&lo, &hi)?; // −r ≤ x < r
    let tn = b.reduce(&t, P7_POLY_BITS)?;
    let e = p7_w_coefficients(p);
    let at = |s: u32| FixedPoint::new(P7_POLY_BITS, s);
    let run = |b: &mut B| -> Result<B::Val, NnError> {
        b.set_format(at(P7_G)?);
        let w = centred_w(b, &tn, shift)?;
        let w2 = b.square(&w)?;
        let w3 = b.mul(&w2, &w)?;
        let w4 = b.square(&w2)?;
        // Σ_{k=1..3} c_k w^k + c_0 at scale `sc` (local, exact).
        let cubic = |b: &mut B, c: &[f64], sc: u32| -> Result<B::Val, NnError> {
            let mut acc = b.mul_const(&w, &[enc_scaled(b, c[1], sc - P7_G)?], 0)?;
            for (pw, ck) in [(&w2, c[2]), (&w3, c[3])] {
                let term = b.mul_const(pw, &[enc_scaled(b, ck, sc - P7_G)?], 0)?;
                acc = b.add(&acc, &term)?;
            }
            b.add_const(&acc, &[enc_scaled(b, c[0], sc)?])
        };
        let bq = cubic(b, &e[4..8], P7_SB)?;
        let bq = b.trunc(&bq, P7_SB - (P7_G - 1))?; // B at scale G − 1
        let m = b.mul(&w4, &bq)?; // w⁴·B at scale G − 1
        let m = b.mul_const(&m, &[1u64 << (P7_SA - (P7_G - 1))], 0)?; // lifted to SA (exact)
        let a = cubic(b, &e[0..4], P7_SA)?;
        let q = b.add(&a, &m)?;
        let q = b.trunc(&q, P7_SA - f)?; // Q at scale f
        b.set_format(at(f)?);
        let qz = b.mux(&z, &q)?;
        crate::mixed::leave(b, &qz, fp)
    };
    let qz = run(b);
    b.set_format(fp);
    b.sub(&relu, &qz?)
}

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
#[derive(Clone, Copy, Debug, PartialEq)]
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

/// Scale the affine combinations of [`sq8_gelu`] are summed at before their one truncation
/// (`|u2|, |u3| ≤ 0.68`, `|Q| < 0.2`: below `2^43`).
const SQ8_S: u32 = 43;

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

/// `Σ c_k · v_k + c0` for values `v_k` at scale [`P7_G`] in `Z_2^45`: summed at [`SQ8_S`]
/// (local products by public constants), then one truncation to `out` (≤ 1 LSB).
fn sq8_affine<B: Backend>(b: &mut B, terms: &[(&B::Val, f64)], c0: f64, out: u32) -> Result<B::Val, NnError> {
    let mut acc: Option<B::Val> = None;
    for &(v, c) in terms {
        let term = b.mul_const(v, &[enc_scaled(b, c, SQ8_S - P7_G)?], 0)?;
        acc = Some(match acc {
            Some(a) => b.add(&a, &term)?,
            None => term,
        });
    }
    let acc = acc.ok_or_else(|| NnError::BadArgument("sq8: empty combination".into()))?;
    let acc = b.add_const(&acc, &[enc_scaled(b, c0, SQ8_S)?])?;
    b.trunc(&acc, SQ8_S - out)
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
pub fn sq8_gelu<B: Backend>(b: &mut B, x: &B::Val, p: &ChainParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    let f = fp.f();
    let shift = abs_form_shift("sq8_gelu", fp, p.range)?;
    let n = b.len(x);
    // Three thresholds on x in one call in Z_2^34 (shares reduced locally; the bits are
    // ring-free): 1{x < −r}, the sign 1{x < 0} and 1{x < r}. The bits are monotone, so
    // 1{−r ≤ x < r} is the XOR of the outer two (local, no AND).
    let bits = crate::poly::less_than_in_ring(b, x, SQ8_CMP_BITS, &[-p.range, 0.0, p.range], p.less)?;
    let (below, s, inside_hi) = match bits.as_slice() {
        [a, c, d] if [a, c, d].iter().all(|v| b.bit_len(v) == n) => (a, c, d),
        _ => return Err(NnError::BadArgument("expected three comparison bit vectors".into())),
    };
    let z = b.xor(inside_hi, below)?; // |x| < r (at x = −r: inside, Q(r) is in the fit's range)
    let neg = b.mux(s, x)?; // x where x < 0
    let relu = b.sub(x, &neg)?;
    let t = b.sub(&relu, &neg)?; // |x|
    let tn = b.reduce(&t, P7_POLY_BITS)?;
    let [a1, b1, c1, a2, b2, c2, d2, k3, k2, k1, kw, k0] = p.c;
    let at = |s: u32| FixedPoint::new(P7_POLY_BITS, s);
    let run = |b: &mut B| -> Result<B::Val, NnError> {
        b.set_format(at(P7_G)?);
        let w = centred_w(b, &tn, shift)?;
        let p1 = b.square(&w)?;
        let u2 = sq8_affine(b, &[(&p1, a1), (&w, b1)], c1, P7_G)?;
        let p2 = b.square(&u2)?;
        let u3 = sq8_affine(b, &[(&p2, a2), (&p1, b2), (&w, c2)], d2, P7_G)?;
        let p3 = b.square(&u3)?;
        let q = sq8_affine(b, &[(&p3, k3), (&p2, k2), (&p1, k1), (&w, kw)], k0, f)?;
        b.set_format(at(f)?);
        let qz = b.mux(&z, &q)?;
        crate::mixed::leave(b, &qz, fp)
    };
    let qz = run(b);
    b.set_format(fp);
    b.sub(&relu, &qz?)
}

/// P4 GeLU under mixed bit-width in BumbleBee's activation format (32, 12) (§V-C).
pub fn p4_gelu_mixed<B: Backend>(b: &mut B, x: &B::Val, p: &P4Params) -> Result<B::Val, NnError> {
    crate::mixed::with_format(b, x, crate::mixed::ACT_FORMAT, |b, y| p4_gelu(b, y, p))
}

/// The reference GeLU of the paper (tanh form, §V-A).
pub fn gelu_f64(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

/// Seg4GeLU evaluated in f64 (the approximation alone, no fixed point).
pub fn seg4_f64(x: f64, p: &Seg4Params) -> f64 {
    let [a0, a1, a2, a3] = p.a;
    let [b0, b1, b2, b4, b6] = p.b;
    if x < p.t[0] {
        -p.eps
    } else if x < p.t[1] {
        a0 + a1 * x + a2 * x * x + a3 * x * x * x
    } else if x < p.t[2] {
        b0 + b1 * x + b2 * x * x + b4 * x.powi(4) + b6 * x.powi(6)
    } else {
        x - p.eps
    }
}
