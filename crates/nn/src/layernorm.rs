//! LayerNorm `y = γ ⊙ (x − μ) / √(Var + ε) + β` per row (BumbleBee §II-C with the model's
//! definition; order as BLB App. B Alg. 3; REFERENCE.md §3.6).
//!
//! To make a constant row exact, the centring is done without a division first (East §4.2):
//! `z = n·x − Σx` (local, exact), then `q = z · (1/n)` with one truncation and the constant `1/n`
//! at `f + 8` bits — so `q` is exactly 0 when the row is constant (twin; the secure truncation
//! of a zero may give −1 LSB). Then `Var = Σ q² / n`, `r = rsqrt(Var + ε)`, `y = q·r·γ + β`.
//!
//! **Constant rows (Var = 0)**: `q = 0`, `r = rsqrt(ε)`, so `y = β` exactly in the twin
//! (±2 LSB in the secure backend). Tested.
//! `γ`, `β` are `Val`s of length `cols` (server weights enter as shares; public ones via
//! [`Backend::constant`]). Domain: `|x − μ| < 2^9` and `Var + ε ∈ [2^−18, 2^18)` at (64, 18)
//! (see [`crate::rsqrt::RSQRT_LAYERNORM`]).
//! Cost on rows × cols: trunc 2·rows·cols + rows, square rows·cols, rsqrt on `rows` elements,
//! mul 2·rows·cols.

use crate::backend::{enc, enc_scaled, int, Backend};
use crate::max::{broadcast_rows, tile_cols};
use crate::rsqrt::{rsqrt, rsqrt_determine, RsqrtParams, BY_FOUR, RSQRT_LAYERNORM};
use crate::NnError;
use nectar_math::FixedPoint;

/// LayerNorm parameters (AGREEMENT, except ε which is the model's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerNormParams {
    pub eps: f64,
    pub rsqrt: RsqrtParams,
}

/// BERT/GPT-2's ε = 1e−5 (≥ 2^−17, inside the rsqrt domain).
pub const LAYERNORM_DEFAULT: LayerNormParams = LayerNormParams { eps: 1e-5, rsqrt: RSQRT_LAYERNORM };

/// Extra fractional bits of the constant `1/n` (AGREEMENT).
pub(crate) const INV_N_EXTRA: u32 = 8;

pub(crate) fn check_rows<B: Backend + ?Sized>(b: &B, x: &B::Val, rows: usize, cols: usize) -> Result<(), NnError> {
    if cols == 0 || rows.checked_mul(cols) != Some(b.len(x)) {
        return Err(NnError::Length { op: "row shape", a: b.len(x), b: rows.saturating_mul(cols) });
    }
    Ok(())
}

/// `v · (1/n)` with the constant at `f + INV_N_EXTRA` bits and one truncation.
pub(crate) fn div_n<B: Backend + ?Sized>(b: &mut B, v: &B::Val, n: usize) -> Result<B::Val, NnError> {
    let sh = b.format().f() + INV_N_EXTRA;
    let c = enc_scaled(b, 1.0 / n as f64, sh)?;
    b.mul_const(v, &[c], sh)
}

/// LayerNorm of each row of a row-major `rows × cols` matrix.
pub fn layernorm<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    gamma: &B::Val,
    beta: &B::Val,
    p: &LayerNormParams,
) -> Result<B::Val, NnError> {
    layernorm_with(b, x, rows, cols, gamma, beta, p.eps, |b, v| rsqrt(b, v, &p.rsqrt, &BY_FOUR))
}

/// [`layernorm`] with the reciprocal square root of the variances given (`rsqrt` receives
/// `Var + ε`; the norm protocols pass the suite's, [`crate::norm`]).
#[allow(clippy::too_many_arguments)]
pub fn layernorm_with<B, R>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    gamma: &B::Val,
    beta: &B::Val,
    eps: f64,
    rsqrt: R,
) -> Result<B::Val, NnError>
where
    B: Backend + ?Sized,
    R: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
{
    let (q, r) = centre_and_rsqrt(b, x, rows, cols, eps, rsqrt)?;
    let rb = broadcast_rows(b, &r, rows, cols)?;
    let g = tile_cols(b, gamma, rows, cols)?;
    let be = tile_cols(b, beta, rows, cols)?;
    let y = b.mul(&q, &rb)?;
    let y = b.mul(&y, &g)?;
    b.add(&y, &be)
}

