//! `exp = nimbus` (Nimbus §4, `docs/notes/nimbus.md` §3): a clipped exponential whose base is a
//! quartic fitted to the softmax inputs' distribution (`nectar fit --model DIR --func exp`,
//! [`crate::fit_dist::fit_exp_chain`]), from two squarings, then `n` squarings.
//!
//! Deviation from Nimbus's code (a uniform least-squares cubic on `[−3.9, 0]` by Horner, two
//! shared products, clip at −3.9): a cubic on so short a range drops `e^z ≤ 0.02` per clipped
//! key and errs by up to 0.03 at `z = 0`, which a 0.9999 cosine does not survive on MiniLM; the
//! distribution weighting is Nimbus's, the form (a quartic base from two squarings, one
//! squaring after it, clip at −8) is the cheapest we found that keeps the model's output — one
//! square fewer than `taylor4`'s five.

use super::{keep_bit, ExpParams, ExpProtocol};
use crate::backend::{enc, Backend, DynBackend};
use crate::gelu::abs_form::{chain_eval, chain_f64, chain_tol, chain_u_max, P7_G};
use crate::poly::{LessMode, BUMBLEBEE_LESS};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// A fitted clipped exponential (AGREEMENT):
///
/// ```text
/// w = z/(2^n R) + 1/2,  p1 = w²,  u = a1·p1 + b1·w + c1,  B = k2·u² + k1·p1 + kw·w + k0
/// e^z ≈ B^(2^n)  for z ≥ t_exp,  0 below
/// ```
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ExpChain {
    /// The clip `T`: `e^z := 0` below.
    pub t_exp: f64,
    /// Squarings after the base.
    pub n: u32,
    /// `R`, the power of two with `2^n R ≥ |T|` of `w`'s normalisation.
    pub scale: f64,
    /// `[a1, b1, c1, k2, k1, kw, k0]`.
    pub c: [f64; 7],
    pub less: LessMode,
}

/// Scale of the base before the squarings: `y ≤ 1` keeps `y²` below `2^43` at scale 42.
const BASE_SCALE: u32 = 21;

impl ExpChain {
    /// `B(w)` in f64.
    pub fn base_f64(&self, w: f64) -> f64 {
        chain_f64(&self.c, w)
    }

    /// The approximation in f64 (exact clip).
    pub fn eval_f64(&self, z: f64) -> f64 {
        if z < self.t_exp {
            return 0.0;
        }
        let w = z / ((self.n as f64).exp2() * self.scale) + 0.5;
        self.base_f64(w).powi(1 << self.n)
    }

    /// `w`'s shift `P7_G − f − n − log2 R` in format `fp`; an error when the ring or the scale
    /// leaves no room.
    pub fn shift(&self, fp: FixedPoint) -> Result<u32, NnError> {
        let rho = self.scale.log2();
        let need = fp.f() as f64 + self.n as f64 + rho;
        if rho.fract() != 0.0 || rho < 0.0 || need > P7_G as f64 || fp.l() < crate::secure::NARROW_MAX_L || fp.f() > BASE_SCALE {
            return Err(NnError::FormatTooNarrow {
                op: "exp=nimbus",
                l: fp.l(),
                f: fp.f(),
                why: format!("needs l >= 45 and f + n + log2 R <= {P7_G} (n = {}, R = {})", self.n, self.scale),
            });
        }
        Ok(P7_G - need as u32)
    }

    /// Largest `|u|` over the fitted range.
    fn u_max(&self) -> f64 {
        chain_u_max(&self.c, self.t_exp / ((self.n as f64).exp2() * self.scale) + 0.5, 0.5)
    }

    /// Twin-vs-protocol bound in LSB of format `fp`'s output: the base's at scale h = 21
    /// ([`chain_tol`]); each squaring at scale h doubles it and adds 2 (`y ≤ 1.01`), the last
    /// one lands at f: `2·1.01·e/2^(h − f) + 2`; + 1 for the coefficients' encoding.
    pub fn tolerance(&self, fp: FixedPoint) -> Result<i64, NnError> {
        self.shift(fp)?;
        let out = if self.n == 0 { fp.f() } else { BASE_SCALE };
        let mut e = chain_tol(&self.c, self.u_max(), out);
        for i in 0..self.n {
            let last = i + 1 == self.n;
            let down = if last { (BASE_SCALE as f64 - fp.f() as f64).exp2() } else { 1.0 };
            e = 2.0 * 1.01 * e / down + 2.0;
        }
        Ok(e.ceil() as i64 + 1)
    }
}

