//! `nectar-ot`: oblivious transfer for nectar's nonlinear protocols (see `DESIGN.md`, layer `ot`).
//!
//! Stack, bottom up (one file per protocol):
//! - [`crhash`]: fixed-key AES correlation-robust hash and GGM PRG ([`vaes`]: its AES with
//!   VAES on CPUs that have it);
//! - [`base_ot`]: 128 Chou–Orlandi base OTs on Ristretto, batched in two flows;
//! - [`iknp`]: IKNP correlated-OT extension (semi-honest), bootstraps Ferret and is the baseline;
//! - [`ggm`]: GGM trees: single-point COT for Ferret and the (n−1)-of-n punctured PRF;
//! - [`half_tree`]: random-point punctured PRF on half-trees (one COT and one block per level;
//!   ROTL's secret-shared rotation);
//! - [`lpn`]: the local linear code (d = 10) of Ferret's primal LPN;
//! - [`ferret`]: Ferret silent COT (Yang et al., CCS'20) with the emp-ot parameter sets;
//! - [`pool`]: [`CotPool`], one direction's store of random COTs that refills itself;
//! - [`session`]: [`OtSession`], one per party and peer, holding a pool per direction and
//!   exposing every derived OT ([`rot`], [`chosen`], [`acot`], [`one_of_n`], [`pprf`]).
//!
//! Conventions. A COT has a global `Δ` (held by the COT *sender*, `lsb(Δ) = 1`); for every
//! instance the sender holds `q` with `lsb(q) = 0` and the receiver holds `t = q ⊕ b·Δ`, so
//! `lsb(t)` is the receiver's choice bit `b`.
//!
//! Directions. COTs are directional; an [`OtSession`] keeps one pool per direction (this party
//! as sender, this party as receiver), each with its own base OTs, IKNP and Ferret state, so
//! either party can be the sender of any call. Methods named `send_*` use this party as OT
//! sender and must be matched by the peer calling the corresponding `recv_*` method, in the same
//! order.

pub mod acot;
pub mod base_ot;
pub mod bits;
pub mod chosen;
pub mod crhash;
pub mod ferret;
pub mod ggm;
pub mod half_tree;
pub mod iknp;
pub mod lpn;
pub mod one_of_n;
pub mod pool;
pub mod pprf;
pub mod rot;
pub mod session;
pub mod vaes;

pub use ferret::{FerretParams, Spcot};
pub use pool::{CotPool, Producer, RefillTraffic};
pub use session::OtSession;

use nectar_net::NetError;

/// Errors of the OT layer. Every one ends the session that saw it.
#[derive(Debug, thiserror::Error)]
pub enum OtError {
    #[error("network: {0}")]
    Net(#[from] NetError),
    #[error("malformed {what}: expected {expected} bytes, got {got}")]
    BadMessage { what: &'static str, expected: usize, got: usize },
    #[error("peer sent an invalid curve point")]
    BadPoint,
    #[error("invalid parameters: {0}")]
    BadParams(String),
    #[error("invalid argument: {0}")]
    BadArgument(String),
}

/// Bits of the computational security parameter (SECURITY).
pub const KAPPA: usize = 128;

/// Receive a frame of exactly `n` `u128` words, as a typed error otherwise.
pub(crate) fn recv_blocks<C: nectar_net::Channel + ?Sized>(
    ch: &mut C,
    n: usize,
    what: &'static str,
) -> Result<Vec<u128>, OtError> {
    let b = ch.recv()?;
    if b.len() != 16 * n {
        return Err(OtError::BadMessage { what, expected: 16 * n, got: b.len() });
    }
    Ok(b.chunks_exact(16).map(|c| u128::from_le_bytes(c.try_into().unwrap_or([0; 16]))).collect())
}

/// Receive a frame of exactly `n` bytes.
pub(crate) fn recv_bytes<C: nectar_net::Channel + ?Sized>(
    ch: &mut C,
    n: usize,
    what: &'static str,
) -> Result<Vec<u8>, OtError> {
    let b = ch.recv()?;
    if b.len() != n {
        return Err(OtError::BadMessage { what, expected: n, got: b.len() });
    }
    Ok(b)
}

/// Serialise blocks little-endian.
pub(crate) fn blocks_to_bytes(xs: &[u128]) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 * xs.len());
    for x in xs {
        b.extend_from_slice(&x.to_le_bytes());
    }
    b
}
