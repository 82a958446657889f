//! `reciprocal = newton2` (nectar, issue 48): BumbleBee's normalised Newton reciprocal (§V-B,
//! [`super::reciprocal`]) in five product layers instead of eight.
//!
//! - **Half-octave normalisation.** One batched comparison against `2^(j/2)` (twice
//!   BumbleBee's thresholds, on one value per row) gives `F = 2^(−e/2)` for
//!   `x ∈ [2^((e−1)/2), 2^(e/2))`, so `c = x·F ∈ [2^−1/2, 1)`, where the minimax linear guess
//!   [`RECIP2_Y0`] is within 1.49 % (SPU's on `[1/2, 1)`: 8.6 %). Two Newton steps
//!   `y ← y·(2 − c·y)` then reach `e⁴ = 5.0e−8` (BumbleBee's three: 2.9e−9).
//! - **The guess in the normalising product.** `y0 = a + b·c = a + x·(b·F)`: `b·F` is a second
//!   public function of the same bits, so `c` and `x·(b·F)` come from one product call.
//! - **The scaling in the last step.** `y·F·(2 − c·y)`: `c·y` and `y·F` in one call, then one
//!   product, instead of the step's two and a third for `·F`.
//!
//! `F`'s rounding does not reach the output (beyond the products' own): the same rounded `F`
//! makes `c` and scales `1/c`. Layers: `{c, x·bF}`, `c·y`, `y·(2 − c·y)`, `{c·y, y·F}`, the
//! last product — five, against `c`, three steps of two and `·F`: eight.

use super::{check_recip_format, pow2_factors, RecipParams, RecipRange, ReciprocalProtocol, RECIP_SOFTMAX};
use crate::backend::{enc, Backend, DynBackend};
use crate::tolerance::RECIP_TOL;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The minimax linear guess of `1/c` on `[2^−1/2, 1]` (relative error 1.49 %; AGREEMENT):
/// `b = −2/(m² + lo·hi)`, `a = −b·(lo + hi)` with `m` the midpoint.
pub const RECIP2_Y0: (f64, f64) = (2.378149, -1.393087);

/// Newton steps of `newton2` (AGREEMENT).
pub const NEWTON2_ITERS: u32 = 2;

/// Relative error of `newton2` in exact arithmetic after [`NEWTON2_ITERS`] steps from
/// [`RECIP2_Y0`] (`e⁴` from 1.49 %; checked by the unit test).
pub const NEWTON2_REL_ERROR: f64 = 5.0e-8;

/// `1/x` for `x ∈ [2^lo, 2^hi)` (`p`'s domain; its `iters` are not used: two steps).
pub fn reciprocal2<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &RecipParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    check_recip_format(p, fp)?;
    let n = b.len(x);
    let g = |e: i32| (-(e as f64) / 2.0).exp2();
    let gb = |e: i32| RECIP2_Y0.1 * g(e);
    let fs = pow2_factors(b, x, 0.5, 2 * p.lo, 2 * p.hi, &[(&g, fp.f()), (&gb, fp.f())])?;
    let (f, fb) = match fs.as_slice() {
        [a, c] => (a.clone(), c.clone()),
        _ => return Err(NnError::BadArgument("expected two factors".into())),
    };
    let first = |b: &mut B, v: &B::Val| b.gather(v, &(0..n).collect::<Vec<_>>());
    let second = |b: &mut B, v: &B::Val| b.gather(v, &(n..2 * n).collect::<Vec<_>>());
    let xx = b.concat(&[x, x])?;
    let ff = b.concat(&[&f, &fb])?;
    let cb = b.mul(&xx, &ff)?;
    let c = first(b, &cb)?;
    let bx = second(b, &cb)?;
    let mut y = b.add_const(&bx, &[enc(b, RECIP2_Y0.0)?])?;
    let two = enc(b, 2.0)?;
    for _ in 1..NEWTON2_ITERS {
        let cy = b.mul(&c, &y)?;
        let ncy = b.neg(&cy)?;
        let d = b.add_const(&ncy, &[two])?;
        y = b.mul(&y, &d)?;
    }
    let lhs = b.concat(&[&c, &y])?;
    let rhs = b.concat(&[&y, &f])?;
    let cy_yf = b.mul(&lhs, &rhs)?;
    let cy = first(b, &cy_yf)?;
    let yf = second(b, &cy_yf)?;
    let ncy = b.neg(&cy)?;
    let d = b.add_const(&ncy, &[two])?;
    b.mul(&yf, &d)
}

/// The protocol `reciprocal = newton2`.
pub struct Newton2;

impl Protocol for Newton2 {
    fn name(&self) -> &'static str {
        "newton2"
    }
    fn source(&self) -> &'static str {
        "nectar: BumbleBee's Newton, half-octave normalisation, two steps"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "softmax": { "lo": RECIP_SOFTMAX.lo, "hi": RECIP_SOFTMAX.hi }, "y0": RECIP2_Y0, "iters": NEWTON2_ITERS })
    }
}

impl ReciprocalProtocol for Newton2 {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RecipRange) -> Result<Vec<u64>, NnError> {
        self.check(r)?;
        reciprocal2(b, x, &r.newton)
    }
    fn check(&self, r: &RecipRange) -> Result<(), NnError> {
        super::check_newton_domain(r)
    }
    /// Its domain and the format bounds of [`super::check_recip_format`] (its products and
    /// thresholds stay inside the ring).
    fn runs_in(&self, r: &RecipRange, fp: FixedPoint) -> bool {
        super::check_newton_domain(r).is_ok() && super::check_recip_format(&r.newton, fp).is_ok()
    }
    /// The last step's products (`c·y` and `y·F` within 2 LSB each, `y·F ≤ 2`, the product's
    /// own 2): within BumbleBee's [`RECIP_TOL`].
    fn tolerance(&self, _r: &RecipRange, _fp: FixedPoint) -> Result<i64, NnError> {
        Ok(RECIP_TOL)
    }
    /// [`NEWTON2_REL_ERROR`] times `1/x ≤ 2^−lo`, plus the rounding of `c = x·F` (relative
    /// `2^−f/0.7`) and of the last products ([`RECIP_TOL`] LSB): 1e−4 covers them on `x ≥ 1/2`.
    fn approx_error(&self, _r: &RecipRange) -> Result<f64, NnError> {
        Ok(1e-4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guess is within 1.49 % on `[2^−1/2, 1]` and two exact steps within
    /// [`NEWTON2_REL_ERROR`]; one step would not reach the fixed-point resolution.
    #[test]
    fn two_steps_from_the_guess_reach_the_stated_error() {
        let lo = 0.5f64.sqrt();
        let (mut e0, mut e1, mut e2) = (0f64, 0f64, 0f64);
        for i in 0..=20_000 {
            let c = lo + (1.0 - lo) * i as f64 / 20_000.0;
            let mut y = RECIP2_Y0.0 + RECIP2_Y0.1 * c;
            e0 = e0.max((c * y - 1.0).abs());
            y *= 2.0 - c * y;
            e1 = e1.max((c * y - 1.0).abs());
            y *= 2.0 - c * y;
            e2 = e2.max((c * y - 1.0).abs());
        }
        assert!(e0 < 0.01494, "guess {e0}");
        assert!(e1 > 1.0 / 262_144.0, "one step {e1}");
        assert!(e2 <= NEWTON2_REL_ERROR, "two steps {e2}");
    }
}
