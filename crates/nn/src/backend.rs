//! The arithmetic [`Backend`] every operator of this crate is written against.
//!
//! A backend provides exactly the primitives the BumbleBee protocols provide (BumbleBee Table I,
//! §IV–§V, App. E; REFERENCE.md §2.4–2.7), each on whole vectors: one call is O(1) rounds in the
//! secure backend however long the vector. Two implementations are intended:
//!
//! - [`crate::plain::PlainBackend`], the plaintext fixed-point *twin*: `Val = Vec<u64>` holds the
//!   values themselves in `Z_{2^l}`, `Bit = Vec<bool>` the bits;
//! - the secure backend (in `nectar-mpc`, later): `Val` is one party's additive share vector,
//!   `Bit` one party's XOR share vector; it holds the channel and the OT session, hence `&mut self`.
//!
//! Every method documents its **error model**: what the secure protocol computes relative to the
//! exact result. The twin reproduces the protocol deterministically where the protocol is
//! deterministic and implements the exact (floor) semantics where the protocol is randomised
//! (truncation, bOLEe noise). Accuracy tests compare the twin to `f64`; protocol tests compare
//! the secure backend to the twin with the tolerance given here (±1–2 LSB per truncation).
//!
//! Conventions:
//! - All values live in the ring `Z_{2^l}` of the *current format* [`Backend::format`]
//!   `(l, f)`, as two's-complement fixed-point numbers with `f` fractional bits. The format is
//!   local state (AGREEMENT: both parties run the same operator code, so they switch formats at
//!   the same points). [`Backend::reduce`] / [`Backend::extend`] change the ring of a vector;
//!   the caller then calls [`Backend::set_format`] (see [`crate::mixed`]).
//! - Public constants are raw ring elements (`u64`, reduced mod `2^l`), either one (broadcast)
//!   or one per element. [`enc`] and [`enc_scaled`] encode reals.
//! - Lengths must match; a mismatch is [`NnError::Length`], never a panic.

use crate::NnError;
use nectar_math::FixedPoint;

/// The primitives of BumbleBee's 2PC layer, as seen by the operators (see module docs).
pub trait Backend {
    /// A vector of fixed-point values in `Z_{2^l}` (twin: the values; secure: one party's shares).
    type Val: Clone + std::fmt::Debug;
    /// A vector of bits (twin: the bits; secure: one party's XOR shares).
    type Bit: Clone + std::fmt::Debug;

    // ----- format and shape (local) -----

    /// The current fixed-point format `(l, f)` all `Val`s are interpreted in.
    fn format(&self) -> FixedPoint;
    /// Switch the current format (local, no communication). Values are not converted: use
    /// [`Backend::reduce`] / [`Backend::extend`] / [`Backend::trunc`] first.
    fn set_format(&mut self, fp: FixedPoint);
    /// Number of elements of a value vector.
    fn len(&self, x: &Self::Val) -> usize;
    /// Number of elements of a bit vector.
    fn bit_len(&self, b: &Self::Bit) -> usize;

    // ----- local structure -----

    /// A public vector (raw ring elements) as a `Val` (secure: P0 holds `c`, P1 holds 0). Exact.
    fn constant(&mut self, c: &[u64]) -> Result<Self::Val, NnError>;
    /// `out[i] = x[idx[i]]` (rearrange, duplicate, broadcast). Local, exact.
    fn gather(&mut self, x: &Self::Val, idx: &[usize]) -> Result<Self::Val, NnError>;
    /// `out[i] = b[idx[i]]`. Local, exact.
    fn gather_bits(&mut self, b: &Self::Bit, idx: &[usize]) -> Result<Self::Bit, NnError>;
    /// Concatenation. Local, exact.
    fn concat(&mut self, xs: &[&Self::Val]) -> Result<Self::Val, NnError>;
    /// Concatenation of bit vectors. Local, exact.
    fn concat_bits(&mut self, bs: &[&Self::Bit]) -> Result<Self::Bit, NnError>;
    /// Sums of consecutive groups of `group` elements (row sums of a row-major matrix). Local, exact
    /// (mod `2^l`).
    fn sum_groups(&mut self, x: &Self::Val, group: usize) -> Result<Self::Val, NnError>;

