//! `nectar-linear`: HE-backed two-party linear algebra (see `DESIGN.md`, layer `linear`).
//!
//! BumbleBee (NDSS'25) §III–IV, App. C and E. Protocols (each the code one party runs over a
//! `Channel`, whole tensors per call, additive shares over `Z_{2^l}` out):
//! - [`olt`](mod@olt): OLT `[Q·V] ← (Q, V)` with KRDY / KRDY⁺ (PackLWEs) / InterLeave compression,
//!   role flip, batched form (Alg. 1, Fig. 6, §III-E);
//! - [`matmul`]: `[X]·W`, `[X]·[Y]` and the batched multi-head `[X_h]·[Y_h]`;
//! - [`bole`]: bOLEe (Alg. 2), `Π_mul`, `Π_square`, query reuse (§V-A3);
//! - [`h2a`]: H2A, Coeff and SIMD branches (App. C, Alg. 4);
//! - [`prefetch`]: an OLT evaluator's plaintext blocks prepared on an idle core before its
//!   call (the server's weights, under a memory budget);
//! - [`session`]: per-session keys (own secret key, peer's public and Galois keys).
//!
//! Plaintext machinery (tested without HE):
//! - [`krdy`]: the encodings `π_lhs`, `π_rhs` (Eq. 1, with the `m_w·n_w` row offset) and the
//!   block partition into windows `(k_w, m_w, n_w)`;
//! - [`window`]: the partition-window chooser (§III-D), the dynamic compression rule (§III-E2)
//!   and the cost model predicting ciphertext counts and bytes;
//! - [`interleave`]: InterLeave and PackLWEs over any ring with automorphisms
//!   ([`interleave::AutoRing`]), with a plain `Z_q` twin;
//! - [`parse_mat`]: where each matrix entry lands (App. E, Fig. 8, corrected);
//! - [`ckks_convert`]: BLB's CKKS ↔ MPC conversion (§6.3, Alg. 1–2), local encode / decode
//!   pipelines and scale changes on `Z_{2^128}` shares;
//! - [`ckks_packing`] / [`ckks_matmul`]: BLB's packings and fused CKKS matmuls (§4.2, §5,
//!   App. C.1–C.2): rotation-efficient multi-head ct-ct matmul with BSGS, diagonal and
//!   spatial-first ct-pt matmuls, sum / broadcast; one code path for real CKKS and for a
//!   counting slot simulator ([`ckks_matmul::plan_counts`] at the paper's shapes);
//! - [`share_codec`]: CKKS encode / decode on additive shares in fixed point (BLB §6.3, App. C.4);
//! - [`liftdown`]: `Lift` / `Down` (Prop. 2–3) over a CRT plaintext modulus `t`.

pub mod attention;
pub mod bole;
pub mod cop;
pub mod cop_cache;
pub mod ckks_convert;
pub mod ckks_linear;
pub mod ckks_matmul;
pub mod ckks_packing;
pub mod h2a;
pub mod interleave;
pub mod krdy;
pub mod layer;
pub mod liftdown;
pub mod matmul;
pub mod olt;
pub mod olt_cost;
pub mod olt_ring;
pub mod parse_mat;
pub mod prefetch;
pub mod protocol;
pub mod session;
pub mod share_codec;
pub mod window;
mod wire;

pub use krdy::{Shape, Windows};
pub use olt::{olt, olt_prepared, PreparedBlocks, Side};
pub use session::HeSession;
pub use window::{Compression, CostModel, CtBytes, OltPlan, QueryLevel, Variant};
pub use wire::FRAME_CTS;

use nectar_net::NetError;

/// Errors of the linear layer. Every error on peer data is a value, never a panic.
#[derive(Debug, thiserror::Error)]
pub enum LinearError {
    #[error(transparent)]
    Net(#[from] NetError),
    #[error("invalid shape: {0}")]
    BadShape(String),
    #[error("invalid partition windows {windows:?} for N = {n}: {why}")]
    BadWindows {
        windows: (usize, usize, usize),
        n: usize,
        why: &'static str,
    },
    #[error("invalid parameters: {0}")]
    BadParams(String),
    #[error("malformed message from peer: {0}")]
    Malformed(String),
    #[error("HE layer: {0}")]
    He(#[from] nectar_he::HeError),
    #[error("not available: {0}")]
    Unsupported(String),
    #[error("MPC layer: {0}")]
    Mpc(#[from] nectar_mpc::MpcError),
    /// An error of the session a linear protocol runs on (`layer::LinearCx`: the engine's OLT
    /// products and truncations).
    #[error(transparent)]
    Session(Box<dyn std::error::Error + Send + Sync>),
}
