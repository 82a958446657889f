//! CKKS: approximate homomorphic encryption over `N/2` complex slots (Cheon–Kim–Kim–Song;
//! BLB §2.4 "CKKS HE Scheme", used for BLB's fused linear blocks, §4–5, App. C), on the RNS /
//! NTT / hybrid key-switching engine of this crate.
//!
//! - [`params`]: validated [`CkksParams`] (128-bit HE-standard check) and the BLB Table 6
//!   presets ([`CkksParams::blb_block`], [`BLB_TABLE6`]; §7.1).
//! - [`fft`] / [`encoder`]: canonical embedding by the special FFT; encode / decode at a scale.
//! - [`keys`] / [`ciphertext`]: ternary secret, public, relinearisation and Galois keys;
//!   symmetric and public-key encryption at a level; approximate decryption.
//! - [`eval`]: add / sub / products / relinearisation / rescale / level management, with the
//!   [`EvalStats`] counters BLB's cost tables use (Table 5, Table 7).
//! - `keyswitch`: hybrid key switching with centred digits (relinearisation, rotations).
//! - [`rotation`]: slot rotations (`g = 5^k`) and conjugation (`g = 2N − 1`).
//! - [`linear_transform`]: BSGS diagonal matrix–vector products (App. C.1).
//! - [`serialize`]: length-checked wire format and byte counts.
//!
//! Levels count data primes (`1..=L`); rescaling drops the last one. Every random choice comes
//! from the caller's [`nectar_math::Prg`].

pub mod ciphertext;
pub mod encoder;
pub mod eval;
pub mod fft;
pub mod keys;
mod keyswitch;
pub mod linear_transform;
pub mod params;
pub mod rotation;
pub mod serialize;

#[cfg(test)]
mod tests;

pub use ciphertext::CkksCiphertext;
pub use encoder::CkksPlaintext;
pub use eval::{CkksEvaluator, EvalCounts, EvalStats, SCALE_TOLERANCE};
pub use fft::C64;
pub use keys::{CkksGaloisKeys, CkksPublicKey, CkksSecretKey, RelinKey};
pub use linear_transform::{replicate, LinearTransform};
pub use params::{BlbPreset, CkksParams, CkksParamsLiteral, BLB_TABLE6};
pub use rotation::{conjugation_element, rotation_element};