/// The statistics part of [`layernorm`]: `q = x − μ` (`rows × cols`) and `r = 1/√(Var + ε)`
/// (one per row); `y = q·r·γ + β` is left to the caller (the model's `norm = outer` forms
/// `r ⊗ γ` with one OLT against the server's `γ` instead of a second product).
pub fn centre_and_rsqrt<B, R>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    eps: f64,
    rsqrt: R,
) -> Result<(B::Val, B::Val), NnError>
where
    B: Backend + ?Sized,
    R: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
{
    check_rows(b, x, rows, cols)?;
    let s = b.sum_groups(x, cols)?;
    let sb = broadcast_rows(b, &s, rows, cols)?;
    let nx = b.mul_const(x, &[int(b, cols as i64)], 0)?;
    let z = b.sub(&nx, &sb)?; // n·(x − μ), exact
    let q = div_n(b, &z, cols)?; // x − μ
    let q2 = b.square(&q)?;
    let ss = b.sum_groups(&q2, cols)?;
    let var = div_n(b, &ss, cols)?;
    let ve = b.add_const(&var, &[enc(b, eps)?])?;
    let r = rsqrt(b, &ve)?;
    Ok((q, r))
}

/// Reference LayerNorm in f64.
pub fn layernorm_f64(x: &[f64], cols: usize, gamma: &[f64], beta: &[f64], eps: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let n = row.len() as f64;
        let mu = row.iter().sum::<f64>() / n;
        let var = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / n;
        let r = 1.0 / (var + eps).sqrt();
        out.extend(row.iter().enumerate().map(|(i, v)| (v - mu) * r * gamma[i] + beta[i]));
    }
    out
}

/// East's LayerNorm (§4.2, Eq. (9), Alg. 4) parameters (AGREEMENT, except ε, the model's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EastNormParams {
    pub eps: f64,
    /// The row variances the Determine rsqrt is tuned for: `Var ∈ [var_lo, var_hi]`.
    pub var_lo: f64,
    pub var_hi: f64,
}

/// Variances `[2^−10, 2^12]` (the embedding LayerNorm's rows of small word vectors are near the
/// low end, residual streams with outlier features near the high end; MiniLM is tested end to
/// end); outside it the Newton steps have not converged (documented domain).
pub const EAST_NORM_DEFAULT: EastNormParams = EastNormParams { eps: 1e-5, var_lo: 1.0 / 1024.0, var_hi: 4096.0 };

/// Extra fractional bits of East's InvSqrt (AGREEMENT): `s` spans `c·[var_lo, var_hi]`, a factor
/// 2^22, and both `s` and `η = s^−½` need 12 significant bits, more than `f = 18` gives at both
/// ends; the sum of squares and the Newton steps therefore run at `f + 6` fractional bits
/// (the largest product, `s·y ≤ √(3·c·var_hi) < 2^11`, stays below 2^61 at l = 64).
pub const EAST_NORM_EXTRA_BITS: u32 = 6;

/// East's scaling of a row of `cols` (LayerNorm: `layer`): the public `2^k ≥ n` that `z = n·x −
/// Σx` is divided by, and `c` with `Σ z'² = c·Var` (LayerNorm: `c = n³/4^k`; RMSNorm: `k = 0`,
/// `Σ x² = n·mean(x²)`, `c = n`).
pub fn east_scale(cols: usize, layer: bool) -> (u32, f64) {
    let n = cols as f64;
    match layer {
        true => {
            let k = usize::BITS - cols.saturating_sub(1).leading_zeros(); // 2^k >= n
            (k, n * n * n / 4f64.powi(k as i32))
        }
        false => (0, n),
    }
}

/// The range `[c·(var_lo + ε), c·var_hi]` East's InvSqrt is asked on for rows of `cols`, in
/// the format `(l, f + EAST_NORM_EXTRA_BITS)` ([`layernorm_east_with`]).
pub fn east_rsqrt_range(cols: usize, layer: bool, p: &EastNormParams) -> (f64, f64) {
    let c = east_scale(cols, layer).1;
    (c * (p.var_lo + p.eps), c * p.var_hi)
}

