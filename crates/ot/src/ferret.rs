//! Ferret silent correlated OT (Yang, Weng, Lan, Zhang, Wang, CCS'20), semi-honest, primal LPN
//! with regular noise, with the parameter sets of emp-ot 0.2.4 (REFERENCE.md §2.1).
//!
//! One extension turns a reserve of `M = k + t·h` COTs into `n = t·2^h` COTs:
//! 1. **MPCOT** (Ferret §5, regular noise): `t` single-point COTs, one per bin of `2^h`
//!    positions. For bin `j` the sender expands a fresh GGM tree ([`crate::ggm`]), clears the
//!    LSB of every leaf (the crate's LSB convention), and for each level `l` sends
//!    `K^l_0 ⊕ H(q)`, `K^l_1 ⊕ H(q ⊕ Δ)` with one reserved COT `q`; then
//!    `γ = Δ ⊕ XOR(leaves)`. The receiver's *random* choice bit `b_l` of that COT selects
//!    `K^l_{b_l}`, so the punctured position is `α_l = ¬b_l` — uniform and unknown to the sender,
//!    which saves the choice-correction bits and a round. The receiver rebuilds all leaves but
//!    `α`, and `leaf_α = γ ⊕ XOR(other leaves) = s_α ⊕ Δ`.
//! 2. **LPN** ([`crate::lpn`]): both parties add `A·(reserved COTs)` to their vectors; with the
//!    sender's `y = s ⊕ A·v` and the receiver's `z = r ⊕ A·w` we get `z = y ⊕ (e ⊕ A·u)·Δ`.
//! 3. **Bootstrapping**: the first `M` outputs are kept as the next extension's reserve; the
//!    remaining `n − M` are handed out. The very first reserve comes from IKNP, through one
//!    extension with the smaller `*_pre` set when the parameter set has one.
//!
//! Cost per extension: one flow, sender → receiver, `t·(2h + 1)` blocks (b13: 1280 trees ×
//! 27 × 16 B = 552 960 B for 10 016 992 COTs = 0.44 bits/COT).
//!
//! **Half-tree SPCOT** ([`Spcot::HalfTree`], Guo, Yang, Wang, Zhang, Xie, Liu, Zhao,
//! EUROCRYPT'23 §4, their SPCOT for Ferret; emp-ot's later "correlated GGM" trees, REFERENCE.md
//! §2.1): step 1 with trees whose level 1 is
//! `(k, k ⊕ Δ)` and whose nodes `p` have children `left = H(p)`, `right = p ⊕ left` (`H` the
//! tweakable circular correlation-robust hash [`Crh::tccr`], a tweak per tree, level and node).
//! Every level then XORs to `Δ`, so one reserved COT `q_l` per level carries the level: the
//! sender sends `K^l_0 ⊕ q_l` and the receiver, holding `q_l ⊕ b_l·Δ`, gets `K^l_{b_l}` (the
//! punctured position is again `α_l = ¬b_l`). The leaves XOR to `Δ` as well, so the receiver's
//! punctured leaf `XOR(other leaves) = s_α ⊕ Δ` needs no `γ`: `t·h` blocks per extension
//! instead of `t·(2h + 1)` (b13: 0.21 bits/COT, b11: 0.70), one flow, the same reserve, the
//! same hashing work (two AES per parent node either way), the same LPN step. With the LSB
//! convention (every leaf's LSB cleared, `Δ`'s LSB set) the receiver's punctured leaf is
//! `XOR(other cleared leaves) ⊕ 1`.
//!
//! No tree seed, tweak or noise position is ever reused (either SPCOT): seeds are drawn fresh
//! from the party's [`Prg`], tweaks count up per direction, positions come from fresh COTs.

use crate::crhash::Crh;
use crate::ggm;
use crate::iknp::{IknpReceiver, IknpSender};
use crate::lpn::LocalCode;
use crate::{blocks_to_bytes, recv_blocks, OtError};
use nectar_math::Prg;
use nectar_net::Channel;
use rayon::prelude::*;

/// Tweak domain of SPCOT hashes (AGREEMENT).
const DOMAIN_SPCOT: u128 = 1 << 120;
/// Tweak domain of the half-tree SPCOT's node hashes (AGREEMENT).
const DOMAIN_HALF_TREE: u128 = 2 << 120;

/// The single-point COT protocol of step 1 (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spcot {
    /// Ferret's (and emp-ot's): GGM trees, `2h + 1` blocks per tree.
    Ggm,
    /// Guo et al.'s half-trees: `h` blocks per tree (module doc).
    HalfTree,
}

/// One LPN shape (all fields SECURITY + AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LpnParams {
    /// COTs per extension, `n = t · 2^log_bin`.
    pub n: usize,
    /// Noise weight = number of GGM trees.
    pub t: usize,
    /// LPN dimension (seed length).
    pub k: usize,
    /// Tree depth (log2 of the bin size).
    pub log_bin: usize,
}

