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

use crate::secure::engine::{timed, truncated_matmul_weight, Engine, WeightRef};
use crate::secure::exact;
use crate::secure::SecureError;
use crate::suite::{Choice, Norm, Rsqrt, Softmax, Suite, SuiteError};
use nectar_math::registry::Protocol;
use nectar_nn::backend::{enc, int};
use nectar_nn::NnError;
use nectar_nn::gelu::GeluForm;
use nectar_nn::lut::softmax_lut;
use nectar_nn::layernorm::{
    centre_and_rsqrt, layernorm as nn_layernorm, layernorm_east, EastNormParams, LayerNormParams, EAST_NORM_DEFAULT, LAYERNORM_DEFAULT,
};
use nectar_nn::reciprocal::{RecipParams, RecipRange};
use nectar_nn::max::tile_cols;
use nectar_nn::rmsnorm::{rms_rsqrt, rmsnorm as nn_rmsnorm};
use nectar_nn::softmax::{
    coarse_recip, recip_for_rows, softmax as nn_softmax, softmax_in_ring, SoftmaxForm, COARSE_CMP_L, SOFTMAX_BUMBLEBEE,
};
use nectar_math::FixedPoint;

/// The error for a planned protocol reached at run time.
pub fn planned<C: Choice>(c: C) -> SecureError {
    SecureError::Suite(SuiteError::NotImplemented {
        op: C::OPERATOR,
        proto: c.name(),
        source_ref: c.source(),
    })
}


/// GeLU by the suite's protocol (`nectar_nn::gelu::ALL`), in the suite's activation ring.
/// `tanh_form`: the checkpoint's activation is GPT-2's `gelu_new` (protocols with a fit per
/// form evaluate that form's; Seg4 and P4 approximate both forms alike).
pub fn gelu<E: Engine>(e: &mut E, x: &E::Val, tanh_form: bool) -> Result<E::Val, SecureError> {
    let s = *e.suite();
    timed(e, "gelu", |e| {
        if e.exact("gelu") {
            return exact::map(e, x, |v| exact::gelu(v, tanh_form));
        }
        let form = if tanh_form { GeluForm::Tanh } else { GeluForm::Erf };
        Ok(s.gelu.eval(e, x, form, s.act_ring)?)
    })
}

/// SiLU by the suite's protocol (`nectar_nn::silu::ALL`), in the suite's activation ring.
pub fn silu<E: Engine>(e: &mut E, x: &E::Val) -> Result<E::Val, SecureError> {
    let s = *e.suite();
    timed(e, "silu", |e| {
        if e.exact("silu") {
            return exact::map(e, x, exact::silu);
        }
        Ok(s.silu.eval(e, x, s.act_ring)?)
    })
}

/// The element-wise product of two shared tensors (the suite's `mul` protocol is the engine's
/// backend configuration, fixed at session setup).
pub fn mul<E: Engine>(e: &mut E, x: &E::Val, y: &E::Val) -> Result<E::Val, SecureError> {
    timed(e, "mul", |e| Ok(e.mul(x, y)?))
}

/// `e^x` for `x <= 0` by the suite's `exp` (Taylor, Taylor2, Taylor4: clipped below −14; OPPE: 0 below −16).
pub fn exp_nonpositive<E: Engine>(e: &mut E, x: &E::Val) -> Result<E::Val, SecureError> {
    exp_clipped_in(e, x, None)
}

/// [`exp_nonpositive`] with the Taylor forms' clip compared in `Z_{2^clip_l}` (`Some`: the
/// coarse softmax, whose inputs are bounded; see `nectar_nn::exp::ExpParams::clip_l`).
fn exp_clipped_in<E: Engine>(e: &mut E, x: &E::Val, clip_l: Option<u32>) -> Result<E::Val, SecureError> {
    let p = e.suite().exp;
    Ok(p.eval(e, x, clip_l)?)
}

/// `1/x` by the suite's `reciprocal`: for `x ∈ [lo, hi]` (Determine uses the range itself;
/// BumbleBee's Newton the power-of-two domain `p`, which must contain it).
pub fn reciprocal<E: Engine>(e: &mut E, x: &E::Val, lo: f64, hi: f64, p: &RecipParams) -> Result<E::Val, SecureError> {
    let r = e.suite().reciprocal;
    Ok(r.eval(e, x, &RecipRange { lo, hi, newton: *p })?)
}

/// `tanh` (the BERT pooler) by the suite's `exp`: BumbleBee composes it from the clipped
/// exponential and a reciprocal ([`tanh_composed`]); with `exp = oppe`, East's
/// own OPPE tanh table (m = 7, d = 3) evaluates it directly.
pub fn tanh<E: Engine>(e: &mut E, x: &E::Val) -> Result<E::Val, SecureError> {
    if e.exact("tanh") {
        return exact::map(e, x, f64::tanh);
    }
    let p = e.suite().exp;
    match p.tanh(e, x) {
        Some(y) => Ok(y?),
        None => tanh_composed(e, x),
    }
}

