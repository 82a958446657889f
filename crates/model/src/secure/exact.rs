//! Exact (f64) evaluation of a nonlinear operator inside the fixed-point **twin**, for the
//! error attribution of `nectar accuracy` (issue 17 item 1): the twin with every operator but
//! one evaluated exactly shows that operator's share of the end-to-end error; with all of them
//! exact, what is left is the fixed-point format of the linear layers and the residual stream.
//!
//! Only [`crate::twin::PlainEngine`] can be asked for this ([`Engine::exact`]); a secure
//! engine always answers `false` (an exact operator would need the plaintext), so these
//! functions are never reached in a two-party run.

use crate::secure::engine::Engine;
use crate::secure::SecureError;
use nectar_nn::layernorm::layernorm_f64;
use nectar_nn::rmsnorm::rmsnorm_f64;
use nectar_nn::softmax::softmax_f64;

/// The operators whose approximation the twin can replace by the exact function, by their
/// profile-row names.
/// `leaf.ffn1` is LEAF's `act(X·W1 + b1)` (suite `ffn = leaf`): exact, it is the f64 activation
/// of the ring product.
pub const EXACT_OPS: [&str; 7] = ["gelu", "silu", "softmax", "layernorm", "rmsnorm", "tanh", "leaf.ffn1"];

/// The twin's values of `x`, decoded.
fn decode<E: Engine>(e: &mut E, x: &E::Val) -> Result<Vec<f64>, SecureError> {
    if !e.is_twin() {
        return Err(SecureError::Role("an exact operator needs the plaintext twin".into()));
    }
    let fp = e.format();
    Ok(fp.decode_vec(&e.reveal(x)?))
}

/// `y` encoded in the engine's format (saturating: the exact value of a bounded function of
/// in-range inputs is in range).
fn encode<E: Engine>(e: &mut E, y: &[f64]) -> Result<E::Val, SecureError> {
    let fp = e.format();
    let v: Vec<u64> = y.iter().map(|&t| fp.encode_saturating(t)).collect();
    Ok(e.constant(&v)?)
}

/// `f` applied to every element, exactly.
pub fn map<E: Engine>(e: &mut E, x: &E::Val, f: impl Fn(f64) -> f64) -> Result<E::Val, SecureError> {
    let v = decode(e, x)?;
    let y: Vec<f64> = v.into_iter().map(f).collect();
    encode(e, &y)
}

/// Exact row softmax (`true` in `mask` hides an entry, as in the protocol).
pub fn softmax<E: Engine>(e: &mut E, x: &E::Val, cols: usize, mask: Option<&[bool]>) -> Result<E::Val, SecureError> {
    let v = decode(e, x)?;
    encode(e, &softmax_f64(&v, cols, mask))
}

/// Exact LayerNorm (`beta = None`: RMSNorm) with the checkpoint's ε.
pub fn norm<E: Engine>(
    e: &mut E,
    x: &E::Val,
    cols: usize,
    gamma: &E::Val,
    beta: Option<&E::Val>,
    eps: f64,
) -> Result<E::Val, SecureError> {
    let v = decode(e, x)?;
    let g = decode(e, gamma)?;
    let y = match beta {
        Some(b) => {
            let b = decode(e, b)?;
            layernorm_f64(&v, cols, &g, &b, eps)
        }
        None => rmsnorm_f64(&v, cols, &g, eps),
    };
    encode(e, &y)
}

use nectar_math::real::GeluForm;

/// Exact GeLU: the erf form, or GPT-2's `gelu_new` (tanh form).
pub fn gelu(x: f64, tanh_form: bool) -> f64 {
    nectar_math::real::gelu(x, if tanh_form { GeluForm::Tanh } else { GeluForm::Erf })
}

/// Exact SiLU.
pub fn silu(x: f64) -> f64 {
    nectar_math::real::silu(x)
}
