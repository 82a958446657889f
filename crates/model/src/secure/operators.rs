//! Operator dispatch through the engine's suite (DESIGN.md "Where a protocol plugs in",
//! step 3): the transformer block calls `gelu(e, x)`, `softmax(e, ...)`, `layernorm(e, ...)`;
//! each calls the protocol the suite holds for that operator (a handle into the operator's
//! list in the registry, `nectar_nn::gelu::ALL`, ...), so a new protocol is its own file and
//! one line in its list, nothing here, in the block or in the architectures.
//!
//! Each function records itself as one profile row named after the operator (nested calls
//! belong to their caller's row). A combination a protocol cannot run is an error naming it;
//! `Suite::validate` refuses such a suite at start.

use crate::secure::engine::{timed, Engine, WeightRef};
use crate::secure::exact;
use crate::secure::SecureError;
use nectar_nn::backend::{enc, int};
use nectar_nn::gelu::GeluForm;
use nectar_nn::norm::NormCall;
use nectar_nn::reciprocal::{RecipParams, RecipRange};
use nectar_nn::softmax::SoftmaxCall;

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
    let p = e.suite().exp;
    Ok(p.eval(e, x, None)?)
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

/// Row softmax of `rows × cols` scores with a public mask (`true` hides an entry) by the
/// suite's composition (`nectar_nn::softmax::ALL`) with the suite's `exp` and `reciprocal`
/// (BumbleBee §V-B: Taylor + Newton; East Alg. 3: OPPE + Determine).
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
    let call = SoftmaxCall { rows, cols, mask };
    timed(e, "softmax", |e| Ok(s.softmax.eval(e, x, &call, s.exp, s.reciprocal)?))
}

/// LayerNorm of `rows × cols` with the server's `γ` and shared `β`, by the suite's formulation
/// (`nectar_nn::norm::ALL`) with the suite's `rsqrt`.
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
    norm(e, "layernorm", x, rows, cols, gamma, Some(beta), eps, 0)
}

/// RMSNorm of `rows × cols` with the server's `γ`, by the suite's formulation; its statistics
/// of `x·2^−shift` (public per call site, [`nectar_nn::rmsnorm`]: inputs beyond the format's
/// square and rsqrt domain).
#[allow(clippy::too_many_arguments)]
pub fn rmsnorm<E: Engine>(
    e: &mut E,
    x: &E::Val,
    rows: usize,
    cols: usize,
    gamma: WeightRef<'_>,
    eps: f64,
    shift: u32,
) -> Result<E::Val, SecureError> {
    norm(e, "rmsnorm", x, rows, cols, gamma, None, eps, shift)
}

/// [`layernorm`] (`beta` given) or [`rmsnorm`], recorded as the profile row `op`. `γ` enters
/// as the server's shares (local) and, for formulations that multiply by it as a weight, as
/// the server's values.
#[allow(clippy::too_many_arguments)]
fn norm<E: Engine>(
    e: &mut E,
    op: &str,
    x: &E::Val,
    rows: usize,
    cols: usize,
    gamma: WeightRef<'_>,
    beta: Option<&E::Val>,
    eps: f64,
    shift: u32,
) -> Result<E::Val, SecureError> {
    let s = *e.suite();
    if e.exact(op) {
        let gv = e.server_input(gamma.values(), cols)?;
        return timed(e, op, |e| exact::norm(e, x, cols, &gv, beta, eps));
    }
    if shift >= 32 {
        return Err(SecureError::Unsupported(format!("a norm's statistics shift of {shift} bits")));
    }
    // γ·2^−shift (rounded) as shares and ε·4^−shift go with the statistics of x·2^−shift; a
    // formulation that multiplies by γ as the server's weight gets γ itself (it applies 2^−shift
    // in its own truncation, `nectar_nn::norm::outer`).
    let scaled: Option<Vec<u64>> = gamma
        .values()
        .filter(|_| shift > 0)
        .map(|g| g.iter().map(|&v| (((v as i64) + (1i64 << shift >> 1)) >> shift) as u64).collect());
    let gamma_shares = if shift > 0 { scaled.as_deref() } else { gamma.values() };
    let eps = eps * (-2.0 * shift as f64).exp2();
    timed(e, op, |e| {
        let gv = e.server_input(gamma_shares, cols)?;
        let call = NormCall { rows, cols, eps, gamma: &gv, gamma_server: gamma.values(), beta, stats_shift: shift };
        Ok(s.norm.eval(e, x, &call, s.rsqrt)?)
    })
}
