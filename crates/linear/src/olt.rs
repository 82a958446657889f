//! Oblivious linear transform `[Q·V] ← OLT(Q, V)` over `Z_{2^64}` (BumbleBee §III, Alg. 1), with
//! the result compressed by InterLeave (Fig. 6), PackLWEs (KRDY⁺) or not at all (KRDY), and
//! converted to additive shares by H2A-Coeff (App. C). Also the batched form (§III-E1): `H`
//! products of the same shape whose block products are interleaved together.
//!
//! Roles: one party holds the left matrices `Q` (`k×m`), the other the right matrices `V`
//! (`m×n`). The *encryptor* is the party whose encoding needs fewer polynomials (`Q` unless
//! `k' > n'`, the role flip of Alg. 1); it encrypts its blocks under its own key and later
//! decrypts; the other party (*evaluator*) multiplies by its plaintext blocks, compresses with
//! the encryptor's Galois keys and masks (H2A).
//!
//! Steps (evaluator side in brackets):
//! 1. encryptor → evaluator: `H·m'·min(k', n')` fresh seeded ciphertexts (`n1`), at the top
//!    level or, for an evaluator's weights, at the response level ([`QueryLevel`]);
//! 2. [for each block product `(h, α, γ)`: `Σ_β ct ⊠ p̂` at [`product_level`] (the response
//!    level when this party's blocks are small, e.g. weights; else the top level, then switch
//!    down to the response level)];
//! 3. [compress: InterLeave groups of `m_w` consecutive products (`n2` automorphisms) /
//!    PackLWEs / none];
//! 4. [H2A: mask each result with `Enc_pk(0) + (r̂, 0)`]; evaluator → encryptor: `n3` ciphertexts;
//! 5. both parse their share polynomials with [`ResultLayout::parse`] (App. E, Fig. 8).
//!
//! Rounds: one flight each way. Bytes: `n1` seeded ciphertexts at the top level plus `n3`
//! ciphertexts at the response level, of which only the `b`-coefficients holding matrix entries
//! travel (all of them after InterLeave; `k_w·n_w` per ciphertext for KRDY).
//! Output: shares mod `2^64` of `Q·V`; reduce mod `2^l` for a smaller ring. The sum is exact
//! except with probability about `2^-27` per entry, where it is off by one (H2A-Coeff's LSB error,
//! see [`crate::h2a`]).

use crate::h2a;
use crate::interleave::{interleave, pack_lwes_from, AutoRing};
use crate::krdy::{encode_lhs_block_into, encode_rhs_block_into};
use crate::parse_mat::ResultLayout;
use crate::session::HeSession;
use crate::window::{Compression, OltPlan, QueryLevel};
use crate::{wire, LinearError};
use nectar_he::{Ciphertext, GaloisKeys, Params, PlainNtt, Plaintext, ProductSum};
use nectar_math::Prg;
use nectar_net::Channel;
use rayon::prelude::*;

/// Which matrix this party holds in an OLT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The left matrices `Q` (`k×m`).
    Lhs,
    /// The right matrices `V` (`m×n`).
    Rhs,
}

impl Side {
    /// The other party's side.
    pub fn peer(self) -> Side {
        match self {
            Side::Lhs => Side::Rhs,
            Side::Rhs => Side::Lhs,
        }
    }
}

/// Plaintext blocks are all prepared up front when they fit in this many bytes (LOCAL).
pub const PT_CACHE_BYTES: usize = 512 << 20;

/// Inner blocks `β` whose products an evaluator column sums in one pass over its accumulators
/// (LOCAL; [`nectar_he::ProductSum::add_many`]): that many transformed plaintext blocks
/// (128 KB each at the product level) per column worker. MiniLM's embedding `(32, 30522, 384)`
/// in `nectar bench linear --suite nectar --net lan`: 4.89 s one block at a time, 4.42 s with 4,
/// the same with 8, 4.52 s with 16.
const TERMS: usize = 4;

/// How far below `q_L/t` [`product_level`] keeps the products' noise, in bits: a standard
/// deviation `σ ≤ 2^-22·q_L/t` adds an H2A-Coeff LSB error with probability about
/// `2·sqrt(2/π)·t·σ/q_L ≤ 2^-21.7` per entry (comparable to InterLeave's key-switching noise,
/// about `2^28` at the response level, for which [`h2a::response_level`] is sized), and keeps
/// `8σ` (exceeded with probability `< 2^-47` per coefficient) `2^18` below the decryption bound
/// `q_L/(2t)`.
const PRODUCT_NOISE_HEADROOM_BITS: f64 = 22.0;

/// The level the evaluator's block products `Σ_β ct ⊠ p̂` run at (LOCAL: the encryptor sends
/// and receives exactly what it would otherwise; only the evaluator's work changes).
///
/// BumbleBee computes them at the top level and switches down to the response level after.
/// That is needed when the plaintext side is itself a uniform share (`|w| ≈ 2^63`), but not for
/// a server's weight: a received ciphertext switched down to level `L` satisfies
/// `c0 + c1·s = q_L·x/t + η (mod q_L)` with `η = (q_L/q)(e + ε) + r0 + r1·s` (rounding errors
/// `r_i ∈ [−1/2, 1/2]`, ternary `s`: `Var η ≈ (1 + 2N/3)/12`; the scaled fresh noise is below
/// `2^−40`). The exact scaling `q_L·x/t` makes `q_L·x/t ⊛ w ≡ q_L·(x·w mod t)/t (mod q_L)` for
/// any centred `w`, whatever `x` (a uniform share included), so a product accumulated over the
/// inner blocks carries the noise `Σ_β η_β ⊛ w_β`: per coefficient a sum of independent terms
/// of variance `Var η·S`, `S` = the largest sum of squares over the plaintext blocks one product
/// accumulates (a block column of `V`, or a block row of `Q`). The lowest level `L ≥
/// response` with `sqrt(Var η·S) ≤ 2^-22·q_L/t` ([`PRODUCT_NOISE_HEADROOM_BITS`]) is chosen; at
/// `L` = the response level no switch follows the products. MiniLM's weights and embedding table
/// (18 fractional bits) give `σ ≤ 2^26.3` against `2^27.9` at level 2 of
/// [`Params::bumblebee_olt`]: the plaintext transforms and the products run on two primes
/// instead of three. Shares (`S ≈ 2^132`) stay at the top level.
///
/// The choice depends on the weights' norms (the server's), so it shows in the server's
/// computing time; it is fixed per weight tensor, the same for every query and every client.
pub fn product_level(params: &Params, plan: &OltPlan, side: Side, mats: &[&[u64]], resp_level: usize) -> usize {
    let top = params.max_level();
    if resp_level >= top {
        return top;
    }
    let s = max_block_sq_norm(plan, side, mats, plain_mask(params).unwrap_or(u64::MAX));
    let var_eta = (1.0 + 2.0 * params.n() as f64 / 3.0) / 12.0;
    (resp_level..top).find(|&l| products_fit(params, var_eta, s, l)).unwrap_or(top)
}