/// Reciprocal domain `[1, 4)` for `1 + e^{−2|x|} ∈ [1, 2]`.
const RECIP_TANH: RecipParams = RecipParams {
    lo: 0,
    hi: 2,
    iters: 3,
};

/// `tanh(x) = sign(x)·(1 − e^{−2|x|}) / (1 + e^{−2|x|})` (BERT pooler, BumbleBee's
/// composition; [`tanh`] chooses): one msb, two muxes, the suite's exponential, one
/// reciprocal on [1, 2] and one product.
fn tanh_composed<E: Engine>(e: &mut E, x: &E::Val) -> Result<E::Val, SecureError> {
    let s = e.msb(x)?;
    let neg = e.mux(&s, x)?;
    let two = int(e, 2);
    let twoneg = e.mul_const(&neg, &[two], 0)?;
    let a = e.sub(x, &twoneg)?; // |x|
    let m2 = int(e, -2);
    let d = e.mul_const(&a, &[m2], 0)?; // −2|x| ≤ 0
    let ex = exp_nonpositive(e, &d)?;
    let one = enc(e, 1.0)?;
    let den = e.add_const(&ex, &[one])?;
    let nex = e.neg(&ex)?;
    let num = e.add_const(&nex, &[one])?;
    let r = reciprocal(e, &den, 1.0, 2.0, &RECIP_TANH)?;
    let t = e.mul(&num, &r)?;
    let tneg = e.mux(&s, &t)?;
    let t2 = e.mul_const(&tneg, &[two], 0)?;
    Ok(e.sub(&t, &t2)?)
}

/// Row softmax of `rows × cols` scores with a public mask (`true` hides an entry): the
/// composition max → exp → row sum → reciprocal → product, with the suite's `exp` and
/// `reciprocal` (BumbleBee §V-B: Taylor + Newton; East Alg. 3: OPPE + Determine).
pub fn softmax<E: Engine>(
    e: &mut E,
    x: &E::Val,
    rows: usize,
    cols: usize,
    mask: Option<&[bool]>,
) -> Result<E::Val, SecureError> {
    let s = *e.suite();
    if e.exact("softmax") {
        return timed(e, "softmax", |e| exact::softmax(e, x, cols, mask));
    }
    // BumbleBee's composition with its own exponential (`nectar_nn::softmax::SOFTMAX_BUMBLEBEE`).
    let bumblebee_exp = s.exp.name() == nectar_nn::exp::taylor::Taylor.name();
    let newton = s.reciprocal.name() == nectar_nn::reciprocal::newton::Newton.name();
    timed(e, "softmax", |e| match s.softmax {
        Softmax::Bumblebee if bumblebee_exp && newton => {
            Ok(nn_softmax(e, x, rows, cols, mask, &SOFTMAX_BUMBLEBEE)?)
        }
        Softmax::Lut => Ok(softmax_lut(e, x, rows, cols, mask)?),
        Softmax::Bumblebee | Softmax::Narrow | Softmax::Coarse => {
            // (`Suite::validate` refuses an exponential that does not fit the narrow ring.)
            // nectar's narrow softmax also narrows the Newton domain to [1, cols] (fewer
            // normalisation thresholds); BumbleBee's keeps [1, 2^13); the coarse max's row
            // sums start at 1/2.
            let (recip, lo, form) = match s.softmax {
                Softmax::Narrow => (recip_for_rows(cols, SOFTMAX_BUMBLEBEE.recip), 1.0, SoftmaxForm::Narrow),
                Softmax::Coarse => (coarse_recip(cols, SOFTMAX_BUMBLEBEE.recip), 0.5, SoftmaxForm::Coarse),
                _ => (SOFTMAX_BUMBLEBEE.recip, 1.0, SoftmaxForm::Full),
            };
            let clip_l = (form == SoftmaxForm::Coarse).then_some(COARSE_CMP_L);
            let hi = cols as f64;
            let (mut exp_err, mut recip_err) = (None, None);
            let y = softmax_in_ring(
                e,
                x,
                rows,
                cols,
                mask,
                form,
                |e, d| exp_clipped_in(e, d, clip_l).map_err(|x| keep(&mut exp_err, x)),
                |e, sum| reciprocal(e, sum, lo, hi.max(2.0), &recip).map_err(|x| keep(&mut recip_err, x)),
            );
            match (y, exp_err.or(recip_err)) {
                (_, Some(x)) => Err(x),
                (y, None) => Ok(y?),
            }
        }
    })
}

/// Stashes a model-level error raised inside an `nn` composition (which only carries
/// [`NnError`]) so the caller can return it unchanged.
fn keep(slot: &mut Option<SecureError>, e: SecureError) -> NnError {
    let msg = e.to_string();
    *slot = Some(e);
    NnError::BadArgument(msg)
}

/// The model's ε raised to the smallest value the fixed-point rsqrt domain accepts
/// (`4·2^−f`, ≈ 1.5e−5 at f = 18; BERT's 1e−12 and LLaMA's 1e−6 are below the resolution).
pub fn norm_params(s: &Suite, fp: FixedPoint, eps: f64) -> Result<LayerNormParams, SecureError> {
    if s.rsqrt != Rsqrt::Newton {
        return Err(SecureError::Unsupported(format!(
            "norm=bumblebee runs BumbleBee's normalised Newton rsqrt (rsqrt=newton), not rsqrt={}; \
             East's Determine rsqrt runs inside norm=east-eq9",
            s.rsqrt
        )));
    }
    Ok(LayerNormParams {
        eps: eps.max(4.0 / (fp.f() as f64).exp2()),
        ..LAYERNORM_DEFAULT
    })
}

