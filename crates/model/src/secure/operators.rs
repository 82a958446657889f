//! Operator dispatch through the engine's [`Suite`] (DESIGN.md "Where a protocol plugs in",
//! step 3): the transformer block calls `gelu(e, x)`, `softmax(e, ...)`, `layernorm(e, ...)`;
//! each is one `match` on the suite's field for that operator. A new protocol for an operator
//! is one arm here (and its module in `nn` / `mpc` / `linear`), nothing in the block or the
//! architectures.
//!
//! Each function records itself as one profile row named after the operator (nested calls
//! belong to their caller's row). A protocol that is planned but not implemented is an error
//! naming the operator and protocol — [`Suite::validate`] refuses such a suite at start, so
//! reaching these arms means a caller skipped validation.

use crate::secure::engine::{timed, Engine};
use crate::secure::SecureError;
use crate::suite::{ActRing, Choice, Exp, Gelu, Norm, Reciprocal, Rsqrt, Silu, Softmax, Suite, SuiteError};
use nectar_nn::exp::{exp_neg, ExpParams, EXP_BUMBLEBEE};
use nectar_nn::gelu::{p4_gelu, p4_gelu_mixed, seg4_gelu, seg4_gelu_mixed, P4_BOLT, SEG4_BUMBLEBEE};
use nectar_nn::layernorm::{layernorm as nn_layernorm, LayerNormParams, LAYERNORM_DEFAULT};
use nectar_nn::reciprocal::{reciprocal as nn_reciprocal, RecipParams};
use nectar_nn::rmsnorm::rmsnorm as nn_rmsnorm;
use nectar_nn::silu::{silu as nn_silu, silu_mixed, SILU_BUMBLEBEE};
use nectar_nn::softmax::{softmax as nn_softmax, SOFTMAX_BUMBLEBEE};
use nectar_math::FixedPoint;

/// The error for a planned protocol reached at run time.
pub fn planned<C: Choice>(c: C) -> SecureError {
    SecureError::Suite(SuiteError::NotImplemented {
        op: C::OPERATOR,
        proto: c.name(),
        source_ref: c.source(),
    })
}

/// GeLU (exact and tanh forms alike) by the suite's protocol, in the suite's activation ring.
pub fn gelu<E: Engine>(e: &mut E, x: &E::Val) -> Result<E::Val, SecureError> {
    let s = *e.suite();
    timed(e, "gelu", |e| {
        Ok(match (s.gelu, s.act_ring) {
            (Gelu::Seg4, ActRing::Full) => seg4_gelu(e, x, &SEG4_BUMBLEBEE)?,
            (Gelu::Seg4, ActRing::Mixed) => seg4_gelu_mixed(e, x, &SEG4_BUMBLEBEE)?,
            (Gelu::P4, ActRing::Full) => p4_gelu(e, x, &P4_BOLT)?,
            (Gelu::P4, ActRing::Mixed) => p4_gelu_mixed(e, x, &P4_BOLT)?,
            (g @ (Gelu::Oppe | Gelu::Lut), _) => return Err(planned(g)),
        })
    })
}

/// SiLU by the suite's protocol, in the suite's activation ring.
pub fn silu<E: Engine>(e: &mut E, x: &E::Val) -> Result<E::Val, SecureError> {
    let s = *e.suite();
    timed(e, "silu", |e| {
        Ok(match (s.silu, s.act_ring) {
            (Silu::Seg4, ActRing::Full) => nn_silu(e, x, &SILU_BUMBLEBEE)?,
            (Silu::Seg4, ActRing::Mixed) => silu_mixed(e, x, &SILU_BUMBLEBEE)?,
            (a @ (Silu::Oppe | Silu::Lut), _) => return Err(planned(a)),
        })
    })
}

/// The element-wise product of two shared tensors (the suite's `mul` protocol is the engine's
/// backend configuration, fixed at session setup).
pub fn mul<E: Engine>(e: &mut E, x: &E::Val, y: &E::Val) -> Result<E::Val, SecureError> {
    timed(e, "mul", |e| Ok(e.mul(x, y)?))
}

