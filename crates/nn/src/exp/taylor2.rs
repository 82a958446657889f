//! `exp = taylor2` (nectar, issue 17): BumbleBee's clipped exponential with a second-order base.

use super::{keep_bit, ExpParams, ExpProtocol};
use crate::backend::{enc, Backend, DynBackend};
use crate::poly::BUMBLEBEE_LESS;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

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


/// The protocol `exp = taylor2`.
pub struct Taylor2;

impl Protocol for Taylor2 {
    fn name(&self) -> &'static str {
        "taylor2"
    }
    fn source(&self) -> &'static str {
        "nectar: BumbleBee exp, 2nd-order base"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "exp": EXP_TAYLOR2 })
    }
}

impl ExpProtocol for Taylor2 {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, clip_l: Option<u32>) -> Result<Vec<u64>, NnError> {
        exp_neg_taylor2(b, x, &ExpParams { clip_l, ..EXP_TAYLOR2 })
    }
    fn fits(&self, fp: FixedPoint) -> Result<(), String> {
        taylor2_scale(fp, &EXP_TAYLOR2).map(|_| ()).map_err(|e| e.to_string())
    }
    fn tolerance(&self, fp: FixedPoint) -> Result<i64, NnError> {
        crate::tolerance::exp_taylor2_tol(fp, &EXP_TAYLOR2)
    }
    /// ≈ |x|³eˣ/(6·4⁵) ≤ 2.2e−4, plus the twin's rounding: 2.4e−4.
    fn approx_error(&self) -> Result<f64, NnError> {
        Ok(2.4e-4)
    }
    fn stated_accuracy(&self) -> &'static str {
        "— (nectar; ≈ |x|³eˣ/(6·4ⁿ) ≤ 2.2e−4)"
    }
    fn pivots(&self) -> Vec<f64> {
        vec![EXP_TAYLOR2.t_exp]
    }
}
