//! Reciprocal `1/x` of positive `x`: the operator kind ([`ReciprocalProtocol`], [`ALL`]: one
//! file per protocol in `reciprocal/` — BumbleBee's Newton, nectar's `newton2` (half-octave
//! normalisation, two steps) and `newton1` (an eighth-octave guess, one step; each evaluator in
//! its file), `pwl` (a sixteenth-octave guess and no step), East's Determine, ROTL's LUT) and the
//! two Newton evaluators BumbleBee's and East's run.
//!
//! BumbleBee's (`reciprocal = newton`): power-of-two normalisation and Newton iterations.
//!
//! This follows SPU's Goldschmidt reciprocal (REFERENCE.md §3.5) in its structure — normalise
//! `x` into `[0.5, 1)` by a secret power of two, a linear initial guess, quadratic refinement —
//! but finds the power of two with BumbleBee's **batched comparisons** instead of a bit
//! decomposition: one `less_than_const` call against all thresholds `2^j`, `lo ≤ j < hi`,
//! gives monotone bits `c_j = 1{x < 2^j}`; with `e` the exponent such that
//! `x ∈ [2^(e−1), 2^e)`, the factor `2^−e = 2^−hi + Σ_j c_j·2^−(j+1)` is a public linear
//! combination of `B2A(c_j)` (telescoping sum, no AND gates).
//!
//! Steps: `c = x·2^−e ∈ [0.5, 1)`; `y0 = 2.9142 − 2c` (SPU's initial guess, relative error
//! ≤ 8.6 %); `iters` Newton steps `y ← y·(2 − c·y)` (relative error `e_{k+1} = e_k²`:
//! 7.4e−3, 5.4e−5, 2.9e−9); output `y·2^−e`.
//! Input domain: `x ∈ [2^lo, 2^hi)` (outside it the normalised `c` leaves `[0.5, 1)` and the
//! iteration diverges); for softmax denominators `[1, n]` (the max element contributes 1).
//! Cost on n elements: less_than n × (hi − lo), b2a n·(hi − lo), mul (2 + 2·iters)·n.
//! Error: 3 iterations reach the fixed-point resolution; measured in `docs/notes/nonlinear-notes.md`.

pub mod determine;
pub mod lut;
pub mod newton;
pub mod newton1;
pub mod newton2;
pub mod pwl;

use crate::backend::{enc, enc_scaled, Backend, DynBackend};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// Parameters of [`reciprocal`] (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RecipParams {
    /// Input domain `[2^lo, 2^hi)`.
    pub lo: i32,
    pub hi: i32,
    /// Newton iterations.
    pub iters: u32,
}

/// For softmax denominators with rows up to 2^12 entries: domain [1, 2^13).
pub const RECIP_SOFTMAX: RecipParams = RecipParams { lo: 0, hi: 13, iters: 3 };

/// SPU's linear initial guess on [0.5, 1): `2.9142 − 2c` (REFERENCE.md §3.5; AGREEMENT).
pub const RECIP_Y0: (f64, f64) = (2.9142, -2.0);

/// What a reciprocal is asked for: `1/x` for `x ∈ [lo, hi]` (public; the call site knows it:
/// softmax row sums, tanh's `1 + e^{−2|x|}`), with the power-of-two domain BumbleBee's Newton
/// normalises over, which must contain it (AGREEMENT per call site).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecipRange {
    pub lo: f64,
    pub hi: f64,
    pub newton: RecipParams,
}

/// A reciprocal protocol (DESIGN.md "Where a protocol plugs in").
pub trait ReciprocalProtocol: Protocol {
    /// `1/x` for `x` in `r` in the backend's current format; an error (not a wrong value) when
    /// the protocol cannot serve `r`.
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RecipRange) -> Result<Vec<u64>, NnError>;

    /// Whether it serves `r` (a composition checks its call sites' ranges at start).
    fn check(&self, r: &RecipRange) -> Result<(), NnError> {
        let _ = r;
        Ok(())
    }

    /// Whether [`ReciprocalProtocol::eval`] serves `r` in the format `fp` — a composition may
    /// run it in a narrower ring than the model's (`softmax = grid`); decided from public data
    /// before any message. `false` unless the protocol states its format's bounds.
    fn runs_in(&self, r: &RecipRange, fp: FixedPoint) -> bool {
        let _ = (r, fp);
        false
    }

    /// The stated twin-vs-protocol bound in LSB of the output's format `fp` on `r`.
    fn tolerance(&self, r: &RecipRange, fp: FixedPoint) -> Result<i64, NnError>;

    /// The stated bound on |twin − 1/x| over `r` in (64, 18).
    fn approx_error(&self, r: &RecipRange) -> Result<f64, NnError>;
}

