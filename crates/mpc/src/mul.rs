//! Products on shares in `Z_{2^l}` from additive COTs (Gilboa's OLE from OT, as in
//! CrypTFlow2/SiRNN `MultMode`): the OT-based fallback for BumbleBee's Π_mul / Π_square (which
//! use bOLEe in `nectar-linear`), so that this layer is self-sufficient.
//!
//! Cross term `x_s · y_r` (sender's `x_s`, receiver's `y_r`): for every bit `j` of `y_r` one
//! additive COT with correlation `x_s·2^j`, receiver choice `bit_j(y_r)`; summing over `j` the
//! sender holds `−Σ r_j` and the receiver `Σ (r_j + bit_j·x_s 2^j)`: shares of `x_s·y_r`.
//!
//! Bit `j`'s term `bit_j·x_s·2^j` matters only mod `2^l`, so its COT runs over `Z_{2^{l−j}}`
//! with correlation `x_s` and both outputs are multiplied by `2^j` after ([graded
//! widths](nectar_ot::acot::send_graded), CrypTFlow2/SiRNN): `l(l + 1)/2` payload bits per cross
//! term instead of `l²`.
//! - [`Mpc::mul`]: `x·y = x_0 y_0 + x_1 y_1 + x_0 y_1 + x_1 y_0`, two cross terms, both with
//!   the lead as receiver ([`crate::ctx`]): it chooses with the bits of its `y_r` and of its
//!   `x_r`, the other party's correlations are `x_s` and `y_s`. `2l` COTs + `2l + l(l + 1)`
//!   bits per element, 2 flows (1 flight in a chain of led steps); exact ring product.
//!   (For `l = 64` that is ≈ 4.3 kbit per product, 8.3 kbit before the graded widths — bOLEe is
//!   far cheaper in bulk.) Until issue 48 the two cross terms ran one per direction
//!   ([`nectar_ot::acot::both`]): the same bits and COTs, but 2 flights of each party.
//! - [`Mpc::square`]: `x² = x_0² + x_1² + 2 x_0 x_1`, one cross term on the bits `0..l−1` of
//!   the receiver's share (bit `l − 1` of `2·x_0 x_1` vanishes mod `2^l`): `l − 1` COTs and
//!   `l − 1 + l(l + 1)/2 − 1` bits, 2 flows.
//! - [`Mpc::ole`]: the client's private vector times the server's, elementwise (one cross
//!   term): `l` COTs and `l + l(l + 1)/2` bits per element.
//! - [`Mpc::mul_public`]: shared × public, local.
//!
//! Fixed-point products follow with [`Mpc::trunc`].

use crate::ctx::LedAcot;
use crate::words::{broadcast, mask, same_len};
use crate::{Mpc, Result};
use nectar_net::Channel;

/// The widths `l, l − 1, …, l − k + 1` of bits `0..k` of one operand (graded COTs).
fn graded(l: u32, k: u32) -> Vec<u32> {
    (0..k).map(|j| l - j).collect()
}

/// `Σ_j 2^j·v_j` over each element's `k` outputs (the graded COTs' shares), negated for the
/// sender.
fn recombine(outs: &[u64], k: usize, negate: bool) -> Vec<u64> {
    outs.chunks(k)
        .map(|c| {
            let s = c.iter().enumerate().fold(0u64, |a, (j, &v)| a.wrapping_add(v << j));
            if negate {
                s.wrapping_neg()
            } else {
                s
            }
        })
        .collect()
}

/// [`recombine`] of each element's two groups of `l` outputs (the two cross terms), summed.
fn two_terms(outs: &[u64], l: usize, negate: bool) -> Vec<u64> {
    recombine(outs, l, negate).chunks(2).map(|p| p[0].wrapping_add(p[1])).collect()
}

