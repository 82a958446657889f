//! [`SecureBackend`]: the two-party [`Backend`] of BumbleBee (NDSS'25 §IV–§V, App. E) — one
//! party's additive shares mod `2^l` (`Val = Vec<u64>`) and XOR shares (`Bit = Vec<bool>`),
//! every primitive one whole-vector protocol call (O(1) rounds, O(log l) for comparisons).
//!
//! Mapping of the [`Backend`] primitives to protocols (error models as stated on the trait):
//!
//! | primitive | protocol | rounds (flows) | error vs twin |
//! |---|---|---|---|
//! | `add`, `sub`, `neg`, `gather`, `concat`, `sum_groups`, `xor`, `not`, `reduce` | local | 0 | exact |
//! | `constant`, `add_const` | P0 holds / adds `c`, P1 zeros | 0 | exact |
//! | `mul_const(c, s)` | local product, then `trunc(s)` | 2 if `s > 0` | `{0, −1}` |
//! | `mul` | Π_mul by bOLEe (§IV; `nectar_linear::bole::mul`) or Gilboa OT (`Mpc::mul`), then `trunc(f)` | 2 + 2 (4 + 2 by OT) | ring product `{0, ±1}` (bOLEe; OT exact), then `{0, −1}`: within `[−2, +1]` LSB |
//! | `square` | Π_square (bOLEe: 1 query + 1 response) or OT square, then `trunc(f)` | 2 + 2 | as `mul` |
//! | `trunc(s)` | heuristic known-MSB truncation (`Mpc::trunc`, SPU `TruncAprox`), needs `|x| < 2^(l−2)` | 2 | `{0, −1}` |
//! | `less_than_const(t, k)` | batched millionaire on `l − k` bits (`Mpc::less_than_const`, §V-A1/A2) | ≈ 2 + 2·log2(⌈(l−k−1)/4⌉), up to 4 more when the width is not a multiple of 4 (trimmed digit OTs) | exact for `k = 0`; may differ for `|x − t| < 2^k` |
//! | `msb` | millionaire (`Mpc::msb`) | as above | exact |
//! | `mux` | F_mux from two additive COTs | 4 | exact |
//! | `and` | bit triples from ROT | 2 | exact |
//! | `b2a` | one additive COT | 2 | exact |
//! | `extend(from, to)` | App. E Alg. 5, heuristic offset `2^(from−2)` (`Mpc::extend`) | 2 | exact for `|x| < 2^(from−2)` |
//! | `reveal`, `reveal_bits` | one ordered exchange | 2 | exact |
//!
//! Multiplication protocol ([`MulProtocol`], AGREEMENT — both parties must choose the same):
//! BumbleBee's default is bOLEe ([`MulProtocol::Bole`]); one bOLEe query covers `N = 8192`
//! slots however short the vector, so short vectors use the OT-based product (for `l = 64`,
//! `2l + l(l + 1)` ≈ 4.3 kbit per element with graded COTs, against one bOLEe product's
//! ≈ 12.2 Mbit per chunk: bOLEe from ≈ 2 800 elements; in narrower rings an OT product costs
//! `≈ l²`, see [`bole_pays`]). [`MulProtocol::Ot`] uses OT products only (no HE key exchange
//! at setup).
//!
//! The channel is borrowed (`&'c mut dyn Channel`) so the caller keeps it for other protocols
//! (the model layer's OLT matmuls): see [`SecureBackend::channel_mut`] and
//! [`SecureBackend::parts`]. Byte counts of any stretch of operators are
//! `stats()` after minus `stats()` before.
//!
//! bOLEe refinements (both AGREEMENT, on by default):
//! - **query reuse** (§V-A3, "x³ by reusing sent ciphertexts"): the last [`QUERY_CACHE`]
//!   queries are kept by both parties; P0 names a cached query in a 5-byte header instead of
//!   re-sending it when its share of an operand is unchanged. Seg4GeLU's `x², x³, x⁴, x⁶` then
//!   send 3 queries instead of 5 (4 responses either way), as do SiLU's.
//! - **narrow plaintext modulus for `l <= 45`**: Prop. 3 needs `t > 2^(2l)` (with one bit for
//!   Π_mul's sum of two products and one of slack: `t >= 2^(2l + 2)`); the 3-prime
//!   `t ≈ 2^141` of `Params::bumblebee_bole()` serves `l = 64`, while the mixed bit-width ring
//!   (`l' = 32`) and ROTL's `l = 37` only need two of the 47-bit primes (`t > 2^92`), i.e. 2
//!   instead of 3 ciphertexts per query and per response ([`bole_narrow_params`]; one more
//!   public-key exchange at setup).
//!
//! And one of nectar's, off by default (`mul = bole-duplex` turns it on): **duplex products**
//! ([`SecureOpts::bole_duplex`], [`duplex_split`]) — a product of two chunks or more is queried
//! half by each party under its own key, both halves crossing the link at once.

use crate::backend::{Backend, LutIndex};
use crate::NnError;
use nectar_he::{Params, ParamsLiteral, PlainModulus};
use nectar_linear::bole::{QueryRef, ReceivedQuery, SentQuery};
use nectar_linear::HeSession;
use std::collections::VecDeque;
use nectar_math::{FixedPoint, Prg};
use nectar_mpc::Mpc;
pub use nectar_mpc::{lut_compare::DEFAULT_BLOCK as ROTL_COMPARE_BLOCK, Comparison};
pub use nectar_mpc::PreproCost;
use nectar_net::{Channel, Role, Stats};
use nectar_ot::{FerretParams, Producer};

/// Which protocol computes the ring products of `mul` / `square` (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MulProtocol {
    /// BumbleBee Π_mul / Π_square from bOLEe (§IV), OT products below `bole_min_len`.
    Bole,
    /// OT-based (Gilboa) products only (`nectar_mpc::Mpc::mul` / `square`).
    Ot,
}

