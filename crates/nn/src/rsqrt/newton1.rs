//! `rsqrt = newton1` (nectar, issues 48/49): BumbleBee's normalised Newton rsqrt (§V-B,
//! [`super::rsqrt`]) with a piecewise-linear initial guess on eighth-octaves, so that **one**
//! Newton step reaches what `newton2`'s two do, and with the normalisation folded into the
//! products: three product layers instead of six.
//!
//! - **Finer buckets, same comparison call.** One batched `less_than_const` against `2^(j/8)`
//!   (instead of `2^j`) gives the bucket `e` with `x ∈ [2^((e−1)/8), 2^(e/8))`; every public
//!   function of `e` is a telescoping combination of the b2a'd bits ([`crate::reciprocal::pow2_factors_in`]). With
//!   `a = ⌈e/16⌉`, `u = x·4^−a ∈ [1/4, 1)` falls in one of 16 sub-buckets `s`, on which the
//!   minimax linear guess `z0 = A_s + B_s·u` of `u^−1/2` ([`GUESS`]) is within 3.52e−4.
//! - **One step.** `z1 = 1.5·z0 − 0.5·u·z0³` is within 1.86e−7 ([`NEWTON1_REL_ERROR`]; the
//!   two steps of `newton2` from its 2.23 % guess: 8.5e−7), and `1/√x = 2^−a·z1`.
//! - **Three layers.** `1/√x = g − q·t` with `g = (1.5·2^−a)·z0`, `q = w·z0`, `t = z0²` and
//!   `w = 0.5·2^−a·u = x·(2^−3a−1)`: layer 1 is `{x·(B_s·4^−a), x·2^−3a−1}` (`z0` is then
//!   `A_s` plus the first, both public functions of the bits times `x`); layer 2 is
//!   `{(1.5·2^−a)·z0, w·z0, z0·z0}`; layer 3 is `q·t`. `newton2`: `u`, two steps of two
//!   layers and the final `·2^−e/2`, six.
//! - **Cost.** 16 thresholds per power of four of the domain (288 on a LayerNorm's, `newton2`:
//!   36), compared in `Z_2^(f + 2·hi + 2)` (38 bits there) instead of the format's ring: 17.7 KB
//!   per row against `newton2`'s 7.3 KB (`bench nn --op rsqrt`, 64 rows) for three product
//!   layers fewer (MiniLM/32: 1 % more bytes, 140 flights fewer with the reciprocal's).
//!
//! Precision: the layer-1 factors are encoded at a scale `S` where `2^−3a−1` is exact and
//! `B_s·4^−a` keeps ≥ 13 significant bits (its rounding only moves the guess, which the step
//! corrects); `z0`, `w`, `q`, `t` are carried at [`RSQRT_EXTRA_BITS`] more fractional bits and
//! `g`, `q·t` land at the format's `f`. A rounding `δ` of `z0` reaches `g − q·t` only as
//! `1.5·2^−a·δ·(1 − u·z0²)` (the step is flat at its fixed point), so `g` needs no more bits.

use super::{RsqrtParams, RsqrtProtocol, RsqrtRange, RSQRT_EXTRA_BITS, RSQRT_LAYERNORM};
use crate::backend::{Backend, DynBackend};
use crate::reciprocal::bucket_guess;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// Buckets per octave of the comparison (AGREEMENT).
pub const BUCKETS_PER_OCTAVE: i32 = 8;

/// The minimax linear guess `A_s + B_s·u` of `u^−1/2` on `u ∈ [2^(s/8 − 2), 2^((s+1)/8 − 2))`,
/// `s = 0..16` (relative error ≤ 3.52e−4 on each; Remez, AGREEMENT; checked by the unit test).
pub const GUESS: [(f64, f64); 16] = [
    (2.935830746579, -3.746137627065),
    (2.811361154500, -3.289581150294),
    (2.692168664778, -2.888667000964),
    (2.578029545585, -2.536613830521),
    (2.468729550590, -2.227466759943),
    (2.364063516802, -1.955996654654),
    (2.263834979470, -1.717611675210),
    (2.167855803301, -1.508279607635),
    (2.075945829322, -1.324459659678),
    (1.987932536711, -1.163042569318),
    (1.903650718962, -1.021298012486),
    (1.822942173782, -0.896828420406),
    (1.745655406138, -0.787528425411),
    (1.671645343887, -0.691549249242),
    (1.600773065470, -0.607267431493),
    (1.532905539148, -0.533257369242),
];

