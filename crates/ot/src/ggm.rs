//! GGM trees (Goldreich–Goldwasser–Micali) as used for punctured PRFs: the sender expands a
//! random seed into `2^h` leaves and, per level `l`, the XOR of all left children `K^l_0` and of
//! all right children `K^l_1`; a receiver who learns `K^l_{¬α_l}` for every level (by `h`
//! 1-of-2 OTs) recomputes every leaf except leaf `α` (Boyle et al. CCS'19 §4; Ferret CCS'20
//! Fig. 6, "(n−1)-out-of-n OT from log n 1-out-of-2 OTs").
//!
//! Conventions: levels are numbered 1..=h from the root; `α_l` is bit `h − l` of `α` (the
//! path is read MSB first); node `i` at a level has children `2i`, `2i+1`. The PRG is
//! [`Crh::prg2`]. Cost (local): `2^h − 1` PRG calls (2 AES each) per tree on either side.

use crate::crhash::Crh;

/// Expand `seed` into `leaves` (length `2^h`, every entry overwritten) and return
/// `(K^l_0, K^l_1)` for `l = 1..=h`. `scratch` is reused between trees (any length; its
/// contents are never read before being written).
pub fn expand(crh: &Crh, seed: u128, h: usize, leaves: &mut [u128], scratch: &mut Vec<u128>) -> Vec<(u128, u128)> {
    debug_assert_eq!(leaves.len(), 1 << h);
    let mut sums = Vec::with_capacity(h);
    grow(scratch, 1 << h);
    // Alternate buffers so the last level lands in `leaves`.
    let (mut cur, mut nxt_store): (&mut [u128], &mut [u128]) =
        if h % 2 == 1 { (&mut scratch[..1 << h], &mut leaves[..]) } else { (&mut leaves[..], &mut scratch[..1 << h]) };
    cur[0] = seed;
    for l in 1..=h {
        let w = 1usize << (l - 1);
        crh.prg2(&cur[..w], &mut nxt_store[..2 * w]);
        let (mut k0, mut k1) = (0u128, 0u128);
        for p in nxt_store[..2 * w].chunks_exact(2) {
            k0 ^= p[0];
            k1 ^= p[1];
        }
        sums.push((k0, k1));
        std::mem::swap(&mut cur, &mut nxt_store);
    }
    sums
}

/// `scratch` at least `len` long; what it held stays (the trees write a level before reading it).
fn grow(scratch: &mut Vec<u128>, len: usize) {
    if scratch.len() < len {
        scratch.resize(len, 0);
    }
}

/// Recompute every leaf except leaf `alpha` (set to 0) from `keys[l-1] = K^l_{¬α_l}`; every
/// entry of `leaves` is overwritten.
pub fn reconstruct(crh: &Crh, alpha: usize, keys: &[u128], leaves: &mut [u128], scratch: &mut Vec<u128>) {
    let h = keys.len();
    debug_assert_eq!(leaves.len(), 1 << h);
    debug_assert!(alpha < (1 << h));
    grow(scratch, 1 << h);
    let (mut cur, mut nxt): (&mut [u128], &mut [u128]) =
        if h % 2 == 1 { (&mut scratch[..1 << h], &mut leaves[..]) } else { (&mut leaves[..], &mut scratch[..1 << h]) };
    let mut path = 0usize; // index of the unknown node at the previous level
    for l in 1..=h {
        let a_l = (alpha >> (h - l)) & 1;
        let w = 1usize << (l - 1);
        if l == 1 {
            nxt[0] = 0;
            nxt[1] = 0;
        } else {
            crh.prg2(&cur[..w], &mut nxt[..2 * w]);
        }
        // The children of the unknown node are unknown; the sibling on the off-path side is
        // recovered from the level sum.
        nxt[2 * path] = 0;
        nxt[2 * path + 1] = 0;
        let sib = 2 * path + (1 - a_l);
        let mut acc = keys[l - 1];
        let par = 1 - a_l;
        let mut i = par;
        while i < 2 * w {
            acc ^= nxt[i];
            i += 2;
        }
        nxt[sib] = acc;
        path = 2 * path + a_l;
        std::mem::swap(&mut cur, &mut nxt);
    }
}

/// The half-tree rule: children of the `w` nodes `cur[..w]` into `nxt[..2w]`, `left = H(p)`
/// (TCCR under `tweak(i)` for node `i`), `right = p ⊕ left`. The rule of [`crate::half_tree`]'s PPRF and of Ferret's half-tree SPCOT (Guo et al.,
/// EUROCRYPT'23 §4).
pub(crate) fn half_tree_children(crh: &Crh, cur: &[u128], nxt: &mut [u128], tweak: impl Fn(usize) -> u128) {
    let w = cur.len();
    nxt[..w].copy_from_slice(cur);
    crh.tccr_with(&mut nxt[..w], tweak);
    // Spread in place from the back (2i >= i): nxt[i] is read before anything overwrites it.
    for i in (0..w).rev() {
        let left = nxt[i];
        nxt[2 * i] = left;
        nxt[2 * i + 1] = cur[i] ^ left;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Leaves and scratch holding old data (as recycled buffers do) give the same trees as
    /// fresh zeroed ones: nothing is read before it is written.
    #[test]
    fn stale_buffers_are_overwritten() {
        let crh = Crh::new();
        for h in 1..=6 {
            let n = 1usize << h;
            let mut fresh = vec![0u128; n];
            let sums = expand(&crh, 77 + h as u128, h, &mut fresh, &mut Vec::new());
            let mut stale = vec![u128::MAX; n];
            let mut scratch = vec![0x5555u128; 4 * n];
            assert_eq!(expand(&crh, 77 + h as u128, h, &mut stale, &mut scratch), sums);
            assert_eq!(stale, fresh);
            let alpha = n / 3;
            let keys: Vec<u128> = (1..=h)
                .map(|l| if (alpha >> (h - l)) & 1 == 1 { sums[l - 1].0 } else { sums[l - 1].1 })
                .collect();
            let mut want = vec![0u128; n];
            reconstruct(&crh, alpha, &keys, &mut want, &mut Vec::new());
            let mut got = vec![u128::MAX; n];
            scratch.iter_mut().for_each(|x| *x = 0xaaaa);
            reconstruct(&crh, alpha, &keys, &mut got, &mut scratch);
            assert_eq!(got, want);
        }
    }

    #[test]
    fn punctured_reconstruction() {
        let crh = Crh::new();
        let mut s = Vec::new();
        for h in 1..=7 {
            let mut leaves = vec![0u128; 1 << h];
            let sums = expand(&crh, 0xdead_beef + h as u128, h, &mut leaves, &mut s);
            for alpha in 0..(1usize << h) {
                let keys: Vec<u128> = (1..=h)
                    .map(|l| if (alpha >> (h - l)) & 1 == 1 { sums[l - 1].0 } else { sums[l - 1].1 })
                    .collect();
                let mut got = vec![0u128; 1 << h];
                reconstruct(&crh, alpha, &keys, &mut got, &mut s);
                for i in 0..(1 << h) {
                    assert_eq!(got[i], if i == alpha { 0 } else { leaves[i] }, "h={h} alpha={alpha} i={i}");
                }
            }
        }
    }
}
