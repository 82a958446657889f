//! Exponential on non-positive inputs (BumbleBee §V-B): `exp(x) ≈ (1 + x/2^n)^(2^n)` for
//! `x ∈ [T_exp, 0]`, and 0 for `x < T_exp`.
//!
//! Protocol: one truncation by `n` (the division), `+1` locally, `n` squarings, one (approximate)
//! less-than against `T_exp` and one mux to clip. Cost on m elements: trunc m, square n·m,
//! less_than m × 1, mux m; n + 2 rounds of arithmetic plus one comparison (in parallel with the
//! first). Error (f64 vs twin, f = 18, n = 6, T_exp = −14): see `docs/results/nonlinear.md`
//! (REFERENCE.md §3.4: max 4.3e−3, mean 1.1e−3 for the approximation itself).
//! Input domain: x ≤ 0 (inputs > 0 are evaluated by the same polynomial, which is not exp);
//! `|x| < 2^(l−2−f)`.

use crate::backend::{enc, Backend};
use crate::poly::{LessMode, BUMBLEBEE_LESS};
use crate::NnError;
use nectar_math::FixedPoint;

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
fn keep_bit<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ExpParams) -> Result<B::Bit, NnError> {
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

/// BumbleBee §VII: T_exp = −14, n = 6 (for f = 18). The artifact config uses n = 5
/// (REFERENCE.md §3.4 discrepancy); we follow the paper.
pub const EXP_BUMBLEBEE: ExpParams = ExpParams { t_exp: -14.0, n: 6, less: BUMBLEBEE_LESS, clip_l: None };

/// `(1 + x/2^n)^(2^n)` without clipping (n squarings).
pub fn exp_taylor<B: Backend + ?Sized>(b: &mut B, x: &B::Val, n: u32) -> Result<B::Val, NnError> {
    let y = b.trunc(x, n)?;
    let one = enc(b, 1.0)?;
    let mut y = b.add_const(&y, &[one])?;
    for _ in 0..n {
        y = b.square(&y)?;
    }
    Ok(y)
}

/// Clipped exponential of non-positive inputs.
pub fn exp_neg<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ExpParams) -> Result<B::Val, NnError> {
    let keep = keep_bit(b, x, p)?;
    let y = exp_taylor(b, x, p.n)?;
    b.mux(&keep, &y)
}

/// The parameters of `exp = taylor2` (AGREEMENT): T_exp = −14 as BumbleBee, n = 5 squarings
/// (the second-order base makes n = 5 already 20× more accurate than n = 6 of the first-order
/// one: max ≈ 2.2e−4 vs 4.3e−3; one squaring fewer pays for the base's extra product).
pub const EXP_TAYLOR2: ExpParams = ExpParams { t_exp: -14.0, n: 5, less: BUMBLEBEE_LESS, clip_l: None };

