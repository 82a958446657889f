//! `nectar-fhe`: LEAF, the non-interactive FHE feed-forward block (see `DESIGN.md`, "Layers";
//! REFERENCE.md §6).
//!
//! - [`fbs_poly`]: LEAF Lemma 2 — the degree-`(P−1)` polynomial that equals a given table
//!   `f: Z_P → Z_P` (built in `O(P log P)` by an NTT mod `P`), and LEAF's GELU / SiLU
//!   functional-bootstrapping tables ([`fbs_poly::FbsParams::LEAF`]). The polynomial is
//!   evaluated on BFV ciphertexts by `nectar_he::bfv::paterson_stockmeyer`.

pub mod fbs_poly;

pub use fbs_poly::{interpolate, FbsParams};

/// Errors of the FHE layer.
#[derive(Debug, thiserror::Error)]
pub enum FheError {
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
}
