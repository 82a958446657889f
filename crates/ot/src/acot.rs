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
//!
//! **Graded widths** ([`send_graded`] / [`recv_graded`]): instance `i` over `Z_{2^{w_i}}` with
//! the widths a repeating pattern, each payload `w_i` bits. Gilboa's product from OT (the
//! cross term `x_s·y_r = Σ_j bit_j(y_r)·x_s·2^j mod 2^l`) needs bit `j`'s term only mod
//! `2^{l−j}` (it is multiplied by `2^j` afterwards), so its COT runs over `Z_{2^{l−j}}`:
//! `l(l + 1)/2` payload bits per cross term instead of `l²` (CrypTFlow2's / SiRNN's
//! multiplication, REFERENCE.md §2.5).

use crate::bits::{mask128, or_word, pack_bits, pack_words, unpack_bits, unpack_words, word_at, WORD_SLACK};
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
    sender_step_masks(crh, delta, first, q, d, deltas, &[mask])
}

/// [`sender_step`] with instance `i` over the width of `masks[i % masks.len()]`.
fn sender_step_masks(crh: &Crh, delta: u128, first: u64, q: &[u128], d: &[bool], deltas: &[u128], masks: &[u128]) -> (Vec<u128>, Vec<u128>) {
    let mut p0: Vec<u128> = q.iter().zip(d).map(|(x, &di)| if di { x ^ delta } else { *x }).collect();
    let mut p1: Vec<u128> = p0.iter().map(|x| x ^ delta).collect();
    crh.tccr_seq(&mut p0, DOMAIN_ROT | first as u128);
    crh.tccr_seq(&mut p1, DOMAIN_ROT | first as u128);
    let x: Vec<u128> = p0.iter().zip(masks.iter().cycle()).map(|(a, m)| a & m).collect();
    let y = x
        .iter()
        .zip(&p1)
        .zip(deltas)
        .zip(masks.iter().cycle())
        .map(|(((a, b), dl), m)| a.wrapping_add(*dl).wrapping_sub(b & m) & m)
        .collect();
    (x, y)
}

/// Receiver's step 1 on its COTs `t`: the corrections `d_i = c_i ⊕ b_i`.
fn receiver_corrections(t: &[u128], c: &[bool]) -> Vec<bool> {
    t.iter().zip(c).map(|(x, &ci)| (x & 1 == 1) ^ ci).collect()
}

/// Receiver's step 3 on its COTs `t` (first index `first`) and the payload `y`.
fn receiver_step(crh: &Crh, first: u64, t: Vec<u128>, c: &[bool], y: &[u128], mask: u128) -> Vec<u128> {
    receiver_step_masks(crh, first, t, c, y, &[mask])
}

/// [`receiver_step`] with instance `i` over the width of `masks[i % masks.len()]`.
fn receiver_step_masks(crh: &Crh, first: u64, mut t: Vec<u128>, c: &[bool], y: &[u128], masks: &[u128]) -> Vec<u128> {
    crh.tccr_seq(&mut t, DOMAIN_ROT | first as u128);
    t.iter()
        .zip(c)
        .zip(y)
        .zip(masks.iter().cycle())
        .map(|(((p, &ci), yi), m)| if ci { (p & m).wrapping_add(*yi) & m } else { p & m })
        .collect()
}

/// Checks a width pattern (each in `1..=64`, not empty) and returns its masks.
fn graded_masks(widths: &[u32]) -> Result<Vec<u128>, OtError> {
    if widths.is_empty() {
        return Err(OtError::BadArgument("empty width pattern".into()));
    }
    widths.iter().map(|&w| check_l(w, 64).map(|_| mask128(w as usize))).collect()
}

/// Bits of `n` instances whose widths repeat `widths`.
fn graded_bits(n: usize, widths: &[u32]) -> usize {
    let per: usize = widths.iter().map(|&w| w as usize).sum();
    let (full, rest) = (n / widths.len(), n % widths.len());
    full * per + widths[..rest].iter().map(|&w| w as usize).sum::<usize>()
}

