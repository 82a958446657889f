//! `silu = seg4`: SiLU(x) = x·sigmoid(x) by BumbleBee's four-segment approximation (App. D):
//! −ε (x < −8); a2x² + a1x + a0 (−8 ≤ x < −4); b6x⁶ + b4x⁴ + b2x² + b1x + b0 (−4 ≤ x < 4);
//! x − ε (x ≥ 4); coefficients fitted with numpy.polyfit by the paper's authors.
//!
//! Same structure and optimisations as [`crate::gelu::seg4_gelu`] (one batched 3-threshold
//! less-than, powers by squares, one truncation for both polynomials, one batched mux).
//! Cost on n elements: square 3n, mul n, trunc 2n, less_than n × 3, mux 3n.
//! Error: REFERENCE.md §3.3 (checked): max 7.2e−2 at x = 4⁺ (identity branch), < 1e−2 inside
//! the polynomial segments; measured in `docs/notes/nonlinear-notes.md`.
//! Needs `2f + 14 <= l` (x⁶ ≤ 4096 before truncation): fits (64, 18); under mixed bit-width
//! use (32, 8) ([`SILU_ACT`]).

use super::SiluProtocol;
use crate::backend::{enc, enc_scaled, Backend, DynBackend};
use crate::mixed::ActRing;
use crate::poly::{check_headroom, extra_bits, select_sum, take3, LessMode, BUMBLEBEE_LESS};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// SiLU segment coefficients (BumbleBee App. D; REFERENCE.md §3.3; AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SiluParams {
    /// [a0, a1, a2] on [t0, t1).
    pub a: [f64; 3],
    /// [b0, b1, b2, b4, b6] on [t1, t2).
    pub b: [f64; 5],
    pub t: [f64; 3],
    pub eps: f64,
    pub less: LessMode,
}

#[allow(clippy::excessive_precision)] // the paper's digits, verbatim
pub const SILU_BUMBLEBEE: SiluParams = SiluParams {
    a: [-0.3067541139982155, -0.0819767021525476, -0.0055465625580307],
    b: [0.0085064025895951, 0.5, 0.2281430841728270, -0.011113046708173, 0.0002743776353465],
    t: [-8.0, -4.0, 4.0],
    eps: 1e-5,
    less: BUMBLEBEE_LESS,
};

/// Activation format for mixed bit-width SiLU: x⁶·2^(2f') < 2^30 needs f' ≤ 9; we take 8 bits of
/// headroom margin for x³ on [−8, −4) as well (512·2^16 < 2^30). AGREEMENT.
pub const SILU_ACT: (u32, u32) = (32, 8);

/// 4⁶ = 4096 = 2^12 on the P6 segment; x² ≤ 64 on the P2 segment.
const SILU_POWER_LOG2: u32 = 12;
const POLY_LOG2: u32 = 4;

