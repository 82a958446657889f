//! Reciprocal square root `1/√x` of positive `x`: the operator kind ([`RsqrtProtocol`],
//! [`ALL`]: one file per protocol in `rsqrt/` — BumbleBee's normalised Newton, nectar's
//! `newton2` (normalised by powers of two, [`BY_TWO`]), `newton1` (an eighth-octave guess and one
//! step, its evaluator in its file), `pwl` (a sixteenth-octave guess and no step), East's Newton with Determine) and the
//! two evaluators they run.
//!
//! BumbleBee's (`rsqrt = newton`), like [`crate::reciprocal`]: one batched `less_than_const`
//! against `4^j`, `lo ≤ j < hi`, gives `c_j = 1{x < 4^j}`; with `x ∈ [4^(e−1), 4^e)`, both
//! `4^−e` and `2^−e` are public linear combinations of `B2A(c_j)` (telescoping:
//! `4^−e = 4^−hi + Σ c_j·3·4^−(j+1)`, `2^−e = 2^−hi + Σ c_j·2^−(j+1)`), from ONE comparison
//! call and ONE b2a call.
//! Then `u = x·4^−e ∈ [1/4, 1)`, the linear initial guess `y0 = 2.132 − 1.218·u` (our minimax fit
//! of `u^−1/2` on [1/4, 1], relative error ≤ 8.7 %), `iters` Newton steps
//! `y ← y·(1.5 − (u/2)·y²)` (relative error `≈ 1.5·e²`: 1.6e−2, 3.8e−4, 2.2e−7; two product
//! layers each, see [`rsqrt`]), and `1/√x = y·2^−e`. (SPU instead uses a quartic in `u` and no Newton step, REFERENCE.md §3.5;
//! East determines `y0` and the count offline, §3.8.)
//! Input domain: `x ∈ [4^lo, 4^hi)`. Cost on n elements: less_than n × (hi − lo),
//! b2a n·(hi − lo), trunc (1 + iters)·n, mul (2 + 3·iters)·n in 2 + 2·iters calls.

pub mod determine;
pub mod newton;
pub mod newton1;
pub mod newton2;
pub mod pwl;

use crate::backend::{enc, enc_scaled, Backend, DynBackend};
use crate::reciprocal::pow2_factors;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// Parameters of [`rsqrt`] (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RsqrtParams {
    /// Input domain `[4^lo, 4^hi)`.
    pub lo: i32,
    pub hi: i32,
    pub iters: u32,
}

/// For LayerNorm variances at f = 18: domain [4^−9, 4^9) = [2^−18, 2^18).
pub const RSQRT_LAYERNORM: RsqrtParams = RsqrtParams { lo: -9, hi: 9, iters: 3 };

/// Linear initial guess `y0 = a + b·u` on [1/4, 1) (our minimax fit; AGREEMENT).
pub const RSQRT_Y0: (f64, f64) = (2.132, -1.218);

/// Linear initial guess `y0 = a + b·u` on [1/2, 1) (our minimax fit of `u^−1/2`, relative
/// error ≤ 2.23 %; AGREEMENT): [`BY_TWO`]'s.
pub const RSQRT2_Y0: (f64, f64) = (1.7877, -0.81);

/// How [`rsqrt`] normalises `x` (AGREEMENT): thresholds `2^(step·j)` — `x ∈ [2^(step(e−1)),
/// 2^(step·e))` gives `u = x·2^(−step·e) ∈ [2^−step, 1)` and `1/√x = u^−1/2·2^(−step·e/2)` —
/// and the linear initial guess on that interval.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct RsqrtNorm {
    /// `log2` of the ratio of consecutive thresholds: 2 (powers of four) or 1 (powers of two).
    pub step: u32,
    /// `y0 = y0.0 + y0.1·u`.
    pub y0: (f64, f64),
    /// Fractional bits the factor `2^(−step·e/2)` carries beyond the format's: with `step = 1`
    /// the odd exponents' factors are not dyadic, so their rounding would be relative to the
    /// factor's size (`2^−9` at the top of a LayerNorm's domain).
    pub extra_bits: u32,
}