/// Every reciprocal protocol, in the order `nectar suites` lists them.
pub static ALL: &[&dyn ReciprocalProtocol] = &[
    &newton::Newton,
    &newton2::Newton2,
    &newton1::Newton1,
    &pwl::Pwl,
    &determine::NewtonDetermine,
    &lut::Lut,
];

nectar_math::kind!(
    /// The reciprocal kind in the registry.
    ReciprocalKind,
    Reciprocal,
    "reciprocal",
    dyn ReciprocalProtocol,
    ALL
);

/// The range benches and the generated tests ask for (softmax row sums of up to 4000 keys).
pub const RANGE: RecipRange = RecipRange { lo: 1.0, hi: 4001.0, newton: RECIP_SOFTMAX };

/// Shares of public functions of the exponent `e` with `x ∈ [2^(k(e−1)), 2^(ke))` (`k` = 2, 1
/// or 1/2: thresholds `2^(k·j)`, `lo ≤ j < hi`; `lo ≤ e−1`, `e ≤ hi`): for each requested
/// family `(g, s)`, `F = round(g(e)·2^s)` (scale `s`) as `Σ_j c_j·w_j + G_hi` with
/// `c_j = 1{x < 2^(k·j)}`, `G_e = round(g(e)·2^s)` and `w_j = G_j − G_(j+1)` in the ring
/// (telescoping over the set bits `j ≥ e`): each bucket's factor is its own rounding, with no
/// sum of rounded weights. One less_than call and one b2a call in total.
pub(crate) fn pow2_factors<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    k: f64,
    lo: i32,
    hi: i32,
    families: &[(&dyn Fn(i32) -> f64, u32)],
) -> Result<Vec<B::Val>, NnError> {
    pow2_factors_in(b, x, k, lo, hi, families, None)
}

/// [`pow2_factors`] with the comparisons in `Z_{2^cmp_l}` (shares reduced locally; exact when
/// `0 ≤ x < 2^(k·hi)` and `f + k·hi + 2 ≤ cmp_l`: every `x − t_j` fits `cmp_l` bits signed),
/// which shortens their millionaire to `cmp_l − 1` bits; `None`: the format's ring.
pub(crate) fn pow2_factors_in<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    k: f64,
    lo: i32,
    hi: i32,
    families: &[(&dyn Fn(i32) -> f64, u32)],
    cmp_l: Option<u32>,
) -> Result<Vec<B::Val>, NnError> {
    if hi <= lo || !(k > 0.0) {
        return Err(NnError::BadArgument(format!("exponent range [{lo}, {hi}) with base 2^{k}")));
    }
    let n = b.len(x);
    let js: Vec<i32> = (lo..hi).collect();
    let bits = match cmp_l {
        None => {
            let th = js
                .iter()
                .map(|&j| enc(b, (k * j as f64).exp2()))
                .collect::<Result<Vec<_>, _>>()?;
            b.less_than_const(x, &th, 0)?
        }
        Some(l) => {
            if (b.format().f() as f64 + k * hi as f64 + 2.0) > l as f64 {
                return Err(NnError::BadArgument(format!("thresholds up to 2^{} do not fit Z_2^{l} at f = {}", k * hi as f64, b.format().f())));
            }
            let th: Vec<f64> = js.iter().map(|&j| (k * j as f64).exp2()).collect();
            crate::poly::less_than_in_ring(b, x, l, &th, crate::poly::LessMode::Exact)?
        }
    };
    let refs: Vec<&B::Bit> = bits.iter().collect();
    let all = b.concat_bits(&refs)?;
    let ints = b.b2a(&all)?;
    // Interleave so that element i's bits are consecutive: out[i·K + t] = ints[t·n + i].
    let kk = js.len();
    let idx: Vec<usize> = (0..n * kk).map(|p| (p % kk) * n + p / kk).collect();
    let inter = b.gather(&ints, &idx)?;
    let mut out = Vec::with_capacity(families.len());
    for &(g, scale) in families {
        let gs = (lo..=hi).map(|e| enc_scaled(b, g(e), scale)).collect::<Result<Vec<_>, _>>()?;
        let ws: Vec<u64> = (0..kk).map(|t| gs[t].wrapping_sub(gs[t + 1])).collect();
        let wv: Vec<u64> = (0..n * kk).map(|p| ws[p % kk]).collect();
        let t = b.mul_const(&inter, &wv, 0)?;
        let s = b.sum_groups(&t, kk)?;
        out.push(b.add_const(&s, &[gs[kk]])?);
    }
    Ok(out)
}