/// Whether products whose query noise has variance `var_eta` and whose plaintext blocks have
/// the sum of squares `s` ([`product_level`]) keep `σ ≤ 2^-22·q_L/t` at level `l`.
fn products_fit(params: &Params, var_eta: f64, s: f64, l: usize) -> bool {
    let log_sigma = (var_eta * s).max(1.0).log2() / 2.0;
    let t_bits = (params.plain_modulus(0) as f64).log2();
    let log_q: f64 = params.q_moduli()[..l].iter().map(|m| (m.value() as f64).log2()).sum();
    log_sigma <= log_q - t_bits - PRODUCT_NOISE_HEADROOM_BITS
}

/// Variance of a fresh query's noise `η = e + ε`: the error (centred binomial, `σ² = η_cbd/2`)
/// plus the exact scaling's rounding (`ε ∈ [−1/2, 1/2]`, variance `1/12`).
fn fresh_noise_variance(params: &Params) -> f64 {
    params.error_variance() + 1.0 / 12.0
}

/// Whether an evaluator's plaintext blocks of `mats` (`side`) fit a fresh query at the response
/// level ([`QueryLevel::Response`]): the bound of [`product_level`] with the fresh noise
/// (`σ² + 1/12 ≈ 10.6` against `(1 + 2N/3)/12 ≈ 455` for a query switched down, 2.7 bits more
/// room): MiniLM's weights and embedding table, `σ ≤ 2^26.3` switched down ([`product_level`]),
/// give `σ ≤ 2^23.6` fresh against `2^27.0` allowed at [`Params::nectar_olt_narrow`]'s
/// response level. Which weights fit is a function of the server's weights; the client sees it
/// only as an error (none for the models here), where the top-level query's [`product_level`]
/// shows it in the server's computing time.
pub fn weight_query_fits(params: &Params, plan: &OltPlan, side: Side, mats: &[&[u64]]) -> bool {
    let s = max_block_sq_norm(plan, side, mats, plain_mask(params).unwrap_or(u64::MAX));
    products_fit(params, fresh_noise_variance(params), s, h2a::olt_response_level(params))
}

/// The level the encryptor sends its query at under `plan` ([`QueryLevel`]).
pub fn query_level(params: &Params, plan: &OltPlan) -> usize {
    match plan.query {
        QueryLevel::Top => params.max_level(),
        QueryLevel::Response => h2a::olt_response_level(params),
    }
}

/// The level an evaluator's products run at: [`product_level`] for a top-level query, the
/// response level for a low one (an error where its plaintexts do not fit it,
/// [`weight_query_fits`]).
pub fn evaluator_level(params: &Params, plan: &OltPlan, side: Side, mats: &[&[u64]]) -> Result<usize, LinearError> {
    match plan.query {
        QueryLevel::Top => Ok(product_level(params, plan, side, mats, h2a::olt_response_level(params))),
        QueryLevel::Response if weight_query_fits(params, plan, side, mats) => Ok(query_level(params, plan)),
        QueryLevel::Response => Err(LinearError::BadParams(format!(
            "the weights of this {:?} product are too large for a query at the response level \
             (olt-ring = narrow sends its weight queries there); run it with olt-ring = full",
            plan.shape
        ))),
    }
}

/// `S` of [`product_level`]: the largest sum of squares (centred entries) over the plaintext
/// blocks one accumulated product uses — all rows of a block column `γ` of `V` (`Side::Rhs`),
/// all columns of a block row `α` of `Q` (`Side::Lhs`) — over the `H` matrices. Entries are
/// centred mod `t` (`tmask = t − 1`).
fn max_block_sq_norm(plan: &OltPlan, side: Side, mats: &[&[u64]], tmask: u64) -> f64 {
    let s = plan.shape;
    let w = plan.windows;
    // Entries centred mod t = 2^bits by sign extension: v ≥ t/2 ↦ v − t, without a branch per
    // entry. This scan precedes an evaluator's weight products (SmolLM2: 135 M entries per
    // decoding step); with a branch and per-block sums it took about 3× as long.
    let sh = (64 - tmask.count_ones()).min(63);
    let centred = move |v: u64| ((((v & tmask) << sh) as i64) >> sh) as f64;
    mats.iter()
        .map(|m| match side {
            Side::Rhs => {
                // Each column's sum of squares (one accumulator per column, so the rows stream
                // through independent additions), in groups of 256 rows in parallel (MiniLM's
                // embedding table has 11.7 M entries, and this runs before the products start);
                // the groups' sums are added in order, then the columns of each block column
                // (the same floats whatever the threads).
                let parts: Vec<Vec<f64>> = m
                    .par_chunks(s.n * 256)
                    .map(|rows| {
                        let mut cols = vec![0.0f64; s.n];
                        for row in rows.chunks(s.n) {
                            for (c, &v) in cols.iter_mut().zip(row) {
                                let x = centred(v);
                                *c += x * x;
                            }
                        }
                        cols
                    })
                    .collect();
                let mut cols = vec![0.0f64; s.n];
                for p in parts {
                    cols.iter_mut().zip(p).for_each(|(c, x)| *c += x);
                }
                cols.chunks(w.nw.max(1)).map(|b| b.iter().sum::<f64>()).fold(0.0, f64::max)
            }
            Side::Lhs => m
                .chunks(s.m * w.kw)
                .map(|rows| rows.iter().map(|&v| centred(v)).map(|x| x * x).sum::<f64>())
                .fold(0.0, f64::max),
        })
        .fold(0.0, f64::max)
}