/// Session options (AGREEMENT: both parties must pass the same values).
#[derive(Clone, Copy, Debug)]
pub struct SecureOpts {
    /// Initial fixed-point format (the operators switch formats themselves, see [`crate::mixed`]).
    pub format: FixedPoint,
    pub mul: MulProtocol,
    /// COT producer of the OT session (Ferret b13 in production).
    pub producer: Producer,
    /// With [`MulProtocol::Bole`]: vectors shorter than this use OT products, longer ones the
    /// cheaper in bits of bOLEe and OT products ([`bole_pays`]); 0: bOLEe for every length.
    pub bole_min_len: usize,
    /// With [`MulProtocol::Bole`]: a second bOLEe key set with a 2-prime plaintext modulus
    /// (`t ≈ 2^94 > 2^64`) for rings `l <= 32` (mixed bit-width), whose queries and responses
    /// are 2/3 of the 3-prime set's (`t ≈ 2^141`, needed for `l = 64`).
    pub bole_narrow: bool,
    /// With [`MulProtocol::Bole`]: reuse already-sent queries (§V-A3; see [`QUERY_CACHE`]).
    pub reuse_queries: bool,
    /// With [`MulProtocol::Bole`]: products of two chunks or more run *duplex* (issue 52,
    /// [`duplex_split`]): each party queries half the chunks under its own key and answers the
    /// other half, the two halves crossing the link in the same flights.
    pub bole_duplex: bool,
    /// The comparison protocol behind `less_than_const` / `msb` (the OT millionaire or ROTL's
    /// comparison from LUTs).
    pub compare: Comparison,
}

/// Default floor below which products are OT-based (see the module docs and [`bole_pays`]).
pub const BOLE_MIN_LEN: usize = 1024;

/// Largest ring width served by the narrow (2-prime) bOLEe key set (`2l + 2 <= 92 < log2 t`,
/// tested against the parameters).
pub const NARROW_MAX_L: u32 = 45;

/// Bits of COT generation counted per COT by [`ot_product_bits`] (Ferret b11 refills at
/// ≈ 0.7 bits per COT, `nectar bench nn`'s `refill_bits_per_cot`; rounded up).
pub const COT_GEN_BITS: f64 = 1.0;

/// Bits per element of an OT product in `Z_{2^l}` (`nectar_mpc::Mpc::mul` / `square`, graded
/// COTs): per cross term one choice bit and [`COT_GEN_BITS`] per COT and `l(l + 1)/2` payload
/// bits; a product has two cross terms, a square one on `l − 1` bits.
pub fn ot_product_bits(l: u32, square: bool) -> f64 {
    let l = f64::from(l.max(1));
    let term = |cots: f64, payload: f64| cots * (1.0 + COT_GEN_BITS) + payload;
    if square {
        term((l - 1.0).max(1.0), (l * (l + 1.0) / 2.0 - 1.0).max(1.0))
    } else {
        2.0 * term(l, l * (l + 1.0) / 2.0)
    }
}

/// Bits of one bOLEe product of `n` elements on the key set `params`: per chunk of `N` slots
/// and CRT prime, one seeded query ciphertext (`N·log2 q` bits) per fresh operand (a square
/// has one, a product two) and one response ciphertext at the lowest prime
/// (`2·N·log2 q_0`). Query reuse (§V-A3) is not counted (the choice is made before P0 knows
/// whether it reuses).
pub fn bole_product_bits(params: &Params, n: usize, square: bool) -> f64 {
    let nn = params.n();
    let chunks = n.div_ceil(nn).max(1) as f64;
    let primes = params.plain_count() as f64;
    let query = nn as f64 * f64::from(params.q_bits(params.max_level()));
    let response = 2.0 * nn as f64 * params.q_moduli().first().map_or(0.0, |m| f64::from(m.bits()));
    let queries = if square { 1.0 } else { 2.0 };
    chunks * primes * (queries * query + response)
}

/// Whether bOLEe serves `n` products in `Z_{2^l}` on the key set `params`
/// (`SecureBackend::use_bole`): always when `min_len` is 0; never below `min_len` elements;
/// otherwise when its bits ([`bole_product_bits`], whole chunks of `N` slots) are at most the
/// OT products' (`n·`[`ot_product_bits`]). A public function of `n`, `l` and the options
/// (AGREEMENT).
pub fn bole_pays(params: &Params, min_len: usize, n: usize, l: u32, square: bool) -> bool {
    min_len == 0 || (n >= min_len && bole_product_bits(params, n, square) <= n as f64 * ot_product_bits(l, square))
}

/// Queries kept for reuse (FIFO, both parties mirror it; AGREEMENT). Two suffice for the
/// power chains of Seg4GeLU / P4 / SiLU (`x`, `x²` reused by `x³ = x²·x` and `x⁴ = (x²)²`); each
/// entry holds the received ciphertexts on P1 (≈ 100–150 MB per 2^20 elements).
pub const QUERY_CACHE: usize = 2;
const _: () = assert!(QUERY_CACHE >= 2);

/// The duplex bOLEe's split of `n` products on a key set of `slots` slots per chunk (AGREEMENT:
/// a public function of `n`): `Some(a)` when there are two chunks or more — P0 queries the
/// elements `[0, a)`, the first `⌈c/2⌉` whole chunks, P1 the rest — else `None` (one chunk
/// cannot be halved without sending two ciphertexts for one).
///
/// Why: a bOLEe product is one query flight and one response flight, each one way, so a
/// full-duplex link idles in the other direction. Split, both halves' queries cross at once,
/// then both responses: each direction carries half the bytes, in the same bytes in total,
/// for one more one-way latency (the second party's queries leave once it holds its operand,
/// one flight after the first party's). Every named link gains from two chunks on: half of a
/// 2-chunk narrow square is 0.6 MB, 51 ms at 100 Mbit/s against `blb-wan3`'s 40 ms, 5 ms
/// against the LAN's 0.5 ms.
pub fn duplex_split(n: usize, slots: usize) -> Option<usize> {
    let c = n.div_ceil(slots.max(1));
    (c >= 2).then(|| (c.div_ceil(2) * slots).min(n))
}

