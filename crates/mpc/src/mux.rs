//! Multiplexer `F_mux`: shares of `b ? x : 0` from a boolean-shared `b` and an arithmetic-shared
//! `x` (CrypTFlow2 / Cheetah multiplexer, REFERENCE.md §2.5; East §2.2 uses the same 2-OT form).
//!
//! With `b = b_0 ⊕ b_1`: `b·x_i = b_i x_i + b_j·x_i(1 − 2b_i)`. Each party `P_i` is the sender
//! of one additive COT with correlation `x_i(1 − 2b_i)` (the peer chooses with `b_j`) and the
//! receiver of the peer's; its output is `b_i x_i − (sent) + (received)`.
//!
//! Cost per element: 2 COTs (one per direction) + `2·(1 + l)` bits, 4 flows.

use crate::ctx::LedAcot;
use crate::words::{mask, same_len};
use crate::{Mpc, Result};
use nectar_net::Channel;

impl Mpc {
    /// `b ? x : 0` elementwise; exact.
    pub fn mux(&mut self, ch: &mut dyn Channel, b: &[bool], x: &[u64], l: u32) -> Result<Vec<u64>> {
        let m = mask(l)?;
        same_len("mux operands", x.len(), b.len())?;
        if x.is_empty() {
            return Ok(Vec::new());
        }
        let deltas: Vec<u64> = x
            .iter()
            .zip(b)
            .map(|(&xi, &bi)| if bi { xi.wrapping_neg() } else { xi } & m)
            .collect();
        let mut sent = vec![0u64; x.len()];
        let mut got = vec![0u64; x.len()];
        for _ in 0..2 {
            match self.led_acot(ch, || deltas.clone(), || b.to_vec(), l)? {
                LedAcot::Sent(v) => sent = v,
                LedAcot::Received(v) => got = v,
            }
        }
        Ok((0..x.len())
            .map(|i| {
                let own = if b[i] { x[i] } else { 0 };
                own.wrapping_sub(sent[i]).wrapping_add(got[i]) & m
            })
            .collect())
    }

    /// `b ? x : y` = `y + mux(b, x − y)`; exact.
    pub fn select(
        &mut self,
        ch: &mut dyn Channel,
        b: &[bool],
        x: &[u64],
        y: &[u64],
        l: u32,
    ) -> Result<Vec<u64>> {
        same_len("select operands", x.len(), y.len())?;
        let d: Vec<u64> = x.iter().zip(y).map(|(a, c)| a.wrapping_sub(*c)).collect();
        let t = self.mux(ch, b, &d, l)?;
        let m = mask(l)?;
        Ok(t.iter()
            .zip(y)
            .map(|(a, c)| a.wrapping_add(*c) & m)
            .collect())
    }
}