/// SiLU in the current format.
pub fn silu<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &SiluParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    check_headroom("silu", fp, SILU_POWER_LOG2)?;
    let n = b.len(x);
    let th = [enc(b, p.t[0])?, enc(b, p.t[1])?, enc(b, p.t[2])?];
    let bits = b.less_than_const(x, &th, p.less.ignore_bits(fp))?;
    let [b0, b1, c] = take3(b, bits, n)?;
    let x2 = b.square(x)?;
    let x4 = b.square(&x2)?;
    let x3 = b.mul(&x2, x)?;
    let x6 = b.square(&x3)?;
    let s = extra_bits(fp, POLY_LOG2);
    let (f, sh) = (fp.f(), fp.f() + s);
    let two = |b: &B, u: f64, v: f64, sc: u32| -> Result<Vec<u64>, NnError> {
        let (u, v) = (enc_scaled(b, u, sc)?, enc_scaled(b, v, sc)?);
        Ok((0..2 * n).map(|i| if i < n { u } else { v }).collect())
    };
    let zero = b.constant(&vec![0u64; n])?;
    let xx = b.concat(&[x, x])?;
    let x2x2 = b.concat(&[&x2, &x2])?;
    let zx4 = b.concat(&[&zero, &x4])?;
    let zx6 = b.concat(&[&zero, &x6])?;
    let mut acc = b.mul_const(&xx, &two(b, p.a[1], p.b[1], sh)?, 0)?;
    for (pw, k) in [(&x2x2, two(b, p.a[2], p.b[2], sh)?), (&zx4, two(b, 0.0, p.b[3], sh)?), (&zx6, two(b, 0.0, p.b[4], sh)?)] {
        let t = b.mul_const(pw, &k, 0)?;
        acc = b.add(&acc, &t)?;
    }
    acc = b.add_const(&acc, &two(b, p.a[0] + p.eps, p.b[0] + p.eps, 2 * f + s)?)?;
    let polys = b.trunc(&acc, sh)?;
    let p2 = b.gather(&polys, &(0..n).collect::<Vec<_>>())?;
    let p6 = b.gather(&polys, &(n..2 * n).collect::<Vec<_>>())?;
    let z0 = b.xor(&b0, &b1)?;
    let z1 = b.xor(&b1, &c)?;
    let z2 = b.not(&c)?;
    let y = select_sum(b, &[&z0, &z1, &z2], &[&p2, &p6, x])?;
    let e = enc(b, -p.eps)?;
    b.add_const(&y, &[e])
}

/// SiLU under mixed bit-width in [`SILU_ACT`].
pub fn silu_mixed<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &SiluParams) -> Result<B::Val, NnError> {
    let act = FixedPoint::new(SILU_ACT.0, SILU_ACT.1)?;
    crate::mixed::with_format(b, x, act, |b, y| silu(b, y, p))
}

/// The approximation in f64.
pub fn silu_approx_f64(x: f64, p: &SiluParams) -> f64 {
    let [a0, a1, a2] = p.a;
    let [b0, b1, b2, b4, b6] = p.b;
    if x < p.t[0] {
        -p.eps
    } else if x < p.t[1] {
        a0 + a1 * x + a2 * x * x
    } else if x < p.t[2] {
        b0 + b1 * x + b2 * x * x + b4 * x.powi(4) + b6 * x.powi(6)
    } else {
        x - p.eps
    }
}

/// SiLU at f = 18 (P6 on |x| ≤ 4): x² 2, x⁴ 66, x³ 10, x⁶ 1282; |b2|, |b4|, |b6| = 0.23, 0.011,
/// 2.7e−4: 1.5 + 2 ≤ 4.
pub const SILU_TOL: i64 = 4;
/// SiLU mixed at f' = 8: 1.1 + 4 + 1 → 7 LSB' · 2^10.
pub const SILU_MIXED_TOL: i64 = 7 << 10;

/// The protocol `silu = seg4`.
pub struct Seg4;

impl Protocol for Seg4 {
    fn name(&self) -> &'static str {
        "seg4"
    }
    fn source(&self) -> &'static str {
        "BumbleBee App. D"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "seg4": SILU_BUMBLEBEE, "mixed_format": SILU_ACT })
    }
}

impl SiluProtocol for Seg4 {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, ring: ActRing) -> Result<Vec<u64>, NnError> {
        match ring {
            ActRing::Full => silu(b, x, &SILU_BUMBLEBEE),
            ActRing::Mixed => silu_mixed(b, x, &SILU_BUMBLEBEE),
        }
    }
    fn tolerance(&self, ring: ActRing) -> Result<i64, NnError> {
        Ok(ring.pick(SILU_TOL, SILU_MIXED_TOL))
    }
    /// REFERENCE.md §3.3 (checked): 7.2e−2 at x = 4⁺ (the identity branch), with the twin's
    /// rounding 7.5e−2; in the mixed ring (32, 8) 8e−2.
    fn approx_error(&self, ring: ActRing) -> Result<f64, NnError> {
        Ok(ring.pick(7.5e-2, 8e-2))
    }
    fn stated_accuracy(&self) -> &'static str {
        "— (App. D)"
    }
    fn pivots(&self) -> Vec<f64> {
        SILU_BUMBLEBEE.t.to_vec()
    }
}