impl LpnParams {
    /// COTs consumed per extension: `k + t·log_bin`.
    pub fn reserve(&self) -> usize {
        self.k + self.t * self.log_bin
    }

    fn check(&self) -> Result<(), OtError> {
        if self.log_bin == 0 || self.log_bin > 24 || self.t == 0 || self.k == 0 {
            return Err(OtError::BadParams(format!("degenerate LPN set {self:?}")));
        }
        if self.n != self.t << self.log_bin {
            return Err(OtError::BadParams(format!("n != t·2^log_bin in {self:?}")));
        }
        if self.n <= self.reserve() {
            return Err(OtError::BadParams(format!("n must exceed the reserve in {self:?}")));
        }
        Ok(())
    }
}

/// A Ferret parameter set: the main LPN shape and an optional bootstrap shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FerretParams {
    pub main: LpnParams,
    pub pre: Option<LpnParams>,
    /// The SPCOT of both shapes.
    pub spcot: Spcot,
    /// Name for reports.
    pub name: &'static str,
}

impl FerretParams {
    /// emp-ot `ferret_b13` (default): 10 485 760 COTs per extension, 10 017 120 usable (emp-ot
    /// additionally reserves 128 for its malicious-mode check, not needed semi-honest).
    pub const fn b13() -> Self {
        FerretParams {
            main: LpnParams { n: 10_485_760, t: 1280, k: 452_000, log_bin: 13 },
            pre: Some(LpnParams { n: 470_016, t: 918, k: 32_768, log_bin: 9 }),
            spcot: Spcot::Ggm,
            name: "ferret_b13",
        }
    }

    /// emp-ot `ferret_b12`.
    pub const fn b12() -> Self {
        FerretParams {
            main: LpnParams { n: 10_268_672, t: 2507, k: 238_000, log_bin: 12 },
            pre: Some(LpnParams { n: 268_800, t: 1050, k: 17_384, log_bin: 8 }),
            spcot: Spcot::Ggm,
            name: "ferret_b12",
        }
    }

    /// emp-ot `ferret_b11`.
    pub const fn b11() -> Self {
        FerretParams {
            main: LpnParams { n: 10_180_608, t: 4971, k: 124_000, log_bin: 11 },
            pre: Some(LpnParams { n: 178_944, t: 699, k: 17_384, log_bin: 8 }),
            spcot: Spcot::Ggm,
            name: "ferret_b11",
        }
    }

    /// [`Self::b13`] with half-tree SPCOTs ([`Spcot::HalfTree`]): the same LPN shapes and
    /// security, 0.21 bits per COT instead of 0.44.
    pub const fn b13_half_tree() -> Self {
        let mut p = Self::b13();
        p.spcot = Spcot::HalfTree;
        p.name = "ferret_b13_half_tree";
        p
    }

    /// [`Self::b11`] with half-tree SPCOTs: 0.70 bits per COT instead of 1.46.
    pub const fn b11_half_tree() -> Self {
        let mut p = Self::b11();
        p.spcot = Spcot::HalfTree;
        p.name = "ferret_b11_half_tree";
        p
    }

    /// [`Self::insecure_tiny`] with half-tree SPCOTs (**INSECURE**, tests only).
    #[cfg(any(test, feature = "insecure-test-params"))]
    pub const fn insecure_tiny_half_tree() -> Self {
        let mut p = Self::insecure_tiny();
        p.spcot = Spcot::HalfTree;
        p.name = "INSECURE_tiny_half_tree";
        p
    }

    /// Bytes the sender sends per main extension (payload only).
    pub fn extension_bytes(&self) -> usize {
        extension_bytes(&self.main, self.spcot)
    }

    /// The b13 *bootstrap* shape used on its own (n = 470 016, 429 986 usable per extension,
    /// about 5.2 bits/COT): the same security level as b13 (emp-ot relies on it to seed b13)
    /// with 20× less memory and latency per refill. For tests of upper layers and for
    /// sessions that need few OTs.
    pub const fn small() -> Self {
        FerretParams {
            main: LpnParams { n: 470_016, t: 918, k: 32_768, log_bin: 9 },
            pre: None,
            spcot: Spcot::Ggm,
            name: "ferret_small",
        }
    }

    /// A toy set (**INSECURE**: k = 1024) for fast unit tests only; 15 872 usable COTs per
    /// extension, so tests cross many refills. Available in this crate's tests and, for other
    /// crates' tests, behind the `insecure-test-params` feature.
    #[cfg(any(test, feature = "insecure-test-params"))]
    pub const fn insecure_tiny() -> Self {
        FerretParams {
            main: LpnParams { n: 16_384, t: 64, k: 1024, log_bin: 8 },
            pre: Some(LpnParams { n: 4096, t: 32, k: 512, log_bin: 7 }),
            spcot: Spcot::Ggm,
            name: "INSECURE_tiny",
        }
    }

