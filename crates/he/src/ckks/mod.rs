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
//! ```
//! use nectar_he::ckks::*;
//! use nectar_math::Prg;
//! // N = 4096: data primes {40, 30}, special prime 39 (109 bits, the 128-bit limit), Δ = 2^30.
//! let p = CkksParams::new(CkksParamsLiteral::from_bit_sizes(4096, &[40, 30], Some(39), 30)?)?;
//! let mut prg = Prg::new([1; 16]);
//! let sk = CkksSecretKey::generate(&p, &mut prg);
//! let ev = CkksEvaluator::new(&p)
//!     .with_relin_key(sk.relin_key(&p, &mut prg)?)
//!     .with_galois_keys(sk.galois_keys(&p, &[1], false, &mut prg)?);
//! let ct = sk.encrypt(&p, &p.encode_real(&[0.5, -0.25, 1.0], 2, p.default_scale())?, &mut prg)?;
//! let sq = ev.rescale(&ev.mul_relin(&ct, &ct)?)?; // x², level 1
//! let out = sk.decrypt_decode(&p, &ev.rotate(&sq, 1)?)?; // slots shifted left by one
//! assert!((out[0].re - 0.0625).abs() < 1e-3 && (out[1].re - 1.0).abs() < 1e-3);
//! assert_eq!(ev.stats().snapshot().rotations, 1);
//! # Ok::<(), nectar_he::HeError>(())
//! ```
//!
//! Levels count data primes (`1..=L`); rescaling drops the last one. Every random choice comes
//! from the caller's [`nectar_math::Prg`].

pub mod ciphertext;
pub mod encoder;
pub mod eval;
pub mod fft;
pub mod galois;
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
pub use galois::{conjugation_element, rotation_element};
