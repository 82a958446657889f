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
//!
//! **Payload in frames** (nectar, issues 48/52): a payload of more than [`PAYLOAD_CHUNK`]
//! instances leaves in frames of that many (a whole number of width patterns), each hashed and
//! sent before the next is hashed, and the receiver finishes each frame's instances as it
//! arrives: the sender's hashing, the transfer and the receiver's hashing overlap instead of
//! following one another (the same flight; a large ACOT's time tends to the largest of the
//! three). Same outputs; the payload bytes differ only by each frame's rounding up to a byte.

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
fn receiver_step(crh: &Crh, first: u64, t: &mut [u128], c: &[bool], y: &[u128], mask: u128) -> Vec<u128> {
    receiver_step_masks(crh, first, t, c, y, &[mask])
}

/// [`receiver_step`] with instance `i` over the width of `masks[i % masks.len()]`.
fn receiver_step_masks(crh: &Crh, first: u64, t: &mut [u128], c: &[bool], y: &[u128], masks: &[u128]) -> Vec<u128> {
    crh.tccr_seq(t, DOMAIN_ROT | first as u128);
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

/// Instances per payload frame of a large ACOT (AGREEMENT: both parties cut the payload at the
/// same instances; rounded down to a whole number of width patterns, at least one). About
/// 0.5 MB of 64-bit payload: a few milliseconds of hashing and of transfer at 1 Gbit/s.
pub const PAYLOAD_CHUNK: usize = 1 << 16;

/// How a payload is laid out: `l`-bit words, or a graded width pattern.
#[derive(Clone, Copy)]
enum Layout<'a> {
    Words(u32),
    Graded(&'a [u32]),
}

impl Layout<'_> {
    /// Instances per frame ([`PAYLOAD_CHUNK`] in whole width patterns).
    fn chunk(&self) -> usize {
        match self {
            Layout::Words(_) => PAYLOAD_CHUNK,
            Layout::Graded(w) => (PAYLOAD_CHUNK / w.len()).max(1) * w.len(),
        }
    }
    fn pack(&self, y: &[u128]) -> Vec<u8> {
        match self {
            Layout::Words(l) => pack_words(y, *l as usize),
            Layout::Graded(w) => pack_graded(y, w),
        }
    }
    fn unpack(&self, bytes: Vec<u8>, n: usize) -> Result<Vec<u128>, OtError> {
        match self {
            Layout::Words(l) => unpack_words(&bytes, n, *l as usize),
            Layout::Graded(w) => unpack_graded(bytes, n, w),
        }
    }
}

/// The frames of `n` instances: `(offset, end)` of each, one frame (possibly empty) when `n`
/// fits one.
fn frames(n: usize, chunk: usize) -> impl Iterator<Item = (usize, usize)> {
    let count = n.div_ceil(chunk).max(1);
    (0..count).map(move |k| (k * chunk, ((k + 1) * chunk).min(n)))
}

/// The sender's step 2 and its payload, frame by frame (module docs): returns `x_i`.
#[allow(clippy::too_many_arguments)]
fn send_payload<C: Channel + ?Sized>(ch: &mut C, crh: &Crh, delta: u128, first: u64, q: &[u128], d: &[bool], deltas: &[u128], masks: &[u128], layout: Layout<'_>) -> Result<Vec<u128>, OtError> {
    let mut x = Vec::with_capacity(deltas.len());
    for (o, e) in frames(deltas.len(), layout.chunk()) {
        let (xs, ys) = sender_step_masks(crh, delta, first + o as u64, &q[o..e], &d[o..e], &deltas[o..e], masks);
        ch.send(&layout.pack(&ys))?;
        x.extend(xs);
    }
    Ok(x)
}

/// The receiver's step 3, frame by frame as the payload arrives (module docs).
fn recv_payload<C: Channel + ?Sized>(ch: &mut C, crh: &Crh, first: u64, t: &mut [u128], c: &[bool], masks: &[u128], layout: Layout<'_>) -> Result<Vec<u128>, OtError> {
    let mut out = Vec::with_capacity(c.len());
    for (o, e) in frames(c.len(), layout.chunk()) {
        let y = layout.unpack(ch.recv()?, e - o)?;
        out.extend(receiver_step_masks(crh, first + o as u64, &mut t[o..e], &c[o..e], &y, masks));
    }
    Ok(out)
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
    send_payload(ch, crh, delta, first, &q, &d, deltas, &[mask], Layout::Words(l))
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
    ch.send(&pack_bits(&receiver_corrections(&t, c)))?;
    let d = unpack_bits(&recv_bytes(ch, ns.div_ceil(8), "ACOT choice correction")?, ns)?;
    // Flight 2: this party's payload out, the peer's in.
    let wide: Vec<u128> = deltas.iter().map(|&v| v as u128).collect();
    let (xs, ys) = sender_step(crh, delta, fs, &q, &d, &wide, mask);
    ch.send(&pack_words(&ys, l as usize))?;
    let y = unpack_words(&ch.recv()?, nr, l as usize)?;
    let got = receiver_step(crh, fr, &mut t, c, &y, mask);
    Ok((xs.into_iter().map(|v| v as u64).collect(), got.into_iter().map(|v| v as u64).collect()))
}

/// [`recv`] over `Z_{2^l}` with `1 <= l <= 128`.
pub fn recv_wide<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, c: &[bool], l: u32) -> Result<Vec<u128>, OtError> {
    check_l(l, 128)?;
    need_receiver(pool)?;
    let n = c.len();
    let mask = mask128(l as usize);
    let (first, mut t) = pool.take(ch, n)?;
    ch.send(&pack_bits(&receiver_corrections(&t, c)))?;
    recv_payload(ch, crh, first, &mut t, c, &[mask], Layout::Words(l))
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
    let x = send_payload(ch, crh, delta, first, &q, &d, &wide, &masks, Layout::Graded(widths))?;
    Ok(x.into_iter().map(|v| v as u64).collect())
}

/// [`recv`] with graded widths ([`send_graded`]): returns `x_i + c_i·Δ_i mod 2^{w_i}`.
pub fn recv_graded<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, c: &[bool], widths: &[u32]) -> Result<Vec<u64>, OtError> {
    let masks = graded_masks(widths)?;
    need_receiver(pool)?;
    let n = c.len();
    let (first, mut t) = pool.take(ch, n)?;
    ch.send(&pack_bits(&receiver_corrections(&t, c)))?;
    let got = recv_payload(ch, crh, first, &mut t, c, &masks, Layout::Graded(widths))?;
    Ok(got.into_iter().map(|v| v as u64).collect())
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