/// The [`ExpChain`] exponential of `x ≤ 0` in the current format (the coarse softmax's
/// `(45, 18)`, or the full ring): `keep = 1{x ≥ T}` (in `Z_{2^clip_l}` when given), `w` local
/// and exact, two squares and two truncations for the base, `n` squarings, one mux. Garbage
/// below the clip (the chain wraps for `z ≪ T`) is multiplied by `keep = 0`.
pub fn exp_chain<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ExpChain, clip_l: Option<u32>) -> Result<B::Val, NnError> {
    let fp = b.format();
    let shift = p.shift(fp)?;
    let keep = keep_bit(b, x, &ExpParams { t_exp: p.t_exp, n: p.n, less: p.less, clip_l })?;
    let at = |s: u32| FixedPoint::new(fp.l(), s);
    let run = |b: &mut B| -> Result<B::Val, NnError> {
        b.set_format(at(P7_G)?);
        let w = b.mul_const(x, &[1u64 << shift], 0)?;
        let w = b.add_const(&w, &[enc(b, 0.5)?])?;
        let out = if p.n == 0 { fp.f() } else { BASE_SCALE };
        let mut y = chain_eval(b, &w, &p.c, out)?;
        if p.n > 0 {
            b.set_format(at(BASE_SCALE)?);
            for _ in 1..p.n {
                y = b.square(&y)?;
            }
            b.set_format(at(2 * BASE_SCALE - fp.f())?);
            y = b.square(&y)?;
        }
        Ok(y)
    };
    let y = run(b);
    b.set_format(fp);
    b.mux(&keep, &y?)
}

/// `exp = nimbus`: fitted to all-MiniLM-L6-v2's softmax inputs on the six calibration texts
/// (209 592 inputs) with `nectar fit --func exp --model ~/.cache/nectar/models/minilm --clip -8
/// --squarings 2` (floor 0.02): over those inputs rms 4.5e−5, max 3.4e−4; worst case on
/// [−16, 0] 3.4e−4, the clip's `e^−8` (AGREEMENT). With one squaring (3 squares in all) the
/// fit's rms is 7.0e−4 and `nectar accuracy --suite nimbus` on `sentences50.txt` falls to a
/// 0.99905 cosine on its 110-token sentence (0.99995 with two).
#[allow(clippy::excessive_precision)] // the fit's digits, verbatim
pub const NIMBUS_EXP: ExpChain = ExpChain {
    t_exp: -8.0,
    n: 2,
    scale: 2.0,
    c: [
        1.7427385256638932,
        1.1495175008985352,
        -0.41044338186524093,
        0.11768722581825107,
        0.7411532726059484,
        0.8486448445890349,
        0.34801601014126976,
    ],
    less: BUMBLEBEE_LESS,
};

/// The protocol `exp = nimbus`.
pub struct Nimbus;

impl Protocol for Nimbus {
    fn name(&self) -> &'static str {
        "nimbus"
    }
    fn source(&self) -> &'static str {
        "Nimbus §4: clipped exp, distribution-fitted quartic base by two squares, then squarings"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "exp": NIMBUS_EXP })
    }
}

impl ExpProtocol for Nimbus {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, clip_l: Option<u32>) -> Result<Vec<u64>, NnError> {
        exp_chain(b, x, &NIMBUS_EXP, clip_l)
    }
    fn fits(&self, fp: FixedPoint) -> Result<(), String> {
        NIMBUS_EXP.shift(fp).map(|_| ()).map_err(|e| e.to_string())
    }
    fn tolerance(&self, fp: FixedPoint) -> Result<i64, NnError> {
        NIMBUS_EXP.tolerance(fp)
    }
    /// The fit's worst case on [−16, 0] (the clip's `e^−8` = 3.35e−4), with the twin's rounding.
    fn approx_error(&self) -> Result<f64, NnError> {
        Ok(3.6e-4)
    }
    fn stated_accuracy(&self) -> &'static str {
        "0.08 % task accuracy loss (Nimbus abstract); our fit: rms 4.5e-5 over MiniLM's softmax inputs"
    }
    fn pivots(&self) -> Vec<f64> {
        vec![NIMBUS_EXP.t_exp]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_within_its_stated_error() {
        let worst = crate::fit::grid(-16.0, 0.0, 16001)
            .into_iter()
            .map(|z| (NIMBUS_EXP.eval_f64(z) - z.exp()).abs())
            .fold(0.0, f64::max);
        assert!(worst <= 3.5e-4, "{worst}");
        assert!(NIMBUS_EXP.u_max() <= 0.6 + 1e-9);
    }
}