/// `exp = taylor2` (nectar, issue 17 item 1): BumbleBee's `(1 + x/2^n)^(2^n)` with a
/// second-order base, `(1 + u + u²/2)^(2^n)`, `u = x/2^n`, kept at scale `g` throughout.
/// The base's error is `O(u³)` instead of `O(u²)`, so the result's is ≈ `|x|³e^x / (6·4^n)`
/// (max ≈ 2.2e−4 at `n = 5`, 5.5e−5 at `n = 6`, near `x = −3`) instead of ≈ `x²e^x / 2^(n+1)`
/// (max 4.3e−3 at `n = 6`). No division: `x`'s raw value at scale `f` *is* `u` at scale
/// `f + n`, so `g = f + n` when the ring allows it; `u²/2` is one square read in format
/// `(l, g + 1)`; the `n` squarings run in format `(l, g)` and the last one truncates by
/// `2g − f`, landing at scale `f`.
///
/// The ring: a value `y ≤ 1` at scale `g` squares to `< 2^(2g + 1)`, which the truncation needs
/// below `2^(l−2)`, so `g = min(f + n, ⌊(l − 3)/2⌋)` ([`taylor2_scale`]): 23 in `(64, 18)`
/// (no pre-truncation), 21 in the narrow softmax ring `(45, 18)`, where `x` is first truncated
/// by `f + n − g = 2` bits (one more LSB of error, see [`crate::tolerance::exp_taylor2_tol`]).
/// Needs `g ≥ f`. Cost on m elements: square (n + 1)·m, less_than m × 1, mux m (and one
/// truncation m when `g < f + n`). Input domain as [`exp_neg`].
pub fn exp_neg_taylor2<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ExpParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    let g = taylor2_scale(fp, p)?;
    let keep = keep_bit(b, x, p)?;
    let at = |f: u32| FixedPoint::new(fp.l(), f);
    let run = |b: &mut B| -> Result<B::Val, NnError> {
        // u at scale g: x's raw value is u at scale f + n; drop the bits the ring cannot hold.
        let pre = fp.f() + p.n - g;
        let u = if pre > 0 { b.trunc(x, pre)? } else { x.clone() };
        // u²/2 at scale g: u's raw value read at scale g + 1 is u/2, squared at that scale.
        b.set_format(at(g + 1)?);
        let half_u2 = b.square(&u)?;
        b.set_format(at(g)?);
        let one = enc(b, 1.0)?;
        let base = b.add(&u, &half_u2)?;
        let mut y = b.add_const(&base, &[one])?;
        for _ in 1..p.n {
            y = b.square(&y)?;
        }
        // The last squaring truncates by 2g − f: scale f.
        b.set_format(at(2 * g - fp.f())?);
        b.square(&y)
    };
    let y = run(b);
    b.set_format(fp);
    b.mux(&keep, &y?)
}

/// The scale `g` of [`exp_neg_taylor2`]'s squarings in format `fp`: `min(f + n, ⌊(l − 3)/2⌋)`;
/// an error when `n = 0` or the ring leaves `g < f`.
pub fn taylor2_scale(fp: FixedPoint, p: &ExpParams) -> Result<u32, NnError> {
    let g = (fp.f() + p.n).min(fp.l().saturating_sub(3) / 2);
    if p.n == 0 || g < fp.f() {
        return Err(NnError::FormatTooNarrow {
            op: "exp_neg_taylor2",
            l: fp.l(),
            f: fp.f(),
            why: format!("needs n >= 1 and 2f + 3 <= l for its squarings at scale >= f (n = {})", p.n),
        });
    }
    Ok(g)
}

/// `exp = taylor2` in f64 (no fixed point).
pub fn exp_neg_taylor2_f64(x: f64, p: &ExpParams) -> f64 {
    if x < p.t_exp {
        0.0
    } else {
        let u = x / (p.n as f64).exp2();
        (1.0 + u + u * u / 2.0).powi(1 << p.n)
    }
}

/// The parameters of `exp = taylor4` (AGREEMENT): T_exp = −14, n = 3 squarings of a
/// fourth-order base (|u| ≤ 14/8 = 1.75, where the degree-4 Taylor polynomial stays positive).
pub const EXP_TAYLOR4: ExpParams = ExpParams { t_exp: -14.0, n: 3, less: BUMBLEBEE_LESS, clip_l: None };

/// Bound on `|u| = |x|/2^n` over the kept inputs of [`exp_neg_taylor4`] (`T_exp/2^n` plus the
/// approximate clip's slack, [`crate::tolerance::PIVOT_GAP`]).
fn taylor4_u_max(p: &ExpParams) -> f64 {
    (-p.t_exp + crate::tolerance::PIVOT_GAP) / (p.n as f64).exp2()
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

/// Clipped exponential under mixed bit-width in (32, 12) (§V-C, §VII for BERT/GPT2/ViT).
pub fn exp_neg_mixed<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ExpParams) -> Result<B::Val, NnError> {
    crate::mixed::with_format(b, x, crate::mixed::ACT_FORMAT, |b, y| exp_neg(b, y, p))
}

/// The approximation in f64 (no fixed point).
pub fn exp_neg_f64(x: f64, p: &ExpParams) -> f64 {
    if x < p.t_exp {
        0.0
    } else {
        (1.0 + x / (p.n as f64).exp2()).powi(1 << p.n)
    }
}
