//! Boolean → arithmetic conversion of XOR-shared bits into `Z_{2^l}` (CrypTFlow2/SCI `B2A`,
//! REFERENCE.md §2.5): `b = b_0 ⊕ b_1 = b_0 + b_1 − 2·b_0 b_1`; the cross product comes from one
//! additive COT with P0 as sender (correlation `b_0`) and P1 choosing with `b_1`.
//! P0 outputs `b_0 + 2x`, P1 outputs `b_1 − 2(x + b_0 b_1)`.
//!
//! Cost per bit: 1 COT + `1 + l` bits (the ACOT correction and message), 2 flows. The output
//! ring may be narrower than the working ring (wrap bits only need `Z_{2^{shift}}`).

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
        if self.is_server() {
            let d: Vec<u64> = b.iter().map(|&x| x as u64).collect();
            let x = self.ot().send_acot(ch, &d, l)?;
            Ok(b.iter()
                .zip(x)
                .map(|(&bi, xi)| (bi as u64).wrapping_add(xi.wrapping_mul(2)) & m)
                .collect())
        } else {
            let y = self.ot().recv_acot(ch, b, l)?;
            Ok(b.iter()
                .zip(y)
                .map(|(&bi, yi)| (bi as u64).wrapping_sub(yi.wrapping_mul(2)) & m)
                .collect())
        }
    }
}
