//! `nectar-nn`: the nonlinear transformer operators of BumbleBee (NDSS'25 §V, App. A, D, E),
//! written **once**, generic over an arithmetic [`Backend`].
//!
//! # Design
//!
//! An operator (GeLU, SiLU, exp, softmax, LayerNorm, ...) is a function
//! `fn op<B: Backend + ?Sized>(b: &mut B, x: &B::Val, ...) -> Result<B::Val, NnError>` (`?Sized`:
//! registered protocols call them on a [`backend::DynBackend`]) that only calls the backend's
//! primitives — local linear algebra, fixed-point `mul`/`square`/`trunc`, batched
//! `less_than_const`, `msb`, `mux`, `b2a`, ring `extend`/`reduce` — on whole vectors. Two
//! backends run the *same* operator code:
//!
//! - [`plain::PlainBackend`], the plaintext fixed-point twin (values in `Z_{2^l}`);
//! - [`secure::SecureBackend`], one party of the two-party protocols (additive shares; OT-based
//!   protocols of `nectar-mpc`, bOLEe products of `nectar-linear`).
//!
//! Hence twin-vs-protocol differences come only from the primitives' stated error models
//! (documented on each [`Backend`] method: ±1 LSB per truncation, {0, ±1} per bOLEe product,
//! approximate less-than within `2^k` LSB of a threshold), and float-vs-twin differences are the
//! approximation error of the operator itself, which the accuracy tests measure
//! ([`accuracy`], `docs/notes/nonlinear-notes.md`). [`counting::CountingBackend`] wraps any backend
//! and counts calls and elements per primitive, from which the cost of an operator in the secure
//! backend follows.
//!
//! Coefficients, segment bounds, clipping thresholds and iteration counts are documented
//! `const`s/structs next to their operator, with their source, marked AGREEMENT (both parties
//! must use the same values: they shape the transcript).
//!
//! Protocol registry (DESIGN.md "Where a protocol plugs in"): an operator kind is a trait and a
//! list of protocols, one file each — [`gelu`] (`gelu::ALL`: Seg4, BOLT P4 and its
//! artifact variant, p7, sq8, East's OPPE, ROTL's LUT), [`silu`], [`exp`], [`reciprocal`],
//! [`rsqrt`], and the compositions [`norm`] (with the suite's rsqrt) and [`softmax`] (with the
//! suite's exp and reciprocal).
//!
//! Operators: [`gelu`], [`silu`], [`elu`], [`exp`], [`softmax`],
//! [`reciprocal`], [`rsqrt`], [`norm`] (evaluated by [`layernorm`], [`rmsnorm`]), [`max`] (max/argmax),
//! [`onehot`] (token id → one-hot, `i_equal`); [`mixed`] switches to BumbleBee's small
//! activation ring (§V-C). East (§4): [`oppe`] (oblivious piecewise polynomials, tables fitted
//! by [`fit`]).

pub mod accuracy;
pub mod backend;
pub mod compare;
pub mod counting;
pub mod elu;
pub mod embed;
pub mod exp;
pub mod ffn;
pub mod fit;
pub mod fit_dist;
pub mod gelu;
pub mod layernorm;
pub mod lut;
pub mod max;
pub mod mixed;
pub mod mul;
pub mod norm;
pub mod onehot;
pub mod oppe;
pub mod ot_ext;
pub mod plain;
pub mod poly;
pub mod reciprocal;
pub mod rmsnorm;
pub mod rsqrt;
pub mod secure;
pub mod silu;
pub mod softmax;
pub mod tolerance;

pub use backend::Backend;
pub use counting::CountingBackend;
pub use plain::PlainBackend;
pub use secure::{MulProtocol, SecureBackend, SecureOpts};

/// Errors of the operator layer.
#[derive(Debug, thiserror::Error)]
pub enum NnError {
    #[error("length mismatch in {op}: {a} vs {b}")]
    Length { op: &'static str, a: usize, b: usize },
    #[error("index {index} out of range {len} in {op}")]
    Index { op: &'static str, index: usize, len: usize },
    #[error("invalid argument: {0}")]
    BadArgument(String),
    #[error("fixed-point format (l={l}, f={f}) too narrow for {op}: {why}")]
    FormatTooNarrow { op: &'static str, l: u32, f: u32, why: String },
    #[error(transparent)]
    Math(#[from] nectar_math::MathError),
    /// An error of the backend (e.g. a channel or OT failure in the secure backend).
    #[error("backend: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
}
