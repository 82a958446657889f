//! Random and correlated OT from the pool (no or one flow).
//!
//! - **Random COT** ([`rcot_send`]/[`rcot_recv`]): the pool's COTs as they are, no
//!   communication: sender `q`, receiver `(b, t = q ⊕ b·Δ)` with random `b`.
//! - **Chosen-choice COT** ([`cot_send`]/[`cot_recv`]): the receiver sends `d = c ⊕ b` (1 bit
//!   per instance, one flow receiver → sender); the sender shifts `q ← q ⊕ d·Δ`
//!   (Beaver's derandomisation), so `t = q ⊕ c·Δ`.
//! - **Random OT** ([`rot_send`]/[`rot_recv`]): `m_0 = H(i, q)`, `m_1 = H(i, q ⊕ Δ)`, the
//!   receiver gets `m_b = H(i, t)` (IKNP'03 §3 with the TCCR hash of [`crate::crhash`], tweak `i`
//!   = the COT's global index), no communication.

use crate::bits::{pack_bits, unpack_bits};
use crate::crhash::Crh;
use crate::pool::CotPool;
use crate::{recv_bytes, OtError};
use nectar_net::Channel;

/// Tweak domain of random OT pads (AGREEMENT).
pub(crate) const DOMAIN_ROT: u128 = 2 << 120;

pub(crate) fn need_sender(pool: &CotPool) -> Result<u128, OtError> {
    pool.delta().ok_or_else(|| OtError::BadArgument("this pool is the receiver side".into()))
}

pub(crate) fn need_receiver(pool: &CotPool) -> Result<(), OtError> {
    if pool.is_sender() {
        return Err(OtError::BadArgument("this pool is the sender side".into()));
    }
    Ok(())
}

/// Random COT, sender: `q_i` (the receiver holds `q_i ⊕ b_i·Δ`).
pub fn rcot_send<C: Channel + ?Sized>(pool: &mut CotPool, ch: &mut C, n: usize) -> Result<Vec<u128>, OtError> {
    need_sender(pool)?;
    Ok(pool.take(ch, n)?.1)
}

/// Random COT, receiver: `(b_i, t_i)`.
pub fn rcot_recv<C: Channel + ?Sized>(pool: &mut CotPool, ch: &mut C, n: usize) -> Result<(Vec<bool>, Vec<u128>), OtError> {
    need_receiver(pool)?;
    let t = pool.take(ch, n)?.1;
    Ok((t.iter().map(|x| x & 1 == 1).collect(), t))
}

/// Chosen-choice COT, sender: returns `r_i`; the receiver gets `r_i ⊕ c_i·Δ`.
pub fn cot_send<C: Channel + ?Sized>(pool: &mut CotPool, ch: &mut C, n: usize) -> Result<Vec<u128>, OtError> {
    let delta = need_sender(pool)?;
    let (_, mut q) = pool.take(ch, n)?;
    let d = unpack_bits(&recv_bytes(ch, n.div_ceil(8), "COT choice correction")?, n)?;
    for (x, di) in q.iter_mut().zip(d) {
        if di {
            *x ^= delta;
        }
    }
    Ok(q)
}

/// Chosen-choice COT, receiver with choice bits `c`: returns `r_i ⊕ c_i·Δ`.
pub fn cot_recv<C: Channel + ?Sized>(pool: &mut CotPool, ch: &mut C, c: &[bool]) -> Result<Vec<u128>, OtError> {
    need_receiver(pool)?;
    let (_, t) = pool.take(ch, c.len())?;
    let d: Vec<bool> = t.iter().zip(c).map(|(x, &ci)| (x & 1 == 1) ^ ci).collect();
    ch.send(&pack_bits(&d))?;
    Ok(t)
}

/// Random OT, sender: `(m_{i,0}, m_{i,1})`.
pub fn rot_send<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, n: usize) -> Result<Vec<(u128, u128)>, OtError> {
    let delta = need_sender(pool)?;
    let (first, q) = pool.take(ch, n)?;
    let mut m0 = q.clone();
    let mut m1: Vec<u128> = q.iter().map(|x| x ^ delta).collect();
    crh.tccr_seq(&mut m0, DOMAIN_ROT | first as u128);
    crh.tccr_seq(&mut m1, DOMAIN_ROT | first as u128);
    Ok(m0.into_iter().zip(m1).collect())
}

/// Random OT, receiver: `(b_i, m_{i,b_i})`.
pub fn rot_recv<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, n: usize) -> Result<(Vec<bool>, Vec<u128>), OtError> {
    need_receiver(pool)?;
    let (first, mut t) = pool.take(ch, n)?;
    let b = t.iter().map(|x| x & 1 == 1).collect();
    crh.tccr_seq(&mut t, DOMAIN_ROT | first as u128);
    Ok((b, t))
}
