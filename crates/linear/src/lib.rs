//! `nectar-linear`: HE-backed two-party linear algebra (see `DESIGN.md`, layer `linear`).
//!
//! BumbleBee (NDSS'25) §III–IV, App. C and E:
//! - [`krdy`]: the KRDY/Cheetah coefficient encodings `π_lhs`, `π_rhs` (Eq. 1) and the block
//!   partition of a `(k, m, n)` matrix product into windows `(k_w, m_w, n_w)`;
//! - [`window`]: the partition-window chooser (§III-D) and the plaintext cost model that predicts
//!   ciphertext counts and bytes of one OLT;
//! - [`interleave`]: InterLeave (Fig. 6, FFT-style) and PackLWEs (the KRDY⁺ baseline), written
//!   once over any ring with automorphisms ([`interleave::AutoRing`]);
//! - [`parse_mat`]: where each matrix entry lands after InterLeave (App. E, Fig. 8, corrected);
//! - [`liftdown`]: `Lift` / `Down` of bOLEe (Prop. 2–3) over a CRT plaintext modulus `t`.

pub mod bench;
pub mod bole;
pub mod h2a;
pub mod interleave;
pub mod krdy;
pub mod liftdown;
pub mod matmul;
pub mod olt;
pub mod parse_mat;
pub mod session;
pub mod window;
mod wire;

pub use krdy::{Shape, Windows};
pub use olt::{olt, Side};
pub use session::HeSession;
pub use window::{Compression, CostModel, CtBytes, OltPlan, Variant};

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
}
