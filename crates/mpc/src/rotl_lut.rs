//! ROTL: table lookup on arithmetic shares by secret-shared rotation (ROTL §IV-B, Fig. 11;
//! REFERENCE.md §4.3), with the preprocessing / online split, the sum-sign fix and the MUX
//! optimisation.
//!
//! A public table `T` of `n = 2^h` entries in `Z_{2^lo}`; the index is an arithmetic share in
//! `Z_{2^lx}` (`lx >= h`) read modulo `n` (its low `h` bits: `n | 2^lx`, so each party reduces
//! its own share); the output is an arithmetic share of `T[i]` in `Z_{2^lo}` (or XOR shares for
//! `lo = 1`).
//!
//! **Preprocessing** (input-independent; [`Mpc::rotl_preprocess`] stores it in the session,
//! lookups consume it in order):
//! 1. the client samples `c ∈ Z_n` and the one-hot `b = e_c`;
//! 2. Π_Rotate ([`crate::rotate`]) with the server's random offset `p`: XOR shares of
//!    `b' = rotL(b, p)`, hot at `c − p`; so the shared offset is `s = ⟨s⟩_C + ⟨s⟩_S` with
//!    `⟨s⟩_C = c` and `⟨s⟩_S = −p mod n` (REFERENCE.md §4.3 step 3, our rotation direction);
//! 3. lifting to `Z_{2^lo}`: the client reads its bit shares as integers, the server negates
//!    its own, so the hot position becomes `+1` or `−1` and every other position `0`; the sign
//!    `sum = Σ_j ⟨b'_j⟩_C − Σ_j ⟨b'_j⟩_S = ±1` (Fig. 11 steps 4–5; its step 5 writes `⟨·⟩_C` for
//!    the server, a typo);
//! 4. the sign bit for free: `β = 1{sum = 1}`, `⟨β⟩_C = 1 ⊕ bit1(⟨sum⟩_C)`,
//!    `⟨β⟩_S = bit1(⟨sum⟩_S)` (the carry out of bit 0 is 0: exactly one share is odd);
//! 5. the random COTs the online MUX will use are produced now (the pools are topped up), so
//!    the online phase never runs an OT extension.
//!
//! **Online** (per lookup):
//! 1. open `s' = (i − s) mod n` (each party sends its `h`-bit share: `2h` bits, one exchange);
//! 2. each party rotates its lifted row right by `s'` (hot at `i`) and takes the dot product
//!    with `T`: `z = sum · T[i]`, computed as `Σ_k row_k · T[(k + s') mod n]`;
//! 3. the sign fix by one MUX instead of F_Mult (§IV-B): `T[i] = MUX(β, 2z) − z`. For
//!    `lo = 1` the sign is irrelevant (`−1 ≡ 1 mod 2`): `z mod 2` is already an XOR share.
//!
//! Several tables on the same index (e.g. the `lt`/`eq` pair of the comparison, slope and
//! intercept of a piecewise-linear function) share one preprocessed rotation and one opening;
//! each table costs one more MUX.
//!
//! Cost per lookup: preprocessing `h` random COTs + `128·h + n` bits (client → server, one
//! flow); online `2h` bits (one exchange, 2 flows) plus per table with `lo > 1` one MUX
//! (2 COTs, `2(1 + lo)` bits, 4 flows). Local: `O(n²/128)` hashes (preprocessing), `n` XOR +
//! `n/2` additions per table (online). Exact.

use crate::words::mask;
use crate::rotate::{words_per_row, BitRows};
use crate::{Mpc, MpcError, Result};
use nectar_net::{Channel, Role};
use nectar_ot::bits::{pack_words, unpack_words};
use std::time::Instant;

/// One party's preprocessed lookups for tables of `2^h` entries (consumed front first).
#[derive(Clone, Debug)]
pub struct RotlPrepro {
    /// This party's share of the hot position `s` (mod `2^h`).
    s: Vec<u32>,
    /// This party's XOR shares of the rotated one-hot row.
    rows: BitRows,
    /// This party's XOR share of `β = 1{sum = 1}`.
    beta: Vec<bool>,
}

impl RotlPrepro {
    /// Number of lookups left.
    pub fn len(&self) -> usize {
        self.s.len()
    }

    pub fn is_empty(&self) -> bool {
        self.s.is_empty()
    }

    fn take(&mut self, k: usize) -> RotlPrepro {
        let rest_s = self.s.split_off(k);
        let rest_b = self.beta.split_off(k);
        RotlPrepro {
            s: std::mem::replace(&mut self.s, rest_s),
            rows: self.rows.split_front(k),
            beta: std::mem::replace(&mut self.beta, rest_b),
        }
    }