/// Packs `xs[i]` at the width `widths[i % widths.len()]`, back to back.
fn pack_graded(xs: &[u128], widths: &[u32]) -> Vec<u8> {
    let total = graded_bits(xs.len(), widths);
    let mut out = vec![0u8; total.div_ceil(8) + WORD_SLACK];
    let mut pos = 0;
    for (x, &w) in xs.iter().zip(widths.iter().cycle()) {
        or_word(&mut out, pos, x & mask128(w as usize), w as usize);
        pos += w as usize;
    }
    out.truncate(total.div_ceil(8));
    out
}

/// Unpacks `n` words of [`pack_graded`]'s layout; the message must be exactly its length.
fn unpack_graded(bytes: Vec<u8>, n: usize, widths: &[u32]) -> Result<Vec<u128>, OtError> {
    let total = graded_bits(n, widths);
    if bytes.len() != total.div_ceil(8) {
        return Err(OtError::BadMessage { what: "graded words", expected: total.div_ceil(8), got: bytes.len() });
    }
    let mut padded = bytes;
    padded.resize(total.div_ceil(8) + WORD_SLACK, 0);
    let mut pos = 0;
    Ok(widths
        .iter()
        .cycle()
        .take(n)
        .map(|&w| {
            let v = word_at(&padded, pos, w as usize);
            pos += w as usize;
            v
        })
        .collect())
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

/// [`send`] with graded widths (module docs): instance `i` over `Z_{2^{w_i}}`,
/// `w_i = widths[i % widths.len()]` in `1..=64`; returns `x_i` in `[0, 2^{w_i})`. The payload
/// is `Σ w_i` bits.
pub fn send_graded<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, deltas: &[u64], widths: &[u32]) -> Result<Vec<u64>, OtError> {
    let masks = graded_masks(widths)?;
    let delta = need_sender(pool)?;
    let n = deltas.len();
    let (first, q) = pool.take(ch, n)?;
    let d = unpack_bits(&recv_bytes(ch, n.div_ceil(8), "ACOT choice correction")?, n)?;
    let wide: Vec<u128> = deltas.iter().map(|&v| v as u128).collect();
    let (x, y) = sender_step_masks(crh, delta, first, &q, &d, &wide, &masks);
    ch.send(&pack_graded(&y, widths))?;
    Ok(x.into_iter().map(|v| v as u64).collect())
}

/// [`recv`] with graded widths ([`send_graded`]): returns `x_i + c_i·Δ_i mod 2^{w_i}`.
pub fn recv_graded<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, c: &[bool], widths: &[u32]) -> Result<Vec<u64>, OtError> {
    let masks = graded_masks(widths)?;
    need_receiver(pool)?;
    let n = c.len();
    let (first, t) = pool.take(ch, n)?;
    ch.send(&pack_bits(&receiver_corrections(&t, c)))?;
    let y = unpack_graded(ch.recv()?, n, widths)?;
    Ok(receiver_step_masks(crh, first, t, c, &y, &masks).into_iter().map(|v| v as u64).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The graded layout round-trips and costs exactly the sum of the widths.
    #[test]
    fn graded_packing_round_trips() {
        let widths = [64u32, 63, 7, 1, 33];
        let xs: Vec<u128> = (0..23u128).map(|i| (i * 0x9e37_79b9_7f4a_7c15_f39c) ^ (i << 60)).collect();
        let bytes = pack_graded(&xs, &widths);
        let bits: usize = (0..xs.len()).map(|i| widths[i % 5] as usize).sum();
        assert_eq!(bytes.len(), bits.div_ceil(8));
        let back = unpack_graded(bytes.clone(), xs.len(), &widths).unwrap();
        for (i, (x, b)) in xs.iter().zip(&back).enumerate() {
            assert_eq!(*b, x & mask128(widths[i % 5] as usize), "word {i}");
        }
        assert!(unpack_graded(bytes[1..].to_vec(), xs.len(), &widths).is_err(), "a short message is refused");
        assert!(graded_masks(&[]).is_err() && graded_masks(&[0]).is_err() && graded_masks(&[65]).is_err());
    }
}
