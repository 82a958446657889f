//! The local linear code of Ferret's primal LPN (Yang et al. CCS'20 §4, emp-ot `LpnF2<IO, 10>`):
//! output row `i` is the XOR of `d = 10` entries of the length-`k` seed vector, at indices drawn
//! from fixed-key AES in counter mode (3 blocks = 12 words per row, the first 10 used, each
//! reduced to `[0, k)` by a 32×32-bit multiply-shift).
//!
//! The code is public and identical in both parties (AGREEMENT: [`LPN_KEY`], `d`). Cost: `3n`
//! AES blocks plus `10n` random reads of the seed vector (the dominant cost: the seed of
//! 452 000 blocks does not fit in L2).

use crate::crhash::FixedAes;
use rayon::prelude::*;

/// Row weight `d` (SECURITY, AGREEMENT).
pub const D: usize = 10;
/// Public key of the code's index generator (AGREEMENT).
pub const LPN_KEY: [u8; 16] = *b"nectar-ot lpn-10";

/// The code for one `(n, k)` shape.
#[derive(Clone)]
pub struct LocalCode {
    k: usize,
    aes: FixedAes,
}

impl LocalCode {
    pub fn new(k: usize) -> Self {
        LocalCode { k, aes: FixedAes::new(LPN_KEY) }
    }

    /// `out[i] ^= XOR_{j<d} seed[idx(i, j)]` for every row `i` (`seed.len()` must be `k`).
    pub fn encode(&self, out: &mut [u128], seed: &[u128]) {
        assert_eq!(seed.len(), self.k, "LPN seed length");
        let k = self.k as u64;
        // Indices of a whole chunk are computed first so that the 10·ROWS independent random
        // reads are in flight together (memory-level parallelism is what bounds this loop).
        // Tasks of TASK rows run in parallel; each chunk's AES counters depend only on its global
        // index, so the output does not depend on the thread count.
        const ROWS: usize = 32;
        const TASK: usize = ROWS * 2048;
        out.par_chunks_mut(TASK).enumerate().for_each(|(ti, task)| {
            let mut ctr = [0u128; 3 * ROWS];
            let mut idx = [0usize; D * ROWS];
            for (c, chunk) in task.chunks_mut(ROWS).enumerate() {
                let base = ((ti * (TASK / ROWS) + c) * ROWS * 3) as u128;
                for (j, x) in ctr.iter_mut().enumerate() {
                    *x = base + j as u128;
                }
                self.aes.encrypt(&mut ctr[..3 * chunk.len()]);
                for r in 0..chunk.len() {
                    let words = &ctr[3 * r..3 * r + 3];
                    for j in 0..D {
                        let w = (words[j / 4] >> (32 * (j % 4))) as u32 as u64;
                        idx[r * D + j] = ((w * k) >> 32) as usize;
                    }
                }
                for (r, o) in chunk.iter_mut().enumerate() {
                    let mut acc = 0u128;
                    for &i in &idx[r * D..r * D + D] {
                        acc ^= seed[i];
                    }
                    *o ^= acc;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear() {
        let code = LocalCode::new(100);
        let a: Vec<u128> = (0..100u128).map(|i| i * 31 + 7).collect();
        let b: Vec<u128> = (0..100u128).map(|i| (i * i) ^ 0x55).collect();
        let ab: Vec<u128> = a.iter().zip(&b).map(|(x, y)| x ^ y).collect();
        let (mut oa, mut ob, mut oab) = (vec![0u128; 1001], vec![0u128; 1001], vec![0u128; 1001]);
        code.encode(&mut oa, &a);
        code.encode(&mut ob, &b);
        code.encode(&mut oab, &ab);
        for i in 0..1001 {
            assert_eq!(oa[i] ^ ob[i], oab[i]);
        }
        assert!(oa.iter().filter(|&&x| x == 0).count() < 10);
    }
}