/// The bOLEe parameters with only the first two CRT primes of `Params::bumblebee_bole()` as
/// plaintext modulus (same ciphertext primes, same noise flooding per ciphertext).
pub fn bole_narrow_params() -> Result<Params, NnError> {
    let wide = Params::bumblebee_bole();
    let ts = match &wide.literal().plain {
        PlainModulus::Crt(ts) if ts.len() >= 2 => ts[..2].to_vec(),
        _ => return Err(NnError::BadArgument("bOLEe preset without ≥ 2 CRT primes".into())),
    };
    let lit = ParamsLiteral { plain: PlainModulus::Crt(ts), ..wide.literal().clone() };
    Params::new(lit).map_err(be)
}

/// One cached query: P0 keeps its share (to recognise the operand), P1 the ciphertexts.
enum Cached {
    Sent { share: Vec<u64> },
    Received(ReceivedQuery),
}

struct CacheEntry {
    id: u32,
    l: u32,
    /// The elements the query covers: `[off, off + len)` of the product's vectors (a duplex
    /// product's half, or the whole).
    off: usize,
    len: usize,
    q: Cached,
}

impl SecureOpts {
    /// BumbleBee's configuration: `(l, f) = (64, 18)`, bOLEe products, Ferret b13.
    pub fn bumblebee() -> Self {
        SecureOpts {
            format: FixedPoint::BUMBLEBEE,
            mul: MulProtocol::Bole,
            producer: Producer::Ferret(FerretParams::b13()),
            bole_min_len: BOLE_MIN_LEN,
            bole_narrow: true,
            reuse_queries: true,
            bole_duplex: false,
            compare: Comparison::Millionaire,
        }
    }

    /// Fast setup for tests: Ferret's small (b13 bootstrap) parameter set, OT products.
    pub fn test() -> Self {
        SecureOpts {
            format: FixedPoint::BUMBLEBEE,
            mul: MulProtocol::Ot,
            producer: Producer::Ferret(FerretParams::small()),
            bole_min_len: BOLE_MIN_LEN,
            bole_narrow: true,
            reuse_queries: true,
            bole_duplex: false,
            compare: Comparison::Millionaire,
        }
    }

    pub fn with_mul(mut self, mul: MulProtocol) -> Self {
        self.mul = mul;
        self
    }

    pub fn with_producer(mut self, producer: Producer) -> Self {
        self.producer = producer;
        self
    }

    pub fn with_compare(mut self, c: Comparison) -> Self {
        self.compare = c;
        self
    }

    pub fn with_format(mut self, fp: FixedPoint) -> Self {
        self.format = fp;
        self
    }

    pub fn with_bole_min_len(mut self, n: usize) -> Self {
        self.bole_min_len = n;
        self
    }

    pub fn with_bole_narrow(mut self, on: bool) -> Self {
        self.bole_narrow = on;
        self
    }

    pub fn with_reuse_queries(mut self, on: bool) -> Self {
        self.reuse_queries = on;
        self
    }

    pub fn with_bole_duplex(mut self, on: bool) -> Self {
        self.bole_duplex = on;
        self
    }
}

impl Default for SecureOpts {
    fn default() -> Self {
        Self::bumblebee()
    }
}

fn be<E: std::error::Error + Send + Sync + 'static>(e: E) -> NnError {
    NnError::Backend(Box::new(e))
}

/// One party's secure backend over a borrowed channel (see module docs).
pub struct SecureBackend<'c> {
    ch: &'c mut dyn Channel,
    role: Role,
    fp: FixedPoint,
    mpc: Mpc,
    he: Option<HeSession>,
    he_narrow: Option<HeSession>,
    prg: Prg,
    opts: SecureOpts,
    cache: VecDeque<CacheEntry>,
    next_id: u32,
}

impl<'c> SecureBackend<'c> {
    /// Session setup over `ch`: the OT session (base OTs both directions, `opts.producer`) and,
    /// with [`MulProtocol::Bole`], the bOLEe HE key exchange (`Params::bumblebee_bole()`, no
    /// Galois keys; with `opts.bole_narrow` a second one for [`bole_narrow_params`]). `prg` must be freshly seeded for this session (e.g. `Prg::from_entropy()`);
    /// the OT session and the HE keys get forks of it.
    pub fn setup(role: Role, ch: &'c mut dyn Channel, mut prg: Prg, opts: SecureOpts) -> Result<Self, NnError> {
        let mut mpc = Mpc::setup(role, &mut *ch, prg.fork(), opts.producer).map_err(be)?;
        mpc.set_comparison(opts.compare).map_err(be)?;
        let (he, he_narrow) = match opts.mul {
            MulProtocol::Bole => {
                let mut kp = prg.fork();
                let he = HeSession::setup(&mut *ch, role, Params::bumblebee_bole(), false, &mut kp).map_err(be)?;
                let narrow = if opts.bole_narrow {
                    Some(HeSession::setup(&mut *ch, role, bole_narrow_params()?, false, &mut kp).map_err(be)?)
                } else {
                    None
                };
                (Some(he), narrow)
            }
            MulProtocol::Ot => (None, None),
        };
        Ok(SecureBackend { ch, role, fp: opts.format, mpc, he, he_narrow, prg, opts, cache: VecDeque::new(), next_id: 0 })
    }

    /// A backend from pieces set up elsewhere (e.g. by the model layer, which shares the OT
    /// session and the bOLEe keys with its own protocols). With [`MulProtocol::Bole`], `he`
    /// must hold bOLEe keys (`Params::bumblebee_bole()`), else an error; `he_narrow` (keys for
    /// [`bole_narrow_params`]) is used for `l <= 32` when given and `opts.bole_narrow` is set.
    pub fn from_parts(
        ch: &'c mut dyn Channel,
        mut mpc: Mpc,
        he: Option<HeSession>,
        he_narrow: Option<HeSession>,
        prg: Prg,
        opts: SecureOpts,
    ) -> Result<Self, NnError> {
        if opts.mul == MulProtocol::Bole && he.is_none() {
            return Err(NnError::BadArgument("MulProtocol::Bole needs an HeSession with bOLEe keys".into()));
        }
        let he_narrow = if opts.bole_narrow { he_narrow } else { None };
        mpc.set_comparison(opts.compare).map_err(be)?;
        Ok(SecureBackend {
            role: mpc.role(),
            ch,
            fp: opts.format,
            mpc,
            he,
            he_narrow,
            prg,
            opts,
            cache: VecDeque::new(),
            next_id: 0,
        })
    }

