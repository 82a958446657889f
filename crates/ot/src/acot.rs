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

/// Sender's step 2 on its COTs `q` (first index `first`) and the receiver's corrections `d`:
/// its outputs `x_i = p_0` and the payload `y_i = p_0 + Δ_i − p_1 mod 2^l`.
fn sender_step(crh: &Crh, delta: u128, first: u64, q: &[u128], d: &[bool], deltas: &[u128], mask: u128) -> (Vec<u128>, Vec<u128>) {
    let mut p0: Vec<u128> = q.iter().zip(d).map(|(x, &di)| if di { x ^ delta } else { *x }).collect();
    let mut p1: Vec<u128> = p0.iter().map(|x| x ^ delta).collect();
    crh.tccr_seq(&mut p0, DOMAIN_ROT | first as u128);
    crh.tccr_seq(&mut p1, DOMAIN_ROT | first as u128);
    let x: Vec<u128> = p0.iter().map(|a| a & mask).collect();
    let y = x.iter().zip(&p1).zip(deltas).map(|((a, b), dl)| a.wrapping_add(*dl).wrapping_sub(b & mask) & mask).collect();
    (x, y)
}

/// Receiver's step 1 on its COTs `t`: the corrections `d_i = c_i ⊕ b_i`.
fn receiver_corrections(t: &[u128], c: &[bool]) -> Vec<bool> {
    t.iter().zip(c).map(|(x, &ci)| (x & 1 == 1) ^ ci).collect()
}

/// Receiver's step 3 on its COTs `t` (first index `first`) and the payload `y`.
fn receiver_step(crh: &Crh, first: u64, mut t: Vec<u128>, c: &[bool], y: &[u128], mask: u128) -> Vec<u128> {
    crh.tccr_seq(&mut t, DOMAIN_ROT | first as u128);
    t.iter()
        .zip(c)
        .zip(y)
        .map(|((p, &ci), yi)| if ci { (p & mask).wrapping_add(*yi) & mask } else { p & mask })
        .collect()
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
    let (x, y) = sender_step(crh, delta, first, &q, &d, deltas, mask);
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
    let ((fs, q), (fr, t)) = if send_first {
        let s = send_pool.take(ch, ns)?;
        (s, recv_pool.take(ch, nr)?)
    } else {
        let r = recv_pool.take(ch, nr)?;
        (send_pool.take(ch, ns)?, r)
    };
    // Flight 1: this party's choice correction out, the peer's in.
    ch.send(&pack_bits(&receiver_corrections(&t, c)))?;
    let d = unpack_bits(&recv_bytes(ch, ns.div_ceil(8), "ACOT choice correction")?, ns)?;
    // Flight 2: this party's payload out, the peer's in.
    let wide: Vec<u128> = deltas.iter().map(|&v| v as u128).collect();
    let (xs, ys) = sender_step(crh, delta, fs, &q, &d, &wide, mask);
    ch.send(&pack_words(&ys, l as usize))?;
    let y = unpack_words(&ch.recv()?, nr, l as usize)?;
    let got = receiver_step(crh, fr, t, c, &y, mask);
    Ok((xs.into_iter().map(|v| v as u64).collect(), got.into_iter().map(|v| v as u64).collect()))
}

/// [`recv`] over `Z_{2^l}` with `1 <= l <= 128`.
pub fn recv_wide<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, c: &[bool], l: u32) -> Result<Vec<u128>, OtError> {
    check_l(l, 128)?;
    need_receiver(pool)?;
    let n = c.len();
    let mask = mask128(l as usize);
    let (first, t) = pool.take(ch, n)?;
    ch.send(&pack_bits(&receiver_corrections(&t, c)))?;
    let y = unpack_words(&ch.recv()?, n, l as usize)?;
    Ok(receiver_step(crh, first, t, c, &y, mask))
}
