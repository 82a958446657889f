//! `exp = taylor4` (nectar, issue 17; the default suite's): BumbleBee's clipped exponential with
//! a fourth-order base from two squarings.

use super::{keep_bit, ExpParams, ExpProtocol};
use crate::backend::{enc, Backend, DynBackend};
use crate::poly::BUMBLEBEE_LESS;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The parameters of `exp = taylor4` (AGREEMENT): T_exp = −14, n = 3 squarings of a
/// fourth-order base (|u| ≤ 14/8 = 1.75, where the degree-4 Taylor polynomial stays positive).
pub const EXP_TAYLOR4: ExpParams = ExpParams { t_exp: -14.0, n: 3, less: BUMBLEBEE_LESS, clip_l: None };

/// Bound on `|u| = |x|/2^n` over the kept inputs of [`exp_neg_taylor4`] (`T_exp/2^n` plus the
/// approximate clip's slack, [`crate::poly::PIVOT_GAP`]).
fn taylor4_u_max(p: &ExpParams) -> f64 {
    (-p.t_exp + crate::poly::PIVOT_GAP) / (p.n as f64).exp2()
}

/// Largest `v = u² + 2u + 4 = (u + 1)² + 3` of [`exp_neg_taylor4`] on `u ∈ [−u_max, 0]`.
fn taylor4_v_max(p: &ExpParams) -> f64 {
    let u = taylor4_u_max(p);
    ((u - 1.0) * (u - 1.0) + 3.0).max(4.0)
}

/// Scales `(g, h)` of [`exp_neg_taylor4`] in format `fp`: `u²`, `v` and `v²` at scale
/// `g = min(f + n, ⌊(l − 2 − ⌈log2 v_max²⌉)/2⌋)` (v² at scale 2g before truncating must stay
/// below `2^(l−2)`), the squarings at `h = min(f + n, ⌊(l − 3)/2⌋)` (y ≤ 1). An error when the
/// ring leaves `g < f`.
pub fn taylor4_scales(fp: FixedPoint, p: &ExpParams) -> Result<(u32, u32), NnError> {
    let v2_bits = (2.0 * taylor4_v_max(p).log2()).ceil().max(0.0) as u32;
    let g = (fp.f() + p.n).min(fp.l().saturating_sub(2 + v2_bits) / 2);
    let h = (fp.f() + p.n).min(fp.l().saturating_sub(3) / 2);
    if p.n == 0 || g < fp.f() || h < g {
        return Err(NnError::FormatTooNarrow {
            op: "exp_neg_taylor4",
            l: fp.l(),
            f: fp.f(),
            why: format!("needs n >= 1 and room for v² (v <= {:.3}) at scale >= f", taylor4_v_max(p)),
        });
    }
    Ok((g, h))
}

