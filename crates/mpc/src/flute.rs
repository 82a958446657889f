//! FLUTE+: lookup table with **boolean** (XOR-shared) inputs (ROTL §V "Lookup table with boolean
//! inputs", REFERENCE.md §4.4), FLUTE with its `O(l·n²)` online work moved to an `O(n log n)`
//! preprocessing butterfly.
//!
//! A public table `T` of `n = 2^k` entries of `l <= 64` bits; the input index `x` is XOR-shared
//! bit by bit (`x_0` = LSB); the output is XOR shares of `T[x]`, one `u64` word per lookup.
//!
//! **Preprocessing** (input-independent). Random XOR-shared masks `α_0..α_{k−1}` (each party
//! draws its own share bits), then shares of the monomials `M(w) = ∧_{j: w_j = 0} α_j` for every
//! `w ∈ [0, n)`: `M(n−1) = 1` (P0 holds 1, P1 0), the degree-1 monomials are the `α_j` shares,
//! and each monomial of degree `d >= 2` is one `F_AND` of two monomials of degrees `⌈d/2⌉` and
//! `⌊d/2⌋` (its zero bits split in two). All monomials of degrees `(2^{r−1}, 2^r]` of all lookups
//! go into one batched [`Mpc::and`], so there are `⌈log2 k⌉` AND rounds (the paper's step 1
//! with the same `n − k − 1` ANDs per lookup, in log depth rather than one round per degree).
//! Then the butterfly (subset-sum / zeta transform over submasks, local XOR, `n·k/2` per lookup):
//! for each bit `j` and each `i` with bit `j` set, `s_i ⊕= s_{i − 2^j}`. This yields
//!
//! ```text
//! S(w) = ⊕_{u ⊆ w} M(u) = ∧_{j: w_j = 0} α_j · ∧_{j: w_j = 1} (1 ⊕ α_j) = ∧_j (α_j ⊕ w_j),
//! ```
//!
//! since in the sum over submasks `u` every bit `j` of `w` contributes `α_j` (for `u_j = 0`)
//! ⊕ `1` (for `u_j = 1`) and every zero bit of `w` always contributes `α_j`. The paper prints
//! step 2 as `s_i ⊕= s_{i + 2^j}`, which leaves `[0, n)` and contradicts its own 4-entry worked
//! example (`s_3 ⊕= s_2`, `s_1 ⊕= s_0`, then `s_2 ⊕= s_0`, `s_3 ⊕= s_1`); `i − 2^j` is the
//! transform above. The butterfly is `GF(2)`-linear, so applying it to the shares of `M` gives
//! shares of `S`.
//!
//! **Online**. Open `m_j = x_j ⊕ α_j` (one exchange, `k` bits each way per lookup); then
//! `[x = v] = ∧_j (x_j ⊕ v_j ⊕ 1) = ∧_j (α_j ⊕ (m_j ⊕ v_j ⊕ 1)) = S(¬(m ⊕ v))` (`¬` on `k` bits),
//! so each party's output share is `⊕_v T[v]·⟨S(¬(m ⊕ v))⟩`: `n` word XORs per lookup (the
//! paper's `l·n` bit XORs), local. The mask `α` is uniform and used once, so `m` reveals nothing;
//! [`FlutePrepro`] is consumed by the lookup that uses it and never reused.
//!
//! Cost per lookup (`k = log n`): preprocessing `n − k − 1` ANDs, i.e. `2(n − k − 1)` random
//! COTs (one per direction per AND, from the pools: no flow beyond refills) and `4(n − k − 1)`
//! bits (2 each way per AND, [`crate::and`]), in `⌈log2 k⌉` exchanges (2 flows each);
//! online `2k` bits (`k` each way), one exchange (2 flows). Paper (Table IV, Ferret ≈ 0.6 bits
//! per ROT): `5.2(n − log n − 1)` bits preprocessing, `2 log n` online. Exact.

use crate::words::same_len;
use crate::{Mpc, MpcError, Result};
use nectar_net::Channel;

/// Largest supported `log n` (tables of at most 4096 entries; LOCAL: bounds the `n` bits of
/// preprocessing stored per lookup and the `n` XORs per lookup online).
pub const MAX_LOG_N: u32 = 12;

/// One party's FLUTE+ preprocessing for a queue of lookups on tables of `2^log_n` entries
/// (any table of that size: the preprocessing does not depend on the table).
/// Lookup `i` owns the `α` shares `alpha[i·k .. (i+1)·k]` and the `n` shares of `S(w)` packed
/// in `s[i·W .. (i+1)·W]`, `W = ⌈n / 64⌉`, bit `w mod 64` of word `w / 64`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlutePrepro {
    log_n: u32,
    alpha: Vec<bool>,
    s: Vec<u64>,
}

