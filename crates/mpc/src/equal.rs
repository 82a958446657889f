//! Equality with public constants, `1{x = c_j}` (CrypTFlow2's equality from the millionaire's
//! digit OTs, REFERENCE.md §2.4; used by `i_equal`, the one-hot encoding of token ids).
//!
//! `x = c ⟺ x_0 − c = −x_1 (mod 2^l)`: P0 offers per 4-bit digit and per constant
//! `e_j ⊕ 1{digit_j(x_0 − c) = v}` for each value `v` of P1's digit of `−x_1`, in one
//! `(16 choose 1)-OT_B` per digit for up to `B = 128` constants; the `q = ⌈l/4⌉` digit equalities
//! are ANDed in a tree (`⌈log2 q⌉` rounds, `q − 1` ANDs per element and constant).
//! For token ids, first [`Mpc::reduce`] the shares to the smallest ring holding the ids
//! (e.g. 16 bits for a 30522-word vocabulary): equality of in-range values is preserved and
//! the cost drops by `l/16`.
//!
//! Cost per element: `q` OTs `(4 COTs + 4 bits + 16·B bits)` + `B(q − 1)` ANDs; exact.

use crate::words::mask;
use crate::{Mpc, Result};
use nectar_net::Channel;

/// Most constants per OT message (AGREEMENT).
pub const MAX_EQ_BATCH: usize = 128;

impl Mpc {
    /// For each public constant `c_j`, XOR shares of `1{x = c_j}` on every element; `out[j][i]`.
    pub fn equal_const(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        consts: &[u64],
        l: u32,
    ) -> Result<Vec<Vec<bool>>> {
        let m = mask(l)?;
        let mut out = Vec::with_capacity(consts.len());
        for group in consts.chunks(MAX_EQ_BATCH) {
            let b = group.len();
            let input: Vec<u64> = if self.is_server() {
                x.iter()
                    .flat_map(|&v| group.iter().map(move |&c| v.wrapping_sub(c) & m))
                    .collect()
            } else {
                x.iter().map(|v| v.wrapping_neg() & m).collect()
            };
            let mut d = self.digit_ot(ch, &input, b, l, 1, 1, |a, v| (a == v) as u128)?;
            let mut level: Vec<Vec<bool>> = d.pop().unwrap_or_default();
            while level.len() > 1 {
                let pairs = level.len() / 2;
                let mut a = Vec::new();
                let mut c = Vec::new();
                for t in 0..pairs {
                    a.extend_from_slice(&level[2 * t]);
                    c.extend_from_slice(&level[2 * t + 1]);
                }
                let z = self.and(ch, &a, &c)?;
                let sz = level[0].len();
                let mut next: Vec<Vec<bool>> = z
                    .chunks(sz.max(1))
                    .take(pairs)
                    .map(|s| s.to_vec())
                    .collect();
                if sz == 0 {
                    next = vec![Vec::new(); pairs];
                }
                if level.len() % 2 == 1 {
                    if let Some(last) = level.pop() {
                        next.push(last);
                    }
                }
                level = next;
            }
            let bits = level.pop().unwrap_or_default();
            for j in 0..b {
                out.push((0..x.len()).map(|i| bits[i * b + j]).collect());
            }
        }
        Ok(out)
    }
}
