//! `nectar-mpc`: share-level two-party protocols over `Z_{2^l}` (`l <= 64`) and `Z_2`
//! (see `DESIGN.md`, layer `mpc`), on top of the OT session of `nectar-ot`.
//!
//! Shares: an arithmetic vector is one party's `Vec<u64>` of additive shares mod `2^l` (the
//! ring width `l` is passed to each call, AGREEMENT); a boolean vector is one party's
//! `Vec<bool>` of XOR shares. P0 is the server, P1 the client ([`nectar_net::Role`]).
//!
//! Every protocol is a method of [`Mpc`], the per-party context (role, [`nectar_ot::OtSession`],
//! [`nectar_math::Prg`]), taking whole vectors and a `&mut dyn Channel`: one call costs O(1)
//! rounds whatever the length (O(log l) for the comparison tree). Both parties must make the
//! same calls with the same public arguments in the same order (the OT pairing rule).
//!
//! ```
//! use nectar_math::Prg;
//! use nectar_mpc::Mpc;
//! use nectar_net::{mem::run_pair, Role};
//! use nectar_ot::Producer;
//!
//! // x = 5 − 9 = −4 in Z_2^32, shared as (5, −9); is x < 0? is x < −10?
//! let l = 32;
//! let party = |role, share: u64| {
//!     move |c: &mut nectar_net::MemChannel| {
//!         let seed = [role as u8 + 1; 16]; // fixed for the example; use Prg::from_entropy()
//!         let mut m = Mpc::setup(role, c, Prg::new(seed), Producer::Iknp).unwrap();
//!         let t = [0, (-10i64 as u64) & 0xffff_ffff];
//!         let lt = m.less_than_const(c, &[share], &t, l, 0).unwrap();
//!         let bits: Vec<bool> = lt.iter().map(|v| v[0]).collect();
//!         m.reveal_bits(c, &bits).unwrap()
//!     }
//! };
//! let (a, b) = run_pair(party(Role::Server, 5), party(Role::Client, (-9i64 as u64) & 0xffff_ffff));
//! assert_eq!(a, vec![true, false]);
//! assert_eq!(a, b);
//! ```
//!
//! One file per protocol, each opening with its source, rounds and bytes:
//! - [`ctx`]: [`Mpc`], opening (reveal), local helpers;
//! - [`and`]: AND from ROT-derived bit triples; XOR/NOT are local;
//! - [`b2a`]: boolean → arithmetic from one additive COT per bit;
//! - [`mux`]: `F_mux` (`b ? x : 0`) from two additive COTs;
//! - [`millionaire`]: CrypTFlow2 millionaires' protocol, 1-of-16 OT per 4-bit digit, batched
//!   sender inputs (BumbleBee §V-A2);
//! - [`msb`]: MSB of a share vector (batched variant shares the receiver's OT);
//! - [`less_than`]: `1{x < t_j}` for several public thresholds, approximate variant (§V-A1);
//! - [`equal`]: equality with public constants (one-hot of token ids);
//! - [`flute`]: FLUTE+ lookup table on boolean-shared indices (ROTL §V);
//! - [`trunc`]: approximate (Cheetah), faithful, known-MSB and heuristic (East §4.3) truncation;
//! - [`extend`]: ring extension (BumbleBee App. E Alg. 5), reduction, mixed bit-width (§V-C);
//! - [`field_ring`]: BLB's field ↔ ring conversions, wide (≤ 128-bit) B2A / extension, local
//!   probabilistic truncation (App. C.3–C.4);
//! - [`mul`]: OT-based (Gilboa) product and square of shared vectors, shared × public;
//! - [`rotate`]: ROTL's secret-shared rotation Π_Rotate of bit vectors (§III, Fig. 10);
//! - [`rotl_lut`]: ROTL table lookup on arithmetic shares, preprocessing / online (§IV, Fig. 11);
//! - [`lut_compare`]: the millionaires' protocol from small ROTL lookups (ROTL §VI, Fig. 13).

pub mod and;
pub mod b2a;
pub mod ctx;
pub mod words;
pub mod equal;
pub mod extend;
pub mod field_ring;
pub mod flute;
pub mod less_than;
pub mod millionaire;
pub mod msb;
pub mod mul;
pub mod mux;
pub mod lut_compare;
pub mod rotate;
pub mod rotl_lut;
pub mod trunc;

pub use ctx::{Comparison, Mpc};
pub use rotl_lut::PreproCost;
pub use extend::MixedWidth;
pub use flute::FlutePrepro;

use nectar_net::NetError;
use nectar_ot::OtError;

/// Errors of the share-level protocols. Every one ends the session that saw it.
#[derive(Debug, thiserror::Error)]
pub enum MpcError {
    #[error("network: {0}")]
    Net(#[from] NetError),
    #[error("ot: {0}")]
    Ot(#[from] OtError),
    #[error("length mismatch in {what}: expected {expected}, got {got}")]
    Length {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    #[error("malformed {what}: expected {expected} bytes, got {got}")]
    BadMessage {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    #[error("invalid argument: {0}")]
    BadArgument(String),
}

pub type Result<T> = std::result::Result<T, MpcError>;

/// Digit width of the millionaires' protocol: 1-of-`2^RADIX` OT per digit (AGREEMENT; SCI
/// `MILL_PARAM 4`, SPU `compare_radix = 4`, BumbleBee App. E "M = 16").
pub const RADIX: u32 = 4;
