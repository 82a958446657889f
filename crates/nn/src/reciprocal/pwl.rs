//! `reciprocal = pwl` (nectar, issues 48/49): no Newton step. The minimax linear guess of
//! [`super::newton1`] on buckets twice as fine (sixteenth-octaves) **is** the result, so the
//! reciprocal costs one comparison call, one b2a and **one** product layer instead of
//! `newton1`'s three: two product layers (each a product and its truncation, about 2.7
//! critical flights in a model) fewer per call.
//!
//! - **Buckets.** One batched comparison against `2^(j/16)` gives the bucket `e`,
//!   `x ∈ [2^((e−1)/16), 2^(e/16))`; with `a = ⌈e/16⌉`, `u = x·2^−a ∈ [1/2, 1)` falls in one of
//!   16 sub-buckets `s`, on which `A_s + B_s·u` is the minimax linear approximation of `1/u`
//!   in relative error ([`GUESS`]: within [`PWL_REL_ERROR`] = 2.35e−4; the equioscillation
//!   `B = −2/(lo·hi + (lo + hi)²/4)`, `A = −B·(lo + hi)` on each sub-bucket `[lo, hi)`).
//! - **One layer.** `1/x ≈ 2^−a·(A_s + B_s·x·2^−a) = A_s·2^−a + x·(B_s·2^−2a)`: both factors
//!   are public functions of `e`, i.e. public combinations of the b2a'd comparison bits
//!   ([`super::pow2_factors_in`]); the offset lands at `f`, the slope is carried at a scale
//!   `S = f + 2 + hi` where its rounding times `x < 2^hi` stays below a quarter LSB, and the
//!   product `x·slope` is truncated by `S` (to `f`).
//! - **Error.** A relative error of the row sums' reciprocal scales a softmax row by
//!   `1 ± 2.35e−4` (the row then sums to that instead of 1); `newton1` reaches 8.9e−7 for two
//!   more layers. **Cost.** 16 thresholds per octave of the domain (a softmax over rows of 32:
//!   7 octaves, 112 thresholds per row against `newton1`'s 56), compared in `Z_2^(f + hi + 2)`.

use super::{bucket_split, check_newton_domain, pow2_factors_in, RecipParams, RecipRange, ReciprocalProtocol};
use crate::backend::{Backend, DynBackend};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// Buckets per octave of the comparison (AGREEMENT).
pub const BUCKETS_PER_OCTAVE: i32 = 16;

/// The minimax linear approximation `A_s + B_s·u` of `1/u` (relative error) on
/// `u ∈ [2^(s/16 − 1), 2^((s+1)/16 − 1))`, `s = 0..16` (AGREEMENT; checked by the unit test).
pub const GUESS: [(f64, f64); 16] = [
    (3.914288140655, -3.829514592715),
    (3.748335165091, -3.511680365031),
    (3.589418051249, -3.220225093176),
    (3.437238501675, -2.952959430472),
    (3.291510865747, -2.707875737162),
    (3.151961603495, -2.483132999473),
    (3.018328772142, -2.277043000332),
    (2.890361534430, -2.088057637855),
    (2.767819687776, -1.914757296358),
    (2.650473213396, -1.755840182516),
    (2.538101844552, -1.610112546588),
    (2.430494653090, -1.476479715236),
    (2.327449653519, -1.353937868581),
    (2.228773423871, -1.241566499737),
    (2.134280742632, -1.138521500166),
    (2.043794241077, -1.044028818928),
];

/// Relative error of [`GUESS`] on its sub-buckets (checked by the unit test).
pub const PWL_REL_ERROR: f64 = 2.35e-4;

/// `(a, s)` of bucket `e`: `u = x·2^−a ∈ [1/2, 1)` in sub-bucket `s`.
fn split(e: i32) -> (i32, usize) {
    bucket_split(e, BUCKETS_PER_OCTAVE)
}

/// The slope's scale `S` for the domain `[2^lo, 2^hi)` at `fp`, and the format bounds: the raw
/// product `|x·slope|·2^(f + S) ≤ |B_0|·2^−(lo+1)·2^(f + S)` below `2^(l − 2)`.
fn slope_scale(p: &RecipParams, fp: FixedPoint) -> Result<u32, NnError> {
    let (f, l) = (fp.f() as i32, fp.l() as i32);
    let s = f + 2 + p.hi.max(0);
    let top = f + s + 2 - (p.lo + 1).min(0);
    if p.hi <= p.lo || p.hi > f || -p.lo > f || top >= l - 2 || s >= l {
        return Err(NnError::FormatTooNarrow {
            op: "reciprocal pwl",
            l: fp.l(),
            f: fp.f(),
            why: format!("domain [2^{}, 2^{}) needs |lo|, hi <= f and its product below 2^{} (it is 2^{top})", p.lo, p.hi, l - 2),
        });
    }
    Ok(s as u32)
}