/// BumbleBee's normalisation by powers of four (`rsqrt = newton`): `u ∈ [1/4, 1)`, the exponent
/// of `2^−e` an integer.
pub const BY_FOUR: RsqrtNorm = RsqrtNorm { step: 2, y0: RSQRT_Y0, extra_bits: 0 };

/// Normalisation by powers of two (`rsqrt = newton2`): `u ∈ [1/2, 1)`, the odd exponents'
/// `√2` in `2^(−e/2)` a public weight like the others (that factor kept at 6 more fractional
/// bits); the initial guess is within 2.23 % instead of 8.7 %.
pub const BY_TWO: RsqrtNorm = RsqrtNorm { step: 1, y0: RSQRT2_Y0, extra_bits: 6 };

/// What an rsqrt is asked for: `1/√x` for `x ∈ [lo, hi]` (public; the call site knows it: a
/// LayerNorm's variances, East's scaled sums of squares), with the power-of-four domain
/// BumbleBee's Newton normalises over, which must contain it (AGREEMENT per call site).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RsqrtRange {
    pub lo: f64,
    pub hi: f64,
    pub newton: RsqrtParams,
}

/// The LayerNorm / RMSNorm variances at (64, 18): `[4^−9, 4^9)` (with ε ≥ `4·2^−f`).
pub const LAYERNORM_RANGE: RsqrtRange = RsqrtRange {
    lo: 1.0 / 262_144.0,
    hi: 262_144.0 - 1.0 / 262_144.0,
    newton: RSQRT_LAYERNORM,
};

/// The range benches and the generated tests ask for: `[1, 1001]`.
pub const RANGE: RsqrtRange = RsqrtRange { lo: 1.0, hi: 1001.0, newton: RSQRT_LAYERNORM };

/// A reciprocal-square-root protocol (DESIGN.md "Where a protocol plugs in").
pub trait RsqrtProtocol: Protocol {
    /// `1/√x` for `x` in `r`, in the backend's current format; an error (not a wrong value)
    /// when the protocol cannot serve `r` there ([`RsqrtProtocol::check`]).
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RsqrtRange) -> Result<Vec<u64>, NnError>;

    /// Whether it serves `r` in the format `fp` (refused at start, before any message).
    fn check(&self, r: &RsqrtRange, fp: FixedPoint) -> Result<(), NnError>;

    /// The stated twin-vs-protocol bound in LSB of `fp` on `r`.
    fn tolerance(&self, r: &RsqrtRange, fp: FixedPoint) -> Result<i64, NnError>;

    /// The stated bound on |twin − 1/√x| over `r` in (64, 18).
    fn approx_error(&self, r: &RsqrtRange) -> Result<f64, NnError>;
}

/// Every rsqrt protocol, in the order `nectar suites` lists them.
pub static ALL: &[&dyn RsqrtProtocol] = &[
    &newton::Newton,
    &newton2::Newton2,
    &newton1::Newton1,
    &pwl::Pwl,
    &determine::NewtonDetermine,
];

nectar_math::kind!(
    /// The rsqrt kind in the registry.
    RsqrtKind,
    Rsqrt,
    "rsqrt",
    dyn RsqrtProtocol,
    ALL
);

/// The domain check of the Newton rsqrts: the call site's range `r` inside its power-of-four
/// domain `[4^lo, 4^hi)`.
pub(crate) fn check_newton_domain(r: &RsqrtRange) -> Result<(), NnError> {
    let p = &r.newton;
    if r.lo < (2.0 * p.lo as f64).exp2() || r.hi >= (2.0 * p.hi as f64).exp2() {
        return Err(NnError::BadArgument(format!(
            "rsqrt on [{}, {}] outside the Newton domain [4^{}, 4^{})",
            r.lo, r.hi, p.lo, p.hi
        )));
    }
    Ok(())
}