impl FlutePrepro {
    /// No lookups yet, tables of `2^log_n` entries.
    pub fn empty(log_n: u32) -> Result<Self> {
        check_log_n(log_n)?;
        Ok(FlutePrepro {
            log_n,
            alpha: Vec::new(),
            s: Vec::new(),
        })
    }

    /// `log n` of the tables this preprocessing serves.
    pub fn log_n(&self) -> u32 {
        self.log_n
    }

    /// Lookups available.
    pub fn len(&self) -> usize {
        self.alpha.len() / self.log_n as usize
    }

    pub fn is_empty(&self) -> bool {
        self.alpha.is_empty()
    }

    fn words(&self) -> usize {
        words(self.log_n)
    }

    /// Remove and return the first `count` lookups (in preprocessing order, which both parties
    /// share). Error if fewer are left.
    pub fn take(&mut self, count: usize) -> Result<FlutePrepro> {
        if count > self.len() {
            return Err(MpcError::BadArgument(format!(
                "FLUTE+: {count} lookups requested, {} preprocessed",
                self.len()
            )));
        }
        let rest_a = self.alpha.split_off(count * self.log_n as usize);
        let rest_s = self.s.split_off(count * self.words());
        Ok(FlutePrepro {
            log_n: self.log_n,
            alpha: std::mem::replace(&mut self.alpha, rest_a),
            s: std::mem::replace(&mut self.s, rest_s),
        })
    }

    /// Append `other`'s lookups after this one's (same `log n`).
    pub fn append(&mut self, mut other: FlutePrepro) -> Result<()> {
        if other.log_n != self.log_n {
            return Err(MpcError::BadArgument(format!(
                "FLUTE+: appending log n = {} preprocessing to log n = {}",
                other.log_n, self.log_n
            )));
        }
        self.alpha.append(&mut other.alpha);
        self.s.append(&mut other.s);
        Ok(())
    }

    /// This party's shares of lookup `i`'s masks `α_0..α_{k−1}`.
    pub fn alpha(&self, i: usize) -> &[bool] {
        let k = self.log_n as usize;
        &self.alpha[i * k..(i + 1) * k]
    }

    /// This party's share of lookup `i`'s `S(w) = ∧_j (α_j ⊕ w_j)`.
    pub fn s_share(&self, i: usize, w: usize) -> bool {
        (self.s[i * self.words() + w / 64] >> (w % 64)) & 1 == 1
    }
}

fn check_log_n(log_n: u32) -> Result<()> {
    if !(1..=MAX_LOG_N).contains(&log_n) {
        return Err(MpcError::BadArgument(format!(
            "FLUTE+: log n = {log_n} not in 1..={MAX_LOG_N}"
        )));
    }
    Ok(())
}

fn words(log_n: u32) -> usize {
    (1usize << log_n).div_ceil(64)
}

/// Validate a public table for `l`-bit outputs and return its `log n`: a power-of-two length
/// in `[2, 2^MAX_LOG_N]`, `1 <= l <= 64`, every entry below `2^l` (the same rules as ROTL's
/// tables, [`crate::rotl_lut::check_table`]).
pub fn check_table(table: &[u64], l: u32) -> Result<u32> {
    let log_n = crate::rotl_lut::check_table(table, l)?;
    check_log_n(log_n)?;
    Ok(log_n)
}

/// Plaintext twin of [`Mpc::flute_lookup`]: `T[x]` for each index given as `log n` bits
/// (lookup-major, LSB first), with the same argument checks.
pub fn flute_twin(table: &[u64], x: &[bool], l: u32) -> Result<Vec<u64>> {
    let k = check_table(table, l)? as usize;
    if x.len() % k != 0 {
        return Err(MpcError::Length {
            what: "FLUTE+ index bits (a multiple of log n)",
            expected: x.len() / k * k,
            got: x.len(),
        });
    }
    Ok(x.chunks(k).map(|b| table[index_of(b)]).collect())
}

fn index_of(bits: &[bool]) -> usize {
    bits.iter()
        .enumerate()
        .fold(0, |a, (j, &b)| a | ((b as usize) << j))
}

