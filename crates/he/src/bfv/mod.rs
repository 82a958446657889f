//! BFV with ciphertext × ciphertext multiplication, for LEAF's polynomial functional
//! bootstrapping (LEAF §2.3, §3.3, §4; REFERENCE.md §6.1, §6.4).
//!
//! - [`mul`]: [`BfvMul`] (tensor product + exact RNS `t/Q` scale-and-round, HPS method) and
//!   [`RelinKey`] (relinearisation by hybrid key switching); noise bounds in its docs.
//! - [`rows`]: the two-row slot layout, [`Ciphertext::rotate_rows`](crate::Ciphertext::rotate_rows)
//!   (Galois `5^k`) and [`Ciphertext::swap_rows`](crate::Ciphertext::swap_rows) (`2N − 1`).
//! - [`ps`]: Paterson–Stockmeyer polynomial evaluation, generic over [`PolyEvalOps`], plus
//!   [`Ciphertext::linear_combination`](crate::Ciphertext::linear_combination) and
//!   [`Ciphertext::mul_plain_scalar`](crate::Ciphertext::mul_plain_scalar).
//! - [`leaf`]: LEAF's parameter set [`Params::leaf_bfv`](crate::Params::leaf_bfv).
//!
//! The other BFV operations are the scheme-generic ones of the crate: add/sub
//! ([`Ciphertext::add_assign`](crate::Ciphertext::add_assign)), ct × SIMD plaintext
//! ([`Params::encode_simd`](crate::Params::encode_simd) → [`PlainNtt`](crate::PlainNtt) →
//! [`Ciphertext::mul_plain`](crate::Ciphertext::mul_plain)), exact noise measurement
//! ([`SecretKey::noise`](crate::SecretKey::noise)).

pub mod leaf;
pub mod mul;
pub mod ps;
pub mod rows;

pub use mul::{BfvMul, Ciphertext3, RelinKey};
pub use ps::{paterson_stockmeyer, ps_default_baby, BfvPolyOps, PolyEvalOps, PsStats, SlotPolyOps};
pub use rows::{row_galois_elements, row_rotation_element, row_swap_element};