/// `(a, s)` of bucket `e` of the thresholds `2^(j/K)` (`x ∈ [2^((e−1)/K), 2^(e/K))`) grouped
/// `per` to a normalising factor (`per = K`: octaves, `2K`: powers of four): `a = ⌈e/per⌉`
/// and the sub-bucket `s = e − 1 − per·(a − 1) ∈ [0, per)`.
pub(crate) fn bucket_split(e: i32, per: i32) -> (i32, usize) {
    let a = (e + per - 1).div_euclid(per);
    (a, (e - 1 - per * (a - 1)) as usize)
}

/// The guess stage of the one-step Newton evaluators ([`newton1::reciprocal1`],
/// [`crate::rsqrt::newton1::rsqrt1`]): the bucket `e` of `x` among the thresholds `2^(k·j)`,
/// `lo ≤ j < hi` ([`pow2_factors_in`], compared in `Z_{2^cmp_l}`), then one product layer
/// `{x·slope(e), x·w(e)}` with both factors at scale `s`, truncated to `f + extra`.
/// Returns `z0 = offset(e) + x·slope(e)` and `x·w(e)` (at `f + extra`) and `scale(e)` (at `f`),
/// the backend's format unchanged.
#[allow(clippy::too_many_arguments)]
pub(crate) fn bucket_guess<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    (k, lo, hi, cmp_l): (f64, i32, i32, Option<u32>),
    s: u32,
    extra: u32,
    slope: &dyn Fn(i32) -> f64,
    w: &dyn Fn(i32) -> f64,
    offset: &dyn Fn(i32) -> f64,
    scale: &dyn Fn(i32) -> f64,
) -> Result<[B::Val; 3], NnError> {
    let fp = b.format();
    let f = fp.f();
    let fams: [(&dyn Fn(i32) -> f64, u32); 4] = [(slope, s), (w, s), (offset, f + extra), (scale, f)];
    let fs = pow2_factors_in(b, x, k, lo, hi, &fams, cmp_l)?;
    let [fb, fw, a0, g] = match <[B::Val; 4]>::try_from(fs) {
        Ok(v) => v,
        Err(_) => return Err(NnError::BadArgument("expected four factors".into())),
    };
    let n = b.len(x);
    let out = (|| {
        // x (at f) times factors at s, truncated by s − extra: at f + extra
        b.set_format(FixedPoint::new(fp.l(), s.checked_sub(extra).ok_or_else(|| NnError::BadArgument("scale below the extra bits".into()))?)?);
        let xx = b.concat(&[x, x])?;
        let ff = b.concat(&[&fb, &fw])?;
        let l1 = b.mul(&xx, &ff)?;
        let bu = b.gather(&l1, &(0..n).collect::<Vec<_>>())?;
        let wv = b.gather(&l1, &(n..2 * n).collect::<Vec<_>>())?;
        let z0 = b.add(&a0, &bu)?;
        Ok([z0, wv, g])
    })();
    b.set_format(fp);
    out
}

