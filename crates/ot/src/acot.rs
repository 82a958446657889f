//! Additive correlated OT over `Z_{2^l}` (`1 <= l <= 64`; `<= 128` for the `_wide` forms) with a per-instance correlation, as
//! used by CrypTFlow2/Cheetah/BumbleBee for B2A, multiplexers and truncation (REFERENCE §2.5).
//!
//! The sender inputs `Δ_i`, the receiver a choice bit `c_i`; the sender outputs `x_i`, the
//! receiver `x_i + c_i·Δ_i mod 2^l`. From a random COT:
//! 1. receiver → sender: `d_i = c_i ⊕ b_i` (1 bit);
//! 2. sender: `p_x = H(i, q_i ⊕ (x ⊕ d_i)·Δ) mod 2^l`, outputs `x_i = p_0`, sends
//!    `y_i = p_0 + Δ_i − p_1 mod 2^l` (`l` bits, packed);
//! 3. receiver: `p = H(i, t_i) mod 2^l` (= `p_{c_i}`); outputs `p` if `c_i = 0`, `p + y_i` else.
//!
//! Cost: 2 flows, `n·(1 + l)` bits, `n` COTs.

use crate::bits::{mask128, pack_bits, pack_words, unpack_bits, unpack_words};
use crate::crhash::Crh;
use crate::pool::CotPool;
use crate::rot::{need_receiver, need_sender, DOMAIN_ROT};
use crate::{recv_bytes, OtError};
use nectar_net::Channel;

fn check_l(l: u32, max: u32) -> Result<(), OtError> {
    if !(1..=max).contains(&l) {
        return Err(OtError::BadArgument(format!("ring width {l} not in 1..={max}")));
    }
    Ok(())
}

/// Sender with correlations `Δ_i`: returns `x_i` (in `[0, 2^l)`), `1 <= l <= 64`.
pub fn send<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, deltas: &[u64], l: u32) -> Result<Vec<u64>, OtError> {
    check_l(l, 64)?;
    let wide: Vec<u128> = deltas.iter().map(|&d| d as u128).collect();
    Ok(send_wide(pool, crh, ch, &wide, l)?.into_iter().map(|x| x as u64).collect())
}

/// Receiver with choice bits `c_i`: returns `x_i + c_i·Δ_i mod 2^l`, `1 <= l <= 64`.
pub fn recv<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, c: &[bool], l: u32) -> Result<Vec<u64>, OtError> {
    check_l(l, 64)?;
    Ok(recv_wide(pool, crh, ch, c, l)?.into_iter().map(|x| x as u64).collect())
}

/// [`send`] over `Z_{2^l}` with `1 <= l <= 128` (the hash output is a whole block, so widths up
/// to 128 cost the same COT; BLB's conversions work in `Z_{2^(ℓ+40)}`, App. C.3).
pub fn send_wide<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, deltas: &[u128], l: u32) -> Result<Vec<u128>, OtError> {
    check_l(l, 128)?;
    let delta = need_sender(pool)?;
    let n = deltas.len();
    let mask = mask128(l as usize);
    let (first, q) = pool.take(ch, n)?;
    let d = unpack_bits(&recv_bytes(ch, n.div_ceil(8), "ACOT choice correction")?, n)?;
    let mut p0: Vec<u128> = q.iter().zip(&d).map(|(x, &di)| if di { x ^ delta } else { *x }).collect();
    let mut p1: Vec<u128> = p0.iter().map(|x| x ^ delta).collect();
    crh.tccr_seq(&mut p0, DOMAIN_ROT | first as u128);
    crh.tccr_seq(&mut p1, DOMAIN_ROT | first as u128);
    let mut x = Vec::with_capacity(n);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let a = p0[i] & mask;
        let b = p1[i] & mask;
        x.push(a);
        y.push(a.wrapping_add(deltas[i]).wrapping_sub(b) & mask);
    }
    ch.send(&pack_words(&y, l as usize))?;
    Ok(x)
}