/// East's LayerNorm / RMSNorm (Eq. (9)) parameters with the model's ε; East's InvSqrt is the
/// Determine rsqrt, so the suite's `rsqrt` must name it.
fn east_norm_params(s: &Suite, eps: f64) -> Result<EastNormParams, SecureError> {
    if s.rsqrt != Rsqrt::NewtonDetermine {
        return Err(SecureError::Unsupported(format!(
            "norm=east-eq9 computes its InvSqrt by Newton with Determine (rsqrt=newton-determine), not rsqrt={}",
            s.rsqrt
        )));
    }
    Ok(EastNormParams { eps, ..EAST_NORM_DEFAULT })
}

/// LayerNorm of `rows × cols` with the server's `γ` and shared `β`, by the suite's formulation.
#[allow(clippy::too_many_arguments)]
pub fn layernorm<E: Engine>(
    e: &mut E,
    x: &E::Val,
    rows: usize,
    cols: usize,
    gamma: WeightRef<'_>,
    beta: &E::Val,
    eps: f64,
) -> Result<E::Val, SecureError> {
    let s = *e.suite();
    if e.exact("layernorm") {
        let gv = e.server_input(gamma.values(), cols)?;
        return timed(e, "layernorm", |e| exact::norm(e, x, cols, &gv, Some(beta), eps));
    }
    timed(e, "layernorm", |e| match s.norm {
        Norm::Bumblebee => {
            let p = norm_params(&s, e.format(), eps)?;
            let gv = e.server_input(gamma.values(), cols)?;
            Ok(nn_layernorm(e, x, rows, cols, &gv, beta, &p)?)
        }
        Norm::EastEq9 => {
            let p = east_norm_params(&s, eps)?;
            let gv = e.server_input(gamma.values(), cols)?;
            Ok(layernorm_east(e, x, rows, cols, &gv, Some(beta), &p)?)
        }
        Norm::Outer => {
            let p = norm_params(&s, e.format(), eps)?;
            let (q, r) = centre_and_rsqrt(e, x, rows, cols, &p)?;
            let y = scale_rows_by_gamma(e, &q, &r, rows, cols, gamma)?;
            let be = tile_cols(e, beta, rows, cols)?;
            Ok(e.add(&y, &be)?)
        }
    })
}

/// RMSNorm of `rows × cols` with the server's `γ`, by the suite's formulation.
pub fn rmsnorm<E: Engine>(
    e: &mut E,
    x: &E::Val,
    rows: usize,
    cols: usize,
    gamma: WeightRef<'_>,
    eps: f64,
) -> Result<E::Val, SecureError> {
    let s = *e.suite();
    if e.exact("rmsnorm") {
        let gv = e.server_input(gamma.values(), cols)?;
        return timed(e, "rmsnorm", |e| exact::norm(e, x, cols, &gv, None, eps));
    }
    timed(e, "rmsnorm", |e| match s.norm {
        Norm::Bumblebee => {
            let p = norm_params(&s, e.format(), eps)?;
            let gv = e.server_input(gamma.values(), cols)?;
            Ok(nn_rmsnorm(e, x, rows, cols, &gv, &p)?)
        }
        Norm::EastEq9 => {
            let p = east_norm_params(&s, eps)?;
            let gv = e.server_input(gamma.values(), cols)?;
            Ok(layernorm_east(e, x, rows, cols, &gv, None, &p)?)
        }
        Norm::Outer => {
            let p = norm_params(&s, e.format(), eps)?;
            let r = rms_rsqrt(e, x, rows, cols, &p)?;
            scale_rows_by_gamma(e, x, &r, rows, cols, gamma)
        }
    })
}

/// `y_ij = q_ij · r_i · γ_j` for `norm = outer`: `w = r ⊗ γ` is the product of the shared column
/// `r` (`rows × 1`) and the server's row `γ` (`1 × cols`) — one OLT, the server's share term
/// local (the same operator as a linear layer with `in_dim = 1`), truncated once — and then
/// one element-wise product `q ⊙ w`. BumbleBee's order, `(q ⊙ r)` then `⊙ γ`, takes two
/// products of `rows × cols`, the second with `γ` entering as a share; here `q`'s bOLEe query
/// is the one its square already sent (reused inside the operator), so the products cost
/// one fresh query and one response instead of three queries and two responses.
fn scale_rows_by_gamma<E: Engine>(
    e: &mut E,
    q: &E::Val,
    r: &E::Val,
    rows: usize,
    cols: usize,
    gamma: WeightRef<'_>,
) -> Result<E::Val, SecureError> {
    let w = truncated_matmul_weight(e, r, rows, 1, cols, gamma)?;
    Ok(e.mul(q, &w)?)
}
