//! `rsqrt = pwl` (nectar, issues 48/49): no Newton step. The minimax linear guess of
//! [`super::newton1`] on buckets twice as fine (sixteenth-octaves) **is** the result: one
//! comparison call, one b2a and **two** product layers instead of `newton1`'s three.
//!
//! - **Buckets.** One batched comparison against `2^(j/16)` gives the bucket `e`; with
//!   `a = ⌈e/32⌉`, `u = x·4^−a ∈ [1/4, 1)` falls in one of 32 sub-buckets `s`, on which
//!   `A_s + B_s·u` is the minimax linear approximation of `u^−1/2` in relative error ([`GUESS`]:
//!   within [`PWL_REL_ERROR`] = 8.8e−5; the equioscillation on `[lo, hi)`:
//!   `A = −B·c` with `c = lo + √(lo·hi) + hi`, `B = 2/(lo^1.5 + m^1.5 − c·(√lo + √m))`,
//!   `m = c/3`).
//! - **Two layers.** `1/√x ≈ 2^−a·(A_s + B_s·u)`: layer 1 normalises, `u = x·4^−a` (an exact
//!   power of two, kept at [`EXTRA_BITS`] more fractional bits); layer 2 is `u·(B_s·2^−a)`,
//!   to which the offset `A_s·2^−a` is added. One layer, `x·(B_s·2^−3a)`, does not fit a 64-bit
//!   ring over a LayerNorm's domain `[4^−9, 4^9)`: the slope spans `2^54`, and the product
//!   must keep its absolute error below an LSB at the top of the domain while not wrapping at
//!   the bottom (`newton1` can round that slope coarsely because its Newton step corrects it).
//! - **Error.** The rsqrt of a LayerNorm scales each normalised row by `1 ± 8.8e−5`
//!   (`newton1`: 1.9e−7 for one more layer). **Cost.** 32 thresholds per power of four of the
//!   domain (576 on a LayerNorm's against `newton1`'s 288), compared in `Z_2^(f + 2·hi + 2)`.

use super::{check_newton_domain, RsqrtParams, RsqrtProtocol, RsqrtRange};
use crate::backend::{Backend, DynBackend};
use crate::reciprocal::{bucket_split, pow2_factors_in};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// Buckets per octave of the comparison (AGREEMENT): 32 per power of four.
pub const BUCKETS_PER_OCTAVE: i32 = 16;

/// Fractional bits `u` carries beyond the format (AGREEMENT).
pub const EXTRA_BITS: u32 = 12;

/// The minimax linear approximation `A_s + B_s·u` of `u^−1/2` (relative error) on
/// `u ∈ [2^(s/16 − 2), 2^((s+1)/16 − 2))`, `s = 0..32` (AGREEMENT; checked by the unit test).
pub const GUESS: [(f64, f64); 32] = [
    (2.967713034047, -3.871555892678),
    (2.904121063412, -3.627972373853),
    (2.841891737575, -3.399714200261),
    (2.780995857869, -3.185817159677),
    (2.721404851292, -2.985377704430),
    (2.663090757104, -2.797549134619),
    (2.606026213706, -2.621538021468),
    (2.550184445801, -2.456600855712),
    (2.495539251832, -2.302040906852),
    (2.442064991686, -2.157205280010),
    (2.389736574666, -2.021482157963),
    (2.338529447717, -1.894298216693),
    (2.288419583906, -1.775116203539),
    (2.239383471144, -1.663432667729),
    (2.191398101163, -1.558775833690),
    (2.144440958710, -1.460703608167),
    (2.098490010990, -1.368801712728),
    (2.053523697325, -1.282681933755),
    (2.009520919037, -1.201980482550),
    (1.966461029551, -1.126356458614),
    (1.924323824703, -1.055490409603),
    (1.883089533264, -0.989082981896),
    (1.842738807662, -0.926853656059),
    (1.803252714902, -0.868539561871),
    (1.764612727687, -0.813894367902),
    (1.726800715719, -0.762687240953),
    (1.689798937196, -0.714701870972),
    (1.653590030485, -0.669735557307),
    (1.618157005980, -0.627598352458),
    (1.583483238123, -0.588112259699),
    (1.549552457612, -0.551110481176),
    (1.516348743758, -0.516436713319),
];