/// Ciphertexts as an [`AutoRing`] (automorphisms with the encryptor's Galois keys): the ring
/// [`crate::interleave::interleave`] and [`crate::interleave::pack_lwes`] compress an OLT's
/// block products in.
pub struct CtRing<'a> {
    /// The HE parameters of the ciphertexts.
    pub params: &'a Params,
    /// Galois keys for the automorphisms InterLeave / PackLWEs apply
    /// ([`nectar_he::keys::interleave_galois_elements`]).
    pub gk: &'a GaloisKeys,
}

impl AutoRing for CtRing<'_> {
    type Elem = Ciphertext;
    fn degree(&self) -> usize {
        self.params.n()
    }
    fn add(&self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext, LinearError> {
        let mut c = a.clone();
        c.add_assign(self.params, b)?;
        Ok(c)
    }
    fn sub(&self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext, LinearError> {
        let mut c = a.clone();
        c.sub_assign(self.params, b)?;
        Ok(c)
    }
    fn mul_monomial(&self, a: &Ciphertext, e: usize) -> Result<Ciphertext, LinearError> {
        let mut c = a.clone();
        c.mul_monomial_assign(self.params, e);
        Ok(c)
    }
    fn div_pow2(&self, a: &Ciphertext, log_d: u32) -> Result<Ciphertext, LinearError> {
        let mut c = a.clone();
        c.mul_inv_pow2_assign(self.params, log_d);
        Ok(c)
    }
    fn automorphism(&self, a: &Ciphertext, g: usize) -> Result<Ciphertext, LinearError> {
        Ok(a.automorphism(self.params, g as u64, self.gk)?)
    }
    fn add_owned(&self, mut a: Ciphertext, b: &Ciphertext) -> Result<Ciphertext, LinearError> {
        a.add_assign(self.params, b)?;
        Ok(a)
    }
    fn sub_owned(&self, mut a: Ciphertext, b: &Ciphertext) -> Result<Ciphertext, LinearError> {
        a.sub_assign(self.params, b)?;
        Ok(a)
    }
    fn mul_monomial_owned(&self, mut a: Ciphertext, e: usize) -> Result<Ciphertext, LinearError> {
        a.mul_monomial_assign(self.params, e);
        Ok(a)
    }
    fn div_pow2_owned(&self, mut a: Ciphertext, log_d: u32) -> Result<Ciphertext, LinearError> {
        a.mul_inv_pow2_assign(self.params, log_d);
        Ok(a)
    }
}

/// One party's side of a (batched) OLT: `mats` are this party's `H` row-major matrices (`k×m`
/// for [`Side::Lhs`], `m×n` for [`Side::Rhs`]). Returns this party's shares of the `H` products
/// `k×n`, concatenated, mod `2^64`.
pub fn olt<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    plan: &OltPlan,
    side: Side,
    mats: &[&[u64]],
    prg: &mut Prg,
) -> Result<Vec<u64>, LinearError> {
    olt_prepared(ch, sess, plan, side, mats, prg, None)
}

/// [`olt`] with some of this party's plaintext blocks already transformed ([`prepare_blocks`],
/// e.g. by [`crate::prefetch::Prefetch`] while other operators ran). Used only by the
/// evaluator, and only where `prepared` was made for this plan, side and level from the same
/// `mats` (the caller's promise: the blocks are a function of the matrices); every block it
/// lacks is encoded as usual, and each prepared block is dropped once used. The messages and
/// the result are those of [`olt`].
pub fn olt_prepared<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    plan: &OltPlan,
    side: Side,
    mats: &[&[u64]],
    prg: &mut Prg,
    prepared: Option<PreparedBlocks>,
) -> Result<Vec<u64>, LinearError> {
    let s = plan.shape;
    let want = match side {
        Side::Lhs => s.k * s.m,
        Side::Rhs => s.m * s.n,
    };
    if mats.is_empty() || mats.iter().any(|m| m.len() != want) {
        return Err(LinearError::BadShape(format!(
            "{side:?} matrices of {want} entries expected for {s:?}"
        )));
    }
    if plan.degree != sess.degree() {
        return Err(LinearError::BadParams(format!(
            "plan for N = {}, session N = {}",
            plan.degree,
            sess.degree()
        )));
    }
    let layout = result_layout(plan, mats.len());
    if encrypts(plan, side) {
        encryptor(ch, sess, plan, side, mats, &layout, prg)
    } else {
        evaluator(ch, sess, plan, side, mats, &layout, prg, prepared)
    }
}

/// The public layout of the result of `plan` over `batch` matrices.
pub(crate) fn result_layout(plan: &OltPlan, batch: usize) -> ResultLayout {
    ResultLayout { shape: plan.shape, windows: plan.windows, degree: plan.degree, compression: plan.compression, batch }
}

/// Whether this party's `side` of `plan` is the encryptor (it sends the query) or the evaluator.
pub(crate) fn encrypts(plan: &OltPlan, side: Side) -> bool {
    (side == Side::Rhs) == plan.rhs_encrypts
}

/// An evaluator's plaintext blocks encoded and transformed ahead of its OLT call: block `i`
/// (index `h·per + block`, the order of [`olt`]'s evaluator) where prepared, at the level
/// [`evaluator_level`] chooses for the plan and the matrices.
pub struct PreparedBlocks {
    plan: OltPlan,
    side: Side,
    level: usize,
    /// Taken (and so freed) by the evaluator's parallel tasks as they use them.
    blocks: Vec<std::sync::Mutex<Option<PlainNtt>>>,
}

impl PreparedBlocks {
    /// Blocks prepared (and not yet used).
    pub fn count(&self) -> usize {
        self.blocks.iter().filter(|b| b.lock().is_ok_and(|b| b.is_some())).count()
    }

    /// Takes block `i` out, if prepared.
    fn take(&self, i: usize) -> Option<PlainNtt> {
        self.blocks.get(i).and_then(|b| b.lock().ok()?.take())
    }
}

/// Bytes one prepared plaintext block holds at `level` (its evaluation form on `level` primes).
pub fn block_bytes(params: &Params, level: usize) -> usize {
    level * params.n() * 8
}