/// `1/x` for `x ∈ [2^lo, 2^hi)` in one product layer (module docs).
pub fn reciprocal_pwl<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &RecipParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    let s = slope_scale(p, fp)?;
    let per = BUCKETS_PER_OCTAVE;
    let slope = |e: i32| {
        let (a, sb) = split(e);
        GUESS[sb].1 * (-2.0 * a as f64).exp2()
    };
    let offset = |e: i32| {
        let (a, sb) = split(e);
        GUESS[sb].0 * (-(a as f64)).exp2()
    };
    let fams: [(&dyn Fn(i32) -> f64, u32); 2] = [(&slope, s), (&offset, fp.f())];
    let fs = pow2_factors_in(b, x, 1.0 / per as f64, per * p.lo, per * p.hi, &fams, super::newton1::cmp_l(p, fp))?;
    let [fb, a0] = <[B::Val; 2]>::try_from(fs).map_err(|_| NnError::BadArgument("expected two factors".into()))?;
    // x (at f) times the slope (at S), truncated by S: at f
    b.set_format(FixedPoint::new(fp.l(), s)?);
    let bu = b.mul(x, &fb);
    b.set_format(fp);
    b.add(&a0, &bu?)
}

/// Twin-vs-protocol bound in LSB of `f`: the one product's truncation.
pub const PWL_TOL: i64 = 2;

/// The protocol `reciprocal = pwl`.
pub struct Pwl;

impl Protocol for Pwl {
    fn name(&self) -> &'static str {
        "pwl"
    }
    fn source(&self) -> &'static str {
        "nectar: a sixteenth-octave minimax piecewise-linear 1/x, no Newton step, one product layer"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "buckets_per_octave": BUCKETS_PER_OCTAVE, "rel_error": PWL_REL_ERROR, "iters": 0 })
    }
}

impl ReciprocalProtocol for Pwl {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RecipRange) -> Result<Vec<u64>, NnError> {
        self.check(r)?;
        reciprocal_pwl(b, x, &r.newton)
    }
    fn check(&self, r: &RecipRange) -> Result<(), NnError> {
        check_newton_domain(r)
    }
    fn runs_in(&self, r: &RecipRange, fp: FixedPoint) -> bool {
        check_newton_domain(r).is_ok() && slope_scale(&r.newton, fp).is_ok()
    }
    fn tolerance(&self, _r: &RecipRange, _fp: FixedPoint) -> Result<i64, NnError> {
        Ok(PWL_TOL)
    }
    /// [`PWL_REL_ERROR`] times `1/x ≤ 1/lo`, plus the rounding of `x` itself (relative
    /// `2^−f/lo`), of the offset (half an LSB), of the slope (a quarter) and of the product.
    fn approx_error(&self, r: &RecipRange) -> Result<f64, NnError> {
        let ulp = 18f64.exp2().recip();
        Ok(PWL_REL_ERROR / r.lo + ulp / (r.lo * r.lo) + (PWL_TOL as f64 + 1.0) * ulp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each sub-bucket's approximation is within [`PWL_REL_ERROR`], and the buckets tile
    /// `[1/2, 1)` as [`split`] maps them.
    #[test]
    fn the_guess_reaches_the_stated_error() {
        let mut e0 = 0f64;
        for (s, &(a, b)) in GUESS.iter().enumerate() {
            let (lo, hi) = (((s as f64) / 16.0 - 1.0).exp2(), ((s as f64 + 1.0) / 16.0 - 1.0).exp2());
            for i in 0..=4000 {
                let u = lo + (hi - lo) * i as f64 / 4000.0;
                e0 = e0.max(((a + b * u) * u - 1.0).abs());
            }
        }
        assert!(e0 < PWL_REL_ERROR, "guess {e0}");
        assert!(e0 > 0.99 * PWL_REL_ERROR, "stated error {PWL_REL_ERROR} far above the fit's {e0}");
        for e in -40..40 {
            let (a, s) = split(e);
            let lo = (e as f64 - 1.0) / 16.0 - a as f64;
            assert!(s < 16 && (lo - (s as f64 / 16.0 - 1.0)).abs() < 1e-12, "bucket {e}: a = {a}, s = {s}");
        }
    }

    /// The softmax domain fits the full ring at f = 18, not the narrow one.
    #[test]
    fn softmax_domain_fits_the_full_ring() {
        let p = crate::reciprocal::RECIP_SOFTMAX;
        slope_scale(&p, FixedPoint::BUMBLEBEE).unwrap();
        assert!(slope_scale(&p, FixedPoint::new(45, 18).unwrap()).is_err());
    }
}