    // ----- local arithmetic (exact mod 2^l) -----

    /// `x + y`. Local, exact.
    fn add(&mut self, x: &Self::Val, y: &Self::Val) -> Result<Self::Val, NnError>;
    /// `x - y`. Local, exact.
    fn sub(&mut self, x: &Self::Val, y: &Self::Val) -> Result<Self::Val, NnError>;
    /// `-x`. Local, exact.
    fn neg(&mut self, x: &Self::Val) -> Result<Self::Val, NnError>;
    /// `x + c` for public ring elements `c` (one, broadcast, or one per element). Local, exact.
    fn add_const(&mut self, x: &Self::Val, c: &[u64]) -> Result<Self::Val, NnError>;
    /// `(x · c) >> shift` for public ring elements `c` (one or one per element): a local product
    /// mod `2^l`, then, if `shift > 0`, [`Backend::trunc`] by `shift`.
    /// Error model: exact for `shift = 0`; otherwise that of [`Backend::trunc`].
    fn mul_const(&mut self, x: &Self::Val, c: &[u64], shift: u32) -> Result<Self::Val, NnError>;

    // ----- interactive arithmetic -----

    /// Fixed-point product `(x · y mod 2^l) >> f`.
    /// Secure: BumbleBee Π_mul from bOLEe (§IV) — the ring product has error in {0, ±1} —
    /// followed by Cheetah approximate truncation (≤ 1 LSB, see [`Backend::trunc`]): twin vs
    /// secure within ±2 LSB. Twin: exact ring product, floor shift.
    fn mul(&mut self, x: &Self::Val, y: &Self::Val) -> Result<Self::Val, NnError>;
    /// Fixed-point square `(x² mod 2^l) >> f`. Secure: Π_square (half a Π_mul); same error model.
    fn square(&mut self, x: &Self::Val) -> Result<Self::Val, NnError>;
    /// Signed truncation `x >> shift` (arithmetic shift = floor(x / 2^shift)).
    /// Secure: Cheetah approximate truncation (REFERENCE.md §2.6 item 2), error in {0, −1} LSB
    /// (±1 after SPU's re-balancing), for `|x| < 2^(l−2)` (heuristic positive bound).
    /// Twin: exact floor.
    fn trunc(&mut self, x: &Self::Val, shift: u32) -> Result<Self::Val, NnError>;
    /// Batched comparison with public thresholds: for each threshold `t_j` (raw ring elements)
    /// one bit vector `1{x < t_j}` (BumbleBee §V-A2: one (M choose 1)-OT_{2B} per digit serves all
    /// `B` thresholds).
    ///
    /// Semantics (exact, reproduced by the twin): with `k = ignore_low_bits` and `>>` the
    /// arithmetic shift of the signed value, the bit is `MSB_{l−k}((x >> k) − (t_j >> k) mod 2^(l−k))`,
    /// i.e. for `k = 0` the MSB of `x − t_j` in `Z_{2^l}` — correct whenever `x − t_j` does not
    /// wrap (`|x| + |t_j| < 2^(l−1)`, the operators' documented input domain). `k > 0` is
    /// BumbleBee's approximate less-than (§V-A1): the MSB protocol runs on `l − k` bits.
    /// Secure error model for `k > 0`: the local share shift loses a carry, so the secure bit may
    /// differ from the twin's only for `x` within `2^k` LSB of `t_j` (`|x − t_j| < 2^k`); for
    /// `k = 0` it is exact.
    fn less_than_const(
        &mut self,
        x: &Self::Val,
        thresholds: &[u64],
        ignore_low_bits: u32,
    ) -> Result<Vec<Self::Bit>, NnError>;
    /// `MSB(x)` in `Z_{2^l}` (= `1{x < 0}`); exact (CrypTFlow2 millionaire, REFERENCE.md §2.4).
    fn msb(&mut self, x: &Self::Val) -> Result<Self::Bit, NnError>;
    /// `b ? x : 0` (F_mux from two COTs, REFERENCE.md §2.5); exact.
    fn mux(&mut self, b: &Self::Bit, x: &Self::Val) -> Result<Self::Val, NnError>;
    /// `a ∧ b` (one AND triple per element); exact.
    fn and(&mut self, a: &Self::Bit, b: &Self::Bit) -> Result<Self::Bit, NnError>;
    /// `a ⊕ b`. Local, exact.
    fn xor(&mut self, a: &Self::Bit, b: &Self::Bit) -> Result<Self::Bit, NnError>;
    /// `¬a` (one party flips its share). Local, exact.
    fn not(&mut self, a: &Self::Bit) -> Result<Self::Bit, NnError>;
    /// Bit to the ring integer 0/1 (not scaled by `2^f`) in the current ring (one COT); exact.
    fn b2a(&mut self, b: &Self::Bit) -> Result<Self::Val, NnError>;
    /// Table lookup (ROTL §IV): for every element the index `i = floor(x / 2^shift) mod 2^bits`
    /// ([`LutIndex`]) and, for every public table `T_t` of `2^bits` raw ring elements,
    /// `T_t[i]`; `out[t]`. Secure: each party shifts its own share, then one ROTL lookup serves
    /// all tables (`nectar_mpc::Mpc::rotl_lut`; one rotation per element in preprocessing, the
    /// opening of `bits` bits and one MUX per table online). Error model: the local shift loses
    /// the carry `c ∈ {0, 1}` of the shares' low `shift` bits, so the secure index is
    /// `i − c mod 2^bits` — exact when `shift = 0` or `idx.exact` (the caller guarantees
    /// `2^shift | x`; P0 then adds the carry, which it knows: its low bits are non-zero exactly
    /// when the carry is 1). The twin uses the exact `i`; table entries are exact.
    fn lut(&mut self, x: &Self::Val, idx: LutIndex, tables: &[&[u64]]) -> Result<Vec<Self::Val>, NnError>;