/// The format check of [`rsqrt`] for the domain `p` (shared by the evaluator and
/// [`RsqrtProtocol::check`]).
pub(crate) fn check_newton_format(p: &RsqrtParams, norm: &RsqrtNorm, fp: FixedPoint) -> Result<(), NnError> {
    let f = fp.f() as i32;
    // the last product: the iterate (≤ 1 at f + RSQRT_EXTRA_BITS) times 1.5^iters·2^−e (≤ 2^(2 − lo) at f + extra_bits)
    let last = 2 * f as i64 + RSQRT_EXTRA_BITS as i64 + norm.extra_bits as i64 + 2 - p.lo as i64 + 2;
    if 2 * p.hi > f || -2 * p.lo > f + 2 || (2 * p.hi as i64) + 2 * f as i64 + 2 >= fp.l() as i64 || last >= fp.l() as i64 {
        return Err(NnError::FormatTooNarrow {
            op: "rsqrt",
            l: fp.l(),
            f: fp.f(),
            why: format!(
                "domain [4^{}, 4^{}) needs 2·hi <= f, −2·lo <= f + 2, 2·hi + 2f + 2 < l and 2f + {} − lo + 4 < l",
                p.lo, p.hi, RSQRT_EXTRA_BITS + norm.extra_bits
            ),
        });
    }
    Ok(())
}

/// `1/√x` for `x ∈ [4^lo, 4^hi)`.
///
/// Newton's step `y' = 1.5·y − (u/2)·y³` in two product layers (issue 48): `{y², (u/2)·y}` in
/// one call, then their product. The `1.5·y` would need a truncation of its own (a flight), so
/// the iterate is carried as `z_k = (2/3)^k·y_k`, for which the step reads `z' = z − v_k·z³`
/// with `v_k = (u/2)·1.5^(2k−1)`; the `v_k` of all steps and the initial value come from one
/// truncation, and `1.5^iters` is folded into the public weights of `2^−e`. Same map as before
/// in exact arithmetic; in the last step `z²` and `v·z` are of similar size (≈ 0.8 and 0.4), so
/// their roundings reach `v·z³` about equally (the twin-vs-protocol bound is
/// [`crate::tolerance::RSQRT_TOL`]).
pub fn rsqrt<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &RsqrtParams, norm: &RsqrtNorm) -> Result<B::Val, NnError> {
    let fp = b.format();
    check_newton_format(p, norm, fp)?;
    if !matches!(norm.step, 1 | 2) {
        return Err(NnError::BadArgument(format!("rsqrt: thresholds 2^({}·j); the step must be 1 or 2", norm.step)));
    }
    let unscale = 1.5f64.powi(p.iters as i32);
    // thresholds 2^(step·j), j ∈ [jlo, jhi), covering the domain [4^lo, 4^hi)
    let s = norm.step as i32;
    let (jlo, jhi) = (2 * p.lo / s, 2 * p.hi / s);
    // the factors as functions of the exponent e: u's 2^(−step·e) at f, and 2^(−step·e/2) with
    // the Newton steps' 1.5^iters at f + extra_bits
    let gu = move |e: i32| (-(s * e) as f64).exp2();
    let gr = move |e: i32| unscale * (-(s * e) as f64 / 2.0).exp2();
    let fs = pow2_factors(b, x, s as f64, jlo, jhi, &[(&gu, fp.f()), (&gr, fp.f() + norm.extra_bits)])?;
    let (f4, f2) = match fs.as_slice() {
        [a, c] => (a.clone(), c.clone()),
        _ => return Err(NnError::BadArgument("expected two factors".into())),
    };
    let u = b.mul(x, &f4)?;
    let n = b.len(&u);
    // [b·u, v_0, v_1, …] in one truncation, at RSQRT_EXTRA_BITS more fractional bits
    let fine = FixedPoint::new(fp.l(), fp.f() + RSQRT_EXTRA_BITS)?;
    let k = 1 + p.iters as usize;
    let copies: Vec<&B::Val> = std::iter::repeat_n(&u, k).collect();
    let us = b.concat(&copies)?;
    let mut cs = Vec::with_capacity(n * k);
    cs.extend(std::iter::repeat_n(enc_scaled(b, norm.y0.1, fine.f())?, n));
    for t in 0..p.iters as i32 {
        cs.extend(std::iter::repeat_n(enc_scaled(b, 0.5 * 1.5f64.powi(2 * t - 1), fine.f())?, n));
    }
    let lin = b.mul_const(&us, &cs, fp.f())?;
    b.set_format(fine);
    let out = (|| {
        let part = |b: &mut B, i: usize| b.gather(&lin, &(i * n..(i + 1) * n).collect::<Vec<_>>());
        let by = part(b, 0)?;
        let mut z = b.add_const(&by, &[enc(b, norm.y0.0)?])?;
        for t in 0..p.iters as usize {
            let v = part(b, 1 + t)?;
            let lhs = b.concat(&[&z, &v])?;
            let rhs = b.concat(&[&z, &z])?;
            let sp = b.mul(&lhs, &rhs)?;
            let s = b.gather(&sp, &(0..n).collect::<Vec<_>>())?;
            let q = b.gather(&sp, &(n..2 * n).collect::<Vec<_>>())?;
            let cube = b.mul(&q, &s)?;
            z = b.sub(&z, &cube)?;
        }
        // z at the fine scale times 2^−e·1.5^iters at f + extra_bits, truncated by the sum of
        // the two extra scales and f: back at f
        b.set_format(FixedPoint::new(fp.l(), fine.f() + norm.extra_bits)?);
        b.mul(&z, &f2)
    })();
    b.set_format(fp);
    out
}