/// The AND schedule of the monomials: per round, `(w, a, b)` with `M(w) = M(a) ∧ M(b)`, where
/// `a`, `b` are degree-1 monomials or products of earlier rounds. Round `r` (from 1) holds the
/// degrees in `(2^{r−1}, 2^r] ∩ [2, k]`; `n − k − 1` entries in all.
fn monomial_plan(log_n: u32) -> Vec<Vec<(usize, usize, usize)>> {
    let k = log_n as usize;
    let full = (1usize << k) - 1;
    let mut rounds = Vec::new();
    let mut lo = 1; // degrees done so far: <= lo
    while lo < k {
        let hi = (2 * lo).min(k);
        let mut r = Vec::new();
        for w in 0..=full {
            let zeros: Vec<usize> = (0..k).filter(|j| (w >> j) & 1 == 0).collect();
            let d = zeros.len();
            if d > lo && d <= hi {
                let h = d.div_ceil(2);
                let za: usize = zeros[..h].iter().map(|j| 1 << j).sum();
                let zb: usize = zeros[h..].iter().map(|j| 1 << j).sum();
                r.push((w, full ^ za, full ^ zb));
            }
        }
        rounds.push(r);
        lo = hi;
    }
    rounds
}

/// Zeta transform over submasks, in place: `s_w ← ⊕_{u ⊆ w} s_u` (module doc).
fn butterfly(s: &mut [bool], log_n: u32) {
    for j in 0..log_n {
        let h = 1usize << j;
        for i in 0..s.len() {
            if i & h != 0 {
                s[i] ^= s[i - h];
            }
        }
    }
}

impl Mpc {
    /// FLUTE+ preprocessing for `count` lookups on tables of `2^log_n` entries (module doc):
    /// `count·(n − log n − 1)` ANDs in `⌈log2 log n⌉` batched rounds, then the local butterfly.
    /// Both parties call it with the same `count`, `log_n`.
    pub fn flute_preprocess(
        &mut self,
        ch: &mut dyn Channel,
        count: usize,
        log_n: u32,
    ) -> Result<FlutePrepro> {
        check_log_n(log_n)?;
        let k = log_n as usize;
        let n = 1usize << k;
        let full = n - 1;
        let mut alpha = Vec::with_capacity(count * k);
        while alpha.len() < count * k {
            let r = self.prg().next_u128();
            let take = 128.min(count * k - alpha.len());
            alpha.extend((0..take).map(|b| (r >> b) & 1 == 1));
        }
        // Monomial shares, lookup-major: mono[i·n + w] = ⟨M(w)⟩ of lookup i.
        let p0 = self.is_server();
        let mut mono = vec![false; count * n];
        for i in 0..count {
            let m = &mut mono[i * n..(i + 1) * n];
            m[full] = p0;
            for j in 0..k {
                m[full ^ (1 << j)] = alpha[i * k + j];
            }
        }
        for round in monomial_plan(log_n) {
            let mut a = Vec::with_capacity(count * round.len());
            let mut b = Vec::with_capacity(count * round.len());
            for i in 0..count {
                for &(_, wa, wb) in &round {
                    a.push(mono[i * n + wa]);
                    b.push(mono[i * n + wb]);
                }
            }
            let z = self.and(ch, &a, &b)?;
            for i in 0..count {
                for (t, &(w, _, _)) in round.iter().enumerate() {
                    mono[i * n + w] = z[i * round.len() + t];
                }
            }
        }
        let nw = words(log_n);
        let mut s = vec![0u64; count * nw];
        for i in 0..count {
            let m = &mut mono[i * n..(i + 1) * n];
            butterfly(m, log_n);
            for (w, &bit) in m.iter().enumerate() {
                s[i * nw + w / 64] |= (bit as u64) << (w % 64);
            }
        }
        Ok(FlutePrepro { log_n, alpha, s })
    }