    /// Check the invariants of emp-ot's constructor.
    pub fn validate(&self) -> Result<(), OtError> {
        self.main.check()?;
        if let Some(p) = self.pre {
            p.check()?;
            if p.n < self.main.reserve() {
                return Err(OtError::BadParams(format!("bootstrap set too small: n_pre {} < {}", p.n, self.main.reserve())));
            }
        }
        Ok(())
    }

    /// Usable COTs per main extension.
    pub fn usable(&self) -> usize {
        self.main.n - self.main.reserve()
    }
}

/// Bytes the sender sends per extension of shape `p` with SPCOT `spcot` (payload only).
pub fn extension_bytes(p: &LpnParams, spcot: Spcot) -> usize {
    match spcot {
        Spcot::Ggm => 16 * p.t * (2 * p.log_bin + 1),
        Spcot::HalfTree => 16 * p.t * p.log_bin,
    }
}

/// `buf` sized to `n` blocks: a recycled allocation (of a drained pool buffer) keeps its pages,
/// so an extension does not fault in `n` fresh blocks. Old contents are left in place, not
/// zeroed: the trees overwrite every block (`n = t·2^log_bin`, [`LpnParams::check`]; each tree
/// writes all its leaves) before the LPN encoding reads them. Zeroing 168 MB per b13
/// extension was 4.6 % of a GeLU's CPU time. A buffer too small (the first extension's) is
/// replaced by a zeroed allocation, which fresh pages from the operating system satisfy without
/// a `memset` (they are zero already).
fn sized(mut buf: Vec<u128>, n: usize) -> Vec<u128> {
    if buf.capacity() < n {
        return vec![0u128; n];
    }
    buf.truncate(n);
    buf.resize(n, 0);
    buf
}

/// Sender side of one extension's interactive part with GGM trees: from `reserve` (length
/// `p.reserve()`) the trees are expanded into `n` blocks (in `buf`'s allocation when it has
/// room) and their message is sent and flushed; the LPN encoding is left to [`Local::run`].
#[allow(clippy::too_many_arguments)]
fn begin_send_ggm<C: Channel + ?Sized>(
    ch: &mut C,
    crh: &Crh,
    p: &LpnParams,
    delta: u128,
    reserve: &[u128],
    tweak: &mut u128,
    prg: &mut Prg,
    buf: Vec<u128>,
) -> Result<Vec<u128>, OtError> {
    let (h, t) = (p.log_bin, p.t);
    let spc = &reserve[..t * h];
    let mut out = sized(buf, p.n);
    // pads: [H(q), H(q ⊕ Δ)] for every reserved SPCOT COT.
    let mut p0: Vec<u128> = spc.to_vec();
    let mut p1: Vec<u128> = spc.iter().map(|q| q ^ delta).collect();
    crh.tccr_seq(&mut p0, DOMAIN_SPCOT | *tweak);
    crh.tccr_seq(&mut p1, DOMAIN_SPCOT | *tweak);
    *tweak += (t * h) as u128;
    // The trees are independent: their seeds are drawn in tree order (the same draws as one
    // tree after another), then the trees are expanded in parallel.
    let seeds: Vec<u128> = (0..t).map(|_| prg.next_u128()).collect();
    // Tree j's message: its h level pairs, then its gamma, at msg[j·(2h + 1)..].
    let mut msg = vec![0u128; t * (2 * h + 1)];
    out.par_chunks_exact_mut(1 << h)
        .zip(msg.par_chunks_exact_mut(2 * h + 1))
        .zip(seeds.par_iter())
        .enumerate()
        .for_each_init(Vec::new, |scratch, (j, ((leaves, m), &seed))| {
            let sums = ggm::expand(crh, seed, h, leaves, scratch);
            let mut gamma = delta;
            for x in leaves.iter_mut() {
                *x &= !1;
                gamma ^= *x;
            }
            for (l, (k0, k1)) in sums.iter().enumerate() {
                m[2 * l] = k0 ^ p0[j * h + l];
                m[2 * l + 1] = k1 ^ p1[j * h + l];
            }
            m[2 * h] = gamma;
        });
    send_message(ch, &msg)?;
    Ok(out)
}

/// The sender's SPCOT message, sent and flushed before its LPN encoding, so that the receiver
/// reconstructs while the sender encodes (unflushed, it waited for the sender's whole
/// extension: 0.35 s of a b13 bootstrap).
fn send_message<C: Channel + ?Sized>(ch: &mut C, msg: &[u128]) -> Result<(), OtError> {
    ch.send(&blocks_to_bytes(msg))?;
    ch.flush()?;
    Ok(())
}

