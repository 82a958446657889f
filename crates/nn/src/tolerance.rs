//! Twin-vs-secure error bounds of the secure operators, in raw LSB of the (64, 18) output
//! ([`nectar_math::FixedPoint::BUMBLEBEE`]), derived from the primitives' stated errors (the
//! [`crate::Backend`] docs): trunc {0, −1}; a product is the ring product (exact by OT,
//! {0, ±1} by bOLEe) then trunc, so |ε_mul| ≤ 2. The bounds propagate these through each
//! operator (inputs exact; `|x|` the segment bound); mixed variants add the entering
//! truncation (δ ∈ {0, −1} LSB' of the input) and scale by 2^(f − f').
//!
//! Operators that select a segment by an *approximate* comparison (Seg4GeLU, P4, SiLU, the
//! exp and ELU clips: BumbleBee's MSB ignores low bits) may legitimately pick the
//! neighbouring segment within [`PIVOT_GAP`] of a pivot; the LSB bounds hold off the pivots,
//! and at the pivots only the f64 bound (approximation error + segment jump) applies.
//!
//! `crates/nn/tests/secure_ops.rs` asserts every bound on the secure backend, and
//! `nectar bench nn` reports each run against them.

use crate::lut::{reciprocal_table, ActLut, ExpLut};
use crate::oppe::OppeTable;
use crate::reciprocal::{determine_reciprocal, DETERMINE_DELTA};
use crate::NnError;

/// The GeLU protocols' bounds live with them ([`crate::gelu`]).
pub use crate::gelu::{p4::P4_MIXED_TOL, p4::P4_TOL, p7::P7_TOL, seg4::SEG4_MIXED_TOL, seg4::SEG4_TOL, sq8::SQ8_TOL};
/// The SiLU protocols' bounds live with them ([`crate::silu`]).
pub use crate::silu::seg4::{SILU_MIXED_TOL, SILU_TOL};
/// The exponential's bounds live with it ([`crate::exp`]).
pub use crate::exp::taylor::{EXP_MIXED_TOL, EXP_TOL};

/// (Defined with the comparison modes, [`crate::poly`].)
pub use crate::poly::PIVOT_GAP;

/// `exp = taylor2` (n = 5): at scale g = f + n, e_0 ≤ 2 (the u²/2 square), e_{k+1} ≤ 2·e_k + 2
/// over the n − 1 squarings at scale g (y ≤ 1): 4·2^(n−1) − 2 = 62 LSB_g; the last squaring
/// (truncating to scale f): 2·62·2^−n + 2 → 6 LSB.
pub const EXP_TAYLOR2_TOL: i64 = 6;