/// Relative error of [`GUESS`] on its sub-buckets (checked by the unit test).
pub const PWL_REL_ERROR: f64 = 8.8e-5;

/// `(a, s)` of bucket `e`: `u = x·4^−a ∈ [1/4, 1)` in sub-bucket `s`.
fn split(e: i32) -> (i32, usize) {
    bucket_split(e, 2 * BUCKETS_PER_OCTAVE)
}

/// The scales `(S1, S2)` of `4^−a` and of the slope `B_s·2^−a` for the domain `[4^lo, 4^hi)`
/// at `fp`, and the format bounds: layer 1's raw product `u·2^(f + S1)`, layer 2's
/// `|u·B_s·2^−a|·2^(f + E + S2) ≤ 4·2^−(lo+1)·2^(f + E + S2)`, both below `2^(l − 2)`.
fn scales(p: &RsqrtParams, fp: FixedPoint) -> Result<(u32, u32), NnError> {
    let (f, l, e) = (fp.f() as i32, fp.l() as i32, EXTRA_BITS as i32);
    // 4^−a exact for a ≤ hi; the slope's rounding 2^−(S2+1) below a quarter LSB
    let (s1, s2) = ((2 * p.hi).max(e), f + 2);
    let top = (f + s1).max(2 - (p.lo + 1) + f + e + s2);
    if p.hi <= p.lo || 2 * p.hi > f || top >= l - 2 || f + e >= l {
        return Err(NnError::FormatTooNarrow {
            op: "rsqrt pwl",
            l: fp.l(),
            f: fp.f(),
            why: format!("domain [4^{}, 4^{}) needs 2·hi <= f and products below 2^{} (the largest is 2^{top})", p.lo, p.hi, l - 2),
        });
    }
    Ok((s1 as u32, s2 as u32))
}

/// `1/√x` for `x ∈ [4^lo, 4^hi)` in two product layers (module docs).
pub fn rsqrt_pwl<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &RsqrtParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    let (s1, s2) = scales(p, fp)?;
    let (f, e) = (fp.f(), EXTRA_BITS);
    let per = 2 * BUCKETS_PER_OCTAVE;
    let norm = |e: i32| (-2.0 * split(e).0 as f64).exp2();
    let slope = |e: i32| {
        let (a, sb) = split(e);
        GUESS[sb].1 * (-(a as f64)).exp2()
    };
    let offset = |e: i32| {
        let (a, sb) = split(e);
        GUESS[sb].0 * (-(a as f64)).exp2()
    };
    let fams: [(&dyn Fn(i32) -> f64, u32); 3] = [(&norm, s1), (&slope, s2), (&offset, f)];
    let fs = pow2_factors_in(b, x, 1.0 / BUCKETS_PER_OCTAVE as f64, per * p.lo, per * p.hi, &fams, super::newton1::cmp_l(p, fp))?;
    let [fu, fb, a0] = <[B::Val; 3]>::try_from(fs).map_err(|_| NnError::BadArgument("expected three factors".into()))?;
    let out = (|| {
        // layer 1: x (at f) times 4^−a (at S1), truncated by S1 − E: u at f + E
        b.set_format(FixedPoint::new(fp.l(), s1 - e)?);
        let u = b.mul(x, &fu)?;
        // layer 2: u (at f + E) times the slope (at S2), truncated by E + S2: at f
        b.set_format(FixedPoint::new(fp.l(), e + s2)?);
        let bu = b.mul(&u, &fb)?;
        b.add(&a0, &bu)
    })();
    b.set_format(fp);
    out
}