/// Relative error of one exact Newton step from [`GUESS`] (checked by the unit test).
pub const NEWTON1_REL_ERROR: f64 = 1.9e-7;

/// Significant bits `B_s·4^−a` keeps at the layer-1 scale (its rounding moves only the guess).
const SLOPE_BITS: i32 = 13;

/// `(a, s)` of bucket `e` (`x ∈ [2^((e−1)/8), 2^(e/8))`): `u = x·4^−a ∈ [1/4, 1)` in sub-bucket `s`.
fn split(e: i32) -> (i32, usize) {
    crate::reciprocal::bucket_split(e, 2 * BUCKETS_PER_OCTAVE)
}

/// The layer-1 scale `S` and the format bounds for the domain `[4^lo, 4^hi)` at `fp`.
fn layer1_scale(p: &RsqrtParams, fp: FixedPoint) -> Result<u32, NnError> {
    let (f, l, e) = (fp.f() as i32, fp.l() as i32, RSQRT_EXTRA_BITS as i32);
    // 2^(−3a−1) exact for a ≤ hi; |B_s|·4^−a ≥ 0.5·4^−hi with SLOPE_BITS bits
    let s = (3 * p.hi + 1).max(2 * p.hi + 1 + SLOPE_BITS).max(e);
    // the largest raw products: layer 1 |x·F| ≤ max(1, 2^(−lo−2)) at f + S; layer 2
    // (1.5·2^−a)·z0 ≤ 3·2^(−lo−1) at f + f + E, w·z0 ≤ 2^(−lo−2) at 2(f + E), z0² ≤ 4;
    // layer 3 q·t ≤ 2^(−lo) at 2(f + E)
    let big = (-p.lo).max(2);
    let need = [f + s + big, 2 * f + e + big + 1, 2 * (f + e) + big + 1];
    let top = need.iter().copied().max().unwrap_or(0);
    if p.hi <= p.lo || 2 * p.hi > f || top >= l - 2 || f + e >= l {
        return Err(NnError::FormatTooNarrow {
            op: "rsqrt newton1",
            l: fp.l(),
            f: fp.f(),
            why: format!("domain [4^{}, 4^{}) needs 2·hi <= f and products below 2^{} (the largest is 2^{top})", p.lo, p.hi, l - 2),
        });
    }
    Ok(s as u32)
}

/// The comparisons' ring: `x < 4^hi` at `f` and its differences with the thresholds fit
/// `f + log2(4^hi) + 2` bits signed, so the bucket bits are exact there (a millionaire on that
/// many bits instead of the format's `l`; `None`: not narrower).
pub(super) fn cmp_l(p: &RsqrtParams, fp: FixedPoint) -> Option<u32> {
    let l = fp.f() as i32 + 2 * p.hi + 2;
    (l < fp.l() as i32).then_some(l.max(2) as u32)
}

/// `1/√x` for `x ∈ [4^lo, 4^hi)` in three product layers (module docs).
pub fn rsqrt1<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &RsqrtParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    let s = layer1_scale(p, fp)?;
    let (f, e) = (fp.f(), RSQRT_EXTRA_BITS);
    let fine = FixedPoint::new(fp.l(), f + e)?;
    let n = b.len(x);
    let k = 1.0 / BUCKETS_PER_OCTAVE as f64;
    let per = 2 * BUCKETS_PER_OCTAVE;
    let slope = |e: i32| {
        let (a, sb) = split(e);
        GUESS[sb].1 * (-2.0 * a as f64).exp2()
    };
    let w = |e: i32| (-3.0 * split(e).0 as f64 - 1.0).exp2();
    let offset = |e: i32| GUESS[split(e).1].0;
    let scale = |e: i32| 1.5 * (-(split(e).0 as f64)).exp2();
    // layer 1 (with the bucket's comparison): z0 and w at f + E, 1.5·2^−a at f
    let [z0, wv, g2] = bucket_guess(b, x, (k, per * p.lo, per * p.hi, cmp_l(p, fp)), s, e, &slope, &w, &offset, &scale)?;
    let part = |b: &mut B, v: &B::Val, i: usize| b.gather(v, &(i * n..(i + 1) * n).collect::<Vec<_>>());
    let out = (|| {
        // layer 2 at f + E: g = (1.5·2^−a at f)·z0 lands at f; q = w·z0 and t = z0² at f + E
        b.set_format(fine);
        let lhs = b.concat(&[&g2, &wv, &z0])?;
        let rhs = b.concat(&[&z0, &z0, &z0])?;
        let l2 = b.mul(&lhs, &rhs)?;
        let g = part(b, &l2, 0)?;
        let q = part(b, &l2, 1)?;
        let t = part(b, &l2, 2)?;
        // layer 3: q·t at 2(f + E), truncated by f + 2E: at f
        b.set_format(FixedPoint::new(fp.l(), f + 2 * e)?);
        let qt = b.mul(&q, &t)?;
        b.sub(&g, &qt)
    })();
    b.set_format(fp);
    out
}