/// `exp = taylor2` in any format `fp` (the general form of [`EXP_TAYLOR2_TOL`], which it equals
/// at (64, 18)): at the squarings' scale `g` ([`crate::exp::taylor2_scale`]), u's
/// pre-truncation (when `g < f + n`) adds 1 LSB_g to u and `|u|·1` to `u²/2`, so
/// `e_0 ≤ 2 (+ 1 + |u|)`; `e_{k+1} ≤ 2·e_k + 2` over the `n − 1` squarings (y ≤ 1); the last
/// one, truncating to scale f: `2·e_{n−1}·2^(f − g) + 2` LSB. At (45, 18) (g = 21): 24.
pub fn exp_taylor2_tol(fp: nectar_math::FixedPoint, p: &crate::exp::ExpParams) -> Result<i64, NnError> {
    let g = crate::exp::taylor2_scale(fp, p)?;
    let u_max = -p.t_exp / (p.n as f64).exp2();
    let e0 = if g < fp.f() + p.n { 3.0 + u_max } else { 2.0 };
    let chain = (p.n as f64 - 1.0).exp2() * e0 + ((p.n as f64).exp2() - 2.0);
    Ok((2.0 * chain * (fp.f() as f64 - g as f64).exp2() + 2.0).ceil() as i64)
}
/// `exp = taylor4` ([`crate::exp::exp_neg_taylor4`]) in format `fp`, in LSB of the output:
/// at the base's scale g, u's pre-truncation δ ∈ {0, 1}; a square's own ±2 plus twice its
/// input's error times the input: `u²` 2 + 2|u|δ, `v = u² + 2u + 4` e(u²) + 2δ, `v²`
/// 2 + 2·v_max·e(v) (v ≤ 4); the base `(v² + 8u + 8)/24` `(e(v²) + 8δ)/24 + 1` (its
/// truncation); shifted to scale h (×2^(h−g)); `e_{k+1} ≤ 2e_k + 2` over the n − 1 squarings
/// at h; the last one, truncating to scale f, `2·e·2^(f−h) + 2`. (64, 18): 6 LSB; (45, 18): 20.
pub fn exp_taylor4_tol(fp: nectar_math::FixedPoint, p: &crate::exp::ExpParams) -> Result<i64, NnError> {
    let (g, h) = crate::exp::taylor4_scales(fp, p)?;
    let u = (-p.t_exp + PIVOT_GAP) / (p.n as f64).exp2();
    let v_max = ((u - 1.0) * (u - 1.0) + 3.0).max(4.0);
    let d = if g < fp.f() + p.n { 1.0 } else { 0.0 };
    let e2 = 2.0 + 2.0 * u * d;
    let ev = e2 + 2.0 * d;
    let ev2 = 2.0 + 2.0 * v_max * ev;
    let y = ((ev2 + 8.0 * d) / 24.0 + 1.0) * ((h - g) as f64).exp2();
    let chain = (p.n as f64 - 1.0).exp2() * y + ((p.n as f64).exp2() - 2.0);
    Ok((2.0 * chain * (fp.f() as f64 - h as f64).exp2() + 2.0).ceil() as i64)
}
/// ELU (α = 1): the unclipped exp's 190 + the α product's truncation.
pub const ELU_TOL: i64 = EXP_TOL + 2;
/// Reciprocal: Newton's map has zero derivative at the fixed point, so only the last step's
/// rounding survives: c·y (2) times y ≤ 2 (4) + the product (2) ≤ 6, times 2^−e ≤ 1, + the
/// final product (2) → 8.
pub const RECIP_TOL: i64 = 8;
/// rsqrt for x ≥ 1 (2^−e ≤ 1). Until issue 48 the last Newton step was y(1.5 − (u/2)y²): y² 2,
/// (u/2)·y² 2 + 1, times y ≤ 2: 10, + 2 → 12, times 2^−e ≤ 1, + 2 → 14. Since then the step
/// runs at 6 more fractional bits on `z = (2/3)^k·y` ([`crate::rsqrt::rsqrt`]): `z²` and `v·z`
/// ≤ 2 fine LSB each, their product `≤ 2 + 0.8·2 + 0.4·2 ≈ 5` fine LSB on `z`, times
/// `1.5^3·2^−e ≤ 3.4`: ≈ 17 fine LSB = 0.3 LSB, + the final product's 2 — the bound of 14 is
/// kept (measured: secure_ops' rsqrt and LayerNorm twins stay within it).
pub const RSQRT_TOL: i64 = 14;
/// LayerNorm / RMSNorm on rows with variance ≳ 0.1: x − μ 1 (one truncation), the variance's
/// error ≤ 2 + 1 + 1 LSB gives a relative error ≤ 4·2^−18/0.1 in var, i.e. ≤ 2^−15 in rsqrt,
/// which on outputs |q·r·γ| ≤ 6 is ≤ 12 LSB; rsqrt's own 14, the products q·r and ·γ (2 + 2·1.5)
/// and |q|·14·γ/… bound the rest: 64 (measured ≤ 8).
pub const NORM_TOL: i64 = 64;

/// [`NORM_TOL`] with an rsqrt whose own bound is `rsqrt_tol` LSB instead of [`RSQRT_TOL`]: the
/// excess reaches the outputs times `|q|·γ ≤ 6`.
pub fn norm_tol(rsqrt_tol: i64) -> i64 {
    NORM_TOL + 6 * (rsqrt_tol - RSQRT_TOL).max(0)
}