/// `exp = taylor4` (nectar, issue 17 item 2): `T4(u)^(2^n)` with the fourth-order Taylor base
/// `T4(u) = 1 + u + u²/2 + u³/6 + u⁴/24`, `u = x/2^n`, n = 3: error ≈ `|x|⁵eˣ/(120·16ⁿ)`,
/// max 7.5e−5 on [−14, 0] (taylor2: 2.4e−4) with **one bOLEe query and one response fewer** than taylor2. The base is
/// evaluated as `T4(u) = ((u² + 2u + 4)² + 8u + 8)/24` (expand: `u⁴ + 4u³ + 12u² + 24u + 24`),
/// two squarings: `u² = Π_square(u)`, `v = u² + 2u + 4` (local), `v² = Π_square(v)`, then
/// `(v² + 8u + 8)·(1/24)` with the constant at scale `min(40, l − 3 − g)` and one truncation: 2 bOLEe queries
/// and 2 responses (the power form `u², u⁴ = sq(u²), u³ = mul(u, u²)` takes 2 and 3), and the
/// n squarings n of each (taylor2: 6 queries, 6 responses). `v ∈ [3, 4]` on `u ∈ [−1.75, 0]`.
///
/// Formats (see [`taylor4_scales`]): in (64, 18) g = h = 21 (x's raw value *is* u at scale
/// f + n, no truncation); in the narrow softmax ring (45, 18) g = 19 (u truncated by 2 bits),
/// the base is shifted to h = 21 (exact) for the squarings. The last squaring truncates to
/// scale f. Input domain as [`exp_neg`]; the clip as there.
pub fn exp_neg_taylor4<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ExpParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    let (g, h) = taylor4_scales(fp, p)?;
    // Scale of the constant 1/24: `(v² + 8u + 8) ≤ 24` at scale g times `2^K/24` stays below
    // `2^(l−3)`; its rounding (relative ≤ 8·2^−K, ×2^n after the squarings) is 7.6e−6 in
    // (45, 18) (K = 23) and negligible in (64, 18) (K = 40).
    let k = fp.l().saturating_sub(3 + g).min(40);
    let keep = keep_bit(b, x, p)?;
    let at = |f: u32| FixedPoint::new(fp.l(), f);
    let run = |b: &mut B| -> Result<B::Val, NnError> {
        let pre = fp.f() + p.n - g;
        let u = if pre > 0 { b.trunc(x, pre)? } else { x.clone() };
        b.set_format(at(g)?);
        let u2 = b.square(&u)?;
        // v = u² + 2u + 4, then (v² + 8u + 8)/24: local, with 1/24 at scale k, one truncation.
        let two_u = b.mul_const(&u, &[2], 0)?;
        let v = b.add(&u2, &two_u)?;
        let v = b.add_const(&v, &[enc(b, 4.0)?])?;
        let v2 = b.square(&v)?;
        let eight_u = b.mul_const(&u, &[8], 0)?;
        let num = b.add(&v2, &eight_u)?;
        let num = b.add_const(&num, &[enc(b, 8.0)?])?;
        let num = b.mul_const(&num, &[(2f64.powi(k as i32) / 24.0).round() as u64], 0)?;
        let mut y = b.trunc(&num, k)?;
        if h > g {
            y = b.mul_const(&y, &[1u64 << (h - g)], 0)?;
        }
        b.set_format(at(h)?);
        for _ in 1..p.n {
            y = b.square(&y)?;
        }
        // The last squaring truncates by 2h − f: scale f.
        b.set_format(at(2 * h - fp.f())?);
        b.square(&y)
    };
    let y = run(b);
    b.set_format(fp);
    b.mux(&keep, &y?)
}

/// `exp = taylor4` in f64 (no fixed point).
pub fn exp_neg_taylor4_f64(x: f64, p: &ExpParams) -> f64 {
    if x < p.t_exp {
        0.0
    } else {
        let u = x / (p.n as f64).exp2();
        (1.0 + u * (1.0 + u * (0.5 + u * (1.0 / 6.0 + u / 24.0)))).powi(1 << p.n)
    }
}


/// The protocol `exp = taylor4`.
pub struct Taylor4;

impl Protocol for Taylor4 {
    fn name(&self) -> &'static str {
        "taylor4"
    }
    fn source(&self) -> &'static str {
        "nectar: BumbleBee exp, 4th-order base"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "exp": EXP_TAYLOR4 })
    }
}

impl ExpProtocol for Taylor4 {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, clip_l: Option<u32>) -> Result<Vec<u64>, NnError> {
        exp_neg_taylor4(b, x, &ExpParams { clip_l, ..EXP_TAYLOR4 })
    }
    fn fits(&self, fp: FixedPoint) -> Result<(), String> {
        taylor4_scales(fp, &EXP_TAYLOR4).map(|_| ()).map_err(|e| e.to_string())
    }
    fn tolerance(&self, fp: FixedPoint) -> Result<i64, NnError> {
        crate::tolerance::exp_taylor4_tol(fp, &EXP_TAYLOR4)
    }
    /// ≈ |x|⁵eˣ/(120·16ⁿ) ≤ 7.5e−5 on [−14, 0], plus the twin's rounding: 8e−5.
    fn approx_error(&self) -> Result<f64, NnError> {
        Ok(8e-5)
    }
    fn stated_accuracy(&self) -> &'static str {
        "— (nectar; ≈ |x|⁵eˣ/(120·16ⁿ) ≤ 7.5e−5)"
    }
    fn pivots(&self) -> Vec<f64> {
        vec![EXP_TAYLOR4.t_exp]
    }
}
