//! Row-wise softmax (BumbleBee §V-B Eq. (3), App. A ordering; REFERENCE.md §3.6):
//! `x̄ = max_row(x)` (comparison tree), `d = x − x̄ ≤ 0`, `e = exp_neg(d)` (clipped
//! `(1 + d/2^n)^(2^n)`), `s = Σ_row e ∈ [1, cols]`, **one reciprocal per row**, broadcast,
//! `y = e · (1/s)`. (Broadcasting before dividing would multiply the reciprocal's cost by the
//! row length, App. A.)
//!
//! Masking: a public mask marks entries to exclude (e.g. causal attention); they are replaced
//! locally by [`MASK_VALUE`] (a large negative number, "−inf-like"), so their exp is clipped to
//! exactly 0. A fully masked row yields the uniform distribution (all entries equal).
//! Rows with several equal maxima work (the tree keeps one; each contributes exp(0) = 1).
//! Cost on rows × cols: max tree (msb + mux ⌈log2 cols⌉ calls), exp (1 less_than, 1 trunc,
//! n squares, 1 mux), reciprocal on `rows` elements, one mul on rows·cols.
//! Input domain: `|x| < 2^(l−4−f)` (so that masked differences do not wrap).

use crate::backend::{enc, Backend};
use crate::exp::{exp_neg, ExpParams, EXP_BUMBLEBEE};
use crate::max::{broadcast_rows, max_rows};
use crate::reciprocal::{reciprocal, RecipParams, RECIP_SOFTMAX};
use crate::NnError;

/// Softmax parameters (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftmaxParams {
    pub exp: ExpParams,
    /// The reciprocal's domain must contain `[1, cols]`.
    pub recip: RecipParams,
}

pub const SOFTMAX_BUMBLEBEE: SoftmaxParams = SoftmaxParams { exp: EXP_BUMBLEBEE, recip: RECIP_SOFTMAX };

/// The value masked entries are replaced by: `−2^(l−4−f)` (in real units) — far below T_exp,
/// and `x − x̄` cannot wrap for inputs in the domain.
pub fn mask_value(fp: nectar_math::FixedPoint) -> f64 {
    -(((fp.l() - 4 - fp.f()) as f64).exp2())
}
/// Re-export for documentation: see [`mask_value`].
pub const MASK_VALUE: &str = "−2^(l−4−f)";

/// Softmax over each row of a row-major `rows × cols` matrix; `mask[i] = true` excludes entry i.
pub fn softmax<B: Backend>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    mask: Option<&[bool]>,
    p: &SoftmaxParams,
) -> Result<B::Val, NnError> {
    if (cols as f64) >= (p.recip.hi as f64).exp2() || p.recip.lo > 0 {
        return Err(NnError::BadArgument(format!(
            "softmax rows of {cols} need a reciprocal domain containing [1, {cols}]"
        )));
    }
    softmax_with(
        b,
        x,
        rows,
        cols,
        mask,
        |b, d| exp_neg(b, d, &p.exp),
        |b, s| reciprocal(b, s, &p.recip),
    )
}

/// The softmax composition (max, subtract, exp, row sum, one reciprocal per row, product)
/// with the exponential and the reciprocal given: `exp` receives `x − max ≤ 0` (masked entries
/// at [`mask_value`]) and must return 0 far left; `recip` receives the row sums, in `[1, cols]`
/// (East Alg. 3 is this composition with OPPE exp and the Determine reciprocal).
pub fn softmax_with<B, E, R>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    mask: Option<&[bool]>,
    exp: E,
    recip: R,
) -> Result<B::Val, NnError>
where
    B: Backend,
    E: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
    R: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
{
    let n = b.len(x);
    if cols == 0 || rows.checked_mul(cols) != Some(n) {
        return Err(NnError::Length { op: "softmax shape", a: n, b: rows.saturating_mul(cols) });
    }
    let x = match mask {
        None => x.clone(),
        Some(m) => {
            if m.len() != n {
                return Err(NnError::Length { op: "softmax mask", a: m.len(), b: n });
            }
            let keep: Vec<u64> = m.iter().map(|&z| (!z) as u64).collect();
            let neg = enc(b, mask_value(b.format()))?;
            let add: Vec<u64> = m.iter().map(|&z| if z { neg } else { 0 }).collect();
            let kept = b.mul_const(x, &keep, 0)?;
            b.add_const(&kept, &add)?
        }
    };
    let m = max_rows(b, &x, rows, cols)?;
    let mb = broadcast_rows(b, &m, rows, cols)?;
    let d = b.sub(&x, &mb)?;
    let e = exp(b, &d)?;
    let s = b.sum_groups(&e, cols)?;
    let r = recip(b, &s)?;
    let rb = broadcast_rows(b, &r, rows, cols)?;
    b.mul(&e, &rb)
}

/// Reference softmax in f64 (masked entries get probability 0; a fully masked row is uniform).
pub fn softmax_f64(x: &[f64], cols: usize, mask: Option<&[bool]>) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for (r, row) in x.chunks(cols).enumerate() {
        let masked = |i: usize| mask.map(|m| m[r * cols + i]).unwrap_or(false);
        let all = (0..row.len()).all(masked);
        let mx = row
            .iter()
            .enumerate()
            .filter(|(i, _)| all || !masked(*i))
            .map(|(_, &v)| v)
            .fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = row
            .iter()
            .enumerate()
            .map(|(i, &v)| if all { 1.0 } else if masked(i) { 0.0 } else { (v - mx).exp() })
            .collect();
        let s: f64 = e.iter().sum();
        out.extend(e.iter().map(|v| v / s));
    }
    out
}