/// Twin-vs-secure tolerance of an OPPE table (exact comparisons, so both pick the same piece):
/// `x²` by Π_square is within ±2 LSB, `x³ = mul(x², x)` within `|x|·2 + 2` (the product's own
/// ±2 plus `x` times the error of `x²`); each enters the selected polynomial times its
/// coefficient; +1 for the final truncation and +1 for the coefficient rounding.
pub fn oppe_tol(t: &OppeTable) -> i64 {
    let r = t.domain[0].abs().max(t.domain[1].abs());
    let mut err = vec![0.0, 0.0, 2.0];
    for j in 3..=t.degree() {
        let prev: f64 = err[j - 1];
        err.push(2.0 + r * prev + 2.0 * r.powi(j as i32 - 2));
    }
    let worst = t
        .coeffs
        .iter()
        .map(|c| c.iter().enumerate().skip(2).map(|(j, ck)| ck.abs() * err[j]).sum::<f64>())
        .fold(0.0, f64::max);
    worst.ceil() as i64 + 2
}

/// OPPE under mixed bit-width ([`crate::oppe::OPPE_ACT`], f' = 10): the entering truncation
/// (δ ≤ 1 LSB') times the slope of the function (≤ 2 for every committed table: GELU ≤ 1.13,
/// SiLU ≤ 1.1, exp and tanh ≤ 1), plus [`oppe_tol`] in LSB' (the bound is in LSB of whatever
/// scale the powers are taken at), + 1 for the extension back; times 2^(f − f') = 2^8.
pub fn oppe_mixed_tol(t: &OppeTable) -> i64 {
    (2 + oppe_tol(t) + 1) << 8
}

/// The fixed-point twin of an OPPE table under mixed bit-width against the table's f64
/// polynomial, in reals: the entering truncation leaves `x` within δ ≤ 1 LSB' = 2^−f' below
/// its value; each power `x^k = ⌊x^(k−1)·x⌋` then carries `e_k ≤ r·e_(k−1) + r^(k−1)·e_1 + 1`
/// LSB' (`e_1 = 1`, `r` the domain bound); the selected piece sums `Σ_j |c_j|·e_j`, plus its
/// final truncation (1) and the coefficients' rounding (1).
pub fn oppe_mixed_twin_error(t: &OppeTable) -> f64 {
    let r = t.domain[0].abs().max(t.domain[1].abs());
    let mut e = vec![0.0, 1.0];
    for k in 2..=t.degree() {
        e.push(r * e[k - 1] + r.powi(k as i32 - 1) + 1.0);
    }
    let worst = t
        .coeffs
        .iter()
        .map(|c| c.iter().enumerate().skip(1).map(|(j, cj)| cj.abs() * e[j]).sum::<f64>())
        .fold(0.0, f64::max);
    (worst + 2.0) / (crate::oppe::OPPE_ACT.1 as f64).exp2()
}

/// East's Newton reciprocal with Determine on `[a, b]`: `t` iterations of two products, each
/// ±2 LSB, contracting (|1 − x·y| < 1), so the twin–secure gap stays within `4t` LSB.
pub fn determine_tol(a: f64, b: f64) -> Result<i64, NnError> {
    Ok(4 * determine_reciprocal(a, b, DETERMINE_DELTA)?.iters as i64)
}

/// A softmax composition (row max, exp of the differences, sum, reciprocal, products): three
/// times the larger of its exp's and its reciprocal's bounds (|Δp_i| ≤ (|Δe_i| + p_i·|Δs|)/s
/// with s ≥ 1 and p_i ≤ 1, as asserted for BumbleBee's and East's softmax).
pub fn softmax_tol(exp_tol: i64, recip_tol: i64) -> i64 {
    3 * exp_tol.max(recip_tol)
}

