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
