//! The millionaires' protocol from small lookup tables (ROTL §VI, Fig. 13; REFERENCE.md §4.5).
//!
//! P0 holds `x`, P1 holds `y` (`bits`-bit unsigned); output XOR shares of `1{x > y}` — the
//! same functionality as [`crate::millionaire`], so MSB, less-than and every comparison built
//! on it run on either protocol ([`crate::Comparison`], AGREEMENT).
//!
//! 1. Split `x`, `y` into `m = ⌈bits / l'⌉` blocks of `l'` bits (LSB first; the top block
//!    zero-extended).
//! 2. Per block, `e_j = x_j − y_j mod 2^(l'+1)` is already additively shared (P0's share
//!    `x_j`, P1's `−y_j`); the modulus is one bit wider than the block so that the sign of the
//!    difference of two unsigned blocks is visible. ONE ROTL lookup ([`crate::rotl_lut`],
//!    `n = 2^(l'+1)`, output ring `Z_2`) with two tables gives XOR shares of
//!    `gt_j = 1{x_j > y_j}` (table: 1 on `[1, 2^l')`, 0 elsewhere) and `eq_j = 1{x_j = y_j}`
//!    (table: 1 at 0 only). (ROTL's Fig. 13 computes `lt` with the roles swapped; the tables
//!    are the same up to the side of the wrap. It writes `2^m` for the table halves, reusing
//!    `m`.)
//! 3. Combine: `gt = gt_{m−1} ⊕ eq_{m−1} ∧ gt_{m−2} ⊕ … ⊕ eq_{m−1} ∧ … ∧ eq_1 ∧ gt_0`,
//!    evaluated as the same binary tree as the OT millionaire (`⌈log2 m⌉` AND rounds instead of
//!    `m − 1`; the terms are disjoint events, so XOR = OR).
//!
//! Bit outputs need no MUX (the lookup's sign is invisible mod 2), so the online phase is the
//! opening of `2(l' + 1)` bits per block plus the ANDs of the tree. Preprocessing per block:
//! `l' + 1` random COTs and `128(l' + 1) + 2^(l'+1)` bits. The block size trades the
//! preprocessing's `2^(l'+1)` bits and `O(4^l')` hashes against the number of blocks;
//! `nectar bench mpc --op msb --bits L --block B` sweeps it
//! (`docs/results/rotl.md`). Exact.

use crate::words::mask;
use crate::rotate::MAX_LOG_N;
use crate::{Mpc, MpcError, Result};
use nectar_net::Channel;

/// Default block size `l'` (AGREEMENT), chosen by the sweep in `docs/results/rotl.md`.
pub const DEFAULT_BLOCK: u32 = 4;

/// Checks a block size: the table has `2^(l'+1)` entries, at most `2^MAX_LOG_N`.
pub fn check_block(block: u32) -> Result<()> {
    if !(1..MAX_LOG_N).contains(&block) {
        return Err(MpcError::BadArgument(format!(
            "ROTL comparison block of {block} bits: must be in 1..={} (tables of 2^(block+1) entries)",
            MAX_LOG_N - 1
        )));
    }
    Ok(())
}

/// The `gt` and `eq` tables of one block of `block` bits.
pub fn block_tables(block: u32) -> (Vec<u64>, Vec<u64>) {
    let n = 1usize << (block + 1);
    let half = 1usize << block;
    let gt = (0..n).map(|e| (e >= 1 && e < half) as u64).collect();
    let eq = (0..n).map(|e| (e == 0) as u64).collect();
    (gt, eq)
}

impl Mpc {
    /// XOR shares of `1{x_{i,b} > y_i}` by ROTL lookups on blocks of `block` bits; same
    /// layout as [`Mpc::millionaire`] (P0: `n·batch` inputs element-major, P1: `n`).
    pub fn millionaire_lut(&mut self, ch: &mut dyn Channel, input: &[u64], batch: usize, bits: u32, block: u32) -> Result<Vec<bool>> {
        check_block(block)?;
        let m = mask(bits)?;
        if batch == 0 {
            return Err(MpcError::BadArgument("batch of 0 comparisons".into()));
        }
        let n = if self.is_server() {
            if !input.len().is_multiple_of(batch) {
                return Err(MpcError::Length { what: "batched sender input", expected: input.len().next_multiple_of(batch), got: input.len() });
            }
            input.len() / batch
        } else {
            input.len()
        };
        let total = n * batch;
        let blocks = bits.div_ceil(block) as usize;
        let lb = block + 1;
        let bm = mask(block)?;
        let em = mask(lb)?;
        let server = self.is_server();
        // e for block j of comparison t at j·total + t
        let mut e = Vec::with_capacity(blocks * total);
        for j in 0..blocks {
            let sh = block as usize * j;
            for t in 0..total {
                let v = if server { input[t] & m } else { input[t / batch] & m };
                let d = (v >> sh) & bm;
                e.push(if server { d } else { d.wrapping_neg() & em });
            }
        }
        let (gt_t, eq_t) = block_tables(block);
        let out = self.rotl_lut(ch, &e, lb, &[&gt_t, &eq_t], 1)?;
        let split = |v: &[u64]| -> Vec<Vec<bool>> { v.chunks(total).map(|c| c.iter().map(|&b| b & 1 == 1).collect()).collect() };
        let (gt, eq) = (split(&out[0]), split(&out[1]));
        if total == 0 {
            return Ok(Vec::new());
        }
        self.comparison_tree(ch, gt, eq)
    }
}
