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
    abs_poly_gelu(b, x, &p.c, p.range, p.less, "p4_gelu")
}

/// The `p7` GeLU (nectar, issue 17 item 1): BOLT's P4 structure — `0.5x + P(|x|)` on
/// `|x| < r`, `x` for `x ≥ r`, `0` for `x < −r` — with a degree-7 `P` fitted (minimax) to the
/// checkpoint's own GeLU form on `[0, r]`, `r = 4`. `GeLU(x) − 0.5x = (x/2)·erf(x/√2)` is even,
/// so a polynomial in `|x|` fits it without the kink at 0 that a polynomial in `x` has to
/// bend around; and the tails are exact up to `r·Φ(−r) = 1.3e−4`. Max error on the real
/// line: 2.0e−4 (erf form), 1.9e−4 (tanh form) — vs Seg4's 1.5e−2 (its tanh-form fit is 3.3e−2
/// off the erf form). Coefficients: `scripts/fit_gelu_abs.py 7 4.0` (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AbsPolyParams {
    /// `c0..c_d` of `P(t) = Σ c_k t^k`, `t = |x|` (`d ≤ 8`).
    pub c: &'static [f64],
    /// Range `r`.
    pub range: f64,
    pub less: LessMode,
}

/// `p7` for the erf GeLU (BERT, ViT: `hidden_act = "gelu"`).
#[allow(clippy::excessive_precision)] // the fit's digits, verbatim
pub const P7_ERF: AbsPolyParams = AbsPolyParams {
    c: &[
        1.95093330111062614e-04,
        -1.76691282145109035e-03,
        3.93609530842023325e-01,
        3.99204650740870928e-02,
        -1.38374710793554928e-01,
        5.70821881069372428e-02,
        -9.84557448567129935e-03,
        6.38032041834336199e-04,
    ],
    range: 4.0,
    less: BUMBLEBEE_LESS,
};

/// `p7` for GPT-2's `gelu_new` (tanh form).
#[allow(clippy::excessive_precision)] // the fit's digits, verbatim
pub const P7_TANH: AbsPolyParams = AbsPolyParams {
    c: &[
        1.86821237883713859e-04,
        -1.96932208365280942e-03,
        3.95494252223124954e-01,
        3.54044179901331496e-02,
        -1.34387918665004019e-01,
        5.54908438414284180e-02,
        -9.55024394785382140e-03,
        6.17217921064907053e-04,
    ],
    range: 4.0,
    less: BUMBLEBEE_LESS,
};

/// The `p7` GeLU in the current format (needs `2f + 14 + 2 ≤ l`: `x⁷ < 4⁷ = 2^14`; the full
/// ring (64, 18), not the activation format (32, 12)). Cost: square 3n, mul 3n, one truncation
/// of 2n, one less_than on n × 3, one mux of 3n.
pub fn p7_gelu<B: Backend>(b: &mut B, x: &B::Val, p: &AbsPolyParams) -> Result<B::Val, NnError> {
    abs_poly_gelu(b, x, p.c, p.range, p.less, "p7_gelu")
}

/// `0.5x + Σ c_k |x|^k` on `|x| < r`, `x` for `x ≥ r`, `0` for `x < −r`, evaluated without
/// `|x|` as `F0` on `[−r, 0)` and `F1` on `[0, r)` (odd-power coefficients flip sign; BLB App. B
/// Alg. 4). Powers: `x² = sq(x)`, `x³ = x²·x`, `x⁴ = sq(x²)`, `x⁵ = x⁴·x`, `x⁶ = sq(x³)`,
/// `x⁷ = x⁴·x³`, `x⁸ = sq(x⁴)`, computed up to the degree; both polynomials share one
/// truncation; one batched comparison (−r, 0, r) and one batched mux select the pieces.
fn abs_poly_gelu<B: Backend>(
    b: &mut B,
    x: &B::Val,
    c: &[f64],
    range: f64,
    less: LessMode,
    op: &'static str,
) -> Result<B::Val, NnError> {
    let d = c.len().saturating_sub(1);
    if !(2..=8).contains(&d) {
        return Err(NnError::BadArgument(format!("{op}: polynomial degree {d} outside 2..=8")));
    }
    let fp = b.format();
    // Powers are only used on |x| < r: |x|^d < r^d.
    let pow_log2 = range.powi(d as i32).log2().ceil().max(0.0) as u32;
    check_headroom(op, fp, pow_log2)?;
    let n = b.len(x);
    let th = [enc(b, -range)?, 0, enc(b, range)?];
    let bits = b.less_than_const(x, &th, less.ignore_bits(fp))?;
    let [b0, s, z] = take3(b, bits, n)?;
    // pw[k] = x^k for k = 1..=d.
    let mut pw: Vec<B::Val> = vec![x.clone(), x.clone()];
    for k in 2..=d {
        let v = match k {
            2 => b.square(x)?,
            3 => b.mul(&pw[2], x)?,
            4 => b.square(&pw[2])?,
            5 => b.mul(&pw[4], x)?,
            6 => b.square(&pw[3])?,
            7 => b.mul(&pw[4], &pw[3])?,
            _ => b.square(&pw[4])?,
        };
        pw.push(v);
    }
    // F0 (x < 0): Σ c_k (−x)^k + 0.5x; F1 (x ≥ 0): Σ c_k x^k + 0.5x.
    let s_extra = extra_bits(fp, POLY_LOG2);
    let sh = fp.f() + s_extra;
    let mut acc: Option<B::Val> = None;
    for k in 1..=d {
        let (u, v) = if k % 2 == 1 { (-c[k], c[k]) } else { (c[k], c[k]) };
        let (u, v) = if k == 1 { (0.5 + u, 0.5 + v) } else { (u, v) };
        let (u, v) = (enc_scaled(b, u, sh)?, enc_scaled(b, v, sh)?);
        let kk: Vec<u64> = (0..2 * n).map(|i| if i < n { u } else { v }).collect();
        let both = b.concat(&[&pw[k], &pw[k]])?;
        let t = b.mul_const(&both, &kk, 0)?;
        acc = Some(match acc {
            None => t,
            Some(a) => b.add(&a, &t)?,
        });
    }
    let acc = acc.ok_or_else(|| NnError::BadArgument(format!("{op}: empty polynomial")))?;
    let k0 = enc_scaled(b, c[0], 2 * fp.f() + s_extra)?;
    let acc = b.add_const(&acc, &[k0])?;
    let polys = b.trunc(&acc, sh)?;
    let f0 = b.gather(&polys, &(0..n).collect::<Vec<_>>())?;
    let f1 = b.gather(&polys, &(n..2 * n).collect::<Vec<_>>())?;
    let z0 = b.xor(&b0, &s)?; // −r ≤ x < 0
    let z1 = b.xor(&s, &z)?; // 0 ≤ x < r
    let z2 = b.not(&z)?; // x ≥ r
    select_sum(b, &[&z0, &z1, &z2], &[&f0, &f1, x])
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
