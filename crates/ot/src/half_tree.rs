//! Random-point punctured PRF on **half-trees** (Guo, Yang, Wang, Zhang, Xie, Liu, Zhao,
//! EUROCRYPT'23 §4; used by ROTL §IV-B "optimisation" and §VII-A): the sender gets all `2^h`
//! leaves of each tree, the receiver every leaf but one at a **random** punctured point `α`
//! that the protocol picks for it (its random COT choice bits), so the receiver sends nothing.
//!
//! Tree (sender, per tree): level 1 is `(k, k ⊕ Δ)` for a fresh random `k` and the COT `Δ`;
//! every node `p` below has children `left = H(p)`, `right = p ⊕ left`, with `H` the tweakable
//! circular correlation-robust hash [`Crh::tccr`] under a tweak unique to (tree, level, node).
//! Hence at every level `K^l_0 ⊕ K^l_1 = Δ` (the XOR of all nodes is preserved from level 1
//! down), so one COT per level carries it: the sender sends `c_l = K^l_0 ⊕ q_l`, the receiver
//! with `t_l = q_l ⊕ b_l·Δ` gets `c_l ⊕ t_l = K^l_{b_l}`: the level sum of the side **off** its
//! path, i.e. the path bit is `α_l = ¬b_l`. With these sums it rebuilds every node but those on
//! its path (as [`crate::ggm::reconstruct`], with the half-tree child rule).
//!
//! Output leaves: the XOR of a tree's leaves is `Δ`, the same for every tree of the session, so
//! raw leaves are correlated across trees. Every leaf is therefore expanded into `width` output
//! blocks by `H` under tweaks unique to (tree, leaf, block): the `width` blocks are the leaf's
//! seed material (a PRG output), independent-looking across leaves and trees (TCCR security).
//! The punctured leaf's blocks are returned as zeros on the receiver.
//!
//! Conventions: levels `1..=h` from the root; `α_l` is bit `h − l` of `α` (MSB first); node
//! `i` at a level has children `2i`, `2i + 1` (as [`crate::ggm`]).
//!
//! Cost per tree: `h` random COTs and `h` blocks (`128·h` bits) sender → receiver, one flow;
//! the receiver sends nothing (the full-tree [`crate::pprf`] needs `h` bits back and `2h`
//! blocks). Local: `2^h − 2` hashes for the tree and `2^h·width` for the outputs (2 AES each).

use crate::crhash::Crh;
use crate::ggm::half_tree_children as children;
use crate::pool::CotPool;
use crate::rot::{need_receiver, need_sender};
use crate::{blocks_to_bytes, recv_blocks, OtError};
use nectar_math::Prg;
use nectar_net::Channel;

/// Tweak domain of the tree nodes (AGREEMENT).
const DOMAIN_NODE: u128 = 7 << 120;
/// Tweak domain of the output blocks (AGREEMENT).
const DOMAIN_LEAF: u128 = 8 << 120;
/// Largest supported depth (LOCAL: 2^16 leaves per tree).
pub const MAX_DEPTH: usize = 16;
/// Largest number of output blocks per leaf (LOCAL).
pub const MAX_WIDTH: usize = 1 << 16;

fn check(h: usize, width: usize) -> Result<(), OtError> {
    if !(1..=MAX_DEPTH).contains(&h) {
        return Err(OtError::BadArgument(format!("half-tree PPRF depth {h} not in 1..={MAX_DEPTH}")));
    }
    if !(1..=MAX_WIDTH).contains(&width) {
        return Err(OtError::BadArgument(format!("half-tree PPRF leaf width {width} not in 1..={MAX_WIDTH}")));
    }
    Ok(())
}

/// The tree's unique id: the global index of its first COT (unique per direction and session).
fn node_tweak(tree: u64, level: usize, node: usize) -> u128 {
    DOMAIN_NODE | (tree as u128) << 56 | (level as u128) << 24 | node as u128
}

fn leaf_tweak(tree: u64, leaf: usize, block: usize) -> u128 {
    DOMAIN_LEAF | (tree as u128) << 56 | (leaf as u128) << 24 | block as u128
}

/// Children of the `w` nodes `cur[..w]` at level `l − 1` into `nxt[..2w]` (half-tree rule).
/// `unknown`: the node whose children stay unknown (set to 0).
fn expand_level(crh: &Crh, tree: u64, l: usize, cur: &[u128], nxt: &mut [u128], unknown: Option<usize>) {
    children(crh, cur, nxt, |i| node_tweak(tree, l, i));
    if let Some(s) = unknown {
        nxt[2 * s] = 0;
        nxt[2 * s + 1] = 0;
    }
}

