//! Truncation of signed fixed-point shares, `x >> s` (arithmetic shift) in `Z_{2^l}`
//! (REFERENCE.md §2.6). With shares `x_0 + x_1 = x_u + w·2^l` (`x_u` the unsigned value, `w` the
//! wrap bit) and `c` the carry of the low `s` bits of the shares,
//! `(x_0 >> s) + (x_1 >> s) − w·2^(l−s) = (x_u >> s) − c`. The variants differ in how `w` (and
//! `c`) are obtained; signed inputs are made non-negative by a public offset added by P0.
//!
//! | method | wrap `w` | carry `c` | error | input bound | cost per element |
//! |---|---|---|---|---|---|
//! | [`Mpc::trunc`] (heuristic known MSB, SPU/OC; East §4.3) | `msb(x_0) ∨ msb(x_1)` by one ACOT | ignored | `{0, −1}` | `|x| < 2^(l−2)` | 1 COT + `1 + s` bits, 2 flows (1 flight in a chain, [`crate::ctx`]) |
//! | [`Mpc::trunc_known_msb`] (Cheetah; East §4.3) | OR / AND of share MSBs | ignored | `{0, −1}` | MSB public | 1 COT + `1 + s` bits |
//! | [`Mpc::trunc_approx`] (Cheetah) | millionaire on `l` bits | ignored | `{0, −1}` | none | millionaire(`l`) + B2A(`s`) |
//! | [`Mpc::trunc_faithful`] (SiRNN) | millionaire on `l` bits | millionaire on `s` bits | exact floor | none | 2 millionaires + B2A(`l`) |
//!
//! All are deterministic: within their input bound the error is always in the stated set
//! (failure probability 0). Outside the bound the heuristic/known-MSB versions are off by a
//! multiple of `2^(l−s)` (a catastrophic error), which is why the bound is part of each
//! operator's documented input domain (East §4.3: pick the offset `M ≥ |x|`).

use crate::ctx::LedAcot;
use crate::words::{mask, msb_of, pow2};
use crate::{Mpc, MpcError, Result};
use nectar_net::Channel;

impl Mpc {
    /// Arithmetic shares in `Z_{2^w}` of the wrap bit `1{x_0 + x_1 ≥ 2^l}` when the MSB of
    /// `x` is public: `msb_value = false` gives `msb(x_0) ∨ msb(x_1)`, `true` gives
    /// `msb(x_0) ∧ msb(x_1)`. One additive COT led by the lead ([`Mpc::led_acot`]: the lead
    /// chooses with its MSB, the other party sends), 2 flows, `1 + w` bits.
    pub fn wrap_known_msb(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        l: u32,
        msb_value: bool,
        w: u32,
    ) -> Result<Vec<u64>> {
        mask(l)?;
        let mw = mask(w)?;
        let m: Vec<bool> = x.iter().map(|&v| msb_of(v, l)).collect();
        // OR: w = m_s + m_r(1 − m_s); AND: w = m_r·m_s (s the sender, r the receiver).
        let deltas = || m.iter().map(|&b| if msb_value { b as u64 } else { 1 - b as u64 }).collect();
        Ok(match self.led_acot(ch, deltas, || m.clone(), w)? {
            LedAcot::Sent(r) => r
                .iter()
                .zip(&m)
                .map(|(&ri, &b)| if msb_value { ri.wrapping_neg() } else { (b as u64).wrapping_sub(ri) } & mw)
                .collect(),
            LedAcot::Received(y) => y,
        })
    }

    /// Shares of `(x_i >> s) − 2^(l−s)·w_i` from shares of `w` in `Z_{2^s}` or wider.
    fn shift_minus_wrap(&self, x: &[u64], w: &[u64], l: u32, s: u32) -> Result<Vec<u64>> {
        let ml = mask(l)?;
        Ok(x.iter()
            .zip(w)
            .map(|(&v, &wi)| ((v & ml) >> s).wrapping_sub(wi.wrapping_mul(pow2(l - s))) & ml)
            .collect())
    }

    fn check_shift(l: u32, s: u32, min_top: u32) -> Result<()> {
        mask(l)?;
        if s + min_top > l {
            return Err(MpcError::BadArgument(format!(
                "shift {s} too large for Z_2^{l}"
            )));
        }
        Ok(())
    }

