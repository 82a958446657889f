//! `norm = outer` (nectar, issue 17): BumbleBee's statistics and the suite's rsqrt, then
//! `y_ij = q_ij · (r ⊗ γ)_ij` — `r ⊗ γ` is the product of the shared column `r` and the server's
//! row `γ`, one OLT with the server's share term local ([`crate::Backend::outer_weight`]; OT
//! OLEs instead where their bits are fewer, as for a decoding step's single row), then one
//! element-wise product. BumbleBee's order, `(q ⊙ r)` then `⊙ γ`, takes two products of
//! `rows × cols`, the second with `γ` entering as a share; here `q`'s bOLEe query is the one
//! its square already sent (reused inside the operator), so the products cost one fresh query
//! and one response instead of three queries and two responses. RMSNorm keeps `r ⊗ γ` at
//! [`RMS_EXTRA_BITS`] more fractional bits ([`rms_apply`]). Runs on the model's engines (the
//! share-level backends hold no weights).

use super::{variance_range, NormCall, NormProtocol};
use crate::backend::DynBackend;
use crate::layernorm::{centre_and_rsqrt, LAYERNORM_DEFAULT};
use crate::max::tile_cols;
use crate::rmsnorm::rms_rsqrt;
use crate::rsqrt::{Rsqrt, RsqrtRange};
use crate::tolerance::norm_tol;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `norm = outer`.
pub struct Outer;

/// Fractional bits `r' ⊗ γ` keeps beyond the format in an RMSNorm (AGREEMENT: it sets both
/// truncations of [`rms_apply`]).
pub const RMS_EXTRA_BITS: u32 = 12;

/// `y = x ⊙ (r' ⊗ γ) · 2^−k` for RMSNorm's `r' = 2^k·r` (statistics of `x·2^−k`,
/// [`NormCall::stats_shift`]). `r' ⊗ γ` is formed with `γ` itself (not `γ·2^−k`, which loses
/// `k` of `γ`'s bits) and kept at `f + e` fractional bits (`e` = [`RMS_EXTRA_BITS`]: the OLT's
/// raw product truncated by `f − e`); the product with `x` is then truncated once by
/// `f + e + k`. Against `x ⊙ (r'·γ·2^−k)` at `f` bits this divides the error `x` picks up from
/// the rounded row by `2^(e + k)`: rows with massive activations (SmolLM2: `|x|` to 2.5e4,
/// `r ≈ 10^−3`) kept only 8–10 significant bits of `r·γ`, and their error reached every later
/// token through the attention (`twin_logits`: 0.21 of the 0.27 logit error on SmolLM2 was
/// RMSNorm's). Same messages and rounds; only the two truncations' shifts differ.
///
/// Bounds (the server checks them on its `γ` before the OLT; an error, not a wrap):
/// the OLT's raw product `|r'·γ|·2^2f < 2^49` (the narrow OLT ring's, [`OUTER_RAW_BITS`])
/// with `r' ≤ 1/√lo` of the rsqrt's domain; and `x ⊙ (r' ⊗ γ)` at `2f + e`, i.e.
/// `|y|·2^(k + 2f + e)` with `|y| ≤ √cols·max|γ|`, below `2^(l − 2)`.
fn rms_apply(b: &mut DynBackend<'_>, x: &Vec<u64>, s: &Vec<u64>, c: &NormCall<'_>, r: &RsqrtRange) -> Result<Vec<u64>, NnError> {
    let fp = b.format();
    let (f, k, e) = (fp.f(), c.stats_shift, RMS_EXTRA_BITS);
    if e > f || f + e + k + 2 > fp.l() {
        return Err(NnError::BadArgument(format!(
            "norm=outer's RMSNorm keeps {e} more fractional bits: it needs f ≥ {e} and f + {e} + k + 2 ≤ l, got {fp:?} with k = {k}"
        )));
    }
    if let Some(g) = c.gamma_server {
        let gmax = g.iter().map(|&v| fp.decode::<u64>(v).abs()).fold(0f64, f64::max);
        let r_max = 1.0 / r.lo.sqrt();
        let raw = (r_max * gmax).log2() + 2.0 * f as f64;
        let prod = ((c.cols as f64).sqrt() * gmax).log2() + (k + 2 * f + e) as f64;
        if raw >= OUTER_RAW_BITS as f64 || prod >= (fp.l() - 2) as f64 {
            return Err(NnError::BadArgument(format!(
                "RMSNorm γ up to {gmax:.3e} on rows of {}: r ⊗ γ (2^{raw:.1}) or its product (2^{prod:.1}) leaves the rings",
                c.cols
            )));
        }
    }
    let w = b.outer_weight(s, c.gamma_server, c.cols, f - e)?;
    b.set_format(FixedPoint::new(fp.l(), f + e + k)?);
    let y = b.mul(x, &w);
    b.set_format(fp);
    y
}

/// Bits below which an OLT's raw product stays for every OLT ring (`olt-ring = narrow`: `2^49`).
pub const OUTER_RAW_BITS: u32 = 49;

impl Protocol for Outer {
    fn name(&self) -> &'static str {
        "outer"
    }
    fn source(&self) -> &'static str {
        "nectar: BumbleBee LayerNorm, r⊗γ by OLT or OLE"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "rsqrt_domain": LAYERNORM_DEFAULT.rsqrt, "eps_floor": "4·2^−f", "gamma": "r⊗γ by one OLT, or by OT OLEs where their bits are fewer (a decoding row)", "rms_extra_bits": RMS_EXTRA_BITS })
    }
}

impl NormProtocol for Outer {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, c: &NormCall<'_>, rsqrt: Rsqrt) -> Result<Vec<u64>, NnError> {
        let r = variance_range(c.eps, b.format());
        rsqrt.check(&r, b.format())?;
        let inv = |b: &mut DynBackend<'_>, v: &Vec<u64>| rsqrt.eval(b, v, &r);
        match c.beta {
            Some(_) if c.stats_shift > 0 => Err(NnError::BadArgument("a LayerNorm has no statistics shift".into())),
            Some(beta) => {
                let (q, s) = centre_and_rsqrt(b, x, c.rows, c.cols, r.lo, inv)?;
                let f = b.format().f();
                let w = b.outer_weight(&s, c.gamma_server, c.cols, f)?;
                let y = b.mul(&q, &w)?;
                let be = tile_cols(b, beta, c.rows, c.cols)?;
                b.add(&y, &be)
            }
            None => {
                let s = rms_rsqrt(b, x, c.rows, c.cols, r.lo, c.stats_shift, inv)?;
                rms_apply(b, x, &s, c, &r)
            }
        }
    }
    fn needs_weights(&self) -> bool {
        true
    }
    fn check(&self, rsqrt: Rsqrt, _cols: usize, eps: f64, fp: FixedPoint) -> Result<(), NnError> {
        rsqrt.check(&variance_range(eps, fp), fp)
    }
    fn tolerance(&self, rsqrt: Rsqrt, _cols: usize, fp: FixedPoint) -> Result<i64, NnError> {
        Ok(norm_tol(rsqrt.tolerance(&variance_range(LAYERNORM_DEFAULT.eps, fp), fp)?))
    }
}
