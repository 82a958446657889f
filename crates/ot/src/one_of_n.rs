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

use crate::bits::{mask128, or_word, pack_bits, padded_words, unpack_bits, word_at};
use crate::crhash::Crh;
use crate::pool::CotPool;
use crate::rot::{need_receiver, need_sender};
use crate::{recv_bytes, OtError};
use nectar_net::Channel;
use rayon::prelude::*;

/// Instances whose hash inputs are built and hashed together (LOCAL: up to 510 blocks each, so
/// a block stays in cache); the sender's blocks run in parallel. A multiple of 8 (see
/// [`send`]).
const BLOCK: usize = 256;

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
    send_many(pool, crh, ch, &[(msgs, big_n, k)])
}

/// Receiver with indices `choices[i] < N`: returns message `choices[i]` of each instance.
pub fn recv<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, choices: &[u8], big_n: usize, k: usize) -> Result<Vec<u128>, OtError> {
    Ok(recv_many(pool, crh, ch, &[(choices, big_n, k)])?.pop().unwrap_or_default())
}

/// Several independent 1-of-N OT calls `(msgs, N, k)` in one round trip (issue 48): the
/// receiver's corrections of all of them travel in one flight, the sender's payloads in the
/// next — the same frames as [`send`] called once per group, in another order. The COTs of all
/// groups are reserved first, so no pool refill falls between the two flights.
pub fn send_many<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, groups: &[(&[u128], usize, usize)]) -> Result<(), OtError> {
    let mut shapes = Vec::with_capacity(groups.len());
    for &(msgs, big_n, k) in groups {
        if big_n == 0 || msgs.len() % big_n != 0 {
            return Err(OtError::BadArgument(format!("{} messages is not a multiple of N = {big_n}", msgs.len())));
        }
        shapes.push((msgs.len() / big_n, big_n, k));
    }
    let mut prep = send_prepare(pool, ch, &shapes)?;
    for (i, &(msgs, _, _)) in groups.iter().enumerate() {
        send_payload(&mut prep, crh, ch, i, msgs)?;
    }
    Ok(())
}

/// The sender's state between [`send_prepare`] and its [`send_payload`]s: per group its shape,
/// its COTs and the receiver's corrections.
pub struct SendPrepared {
    delta: u128,
    groups: Vec<PreparedGroup>,
}

struct PreparedGroup {
    n: usize,
    big_n: usize,
    k: usize,
    first: u64,
    q: Vec<u128>,
    d: Vec<bool>,
}

/// First half of [`send_many`] for groups of shape `(instances, N, k)`: reserves and takes the
/// COTs of all groups and receives the receiver's corrections of all of them. The payloads then
/// go out one group at a time ([`send_payload`], in order), so the caller can build each
/// group's messages just before it is sent (memory: one group's messages at a time).
pub fn send_prepare<C: Channel + ?Sized>(pool: &mut CotPool, ch: &mut C, shapes: &[(usize, usize, usize)]) -> Result<SendPrepared, OtError> {
    let delta = need_sender(pool)?;
    let mut betas = Vec::with_capacity(shapes.len());
    for &(_, big_n, k) in shapes {
        betas.push(check(big_n, k)?);
    }
    pool.reserve(ch, shapes.iter().zip(&betas).map(|((n, _, _), beta)| n * beta).sum())?;
    let mut groups = Vec::with_capacity(shapes.len());
    for (&(n, big_n, k), &beta) in shapes.iter().zip(&betas) {
        let (first, q) = pool.take(ch, n * beta)?;
        groups.push(PreparedGroup { n, big_n, k, first, q, d: Vec::new() });
    }
    for g in &mut groups {
        let beta = g.q.len() / g.n.max(1);
        g.d = unpack_bits(&recv_bytes(ch, (g.n * beta).div_ceil(8), "1-of-N choice correction")?, g.n * beta)?;
    }
    Ok(SendPrepared { delta, groups })
}

/// Second half of [`send_many`]: group `i`'s payload for `msgs` (`n·N` messages of its shape);
/// frees the group's COTs.
pub fn send_payload<C: Channel + ?Sized>(prep: &mut SendPrepared, crh: &Crh, ch: &mut C, i: usize, msgs: &[u128]) -> Result<(), OtError> {
    let delta = prep.delta;
    let g = prep.groups.get_mut(i).ok_or_else(|| OtError::BadArgument(format!("no prepared 1-of-N group {i}")))?;
    if msgs.len() != g.n * g.big_n {
        return Err(OtError::BadArgument(format!("{} messages for {} instances of N = {}", msgs.len(), g.n, g.big_n)));
    }
    if g.n > 0 && g.q.is_empty() {
        return Err(OtError::BadArgument(format!("1-of-N group {i} was already sent")));
    }
    let (q, d) = (std::mem::take(&mut g.q), std::mem::take(&mut g.d));
    ch.send(&payload(crh, delta, g.first, &q, &d, msgs, g.big_n, g.k))
        .map_err(OtError::from)
}