/// Extra fractional bits of the Newton iterate of [`rsqrt`] (AGREEMENT): its scaled iterate
/// `z ≤ 0.6` would otherwise lose precision against BumbleBee's `y ∈ [1, 2]`.
pub const RSQRT_EXTRA_BITS: u32 = 6;

/// Relative target error of the reciprocal square root by Determine (AGREEMENT): `2^−12`, so
/// that a LayerNorm output `z·η` keeps 12 correct bits (its outputs are O(1) at f = 18).
pub const DETERMINE_RSQRT_DELTA: f64 = 1.0 / 4096.0;

/// East §4.2 Determine for `1/√x` on `[a, b]` (`InvSqrt`: "similar to F_Recip, except that the
/// iteration becomes `y ← y(3 − x·y²)/2` and the quadratic inequalities become cubic"), with
/// a **relative** target `δ`: `|y_t·√x − 1| ≤ δ` on the whole range.
///
/// In the normalised variable `u = y·√x` every `x` runs the same map `g(u) = u(3 − u²)/2`,
/// which never exceeds 1 on `(0, √3)` and is increasing below 1, decreasing above. So after
/// `t` steps the admissible starts form one interval `[p_t, q_t] ∋ 1` (`p_t`: the preimage of
/// `1 − δ` under `g^t` on `(0, 1]`, `q_t` on `[1, √3)`; both found by bisection — East solves
/// the cubic inequalities step by step, which gives the same endpoints), and a constant `y0`
/// works for all of `[a, b]` iff `p_t/√a ≤ y0 ≤ q_t/√b`. `t` is the first step count for
/// which that interval is non-empty; `y0` is its midpoint.
pub fn determine_rsqrt(a: f64, b: f64, delta: f64) -> Result<crate::reciprocal::Determined, NnError> {
    use crate::reciprocal::{Determined, DETERMINE_MAX_ITERS};
    if !(a > 0.0 && b > a && b.is_finite() && delta > 0.0 && delta < 0.5) {
        return Err(NnError::BadArgument(format!(
            "Determine (rsqrt) needs 0 < a < b and 0 < δ < 1/2 (got a = {a}, b = {b}, δ = {delta})"
        )));
    }
    let g = |u: f64| u * (3.0 - u * u) / 2.0;
    let run = |mut u: f64, t: u32| {
        for _ in 0..t {
            u = g(u);
        }
        u
    };
    // the preimage endpoint of [1 − δ, 1] under g^t on (0, 1] (rising) or [1, √3) (falling)
    let edge = |t: u32, rising: bool| {
        let (mut lo, mut hi) = if rising { (0.0, 1.0) } else { (1.0, 3f64.sqrt()) };
        for _ in 0..200 {
            let m = (lo + hi) / 2.0;
            let ok = 1.0 - run(m, t) <= delta;
            match (rising, ok) {
                (true, true) | (false, false) => hi = m,
                _ => lo = m,
            }
        }
        if rising { hi } else { lo }
    };
    for t in 1..=DETERMINE_MAX_ITERS {
        let (lo, hi) = (edge(t, true) / a.sqrt(), edge(t, false) / b.sqrt());
        if lo <= hi {
            return Ok(Determined { y0: (lo + hi) / 2.0, iters: t });
        }
    }
    Err(NnError::BadArgument(format!(
        "Determine (rsqrt): [{a}, {b}] at δ = {delta} needs more than {DETERMINE_MAX_ITERS} Newton steps"
    )))
}

