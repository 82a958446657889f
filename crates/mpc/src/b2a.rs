//! Boolean → arithmetic conversion of XOR-shared bits into `Z_{2^l}` (CrypTFlow2/SCI `B2A`,
//! REFERENCE.md §2.5): `b = b_0 ⊕ b_1 = b_0 + b_1 − 2·b_0 b_1`; the cross product comes from one
//! additive COT led by the lead ([`crate::ctx`]): the other party sends with correlation its bit
//! `b_s`, the lead chooses with its bit `b_r`. The sender outputs `b_s + 2x`, the receiver
//! `b_r − 2(x + b_s b_r)`.
//!
//! Cost per bit: 1 COT + `1 + l` bits (the ACOT correction and message), 2 flows. The output
//! ring may be narrower than the working ring (wrap bits only need `Z_{2^{shift}}`).

use crate::ctx::LedAcot;
use crate::words::mask;
use crate::{Mpc, Result};
use nectar_net::Channel;

impl Mpc {
    /// Arithmetic shares in `Z_{2^l}` of the 0/1 value of each XOR-shared bit.
    pub fn b2a(&mut self, ch: &mut dyn Channel, b: &[bool], l: u32) -> Result<Vec<u64>> {
        let m = mask(l)?;
        if b.is_empty() {
            return Ok(Vec::new());
        }
        let deltas = || b.iter().map(|&x| x as u64).collect();
        Ok(match self.led_acot(ch, deltas, || b.to_vec(), l)? {
            LedAcot::Sent(x) => b.iter().zip(x).map(|(&bi, xi)| (bi as u64).wrapping_add(xi.wrapping_mul(2)) & m).collect(),
            LedAcot::Received(y) => b.iter().zip(y).map(|(&bi, yi)| (bi as u64).wrapping_sub(yi.wrapping_mul(2)) & m).collect(),
        })
    }
}
