//! `gelu = seg4`: BumbleBee's Seg4GeLU (§V-A, Eq. (2), Alg. 3, App. D).
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

use super::{GeluForm, GeluProtocol, POLY_LOG2};
use crate::backend::{enc, enc_scaled, Backend, DynBackend};
use crate::mixed::ActRing;
use crate::poly::{check_headroom, extra_bits, select_sum, take3, LessMode, BUMBLEBEE_LESS};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// Seg4GeLU coefficients and segment bounds (BumbleBee Eq. (2) and App. D; AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
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

/// Seg4GeLU (Alg. 3) in the backend's current format.
pub fn seg4_gelu<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &Seg4Params) -> Result<B::Val, NnError> {
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
pub fn seg4_gelu_mixed<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &Seg4Params) -> Result<B::Val, NnError> {
    let act = FixedPoint::new(SEG4_ACT.0, SEG4_ACT.1)?;
    crate::mixed::with_format(b, x, act, |b, y| seg4_gelu(b, y, p))
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

/// Seg4GeLU at f = 18 on P6 (|x| ≤ 3): errors x² 2, x³ 8, x⁴ 38, x⁶ 434; weighted by
/// |b2|, |b4|, |b6| = 0.36, 0.038, 0.0018: 2.9, + 1 (truncation) + 1 (floor of the sum) ≤ 5
/// (P3, |x| ≤ 5: ≤ 3; identity: 0).
pub const SEG4_TOL: i64 = 5;
/// Seg4GeLU mixed at f' = 10: max|P'| · δ ≤ 1.2, + 5 as above, + 1 → 8 LSB' · 2^8.
pub const SEG4_MIXED_TOL: i64 = 8 << 8;

/// The protocol `gelu = seg4` (one set of coefficients serves both GeLU forms, which differ by
/// < 1e−3, well inside its error).
pub struct Seg4;

impl Protocol for Seg4 {
    fn name(&self) -> &'static str {
        "seg4"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §V-B Seg4GeLU"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "seg4": SEG4_BUMBLEBEE, "mixed_format": SEG4_ACT })
    }
}

impl GeluProtocol for Seg4 {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, _form: GeluForm, ring: ActRing) -> Result<Vec<u64>, NnError> {
        match ring {
            ActRing::Full => seg4_gelu(b, x, &SEG4_BUMBLEBEE),
            ActRing::Mixed => seg4_gelu_mixed(b, x, &SEG4_BUMBLEBEE),
        }
    }
    fn tolerance(&self, _form: GeluForm, ring: ActRing) -> Result<i64, NnError> {
        Ok(ring.pick(SEG4_TOL, SEG4_MIXED_TOL))
    }
    /// BumbleBee's fit: ≤ 1.5e−2 from the tanh form on [−5, 3] (paper), 3.3e−2 from the erf
    /// form; 3.5e−2 with the twin's rounding.
    fn approx_error(&self, _form: GeluForm, _ring: ActRing) -> Result<f64, NnError> {
        Ok(3.5e-2)
    }
    fn stated_accuracy(&self) -> &'static str {
        "max ≈ 1.5e−2 on [−5, 3], avg ULP ≈ 11 (§V-A, Fig. 7)"
    }
    fn pivots(&self) -> Vec<f64> {
        SEG4_BUMBLEBEE.t.to_vec()
    }
}