/// Output blocks of every leaf (`width` per leaf, leaf-major); the `unknown` leaf's stay zero.
fn outputs(crh: &Crh, tree: u64, leaves: &[u128], width: usize, unknown: Option<usize>) -> Vec<u128> {
    let mut out: Vec<u128> = leaves.iter().flat_map(|&x| std::iter::repeat_n(x, width)).collect();
    crh.tccr_with(&mut out, |j| leaf_tweak(tree, j / width, j % width));
    if let Some(s) = unknown {
        out[s * width..(s + 1) * width].iter_mut().for_each(|x| *x = 0);
    }
    out
}

/// Sender of `trees` random-point PPRFs of depth `h`: per tree, the `2^h · width` output
/// blocks of all leaves (leaf-major). One frame of `trees · h` blocks to the receiver.
pub fn send<C: Channel + ?Sized>(
    pool: &mut CotPool,
    crh: &Crh,
    ch: &mut C,
    trees: usize,
    h: usize,
    width: usize,
    prg: &mut Prg,
) -> Result<Vec<Vec<u128>>, OtError> {
    check(h, width)?;
    let delta = need_sender(pool)?;
    let (first, q) = pool.take(ch, trees * h)?;
    let mut msg = Vec::with_capacity(trees * h);
    let mut out = Vec::with_capacity(trees);
    let (mut cur, mut nxt) = (vec![0u128; 1 << h], vec![0u128; 1 << h]);
    for j in 0..trees {
        let tree = first + (j * h) as u64;
        let k = prg.next_u128();
        cur[0] = k;
        cur[1] = k ^ delta;
        msg.push(k ^ q[j * h]);
        for l in 2..=h {
            let w = 1usize << (l - 1);
            expand_level(crh, tree, l, &cur[..w], &mut nxt[..2 * w], None);
            let k0 = nxt[..2 * w].iter().step_by(2).fold(0u128, |a, b| a ^ b);
            msg.push(k0 ^ q[j * h + l - 1]);
            std::mem::swap(&mut cur, &mut nxt);
        }
        out.push(outputs(crh, tree, &cur, width, None));
    }
    ch.send(&blocks_to_bytes(&msg))?;
    Ok(out)
}

/// Receiver of `trees` random-point PPRFs of depth `h`: per tree the punctured point `α`
/// (uniformly random, from the COT choice bits) and the output blocks of every leaf but `α`
/// (zeros there), leaf-major.
pub fn recv<C: Channel + ?Sized>(
    pool: &mut CotPool,
    crh: &Crh,
    ch: &mut C,
    trees: usize,
    h: usize,
    width: usize,
) -> Result<Vec<(usize, Vec<u128>)>, OtError> {
    check(h, width)?;
    need_receiver(pool)?;
    let (first, t) = pool.take(ch, trees * h)?;
    let msg = recv_blocks(ch, trees * h, "half-tree PPRF level sums")?;
    let mut out = Vec::with_capacity(trees);
    let (mut cur, mut nxt) = (vec![0u128; 1 << h], vec![0u128; 1 << h]);
    for j in 0..trees {
        let tree = first + (j * h) as u64;
        // K^l_{b_l} for every level, and the path α_l = ¬b_l.
        let mut alpha = 0usize;
        let mut sums = Vec::with_capacity(h);
        for l in 1..=h {
            let tl = t[j * h + l - 1];
            let bl = (tl & 1) as usize;
            alpha = (alpha << 1) | (1 - bl);
            sums.push(msg[j * h + l - 1] ^ tl);
        }
        // Level 1: the off-path node is the level sum itself.
        let a1 = alpha >> (h - 1) & 1;
        cur[0] = 0;
        cur[1] = 0;
        cur[1 - a1] = sums[0];
        let mut path = a1;
        for l in 2..=h {
            let a_l = (alpha >> (h - l)) & 1;
            let w = 1usize << (l - 1);
            expand_level(crh, tree, l, &cur[..w], &mut nxt[..2 * w], Some(path));
            // The unknown sibling on the off-path side from that side's level sum.
            let side = 1 - a_l;
            let mut acc = sums[l - 1];
            let mut i = side;
            while i < 2 * w {
                acc ^= nxt[i];
                i += 2;
            }
            nxt[2 * path + side] = acc;
            path = 2 * path + a_l;
            std::mem::swap(&mut cur, &mut nxt);
        }
        out.push((alpha, outputs(crh, tree, &cur, width, Some(alpha))));
    }
    Ok(out)
}