/// Determine's `(y0, t)` for `[a, hi]`, and the format check of [`rsqrt_determine`] (shared by
/// the evaluator and [`RsqrtProtocol::check`]).
pub(crate) fn check_determine(a: f64, hi: f64, fp: FixedPoint) -> Result<crate::reciprocal::Determined, NnError> {
    let d = determine_rsqrt(a, hi, DETERMINE_RSQRT_DELTA)?;
    // raw products at scale 2f: x·y ≤ √(3·hi) (u = y√x stays below √3), (x·y)·y < 3,
    // y·(3 − x·y²) ≤ 3/√a; x·y² is taken as (x·y)·y so that the rounding of y is not
    // multiplied by a large x
    let big = (3.0 * hi).sqrt().max(3.0 / a.sqrt()).max(3.0).log2();
    if big + 2.0 * fp.f() as f64 + 2.0 >= fp.l() as f64 {
        return Err(NnError::FormatTooNarrow {
            op: "rsqrt (Determine)",
            l: fp.l(),
            f: fp.f(),
            why: format!("products up to 2^{big:.1} need log2 + 2f + 2 < l"),
        });
    }
    Ok(d)
}

/// `1/√x` for `x ∈ [a, b]` by East's Newton with Determine (§4.2): `y0` constant, `t` steps of
/// `y ← y·(3 − x·y²)/2` (three products each); no comparison. Relative error
/// [`DETERMINE_RSQRT_DELTA`] in f64, plus about `6t` LSB of fixed-point rounding.
pub fn rsqrt_determine<B: Backend + ?Sized>(b: &mut B, x: &B::Val, a: f64, hi: f64) -> Result<B::Val, NnError> {
    let d = check_determine(a, hi, b.format())?;
    let fp = b.format();
    let n = b.len(x);
    let mut y = b.constant(&vec![enc(b, d.y0)?; n])?;
    let three = enc(b, 3.0)?;
    let half = enc(b, 0.5)?;
    for _ in 0..d.iters {
        let xy = b.mul(x, &y)?;
        let xy2 = b.mul(&xy, &y)?;
        let neg = b.neg(&xy2)?;
        let e = b.add_const(&neg, &[three])?;
        let ye = b.mul(&y, &e)?;
        y = b.mul_const(&ye, &[half], fp.f())?;
    }
    Ok(y)
}

#[cfg(test)]
mod determine_tests {
    use super::*;

    /// The determined (y0, t) reach δ (relative) on the whole range in f64, and t is minimal.
    #[test]
    fn determine_rsqrt_reaches_delta_on_the_range() {
        for (a, b) in [(1.0, 2.0), (1.0, 4096.0), (3.4, 221_184.0), (0.0625, 65536.0)] {
            let d = determine_rsqrt(a, b, DETERMINE_RSQRT_DELTA).unwrap();
            let run = |x: f64, t: u32| (0..t).fold(d.y0, |y, _| y * (3.0 - x * y * y) / 2.0);
            let rel = |x: f64, t: u32| (run(x, t) * x.sqrt() - 1.0).abs();
            let worst = (0..=4000)
                .map(|i| a * (b / a).powf(i as f64 / 4000.0))
                .map(|x| rel(x, d.iters))
                .fold(0.0, f64::max);
            assert!(worst <= DETERMINE_RSQRT_DELTA * 1.0001, "[{a}, {b}]: t = {} y0 = {} worst {worst:e}", d.iters, d.y0);
            let fewer = rel(a, d.iters - 1).max(rel(b, d.iters - 1));
            assert!(fewer > DETERMINE_RSQRT_DELTA, "[{a}, {b}]: t − 1 steps would do");
        }
        assert!(determine_rsqrt(2.0, 1.0, 1e-3).is_err());
        assert!(determine_rsqrt(1e-12, 1e12, 1e-9).is_err());
    }
}
