//! Chosen-message 1-of-2 OT on `k`-bit messages (`1 <= k <= 128`) from random COTs (IKNP'03
//! §3 with Beaver's derandomisation).
//!
//! 1. receiver → sender: `d_i = c_i ⊕ b_i` (`b_i` its random COT choice), 1 bit per instance;
//! 2. sender → receiver: `y_{i,x} = m_{i,x} ⊕ H(i, q_i ⊕ (x ⊕ d_i)·Δ)` for `x ∈ {0,1}`, each
//!    truncated to `k` bits and bit-packed;
//! 3. receiver: `m_{i,c_i} = y_{i,c_i} ⊕ H(i, t_i)`.
//!
//! Cost: 2 flows, `n` bits + `2·n·k` bits, `n` COTs.

use crate::bits::{mask128, pack_bits, pack_words, unpack_bits, unpack_words};
use crate::crhash::Crh;
use crate::pool::CotPool;
use crate::rot::{need_receiver, need_sender, DOMAIN_ROT};
use crate::{recv_bytes, OtError};
use nectar_net::Channel;

fn check_k(k: usize) -> Result<(), OtError> {
    if !(1..=128).contains(&k) {
        return Err(OtError::BadArgument(format!("message width {k} not in 1..=128")));
    }
    Ok(())
}

/// Sender with message pairs `(m_0, m_1)` (only the low `k` bits are used).
pub fn send<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, msgs: &[(u128, u128)], k: usize) -> Result<(), OtError> {
    check_k(k)?;
    let delta = need_sender(pool)?;
    let n = msgs.len();
    let (first, q) = pool.take(ch, n)?;
    let d = unpack_bits(&recv_bytes(ch, n.div_ceil(8), "OT choice correction")?, n)?;
    let mut p0: Vec<u128> = q.iter().zip(&d).map(|(x, &di)| if di { x ^ delta } else { *x }).collect();
    let mut p1: Vec<u128> = p0.iter().map(|x| x ^ delta).collect();
    crh.tccr_seq(&mut p0, DOMAIN_ROT | first as u128);
    crh.tccr_seq(&mut p1, DOMAIN_ROT | first as u128);
    let mut y = Vec::with_capacity(2 * n);
    for i in 0..n {
        y.push(msgs[i].0 ^ p0[i]);
        y.push(msgs[i].1 ^ p1[i]);
    }
    ch.send(&pack_words(&y, k))?;
    Ok(())
}

/// Receiver with choice bits `c`: returns `m_{i,c_i}` (low `k` bits).
pub fn recv<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, c: &[bool], k: usize) -> Result<Vec<u128>, OtError> {
    check_k(k)?;
    need_receiver(pool)?;
    let n = c.len();
    let (first, mut t) = pool.take(ch, n)?;
    let d: Vec<bool> = t.iter().zip(c).map(|(x, &ci)| (x & 1 == 1) ^ ci).collect();
    ch.send(&pack_bits(&d))?;
    crh.tccr_seq(&mut t, DOMAIN_ROT | first as u128);
    let y = unpack_words(&ch.recv()?, 2 * n, k)?;
    Ok((0..n).map(|i| (y[2 * i + c[i] as usize] ^ t[i]) & mask128(k)).collect())
}
