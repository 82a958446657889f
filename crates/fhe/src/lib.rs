//! `nectar-fhe`: LEAF, the non-interactive FHE feed-forward block (see `DESIGN.md`, "Layers";
//! REFERENCE.md §6).
//!
//! - [`fbs_poly`]: LEAF Lemma 2 — the degree-`(P−1)` polynomial that equals a given table
//!   `f: Z_P → Z_P` (built in `O(P log P)` by an NTT mod `P`), and LEAF's GELU / SiLU
//!   functional-bootstrapping tables ([`fbs_poly::FbsParams::LEAF`]). The polynomial is
//!   evaluated on BFV ciphertexts by `nectar_he::bfv::paterson_stockmeyer`.
//! - [`rlwe`]: the coefficient-encoded RLWE of the non-polynomial part (`n = 1024`,
//!   `q' = 2^27`, `p = 512`), the plaintext–ciphertext matmul over the `(A, B)` parts
//!   ([`rlwe::pcmm`], LEAF §2.2) and the modulus switch to `P = 65537` (Alg. 4 steps 1–2).
//! - [`lt`]: the baby-step giant-step slot transform (LEAF App. A Alg. 5–7) both use.
//! - [`pack`]: coefficient RLWE → slot BFV (LEAF §3.2 Alg. 1, App. A Alg. 5/6): the packing
//!   key and the baby-step giant-step transform (Alg. 4 step 4).
//! - [`s2c`]: slots to coefficients (LEAF §3.4, Alg. 7; Alg. 4 step 7).
//! - [`activation`]: the whole non-polynomial evaluation (Alg. 4 steps 2–9) with per-stage
//!   times, and the client's key generation.
//! - [`ffn`]: the block inside a two-party inference — shares in, PCMM and the activation on
//!   the server alone, shares out (issue 16 item 6), with its plaintext twin.
//! - [`ring_switch`]: modulus and ring switching back to `n = 1024`, `q' = 2^27` (LEAF §3.5;
//!   Alg. 4 steps 8–9).

pub mod activation;
pub mod fbs_poly;
pub mod ffn;
pub mod lt;
pub mod pack;
pub mod ring_switch;
pub mod rlwe;
pub mod s2c;
mod wire;

pub use activation::{leaf_keygen, LeafActivation, LeafClientKeys, LeafEvalKeys, StageTimes};
pub use fbs_poly::{interpolate, FbsParams};
pub use ffn::{LeafFfnClient, LeafFfnParams, LeafFfnServer, LeafFormat, LeafTable};
pub use lt::LtStats;
pub use pack::{packing_key, Packer};
pub use ring_switch::{ring_switch, ring_switch_key, RingSwitchKey};
pub use rlwe::{pcmm, switch_to_p, RlweCt, RlweParams, RlweSecretKey, SwitchedCt};
pub use s2c::SlotsToCoeffs;

/// Errors of the FHE layer.
#[derive(Debug, thiserror::Error)]
pub enum FheError {
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    /// A parameter set below 128-bit security (SECURITY).
    #[error("insecure parameters: {0}")]
    Insecure(String),
    /// An error of the HE layer.
    #[error("HE: {0}")]
    He(String),
    /// Bytes from the peer that do not parse (SECURITY: never a panic).
    #[error("malformed message: {0}")]
    Malformed(String),
    /// The channel failed.
    #[error(transparent)]
    Net(#[from] nectar_net::NetError),

}
