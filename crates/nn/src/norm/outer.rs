//! `norm = outer` (nectar, issue 17): BumbleBee's statistics and the suite's rsqrt, then
//! `y_ij = q_ij · (r ⊗ γ)_ij` — `r ⊗ γ` is the product of the shared column `r` and the server's
//! row `γ`, one OLT with the server's share term local ([`crate::Backend::outer_weight`]), then
//! one element-wise product. BumbleBee's order, `(q ⊙ r)` then `⊙ γ`, takes two products of
//! `rows × cols`, the second with `γ` entering as a share; here `q`'s bOLEe query is the one
//! its square already sent (reused inside the operator), so the products cost one fresh query
//! and one response instead of three queries and two responses. Runs on the model's engines
//! (the share-level backends hold no weights).

use super::{variance_range, NormCall, NormProtocol};
use crate::backend::DynBackend;
use crate::layernorm::{centre_and_rsqrt, LAYERNORM_DEFAULT};
use crate::max::tile_cols;
use crate::rmsnorm::rms_rsqrt;
use crate::rsqrt::Rsqrt;
use crate::tolerance::norm_tol;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `norm = outer`.
pub struct Outer;

impl Protocol for Outer {
    fn name(&self) -> &'static str {
        "outer"
    }
    fn source(&self) -> &'static str {
        "nectar: BumbleBee LayerNorm, r⊗γ by OLT"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "rsqrt_domain": LAYERNORM_DEFAULT.rsqrt, "eps_floor": "4·2^−f", "gamma": "r⊗γ by one OLT" })
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
                let w = b.outer_weight(&s, c.gamma_server, c.cols)?;
                let y = b.mul(&q, &w)?;
                let be = tile_cols(b, beta, c.rows, c.cols)?;
                b.add(&y, &be)
            }
            None => {
                let s = rms_rsqrt(b, x, c.rows, c.cols, r.lo, c.stats_shift, inv)?;
                let w = b.outer_weight(&s, c.gamma_server, c.cols)?;
                b.mul(x, &w)
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
