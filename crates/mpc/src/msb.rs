//! Most significant bit of an arithmetic share vector (CrypTFlow2; BumbleBee §V-A2; REFERENCE.md
//! §2.4): `MSB(x) = MSB(x_0) ⊕ MSB(x_1) ⊕ 1{x_0' + x_1' ≥ 2^(l−1)}` with `x_i' = x_i mod 2^(l−1)`;
//! the carry is a millionaire on `l − 1` bits, P0 input `x_0'`, P1 input `2^(l−1) − 1 − x_1'`.
//!
//! The batched form takes `B` P0 shares per P1 share (the thresholds of [`crate::less_than`]
//! only change P0's share), so the `B` carries share one `(16 choose 1)-OT_{2B}` per digit.
//! Cost: one millionaire on `l − 1` bits (see [`crate::millionaire`]); exact.

use crate::words::{mask, msb_of};
use crate::{Mpc, MpcError, Result};
use nectar_net::Channel;

impl Mpc {
    /// XOR shares of `MSB(x)` in `Z_{2^l}` (`2 <= l <= 64`); exact.
    pub fn msb(&mut self, ch: &mut dyn Channel, x: &[u64], l: u32) -> Result<Vec<bool>> {
        self.msb_batched(ch, x, 1, l)
    }

    /// Batched MSB: P0 passes `n·batch` shares (element-major), P1 `n` shares; the result has
    /// `n·batch` bits, bit `i·batch + b` = `MSB(x0[i·batch + b] + x1[i])`.
    pub fn msb_batched(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        batch: usize,
        l: u32,
    ) -> Result<Vec<bool>> {
        if !(2..=64).contains(&l) {
            return Err(MpcError::BadArgument(format!(
                "MSB needs 2 <= l <= 64, got {l}"
            )));
        }
        let low = mask(l - 1)?;
        let input: Vec<u64> = if self.is_server() {
            x.iter().map(|v| v & low).collect()
        } else {
            x.iter().map(|v| low - (v & low)).collect()
        };
        let carry = self.millionaire(ch, &input, batch, l - 1)?;
        let server = self.is_server();
        Ok(carry
            .iter()
            .enumerate()
            .map(|(t, c)| {
                let own = if server { x[t] } else { x[t / batch] };
                c ^ msb_of(own, l)
            })
            .collect())
    }
}