/// Max |Δp| of the narrow softmax with `exp = taylor4` against f64 softmax, for row sums
/// `s ≥ e^−1/2` (the coarse max's shift): taylor4's 7.5e−5 absolute exp error over `s`, plus
/// `p_i·|Δs|/s` where `|Δs|` sums the same error over the row's few large terms (the
/// composition's tests assert it on random, tied and masked rows).
pub const COARSE_SOFTMAX_F64: f64 = 5e-4;

/// `softmax = coarse`: the secure max tree may keep another element than the twin's (both
/// within the slack of the row maximum, `crate::max::CoarseCompare`), so the two evaluate the
/// same approximate softmax at different shifts; each is within [`COARSE_SOFTMAX_F64`] of the
/// true softmax, so they differ by at most the narrow composition's bound plus twice that.
/// On inputs where the coarse comparisons are exact (values on the `2^−p` grid) the narrow
/// bound alone holds.
pub fn coarse_softmax_tol(narrow_tol: i64, f: u32) -> i64 {
    narrow_tol + 2 * (COARSE_SOFTMAX_F64 * (f as f64).exp2()).ceil() as i64
}

/// A LUT activation ([`crate::lut::lut_activation`]) at `f` fractional bits: the secure index
/// may be one below the twin's (the carry of the local shift), and both segments' lines are
/// within [`ActLut::max_error`] of the function, so the two outputs differ by at most twice
/// that; plus the product `a·x` (2), the rounding of the two table entries (1) and 1.
pub fn lut_act_tol(p: &ActLut, f: u32) -> i64 {
    (2.0 * p.max_error() * (f as f64).exp2()).ceil() as i64 + 4
}

/// The LUT exp ([`crate::lut::exp_lut`]) at `f >= L`: the truncation to `L` fractional bits
/// (twin `⌊u⌋ + 1`, secure that or one less: one unit of 2^−L in the exponent, a relative
/// 2^−L of an output ≤ 1, i.e. 2^(f−L) LSB), the product of the two halves (2) and the
/// rounding of the table entries (2).
pub fn exp_lut_tol(p: &ExpLut, f: u32) -> i64 {
    (1i64 << f.saturating_sub(p.frac_bits)) + 4
}

/// The LUT reciprocal ([`crate::lut::reciprocal_lut`]) on `[1, hi]`: twin and secure may start
/// from neighbouring table entries; both end within δ of `1/x` (f64), so within 2δ·2^f of each
/// other, plus `4t` LSB of fixed-point rounding over `t` Newton steps (as [`determine_tol`]).
pub fn reciprocal_lut_tol(hi: f64, f: u32) -> Result<i64, NnError> {
    let (_, _, _, t) = reciprocal_table(hi)?;
    Ok((2.0 * DETERMINE_DELTA * (f as f64).exp2()).ceil() as i64 + 4 * t as i64)
}

/// East's LayerNorm / RMSNorm by Eq. (9) ([`crate::layernorm::layernorm_east`]) for rows with
/// variance ≥ `var_lo` and `|γ| ≤ gamma`: the one truncation of `z = n·x − Σx` ({0, −1} LSB)
/// reaches the output times `η·√n·γ = 2^k·γ/(n·√Var) ≤ 1.34·γ/√Var` (`2^k/n < 4/3` for the row
/// lengths of real models), plus the two products' ±2 LSB each, the Newton rounding at `f + 6`
/// bits (below 1 LSB) and 2 of slack.
pub fn east_norm_tol(var_lo: f64, gamma: f64) -> i64 {
    (1.34 / var_lo.sqrt() * gamma).ceil() as i64 + 8
}

/// The Determine rsqrt ([`crate::rsqrt::rsqrt_determine`]) on `[a, b]`: `t` steps of three
/// products, each ±2 LSB, contracting (the map has zero derivative at the fixed point):
/// within `6t` LSB.
pub fn rsqrt_determine_tol(a: f64, b: f64) -> Result<i64, NnError> {
    Ok(6 * crate::rsqrt::determine_rsqrt(a, b, crate::rsqrt::DETERMINE_RSQRT_DELTA)?.iters as i64)
}