    /// FLUTE+ online phase: XOR shares of `table[x]` for each XOR-shared index `x`, consuming the
    /// first `x.len() / log n` lookups of `pre` (module doc). `x` holds `log n` bits per lookup,
    /// lookup-major (bit `j` of lookup `i` at `i·log n + j`, bit 0 the LSB of the index);
    /// `table` is public (`2^log n` entries of `l` bits, the same on both sides). One exchange,
    /// `log n` bits each way per lookup. `pre` is left untouched on an argument error.
    pub fn flute_lookup(
        &mut self,
        ch: &mut dyn Channel,
        pre: &mut FlutePrepro,
        x: &[bool],
        table: &[u64],
        l: u32,
    ) -> Result<Vec<u64>> {
        let log_n = check_table(table, l)?;
        if log_n != pre.log_n {
            return Err(MpcError::BadArgument(format!(
                "FLUTE+: table of 2^{log_n} entries, preprocessing for 2^{}",
                pre.log_n
            )));
        }
        let k = log_n as usize;
        if x.len() % k != 0 {
            return Err(MpcError::Length {
                what: "FLUTE+ index bits (a multiple of log n)",
                expected: x.len() / k * k,
                got: x.len(),
            });
        }
        let count = x.len() / k;
        let pre = pre.take(count)?;
        if count == 0 {
            return Ok(Vec::new());
        }
        same_len("FLUTE+ masks", x.len(), pre.alpha.len())?;
        let masked: Vec<bool> = x.iter().zip(&pre.alpha).map(|(a, b)| a ^ b).collect();
        let m = self.reveal_bits(ch, &masked)?;
        let n = 1usize << k;
        let full = n - 1;
        let nw = pre.words();
        Ok((0..count)
            .map(|i| {
                // [x = v] = S(w) with w = ¬(m ⊕ v), i.e. v = w ⊕ ¬m.
                let c = full ^ index_of(&m[i * k..(i + 1) * k]);
                let s = &pre.s[i * nw..(i + 1) * nw];
                let mut out = 0u64;
                for (w, &t) in (0..n).map(|w| (w, &table[w ^ c])) {
                    let bit = (s[w / 64] >> (w % 64)) & 1;
                    out ^= t & bit.wrapping_neg();
                }
                out
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_math::Prg;

    /// The AND schedule and the butterfly, in plaintext, against `S(w) = ∧_j (α_j ⊕ w_j)`.
    #[test]
    fn butterfly_matches_definition() {
        let mut p = Prg::new([9; 16]);
        for log_n in 1..=MAX_LOG_N {
            let k = log_n as usize;
            let n = 1usize << k;
            let plan = monomial_plan(log_n);
            let ands: usize = plan.iter().map(|r| r.len()).sum();
            assert_eq!(ands, n - k - 1, "ANDs for log n = {log_n}");
            let depth = (usize::BITS - (k - 1).leading_zeros()) as usize; // ⌈log2 k⌉
            assert_eq!(plan.len(), depth, "rounds for log n = {log_n}");
            for _ in 0..(if k <= 8 { 4 } else { 1 }) {
                let alpha: Vec<bool> = (0..k).map(|_| p.next_bit()).collect();
                let mut m = vec![false; n];
                let mut done = vec![false; n];
                m[n - 1] = true;
                done[n - 1] = true;
                for j in 0..k {
                    m[(n - 1) ^ (1 << j)] = alpha[j];
                    done[(n - 1) ^ (1 << j)] = true;
                }
                for round in &plan {
                    for &(_, a, b) in round {
                        assert!(done[a] && done[b], "factor from a later round");
                    }
                    for &(w, a, b) in round {
                        m[w] = m[a] & m[b];
                        done[w] = true;
                    }
                }
                for (w, &mw) in m.iter().enumerate() {
                    let direct = (0..k).filter(|j| (w >> j) & 1 == 0).all(|j| alpha[j]);
                    assert_eq!(mw, direct, "M({w})");
                }
                butterfly(&mut m, log_n);
                for (w, &sw) in m.iter().enumerate() {
                    let direct = (0..k).all(|j| alpha[j] ^ ((w >> j) & 1 == 1));
                    assert_eq!(sw, direct, "S({w}), log n = {log_n}");
                }
            }
        }
    }

    /// The paper's worked example (log n = 2): s_0 = α0α1, s_1 = α1(1⊕α0), s_2 = α0(1⊕α1),
    /// s_3 = (1⊕α0)(1⊕α1).
    #[test]
    fn worked_example() {
        for a in 0..4usize {
            let (a0, a1) = (a & 1 == 1, a & 2 == 2);
            let mut s = vec![a0 & a1, a1, a0, true];
            butterfly(&mut s, 2);
            assert_eq!(s, vec![a0 & a1, a1 & !a0, a0 & !a1, !a0 & !a1]);
        }
    }

    #[test]
    fn table_checks() {
        assert!(check_table(&[0; 3], 8).is_err());
        assert!(check_table(&[0; 1], 8).is_err());
        assert!(check_table(&[], 8).is_err());
        assert!(check_table(&vec![0; 1 << 13], 8).is_err());
        assert!(check_table(&[0, 256], 8).is_err());
        assert!(check_table(&[0, 255], 0).is_err());
        assert_eq!(check_table(&[0, 255], 8).ok(), Some(1));
        assert_eq!(check_table(&[u64::MAX; 4], 64).ok(), Some(2));
        assert_eq!(
            flute_twin(&[5, 6, 7, 8], &[true, false, false, true], 8).ok(),
            Some(vec![6, 7])
        );
        assert!(flute_twin(&[5, 6, 7, 8], &[true], 8).is_err());
    }
}