/// LayerNorm (`beta` given) or RMSNorm (`beta = None`) of each row by East's transform (§4.2,
/// Eq. (9), Alg. 4): no division. `z = n·x − Σx` (local, exact; RMSNorm: `z = x`), scaled down
/// by the public `2^k ≥ n` to keep `Σz²` inside the ring (East: "when the variance of the input
/// is large, we can proportionally reduce the input … according to the normalization
/// property"), `s = Σ z'² + c·ε` with `c = n³/4^k` (RMSNorm: `s = Σx² + n·ε`, `c = n`),
/// `η = InvSqrt(s)` by Newton with Determine on `[c·(var_lo + ε), c·var_hi]`
/// ([`crate::rsqrt::rsqrt_determine`], at [`EAST_NORM_EXTRA_BITS`] more fractional bits), then
/// `y = z'·(η·√n)·γ + β` (East folds `√n` into the server's `γ`; we fold it into the per-row
/// `η`, which costs nothing). `z'·η·√n = (x − μ)/√(Var + ε)`.
/// Error: the rsqrt's relative [`crate::rsqrt::DETERMINE_RSQRT_DELTA`] on `[var_lo, var_hi]`
/// (outside it the Newton steps have not converged), one truncation of `z`, products ±2 LSB.
#[allow(clippy::too_many_arguments)]
pub fn layernorm_east<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    gamma: &B::Val,
    beta: Option<&B::Val>,
    p: &EastNormParams,
) -> Result<B::Val, NnError> {
    layernorm_east_with(b, x, rows, cols, gamma, beta, p, |b, s, lo, hi| rsqrt_determine(b, s, lo, hi))
}

/// [`layernorm_east`] with East's `InvSqrt` given: `rsqrt(b, s, lo, hi)` receives the scaled
/// sums `s ∈ [lo, hi]` in the format `(l, f + EAST_NORM_EXTRA_BITS)` (the norm protocols pass
/// the suite's, [`crate::norm`]).
#[allow(clippy::too_many_arguments)]
pub fn layernorm_east_with<B, R>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    gamma: &B::Val,
    beta: Option<&B::Val>,
    p: &EastNormParams,
    rsqrt: R,
) -> Result<B::Val, NnError>
where
    B: Backend + ?Sized,
    R: FnOnce(&mut B, &B::Val, f64, f64) -> Result<B::Val, NnError>,
{
    check_rows(b, x, rows, cols)?;
    let fp = b.format();
    let (l, f) = (fp.l(), fp.f());
    let fe = f + EAST_NORM_EXTRA_BITS;
    let fine = FixedPoint::new(l, fe)?;
    let raw = FixedPoint::new(l, 1)?;
    let n = cols as f64;
    let (k, c) = east_scale(cols, beta.is_some());
    let z = match beta {
        Some(_) => {
            let s = b.sum_groups(x, cols)?;
            let sb = broadcast_rows(b, &s, rows, cols)?;
            let nx = b.mul_const(x, &[int(b, cols as i64)], 0)?;
            let z = b.sub(&nx, &sb)?; // n·(x − μ), exact
            b.trunc(&z, k)?
        }
        None => x.clone(),
    };
    b.set_format(raw);
    let z2 = b.square(&z);
    b.set_format(fp);
    let ss = b.sum_groups(&z2?, cols)?;
    let s = b.trunc(&ss, 2 * f - 1 - fe)?; // scale fe
    b.set_format(fine);
    let eta = (|| {
        let se = b.add_const(&s, &[enc(b, c * p.eps)?])?;
        let (lo, hi) = east_rsqrt_range(cols, beta.is_some(), p);
        let eta = rsqrt(b, &se, lo, hi)?;
        let fold = enc(b, n.sqrt())?;
        let eta = b.mul_const(&eta, &[fold], fe)?;
        let eb = broadcast_rows(b, &eta, rows, cols)?;
        b.mul(&z, &eb) // scale f + fe − fe = f
    })();
    b.set_format(fp);
    let y = eta?;
    let g = tile_cols(b, gamma, rows, cols)?;
    let y = b.mul(&y, &g)?;
    match beta {
        Some(beta) => {
            let be = tile_cols(b, beta, rows, cols)?;
            b.add(&y, &be)
        }
        None => Ok(y),
    }
}
