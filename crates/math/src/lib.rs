//! `nectar-math`: the bottom layer of nectar (see `DESIGN.md`, "Layers").
//!
//! - [`prg`]: the AES-128-CTR pseudo-random generator every crate draws its randomness from.
//! - [`ring`]: the rings `Z_{2^l}` (`2 <= l <= 128`) on `u64` / `u128` words.
//! - [`fixed`]: fixed-point encoding `(l, f)` into those rings.
//! - [`tensor`] and [`share`]: shaped tensors and additive 2-out-of-2 sharing.
//! - [`sample`]: samplers (uniform mod q, ternary, centred binomial) over the PRG.
//! - [`modulus`], [`rns`], [`ntt`]: word-size prime moduli, RNS bases with exact scaling,
//!   negacyclic NTTs (on `tfhe-ntt`) for the RLWE layer.
//! - [`registry`]: the protocol registry's vocabulary (a kind's list, the chosen protocol).
//! - [`real`]: the exact real functions the approximations target (one GeLU, one SiLU).
//! - [`ifma`]: AVX-512 IFMA kernels (dot products, mod-down) for primes below `2^50`.
//! - [`small_comb`]: linear combinations with small integer weights, many outputs per pass
//!   (the scalar blocks of Paterson–Stockmeyer on BFV).

pub mod fixed;
pub mod ifma;
pub mod small_comb;
pub mod modulus;
pub mod ntt;
pub mod prg;
pub mod real;
pub mod registry;
pub mod ring;
pub mod rns;
pub mod sample;
pub mod share;
pub mod tensor;

pub use fixed::FixedPoint;
pub use prg::{Block, Prg};
pub use ring::{Ring, Word};
pub use share::AShare;
pub use tensor::Tensor;

/// Errors of the math layer (all on caller-supplied parameters or data).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MathError {
    #[error("ring bit width {bits} out of range 2..={max}")]
    BadRingWidth { bits: u32, max: u32 },
    #[error("fixed-point format l={l}, f={f} invalid: need 0 < f < l")]
    BadFixedFormat { l: u32, f: u32 },
    #[error("value {value} is outside the representable fixed-point range +-{bound}")]
    OutOfRange { value: f64, bound: f64 },
    #[error("shape mismatch: {0:?} vs {1:?}")]
    ShapeMismatch(Vec<usize>, Vec<usize>),
    #[error("tensor of shape {shape:?} needs {expected} elements, got {got}")]
    BadLength { shape: Vec<usize>, expected: usize, got: usize },
    #[error("ring mismatch: Z_2^{0} vs Z_2^{1}")]
    RingMismatch(u32, u32),
}