    fn append(&mut self, o: RotlPrepro) {
        self.s.extend(o.s);
        self.rows.append(o.rows);
        self.beta.extend(o.beta);
    }
}

/// Traffic and time spent in input-independent preprocessing (ROTL rotations, the COTs their
/// online MUXes will use), cumulative over the session: this party's channel counters around
/// each preprocessing call, so a caller subtracts two readings to split a stretch into
/// preprocessing and online.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PreproCost {
    pub bytes_sent: u64,
    pub bytes_recv: u64,
    pub rounds: u64,
    pub seconds: f64,
}

impl PreproCost {
    pub fn bytes_total(&self) -> u64 {
        self.bytes_sent + self.bytes_recv
    }

    /// `self − earlier`.
    pub fn since(&self, e: &PreproCost) -> PreproCost {
        PreproCost {
            bytes_sent: self.bytes_sent - e.bytes_sent,
            bytes_recv: self.bytes_recv - e.bytes_recv,
            rounds: self.rounds - e.rounds,
            seconds: self.seconds - e.seconds,
        }
    }
}

/// Validates a table for `Z_{2^lo}`: `2^h` entries (`1 <= h <= MAX_LOG_N`), each below `2^lo`.
pub fn check_table(t: &[u64], lo: u32) -> Result<u32> {
    let n = t.len();
    if n < 2 || !n.is_power_of_two() {
        return Err(MpcError::BadArgument(format!("lookup table of {n} entries: the size must be a power of two >= 2")));
    }
    let h = n.trailing_zeros();
    if h > crate::rotate::MAX_LOG_N {
        return Err(MpcError::BadArgument(format!(
            "lookup table of 2^{h} entries: at most 2^{} (ROTL preprocessing is O(n²))",
            crate::rotate::MAX_LOG_N
        )));
    }
    let m = mask(lo)?;
    if let Some((j, v)) = t.iter().enumerate().find(|(_, &v)| v & !m != 0) {
        return Err(MpcError::BadArgument(format!("table entry {j} = {v:#x} does not fit Z_2^{lo}")));
    }
    Ok(h)
}

impl Mpc {
    /// Preprocesses `count` lookups for tables of `2^h` entries and stores them in the session
    /// (both parties call it at the same point with the same arguments, AGREEMENT). `muxes`:
    /// the number of `lo > 1` tables the online lookups will use, whose MUX COTs are produced
    /// now (`0` for bit outputs).
    pub fn rotl_preprocess(&mut self, ch: &mut dyn Channel, h: u32, count: usize, muxes: usize) -> Result<()> {
        let t0 = Instant::now();
        let s0 = ch.stats();
        let fresh = self.rotl_generate(ch, h, count)?;
        self.ot().reserve(ch, count * muxes)?;
        let d = ch.stats() - s0;
        self.note_prepro(d, t0.elapsed().as_secs_f64());
        match self.rotl_store().iter_mut().find(|(k, _)| *k == h) {
            Some((_, p)) => p.append(fresh),
            None => self.rotl_store().push((h, fresh)),
        }
        Ok(())
    }

    /// Lookups of `2^h`-entry tables preprocessed and not yet consumed.
    pub fn rotl_available(&mut self, h: u32) -> usize {
        self.rotl_store().iter().find(|(k, _)| *k == h).map_or(0, |(_, p)| p.len())
    }

    fn rotl_generate(&mut self, ch: &mut dyn Channel, h: u32, count: usize) -> Result<RotlPrepro> {
        let n = 1usize << h;
        let w = words_per_row(h);
        match self.role() {
            Role::Client => {
                let mut onehot = vec![0u64; count * w];
                let mut s = Vec::with_capacity(count);
                for i in 0..count {
                    let c = (self.prg().next_u128() as usize) & (n - 1);
                    onehot[i * w + c / 64] = 1u64 << (c % 64);
                    s.push(c as u32);
                }
                let rows = self.rotate_bits_client(ch, &BitRows::from_words(h, onehot)?)?;
                let beta = (0..count).map(|i| !sum_bit1(rows.row(i), false)).collect();
                Ok(RotlPrepro { s, rows, beta })
            }
            Role::Server => {
                let (p, rows) = self.rotate_bits_server(ch, h, count)?;
                let s = p.iter().map(|&p| ((n - p) % n) as u32).collect();
                let beta = (0..count).map(|i| sum_bit1(rows.row(i), true)).collect();
                Ok(RotlPrepro { s, rows, beta })
            }
        }
    }