/// The parameters of the suite's `exp` (for compositions that call it directly).
pub fn exp_params(s: &Suite) -> Result<ExpParams, SecureError> {
    match s.exp {
        Exp::Taylor => Ok(EXP_BUMBLEBEE),
        other => Err(planned(other)),
    }
}

/// `e^x` for `x <= 0` by the suite's `exp`.
pub fn exp_nonpositive<E: Engine>(e: &mut E, x: &E::Val) -> Result<E::Val, SecureError> {
    let p = exp_params(e.suite())?;
    Ok(exp_neg(e, x, &p)?)
}

/// `1/x` on the domain `p` by the suite's `reciprocal`.
pub fn reciprocal<E: Engine>(e: &mut E, x: &E::Val, p: &RecipParams) -> Result<E::Val, SecureError> {
    match e.suite().reciprocal {
        Reciprocal::Newton => Ok(nn_reciprocal(e, x, p)?),
        other => Err(planned(other)),
    }
}

/// Row softmax of `rows × cols` scores with a public mask (`true` hides an entry), by the
/// suite's composition. BumbleBee's composes the suite's exp (Taylor) and reciprocal (Newton).
pub fn softmax<E: Engine>(
    e: &mut E,
    x: &E::Val,
    rows: usize,
    cols: usize,
    mask: Option<&[bool]>,
) -> Result<E::Val, SecureError> {
    let s = *e.suite();
    timed(e, "softmax", |e| match s.softmax {
        Softmax::Bumblebee => {
            exp_params(&s)?;
            if s.reciprocal != Reciprocal::Newton {
                return Err(planned(s.reciprocal));
            }
            Ok(nn_softmax(e, x, rows, cols, mask, &SOFTMAX_BUMBLEBEE)?)
        }
        other => Err(planned(other)),
    })
}

/// The model's ε raised to the smallest value the fixed-point rsqrt domain accepts
/// (`4·2^−f`, ≈ 1.5e−5 at f = 18; BERT's 1e−12 and LLaMA's 1e−6 are below the resolution).
pub fn norm_params(s: &Suite, fp: FixedPoint, eps: f64) -> Result<LayerNormParams, SecureError> {
    if s.rsqrt != Rsqrt::Newton {
        return Err(planned(s.rsqrt));
    }
    Ok(LayerNormParams {
        eps: eps.max(4.0 / (fp.f() as f64).exp2()),
        ..LAYERNORM_DEFAULT
    })
}

/// LayerNorm of `rows × cols` with shared `γ`, `β`, by the suite's formulation.
#[allow(clippy::too_many_arguments)]
pub fn layernorm<E: Engine>(
    e: &mut E,
    x: &E::Val,
    rows: usize,
    cols: usize,
    gamma: &E::Val,
    beta: &E::Val,
    eps: f64,
) -> Result<E::Val, SecureError> {
    let s = *e.suite();
    timed(e, "layernorm", |e| match s.norm {
        Norm::Bumblebee => {
            let p = norm_params(&s, e.format(), eps)?;
            Ok(nn_layernorm(e, x, rows, cols, gamma, beta, &p)?)
        }
        other => Err(planned(other)),
    })
}

/// RMSNorm of `rows × cols` with shared `γ`, by the suite's formulation.
pub fn rmsnorm<E: Engine>(
    e: &mut E,
    x: &E::Val,
    rows: usize,
    cols: usize,
    gamma: &E::Val,
    eps: f64,
) -> Result<E::Val, SecureError> {
    let s = *e.suite();
    timed(e, "rmsnorm", |e| match s.norm {
        Norm::Bumblebee => {
            let p = norm_params(&s, e.format(), eps)?;
            Ok(nn_rmsnorm(e, x, rows, cols, gamma, &p)?)
        }
        other => Err(planned(other)),
    })
}