/// Encodes and transforms the evaluator's plaintext blocks of `mats` for `plan` and `side`, in
/// index order, at most `max_bytes` of them ([`block_bytes`] each), and stops early when `stop`
/// is set (checked between blocks). Single-threaded: meant for a background thread.
pub fn prepare_blocks(
    params: &Params,
    plan: &OltPlan,
    side: Side,
    mats: &[&[u64]],
    max_bytes: usize,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<PreparedBlocks, LinearError> {
    let level = evaluator_level(params, plan, side, mats)?;
    let tmask = plain_mask(params)?;
    let per = block_count(plan, side);
    let total = per * mats.len();
    let limit = total.min(max_bytes / block_bytes(params, level).max(1));
    let mut blocks: Vec<std::sync::Mutex<Option<PlainNtt>>> = (0..total).map(|_| std::sync::Mutex::new(None)).collect();
    let mut coeffs = vec![0u64; params.n()];
    for (i, slot) in blocks.iter_mut().enumerate().take(limit) {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let used = encode_block_into(plan, side, mats[i / per], i % per, tmask, &mut coeffs);
        let pt = PlainNtt::from_coeffs(params, &coeffs[..used], 0, level)?;
        if let Ok(s) = slot.get_mut() {
            *s = Some(pt);
        }
    }
    Ok(PreparedBlocks { plan: *plan, side, level, blocks })
}

/// The blocks of one matrix of `side`, in the order they are encrypted / indexed:
/// lhs `(α, β)` row-major over `k'×m'`, rhs `(β, γ)` over `m'×n'`.
fn block_count(plan: &OltPlan, side: Side) -> usize {
    let (kb, mb, nb) = plan.windows.blocks(plan.shape);
    match side {
        Side::Lhs => kb * mb,
        Side::Rhs => mb * nb,
    }
}

/// Whether block `idx` of `mat` (`side`, the indexing of [`block_count`]) holds an entry that
/// is nonzero mod `t` (`tmask = t − 1`).
fn block_nonzero(plan: &OltPlan, side: Side, mat: &[u64], idx: usize, tmask: u64) -> bool {
    let (s, w) = (plan.shape, plan.windows);
    let (_, mb, nb) = w.blocks(s);
    let (rows, cols, width) = match side {
        Side::Lhs => ((idx / mb) * w.kw..((idx / mb + 1) * w.kw).min(s.k), (idx % mb) * w.mw..((idx % mb + 1) * w.mw).min(s.m), s.m),
        Side::Rhs => ((idx / nb) * w.mw..((idx / nb + 1) * w.mw).min(s.m), (idx % nb) * w.nw..((idx % nb + 1) * w.nw).min(s.n), s.n),
    };
    rows.into_iter().any(|r| mat[r * width + cols.start..r * width + cols.end].iter().any(|&v| v & tmask != 0))
}

fn encode_block(plan: &OltPlan, side: Side, mat: &[u64], idx: usize, tmask: u64) -> Vec<u64> {
    let mut out = vec![0u64; plan.degree];
    encode_block_into(plan, side, mat, idx, tmask, &mut out);
    out
}

/// `t − 1` for the power-of-two plaintext modulus `t` of an OLT's `params`: entries (mod
/// `2^64`) are reduced into `Z_t` with it as they are encoded.
pub(crate) fn plain_mask(params: &Params) -> Result<u64, LinearError> {
    let t = params.plain_modulus(0);
    if !t.is_power_of_two() || t > 1u128 << 64 {
        return Err(LinearError::BadParams(format!("an OLT needs a power-of-two t <= 2^64, got {t}")));
    }
    Ok((t - 1) as u64)
}

/// [`encode_block`] into a reused buffer of `N` coefficients; returns how many leading
/// coefficients it wrote (the rest of the block is zero and `out` past them is left as it was):
/// `m_w·n_w` for an rhs block (`π_rhs` fills only those), `N` for an lhs block (whose row 0
/// wraps to the top).
fn encode_block_into(plan: &OltPlan, side: Side, mat: &[u64], idx: usize, tmask: u64, out: &mut [u64]) -> usize {
    let (_, mb, nb) = plan.windows.blocks(plan.shape);
    let used = match side {
        Side::Lhs => {
            encode_lhs_block_into(mat, plan.shape, plan.windows, idx / mb, idx % mb, out);
            out.len()
        }
        Side::Rhs => {
            let used = (plan.windows.mw * plan.windows.nw).min(out.len());
            encode_rhs_block_into(mat, plan.shape, plan.windows, idx / nb, idx % nb, &mut out[..used]);
            used
        }
    };
    // Mod 2^64 (negated lhs entries included) to mod t (a power of two divides 2^64).
    if tmask != u64::MAX {
        out[..used].iter_mut().for_each(|v| *v &= tmask);
    }
    used
}

fn encryptor<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    plan: &OltPlan,
    side: Side,
    mats: &[&[u64]],
    layout: &ResultLayout,
    prg: &mut Prg,
) -> Result<Vec<u64>, LinearError> {
    send_blocks(ch, sess, plan, side, mats, prg)?;
    open_response(ch, sess, layout)
}

/// The encryptor's query: its blocks of `mats` (`side`), encrypted under its own key at the
/// plan's [`query_level`], seeded, in frames (`wire::FRAME_CTS`), each sent as soon as it is
/// encrypted. One flight.
pub(crate) fn send_blocks<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    plan: &OltPlan,
    side: Side,
    mats: &[&[u64]],
    prg: &mut Prg,
) -> Result<(), LinearError> {
    let params = &sess.params;
    let tmask = plain_mask(params)?;
    let per = block_count(plan, side);
    let total = per * mats.len();
    let level = query_level(params, plan);
    let mut prgs: Vec<Prg> = (0..total).map(|_| prg.fork()).collect();
    for range in wire::frames(total) {
        let cts: Vec<Ciphertext> = prgs[range.clone()]
            .par_iter_mut()
            .zip(range)
            .map(|(p, i)| {
                let coeffs = encode_block(plan, side, mats[i / per], i % per, tmask);
                Ok(sess
                    .sk
                    .encrypt_at(params, &Plaintext::from_coeffs(params, &coeffs, 0)?, level, p)?)
            })
            .collect::<Result<_, LinearError>>()?;
        ch.send(&wire::cts_to_bytes(params, &cts)?)?;
        ch.flush()?; // on its way now, not when a buffer fills
    }
    Ok(())
}

/// The encryptor's end: the response, one frame per output ciphertext, each opened as it
/// arrives, parsed into this party's shares of the products.
pub(crate) fn open_response<C: Channel + ?Sized>(ch: &mut C, sess: &HeSession, layout: &ResultLayout) -> Result<Vec<u64>, LinearError> {
    let positions = layout.positions();
    let mut polys: Vec<Vec<u64>> = Vec::with_capacity(positions.len());
    for pos in positions.chunks(1) {
        polys.extend(open_frame(sess, &ch.recv()?, pos)?);
    }
    layout.parse(&polys)
}

