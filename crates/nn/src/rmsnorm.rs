//! RMSNorm `y = γ ⊙ x / √(mean(x²) + ε)` per row (LLaMA), with the rsqrt of [`crate::rsqrt`].
//! Cost on rows × cols: square rows·cols, trunc rows, rsqrt on `rows` elements, mul 2·rows·cols.
//! Domain: `mean(x²) + ε ∈ [2^−18, 2^18)` at (64, 18), and `|x| < 2^13` (the square's ring).
//!
//! Models with "massive activations" (SmolLM2: residual entries up to 2.5e4, `mean(x²)` up to
//! 1.1e6 from its 12th layer on) exceed both; RMSNorm is scale-invariant, so the statistics may
//! be taken of `x·2^−k` (one truncation) with `ε·4^−k`, giving `r' = 2^k·r`, and `γ·2^−k` then
//! restores `y = x·r·γ` exactly. `k` is public per call site (see `stats_shift`).

use crate::backend::{enc, Backend};
use crate::layernorm::{check_rows, div_n, LayerNormParams};
use crate::max::{broadcast_rows, tile_cols};
use crate::rsqrt::rsqrt;
use crate::NnError;

/// RMSNorm of each row (`p.eps` is the model's ε, e.g. 1e−6 for LLaMA — rounded to the format).
pub fn rmsnorm<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    gamma: &B::Val,
    p: &LayerNormParams,
) -> Result<B::Val, NnError> {
    rmsnorm_with(b, x, rows, cols, gamma, p.eps, 0, |b, v| rsqrt(b, v, &p.rsqrt, &crate::rsqrt::BY_FOUR))
}

/// [`rmsnorm`] with the reciprocal square root given (`rsqrt` receives `mean(x²) + ε`; the norm
/// protocols pass the suite's, [`crate::norm`]) and the statistics of `x·2^−shift` (the caller
/// passes `ε·4^−shift` and `γ·2^−shift`; module docs).
#[allow(clippy::too_many_arguments)]
pub fn rmsnorm_with<B, R>(b: &mut B, x: &B::Val, rows: usize, cols: usize, gamma: &B::Val, eps: f64, shift: u32, rsqrt: R) -> Result<B::Val, NnError>
where
    B: Backend + ?Sized,
    R: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
{
    let r = rms_rsqrt(b, x, rows, cols, eps, shift, rsqrt)?;
    let rb = broadcast_rows(b, &r, rows, cols)?;
    let g = tile_cols(b, gamma, rows, cols)?;
    let y = b.mul(x, &rb)?;
    b.mul(&y, &g)
}

/// The statistics part of [`rmsnorm`]: `r = 1/√(mean(x²) + ε)`, one per row (`y = x·r·γ` is
/// left to the caller, as for [`crate::layernorm::centre_and_rsqrt`]); with `shift = k > 0`, of
/// `x·2^−k` (module docs).
pub fn rms_rsqrt<B, R>(b: &mut B, x: &B::Val, rows: usize, cols: usize, eps: f64, shift: u32, rsqrt: R) -> Result<B::Val, NnError>
where
    B: Backend + ?Sized,
    R: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
{
    check_rows(b, x, rows, cols)?;
    let x2 = if shift > 0 {
        let xs = b.trunc(x, shift)?;
        b.square(&xs)?
    } else {
        b.square(x)?
    };
    let ss = b.sum_groups(&x2, cols)?;
    let ms = div_n(b, &ss, cols)?;
    let ve = b.add_const(&ms, &[enc(b, eps)?])?;
    rsqrt(b, &ve)
}

/// Reference RMSNorm in f64.
pub fn rmsnorm_f64(x: &[f64], cols: usize, gamma: &[f64], eps: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let ms = row.iter().map(|v| v * v).sum::<f64>() / row.len() as f64;
        let r = 1.0 / (ms + eps).sqrt();
        out.extend(row.iter().enumerate().map(|(i, v)| v * r * gamma[i]));
    }
    out
}