    /// ROTL lookup: for every element `i` of `x` (shares in `Z_{2^lx}`) and every table `T_t`
    /// (each `2^h` entries in `Z_{2^lo}`, `h <= lx`), shares of `T_t[x_i mod 2^h]` in
    /// `Z_{2^lo}`; `out[t][i]`. Consumes preprocessed lookups (preprocessing the shortfall
    /// first, accounted as preprocessing). For `lo = 1` the outputs are XOR shares (0/1 words).
    pub fn rotl_lut(&mut self, ch: &mut dyn Channel, x: &[u64], lx: u32, tables: &[&[u64]], lo: u32) -> Result<Vec<Vec<u64>>> {
        let Some(first) = tables.first() else {
            return Err(MpcError::BadArgument("ROTL lookup without a table".into()));
        };
        let h = check_table(first, lo)?;
        for t in tables {
            if check_table(t, lo)? != h {
                return Err(MpcError::BadArgument("ROTL lookup: tables of different sizes".into()));
            }
        }
        let mx = mask(lx)?;
        if lx < h {
            return Err(MpcError::BadArgument(format!("index ring Z_2^{lx} smaller than the table (2^{h})")));
        }
        if x.iter().any(|v| v & !mx != 0) {
            return Err(MpcError::BadArgument(format!("index share outside Z_2^{lx} (shares of another ring?)")));
        }
        let count = x.len();
        if count == 0 {
            return Ok(vec![Vec::new(); tables.len()]);
        }
        let muxes = if lo > 1 { tables.len() } else { 0 };
        let have = self.rotl_available(h);
        if have < count {
            self.rotl_preprocess(ch, h, count - have, muxes)?;
        }
        let pre = match self.rotl_store().iter_mut().find(|(k, _)| *k == h) {
            Some((_, p)) => p.take(count),
            None => return Err(MpcError::BadArgument("ROTL preprocessing store lost its entry".into())),
        };
        let n = 1usize << h;
        // 1. open s' = (i − s) mod n
        let mine: Vec<u128> = x.iter().zip(&pre.s).map(|(&v, &s)| (v.wrapping_sub(s as u64) as usize & (n - 1)) as u128).collect();
        let got = self.exchange(ch, &pack_words(&mine, h as usize))?;
        let theirs = unpack_words(&got, count, h as usize)?;
        let shift: Vec<usize> = mine.iter().zip(&theirs).map(|(a, b)| ((a + b) as usize) & (n - 1)).collect();
        // 2. dot products of the rotated lifted rows with each table
        let ml = mask(lo)?;
        let server = self.is_server();
        let w = words_per_row(h);
        let mut z: Vec<Vec<u64>> = Vec::with_capacity(tables.len());
        for t in tables {
            let mut zt = Vec::with_capacity(count);
            for (i, &sh) in shift.iter().enumerate() {
                let row = pre.rows.row(i);
                let mut acc = 0u64;
                for (q, &word) in row.iter().enumerate().take(w) {
                    let mut bits = word;
                    while bits != 0 {
                        let k = q * 64 + bits.trailing_zeros() as usize;
                        acc = acc.wrapping_add(t[(k + sh) & (n - 1)]);
                        bits &= bits - 1;
                    }
                }
                zt.push(if server { acc.wrapping_neg() & ml } else { acc & ml });
            }
            z.push(zt);
        }
        if lo == 1 {
            return Ok(z);
        }
        // 3. sign fix: T[i] = MUX(β, 2z) − z
        let beta: Vec<bool> = (0..tables.len()).flat_map(|_| pre.beta.iter().copied()).collect();
        let twice: Vec<u64> = z.iter().flatten().map(|v| v.wrapping_shl(1) & ml).collect();
        let sel = self.mux(ch, &beta, &twice, lo)?;
        Ok(z.iter()
            .enumerate()
            .map(|(t, zt)| zt.iter().enumerate().map(|(i, v)| sel[t * count + i].wrapping_sub(*v) & ml).collect())
            .collect())
    }
}

/// Bit 1 of this party's lifted sum: the client's `Σ_j bit_j`, the server's `−Σ_j bit_j`
/// (`negate`), mod 4.
fn sum_bit1(row: &[u64], negate: bool) -> bool {
    let c = row.iter().map(|w| w.count_ones() as u64).sum::<u64>();
    let v = if negate { c.wrapping_neg() } else { c };
    v >> 1 & 1 == 1
}