    /// Truncation when the MSB of every element is the public `msb_value` (Cheetah; East §4.3).
    /// Result `floor(x / 2^s) − c`, `c ∈ {0, 1}`.
    pub fn trunc_known_msb(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        l: u32,
        s: u32,
        msb_value: bool,
    ) -> Result<Vec<u64>> {
        Self::check_shift(l, s, 1)?;
        if s == 0 {
            return Ok(x.iter().map(|v| v & mask(l).unwrap_or(u64::MAX)).collect());
        }
        let w = self.wrap_known_msb(ch, x, l, msb_value, s)?;
        let mut y = self.shift_minus_wrap(x, &w, l, s)?;
        if msb_value && self.is_server() {
            // floor(x/2^s) = (x_u >> s) − 2^(l−s) for negative x.
            let ml = mask(l)?;
            y.iter_mut()
                .for_each(|v| *v = v.wrapping_sub(pow2(l - s)) & ml);
        }
        Ok(y)
    }

    /// Truncation with a public bound `|x| < 2^bound_bits`: P0 adds `M = 2^bound_bits`, so the
    /// MSB is known to be 0 (East §4.3 with `M` a power of two), and subtracts `M / 2^s` after.
    /// Needs `bound_bits <= l − 2`. Error `{0, −1}`.
    pub fn trunc_bounded(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        l: u32,
        s: u32,
        bound_bits: u32,
    ) -> Result<Vec<u64>> {
        if bound_bits + 2 > l || s > bound_bits {
            return Err(MpcError::BadArgument(format!(
                "bound 2^{bound_bits} with shift {s} does not fit Z_2^{l}"
            )));
        }
        let off = pow2(bound_bits);
        let xs = self.add_public(x, &[off], l)?;
        let y = self.trunc_known_msb(ch, &xs, l, s, false)?;
        self.add_public(&y, &[pow2(bound_bits - s).wrapping_neg()], l)
    }

    /// BumbleBee's default truncation (SPU `TruncAprox` with `kHeuristicBound = 2`): correct
    /// for `|x| < 2^(l−2)`, error `{0, −1}` (the [`nectar-nn` `Backend::trunc`] model).
    pub fn trunc(&mut self, ch: &mut dyn Channel, x: &[u64], l: u32, s: u32) -> Result<Vec<u64>> {
        if l < 3 {
            return Err(MpcError::BadArgument(format!(
                "heuristic truncation needs l >= 3, got {l}"
            )));
        }
        self.trunc_bounded(ch, x, l, s, l - 2)
    }

    /// XOR shares of the wrap `1{x_0 + x_1 ≥ 2^bits}` of `bits`-bit shares (millionaire:
    /// P0 input `x_0`, P1 input `2^bits − 1 − x_1`).
    pub fn wrap(&mut self, ch: &mut dyn Channel, x: &[u64], bits: u32) -> Result<Vec<bool>> {
        let m = mask(bits)?;
        let input: Vec<u64> = if self.is_server() {
            x.iter().map(|v| v & m).collect()
        } else {
            x.iter().map(|v| m - (v & m)).collect()
        };
        self.millionaire(ch, &input, 1, bits)
    }

    /// Cheetah approximate truncation for any signed input: error `{0, −1}`.
    pub fn trunc_approx(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        l: u32,
        s: u32,
    ) -> Result<Vec<u64>> {
        Self::check_shift(l, s, 1)?;
        if s == 0 {
            return Ok(x.to_vec());
        }
        let xs = self.add_public(x, &[pow2(l - 1)], l)?;
        let wb = self.wrap(ch, &xs, l)?;
        let w = self.b2a(ch, &wb, s)?;
        let y = self.shift_minus_wrap(&xs, &w, l, s)?;
        self.add_public(&y, &[pow2(l - 1 - s).wrapping_neg()], l)
    }

    /// Faithful (exact floor) truncation for any signed input (SiRNN).
    pub fn trunc_faithful(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        l: u32,
        s: u32,
    ) -> Result<Vec<u64>> {
        Self::check_shift(l, s, 1)?;
        if s == 0 {
            return Ok(x.to_vec());
        }
        let ml = mask(l)?;
        let xs = self.add_public(x, &[pow2(l - 1)], l)?;
        let wb = self.wrap(ch, &xs, l)?;
        let low: Vec<u64> = xs.iter().map(|v| v & mask(s).unwrap_or(u64::MAX)).collect();
        let cb = self.wrap(ch, &low, s)?;
        let mut both = cb;
        both.extend_from_slice(&wb);
        let a = self.b2a(ch, &both, l)?;
        let n = x.len();
        let off = pow2(l - 1 - s).wrapping_neg();
        let p0 = self.is_server();
        Ok((0..n)
            .map(|i| {
                let v = ((xs[i] & ml) >> s)
                    .wrapping_add(a[i])
                    .wrapping_sub(a[n + i].wrapping_mul(pow2(l - s)));
                (if p0 { v.wrapping_add(off) } else { v }) & ml
            })
            .collect())
    }
}
