//! `reciprocal = newton1` (nectar, issues 48/49): BumbleBee's normalised Newton reciprocal
//! (§V-B, [`super::reciprocal`]) with a piecewise-linear initial guess on eighth-octaves, so
//! that **one** Newton step suffices, and the normalisation folded into the products: three
//! product layers instead of `newton2`'s five. The reciprocal twin of
//! [`crate::rsqrt::newton1`].
//!
//! - **Finer buckets, same comparison call.** One batched `less_than_const` against `2^(j/8)`
//!   gives the bucket `e`, `x ∈ [2^((e−1)/8), 2^(e/8))`; with `a = ⌈e/8⌉`, `u = x·2^−a ∈
//!   [1/2, 1)` falls in one of 8 sub-buckets `s`, on which the minimax linear guess
//!   `z0 = A_s + B_s·u` of `1/u` ([`GUESS`]) is within 9.4e−4.
//! - **One step.** `z1 = z0·(2 − u·z0)` is within 8.8e−7 ([`NEWTON1_REL_ERROR`]) and
//!   `1/x = 2^−a·z1`.
//! - **Three layers.** `1/x = g − q·z0` with `g = 2^(1−a)·z0`, `q = w·z0` and
//!   `w = 2^−a·u = x·2^−2a`: layer 1 `{x·(B_s·2^−a), x·2^−2a}` (`z0 = A_s` plus the first),
//!   layer 2 `{2^(1−a)·z0, w·z0}`, layer 3 `q·z0`. A rounding of `z0` reaches the output only
//!   as `2^(1−a)·δ·(1 − u·z0)` (the step is flat at its fixed point).
//! - **Cost.** 8 thresholds per octave of the domain (a softmax's row sums: `[2^−1, 2^hi)`
//!   with `hi` the row length's bits), compared in `Z_2^(f + hi + 2)` instead of the format's
//!   ring.

use super::{RecipParams, RecipRange, ReciprocalProtocol, RECIP_SOFTMAX};
use crate::backend::{Backend, DynBackend};
use crate::reciprocal::bucket_guess;
use crate::rsqrt::RSQRT_EXTRA_BITS;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// Buckets per octave of the comparison (AGREEMENT).
pub const BUCKETS_PER_OCTAVE: i32 = 8;

/// Fractional bits the iterate carries beyond the format (the rsqrt's, AGREEMENT).
const EXTRA_BITS: u32 = RSQRT_EXTRA_BITS;

/// The minimax linear guess `A_s + B_s·u` of `1/u` on `u ∈ [2^(s/8 − 1), 2^((s+1)/8 − 1))`,
/// `s = 0..8` (relative error ≤ 9.4e−4 on each; Remez, AGREEMENT; checked by the unit test).
pub const GUESS: [(f64, f64); 8] = [
    (3.830411437383, -3.664575239337),
    (3.512502775218, -3.081528182186),
    (3.220979246643, -2.591246001903),
    (2.953650992250, -2.178969474041),
    (2.708509902108, -1.832287619668),
    (2.483714531293, -1.540764091093),
    (2.277576267362, -1.295623000952),
    (2.088546645878, -1.089484737020),
];

/// Relative error of one exact Newton step from [`GUESS`] (checked by the unit test).
pub const NEWTON1_REL_ERROR: f64 = 8.9e-7;

/// Significant bits `B_s·2^−a` keeps at the layer-1 scale (its rounding moves only the guess).
const SLOPE_BITS: i32 = 13;

/// `(a, s)` of bucket `e` (`x ∈ [2^((e−1)/8), 2^(e/8))`): `u = x·2^−a ∈ [1/2, 1)` in sub-bucket `s`.
fn split(e: i32) -> (i32, usize) {
    crate::reciprocal::bucket_split(e, BUCKETS_PER_OCTAVE)
}

/// The layer-1 scale `S` and the format bounds for the domain `[2^lo, 2^hi)` at `fp`.
fn layer1_scale(p: &RecipParams, fp: FixedPoint) -> Result<u32, NnError> {
    let (f, l, e) = (fp.f() as i32, fp.l() as i32, EXTRA_BITS as i32);
    // 2^−2a exact for a ≤ hi; |B_s|·2^−a ≥ 2^−hi with SLOPE_BITS bits
    let s = (2 * p.hi).max(p.hi + SLOPE_BITS).max(e);
    // the largest raw products: layer 1 |x·F| ≤ max(2, 2^−lo) at f + S; layer 2
    // 2^(1−a)·z0 ≤ 2^(2−lo) at 2f + E and w·z0 ≤ 2^(1−lo) at 2(f + E); layer 3 q·z0 likewise
    let big = (-p.lo).max(1);
    let need = [f + s + big + 1, 2 * f + e + big + 2, 2 * (f + e) + big + 1];
    let top = need.iter().copied().max().unwrap_or(0);
    if p.hi <= p.lo || p.hi > f || -p.lo > f || top >= l - 2 {
        return Err(NnError::FormatTooNarrow {
            op: "reciprocal newton1",
            l: fp.l(),
            f: fp.f(),
            why: format!("domain [2^{}, 2^{}) needs |lo|, hi <= f and products below 2^{} (the largest is 2^{top})", p.lo, p.hi, l - 2),
        });
    }
    Ok(s as u32)
}

/// The comparisons' ring: `x < 2^hi` at `f` and its differences with the thresholds fit
/// `f + log2(2^hi) + 2` bits signed, so the bucket bits are exact there (a millionaire on that
/// many bits instead of the format's `l`; `None`: not narrower).
pub(super) fn cmp_l(p: &RecipParams, fp: FixedPoint) -> Option<u32> {
    let l = fp.f() as i32 + p.hi + 2;
    (l < fp.l() as i32).then_some(l.max(2) as u32)
}

