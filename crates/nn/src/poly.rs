//! Shared building blocks of the piecewise-polynomial operators (BumbleBee §V-A, Alg. 3):
//! one-truncation linear combinations of powers, batched selection by muxes, the comparison
//! mode, and the headroom checks that keep every pre-truncation value inside the ring.

use crate::backend::{enc_scaled, Backend};
use crate::NnError;
use nectar_math::FixedPoint;

/// How branch-selection comparisons are run (AGREEMENT: shapes the transcript).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum LessMode {
    /// Exact `1{x < t}` (MSB of `x − t` on all `l` bits).
    Exact,
    /// BumbleBee's approximate less-than (§V-A1): ignore the low `f − precision` bits, i.e. the
    /// comparison is made on a grid of `2^−precision`. The artifact uses `precision = 4`
    /// (OBB config `approx_less_precision`; with l = 64, f = 18 a 50-bit MSB, as in §VII).
    Approx { precision: u32 },
}

/// Distance from a pivot within which an approximate comparison may pick either side: the
/// comparison ignores the low `f − 4` bits, i.e. 2^−4 in real terms.
pub const PIVOT_GAP: f64 = 1.0 / 16.0;

/// BumbleBee's default: approximate less-than at precision 4 (REFERENCE.md §2.4, AGREEMENT).
pub const BUMBLEBEE_LESS: LessMode = LessMode::Approx { precision: 4 };

impl LessMode {
    /// The `ignore_low_bits` argument of [`Backend::less_than_const`] in format `fp`.
    pub fn ignore_bits(&self, fp: FixedPoint) -> u32 {
        match *self {
            LessMode::Exact => 0,
            LessMode::Approx { precision } => fp.f().saturating_sub(precision),
        }
    }
}

/// `1{x < t_j}` for real thresholds `t_j`, compared in the smaller ring `Z_{2^cmp_l}` at the
/// current `f` (nectar, issue 17): the shares are reduced locally (`x mod 2^cmp_l` is a sharing
/// of `x` whenever `|x| < 2^(cmp_l − 1 − f)`), so the millionaire runs on `cmp_l − 1 − k` bits
/// instead of `l − 1 − k` (`k` = `less`'s ignored bits in that format); the bits are
/// ring-free. Exact (as `less`) for `|x − t_j| < 2^(cmp_l − 1 − f)`; `cmp_l` is a public
/// function of the caller's input domain (AGREEMENT). The backend's format is restored on
/// every path; `cmp_l` must be narrower than the current ring.
pub fn less_than_in_ring<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    cmp_l: u32,
    thresholds: &[f64],
    less: LessMode,
) -> Result<Vec<B::Bit>, NnError> {
    let fp = b.format();
    if cmp_l >= fp.l() {
        return Err(NnError::BadArgument(format!(
            "comparison ring Z_2^{cmp_l} is not narrower than Z_2^{}",
            fp.l()
        )));
    }
    let cmp = FixedPoint::new(cmp_l, fp.f())
        .map_err(|e| NnError::BadArgument(format!("comparison ring Z_2^{cmp_l}: {e}")))?;
    let xr = b.reduce(x, cmp_l)?;
    b.set_format(cmp);
    let bits = (|| {
        let th = thresholds.iter().map(|&t| crate::backend::enc(b, t)).collect::<Result<Vec<_>, _>>()?;
        b.less_than_const(&xr, &th, less.ignore_bits(cmp))
    })();
    b.set_format(fp);
    bits
}

/// `Σ_k c_k · p_k + c0` with a single truncation: the `p_k` are at scale `f`, each `c_k` is
/// encoded at scale `f + s` (local products), `c0` at scale `2f + s`, and the sum is truncated
/// by `f + s` (Alg. 3 step 2 with `s` extra coefficient bits; the paper's `s = 0` encodes small
/// coefficients such as `b6 ≈ 1.8e−3` with only ~9 significant bits at f = 18).
/// Cost: one truncation of `n` elements. Error: the truncation's (≤ 1 LSB) plus coefficient
/// rounding `Σ |p_k| · 2^−(f+s+1)`.
pub fn lin_comb<B: Backend + ?Sized>(
    b: &mut B,
    terms: &[(&B::Val, f64)],
    c0: f64,
    s: u32,
) -> Result<B::Val, NnError> {
    let f = b.format().f();
    let (first, rest) = terms
        .split_first()
        .ok_or_else(|| NnError::BadArgument("lin_comb needs at least one term".into()))?;
    let c = enc_scaled(b, first.1, f + s)?;
    let mut acc = b.mul_const(first.0, &[c], 0)?;
    for (p, ck) in rest {
        let c = enc_scaled(b, *ck, f + s)?;
        let t = b.mul_const(p, &[c], 0)?;
        acc = b.add(&acc, &t)?;
    }
    let k = enc_scaled(b, c0, 2 * f + s)?;
    acc = b.add_const(&acc, &[k])?;
    b.trunc(&acc, f + s)
}

/// The extra coefficient bits `s` such that a combination of magnitude `< 2^max_log2` at scale
/// `2f + s` stays below `2^(l−2)` (the truncation's positive-heuristic bound), capped at 16.
pub fn extra_bits(fp: FixedPoint, max_log2: u32) -> u32 {
    (fp.l() as i64 - 2 - 2 * fp.f() as i64 - max_log2 as i64).clamp(0, 16) as u32
}

/// Check that a power of magnitude `< 2^max_log2` computed by a fixed-point product (scale `2f`
/// before truncation) fits below `2^(l−2)`.
pub fn check_headroom(op: &'static str, fp: FixedPoint, max_log2: u32) -> Result<(), NnError> {
    if 2 * fp.f() + max_log2 + 2 > fp.l() {
        return Err(NnError::FormatTooNarrow {
            op,
            l: fp.l(),
            f: fp.f(),
            why: format!("needs 2f + {max_log2} + 2 <= l bits for its largest power before truncation"),
        });
    }
    Ok(())
}

/// `Σ_i sel_i ? v_i : 0` with a single (batched) mux call over all pairs.
pub fn select_sum<B: Backend + ?Sized>(b: &mut B, sel: &[&B::Bit], vals: &[&B::Val]) -> Result<B::Val, NnError> {
    if sel.len() != vals.len() || sel.is_empty() {
        return Err(NnError::Length { op: "select_sum", a: sel.len(), b: vals.len() });
    }
    let n = b.len(vals[0]);
    let bits = b.concat_bits(sel)?;
    let vs = b.concat(vals)?;
    let m = b.mux(&bits, &vs)?;
    let mut acc = b.gather(&m, &(0..n).collect::<Vec<_>>())?;
    for i in 1..vals.len() {
        let part = b.gather(&m, &(i * n..(i + 1) * n).collect::<Vec<_>>())?;
        acc = b.add(&acc, &part)?;
    }
    Ok(acc)
}

/// The three bit vectors of a 3-threshold [`Backend::less_than_const`] call, checked.
pub fn take3<B: Backend + ?Sized>(b: &B, bits: Vec<B::Bit>, n: usize) -> Result<[B::Bit; 3], NnError> {
    let mut it = bits.into_iter();
    match (it.next(), it.next(), it.next(), it.next()) {
        (Some(a), Some(c), Some(d), None) if b.bit_len(&a) == n => Ok([a, c, d]),
        _ => Err(NnError::BadArgument("expected three comparison bit vectors".into())),
    }
}
