//! Ring changes for BumbleBee's mixed bit-width evaluation (§V-C, App. E Alg. 5; REFERENCE.md
//! §2.7).
//!
//! - [`Mpc::reduce`]: `Z_{2^l} → Z_{2^l'}`, each share mod `2^l'`; local, exact for values
//!   that fit `l'` bits signed.
//! - [`Mpc::extend`]: Alg. 5 with the positive heuristic: P0 adds `M = 2^(m−2)`, so the value
//!   `x + M ∈ [0, 2^(m−1))` has public MSB 0 and its wrap is `msb(x_0') ∨ msb(x_1')` (one ACOT
//!   with `n − m`-bit messages: MSB0-to-wrap), then `y_i = x_i' − 2^m·w_i` in `Z_{2^n}` and P0
//!   subtracts `M`. **Correct iff `|x| < 2^(m−2)`** (`x ∈ [−2^(m−2), 2^(m−2))`), exact then.
//!   Cost: 1 COT + `1 + (n − m)` bits, 2 flows (the paper's "O(2(ℓ − ℓ')) bits, two rounds").
//!   (App. E's "M = 16" is the radix of the `(M choose 1)`-OT of the comparisons; the
//!   heuristic offset is `2^(m−2)` as in SPU's `ring_ext_prot`.)
//! - [`Mpc::trunc_extend`]: the same wrap, used to truncate by `s` while extending (the narrow
//!   OLT's products, issue 17): one truncation's cost.
//! - [`Mpc::extend_exact`]: SiRNN signed extension for any input (wrap by a millionaire on `m`
//!   bits + B2A to `n − m` bits).
//! - [`MixedWidth`] converts activations between the big ring `(l, f)` and the small ring
//!   `(l', f')` (BumbleBee: `l' = 32, f' = 12`).

use crate::words::{mask, pow2};
use crate::{Mpc, MpcError, Result};
use nectar_net::Channel;

/// A pair of fixed-point formats for mixed bit-width (AGREEMENT): activations run in
/// `Z_{2^l_small}` with `f_small` fractional bits, the rest in `Z_{2^l}` with `f`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MixedWidth {
    pub l: u32,
    pub f: u32,
    pub l_small: u32,
    pub f_small: u32,
}

impl MixedWidth {
    /// BumbleBee §V-C / §VII: `(64, 18)` outside, `(32, 12)` inside activations.
    pub const BUMBLEBEE: MixedWidth = MixedWidth {
        l: 64,
        f: 18,
        l_small: 32,
        f_small: 12,
    };

    /// Checked constructor: `f_small <= f`, `l_small < l <= 64`, `f_small + 2 < l_small`.
    pub fn new(l: u32, f: u32, l_small: u32, f_small: u32) -> Result<Self> {
        if !(l <= 64 && l_small < l && f_small <= f && f_small + 2 < l_small && f + 2 < l) {
            return Err(MpcError::BadArgument(format!(
                "bad mixed width ({l},{f}) / ({l_small},{f_small})"
            )));
        }
        Ok(MixedWidth {
            l,
            f,
            l_small,
            f_small,
        })
    }

    /// Values representable in the small format without failure of [`Mpc::extend`]:
    /// `|x| < 2^(l_small − 2 − f_small)` (= 2^18 for (32, 12)).
    pub fn small_bound(&self) -> f64 {
        ((self.l_small - 2 - self.f_small) as f64).exp2()
    }
}

impl Mpc {
    /// Reduce shares to `Z_{2^to}`. Local.
    pub fn reduce(&self, x: &[u64], to: u32) -> Result<Vec<u64>> {
        let m = mask(to)?;
        Ok(x.iter().map(|v| v & m).collect())
    }

    fn check_ext(from: u32, to: u32) -> Result<()> {
        if !(from >= 3 && from < to && to <= 64) {
            return Err(MpcError::BadArgument(format!(
                "extension Z_2^{from} -> Z_2^{to} not supported"
            )));
        }
        Ok(())
    }

    /// Heuristic signed extension (Alg. 5): exact for `|x| < 2^(from−2)` (module doc).
    pub fn extend(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        from: u32,
        to: u32,
    ) -> Result<Vec<u64>> {
        Self::check_ext(from, to)?;
        self.trunc_extend(ch, x, from, 0, to)
    }