/// The frames of `count` ciphertexts as [`send_blocks`] sends them, unparsed.
pub(crate) fn recv_frames<C: Channel + ?Sized>(ch: &mut C, count: usize) -> Result<Vec<Vec<u8>>, LinearError> {
    wire::frames(count).map(|_| Ok(ch.recv()?)).collect()
}

/// The evaluator's copy of the peer's query: `count` ciphertexts received in frames, each at
/// the agreed level `sent` (an error otherwise), switched to `level` and put in NTT form as it
/// arrives.
pub(crate) fn recv_blocks<C: Channel + ?Sized>(ch: &mut C, params: &Params, count: usize, sent: usize, level: usize) -> Result<Vec<Ciphertext>, LinearError> {
    blocks_from(params, count, sent, level, |_| Ok(ch.recv()?))
}

/// [`recv_blocks`] on frames received before ([`recv_frames`]): `frames` must be exactly the
/// query's (an error otherwise).
pub(crate) fn blocks_from_frames(params: &Params, mut frames: Vec<Vec<u8>>, count: usize, sent: usize, level: usize) -> Result<Vec<Ciphertext>, LinearError> {
    if frames.len() != wire::frames(count).count() {
        return Err(LinearError::BadShape(format!("{} query frames for {count} ciphertexts", frames.len())));
    }
    blocks_from(params, count, sent, level, |i| Ok(std::mem::take(&mut frames[i])))
}

fn blocks_from(params: &Params, count: usize, sent: usize, level: usize, mut frame: impl FnMut(usize) -> Result<Vec<u8>, LinearError>) -> Result<Vec<Ciphertext>, LinearError> {
    let mut cts: Vec<Ciphertext> = Vec::with_capacity(count);
    for (i, range) in wire::frames(count).enumerate() {
        let mut part = wire::cts_from_bytes(params, &frame(i)?, range.len())?;
        if part.iter().any(|c| c.level() != sent) {
            return Err(LinearError::BadShape(format!("query ciphertexts must be at level {sent}")));
        }
        part.par_iter_mut().try_for_each(|c| -> Result<(), LinearError> {
            c.mod_switch_to(params, level)?;
            c.to_ntt(params);
            Ok(())
        })?;
        cts.extend(part);
    }
    Ok(cts)
}

#[allow(clippy::too_many_arguments)]
fn evaluator<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    plan: &OltPlan,
    side: Side,
    mats: &[&[u64]],
    layout: &ResultLayout,
    prg: &mut Prg,
    prepared: Option<PreparedBlocks>,
) -> Result<Vec<u64>, LinearError> {
    let params = &sess.params;
    let peer_side = side.peer();
    let peer_per = block_count(plan, peer_side);
    // Blocks prepared for this plan and side carry the level `prepare_blocks` found for the
    // same matrices (the caller's promise, [`olt_prepared`]): one scan of the weights per call.
    let level = match &prepared {
        Some(p) if p.plan == *plan && p.side == side => p.level,
        _ => evaluator_level(params, plan, side, mats)?,
    };
    // The peer's query in frames, each switched to the product level as it arrives.
    let cts = recv_blocks(ch, params, peer_per * mats.len(), query_level(params, plan), level)?;
    evaluate(ch, sess, plan, side, mats, layout, prg, prepared, CtSet::All(&cts), level, false)
}

/// The channel an evaluator runs on away from its peer ([`evaluate_offline`]): it keeps what
/// is sent, in order, and has nothing to receive.
#[derive(Default)]
struct Frames(Vec<Vec<u8>>);

impl Channel for Frames {
    fn send(&mut self, msg: &[u8]) -> Result<(), nectar_net::NetError> {
        self.0.push(msg.to_vec());
        Ok(())
    }
    fn recv(&mut self) -> Result<Vec<u8>, nectar_net::NetError> {
        Err(nectar_net::NetError::Closed)
    }
    fn flush(&mut self) -> Result<(), nectar_net::NetError> {
        Ok(())
    }
    fn stats(&self) -> nectar_net::Stats {
        nectar_net::Stats::default()
    }
}

/// Ciphertexts of the encryptor's query of `plan` (the frames [`recv_frames`] takes).
pub(crate) fn query_cts(plan: &OltPlan) -> usize {
    let side = if plan.rhs_encrypts { Side::Rhs } else { Side::Lhs };
    block_count(plan, side)
}

/// The evaluator's half of an OLT (`side`, one matrix `mat`) whose query arrived earlier as
/// raw frames ([`recv_frames`]), run away from the channel (e.g. on another thread): the
/// response frames, for the caller to send in order, and this party's shares — what
/// [`olt`]'s evaluator would send and return for that query.
pub(crate) fn evaluate_offline(sess: &HeSession, plan: &OltPlan, side: Side, mat: &[u64], query: Vec<Vec<u8>>, prg: &mut Prg) -> Result<(Vec<Vec<u8>>, Vec<u64>), LinearError> {
    evaluate_frames(sess, plan, side, &[mat], query, prg)
}

/// [`evaluate_offline`] for a batch of `mats` (a batched OLT's evaluator, [`olt`]).
pub(crate) fn evaluate_frames(sess: &HeSession, plan: &OltPlan, side: Side, mats: &[&[u64]], query: Vec<Vec<u8>>, prg: &mut Prg) -> Result<(Vec<Vec<u8>>, Vec<u64>), LinearError> {
    if encrypts(plan, side) {
        return Err(LinearError::BadParams(format!("the {side:?} side of this plan encrypts")));
    }
    let want = match side {
        Side::Lhs => plan.shape.k * plan.shape.m,
        Side::Rhs => plan.shape.m * plan.shape.n,
    };
    if mats.is_empty() || mats.iter().any(|m| m.len() != want) {
        return Err(LinearError::BadShape(format!("{side:?} matrices of {want} entries expected")));
    }
    let params = &sess.params;
    let level = evaluator_level(params, plan, side, mats)?;
    let cts = blocks_from_frames(params, query, block_count(plan, side.peer()) * mats.len(), query_level(params, plan), level)?;
    let mut sink = Frames::default();
    let shares = evaluate(&mut sink, sess, plan, side, mats, &result_layout(plan, mats.len()), prg, None, CtSet::All(&cts), level, false)?;
    Ok((sink.0, shares))
}

