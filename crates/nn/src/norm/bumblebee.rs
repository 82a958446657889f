//! `norm = bumblebee`: BumbleBee §V-B — mean, variance by Π_square, the suite's rsqrt of
//! `Var + ε`, then `q·r` and `·γ` as two products of shares (`+ β`)
//! ([`crate::layernorm::layernorm_with`], [`crate::rmsnorm::rmsnorm_with`]).

use super::{variance_range, NormCall, NormProtocol};
use crate::backend::DynBackend;
use crate::layernorm::{layernorm_with, LAYERNORM_DEFAULT};
use crate::rmsnorm::rmsnorm_with;
use crate::rsqrt::Rsqrt;
use crate::tolerance::norm_tol;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `norm = bumblebee`.
pub struct Bumblebee;

impl Protocol for Bumblebee {
    fn name(&self) -> &'static str {
        "bumblebee"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §V-B LayerNorm"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "rsqrt_domain": LAYERNORM_DEFAULT.rsqrt, "eps_floor": "4·2^−f" })
    }
}

impl NormProtocol for Bumblebee {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, c: &NormCall<'_>, rsqrt: Rsqrt) -> Result<Vec<u64>, NnError> {
        let r = variance_range(c.eps, b.format());
        rsqrt.check(&r, b.format())?;
        let inv = |b: &mut DynBackend<'_>, v: &Vec<u64>| rsqrt.eval(b, v, &r);
        match c.beta {
            Some(_) if c.stats_shift > 0 => Err(NnError::BadArgument("a LayerNorm has no statistics shift".into())),
            Some(beta) => layernorm_with(b, x, c.rows, c.cols, c.gamma, beta, r.lo, inv),
            None => rmsnorm_with(b, x, c.rows, c.cols, c.gamma, r.lo, c.stats_shift, inv),
        }
    }
    fn check(&self, rsqrt: Rsqrt, _cols: usize, eps: f64, fp: FixedPoint) -> Result<(), NnError> {
        rsqrt.check(&variance_range(eps, fp), fp)
    }
    fn tolerance(&self, rsqrt: Rsqrt, _cols: usize, fp: FixedPoint) -> Result<i64, NnError> {
        Ok(norm_tol(rsqrt.tolerance(&variance_range(LAYERNORM_DEFAULT.eps, fp), fp)?))
    }
}