/// Twin-vs-protocol bound in LSB of `f` on the domain `[4^lo, …)`: layer 2's truncation (2),
/// `u`'s (2 LSB at `f + E`) times the slope `≤ 4·2^−(lo+1)`, one spare.
pub fn tolerance_lsb(p: &RsqrtParams) -> i64 {
    3 + ((3 - (p.lo + 1) - EXTRA_BITS as i32) as f64).exp2().ceil() as i64
}

/// The protocol `rsqrt = pwl`.
pub struct Pwl;

impl Protocol for Pwl {
    fn name(&self) -> &'static str {
        "pwl"
    }
    fn source(&self) -> &'static str {
        "nectar: a sixteenth-octave minimax piecewise-linear 1/sqrt(x), no Newton step, two product layers"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "layernorm": super::RSQRT_LAYERNORM, "buckets_per_octave": BUCKETS_PER_OCTAVE, "rel_error": PWL_REL_ERROR, "extra_bits": EXTRA_BITS, "iters": 0 })
    }
}

impl RsqrtProtocol for Pwl {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, r: &RsqrtRange) -> Result<Vec<u64>, NnError> {
        self.check(r, b.format())?;
        rsqrt_pwl(b, x, &r.newton)
    }
    fn check(&self, r: &RsqrtRange, fp: FixedPoint) -> Result<(), NnError> {
        check_newton_domain(r)?;
        scales(&r.newton, fp).map(|_| ())
    }
    fn tolerance(&self, r: &RsqrtRange, _fp: FixedPoint) -> Result<i64, NnError> {
        Ok(tolerance_lsb(&r.newton))
    }
    /// [`PWL_REL_ERROR`] times `1/√x ≤ 1/√lo`, plus the rounding of `x` itself (a quarter LSB
    /// over `lo^1.5`), of the offset and slope, `u`'s and the product's truncations.
    fn approx_error(&self, r: &RsqrtRange) -> Result<f64, NnError> {
        let ulp = 18f64.exp2().recip();
        Ok(PWL_REL_ERROR / r.lo.sqrt() + 0.25 * ulp / r.lo.powf(1.5) + tolerance_lsb(&r.newton) as f64 * ulp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each sub-bucket's approximation is within [`PWL_REL_ERROR`]; the buckets tile `[1/4, 1)`
    /// as [`split`] maps them.
    #[test]
    fn the_guess_reaches_the_stated_error() {
        let mut e0 = 0f64;
        for (s, &(a, b)) in GUESS.iter().enumerate() {
            let (lo, hi) = (((s as f64) / 16.0 - 2.0).exp2(), ((s as f64 + 1.0) / 16.0 - 2.0).exp2());
            for i in 0..=4000 {
                let u = lo + (hi - lo) * i as f64 / 4000.0;
                e0 = e0.max(((a + b * u) * u.sqrt() - 1.0).abs());
            }
        }
        assert!(e0 < PWL_REL_ERROR, "guess {e0}");
        assert!(e0 > 0.99 * PWL_REL_ERROR, "stated error {PWL_REL_ERROR} far above the fit's {e0}");
        for e in -40..40 {
            let (a, s) = split(e);
            let lo = (e as f64 - 1.0) / 16.0 - 2.0 * a as f64;
            assert!(s < 32 && (lo - (s as f64 / 16.0 - 2.0)).abs() < 1e-12, "bucket {e}: a = {a}, s = {s}");
        }
    }

    /// The LayerNorm's domain fits the 64-bit formats the suites use.
    #[test]
    fn layernorm_domain_fits() {
        scales(&crate::rsqrt::RSQRT_LAYERNORM, FixedPoint::BUMBLEBEE).unwrap();
        assert_eq!(tolerance_lsb(&crate::rsqrt::RSQRT_LAYERNORM), 4);
    }
}