    // ----- ring changes (mixed bit-width, §V-C) -----

    /// Signed extension `Z_{2^from} -> Z_{2^to}` (`from < to`), BumbleBee App. E Alg. 5 with the
    /// positive heuristic. Secure: correct for `|x| < 2^(from−2)` (the heuristic offset
    /// `M = 2^(from−2)`); twin: exact signed extension. Does not change [`Backend::format`].
    fn extend(&mut self, x: &Self::Val, from_bits: u32, to_bits: u32) -> Result<Self::Val, NnError>;
    /// Reduction `Z_{2^l} -> Z_{2^to}` (each share mod `2^to`). Local, exact for values that fit
    /// `to` bits signed. Does not change [`Backend::format`].
    fn reduce(&mut self, x: &Self::Val, to_bits: u32) -> Result<Self::Val, NnError>;

    // ----- products against the server's weights -----

    /// `r ⊗ w`, the raw product truncated by `shift` (`f`: in the format; less keeps
    /// `f − shift` more fractional bits): the shared column `r` (`rows` elements) times a row
    /// of `cols` values only the server holds (`w`: `Some` on the server, `None` on the
    /// client) — a product against a private weight, an OLT in the model's engines (or OT OLEs
    /// where their bits are fewer; `norm = outer` forms `r ⊗ γ` so). The share-level backends of this crate hold no weights and
    /// refuse it.
    fn outer_weight(&mut self, r: &Self::Val, w: Option<&[u64]>, cols: usize, shift: u32) -> Result<Self::Val, NnError> {
        let _ = (r, w, cols, shift);
        Err(NnError::BadArgument(
            "a product against the server's weights (an OLT) runs on the model's engines, not on a share-level backend".into(),
        ))
    }

