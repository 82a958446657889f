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
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExpParams {
    /// Clipping threshold T_exp (exp(x) := 0 below).
    pub t_exp: f64,
    /// Squarings n: (1 + x/2^n)^(2^n).
    pub n: u32,
    pub less: LessMode,
}

/// BumbleBee §VII: T_exp = −14, n = 6 (for f = 18). The artifact config uses n = 5
/// (REFERENCE.md §3.4 discrepancy); we follow the paper.
pub const EXP_BUMBLEBEE: ExpParams = ExpParams { t_exp: -14.0, n: 6, less: BUMBLEBEE_LESS };

/// `(1 + x/2^n)^(2^n)` without clipping (n squarings).
pub fn exp_taylor<B: Backend>(b: &mut B, x: &B::Val, n: u32) -> Result<B::Val, NnError> {
    let y = b.trunc(x, n)?;
    let one = enc(b, 1.0)?;
    let mut y = b.add_const(&y, &[one])?;
    for _ in 0..n {
        y = b.square(&y)?;
    }
    Ok(y)
}

/// Clipped exponential of non-positive inputs.
pub fn exp_neg<B: Backend>(b: &mut B, x: &B::Val, p: &ExpParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    let t = enc(b, p.t_exp)?;
    let clip = b.less_than_const(x, &[t], p.less.ignore_bits(fp))?;
    let keep = match clip.first() {
        Some(c) => b.not(c)?,
        None => return Err(NnError::BadArgument("less_than_const returned no bits".into())),
    };
    let y = exp_taylor(b, x, p.n)?;
    b.mux(&keep, &y)
}

/// The parameters of `exp = taylor2` (AGREEMENT): T_exp = −14 as BumbleBee, n = 5 squarings
/// (the second-order base makes n = 5 already 20× more accurate than n = 6 of the first-order
/// one: max ≈ 2.2e−4 vs 4.3e−3; one squaring fewer pays for the base's extra product).
pub const EXP_TAYLOR2: ExpParams = ExpParams { t_exp: -14.0, n: 5, less: BUMBLEBEE_LESS };

/// `exp = taylor2` (nectar, issue 17 item 1): BumbleBee's `(1 + x/2^n)^(2^n)` with a
/// second-order base, `(1 + u + u²/2)^(2^n)`, `u = x/2^n`, kept at scale `f + n` throughout.
/// The base's error is `O(u³)` instead of `O(u²)`, so the result's is ≈ `|x|³e^x / (6·4^n)`
/// (max ≈ 2.2e−4 at `n = 5`, 5.5e−5 at `n = 6`, near `x = −3`) instead of ≈ `x²e^x / 2^(n+1)`
/// (max 4.3e−3 at `n = 6`). No division: `x`'s raw value at scale `f` *is* `u` at scale
/// `f + n`; `u²/2` is one square read in format `(l, f + n + 1)`; the `n` squarings run in
/// format `(l, f + n)` and the last one truncates by `f + 2n`, landing at scale `f`.
/// Cost on m elements: square (n + 1)·m, less_than m × 1, mux m — the same calls as
/// [`exp_neg`] with its first truncation replaced by a product. Input domain as [`exp_neg`];
/// needs `2(f + n) + 4 ≤ l` (the full ring (64, 18), not (32, 12)).
pub fn exp_neg_taylor2<B: Backend>(b: &mut B, x: &B::Val, p: &ExpParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    let g = fp.f() + p.n;
    if p.n == 0 || 2 * g + 4 > fp.l() {
        return Err(NnError::FormatTooNarrow {
            op: "exp_neg_taylor2",
            l: fp.l(),
            f: fp.f(),
            why: format!("needs n >= 1 and 2(f + n) + 4 <= l for its squarings at scale f + n (n = {})", p.n),
        });
    }
    let t = enc(b, p.t_exp)?;
    let clip = b.less_than_const(x, &[t], p.less.ignore_bits(fp))?;
    let keep = match clip.first() {
        Some(c) => b.not(c)?,
        None => return Err(NnError::BadArgument("less_than_const returned no bits".into())),
    };
    let at = |f: u32| FixedPoint::new(fp.l(), f);
    let run = |b: &mut B| -> Result<B::Val, NnError> {
        // u²/2 at scale g: x's raw value read at scale g + 1 is u/2, squared at that scale.
        b.set_format(at(g + 1)?);
        let half_u2 = b.square(x)?;
        b.set_format(at(g)?);
        let one = enc(b, 1.0)?;
        let base = b.add(x, &half_u2)?;
        let mut y = b.add_const(&base, &[one])?;
        for _ in 1..p.n {
            y = b.square(&y)?;
        }
        // The last squaring truncates by g + n: scale 2g − (g + n) = f.
        b.set_format(at(g + p.n)?);
        b.square(&y)
    };
    let y = run(b);
    b.set_format(fp);
    b.mux(&keep, &y?)
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

/// Clipped exponential under mixed bit-width in (32, 12) (§V-C, §VII for BERT/GPT2/ViT).
pub fn exp_neg_mixed<B: Backend>(b: &mut B, x: &B::Val, p: &ExpParams) -> Result<B::Val, NnError> {
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