/// Receiver's GGM trees from the sender's message `msg` and the reserve's SPCOT COTs `spc`
/// (pads tweaked from `tweak`): every leaf of `out` (`n` blocks), the punctured one included.
fn receive_ggm(crh: &Crh, p: &LpnParams, spc: &[u128], msg: &[u128], tweak: u128, out: &mut [u128]) {
    let h = p.log_bin;
    let mut pads: Vec<u128> = spc.to_vec();
    crh.tccr_seq(&mut pads, DOMAIN_SPCOT | tweak);
    // Trees in parallel (independent, each writes its own leaves).
    out.par_chunks_exact_mut(1 << h).enumerate().for_each_init(
        || (Vec::new(), vec![0u128; h]),
        |(scratch, keys), (j, leaves)| {
            let m = &msg[j * (2 * h + 1)..(j + 1) * (2 * h + 1)];
            let mut alpha = 0usize;
            for l in 0..h {
                let b = (spc[j * h + l] & 1) as usize;
                keys[l] = m[2 * l + b] ^ pads[j * h + l];
                alpha = (alpha << 1) | (1 - b);
            }
            ggm::reconstruct(crh, alpha, keys, leaves, scratch);
            let mut acc = m[2 * h];
            for x in leaves.iter_mut() {
                *x &= !1;
                acc ^= *x;
            }
            leaves[alpha] = acc;
        },
    );
}

/// Tweak of node `node` at level `level` of the half-tree with id `tree` (AGREEMENT): tree ids
/// count up per direction by `h` per tree (the reserve's COT index, as the GGM pads' tweaks),
/// levels `<= 24`, nodes `< 2^24` ([`LpnParams::check`] bounds `log_bin` by 24).
fn half_tree_tweak(tree: u128, level: usize, node: usize) -> u128 {
    DOMAIN_HALF_TREE | tree << 32 | (level as u128) << 24 | node as u128
}

/// The children of the `w` nodes `cur[..w]` at level `l − 1` into `nxt[..2w]`:
/// `left = H(p)`, `right = p ⊕ left` ([`crate::ggm::half_tree_children`]).
fn half_tree_level(crh: &Crh, tree: u128, l: usize, cur: &[u128], nxt: &mut [u128]) {
    crate::ggm::half_tree_children(crh, cur, nxt, |i| half_tree_tweak(tree, l, i));
}

/// The two buffers of a depth-`h` tree, ordered so that level `h` lands in `leaves`: level `l`
/// is in the first one returned when `l` is odd.
fn tree_buffers<'a>(h: usize, leaves: &'a mut [u128], scratch: &'a mut [u128]) -> (&'a mut [u128], &'a mut [u128]) {
    if h % 2 == 1 {
        (leaves, scratch)
    } else {
        (scratch, leaves)
    }
}

/// Sender's half-tree of depth `h` from root key `k`: every leaf into `leaves`, the level sums
/// `K^l_0` (XOR of the even nodes of level `l`) returned for `l = 1..=h`.
fn half_tree_expand(crh: &Crh, tree: u128, k: u128, delta: u128, leaves: &mut [u128], scratch: &mut Vec<u128>) -> Vec<u128> {
    let h = leaves.len().trailing_zeros() as usize;
    grow(scratch, leaves.len());
    let (mut cur, mut nxt) = tree_buffers(h, leaves, &mut scratch[..]);
    cur[0] = k;
    cur[1] = k ^ delta;
    let mut sums = Vec::with_capacity(h);
    sums.push(k);
    for l in 2..=h {
        let w = 1usize << (l - 1);
        half_tree_level(crh, tree, l, &cur[..w], &mut nxt[..2 * w]);
        sums.push(nxt[..2 * w].iter().step_by(2).fold(0, |a, b| a ^ b));
        std::mem::swap(&mut cur, &mut nxt);
    }
    sums
}

/// Receiver's half-tree: every leaf but `alpha` (0 there) from the off-path level sums
/// `keys[l − 1] = K^l_{¬α_l}`; every entry of `leaves` is overwritten.
fn half_tree_reconstruct(crh: &Crh, tree: u128, alpha: usize, keys: &[u128], leaves: &mut [u128], scratch: &mut Vec<u128>) {
    let h = keys.len();
    grow(scratch, leaves.len());
    let (mut cur, mut nxt) = tree_buffers(h, leaves, &mut scratch[..]);
    let a1 = (alpha >> (h - 1)) & 1;
    cur[a1] = 0;
    cur[1 - a1] = keys[0];
    let mut path = a1;
    for l in 2..=h {
        let a_l = (alpha >> (h - l)) & 1;
        let w = 1usize << (l - 1);
        half_tree_level(crh, tree, l, &cur[..w], &mut nxt[..2 * w]);
        // The unknown node's children are unknown; its child on the off-path side is the
        // level sum of that side minus the other nodes of that side.
        nxt[2 * path] = 0;
        nxt[2 * path + 1] = 0;
        let side = 1 - a_l;
        let acc = nxt[..2 * w].iter().skip(side).step_by(2).fold(keys[l - 1], |a, b| a ^ b);
        nxt[2 * path + side] = acc;
        path = 2 * path + a_l;
        std::mem::swap(&mut cur, &mut nxt);
    }
}