/// Twin-vs-protocol bound in LSB of `f` on the domain `[4^lo, …)`: `g` and `q·t` 2 each (their
/// products' own), `t`'s 2 LSB at `f + E` times `q ≤ 2^(−lo−2)`, `q`'s and `w`'s times
/// `t ≤ 4` and `z0³ ≤ 8` (below 1 together); `z0`'s own rounding cancels to first order.
pub fn tolerance_lsb(p: &RsqrtParams) -> i64 {
    5 + ((-p.lo - 2) as f64 + 1.0 - RSQRT_EXTRA_BITS as f64).exp2().ceil() as i64
}

/// The protocol `rsqrt = newton1`.
pub struct Newton1;

impl Protocol for Newton1 {
    fn name(&self) -> &'static str {
        "newton1"
    }
    fn source(&self) -> &'static str {
        "nectar: BumbleBee's Newton with an eighth-octave linear guess, one step in three layers"
    }
    /// The LayerNorm's domain, the buckets and the guess's error.
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "layernorm": RSQRT_LAYERNORM, "buckets_per_octave": BUCKETS_PER_OCTAVE, "guess_rel_error": 3.52e-4, "iters": 1 })
    }
}

impl RsqrtProtocol for Newton1 {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RsqrtRange) -> Result<Vec<u64>, NnError> {
        self.check(r, b.format())?;
        rsqrt1(b, x, &r.newton)
    }
    fn check(&self, r: &RsqrtRange, fp: FixedPoint) -> Result<(), NnError> {
        let p = &r.newton;
        super::check_newton_domain(r)?;
        layer1_scale(p, fp).map(|_| ())
    }
    fn tolerance(&self, r: &RsqrtRange, _fp: FixedPoint) -> Result<i64, NnError> {
        Ok(tolerance_lsb(&r.newton))
    }
    /// [`NEWTON1_REL_ERROR`] relative (plus the slope's rounding, 2^−14 of the guess, squared
    /// by the step), `1/√x ≤ 1/√lo`; plus the rounding of the products.
    fn approx_error(&self, r: &RsqrtRange) -> Result<f64, NnError> {
        Ok(NEWTON1_REL_ERROR * 1.1 / r.lo.sqrt() + tolerance_lsb(&r.newton) as f64 / 18f64.exp2())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each sub-bucket's guess is within 3.52e−4 and one exact step within
    /// [`NEWTON1_REL_ERROR`]; the buckets tile `[1/4, 1)` as [`split`] maps them.
    #[test]
    fn one_step_from_the_guess_reaches_the_stated_error() {
        let step = |v: f64| v * (3.0 - v * v) / 2.0;
        let (mut e0, mut e1) = (0f64, 0f64);
        for (s, &(a, b)) in GUESS.iter().enumerate() {
            let (lo, hi) = (((s as f64) / 8.0 - 2.0).exp2(), ((s as f64 + 1.0) / 8.0 - 2.0).exp2());
            for i in 0..=4000 {
                let u = lo + (hi - lo) * i as f64 / 4000.0;
                let v = (a + b * u) * u.sqrt();
                e0 = e0.max((v - 1.0).abs());
                e1 = e1.max((step(v) - 1.0).abs());
            }
        }
        assert!(e0 < 3.52e-4, "guess {e0}");
        assert!(e1 <= NEWTON1_REL_ERROR, "one step {e1}");
        for e in -40..40 {
            let (a, s) = split(e);
            let lo = (e as f64 - 1.0) / 8.0 - 2.0 * a as f64;
            assert!(s < 16 && (lo - (s as f64 / 8.0 - 2.0)).abs() < 1e-12, "bucket {e}: a = {a}, s = {s}");
        }
    }

    /// The LayerNorm's domain fits the 64-bit formats the suites use.
    #[test]
    fn layernorm_domain_fits() {
        for fp in [FixedPoint::BUMBLEBEE, FixedPoint::new(64, 18).unwrap()] {
            layer1_scale(&RSQRT_LAYERNORM, fp).unwrap();
        }
        assert_eq!(tolerance_lsb(&RSQRT_LAYERNORM), 9);
    }
}