/// The domain check of the Newton reciprocals ([`newton::Newton`], [`newton2::Newton2`]): the
/// call site's range `r` inside its power-of-two domain `[2^lo, 2^hi)`.
pub(crate) fn check_newton_domain(r: &RecipRange) -> Result<(), NnError> {
    let p = &r.newton;
    if r.lo < (p.lo as f64).exp2() || r.hi >= (p.hi as f64).exp2() {
        return Err(NnError::BadArgument(format!(
            "reciprocal on [{}, {}] outside the Newton domain [2^{}, 2^{})",
            r.lo, r.hi, p.lo, p.hi
        )));
    }
    Ok(())
}

/// The format check of the Newton reciprocals on `[2^lo, 2^hi)` ([`reciprocal`],
/// [`newton2::reciprocal2`]).
pub(crate) fn check_recip_format(p: &RecipParams, fp: FixedPoint) -> Result<(), NnError> {
    let f = fp.f() as i32;
    if p.hi > f || -p.lo > f || (p.hi as i64) + 2 >= (fp.l() as i64 - 2 * f as i64) {
        return Err(NnError::FormatTooNarrow {
            op: "reciprocal",
            l: fp.l(),
            f: fp.f(),
            why: format!("domain [2^{}, 2^{}) needs |lo|, hi <= f and hi + 2f + 2 < l", p.lo, p.hi),
        });
    }
    Ok(())
}

/// `1/x` for `x ∈ [2^lo, 2^hi)`.
pub fn reciprocal<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &RecipParams) -> Result<B::Val, NnError> {
    check_recip_format(p, b.format())?;
    let g = |e: i32| (-(e as f64)).exp2();
    let mut fs = pow2_factors(b, x, 1.0, p.lo, p.hi, &[(&g, b.format().f())])?;
    let factor = fs.pop().ok_or_else(|| NnError::BadArgument("no factor".into()))?;
    let c = b.mul(x, &factor)?;
    let y0 = b.mul_const(&c, &[crate::backend::int(b, RECIP_Y0.1 as i64)], 0)?;
    let mut y = b.add_const(&y0, &[enc(b, RECIP_Y0.0)?])?;
    let two = enc(b, 2.0)?;
    for _ in 0..p.iters {
        let cy = b.mul(&c, &y)?;
        let ncy = b.neg(&cy)?;
        let d = b.add_const(&ncy, &[two])?;
        y = b.mul(&y, &d)?;
    }
    b.mul(&y, &factor)
}

/// East's Determine for the reciprocal (East §4.2, Alg. 2; REFERENCE.md §3.8): the constant
/// initial value `y0` and the number `t` of Newton steps `y ← y·(2 − x·y)` such that
/// `|y_t − 1/x| ≤ δ` for every `x ∈ [a, b]`, found by iterating backwards from the target
/// intervals in plaintext. AGREEMENT (a function of public values only).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Determined {
    pub y0: f64,
    pub iters: u32,
}

/// Most Newton steps Determine may ask for (a range too wide for a constant start).
pub const DETERMINE_MAX_ITERS: u32 = 64;

/// Determine (see [`Determined`]) for `0 < a < b` and target error `0 < δ < 1/b`.
///
/// Backward step: the `y` with `y(2 − c·y) ≥ L` form `[(1 − √(1 − cL))/c, (1 + √(1 − cL))/c]`;
/// starting from `L_a = 1/a − δ`, `L_b = 1/b − δ`, `H_b = 1/b + δ`, the lower bounds are pulled
/// back until the `a`-interval's lower end is at most the `b`-interval's upper end; `y0` is the
/// midpoint of the overlap `[L_a, H_b]`. (Newton from below never overshoots `1/x`, so only the
/// lower bounds move; at `i = 0` the upper bound of `b` is `1/b + δ`.)
pub fn determine_reciprocal(a: f64, b: f64, delta: f64) -> Result<Determined, NnError> {
    if !(a > 0.0 && b > a && delta > 0.0 && delta < 1.0 / b) || !b.is_finite() {
        return Err(NnError::BadArgument(format!(
            "Determine needs 0 < a < b and 0 < δ < 1/b (got a = {a}, b = {b}, δ = {delta})"
        )));
    }
    let back = |c: f64, l: f64| -> (f64, f64) {
        let r = (1.0 - c * l).max(0.0).sqrt();
        ((1.0 - r) / c, (1.0 + r) / c)
    };
    let (mut la, mut lb, mut hb) = (1.0 / a - delta, 1.0 / b - delta, 1.0 / b + delta);
    let mut i = 0;
    while hb < la {
        if i == DETERMINE_MAX_ITERS {
            return Err(NnError::BadArgument(format!(
                "Determine: [{a}, {b}] at δ = {delta} needs more than {DETERMINE_MAX_ITERS} Newton steps"
            )));
        }
        la = back(a, la).0;
        let (l, h) = back(b, lb);
        lb = l;
        hb = h;
        i += 1;
    }
    Ok(Determined { y0: (hb + la) / 2.0, iters: i })
}