/// `scratch` at least `len` long (old contents stay: every level is written before it is read).
fn grow(scratch: &mut Vec<u128>, len: usize) {
    if scratch.len() < len {
        scratch.resize(len, 0);
    }
}

/// [`begin_send_ggm`] with half-tree SPCOTs ([`Spcot::HalfTree`], module doc): `t·h` blocks.
#[allow(clippy::too_many_arguments)]
fn begin_send_half_tree<C: Channel + ?Sized>(
    ch: &mut C,
    crh: &Crh,
    p: &LpnParams,
    delta: u128,
    reserve: &[u128],
    tweak: &mut u128,
    prg: &mut Prg,
    buf: Vec<u128>,
) -> Result<Vec<u128>, OtError> {
    let (h, t) = (p.log_bin, p.t);
    let spc = &reserve[..t * h];
    let mut out = sized(buf, p.n);
    let first = *tweak;
    *tweak += (t * h) as u128;
    // Root keys in tree order, then the trees in parallel (as `begin_send_ggm`).
    let roots: Vec<u128> = (0..t).map(|_| prg.next_u128()).collect();
    let mut msg = vec![0u128; t * h];
    out.par_chunks_exact_mut(1 << h)
        .zip(msg.par_chunks_exact_mut(h))
        .zip(roots.par_iter())
        .enumerate()
        .for_each_init(Vec::new, |scratch, (j, ((leaves, m), &k))| {
            let sums = half_tree_expand(crh, first + (j * h) as u128, k, delta, leaves, scratch);
            for (l, (x, s)) in m.iter_mut().zip(sums).enumerate() {
                *x = s ^ spc[j * h + l];
            }
            for x in leaves.iter_mut() {
                *x &= !1;
            }
        });
    send_message(ch, &msg)?;
    Ok(out)
}

/// [`receive_ggm`] with half-tree SPCOTs ([`Spcot::HalfTree`], module doc); trees' ids from
/// `first`.
fn receive_half_tree(crh: &Crh, p: &LpnParams, spc: &[u128], msg: &[u128], first: u128, out: &mut [u128]) {
    let h = p.log_bin;
    out.par_chunks_exact_mut(1 << h).enumerate().for_each_init(
        || (Vec::new(), vec![0u128; h]),
        |(scratch, keys), (j, leaves)| {
            // K^l_{b_l} = (K^l_0 ⊕ q_l) ⊕ (q_l ⊕ b_l·Δ); the path bit is α_l = ¬b_l.
            let mut alpha = 0usize;
            for l in 0..h {
                let tl = spc[j * h + l];
                let b = (tl & 1) as usize;
                keys[l] = msg[j * h + l] ^ tl;
                alpha = (alpha << 1) | (1 - b);
            }
            half_tree_reconstruct(crh, first + (j * h) as u128, alpha, keys, leaves, scratch);
            // The leaves XOR to Δ: the punctured leaf s_α ⊕ Δ is the XOR of the others (LSBs
            // cleared), with Δ's LSB 1.
            let mut acc = 0u128;
            for x in leaves.iter_mut() {
                *x &= !1;
                acc ^= *x;
            }
            leaves[alpha] = acc ^ 1;
        },
    );
}

/// What is left of one extension once its message has travelled: the receiver's trees and
/// both parties' LPN encoding, all local (issue 49: [`crate::pool::CotPool`] runs it on a
/// background thread while the COTs of the extension before are handed out, and joins it when
/// they run out). It owns everything it reads: the reserve it consumes, the output buffer and,
/// on the receiver's side, the message.
pub struct Local {
    p: LpnParams,
    crh: Crh,
    reserve: Vec<u128>,
    out: Vec<u128>,
    step: Step,
    /// COTs at the front of the output kept as the next extension's reserve.
    keep: usize,
    /// The bootstrap's leftovers (first extension only), handed out before this one's.
    extra: Vec<u128>,
}

enum Step {
    /// Sender: the trees are in `out`; the LPN encoding remains.
    Encode,
    /// Receiver with GGM trees: the message and the first pad's tweak.
    Ggm { msg: Vec<u128>, tweak: u128 },
    /// Receiver with half-trees: the message and the first tree id.
    Half { msg: Vec<u128>, first: u128 },
}

impl Local {
    /// The `n` COTs of the extension (trees, then the LPN encoding with the reserve's seed).
    fn output(self) -> (Vec<u128>, usize, Vec<u128>) {
        let Local { p, crh, reserve, mut out, step, keep, extra } = self;
        let (spc, seed) = reserve.split_at(p.t * p.log_bin);
        match step {
            Step::Encode => {}
            Step::Ggm { msg, tweak } => receive_ggm(&crh, &p, spc, &msg, tweak, &mut out),
            Step::Half { msg, first } => receive_half_tree(&crh, &p, spc, &msg, first, &mut out),
        }
        LocalCode::new(p.k).encode(&mut out, seed);
        (out, keep, extra)
    }