/// `1/x` for `x ∈ [2^lo, 2^hi)` in three product layers (module docs).
pub fn reciprocal1<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &RecipParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    let s = layer1_scale(p, fp)?;
    let (f, e) = (fp.f(), EXTRA_BITS);
    let fine = FixedPoint::new(fp.l(), f + e)?;
    let n = b.len(x);
    let per = BUCKETS_PER_OCTAVE;
    let slope = |e: i32| {
        let (a, sb) = split(e);
        GUESS[sb].1 * (-(a as f64)).exp2()
    };
    let w = |e: i32| (-2.0 * split(e).0 as f64).exp2();
    let offset = |e: i32| GUESS[split(e).1].0;
    let scale = |e: i32| (1.0 - split(e).0 as f64).exp2();
    // layer 1 (with the bucket's comparison): z0 and w at f + E, 2^(1−a) at f
    let [z0, wv, g2] = bucket_guess(b, x, (1.0 / per as f64, per * p.lo, per * p.hi, cmp_l(p, fp)), s, e, &slope, &w, &offset, &scale)?;
    let part = |b: &mut B, v: &B::Val, i: usize| b.gather(v, &(i * n..(i + 1) * n).collect::<Vec<_>>());
    let out = (|| {
        // layer 2 at f + E: g = (2^(1−a) at f)·z0 lands at f; q = w·z0 at f + E
        b.set_format(fine);
        let lhs = b.concat(&[&g2, &wv])?;
        let rhs = b.concat(&[&z0, &z0])?;
        let l2 = b.mul(&lhs, &rhs)?;
        let g = part(b, &l2, 0)?;
        let q = part(b, &l2, 1)?;
        // layer 3: q·z0 at 2(f + E), truncated by f + 2E: at f
        b.set_format(FixedPoint::new(fp.l(), f + 2 * e)?);
        let qz = b.mul(&q, &z0)?;
        b.sub(&g, &qz)
    })();
    b.set_format(fp);
    out
}

/// Twin-vs-protocol bound in LSB of `f`: `g` and `q·z0` 2 each (their products' own), `q`'s
/// 2 LSB at `f + E` times `z0 ≤ 2`, `w`'s times `z0² ≤ 4` (below 1 together); `z0`'s own
/// rounding cancels to first order.
pub const NEWTON1_TOL: i64 = 5;

/// The protocol `reciprocal = newton1`.
pub struct Newton1;

impl Protocol for Newton1 {
    fn name(&self) -> &'static str {
        "newton1"
    }
    fn source(&self) -> &'static str {
        "nectar: BumbleBee's Newton with an eighth-octave linear guess, one step in three layers"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "softmax": { "lo": RECIP_SOFTMAX.lo, "hi": RECIP_SOFTMAX.hi }, "buckets_per_octave": BUCKETS_PER_OCTAVE, "guess_rel_error": 9.4e-4, "iters": 1 })
    }
}

impl ReciprocalProtocol for Newton1 {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RecipRange) -> Result<Vec<u64>, NnError> {
        self.check(r)?;
        reciprocal1(b, x, &r.newton)
    }
    fn check(&self, r: &RecipRange) -> Result<(), NnError> {
        super::check_newton_domain(r)
    }
    fn runs_in(&self, r: &RecipRange, fp: FixedPoint) -> bool {
        super::check_newton_domain(r).is_ok() && layer1_scale(&r.newton, fp).is_ok()
    }
    fn tolerance(&self, _r: &RecipRange, _fp: FixedPoint) -> Result<i64, NnError> {
        Ok(NEWTON1_TOL)
    }
    /// [`NEWTON1_REL_ERROR`] (plus the slope's rounding, squared by the step) times
    /// `1/x ≤ 1/lo`, plus the rounding of `x` itself (relative `2^−f/lo`) and of the products.
    fn approx_error(&self, r: &RecipRange) -> Result<f64, NnError> {
        let ulp = 18f64.exp2().recip();
        Ok(NEWTON1_REL_ERROR * 1.1 / r.lo + ulp / (r.lo * r.lo) + NEWTON1_TOL as f64 * ulp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each sub-bucket's guess is within 9.4e−4 and one exact step within
    /// [`NEWTON1_REL_ERROR`]; the buckets tile `[1/2, 1)` as [`split`] maps them.
    #[test]
    fn one_step_from_the_guess_reaches_the_stated_error() {
        let (mut e0, mut e1) = (0f64, 0f64);
        for (s, &(a, b)) in GUESS.iter().enumerate() {
            let (lo, hi) = (((s as f64) / 8.0 - 1.0).exp2(), ((s as f64 + 1.0) / 8.0 - 1.0).exp2());
            for i in 0..=4000 {
                let u = lo + (hi - lo) * i as f64 / 4000.0;
                let z = a + b * u;
                e0 = e0.max((z * u - 1.0).abs());
                e1 = e1.max((z * (2.0 - u * z) * u - 1.0).abs());
            }
        }
        assert!(e0 < 9.4e-4, "guess {e0}");
        assert!(e1 <= NEWTON1_REL_ERROR, "one step {e1}");
        for e in -40..40 {
            let (a, s) = split(e);
            let lo = (e as f64 - 1.0) / 8.0 - a as f64;
            assert!(s < 8 && (lo - (s as f64 / 8.0 - 1.0)).abs() < 1e-12, "bucket {e}: a = {a}, s = {s}");
        }
    }

    /// The softmax domain fits the full ring at f = 18.
    #[test]
    fn softmax_domain_fits() {
        layer1_scale(&RECIP_SOFTMAX, FixedPoint::BUMBLEBEE).unwrap();
    }
}
