//! Comparison with public thresholds `1{x < t_j}` (BumbleBee §V-A; REFERENCE.md §2.4):
//! `1{x < t} = MSB(x − t)` (P0 subtracts `t` locally), for `|x| + |t| < 2^(l−1)`.
//!
//! - **Batched thresholds** (§V-A2): for `B` thresholds on the same share only P0's share of
//!   `x − t_j` depends on `j`, so one `(16 choose 1)-OT_{2B}` per digit serves all of them
//!   ([`Mpc::msb_batched`]); `B <= 64` per OT message; more thresholds run as equal groups of at most 64,
//!   all groups in one millionaire call (the flights of one group).
//! - **Approximate less-than** (§V-A1): with `k = ignore_low_bits`, both parties shift their
//!   shares right by `k` (logically, as `l`-bit words) and P0 subtracts `t_j >> k` (arithmetic
//!   shift); the MSB then runs on `l − k` bits. The two local shifts lose the carry `c ∈ {0,1}`
//!   of the low parts, so the result is `MSB_{l−k}((x >> k) − c − (t >> k))`: it can differ from
//!   the exact `MSB_{l−k}((x >> k) − (t >> k))` only when `x >> k = t >> k`, i.e. for `x` within
//!   `2^k` of `t`. BumbleBee uses `k = f − 4` (`l = 64, f = 18`: a 50-bit MSB).
//!
//! Cost: one millionaire on `l − k − 1` bits with `2B`-bit OT messages.

use crate::words::{mask, to_signed};
use crate::{Mpc, MpcError, Result};
use nectar_net::Channel;

/// Most thresholds served by one OT message (AGREEMENT; `2B <= 128` bits).
pub const MAX_BATCH: usize = 64;

impl Mpc {
    /// For each public threshold `t_j` (a ring element of `Z_{2^l}`), XOR shares of
    /// `1{x < t_j}` on every element; `out[j][i]`. See the module doc for `ignore_low_bits`.
    pub fn less_than_const(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        thresholds: &[u64],
        l: u32,
        ignore_low_bits: u32,
    ) -> Result<Vec<Vec<bool>>> {
        mask(l)?;
        if ignore_low_bits + 2 > l {
            return Err(MpcError::BadArgument(format!(
                "ignoring {ignore_low_bits} of {l} bits leaves no MSB"
            )));
        }
        let lk = l - ignore_low_bits;
        let mk = mask(lk)?;
        let ml = mask(l)?;
        let xs: Vec<u64> = x
            .iter()
            .map(|v| ((v & ml) >> ignore_low_bits) & mk)
            .collect();
        if thresholds.is_empty() {
            return Ok(vec![]);
        }
        // More than MAX_BATCH thresholds: G equal groups of b, all in one millionaire call
        // (element (g, i) is x_i against group g; the last group padded by repeating its
        // last threshold), so any number of thresholds costs the flights of one group.
        let groups = thresholds.len().div_ceil(MAX_BATCH);
        let b = thresholds.len().div_ceil(groups);
        let ts: Vec<u64> = (0..groups * b)
            .map(|j| thresholds[j.min(thresholds.len() - 1)])
            .map(|t| (to_signed(t & ml, l) >> ignore_low_bits) as u64 & mk)
            .collect();
        let z: Vec<u64> = if self.is_server() {
            (0..groups)
                .flat_map(|g| {
                    let ts = &ts[g * b..(g + 1) * b];
                    xs.iter().flat_map(move |&v| ts.iter().map(move |&t| v.wrapping_sub(t) & mk))
                })
                .collect()
        } else {
            (0..groups).flat_map(|_| xs.iter().copied()).collect()
        };
        let bits = self.msb_batched(ch, &z, b, lk)?;
        let n = x.len();
        let out = (0..thresholds.len())
            .map(|j| {
                let (g, k) = (j / b, j % b);
                (0..n).map(|i| bits[(g * n + i) * b + k]).collect()
            })
            .collect();
        Ok(out)
    }

    /// `1{x < y}` for two shared vectors: `MSB(x − y)`; exact for `|x − y| < 2^(l−1)`.
    pub fn less_than(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        y: &[u64],
        l: u32,
    ) -> Result<Vec<bool>> {
        crate::words::same_len("less_than operands", x.len(), y.len())?;
        let d: Vec<u64> = x.iter().zip(y).map(|(a, b)| a.wrapping_sub(*b)).collect();
        self.msb(ch, &d, l)
    }
}