/// The encryptor's query of a batched OLT as frames, away from the channel: what
/// [`send_blocks`] sends.
pub(crate) fn query_frames(sess: &HeSession, plan: &OltPlan, side: Side, mats: &[&[u64]], prg: &mut Prg) -> Result<Vec<Vec<u8>>, LinearError> {
    let mut sink = Frames::default();
    send_blocks(&mut sink, sess, plan, side, mats, prg)?;
    Ok(sink.0)
}

/// The encryptor's end on response frames received earlier: [`open_response`] on `frames`
/// (exactly the response's, an error otherwise).
pub(crate) fn open_frames(sess: &HeSession, layout: &ResultLayout, frames: Vec<Vec<u8>>) -> Result<Vec<u64>, LinearError> {
    let positions = layout.positions();
    if frames.len() != positions.len() {
        return Err(LinearError::BadShape(format!("{} response frames for {} ciphertexts", frames.len(), positions.len())));
    }
    let mut polys: Vec<Vec<u64>> = Vec::with_capacity(positions.len());
    for (f, pos) in frames.iter().zip(positions.chunks(1)) {
        polys.extend(open_frame(sess, f, pos)?);
    }
    layout.parse(&polys)
}

/// One response frame's ciphertexts (at the positions `pos`), opened (H2A).
fn open_frame(sess: &HeSession, frame: &[u8], pos: &[Vec<usize>]) -> Result<Vec<Vec<u64>>, LinearError> {
    wire::cts_from_bytes_partial(&sess.params, frame, pos)?.iter().map(|c| h2a::open(sess, c)).collect()
}

/// The peer's ciphertexts an evaluator multiplies: all of them, or (a one-hot lookup that
/// skips zero blocks) those of the blocks it uses, by index ([`lookup_blocks`]).
#[derive(Clone, Copy)]
pub(crate) enum CtSet<'a> {
    All(&'a [Ciphertext]),
    Some { cts: &'a std::collections::HashMap<usize, Ciphertext>, len: usize },
}

impl CtSet<'_> {
    fn len(&self) -> usize {
        match self {
            CtSet::All(c) => c.len(),
            CtSet::Some { len, .. } => *len,
        }
    }
    fn get(&self, i: usize) -> Result<&Ciphertext, LinearError> {
        match self {
            CtSet::All(c) => c.get(i),
            CtSet::Some { cts, .. } => cts.get(&i),
        }
        .ok_or_else(|| LinearError::BadShape(format!("peer ciphertext {i} not held")))
    }
}

/// For each column key of an evaluator holding `mat` (`side`) that skips zero blocks, the
/// indices of the peer's ciphertexts its products use, in order, repeated where two keys use
/// the same one (so that their count is a function of the shape alone when every key has one
/// nonzero block, e.g. one-hot rows with `k_w = 1`): what [`evaluate`] with `skip_zero` reads
/// for a single matrix (`H = 1`).
pub(crate) fn lookup_blocks(plan: &OltPlan, side: Side, mat: &[u64], tmask: u64) -> Vec<usize> {
    let (kb, mb, nb) = plan.windows.blocks(plan.shape);
    let mut out = Vec::new();
    match side {
        Side::Lhs => {
            for alpha in 0..kb {
                let nz: Vec<usize> = (0..mb).filter(|&beta| block_nonzero(plan, side, mat, alpha * mb + beta, tmask)).collect();
                for beta in if nz.is_empty() { vec![0] } else { nz } {
                    out.extend((0..nb).map(|gamma| beta * nb + gamma));
                }
            }
        }
        Side::Rhs => {
            for gamma in 0..nb {
                let nz: Vec<usize> = (0..mb).filter(|&beta| block_nonzero(plan, side, mat, beta * nb + gamma, tmask)).collect();
                for beta in if nz.is_empty() { vec![0] } else { nz } {
                    out.extend((0..kb).map(|alpha| alpha * mb + beta));
                }
            }
        }
    }
    out
}