    /// Runs the local work: the next extension's reserve and this one's usable COTs (give the
    /// reserve back with [`FerretSender::done`] / [`FerretReceiver::done`]).
    pub fn run(self) -> (Vec<u128>, Extension) {
        let (out, keep, extra) = self.output();
        Extension::split(out, keep, extra)
    }
}

/// Checks the reserve's length (the local work slices it by the shape).
fn check_reserve(p: &LpnParams, reserve: &[u128]) -> Result<(), OtError> {
    if reserve.len() != p.reserve() {
        return Err(OtError::BadParams(format!("Ferret reserve of {} COTs for a shape needing {}", reserve.len(), p.reserve())));
    }
    Ok(())
}

/// One extension's usable COTs: `extra` (the bootstrap's leftovers, first extension only)
/// followed by `out[start..]`; `out[..start]` was copied out as the next extension's reserve.
/// The usable COTs stay where the extension wrote them (no shift of an `n`-sized buffer).
pub struct Extension {
    pub extra: Vec<u128>,
    pub out: Vec<u128>,
    pub start: usize,
}

impl Extension {
    /// Splits an extension's output: its first `r` COTs (copied out) are the next extension's
    /// reserve, the rest stays in place behind the bootstrap's leftovers `extra`.
    fn split(out: Vec<u128>, r: usize, extra: Vec<u128>) -> (Vec<u128>, Extension) {
        (out[..r].to_vec(), Extension { extra, out, start: r })
    }

    /// Number of usable COTs.
    pub fn len(&self) -> usize {
        self.extra.len() + self.out.len() - self.start
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The usable COTs in order, as one vector.
    #[cfg(test)]
    fn into_vec(self) -> Vec<u128> {
        let mut v = self.extra;
        v.extend_from_slice(&self.out[self.start..]);
        v
    }
}

/// Where a direction's next reserve is: not made yet (the IKNP + `pre` bootstrap makes it),
/// ready, or inside an extension begun and not finished ([`Local`]).
enum Reserve {
    Bootstrap,
    Ready(Vec<u128>),
    Pending,
}

impl Reserve {
    /// The reserve for the next extension, marking it pending; an error while one is.
    fn take(&mut self) -> Result<Option<Vec<u128>>, OtError> {
        match std::mem::replace(self, Reserve::Pending) {
            Reserve::Bootstrap => Ok(None),
            Reserve::Ready(r) => Ok(Some(r)),
            Reserve::Pending => Err(OtError::BadArgument("a Ferret extension is begun and not finished".into())),
        }
    }
}

/// The COT sender's Ferret state for one direction.
pub struct FerretSender {
    params: FerretParams,
    iknp: IknpSender,
    reserve: Reserve,
    tweak: u128,
    crh: Crh,
}

/// The COT receiver's Ferret state for one direction.
pub struct FerretReceiver {
    params: FerretParams,
    iknp: IknpReceiver,
    reserve: Reserve,
    tweak: u128,
    crh: Crh,
}

impl FerretSender {
    /// Base OTs + IKNP setup (the Ferret bootstrap runs on the first [`Self::extend`]).
    pub fn setup<C: Channel + ?Sized>(ch: &mut C, params: FerretParams, prg: &mut Prg) -> Result<Self, OtError> {
        params.validate()?;
        let iknp = IknpSender::setup(ch, prg)?;
        Ok(FerretSender { params, iknp, reserve: Reserve::Bootstrap, tweak: 0, crh: Crh::new() })
    }

    pub fn delta(&self) -> u128 {
        self.iknp.delta()
    }

    /// One extension of shape `p` from `reserve`: its message sent, its local work returned.
    fn begin_one<C: Channel + ?Sized>(&mut self, ch: &mut C, p: &LpnParams, reserve: Vec<u128>, prg: &mut Prg, buf: Vec<u128>, keep: usize, extra: Vec<u128>) -> Result<Local, OtError> {
        check_reserve(p, &reserve)?;
        let delta = self.delta();
        let out = match self.params.spcot {
            Spcot::Ggm => begin_send_ggm(ch, &self.crh, p, delta, &reserve, &mut self.tweak, prg, buf)?,
            Spcot::HalfTree => begin_send_half_tree(ch, &self.crh, p, delta, &reserve, &mut self.tweak, prg, buf)?,
        };
        Ok(Local { p: *p, crh: self.crh.clone(), reserve, out, step: Step::Encode, keep, extra })
    }

    pub fn params(&self) -> &FerretParams {
        &self.params
    }

