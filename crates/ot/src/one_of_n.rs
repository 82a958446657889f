//! 1-out-of-N OT on `k`-bit messages (`2 <= N <= 256`, `1 <= k <= 128`) from `β = ⌈log2 N⌉`
//! COTs per instance (Naor–Pinkas "Oblivious transfer and polynomial evaluation", STOC'99, in
//! the form of Cheetah/SPU `SendChosenMsgChosenChoice`, REFERENCE §2.3); this is BumbleBee's
//! `(M choose 1)-OT_k` and CrypTFlow2's millionaire OT.
//!
//! 1. receiver → sender: `d_{s} = c_s ⊕ b_s` for each bit `c_s` of its index (β bits/instance);
//! 2. sender: keys `K_{s,x} = q_s ⊕ (x ⊕ d_s)·Δ` (so the receiver holds `K_{s,c_s} = t_s`);
//!    `pad_j = XOR_s H(τ(s, j mod 2^{s+1}), K_{s, bit_s(j)})` and sends `m_j ⊕ pad_j` for all
//!    `j < N`, truncated to `k` bits and packed;
//! 3. receiver: `m_c = y_c ⊕ XOR_s H(τ(s, c mod 2^{s+1}), t_s)`.
//!
//! Why the prefix tweak is enough: for `j ≠ c` let `s*` be the highest bit where `j` and `c`
//! differ; the term at `s*` uses the unknown key `K_{s*,¬c_{s*}}` with tweak `j mod 2^{s*+1}`,
//! which differs for every `j` sharing that `s*`, while pads with different `s*` involve
//! different unknown keys. It costs ~`2N` hashes per instance instead of `N·β`.
//! Cost: 2 flows, `n·β` bits + `n·N·k` bits, `n·β` COTs.

use crate::bits::{mask128, pack_bits, pack_words, unpack_bits, unpack_words};
use crate::crhash::Crh;
use crate::pool::CotPool;
use crate::rot::{need_receiver, need_sender};
use crate::{recv_bytes, OtError};
use nectar_net::Channel;

/// Tweak domain (AGREEMENT).
const DOMAIN_1N: u128 = 3 << 120;

fn tweak(g: u64, s: usize, v: usize) -> u128 {
    DOMAIN_1N | ((g as u128) << 16) | ((s as u128) << 9) | v as u128
}

fn check(big_n: usize, k: usize) -> Result<usize, OtError> {
    if !(2..=256).contains(&big_n) {
        return Err(OtError::BadArgument(format!("N = {big_n} not in 2..=256")));
    }
    if !(1..=128).contains(&k) {
        return Err(OtError::BadArgument(format!("message width {k} not in 1..=128")));
    }
    Ok(big_n.next_power_of_two().trailing_zeros() as usize)
}

/// Sender: `msgs` holds `n·N` messages, instance `i`'s message `j` at `msgs[i·N + j]`.
pub fn send<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, msgs: &[u128], big_n: usize, k: usize) -> Result<(), OtError> {
    let beta = check(big_n, k)?;
    let delta = need_sender(pool)?;
    if msgs.len() % big_n != 0 {
        return Err(OtError::BadArgument(format!("{} messages is not a multiple of N = {big_n}", msgs.len())));
    }
    let n = msgs.len() / big_n;
    let (first, q) = pool.take(ch, n * beta)?;
    let d = unpack_bits(&recv_bytes(ch, (n * beta).div_ceil(8), "1-of-N choice correction")?, n * beta)?;
    // Hash inputs per instance: for s in 0..β, for v in 0..2^{s+1}: K_{s, bit_s(v)}.
    let per: usize = (0..beta).map(|s| 2usize << s).sum();
    let mut inp = Vec::with_capacity(n * per);
    let mut tw = Vec::with_capacity(n * per);
    for i in 0..n {
        let g = first + (i * beta) as u64;
        for s in 0..beta {
            let qs = q[i * beta + s];
            let k0 = if d[i * beta + s] { qs ^ delta } else { qs };
            for v in 0..(2usize << s) {
                inp.push(if (v >> s) & 1 == 1 { k0 ^ delta } else { k0 });
                tw.push(tweak(g, s, v));
            }
        }
    }
    crh.tccr_with(&mut inp, |i| tw[i]);
    let mut y = Vec::with_capacity(n * big_n);
    for i in 0..n {
        let hs = &inp[i * per..(i + 1) * per];
        for j in 0..big_n {
            let mut pad = 0u128;
            let mut off = 0;
            for s in 0..beta {
                pad ^= hs[off + (j & ((2 << s) - 1))];
                off += 2 << s;
            }
            y.push(msgs[i * big_n + j] ^ pad);
        }
    }
    ch.send(&pack_words(&y, k))?;
    Ok(())
}

/// Receiver with indices `choices[i] < N`: returns message `choices[i]` of each instance.
pub fn recv<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, choices: &[u8], big_n: usize, k: usize) -> Result<Vec<u128>, OtError> {
    let beta = check(big_n, k)?;
    need_receiver(pool)?;
    if let Some(c) = choices.iter().find(|&&c| c as usize >= big_n) {
        return Err(OtError::BadArgument(format!("choice {c} >= N = {big_n}")));
    }
    let n = choices.len();
    let (first, mut t) = pool.take(ch, n * beta)?;
    let mut d = Vec::with_capacity(n * beta);
    for (i, &c) in choices.iter().enumerate() {
        for s in 0..beta {
            d.push((t[i * beta + s] & 1 == 1) ^ ((c >> s) & 1 == 1));
        }
    }
    ch.send(&pack_bits(&d))?;
    crh.tccr_with(&mut t, |x| {
        let (i, s) = (x / beta, x % beta);
        tweak(first + (i * beta) as u64, s, choices[i] as usize & ((2 << s) - 1))
    });
    let y = unpack_words(&ch.recv()?, n * big_n, k)?;
    Ok((0..n)
        .map(|i| {
            let pad = t[i * beta..(i + 1) * beta].iter().fold(0u128, |a, b| a ^ b);
            (y[i * big_n + choices[i] as usize] ^ pad) & mask128(k)
        })
        .collect())
}