/// The evaluator's products of its plaintext blocks of `mats` (`side`) with the peer's
/// ciphertexts `cts` (at `level`, NTT form: [`recv_blocks`]), compressed, masked (H2A) and sent
/// in frames; returns this party's shares. One flight. `skip_zero`: leave out the products of
/// all-zero plaintext blocks (a one-hot lookup's; the caller makes sure that how many are
/// left out reveals nothing, e.g. one nonzero block per row with `k_w = 1`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn evaluate<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    plan: &OltPlan,
    side: Side,
    mats: &[&[u64]],
    layout: &ResultLayout,
    prg: &mut Prg,
    prepared: Option<PreparedBlocks>,
    cts: CtSet<'_>,
    level: usize,
    skip_zero: bool,
) -> Result<Vec<u64>, LinearError> {
    let params = &sess.params;
    let n = params.n();
    let (kb, mb, nb) = plan.windows.blocks(plan.shape);
    let batch = mats.len();
    // The products run long between messages (seconds for an embedding table): they stop at
    // the next group of blocks once the session is cancelled (its peer gone).
    let cancel = ch.cancel_token();
    let peer_side = side.peer();
    let peer_per = block_count(plan, peer_side);
    if cts.len() != peer_per * batch {
        return Err(LinearError::BadShape(format!("{} peer ciphertexts for {} blocks", cts.len(), peer_per * batch)));
    }
    let resp_level = h2a::olt_response_level(params);

    // Own plaintext blocks, indexed h·per + block.
    let tmask = plain_mask(params)?;
    let per = block_count(plan, side);
    let make_pt = |i: usize| -> Result<PlainNtt, LinearError> {
        let mut coeffs = vec![0u64; n];
        let used = encode_block_into(plan, side, mats[i / per], i % per, tmask, &mut coeffs);
        Ok(PlainNtt::from_coeffs(params, &coeffs[..used], 0, level)?)
    };
    // Only an interleaved plan computes its products in several ranges (one per output
    // ciphertext) whose plaintext blocks overlap: this party's block of column key (h, γ) (or
    // (h, α)) is used once per row block α (or column block γ). Every other plan encodes each
    // block exactly once without a cache, so a cache would only hold memory (up to
    // PT_CACHE_BYTES per call: 450 MB for a MiniLM FFN matmul).
    let reused = plan.compression == Compression::Interleave
        && match side {
            Side::Rhs => kb > 1,
            Side::Lhs => nb > 1,
        };
    // Blocks prepared before the call, when they were made for this very plan, side and level.
    // The cache takes them all; otherwise each is taken by the one column that uses it.
    let pre = prepared.filter(|p| p.plan == *plan && p.side == side && p.level == level && p.blocks.len() == per * batch);
    let take_pre = |i: usize| pre.as_ref().and_then(|p| p.take(i));
    let cache: Option<Vec<PlainNtt>> = if reused && per * batch * block_bytes(params, level) <= PT_CACHE_BYTES {
        Some(
            (0..per * batch)
                .into_par_iter()
                .map(|i| take_pre(i).map_or_else(|| make_pt(i), Ok))
                .collect::<Result<_, _>>()?,
        )
    } else {
        None
    };

    // Block products b = h·k'n' + α·n' + γ for b in `lo..hi`, switched down to the response
    // level. The products that share this party's plaintext blocks (same `(h, γ)` when this
    // party holds V, same `(h, α)` when it holds Q) are computed together, so that each
    // plaintext block is encoded and transformed once per call even when it is not cached.
    let products_range = |lo: usize, hi: usize| -> Result<Vec<Ciphertext>, LinearError> {
        // Column key of product b: the products with the same key share the plaintext blocks.
        let key = |b: usize| -> usize {
            let (h, r) = (b / (kb * nb), b % (kb * nb));
            let (alpha, gamma) = (r / nb, r % nb);
            match side {
                Side::Rhs => h * nb + gamma,
                Side::Lhs => h * kb + alpha,
            }
        };
        let mut cols: Vec<(usize, Vec<usize>)> = Vec::new();
        {
            let mut index: std::collections::HashMap<usize, usize> =
                std::collections::HashMap::new();
            for b in lo..hi {
                let c = *index.entry(key(b)).or_insert_with(|| {
                    cols.push((key(b), Vec::new()));
                    cols.len() - 1
                });
                cols[c].1.push(b);
            }
        }
        let done: Vec<Vec<(usize, Ciphertext)>> = cols
            .into_par_iter()
            .map(|(_, bs)| -> Result<Vec<(usize, Ciphertext)>, LinearError> {
                // Lazy sums: one modular reduction per coefficient per product, not per β.
                let mut accs: Vec<ProductSum> = (0..bs.len())
                    .map(|_| ProductSum::new(params, level, 0))
                    .collect::<Result<_, _>>()?;
                // One coefficient buffer and TERMS transformed plaintexts per column, re-encoded
                // for every group of β (no allocation or zero fill per block). The products of
                // a group are summed in one pass over each accumulator.
                let mut coeffs = vec![0u64; n];
                let mut owned: Vec<PlainNtt> = Vec::with_capacity(TERMS);
                let idx = |b: usize, beta: usize| -> (usize, usize, usize) {
                    let (h, r) = (b / (kb * nb), b % (kb * nb));
                    let (alpha, gamma) = (r / nb, r % nb);
                    match side {
                        // This party holds V: cts are lhs blocks (α, β), pts rhs blocks (β, γ).
                        Side::Rhs => (h, alpha * mb + beta, beta * nb + gamma),
                        Side::Lhs => (h, beta * nb + gamma, alpha * mb + beta),
                    }
                };
                /// Where a group's plaintext block is: the cache, prefetched, or encoded here.
                enum Pt {
                    Cached(usize),
                    Taken(PlainNtt),
                    Owned(usize),
                }
                // The inner blocks β this column sums: all of them, or (with `skip_zero`) those
                // whose plaintext block of this party holds a nonzero entry (at least one).
                let all_betas: Vec<usize> = if skip_zero {
                    let (h0, _, _) = idx(bs[0], 0);
                    let nz: Vec<usize> = (0..mb).filter(|&beta| block_nonzero(plan, side, mats[h0], idx(bs[0], beta).2, tmask)).collect();
                    if nz.is_empty() {
                        vec![0]
                    } else {
                        nz
                    }
                } else {
                    (0..mb).collect()
                };
                for betas in all_betas.chunks(TERMS) {
                    nectar_net::check_cancel(&cancel)?;
                    // Every product of the column uses the same plaintext block per β.
                    let mut slots = Vec::with_capacity(TERMS);
                    for &beta in betas {
                        let (h0, _, pt0) = idx(bs[0], beta);
                        let i0 = h0 * per + pt0;
                        let slot = if cache.is_some() {
                            Pt::Cached(i0)
                        } else if let Some(p) = take_pre(i0) {
                            Pt::Taken(p)
                        } else {
                            let k = slots.iter().filter(|s| matches!(s, Pt::Owned(_))).count();
                            let used = encode_block_into(plan, side, mats[h0], pt0, tmask, &mut coeffs);
                            match owned.get_mut(k) {
                                Some(p) => p.refill_coeffs(params, &coeffs[..used], 0)?,
                                None => owned.push(make_pt(i0)?),
                            }
                            Pt::Owned(k)
                        };
                        slots.push(slot);
                    }
                    let pts: Vec<&PlainNtt> = slots
                        .iter()
                        .map(|s| match s {
                            Pt::Cached(i) => cache.as_ref().and_then(|c| c.get(*i)),
                            Pt::Taken(p) => Some(p),
                            Pt::Owned(k) => owned.get(*k),
                        })
                        .collect::<Option<_>>()
                        .ok_or_else(|| LinearError::BadShape("no plaintext block".into()))?;
                    accs.par_iter_mut().zip(bs.par_iter()).try_for_each(
                        |(acc, &b)| -> Result<(), LinearError> {
                            let terms: Vec<(&Ciphertext, &PlainNtt)> = betas
                                .iter()
                                .copied()
                                .zip(&pts)
                                .map(|(beta, &pt)| {
                                    let (h, ct_idx, _) = idx(b, beta);
                                    Ok((cts.get(h * peer_per + ct_idx)?, pt))
                                })
                                .collect::<Result<_, LinearError>>()?;
                            acc.add_many(params, &terms)?;
                            Ok(())
                        },
                    )?;
                }
                bs.par_iter()
                    .zip(accs)
                    .map(|(&b, acc)| {
                        let mut acc = acc
                            .finish(params)
                            .ok_or_else(|| LinearError::BadShape("empty inner dimension".into()))?;
                        acc.mod_switch_to(params, resp_level)?;
                        acc.to_coeff(params);
                        Ok((b, acc))
                    })
                    .collect()
            })
            .collect::<Result<_, _>>()?;
        let mut out: Vec<Option<Ciphertext>> = vec![None; hi - lo];
        for (b, c) in done.into_iter().flatten() {
            out[b - lo] = Some(c);
        }
        out.into_iter()
            .map(|c| c.ok_or_else(|| LinearError::BadShape("missing block product".into())))
            .collect()
    };

    let products = layout.products();
    let n_out = layout.num_polys();
    let mut prgs: Vec<Prg> = (0..n_out).map(|_| prg.fork()).collect();
    // The response: one frame per output ciphertext, sent as soon as it is masked (the
    // InterLeave and PackLWEs groups are made one after the other).
    let positions = layout.positions();
    let mut send = |g: usize, ct: &Ciphertext| -> Result<(), LinearError> {
        let pos = positions.get(g..g + 1).ok_or_else(|| LinearError::BadShape("response position".into()))?;
        ch.send(&wire::cts_to_bytes_partial(params, std::slice::from_ref(ct), pos)?)?;
        ch.flush()?;
        Ok(())
    };
    let mut shares = Vec::with_capacity(n_out);
    let gk = || {
        sess.peer_gk
            .as_ref()
            .ok_or_else(|| LinearError::BadParams("session has no Galois keys".into()))
    };
    match plan.compression {
        Compression::None => {
            let res: Vec<(Ciphertext, Vec<u64>)> = products_range(0, products)?
                .into_par_iter()
                .zip(prgs.par_iter_mut())
                .map(|(mut ct, p)| {
                    let sh = h2a::mask_coeff(sess, &mut ct, p)?;
                    Ok((ct, sh))
                })
                .collect::<Result<_, LinearError>>()?;
            for (g, (c, s)) in res.into_iter().enumerate() {
                send(g, &c)?;
                shares.push(s);
            }
        }
        Compression::Interleave => {
            // A group of fewer than `m_w` products (the last one, or the only one of a decoding
            // step's `1 × 576 × 3072`: 48 of 128) leaves garbage — other coefficients of its
            // products, i.e. sums of the evaluator's entries times the encryptor's — in the
            // absent products' slots instead of running the automorphisms that would clear them
            // ([`interleave`]). Those slots are masked and flooded by H2A like every coefficient,
            // and `c0` travels only at the used positions ([`ResultLayout::positions`]), so the
            // encryptor learns nothing from them.
            let ring = CtRing { params, gk: gk()? };
            let mw = plan.windows.mw;
            let log_gap = mw.trailing_zeros();
            for (g, p) in prgs.iter_mut().enumerate() {
                let lo = g * mw;
                let hi = ((g + 1) * mw).min(products);
                let group: Vec<Option<Ciphertext>> =
                    products_range(lo, hi)?.into_iter().map(Some).collect();
                let (mut ct, _) = interleave(&ring, group, log_gap)?;
                shares.push(h2a::mask_coeff(sess, &mut ct, p)?);
                send(g, &ct)?;
            }
        }
        Compression::PackLwes => {
            let ring = CtRing { params, gk: gk()? };
            let prods: Vec<Ciphertext> = products_range(0, products)?;
            for (g, p) in prgs.iter_mut().enumerate() {
                // Each input is a product shifted so that its entry is the constant term, made
                // when the packing tree reaches it (not all cloned up front).
                let sources = layout.pack_sources(g);
                let (mut ct, _) = pack_lwes_from(&ring, sources.len(), &|i| {
                    let (b, pos) = sources[i];
                    let mut c = prods[b].clone();
                    c.mul_monomial_assign(params, 2 * n - pos);
                    Ok(Some(c))
                })?;
                shares.push(h2a::mask_coeff(sess, &mut ct, p)?);
                send(g, &ct)?;
            }
        }
    }
    ch.flush()?;
    layout.parse(&shares)
}