    /// Begins one main extension (the bootstrap first if needed, run to its end here): the
    /// trees are expanded and their message sent; the LPN encoding is left in the returned
    /// [`Local`] (written into `buf`'s allocation when it has room). Until its reserve comes
    /// back through [`Self::done`], no other extension can begin.
    pub fn begin<C: Channel + ?Sized>(&mut self, ch: &mut C, prg: &mut Prg, buf: Vec<u128>) -> Result<Local, OtError> {
        let m = self.params.main;
        let mut extra = Vec::new();
        let reserve = match self.reserve.take()? {
            Some(r) => r,
            None => match self.params.pre {
                None => self.iknp.extend(ch, m.reserve())?,
                Some(pre) => {
                    let base = self.iknp.extend(ch, pre.reserve())?;
                    let (mut v, _, _) = self.begin_one(ch, &pre, base, prg, Vec::new(), 0, Vec::new())?.output();
                    extra = v.split_off(m.reserve());
                    v
                }
            },
        };
        self.begin_one(ch, &m, reserve, prg, buf, m.reserve(), extra)
    }

    /// The next extension's reserve, from a finished [`Local::run`] of the extension begun last.
    pub fn done(&mut self, next: Vec<u128>) {
        self.reserve = Reserve::Ready(next);
    }

    /// One main extension to its end (bootstrapping first if needed), written into `buf`'s
    /// allocation when it has room; returns the usable COTs.
    pub fn extend<C: Channel + ?Sized>(&mut self, ch: &mut C, prg: &mut Prg, buf: Vec<u128>) -> Result<Extension, OtError> {
        let (next, ext) = self.begin(ch, prg, buf)?.run();
        self.done(next);
        Ok(ext)
    }
}

impl FerretReceiver {
    /// Base OTs + IKNP setup.
    pub fn setup<C: Channel + ?Sized>(ch: &mut C, params: FerretParams, prg: &mut Prg) -> Result<Self, OtError> {
        params.validate()?;
        let iknp = IknpReceiver::setup(ch, prg)?;
        Ok(FerretReceiver { params, iknp, reserve: Reserve::Bootstrap, tweak: 0, crh: Crh::new() })
    }

    /// One extension of shape `p` from `reserve`: its message received, its local work returned.
    fn begin_one<C: Channel + ?Sized>(&mut self, ch: &mut C, p: &LpnParams, reserve: Vec<u128>, buf: Vec<u128>, keep: usize, extra: Vec<u128>) -> Result<Local, OtError> {
        check_reserve(p, &reserve)?;
        let (h, t) = (p.log_bin, p.t);
        let step = match self.params.spcot {
            Spcot::Ggm => {
                let msg = recv_blocks(ch, t * (2 * h + 1), "Ferret SPCOT message")?;
                Step::Ggm { msg, tweak: self.tweak }
            }
            Spcot::HalfTree => {
                let msg = recv_blocks(ch, t * h, "Ferret half-tree SPCOT message")?;
                Step::Half { msg, first: self.tweak }
            }
        };
        self.tweak += (t * h) as u128;
        Ok(Local { p: *p, crh: self.crh.clone(), reserve, out: sized(buf, p.n), step, keep, extra })
    }

    pub fn params(&self) -> &FerretParams {
        &self.params
    }

    /// Begins one main extension (the bootstrap first if needed, run to its end here): its
    /// message is received; the trees and the LPN encoding are left in the returned [`Local`].
    /// Until its reserve comes back through [`Self::done`], no other extension can begin.
    pub fn begin<C: Channel + ?Sized>(&mut self, ch: &mut C, prg: &mut Prg, buf: Vec<u128>) -> Result<Local, OtError> {
        let m = self.params.main;
        let mut extra = Vec::new();
        let reserve = match self.reserve.take()? {
            Some(r) => r,
            None => match self.params.pre {
                None => self.iknp.extend(ch, m.reserve(), prg)?,
                Some(pre) => {
                    let base = self.iknp.extend(ch, pre.reserve(), prg)?;
                    let (mut v, _, _) = self.begin_one(ch, &pre, base, Vec::new(), 0, Vec::new())?.output();
                    extra = v.split_off(m.reserve());
                    v
                }
            },
        };
        self.begin_one(ch, &m, reserve, buf, m.reserve(), extra)
    }

    /// The next extension's reserve, from a finished [`Local::run`] of the extension begun last.
    pub fn done(&mut self, next: Vec<u128>) {
        self.reserve = Reserve::Ready(next);
    }