/// One ACOT in each direction at once, over `Z_{2^l}` (`1 <= l <= 64`): this party is the
/// sender with `deltas` (COTs from `send_pool`) and the receiver with choices `c` (from
/// `recv_pool`); the peer calls it with its own pools and operands. Both choice corrections
/// travel in one flight and both payloads in the next: 2 flights where a [`send`] followed by
/// a [`recv`] (the peer: `recv` then `send`) takes 3. Same messages and outputs per direction.
/// `send_first`: whether this party takes its sender COTs before its receiver COTs; the peer
/// passes the opposite, so that a pool refill (an extension with the peer) meets its partner.
/// Returns (sender outputs `x_i`, receiver outputs `x'_i + c_i·Δ'_i`).
#[allow(clippy::too_many_arguments)]
pub fn both<C: Channel + ?Sized>(
    send_pool: &mut CotPool,
    recv_pool: &mut CotPool,
    crh: &Crh,
    ch: &mut C,
    deltas: &[u64],
    c: &[bool],
    l: u32,
    send_first: bool,
) -> Result<(Vec<u64>, Vec<u64>), OtError> {
    check_l(l, 64)?;
    let delta = need_sender(send_pool)?;
    need_receiver(recv_pool)?;
    let (ns, nr) = (deltas.len(), c.len());
    let mask = mask128(l as usize);
    let ((fs, q), (fr, mut t)) = if send_first {
        let s = send_pool.take(ch, ns)?;
        (s, recv_pool.take(ch, nr)?)
    } else {
        let r = recv_pool.take(ch, nr)?;
        (send_pool.take(ch, ns)?, r)
    };
    // Flight 1: this party's choice correction out, the peer's in.
    let d_out: Vec<bool> = t.iter().zip(c).map(|(x, &ci)| (x & 1 == 1) ^ ci).collect();
    ch.send(&pack_bits(&d_out))?;
    let d = unpack_bits(&recv_bytes(ch, ns.div_ceil(8), "ACOT choice correction")?, ns)?;
    // Flight 2: this party's payload out (as in `send_wide`), the peer's in (as in `recv_wide`).
    let mut p0: Vec<u128> = q.iter().zip(&d).map(|(x, &di)| if di { x ^ delta } else { *x }).collect();
    let mut p1: Vec<u128> = p0.iter().map(|x| x ^ delta).collect();
    crh.tccr_seq(&mut p0, DOMAIN_ROT | fs as u128);
    crh.tccr_seq(&mut p1, DOMAIN_ROT | fs as u128);
    let mut xs = Vec::with_capacity(ns);
    let mut ys = Vec::with_capacity(ns);
    for i in 0..ns {
        let a = p0[i] & mask;
        xs.push(a as u64);
        ys.push(a.wrapping_add(deltas[i] as u128).wrapping_sub(p1[i] & mask) & mask);
    }
    ch.send(&pack_words(&ys, l as usize))?;
    crh.tccr_seq(&mut t, DOMAIN_ROT | fr as u128);
    let y = unpack_words(&ch.recv()?, nr, l as usize)?;
    let got = (0..nr)
        .map(|i| {
            let p = t[i] & mask;
            (if c[i] { p.wrapping_add(y[i]) & mask } else { p }) as u64
        })
        .collect();
    Ok((xs, got))
}

/// [`recv`] over `Z_{2^l}` with `1 <= l <= 128`.
pub fn recv_wide<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, c: &[bool], l: u32) -> Result<Vec<u128>, OtError> {
    check_l(l, 128)?;
    need_receiver(pool)?;
    let n = c.len();
    let mask = mask128(l as usize);
    let (first, mut t) = pool.take(ch, n)?;
    let d: Vec<bool> = t.iter().zip(c).map(|(x, &ci)| (x & 1 == 1) ^ ci).collect();
    ch.send(&pack_bits(&d))?;
    crh.tccr_seq(&mut t, DOMAIN_ROT | first as u128);
    let y = unpack_words(&ch.recv()?, n, l as usize)?;
    Ok((0..n)
        .map(|i| {
            let p = t[i] & mask;
            if c[i] {
                p.wrapping_add(y[i]) & mask
            } else {
                p
            }
        })
        .collect())
}
