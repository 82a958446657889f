//! Products on shares in `Z_{2^l}` from additive COTs (Gilboa's OLE from OT, as in
//! CrypTFlow2/SiRNN `MultMode`): the OT-based fallback for BumbleBee's Π_mul / Π_square (which
//! use bOLEe in `nectar-linear`), so that this layer is self-sufficient.
//!
//! Cross term `x_s · y_r` (sender's `x_s`, receiver's `y_r`): for every bit `j` of `y_r` one
//! additive COT with correlation `x_s·2^j`, receiver choice `bit_j(y_r)`; summing over `j` the
//! sender holds `−Σ r_j` and the receiver `Σ (r_j + bit_j·x_s 2^j)`: shares of `x_s·y_r`.
//! - [`Mpc::mul`]: `x·y = x_0 y_0 + x_1 y_1 + x_0 y_1 + x_1 y_0`, two cross terms, both with
//!   the lead as receiver ([`crate::ctx`]): it chooses with the bits of its `y_r` and of its
//!   `x_r`, the other party's correlations are `x_s·2^j` and `y_s·2^j`. `2l` COTs + `2l(1 + l)`
//!   bits per element, 2 flows (1 flight in a chain of led steps); exact ring product.
//!   (For `l = 64` that is ≈ 8.3 kbit per product — bOLEe is far cheaper in bulk.) Until
//!   issue 48 the two cross terms ran one per direction ([`nectar_ot::acot::both`]): the same
//!   bits and COTs, but 2 flights of each party.
//! - [`Mpc::square`]: `x² = x_0² + x_1² + 2 x_0 x_1`, one cross term: half the cost, 2 flows.
//! - [`Mpc::mul_public`]: shared × public, local.
//!
//! Fixed-point products follow with [`Mpc::trunc`].

use crate::ctx::LedAcot;
use crate::words::{broadcast, mask, same_len};
use crate::{Mpc, Result};
use nectar_net::Channel;

fn bits_of(y: &[u64], l: u32) -> Vec<bool> {
    y.iter()
        .flat_map(|&v| (0..l).map(move |j| (v >> j) & 1 == 1))
        .collect()
}

fn corr_of(x: &[u64], l: u32, m: u64) -> Vec<u64> {
    x.iter()
        .flat_map(|&v| (0..l).map(move |j| (v << j) & m))
        .collect()
}

impl Mpc {
    /// Exact ring product `x·y mod 2^l` elementwise.
    pub fn mul(&mut self, ch: &mut dyn Channel, x: &[u64], y: &[u64], l: u32) -> Result<Vec<u64>> {
        let m = mask(l)?;
        same_len("mul operands", x.len(), y.len())?;
        if x.is_empty() {
            return Ok(Vec::new());
        }
        let lu = l as usize;
        // Per element: l choices on the bits of y, then l on the bits of x (receiver); the
        // sender's correlations in the same order: x_s·2^j against y_r, y_s·2^j against x_r.
        let deltas = || {
            x.iter()
                .zip(y)
                .flat_map(|(&a, &b)| (0..l).map(move |j| (a << j) & m).chain((0..l).map(move |j| (b << j) & m)))
                .collect()
        };
        let choices = || x.iter().zip(y).flat_map(|(&a, &b)| (0..l).map(move |j| (b >> j) & 1 == 1).chain((0..l).map(move |j| (a >> j) & 1 == 1))).collect();
        let cross: Vec<u64> = match self.led_acot(ch, deltas, choices, l)? {
            LedAcot::Sent(s) => s.chunks(2 * lu).map(|c| c.iter().fold(0u64, |a, b| a.wrapping_sub(*b))).collect(),
            LedAcot::Received(r) => r.chunks(2 * lu).map(|c| c.iter().fold(0u64, |a, b| a.wrapping_add(*b))).collect(),
        };
        Ok(x.iter().zip(y).zip(cross).map(|((&a, &b), c)| a.wrapping_mul(b).wrapping_add(c) & m).collect())
    }

    /// Exact ring square `x² mod 2^l` elementwise (the lead chooses, the other party sends).
    pub fn square(&mut self, ch: &mut dyn Channel, x: &[u64], l: u32) -> Result<Vec<u64>> {
        let m = mask(l)?;
        if x.is_empty() {
            return Ok(Vec::new());
        }
        let lu = l as usize;
        let deltas = || corr_of(&x.iter().map(|v| v.wrapping_mul(2)).collect::<Vec<_>>(), l, m);
        let cross: Vec<u64> = match self.led_acot(ch, deltas, || bits_of(x, l), l)? {
            LedAcot::Sent(s) => s.chunks(lu).map(|c| c.iter().fold(0u64, |a, b| a.wrapping_sub(*b))).collect(),
            LedAcot::Received(r) => r.chunks(lu).map(|c| c.iter().fold(0u64, |a, b| a.wrapping_add(*b))).collect(),
        };
        Ok(x.iter()
            .zip(cross)
            .map(|(&v, c)| v.wrapping_mul(v).wrapping_add(c) & m)
            .collect())
    }

    /// `x · c mod 2^l` for public `c` (one value broadcast or one per element). Local, exact.
    pub fn mul_public(&self, x: &[u64], c: &[u64], l: u32) -> Result<Vec<u64>> {
        let m = mask(l)?;
        let c = broadcast(c, x.len(), "public factor")?;
        Ok(x.iter()
            .zip(c)
            .map(|(&a, b)| a.wrapping_mul(b) & m)
            .collect())
    }
}