#[cfg(test)]
mod norm_tests {
    use super::*;
    use crate::krdy::{Shape, Windows};
    use crate::window::{CostModel, Variant};
    use rand_core::RngCore;

    /// The block norms against their definition, entry by entry: centred mod `t` with a branch,
    /// each block's squares summed (both sides, ragged edges, several matrices, `t = 2^64`).
    #[test]
    fn max_block_sq_norm_matches_its_definition() {
        let mut prg = Prg::new([7; 16]);
        for (bits, (k, m, n), (kw, mw, nw)) in [
            (51u32, (3, 70, 45), (2, 16, 8)),
            (64, (1, 33, 100), (1, 8, 32)),
            (20, (5, 9, 7), (4, 4, 4)),
        ] {
            let tmask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            let plan = OltPlan { shape: Shape { k, m, n }, windows: Windows { kw, mw, nw }, ..OltPlan::choose(Shape { k, m, n }, 8192, Variant::Interleave, &CostModel::default()).unwrap() };
            let centred = |v: u64| {
                let v = v & tmask;
                if v > tmask / 2 { -((tmask - v) as f64 + 1.0) } else { v as f64 }
            };
            // small entries of both signs, and a few near ±t/2
            let mats: Vec<Vec<u64>> = (0..2)
                .map(|_| {
                    (0..k.max(m) * m.max(n))
                        .map(|i| {
                            let r = prg.next_u64();
                            if i % 97 == 0 { r } else { (r % 2001).wrapping_sub(1000) }
                        })
                        .collect()
                })
                .collect();
            for side in [Side::Lhs, Side::Rhs] {
                let (rows, cols, rw, cw) = match side {
                    Side::Lhs => (k, m, kw, m),
                    Side::Rhs => (m, n, m, nw),
                };
                let refs: Vec<&[u64]> = mats.iter().map(|v| &v[..rows * cols]).collect();
                let mut want = 0.0f64;
                for mat in &refs {
                    for r0 in (0..rows).step_by(rw) {
                        for c0 in (0..cols).step_by(cw) {
                            let mut sum = 0.0;
                            for r in r0..(r0 + rw).min(rows) {
                                for c in c0..(c0 + cw).min(cols) {
                                    sum += centred(mat[r * cols + c]).powi(2);
                                }
                            }
                            want = want.max(sum);
                        }
                    }
                }
                let got = max_block_sq_norm(&plan, side, &refs, tmask);
                assert!((got - want).abs() <= 1e-12 * want, "{bits} {side:?}: {got} vs {want}");
            }
        }
    }
}