    /// This party's role (P0 = server, P1 = client).
    pub fn role(&self) -> Role {
        self.role
    }

    /// The options of this session.
    pub fn opts(&self) -> &SecureOpts {
        &self.opts
    }

    /// Traffic counters of the channel (cumulative; subtract two readings to cost a stretch).
    pub fn stats(&self) -> Stats {
        self.ch.stats()
    }

    /// The channel, for protocols outside this backend (same session, same order on both sides).
    pub fn channel_mut(&mut self) -> &mut dyn Channel {
        &mut *self.ch
    }

    /// All pieces at once: channel, share-level context, bOLEe keys (if any), PRG.
    pub fn parts(&mut self) -> (&mut dyn Channel, &mut Mpc, Option<&HeSession>, &mut Prg) {
        (&mut *self.ch, &mut self.mpc, self.he.as_ref(), &mut self.prg)
    }

    /// Cumulative traffic and time of the input-independent preprocessing so far (ROTL
    /// rotations; [`nectar_mpc::Mpc::prepro_cost`]): subtract two readings to split a stretch
    /// into preprocessing and online.
    pub fn prepro_cost(&self) -> PreproCost {
        self.mpc.prepro_cost()
    }

    /// COTs consumed so far by this party's sending and receiving pools.
    pub fn cots_consumed(&mut self) -> u64 {
        let (a, b) = self.mpc.ot().pools();
        a.consumed() + b.consumed()
    }

    /// Takes the pieces back (the channel borrow ends with `self`): OT context, bOLEe keys
    /// (wide, narrow), PRG.
    pub fn into_parts(self) -> (Mpc, Option<HeSession>, Option<HeSession>, Prg) {
        (self.mpc, self.he, self.he_narrow, self.prg)
    }

    /// Drops the cached bOLEe queries (frees memory between layers; both parties must call it
    /// at the same point, AGREEMENT).
    pub fn clear_query_cache(&mut self) {
        self.cache.clear();
    }

    fn l(&self) -> u32 {
        self.fp.l()
    }

    fn mask(&self) -> u64 {
        match self.l() {
            l if l >= 64 => u64::MAX,
            l => (1u64 << l) - 1,
        }
    }

    fn same(op: &'static str, a: usize, b: usize) -> Result<(), NnError> {
        if a == b {
            Ok(())
        } else {
            Err(NnError::Length { op, a, b })
        }
    }

    fn check_const(op: &'static str, n: usize, c: &[u64]) -> Result<(), NnError> {
        if c.len() == 1 || c.len() == n {
            Ok(())
        } else {
            Err(NnError::Length { op, a: n, b: c.len() })
        }
    }

    fn zip(&self, op: &'static str, x: &[u64], y: &[u64], f: impl Fn(u64, u64) -> u64) -> Result<Vec<u64>, NnError> {
        Self::same(op, x.len(), y.len())?;
        let m = self.mask();
        Ok(x.iter().zip(y).map(|(&a, &b)| f(a, b) & m).collect())
    }

    /// bOLEe for `n` products in `Z_{2^l}`? A public decision (both parties know `n`, `l` and
    /// the options): [`bole_pays`] on the key set that would serve them (the narrow one for
    /// `l <= NARROW_MAX_L` when present). A bOLEe query set keeps its size down to one element
    /// (whole chunks of `N` slots) while an OT product costs `≈ l²/2` bits per element and cross
    /// term, so short vectors and narrow rings take OT products: e.g. at `l = 64` a product of
    /// fewer than ≈ 2 800 elements, at `l = 45` a square of fewer than ≈ 4 600 (a decoder's
    /// 1536-wide SiLU and its RMSNorm's 576 products, softmax's reciprocal over 1536 rows).
    fn use_bole(&self, n: usize, l: u32, square: bool) -> bool {
        if self.opts.mul != MulProtocol::Bole {
            return false;
        }
        let narrow = if l <= NARROW_MAX_L { self.he_narrow.as_ref() } else { None };
        match narrow.or(self.he.as_ref()) {
            Some(he) => bole_pays(&he.params, self.opts.bole_min_len, n, l, square),
            None => false,
        }
    }

    /// Ring product (no truncation) of two shared vectors (`y = None`: square).
    fn ring_product(&mut self, x: &[u64], y: Option<&[u64]>) -> Result<Vec<u64>, NnError> {
        let l = self.l();
        if self.use_bole(x.len(), l, y.is_none()) {
            self.bole_product(x, y)
        } else {
            match y {
                Some(y) => self.mpc.mul(&mut *self.ch, x, y, l).map_err(be),
                None => self.mpc.square(&mut *self.ch, x, l).map_err(be),
            }
        }
    }