    // ----- output -----

    /// Open a value vector (tests and outputs; both parties learn it). Exact.
    fn reveal(&mut self, x: &Self::Val) -> Result<Vec<u64>, NnError>;
    /// Open a bit vector. Exact.
    fn reveal_bits(&mut self, b: &Self::Bit) -> Result<Vec<bool>, NnError>;
}

/// A backend behind a trait object: what every registered protocol evaluates on
/// (`nectar_math::registry`; the twin, the secure party and the model's engines all hold
/// `Vec<u64>` values and `Vec<bool>` bits), so one protocol list serves them all.
pub type DynBackend<'a> = dyn Backend<Val = Vec<u64>, Bit = Vec<bool>> + 'a;

/// Which bits of a value index a lookup table: `i = floor(x / 2^shift) mod 2^bits` (see
/// [`Backend::lut`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LutIndex {
    pub shift: u32,
    pub bits: u32,
    /// The caller guarantees `x ≡ 0 mod 2^shift` (the secure index is then exact).
    pub exact: bool,
}

impl LutIndex {
    /// Checks the index against a ring `Z_{2^l}` and the tables (each `2^bits` entries).
    pub fn check(&self, l: u32, tables: &[&[u64]]) -> Result<(), NnError> {
        if self.bits == 0 || self.shift + self.bits > l {
            return Err(NnError::BadArgument(format!(
                "lookup index bits [{}, {}) outside the ring Z_2^{l}",
                self.shift,
                self.shift + self.bits
            )));
        }
        if tables.is_empty() {
            return Err(NnError::BadArgument("lookup without a table".into()));
        }
        if let Some(t) = tables.iter().find(|t| t.len() as u64 != 1u64 << self.bits.min(63)) {
            return Err(NnError::BadArgument(format!(
                "lookup table of {} entries for a {}-bit index (needs {})",
                t.len(),
                self.bits,
                1u64 << self.bits.min(63)
            )));
        }
        Ok(())
    }
}

/// `x` encoded in the current format (`round(x·2^f) mod 2^l`); an error when out of range.
pub fn enc<B: Backend + ?Sized>(b: &B, x: f64) -> Result<u64, NnError> {
    Ok(b.format().encode::<u64>(x)?)
}

/// `round(x · 2^s) mod 2^l` for an arbitrary scale `s` (coefficients with extra precision).
pub fn enc_scaled<B: Backend + ?Sized>(b: &B, x: f64, s: u32) -> Result<u64, NnError> {
    let l = b.format().l();
    let v = (x * (s as f64).exp2()).round();
    let lim = ((l - 1) as f64).exp2();
    if !(v >= -lim && v < lim) {
        return Err(NnError::BadArgument(format!("constant {x}·2^{s} does not fit Z_2^{l}")));
    }
    Ok(ring_of(b.format()).from_signed(v as i128))
}

/// The signed integer `i` as a ring element of the current ring.
pub fn int<B: Backend + ?Sized>(b: &B, i: i64) -> u64 {
    ring_of(b.format()).from_signed(i as i128)
}

/// The ring `Z_{2^l}` of a format (formats with `l <= 64`; the backends here are `u64`-based).
pub(crate) fn ring_of(fp: FixedPoint) -> nectar_math::Ring<u64> {
    // `FixedPoint` guarantees 2 <= l; the u64 backends never accept l > 64.
    nectar_math::Ring::<u64>::new(fp.l().min(64)).expect("2 <= l <= 64")
}

/// Decode a revealed vector in the current format.
pub fn decode<B: Backend + ?Sized>(b: &B, v: &[u64]) -> Vec<f64> {
    b.format().decode_vec(v)
}