/// The target error of the reciprocal by Determine (absolute; 2^−14 ≈ 6.1e−5, well above the
/// rounding of `t` fixed-point Newton steps at f = 18). AGREEMENT.
pub const DETERMINE_DELTA: f64 = 1.0 / 16384.0;

/// `1/x` for `x ∈ [a, b]` by East's Newton with Determine: `y0` constant, `t` steps of two
/// products each; no comparison, no B2A. Cost on n elements: mul `2t·n`, `2t` rounds.
/// Input domain: `[a, b]`; the fixed-point rounding adds about `t` LSB.
pub fn reciprocal_determine<B: Backend + ?Sized>(b: &mut B, x: &B::Val, a: f64, hi: f64) -> Result<B::Val, NnError> {
    let d = determine_reciprocal(a, hi, DETERMINE_DELTA)?;
    let fp = b.format();
    if (hi * 2.0).log2() + 2.0 * fp.f() as f64 + 2.0 >= fp.l() as f64 {
        return Err(NnError::FormatTooNarrow {
            op: "reciprocal (Determine)",
            l: fp.l(),
            f: fp.f(),
            why: format!("x·y up to {hi} needs log2(2·{hi}) + 2f + 2 < l"),
        });
    }
    let n = b.len(x);
    let y = b.constant(&vec![enc(b, d.y0)?; n])?;
    newton_steps(b, x, y, d.iters)
}

/// `iters` Newton steps for `1/x` from `y`: `y ← y·(2 − x·y)` (two products each; the relative
/// error `1 − x·y` squares every step).
pub fn newton_steps<B: Backend + ?Sized>(b: &mut B, x: &B::Val, mut y: B::Val, iters: u32) -> Result<B::Val, NnError> {
    let two = enc(b, 2.0)?;
    for _ in 0..iters {
        let xy = b.mul(x, &y)?;
        let nxy = b.neg(&xy)?;
        let e = b.add_const(&nxy, &[two])?;
        y = b.mul(&y, &e)?;
    }
    Ok(y)
}

#[cfg(test)]
mod list_tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::ReciprocalKind>().unwrap();
    }
}

#[cfg(test)]
mod determine_tests {
    use super::*;

    /// The determined (y0, t) reach δ on the whole range in f64, and t is minimal.
    #[test]
    fn determine_reaches_delta_on_the_range() {
        for (a, b) in [(1.0, 2.0), (1.0, 32.0), (1.0, 128.0), (1.0, 512.0), (0.5, 4.0)] {
            let d = determine_reciprocal(a, b, DETERMINE_DELTA).unwrap();
            let run = |x: f64, t: u32| (0..t).fold(d.y0, |y, _| y * (2.0 - x * y));
            let worst = (0..=2000)
                .map(|i| a + (b - a) * i as f64 / 2000.0)
                .map(|x| (run(x, d.iters) - 1.0 / x).abs())
                .fold(0.0, f64::max);
            assert!(worst <= DETERMINE_DELTA, "[{a}, {b}]: t = {} y0 = {} worst {worst:e}", d.iters, d.y0);
            if d.iters > 0 {
                let fewer = (run(a, d.iters - 1) - 1.0 / a).abs().max((run(b, d.iters - 1) - 1.0 / b).abs());
                assert!(fewer > DETERMINE_DELTA, "[{a}, {b}]: t − 1 steps would do");
            }
        }
        assert!(determine_reciprocal(2.0, 1.0, 1e-3).is_err());
        assert!(determine_reciprocal(1.0, 2.0, 0.0).is_err());
        assert!(determine_reciprocal(1e-9, 1e9, 1e-12).is_err());
    }
}