    /// Truncation by `s` and signed extension `Z_{2^from} → Z_{2^to}` in one step (nectar,
    /// issue 17: the narrow OLT's products come back to `Z_2^64` with their one truncation):
    /// `floor(x / 2^s) − c`, `c ∈ {0, 1}`, in `Z_{2^to}`, for `|x| < 2^(from−2)`.
    /// With P0's offset `M = 2^(from−2)` the value `x' = x + M` has public MSB 0, so its wrap
    /// `w = msb(x_0') ∨ msb(x_1')` (one ACOT), and `x_0' + x_1' = x' + 2^from·w` gives
    /// `(x_0' >> s) + (x_1' >> s) − 2^(from−s)·w = (x' >> s) − c` over the integers (`c` the
    /// carry of the shares' low `s` bits, as in [`Mpc::trunc`]); so `w` is needed only mod
    /// `2^(to − from + s)`. P0 subtracts `M / 2^s`. `s = 0` is [`Mpc::extend`] (exact);
    /// `to = from` would be [`Mpc::trunc`]. Cost: 1 COT + `1 + (to − from + s)` bits, 2 flows:
    /// one truncation's cost, `to − from` bits more per element.
    pub fn trunc_extend(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        from: u32,
        s: u32,
        to: u32,
    ) -> Result<Vec<u64>> {
        if !(from >= 3 && from <= to && to <= 64 && s + 2 <= from && (s > 0 || from < to)) {
            return Err(MpcError::BadArgument(format!(
                "truncation by {s} with extension Z_2^{from} -> Z_2^{to} not supported"
            )));
        }
        let mf = mask(from)?;
        let off = pow2(from - 2);
        let xs = self.add_public(x, &[off], from)?;
        let w = self.wrap_known_msb(ch, &xs, from, false, to - from + s)?;
        let mt = mask(to)?;
        let y: Vec<u64> = xs
            .iter()
            .zip(&w)
            .map(|(&v, &wi)| ((v & mf) >> s).wrapping_sub(wi.wrapping_mul(pow2(from - s))) & mt)
            .collect();
        self.add_public(&y, &[pow2(from - 2 - s).wrapping_neg()], to)
    }

    /// Exact signed extension for any input (SiRNN).
    pub fn extend_exact(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        from: u32,
        to: u32,
    ) -> Result<Vec<u64>> {
        Self::check_ext(from, to)?;
        let off = pow2(from - 1);
        let xs = self.add_public(x, &[off], from)?;
        let wb = self.wrap(ch, &xs, from)?;
        let w = self.b2a(ch, &wb, to - from)?;
        let mt = mask(to)?;
        let y: Vec<u64> = xs
            .iter()
            .zip(&w)
            .map(|(&v, &wi)| v.wrapping_sub(wi.wrapping_mul(pow2(from))) & mt)
            .collect();
        self.add_public(&y, &[off.wrapping_neg()], to)
    }

    /// Big → small format: truncate by `f − f_small` in `Z_{2^l}` ([`Mpc::trunc`], error
    /// `{0, −1}` LSB of the small format), then reduce to `Z_{2^l_small}`. Values must satisfy
    /// [`MixedWidth::small_bound`].
    pub fn to_small(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        mw: MixedWidth,
    ) -> Result<Vec<u64>> {
        let t = if mw.f > mw.f_small {
            self.trunc(ch, x, mw.l, mw.f - mw.f_small)?
        } else {
            x.to_vec()
        };
        self.reduce(&t, mw.l_small)
    }

    /// Small → big format: [`Mpc::extend`] to `Z_{2^l}`, then scale by `2^(f − f_small)`
    /// (local, exact). Exact within [`MixedWidth::small_bound`].
    pub fn to_large(
        &mut self,
        ch: &mut dyn Channel,
        x: &[u64],
        mw: MixedWidth,
    ) -> Result<Vec<u64>> {
        let e = self.extend(ch, x, mw.l_small, mw.l)?;
        let ml = mask(mw.l)?;
        Ok(e.iter()
            .map(|v| v.wrapping_mul(pow2(mw.f - mw.f_small)) & ml)
            .collect())
    }
}