    /// Π_mul / Π_square from bOLEe queries (BumbleBee §IV–V) with query reuse (§V-A3).
    ///
    /// P0 (query side) first sends a header naming, per operand, either a cached query id or
    /// "fresh"; then the fresh queries (encryptions of its shares under its own key); P1 answers
    /// `q(x0) ⊠ y1 + q(y0) ⊠ x1` (mul) or `q(x0) ⊠ 2x1` (square) in one H2A response. Shares:
    /// P0 `x0·y0 + r0`, P1 `x1·y1 + r1`. A query is reused when P0's share vector (and `l`,
    /// length) equals a cached one: the ciphertext then encrypts the same plaintext, and the
    /// response is freshly flooded, so reuse reveals to P1 that P0's two shares are equal. For
    /// shares of computed values that happens only for the same shared value (`x` in `x²` and
    /// `x²·x`); but P0's share of a *server input* is the weight itself, so equal weight
    /// vectors would show as a reuse: callers clear the cache at every operator boundary
    /// ([`SecureBackend::clear_query_cache`]; the model's engine does, in `timed`), so reuse
    /// happens only inside one operator.
    /// Flights: 2 (header + queries, response), as without reuse.
    fn bole_product(&mut self, x: &[u64], y: Option<&[u64]>) -> Result<Vec<u64>, NnError> {
        let l = self.l();
        let m = self.mask();
        let narrow = l <= NARROW_MAX_L && self.he_narrow.is_some();
        if self.opts.bole_duplex {
            let slots = (if narrow { self.he_narrow.as_ref() } else { self.he.as_ref() }).map_or(0, |h| h.params.n());
            if let Some(a) = duplex_split(x.len(), slots) {
                return self.bole_duplex(x, y, a, narrow);
            }
        }
        let ops: Vec<&[u64]> = match y {
            Some(y) => vec![x, y],
            None => vec![x],
        };
        let n = x.len();
        let local: Vec<u64> = match y {
            Some(y) => x.iter().zip(y).map(|(a, b)| a.wrapping_mul(*b) & m).collect(),
            None => x.iter().map(|a| a.wrapping_mul(*a) & m).collect(),
        };
        let r = match self.role {
            Role::Server => {
                // header: per operand (flag, id): flag 1 = reuse id, 0 = fresh (gets the next id)
                let mut header = Vec::with_capacity(5 * ops.len());
                let mut fresh = Vec::new();
                for (k, op) in ops.iter().enumerate() {
                    let hit = if self.opts.reuse_queries {
                        self.cache.iter().find(|e| {
                            e.l == l && e.off == 0 && e.len == n && matches!(&e.q, Cached::Sent { share } if share.as_slice() == *op)
                        })
                    } else {
                        None
                    };
                    match hit {
                        Some(e) => {
                            header.push(1u8);
                            header.extend_from_slice(&e.id.to_le_bytes());
                        }
                        None => {
                            header.push(0u8);
                            header.extend_from_slice(&0u32.to_le_bytes());
                            fresh.push(k);
                            let id = self.next_id;
                            self.next_id = self.next_id.wrapping_add(1);
                            self.push_cache(CacheEntry {
                                id,
                                l,
                                off: 0,
                                len: n,
                                q: Cached::Sent { share: op.to_vec() },
                            });
                        }
                    }
                }
                self.ch.send(&header).map_err(be)?;
                let he = (if narrow { self.he_narrow.as_ref() } else { self.he.as_ref() })
                    .ok_or_else(|| NnError::BadArgument("no bOLEe session".into()))?;
                let fresh_ops: Vec<&[u64]> = fresh.iter().map(|&k| ops[k]).collect();
                nectar_linear::bole::send_queries(&mut *self.ch, he, &fresh_ops, l, &mut self.prg).map_err(be)?;
                self.ch.flush().map_err(be)?;
                nectar_linear::bole::receive_response(&mut *self.ch, he, SentQuery { len: n, l }).map_err(be)?
            }
            Role::Client => {
                let header = self.ch.recv().map_err(be)?;
                if header.len() != 5 * ops.len() {
                    return Err(NnError::Backend(
                        format!("bOLEe header of {} bytes, expected {}", header.len(), 5 * ops.len()).into(),
                    ));
                }
                // Per operand: a query received earlier (reuse) or the next fresh one. The fresh
                // ones enter the cache after the exchange, in header order, as the server's did
                // (the server found every reused id before it evicted anything for them).
                let mut refs: Vec<Result<u32, usize>> = Vec::with_capacity(ops.len());
                let mut fresh = 0usize;
                for h in header.chunks(5) {
                    let id = u32::from_le_bytes([h[1], h[2], h[3], h[4]]);
                    match h[0] {
                        // a reuse of this header's own fresh query (`mul(x, x)`): not cached yet
                        1 if (id.wrapping_sub(self.next_id) as usize) < fresh => {
                            refs.push(Err(id.wrapping_sub(self.next_id) as usize))
                        }
                        1 => refs.push(Ok(id)),
                        0 => {
                            refs.push(Err(fresh));
                            fresh += 1;
                        }
                        f => return Err(NnError::Backend(format!("bOLEe header flag {f}").into())),
                    }
                }
                let he = match if narrow { self.he_narrow.as_ref() } else { self.he.as_ref() } {
                    Some(h) => h,
                    None => return Err(NnError::BadArgument("no bOLEe session".into())),
                };
                let cache = &self.cache;
                let query = |r: &Result<u32, usize>| -> Result<QueryRef<'_>, NnError> {
                    match *r {
                        Err(f) => Ok(QueryRef::Fresh(f)),
                        Ok(id) => match cache.iter().find(|e| e.id == id && e.l == l && e.off == 0 && e.len == n) {
                            Some(CacheEntry { q: Cached::Received(q), .. }) => Ok(QueryRef::Held(q)),
                            _ => Err(NnError::Backend(format!("peer reuses unknown bOLEe query {id}").into())),
                        },
                    }
                };
                let two: Vec<u64>;
                let terms: Vec<(QueryRef<'_>, &[u64])> = match (y, refs.as_slice()) {
                    // q(x0) ⊠ y1 + q(y0) ⊠ x1
                    (Some(y), [rx, ry]) => vec![(query(rx)?, y), (query(ry)?, x)],
                    (None, [rx]) => {
                        two = x.iter().map(|v| v.wrapping_mul(2) & m).collect();
                        vec![(query(rx)?, two.as_slice())]
                    }
                    _ => return Err(NnError::Backend("bOLEe header does not match the product".into())),
                };
                let (received, r) =
                    nectar_linear::bole::recv_and_respond(&mut *self.ch, he, n, l, fresh, &terms, &mut self.prg)
                        .map_err(be)?;
                for q in received {
                    let id = self.next_id;
                    self.next_id = self.next_id.wrapping_add(1);
                    self.push_cache(CacheEntry { id, l, off: 0, len: n, q: Cached::Received(q) });
                }
                r
            }
        };
        if !self.opts.reuse_queries {
            self.cache.clear();
        }
        // P1's response was the last message: P1 leads the next step (its truncation's
        // corrections then ride on the response's flight; `nectar_mpc` module `ctx`).
        self.mpc.set_lead(Role::Client);
        if r.len() != n {
            return Err(NnError::Length { op: "bOLEe response", a: r.len(), b: n });
        }
        Ok(local.iter().zip(r).map(|(a, b)| a.wrapping_add(b) & m).collect())
    }

    /// Π_mul / Π_square *duplex* ([`SecureOpts::bole_duplex`], [`duplex_split`]): P0 queries
    /// the elements `[0, a)` under its key and answers P1's queries of `[a, n)`, and P1 the
    /// converse — BumbleBee's bOLEe (§IV) run once per half with the roles swapped, both halves
    /// in the same two flights ([`Channel::send_while_receiving`]: query frames, then answer
    /// frames). Each party's H2A floods under the peer's key as the simplex response does
    /// (`nectar_linear::h2a`, the budget per key). Query reuse per half: a header byte per
    /// operand names a cached query of this half (1, its id), another operand of the same
    /// header (2, its index) or a fresh one (0); fresh queries get ids P0's half first, then
    /// P1's, on both sides. The lead is kept: its party, whose queries left first, holds its
    /// result first.
    fn bole_duplex(&mut self, x: &[u64], y: Option<&[u64]>, a: usize, narrow: bool) -> Result<Vec<u64>, NnError> {
        let (l, m, n) = (self.l(), self.mask(), x.len());
        let ops: Vec<&[u64]> = match y {
            Some(y) => vec![x, y],
            None => vec![x],
        };
        let server = self.role == Role::Server;
        let (mine, theirs) = if server { (0..a, a..n) } else { (a..n, 0..a) };
        // This party's half: a header and its fresh queries.
        let mut header = Vec::with_capacity(5 * ops.len());
        let mut fresh: Vec<&[u64]> = Vec::new();
        for (k, op) in ops.iter().enumerate() {
            let part = &op[mine.clone()];
            let hit = self.cache.iter().find(|e| {
                self.opts.reuse_queries
                    && e.l == l
                    && e.off == mine.start
                    && e.len == part.len()
                    && matches!(&e.q, Cached::Sent { share } if share.as_slice() == part)
            });
            let same = ops[..k].iter().position(|o| &o[mine.clone()] == part);
            let (flag, id) = match (hit, same) {
                (Some(e), _) => (1u8, e.id),
                (None, Some(j)) => (2u8, j as u32),
                (None, None) => {
                    fresh.push(part);
                    (0u8, 0u32)
                }
            };
            header.push(flag);
            header.extend_from_slice(&id.to_le_bytes());
        }
        let he = (if narrow { self.he_narrow.as_ref() } else { self.he.as_ref() })
            .ok_or_else(|| NnError::BadArgument("no bOLEe session".into()))?;
        let qframe = nectar_linear::bole::query_frame(he, &fresh, l, &mut self.prg).map_err(be)?;
        let first = self.mpc.lead() == self.role;
        let got = self.ch.send_while_receiving(&[header, qframe], 2, first).map_err(be)?;
        let (peer_header, peer_q) = match got.as_slice() {
            [h, q] if h.len() == 5 * ops.len() => (h, q),
            _ => return Err(NnError::Backend("duplex bOLEe: a malformed header or query frame".into())),
        };
        // The peer's half: its queries named as terms of this party's answer.
        let mut peer_fresh = 0usize;
        let mut refs: Vec<QueryRef<'_>> = Vec::with_capacity(ops.len());
        for (k, h) in peer_header.chunks(5).enumerate() {
            let id = u32::from_le_bytes([h[1], h[2], h[3], h[4]]);
            let r = match h[0] {
                0 => {
                    peer_fresh += 1;
                    QueryRef::Fresh(peer_fresh - 1)
                }
                1 => match self.cache.iter().find(|e| e.id == id && e.l == l && e.off == theirs.start && e.len == theirs.len()) {
                    Some(CacheEntry { q: Cached::Received(q), .. }) => QueryRef::Held(q),
                    _ => return Err(NnError::Backend(format!("peer reuses unknown bOLEe query {id}").into())),
                },
                2 if (id as usize) < k => refs[id as usize],
                f => return Err(NnError::Backend(format!("duplex bOLEe header flag {f}").into())),
            };
            refs.push(r);
        }
        let two: Vec<u64>;
        let terms: Vec<(QueryRef<'_>, &[u64])> = match (y, refs.as_slice()) {
            // q(x_peer) ⊠ y_mine + q(y_peer) ⊠ x_mine
            (Some(y), [rx, ry]) => vec![(*rx, &y[theirs.clone()]), (*ry, &x[theirs.clone()])],
            (None, [rx]) => {
                two = x[theirs.clone()].iter().map(|v| v.wrapping_mul(2) & m).collect();
                vec![(*rx, two.as_slice())]
            }
            _ => return Err(NnError::Backend("duplex bOLEe header does not match the product".into())),
        };
        let (received, answers, theirs_share) =
            nectar_linear::bole::answer_frame(he, peer_q, theirs.len(), l, peer_fresh, &terms, &mut self.prg).map_err(be)?;
        let got = self.ch.send_while_receiving(&[answers], 1, first).map_err(be)?;
        let mine_share = match got.as_slice() {
            [f] => nectar_linear::bole::decrypt_frame(he, f, SentQuery { len: mine.len(), l }).map_err(be)?,
            _ => return Err(NnError::Backend("duplex bOLEe: no answer frame".into())),
        };
        // Cache: fresh queries of P0's half first, then of P1's (the same ids on both sides).
        if self.opts.reuse_queries {
            let sent: Vec<Cached> = fresh.iter().map(|f| Cached::Sent { share: f.to_vec() }).collect();
            let got: Vec<Cached> = received.into_iter().map(Cached::Received).collect();
            let halves = if server { [(mine.clone(), sent), (theirs.clone(), got)] } else { [(theirs.clone(), got), (mine.clone(), sent)] };
            for (range, qs) in halves {
                for q in qs {
                    let id = self.next_id;
                    self.next_id = self.next_id.wrapping_add(1);
                    self.push_cache(CacheEntry { id, l, off: range.start, len: range.len(), q });
                }
            }
        } else {
            self.cache.clear();
        }
        let (first_half, second_half) = if server { (mine_share, theirs_share) } else { (theirs_share, mine_share) };
        if first_half.len() + second_half.len() != n {
            return Err(NnError::Length { op: "duplex bOLEe response", a: first_half.len() + second_half.len(), b: n });
        }
        let local = (0..n).map(|i| match y {
            Some(y) => x[i].wrapping_mul(y[i]),
            None => x[i].wrapping_mul(x[i]),
        });
        Ok(local.zip(first_half.into_iter().chain(second_half)).map(|(p, r)| p.wrapping_add(r) & m).collect())
    }

    /// FIFO insert (capacity [`QUERY_CACHE`] ≥ 2: a product's two fresh queries must fit;
    /// twice that under duplex products, whose operands are queried in two halves).
    fn push_cache(&mut self, e: CacheEntry) {
        let cap = if self.opts.bole_duplex { 2 * QUERY_CACHE } else { QUERY_CACHE };
        while self.cache.len() >= cap {
            self.cache.pop_front();
        }
        self.cache.push_back(e);
    }
}

