//! Reciprocal `1/x` for positive `x` by power-of-two normalisation and Newton iterations.
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
//! Error: 3 iterations reach the fixed-point resolution; measured in `docs/results/nonlinear.md`.

use crate::backend::{enc, Backend};
use crate::NnError;

/// Parameters of [`reciprocal`] (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// Shares of `base^−e` and `2^−e·out_base_log2...`: for `x ∈ [2^(k(e−1)), 2^(ke))` (k = 1 or 2,
/// `lo ≤ e−1`, `e ≤ hi`), returns factors `F_j = Σ_j c_j·w_j + W` for each requested weight
/// family: `weights(j)` gives the real weight of bit `c_j` and `top` the constant. One
/// less_than call and one b2a call in total.
pub(crate) fn pow2_factors<B: Backend>(
    b: &mut B,
    x: &B::Val,
    k: i32,
    lo: i32,
    hi: i32,
    families: &[(&dyn Fn(i32) -> f64, f64)],
) -> Result<Vec<B::Val>, NnError> {
    if hi <= lo || k < 1 {
        return Err(NnError::BadArgument(format!("exponent range [{lo}, {hi}) with base 2^{k}")));
    }
    let n = b.len(x);
    let js: Vec<i32> = (lo..hi).collect();
    let th = js
        .iter()
        .map(|&j| enc(b, ((k * j) as f64).exp2()))
        .collect::<Result<Vec<_>, _>>()?;
    let bits = b.less_than_const(x, &th, 0)?;
    let refs: Vec<&B::Bit> = bits.iter().collect();
    let all = b.concat_bits(&refs)?;
    let ints = b.b2a(&all)?;
    // Interleave so that element i's bits are consecutive: out[i·K + t] = ints[t·n + i].
    let kk = js.len();
    let idx: Vec<usize> = (0..n * kk).map(|p| (p % kk) * n + p / kk).collect();
    let inter = b.gather(&ints, &idx)?;
    let mut out = Vec::with_capacity(families.len());
    for (w, top) in families {
        let ws = js.iter().map(|&j| enc(b, w(j))).collect::<Result<Vec<_>, _>>()?;
        let wv: Vec<u64> = (0..n * kk).map(|p| ws[p % kk]).collect();
        let t = b.mul_const(&inter, &wv, 0)?;
        let s = b.sum_groups(&t, kk)?;
        let c = enc(b, *top)?;
        out.push(b.add_const(&s, &[c])?);
    }
    Ok(out)
}

/// `1/x` for `x ∈ [2^lo, 2^hi)`.
pub fn reciprocal<B: Backend>(b: &mut B, x: &B::Val, p: &RecipParams) -> Result<B::Val, NnError> {
    let f = b.format().f() as i32;
    if p.hi > f || -p.lo > f || (p.hi as i64) + 2 >= (b.format().l() as i64 - 2 * f as i64) {
        return Err(NnError::FormatTooNarrow {
            op: "reciprocal",
            l: b.format().l(),
            f: b.format().f(),
            why: format!("domain [2^{}, 2^{}) needs |lo|, hi <= f and hi + 2f + 2 < l", p.lo, p.hi),
        });
    }
    let w = |j: i32| (-(j as f64) - 1.0).exp2();
    let top = (-(p.hi as f64)).exp2();
    let mut fs = pow2_factors(b, x, 1, p.lo, p.hi, &[(&w, top)])?;
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