impl Mpc {
    /// Exact ring product `x·y mod 2^l` elementwise.
    pub fn mul(&mut self, ch: &mut dyn Channel, x: &[u64], y: &[u64], l: u32) -> Result<Vec<u64>> {
        let m = mask(l)?;
        same_len("mul operands", x.len(), y.len())?;
        if x.is_empty() {
            return Ok(Vec::new());
        }
        // Per element: l choices on the bits of y, then l on the bits of x (receiver); the
        // sender's correlations in the same order: x_s against y_r's bits, y_s against x_r's.
        let mut widths = graded(l, l);
        widths.extend(graded(l, l));
        let deltas = || {
            x.iter()
                .zip(y)
                .flat_map(|(&a, &b)| std::iter::repeat(a).take(l as usize).chain(std::iter::repeat(b).take(l as usize)))
                .collect()
        };
        let choices = || x.iter().zip(y).flat_map(|(&a, &b)| (0..l).map(move |j| (b >> j) & 1 == 1).chain((0..l).map(move |j| (a >> j) & 1 == 1))).collect();
        let cross = match self.led_acot_graded(ch, deltas, choices, &widths)? {
            LedAcot::Sent(s) => two_terms(&s, l as usize, true),
            LedAcot::Received(r) => two_terms(&r, l as usize, false),
        };
        Ok(x.iter().zip(y).zip(cross).map(|((&a, &b), c)| a.wrapping_mul(b).wrapping_add(c) & m).collect())
    }

    /// Exact ring square `x² mod 2^l` elementwise (the lead chooses, the other party sends).
    pub fn square(&mut self, ch: &mut dyn Channel, x: &[u64], l: u32) -> Result<Vec<u64>> {
        let m = mask(l)?;
        if x.is_empty() {
            return Ok(Vec::new());
        }
        // 2·x_s·x_r = Σ_j bit_j(x_r)·x_s·2^(j+1): bit l − 1 vanishes mod 2^l (kept, as a zero
        // correlation of one bit, only when l = 1).
        let k = (l - 1).max(1);
        let widths = graded(l, k);
        let deltas = || x.iter().flat_map(|&v| std::iter::repeat(v.wrapping_mul(2)).take(k as usize)).collect();
        let choices = || x.iter().flat_map(|&v| (0..k).map(move |j| (v >> j) & 1 == 1)).collect();
        let cross = match self.led_acot_graded(ch, deltas, choices, &widths)? {
            LedAcot::Sent(s) => recombine(&s, k as usize, true),
            LedAcot::Received(r) => recombine(&r, k as usize, false),
        };
        Ok(x.iter()
            .zip(cross)
            .map(|(&v, c)| v.wrapping_mul(v).wrapping_add(c) & m)
            .collect())
    }

    /// Shares of `a_C · a_S mod 2^l` elementwise, where each party inputs its own private
    /// vector (`mine`: the client's `a_C`, the server's `a_S`; same length): one cross term
    /// of [`Mpc::mul`] (Gilboa's OLE from COT), with graded widths. The lead chooses with the
    /// bits of its input, the other party's COT correlations are its input (the product is
    /// symmetric, so either party may choose). `l` COTs and `l + l(l + 1)/2` bits per
    /// element, one flight in a chain of led steps; exact. `norm = outer` forms a decoding
    /// row's `r_C ⊗ γ` so (`nectar-model`'s engine), where one OLT's ciphertexts carry
    /// mostly empty slots.
    pub fn ole(&mut self, ch: &mut dyn Channel, mine: &[u64], l: u32) -> Result<Vec<u64>> {
        let m = mask(l)?;
        if mine.is_empty() {
            return Ok(Vec::new());
        }
        let k = l as usize;
        let widths = graded(l, l);
        let deltas = || mine.iter().flat_map(|&v| std::iter::repeat(v).take(k)).collect();
        let choices = || mine.iter().flat_map(|&v| (0..l).map(move |j| (v >> j) & 1 == 1)).collect();
        let out = match self.led_acot_graded(ch, deltas, choices, &widths)? {
            LedAcot::Sent(s) => recombine(&s, k, true),
            LedAcot::Received(r) => recombine(&r, k, false),
        };
        Ok(out.into_iter().map(|v| v & m).collect())
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
