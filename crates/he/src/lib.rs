//! `nectar-he`: the RLWE layer of nectar (see `DESIGN.md`, "Layers").
//!
//! Everything BumbleBee's linear protocols (OLT + InterLeave, H2A, bOLEe) need, on the RNS /
//! NTT arithmetic of `nectar-math`:
//!
//! - [`params`]: validated parameter sets ([`ParamsLiteral`] → [`Params`]) with the HE-standard
//!   128-bit security check and the BumbleBee presets [`Params::bumblebee_olt`] and
//!   [`Params::bumblebee_bole`]; [`security`]: a set's row in `nectar params`.
//! - [`keys`]: ternary [`SecretKey`], [`PublicKey`], [`GaloisKeys`] (hybrid key switching with one
//!   special prime).
//! - [`encoding`]: coefficient encoding over `Z_{2^l}` (`l <= 64`), SIMD batching over a prime
//!   `t ≡ 1 (mod 2N)`, multi-prime CRT batching; [`PlainNtt`] plaintexts pre-transformed for
//!   reuse in products.
//! - [`ciphertext`]: secret-/public-key encryption with a seeded `a`, exact decryption,
//!   exact noise measurement.
//! - [`ops`]: add/sub, plaintext products, monomial shifts, modulus switching, noise flooding,
//!   adding an arbitrary `R_q` polynomial to `c0` ([`Ciphertext::add_c0_assign`], H2A's mask).
//! - [`keyswitch`]: automorphisms `X -> X^g` with key switching.
//! - [`serialize`]: versioned, length-checked, bit-packed wire formats.
//! - [`ckks`]: the CKKS scheme (BLB §2.4, §5, App. C) on the same engine: canonical-embedding
//!   encoder, relinearisation, rescaling, slot rotations / conjugation, BSGS linear transforms,
//!   operation counters and the BLB Table 6 parameter presets.
//! - [`bfv`]: BFV ct × ct multiplication with relinearisation, row rotations, Paterson–Stockmeyer,
//!   LEAF's parameter set.
//!
//! Scheme (outside [`ckks`]): BFV-style scaling without relinearisation. A plaintext `m ∈ Z_t[X]/(X^N+1)` is
//! carried as `c0 + c1·s = round(q·m/t) + e (mod q)`; decryption is `round(t·(c0 + c1·s)/q) mod t`,
//! computed exactly in RNS (see `nectar_math::rns`).

pub mod bfv;
pub mod ciphertext;
pub mod ckks;
pub mod encoding;
pub mod keys;
pub mod keyswitch;
pub mod ops;
pub mod params;
pub mod poly;
pub mod product_sum;
pub mod security;
pub mod serialize;

pub use ciphertext::{Ciphertext, NoiseReport};
pub use encoding::{PlainNtt, Plaintext};
pub use keys::{GaloisKeys, PublicKey, SecretKey};
pub use params::{Params, ParamsLiteral, PlainModulus};
pub use poly::RnsPoly;
pub use product_sum::ProductSum;

/// Errors of the HE layer: invalid parameters, mismatched operands, exhausted noise budget,
/// malformed serialized data.
#[derive(Debug, thiserror::Error)]
pub enum HeError {
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    #[error("insecure parameters: N = {n} allows at most {max_bits} bits of q·P for 128-bit security (HE standard, ternary secret), got {bits}")]
    Insecure { n: usize, bits: u32, max_bits: u32 },
    #[error("operand mismatch: {0}")]
    Mismatch(String),
    #[error("value out of range: {0}")]
    OutOfRange(String),
    #[error("no Galois key for element {0}")]
    MissingGaloisKey(u64),
    #[error("no relinearisation key")]
    MissingRelinKey,
    #[error("parameters have no special prime, so key switching is unavailable")]
    NoSpecialPrime,
    #[error("not enough noise budget: {0}")]
    NoiseBudget(String),
    #[error("malformed serialized data: {0}")]
    Malformed(String),
}
