//! `gelu = p4`: BOLT's P4 GeLU (BumbleBee App. D, BOLT [58]), split by sign as in BLB App. B
//! Alg. 4 (no `|x|`): 0 below −r, a degree-4 polynomial in `|x|` on `(−r, r)`, `x` above r.

use super::{GeluForm, GeluProtocol, POLY_LOG2};
use crate::backend::{enc, enc_scaled, Backend, DynBackend};
use crate::mixed::ActRing;
use crate::poly::{check_headroom, extra_bits, select_sum, take3, LessMode, BUMBLEBEE_LESS};
use crate::NnError;
use nectar_math::registry::Protocol;

/// BOLT's P4 GeLU (BumbleBee App. D, BOLT [58]): 0 for x < −r; 0.5x + Σ c_i |x|^i for |x| < r;
/// x for x ≥ r, evaluated without |x| as F0 on [−r, 0) and F1 on [0, r) (BLB App. B Alg. 4).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
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
pub fn p4_gelu<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &P4Params) -> Result<B::Val, NnError> {
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


/// P4 GeLU under mixed bit-width in BumbleBee's activation format (32, 12) (§V-C).
pub fn p4_gelu_mixed<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &P4Params) -> Result<B::Val, NnError> {
    crate::mixed::with_format(b, x, crate::mixed::ACT_FORMAT, |b, y| p4_gelu(b, y, p))
}

/// P4 at f = 18 (|x| < 2.7): x² 2, x³ 7.4, x⁴ 31; |c2|, |c3|, |c4| = 0.54, 0.18, 0.021: 3.1 + 2 ≤ 5.
pub const P4_TOL: i64 = 5;
/// P4 mixed at f' = 12: 1.2 + 5 + 1 → 8 LSB' · 2^6.
pub const P4_MIXED_TOL: i64 = 8 << 6;

/// The protocol `gelu = p4` (one set of coefficients for both forms).
pub struct P4;

impl Protocol for P4 {
    fn name(&self) -> &'static str {
        "p4"
    }
    fn source(&self) -> &'static str {
        "BOLT P4 (BumbleBee §V-B)"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "p4": P4_BOLT, "mixed_format": (crate::mixed::ACT_FORMAT.l(), crate::mixed::ACT_FORMAT.f()) })
    }
}

impl GeluProtocol for P4 {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, _form: GeluForm, ring: ActRing) -> Result<Vec<u64>, NnError> {
        match ring {
            ActRing::Full => p4_gelu(b, x, &P4_BOLT),
            ActRing::Mixed => p4_gelu_mixed(b, x, &P4_BOLT),
        }
    }
    fn tolerance(&self, _form: GeluForm, ring: ActRing) -> Result<i64, NnError> {
        Ok(ring.pick(P4_TOL, P4_MIXED_TOL))
    }
    /// BOLT's fit: ≤ 1e−2 from either form on the real line (the jump to 0 / x at |x| = 2.7
    /// included).
    fn approx_error(&self, _form: GeluForm, _ring: ActRing) -> Result<f64, NnError> {
        Ok(1e-2)
    }
    fn stated_accuracy(&self) -> &'static str {
        "avg ULP ≈ 4 (§V-A 'Tradeoffs')"
    }
    fn pivots(&self) -> Vec<f64> {
        vec![-P4_BOLT.range, 0.0, P4_BOLT.range]
    }
}