impl Backend for SecureBackend<'_> {
    type Val = Vec<u64>;
    type Bit = Vec<bool>;

    fn format(&self) -> FixedPoint {
        self.fp
    }
    fn set_format(&mut self, fp: FixedPoint) {
        self.fp = fp;
    }
    fn len(&self, x: &Vec<u64>) -> usize {
        x.len()
    }
    fn bit_len(&self, b: &Vec<bool>) -> usize {
        b.len()
    }

    fn constant(&mut self, c: &[u64]) -> Result<Vec<u64>, NnError> {
        self.mpc.constant(c, self.l()).map_err(be)
    }
    fn gather(&mut self, x: &Vec<u64>, idx: &[usize]) -> Result<Vec<u64>, NnError> {
        idx.iter()
            .map(|&i| x.get(i).copied().ok_or(NnError::Index { op: "gather", index: i, len: x.len() }))
            .collect()
    }
    fn gather_bits(&mut self, b: &Vec<bool>, idx: &[usize]) -> Result<Vec<bool>, NnError> {
        idx.iter()
            .map(|&i| b.get(i).copied().ok_or(NnError::Index { op: "gather_bits", index: i, len: b.len() }))
            .collect()
    }
    fn concat(&mut self, xs: &[&Vec<u64>]) -> Result<Vec<u64>, NnError> {
        Ok(xs.iter().flat_map(|x| x.iter().copied()).collect())
    }
    fn concat_bits(&mut self, bs: &[&Vec<bool>]) -> Result<Vec<bool>, NnError> {
        Ok(bs.iter().flat_map(|x| x.iter().copied()).collect())
    }
    fn sum_groups(&mut self, x: &Vec<u64>, group: usize) -> Result<Vec<u64>, NnError> {
        if group == 0 || !x.len().is_multiple_of(group) {
            return Err(NnError::Length { op: "sum_groups", a: x.len(), b: group });
        }
        let m = self.mask();
        Ok(x.chunks(group).map(|c| c.iter().fold(0u64, |a, &v| a.wrapping_add(v)) & m).collect())
    }

    fn add(&mut self, x: &Vec<u64>, y: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        self.zip("add", x, y, u64::wrapping_add)
    }
    fn sub(&mut self, x: &Vec<u64>, y: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        self.zip("sub", x, y, u64::wrapping_sub)
    }
    fn neg(&mut self, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        let m = self.mask();
        Ok(x.iter().map(|&a| a.wrapping_neg() & m).collect())
    }
    fn add_const(&mut self, x: &Vec<u64>, c: &[u64]) -> Result<Vec<u64>, NnError> {
        Self::check_const("add_const", x.len(), c)?;
        self.mpc.add_public(x, c, self.l()).map_err(be)
    }
    fn mul_const(&mut self, x: &Vec<u64>, c: &[u64], shift: u32) -> Result<Vec<u64>, NnError> {
        Self::check_const("mul_const", x.len(), c)?;
        let y = self.mpc.mul_public(x, c, self.l()).map_err(be)?;
        self.trunc(&y, shift)
    }

    fn mul(&mut self, x: &Vec<u64>, y: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        Self::same("mul", x.len(), y.len())?;
        if x.is_empty() {
            return Ok(vec![]);
        }
        let p = self.ring_product(x, Some(y))?;
        let f = self.fp.f();
        self.trunc(&p, f)
    }
    fn square(&mut self, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        if x.is_empty() {
            return Ok(vec![]);
        }
        let p = self.ring_product(x, None)?;
        let f = self.fp.f();
        self.trunc(&p, f)
    }
    fn trunc(&mut self, x: &Vec<u64>, shift: u32) -> Result<Vec<u64>, NnError> {
        if shift == 0 || x.is_empty() {
            return Ok(x.clone());
        }
        let l = self.l();
        if shift + 2 > l {
            return Err(NnError::BadArgument(format!("truncation by {shift} in Z_2^{l}")));
        }
        self.mpc.trunc(&mut *self.ch, x, l, shift).map_err(be)
    }
    fn less_than_const(&mut self, x: &Vec<u64>, thresholds: &[u64], ignore_low_bits: u32) -> Result<Vec<Vec<bool>>, NnError> {
        let l = self.l();
        if ignore_low_bits + 2 > l {
            return Err(NnError::BadArgument(format!("ignore_low_bits {ignore_low_bits} leaves < 2 bits of Z_2^{l}")));
        }
        if x.is_empty() || thresholds.is_empty() {
            return Ok(vec![vec![]; thresholds.len()]);
        }
        self.mpc.less_than_const(&mut *self.ch, x, thresholds, l, ignore_low_bits).map_err(be)
    }
    fn msb(&mut self, x: &Vec<u64>) -> Result<Vec<bool>, NnError> {
        if x.is_empty() {
            return Ok(vec![]);
        }
        let l = self.l();
        self.mpc.msb(&mut *self.ch, x, l).map_err(be)
    }
    fn mux(&mut self, b: &Vec<bool>, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        Self::same("mux", b.len(), x.len())?;
        if x.is_empty() {
            return Ok(vec![]);
        }
        let l = self.l();
        self.mpc.mux(&mut *self.ch, b, x, l).map_err(be)
    }
    fn and(&mut self, a: &Vec<bool>, b: &Vec<bool>) -> Result<Vec<bool>, NnError> {
        Self::same("and", a.len(), b.len())?;
        if a.is_empty() {
            return Ok(vec![]);
        }
        self.mpc.and(&mut *self.ch, a, b).map_err(be)
    }
    fn xor(&mut self, a: &Vec<bool>, b: &Vec<bool>) -> Result<Vec<bool>, NnError> {
        Self::same("xor", a.len(), b.len())?;
        self.mpc.xor(a, b).map_err(be)
    }
    fn not(&mut self, a: &Vec<bool>) -> Result<Vec<bool>, NnError> {
        Ok(self.mpc.not(a))
    }
    fn b2a(&mut self, b: &Vec<bool>) -> Result<Vec<u64>, NnError> {
        if b.is_empty() {
            return Ok(vec![]);
        }
        let l = self.l();
        self.mpc.b2a(&mut *self.ch, b, l).map_err(be)
    }

    fn lut(&mut self, x: &Vec<u64>, idx: LutIndex, tables: &[&[u64]]) -> Result<Vec<Vec<u64>>, NnError> {
        let l = self.l();
        idx.check(l, tables)?;
        if x.is_empty() {
            return Ok(vec![Vec::new(); tables.len()]);
        }
        let m = self.mask();
        let im = (1u64 << idx.bits) - 1;
        let server = self.role == Role::Server;
        let low = if idx.shift == 0 { 0 } else { (1u64 << idx.shift) - 1 };
        let i: Vec<u64> = x
            .iter()
            .map(|&v| {
                let v = v & m;
                let carry = idx.exact && server && v & low != 0;
                ((v >> idx.shift) + carry as u64) & im
            })
            .collect();
        let tabs: Vec<Vec<u64>> = tables.iter().map(|t| t.iter().map(|v| v & m).collect()).collect();
        let refs: Vec<&[u64]> = tabs.iter().map(|t| t.as_slice()).collect();
        self.mpc.rotl_lut(&mut *self.ch, &i, idx.bits, &refs, l).map_err(be)
    }

    fn extend(&mut self, x: &Vec<u64>, from_bits: u32, to_bits: u32) -> Result<Vec<u64>, NnError> {
        if from_bits >= to_bits {
            return Err(NnError::BadArgument(format!("extend from {from_bits} to {to_bits} bits")));
        }
        if x.is_empty() {
            return Ok(vec![]);
        }
        self.mpc.extend(&mut *self.ch, x, from_bits, to_bits).map_err(be)
    }
    fn reduce(&mut self, x: &Vec<u64>, to_bits: u32) -> Result<Vec<u64>, NnError> {
        self.mpc.reduce(x, to_bits).map_err(be)
    }

    fn reveal(&mut self, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        if x.is_empty() {
            return Ok(vec![]);
        }
        let l = self.l();
        self.mpc.reveal(&mut *self.ch, x, l).map_err(be)
    }
    fn reveal_bits(&mut self, b: &Vec<bool>) -> Result<Vec<bool>, NnError> {
        if b.is_empty() {
            return Ok(vec![]);
        }
        self.mpc.reveal_bits(&mut *self.ch, b).map_err(be)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The narrow key set's `t` covers `NARROW_MAX_L` with Prop. 3's margin (`t >= 2^(2l + 2)`).
    #[test]
    fn narrow_modulus_covers_its_rings() {
        let p = bole_narrow_params().unwrap();
        let PlainModulus::Crt(ts) = &p.literal().plain else { panic!("CRT plaintext modulus") };
        let bits: f64 = ts.iter().map(|&t| (t as f64).log2()).sum();
        assert!(bits >= (2 * NARROW_MAX_L + 2) as f64, "log2 t = {bits}");
    }

    /// The cost model matches the wire (`nectar bench nn` measured 1 905 021 bytes for a
    /// 12 288-element square at l = 64 and 1 270 017 at l = 45 on the narrow set: the model's
    /// ciphertexts plus under 400 bytes of headers) and picks OT products for short vectors.
    #[test]
    fn bole_pays_by_the_bits() {
        let wide = Params::bumblebee_bole();
        let narrow = bole_narrow_params().unwrap();
        assert_eq!(bole_product_bits(&wide, 12_288, true) / 8.0, 1_904_640.0);
        assert_eq!(bole_product_bits(&narrow, 12_288, true) / 8.0, 1_269_760.0);
        // OT products: l = 64 product 4288 payload + choice bits and 128 COTs.
        assert_eq!(ot_product_bits(64, false), 2.0 * (64.0 * 2.0 + 2080.0));
        assert_eq!(ot_product_bits(45, true), 44.0 * 2.0 + 1034.0);
        // The crossovers: l = 64 products from ≈ 2 770 elements, l = 45 squares from ≈ 4 530.
        let first = |p: &Params, l, sq| (1..20_000).find(|&n| bole_pays(p, BOLE_MIN_LEN, n, l, sq)).unwrap();
        assert!((2700..2800).contains(&first(&wide, 64, false)), "{}", first(&wide, 64, false));
        assert!((4400..4700).contains(&first(&narrow, 45, true)), "{}", first(&narrow, 45, true));
        // MiniLM's products (12 288 and 49 152 elements) stay on bOLEe, a decoder's 1536 and 576
        // go to OT products, and 0 forces bOLEe.
        assert!(bole_pays(&wide, BOLE_MIN_LEN, 12_288, 64, false) && bole_pays(&narrow, BOLE_MIN_LEN, 12_288, 45, true));
        assert!(!bole_pays(&wide, BOLE_MIN_LEN, 1536, 64, false) && !bole_pays(&narrow, BOLE_MIN_LEN, 1536, 45, true));
        assert!(!bole_pays(&wide, BOLE_MIN_LEN, 576, 64, true));
        assert!(bole_pays(&wide, 0, 1, 64, false));
        assert!(!bole_pays(&wide, BOLE_MIN_LEN, 1000, 64, false), "below the floor");
    }
}