/// The receiver of [`send_many`]: `(choices, N, k)` per group; returns each group's messages.
pub fn recv_many<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, groups: &[(&[u8], usize, usize)]) -> Result<Vec<Vec<u128>>, OtError> {
    need_receiver(pool)?;
    let mut betas = Vec::with_capacity(groups.len());
    for &(choices, big_n, k) in groups {
        betas.push(check(big_n, k)?);
        if let Some(c) = choices.iter().find(|&&c| c as usize >= big_n) {
            return Err(OtError::BadArgument(format!("choice {c} >= N = {big_n}")));
        }
    }
    pool.reserve(ch, groups.iter().zip(&betas).map(|((c, _, _), beta)| c.len() * beta).sum())?;
    let mut taken = Vec::with_capacity(groups.len());
    for ((choices, _, _), &beta) in groups.iter().zip(&betas) {
        taken.push(pool.take(ch, choices.len() * beta)?);
    }
    for (((choices, _, _), &beta), (_, t)) in groups.iter().zip(&betas).zip(&taken) {
        let mut d = Vec::with_capacity(choices.len() * beta);
        for (i, &c) in choices.iter().enumerate() {
            for s in 0..beta {
                d.push((t[i * beta + s] & 1 == 1) ^ ((c >> s) & 1 == 1));
            }
        }
        ch.send(&pack_bits(&d))?;
    }
    let mut out = Vec::with_capacity(groups.len());
    for (((choices, big_n, k), &beta), (first, mut t)) in groups.iter().zip(&betas).zip(taken) {
        let n = choices.len();
        // Hashed in parallel, BLOCK instances per task (the same hashes as in one pass).
        t.par_chunks_mut(BLOCK * beta).enumerate().for_each(|(bi, part)| {
            crh.tccr_with(part, |x| {
                let (i, s) = (bi * BLOCK + x / beta, x % beta);
                tweak(first + (i * beta) as u64, s, choices[i] as usize & ((2 << s) - 1))
            })
        });
        // Only the chosen word of each instance is read from the packed message.
        let padded = padded_words(ch.recv()?, n * big_n, *k)?;
        let mask = mask128(*k);
        out.push(
            (0..n)
                .map(|i| {
                    let pad = t[i * beta..(i + 1) * beta].iter().fold(0u128, |a, b| a ^ b);
                    word_at(&padded, (i * big_n + choices[i] as usize) * k, *k) ^ (pad & mask)
                })
                .collect(),
        );
    }
    Ok(out)
}

/// The sender's packed payload of one group: message `j` of instance `i` masked by its pad.
#[allow(clippy::too_many_arguments)]
fn payload(crh: &Crh, delta: u128, first: u64, q: &[u128], d: &[bool], msgs: &[u128], big_n: usize, k: usize) -> Vec<u8> {
    let beta = big_n.next_power_of_two().trailing_zeros() as usize;
    let n = msgs.len() / big_n;
    // Hash inputs per instance: for s in 0..β, for v in 0..2^{s+1}: K_{s, bit_s(v)}; `layout`
    // names the (s, v) of each position. They are hashed and turned into pads BLOCK instances
    // at a time, straight into the packed message (no per-call buffers of n·per blocks).
    let layout: Vec<(usize, usize)> = (0..beta).flat_map(|s| (0..(2usize << s)).map(move |v| (s, v))).collect();
    let per = layout.len();
    let total = n * big_n * k;
    let mut out = vec![0u8; total.div_ceil(8)];
    let mask = mask128(k);
    // BLOCK is a multiple of 8, so each block of instances owns whole bytes of the message
    // (`or_word` touches only the bytes its word spans): the blocks run in parallel, each
    // into its own slice, with the same hashes and output as one block after another.
    let block_bytes = BLOCK * big_n * k / 8;
    out.par_chunks_mut(block_bytes).enumerate().for_each_init(
        || vec![0u128; BLOCK.min(n) * per],
        |hs, (bi, bytes)| {
            let b0 = bi * BLOCK;
            let b1 = (b0 + BLOCK).min(n);
            let buf = &mut hs[..(b1 - b0) * per];
            for (i, row) in (b0..b1).zip(buf.chunks_exact_mut(per)) {
                for (slot, &(s, v)) in row.iter_mut().zip(&layout) {
                    let qs = q[i * beta + s];
                    let k0 = if d[i * beta + s] { qs ^ delta } else { qs };
                    *slot = if (v >> s) & 1 == 1 { k0 ^ delta } else { k0 };
                }
            }
            crh.tccr_with(buf, |x| {
                let (s, v) = layout[x % per];
                tweak(first + ((b0 + x / per) * beta) as u64, s, v)
            });
            for (i, row) in (b0..b1).zip(buf.chunks_exact(per)) {
                for j in 0..big_n {
                    let mut pad = 0u128;
                    let mut off = 0;
                    for s in 0..beta {
                        pad ^= row[off + (j & ((2 << s) - 1))];
                        off += 2 << s;
                    }
                    or_word(bytes, ((i - b0) * big_n + j) * k, (msgs[i * big_n + j] ^ pad) & mask, k);
                }
            }
        },
    );
    out
}
