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
//! 27 × 16 B = 552 960 B for 10 016 992 COTs = 0.44 bits/COT). No GGM seed, tweak or noise
//! position is ever reused: seeds are drawn fresh from the party's [`Prg`], tweaks count up per
//! direction, positions come from fresh COTs.

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
            name: "ferret_b13",
        }
    }

    /// emp-ot `ferret_b12`.
    pub const fn b12() -> Self {
        FerretParams {
            main: LpnParams { n: 10_268_672, t: 2507, k: 238_000, log_bin: 12 },
            pre: Some(LpnParams { n: 268_800, t: 1050, k: 17_384, log_bin: 8 }),
            name: "ferret_b12",
        }
    }

    /// emp-ot `ferret_b11`.
    pub const fn b11() -> Self {
        FerretParams {
            main: LpnParams { n: 10_180_608, t: 4971, k: 124_000, log_bin: 11 },
            pre: Some(LpnParams { n: 178_944, t: 699, k: 17_384, log_bin: 8 }),
            name: "ferret_b11",
        }
    }

    /// The b13 *bootstrap* shape used on its own (n = 470 016, 429 986 usable per extension,
    /// about 5.2 bits/COT): the same security level as b13 (emp-ot relies on it to seed b13)
    /// with 20× less memory and latency per refill. For tests of upper layers and for
    /// sessions that need few OTs.
    pub const fn small() -> Self {
        FerretParams {
            main: LpnParams { n: 470_016, t: 918, k: 32_768, log_bin: 9 },
            pre: None,
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

/// Bytes the sender sends per extension of shape `p` (payload only).
pub fn extension_bytes(p: &LpnParams) -> usize {
    16 * p.t * (2 * p.log_bin + 1)
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

/// Sender side of one extension: consumes `reserve` (length `p.reserve()`), returns `n` COTs
/// (in `buf`'s allocation when it has room).
#[allow(clippy::too_many_arguments)]
pub fn extend_send<C: Channel + ?Sized>(
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
    let (spc, seed) = reserve.split_at(t * h);
    let mut out = sized(buf, p.n);
    // pads: [H(q), H(q ⊕ Δ)] for every reserved SPCOT COT.
    let mut p0: Vec<u128> = spc.to_vec();
    let mut p1: Vec<u128> = spc.iter().map(|q| q ^ delta).collect();
    crh.tccr_seq(&mut p0, DOMAIN_SPCOT | *tweak);
    crh.tccr_seq(&mut p1, DOMAIN_SPCOT | *tweak);
    *tweak += (t * h) as u128;
    // The trees are independent: their seeds are drawn in tree order (the same draws as one
    // tree after another), then the trees are expanded in parallel. The message is sent and
    // flushed before the LPN encoding, so the receiver reconstructs while the sender encodes
    // (unflushed, it waited for the sender's whole extension: 0.35 s of a b13 bootstrap).
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
    ch.send(&blocks_to_bytes(&msg))?;
    ch.flush()?;
    LocalCode::new(p.k).encode(&mut out, seed);
    Ok(out)
}

/// Receiver side of one extension (output in `buf`'s allocation when it has room).
pub fn extend_recv<C: Channel + ?Sized>(
    ch: &mut C,
    crh: &Crh,
    p: &LpnParams,
    reserve: &[u128],
    tweak: &mut u128,
    buf: Vec<u128>,
) -> Result<Vec<u128>, OtError> {
    let (h, t) = (p.log_bin, p.t);
    let (spc, seed) = reserve.split_at(t * h);
    let msg = recv_blocks(ch, t * (2 * h + 1), "Ferret SPCOT message")?;
    let mut pads: Vec<u128> = spc.to_vec();
    crh.tccr_seq(&mut pads, DOMAIN_SPCOT | *tweak);
    *tweak += (t * h) as u128;
    let mut out = sized(buf, p.n);
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
    LocalCode::new(p.k).encode(&mut out, seed);
    Ok(out)
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

/// The COT sender's Ferret state for one direction.
pub struct FerretSender {
    params: FerretParams,
    iknp: IknpSender,
    reserve: Option<Vec<u128>>,
    tweak: u128,
    crh: Crh,
}

/// The COT receiver's Ferret state for one direction.
pub struct FerretReceiver {
    params: FerretParams,
    iknp: IknpReceiver,
    reserve: Option<Vec<u128>>,
    tweak: u128,
    crh: Crh,
}

impl FerretSender {
    /// Base OTs + IKNP setup (the Ferret bootstrap runs on the first [`Self::extend`]).
    pub fn setup<C: Channel + ?Sized>(ch: &mut C, params: FerretParams, prg: &mut Prg) -> Result<Self, OtError> {
        params.validate()?;
        let iknp = IknpSender::setup(ch, prg)?;
        Ok(FerretSender { params, iknp, reserve: None, tweak: 0, crh: Crh::new() })
    }

    pub fn delta(&self) -> u128 {
        self.iknp.delta()
    }

    pub fn params(&self) -> &FerretParams {
        &self.params
    }

    /// One main extension (bootstrapping first if needed), written into `buf`'s allocation
    /// when it has room; returns the usable COTs.
    pub fn extend<C: Channel + ?Sized>(&mut self, ch: &mut C, prg: &mut Prg, buf: Vec<u128>) -> Result<Extension, OtError> {
        let m = self.params.main;
        let delta = self.delta();
        let mut extra = Vec::new();
        let reserve = match self.reserve.take() {
            Some(r) => r,
            None => match self.params.pre {
                None => self.iknp.extend(ch, m.reserve())?,
                Some(pre) => {
                    let base = self.iknp.extend(ch, pre.reserve())?;
                    let mut v = extend_send(ch, &self.crh, &pre, delta, &base, &mut self.tweak, prg, Vec::new())?;
                    extra = v.split_off(m.reserve());
                    v
                }
            },
        };
        let out = extend_send(ch, &self.crh, &m, delta, &reserve, &mut self.tweak, prg, buf)?;
        drop(reserve);
        let (next, ext) = Extension::split(out, m.reserve(), extra);
        self.reserve = Some(next);
        Ok(ext)
    }
}

impl FerretReceiver {
    /// Base OTs + IKNP setup.
    pub fn setup<C: Channel + ?Sized>(ch: &mut C, params: FerretParams, prg: &mut Prg) -> Result<Self, OtError> {
        params.validate()?;
        let iknp = IknpReceiver::setup(ch, prg)?;
        Ok(FerretReceiver { params, iknp, reserve: None, tweak: 0, crh: Crh::new() })
    }

    pub fn params(&self) -> &FerretParams {
        &self.params
    }

    /// One main extension (bootstrapping first if needed), written into `buf`'s allocation
    /// when it has room; returns the usable COTs.
    pub fn extend<C: Channel + ?Sized>(&mut self, ch: &mut C, prg: &mut Prg, buf: Vec<u128>) -> Result<Extension, OtError> {
        let m = self.params.main;
        let mut extra = Vec::new();
        let reserve = match self.reserve.take() {
            Some(r) => r,
            None => match self.params.pre {
                None => self.iknp.extend(ch, m.reserve(), prg)?,
                Some(pre) => {
                    let base = self.iknp.extend(ch, pre.reserve(), prg)?;
                    let mut v = extend_recv(ch, &self.crh, &pre, &base, &mut self.tweak, Vec::new())?;
                    extra = v.split_off(m.reserve());
                    v
                }
            },
        };
        let out = extend_recv(ch, &self.crh, &m, &reserve, &mut self.tweak, buf)?;
        drop(reserve);
        let (next, ext) = Extension::split(out, m.reserve(), extra);
        self.reserve = Some(next);
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
        let b = FerretParams::b13().main;
        let bits = 8.0 * extension_bytes(&b) as f64 / FerretParams::b13().usable() as f64;
        assert!(bits < 0.45, "{bits}");
    }

    #[test]
    fn extensions_satisfy_cot_relation() {
        let p = FerretParams::insecure_tiny();
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