    /// One main extension to its end (bootstrapping first if needed), written into `buf`'s
    /// allocation when it has room; returns the usable COTs.
    pub fn extend<C: Channel + ?Sized>(&mut self, ch: &mut C, prg: &mut Prg, buf: Vec<u128>) -> Result<Extension, OtError> {
        let (next, ext) = self.begin(ch, prg, buf)?.run();
        self.done(next);
        Ok(ext)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_net::mem::run_pair;

    #[test]
    fn params_validate() {
        for p in [FerretParams::b13(), FerretParams::b12(), FerretParams::b11(), FerretParams::small(), FerretParams::insecure_tiny()] {
            p.validate().unwrap();
        }
        // emp-ot's 10 016 992 also reserves 128 COTs for the malicious-mode check; we do not.
        assert_eq!(FerretParams::b13().usable(), 10_017_120);
        let bits = |p: FerretParams| 8.0 * p.extension_bytes() as f64 / p.usable() as f64;
        assert!(bits(FerretParams::b13()) < 0.45, "{}", bits(FerretParams::b13()));
        assert!(bits(FerretParams::b13_half_tree()) < 0.22, "{}", bits(FerretParams::b13_half_tree()));
        assert!(bits(FerretParams::b11_half_tree()) < 0.71, "{}", bits(FerretParams::b11_half_tree()));
        for p in [FerretParams::b13_half_tree(), FerretParams::b11_half_tree(), FerretParams::insecure_tiny_half_tree()] {
            p.validate().unwrap();
            assert_eq!(p.spcot, Spcot::HalfTree);
        }
    }

    /// Half-tree leaves: the sender's XOR to Δ; the receiver's equal them everywhere but at α,
    /// where it has 0; α follows the COT choice bits. Depths 1 to 6, both buffer orders.
    #[test]
    fn half_trees_reconstruct_all_but_the_punctured_leaf() {
        let crh = Crh::new();
        let mut prg = Prg::new([12; 16]);
        let delta = prg.next_u128() | 1;
        for h in 1..=6usize {
            for alpha in [0, (1usize << h) - 1, (5 % (1usize << h))] {
                let mut leaves = vec![0u128; 1 << h];
                let mut scratch = Vec::new();
                let k = prg.next_u128();
                let sums = half_tree_expand(&crh, 77, k, delta, &mut leaves, &mut scratch);
                assert_eq!(leaves.iter().fold(0, |a, b| a ^ b), delta, "h {h}");
                // K^l_1 = K^l_0 ⊕ Δ: the receiver gets the off-path side's sum.
                let keys: Vec<u128> = (0..h)
                    .map(|l| {
                        let a_l = (alpha >> (h - 1 - l)) & 1;
                        sums[l] ^ if a_l == 0 { delta } else { 0 }
                    })
                    .collect();
                let mut got = vec![u128::MAX; 1 << h];
                let mut scratch = vec![u128::MAX; 3];
                half_tree_reconstruct(&crh, 77, alpha, &keys, &mut got, &mut scratch);
                for i in 0..1 << h {
                    assert_eq!(got[i], if i == alpha { 0 } else { leaves[i] }, "h {h} alpha {alpha} leaf {i}");
                }
                // another tree id gives other leaves
                let mut other = vec![0u128; 1 << h];
                half_tree_expand(&crh, 78, k, delta, &mut other, &mut Vec::new());
                if h > 1 {
                    assert_ne!(other, leaves);
                }
            }
        }
    }

    #[test]
    fn extensions_satisfy_cot_relation() {
        for p in [FerretParams::insecure_tiny(), FerretParams::insecure_tiny_half_tree()] {
            cot_relation(p);
        }
    }

    fn cot_relation(p: FerretParams) {
        let (s, r) = run_pair(
            move |c| {
                let mut prg = Prg::new([3; 16]);
                let mut f = FerretSender::setup(c, p, &mut prg).unwrap();
                let a = f.extend(c, &mut prg, Vec::new()).unwrap().into_vec();
                // The second extension reuses a dirty buffer: it must not leak into the output.
                let b = f.extend(c, &mut prg, vec![u128::MAX; 3 * p.main.n]).unwrap().into_vec();
                (f.delta(), a, b)
            },
            move |c| {
                let mut prg = Prg::new([4; 16]);
                let mut f = FerretReceiver::setup(c, p, &mut prg).unwrap();
                let a = f.extend(c, &mut prg, Vec::new()).unwrap().into_vec();
                let b = f.extend(c, &mut prg, vec![7u128; 5]).unwrap().into_vec();
                (a, b)
            },
        );
        let (delta, sa, sb) = s;
        assert_eq!(sa.len(), r.0.len());
        assert_eq!(sb.len(), p.usable());
        let mut ones = 0usize;
        for (q, t) in sa.iter().chain(&sb).zip(r.0.iter().chain(&r.1)) {
            assert_eq!(q & 1, 0);
            let b = (t & 1) as usize;
            ones += b;
            assert_eq!(*t, q ^ if b == 1 { delta } else { 0 });
        }
        let n = (sa.len() + sb.len()) as f64;
        assert!((ones as f64 / n - 0.5).abs() < 0.03, "{}", ones as f64 / n);
    }
}
