//! Punctured PRF / (n−1)-out-of-n random OT on GGM trees (Boyle et al. CCS'19; Ferret §4;
//! ROTL §IV uses it for secret-shared rotation): the sender gets all `2^h` leaves of each tree,
//! the receiver, who chooses the punctured point `α`, gets every leaf except leaf `α`
//! (returned as 0) — from `h` 1-of-2 ROTs per tree.
//!
//! 1. receiver → sender: `d_l = b_l ⊕ ¬α_l` per level (`b_l` the random COT choice), `h` bits;
//! 2. sender: fresh seed from its PRG, [`crate::ggm::expand`], sends for each level
//!    `K^l_x ⊕ H(τ, q_l ⊕ (x ⊕ d_l)·Δ)`, `x ∈ {0,1}` (2·h blocks per tree);
//! 3. receiver: `K^l_{¬α_l} = c_{l, b_l ⊕ d_l} ⊕ H(τ, t_l)`, then [`crate::ggm::reconstruct`].
//!
//! Cost: 2 flows, `h` bits + `256·h` bits per tree, `h` COTs per tree. (The half-tree
//! optimisation of Guo et al. EUROCRYPT'23, which halves the second message, is not
//! implemented.)

use crate::bits::{pack_bits, unpack_bits};
use crate::crhash::Crh;
use crate::ggm;
use crate::pool::CotPool;
use crate::rot::{need_receiver, need_sender};
use crate::{blocks_to_bytes, recv_blocks, recv_bytes, OtError};
use nectar_math::Prg;
use nectar_net::Channel;

/// Tweak domain (AGREEMENT).
const DOMAIN_PPRF: u128 = 4 << 120;
/// Largest supported depth (LOCAL: 2^20 leaves per tree).
pub const MAX_DEPTH: usize = 20;

fn check(h: usize) -> Result<(), OtError> {
    if !(1..=MAX_DEPTH).contains(&h) {
        return Err(OtError::BadArgument(format!("PPRF depth {h} not in 1..={MAX_DEPTH}")));
    }
    Ok(())
}

/// Sender of `trees` punctured PRFs of depth `h`: all leaves of each tree.
pub fn send<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, trees: usize, h: usize, prg: &mut Prg) -> Result<Vec<Vec<u128>>, OtError> {
    check(h)?;
    let delta = need_sender(pool)?;
    let (first, q) = pool.take(ch, trees * h)?;
    let d = unpack_bits(&recv_bytes(ch, (trees * h).div_ceil(8), "PPRF choice correction")?, trees * h)?;
    let mut p0: Vec<u128> = q.iter().zip(&d).map(|(x, &di)| if di { x ^ delta } else { *x }).collect();
    let mut p1: Vec<u128> = p0.iter().map(|x| x ^ delta).collect();
    crh.tccr_seq(&mut p0, DOMAIN_PPRF | first as u128);
    crh.tccr_seq(&mut p1, DOMAIN_PPRF | first as u128);
    let mut scratch = Vec::new();
    let mut out = Vec::with_capacity(trees);
    let mut msg = Vec::with_capacity(2 * trees * h);
    for j in 0..trees {
        let mut leaves = vec![0u128; 1 << h];
        let sums = ggm::expand(crh, prg.next_u128(), h, &mut leaves, &mut scratch);
        for (l, (k0, k1)) in sums.iter().enumerate() {
            msg.push(k0 ^ p0[j * h + l]);
            msg.push(k1 ^ p1[j * h + l]);
        }
        out.push(leaves);
    }
    ch.send(&blocks_to_bytes(&msg))?;
    Ok(out)
}

/// Receiver with punctured points `alphas[j] < 2^h`: every leaf but `alphas[j]` (which is 0).
pub fn recv<C: Channel + ?Sized>(pool: &mut CotPool, crh: &Crh, ch: &mut C, alphas: &[usize], h: usize) -> Result<Vec<Vec<u128>>, OtError> {
    check(h)?;
    need_receiver(pool)?;
    if let Some(a) = alphas.iter().find(|&&a| a >> h != 0) {
        return Err(OtError::BadArgument(format!("punctured point {a} >= 2^{h}")));
    }
    let trees = alphas.len();
    let (first, mut t) = pool.take(ch, trees * h)?;
    let mut d = Vec::with_capacity(trees * h);
    let mut b = Vec::with_capacity(trees * h);
    for (j, &a) in alphas.iter().enumerate() {
        for l in 1..=h {
            let bl = t[j * h + l - 1] & 1 == 1;
            let al = (a >> (h - l)) & 1 == 1;
            d.push(bl ^ !al);
            b.push(bl);
        }
    }
    ch.send(&pack_bits(&d))?;
    crh.tccr_seq(&mut t, DOMAIN_PPRF | first as u128);
    let msg = recv_blocks(ch, 2 * trees * h, "PPRF level keys")?;
    let mut scratch = Vec::new();
    let mut out = Vec::with_capacity(trees);
    let mut keys = vec![0u128; h];
    for (j, &a) in alphas.iter().enumerate() {
        for l in 0..h {
            let x = (b[j * h + l] ^ d[j * h + l]) as usize;
            keys[l] = msg[2 * (j * h + l) + x] ^ t[j * h + l];
        }
        let mut leaves = vec![0u128; 1 << h];
        ggm::reconstruct(crh, a, &keys, &mut leaves, &mut scratch);
        out.push(leaves);
    }
    Ok(out)
}
