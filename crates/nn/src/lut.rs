//! Lookup-table operators in the style of CipherGPT, as ROTL evaluates them (ROTL §II-E,
//! §VII-E; REFERENCE.md §3.9), on the [`Backend::lut`] primitive (ROTL lookups in the secure
//! backend). Every table has `2^8` entries ("all such functions within a LLM involve lookup
//! tables of sizes no larger than 256").
//!
//! **Activations** (GELU, SiLU; [`lut_activation`]): `y = 0` left of the table's range,
//! `y = x` right of it, and in between a piecewise-linear curve `y = a_j·x + d_j` whose segment
//! `j` comes from one 2^8-entry lookup (two tables, slope and intercept, one rotation) on the
//! input shifted right by `α` (CipherGPT's shift, ROTL Fig. 5), segments of width
//! `w = 2α / 256`. CipherGPT's α, slopes and intercepts are not published (REFERENCE.md §8
//! item 4); ours are derived here:
//! - `α` is a power of two so the index is a plain bit field of `x + α` (bits
//!   `[f + log2 w, f + log2 w + 8)`), read by each party from its own share: the local shift
//!   can lose the carry of the low bits, so the secure index may be `j − 1`. Each table entry is
//!   therefore the least-squares line of `f` over **two** segments, `[−α + j·w, −α + (j+2)·w)`,
//!   and is accurate wherever the secure index can point. The twin uses the exact `j`.
//! - the middle region is `[−α + w, α)` (so `j ≥ 1` and `j − 1` never wraps), selected by two
//!   comparisons with public thresholds (`less_than_const`: the suite's comparison protocol)
//!   and one MUX pair: `y = MUX(b_hi ⊕ b_lo, a·x + d) + MUX(¬b_hi, x)`.
//! - GELU: `α = 4` (w = 1/32); SiLU: `α = 8` (w = 1/16). Max abs error against f64 over the
//!   whole line, either index ([`ActLut::max_error`], tested): GELU and `gelu_new` 2.6e−4
//!   (Seg4: 1.5e−2, East's OPPE: 2.7e−4), SiLU 2.9e−3 (its tail `x·σ(x)` near −7.94).
//!
//! **Exponential** ([`exp_lut`], softmax's `e^x` for `x ≤ 0`, CipherGPT §II-E step 2): the
//! input clipped to `[−16, 0]` at `L = 12` fractional bits is a 16-bit `u = −x·2^L`, looked up
//! as **two 2^8-entry LUTs**, `e^{−u} = e^{−lo/2^L}·e^{−hi·2^8/2^L}`, and multiplied. The low
//! byte is exact (index shift 0: shares mod 256 are exact); its lookup also returns `lo` itself
//! (an identity table), so `u − lo` is an exact multiple of 2^8 and the high byte is an exact
//! local division ([`LutIndex::exact`]). Entries below −16 are zeroed by one comparison and one
//! MUX (step 2b). From `f > L` the input is first truncated to `L` bits after adding one unit
//! of 2^−L (so a truncation one below the floor never goes negative): the exponent is off by
//! at most one unit of 2^−12, a relative error ≤ 2.4e−4.
//!
//! **Reciprocal** ([`reciprocal_lut`], softmax's `1/Σ` on `[1, hi]`): one 2^8-entry LUT on
//! `s − 1` gives the initial value for each window of two segments (width `w ≥ (hi − 1)/255`, a
//! power of two), the value minimising the relative error over the window; then Newton
//! steps `y ← y(2 − s·y)` until the f64 error bound is below East's δ = 2^−14
//! ([`crate::reciprocal::DETERMINE_DELTA`]). ROTL cites a 2^8-entry reciprocal LUT without its
//! index map or precision; a table alone gives at best `w/(1 + w)` relative error at the
//! bottom of the range, hence the Newton steps (a documented deviation).
//!
//! **Softmax** (`crate::softmax::lut::softmax_lut`): max → subtract → [`exp_lut`] → row sum → [`reciprocal_lut`]
//! → product (CipherGPT's five steps on `crate::softmax::softmax_with`).

use crate::backend::{enc, int, Backend, LutIndex};
use crate::fit::Func;
use crate::reciprocal::{newton_steps, DETERMINE_DELTA};
use crate::NnError;

/// Entries of every table (`2^8`, ROTL §II-E).
pub const LUT_BITS: u32 = 8;
const ENTRIES: usize = 1 << LUT_BITS;

/// A piecewise-linear activation served by one 2^8-entry lookup (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ActLut {
    /// The function (its f64 reference is [`Func::eval`]).
    pub func: Func,
    /// `α = 2^alpha_log2`: the table covers `[−α, α)`.
    pub alpha_log2: i32,
}

/// GELU (erf form), `α = 4`.
pub const GELU_LUT: ActLut = ActLut { func: Func::Gelu, alpha_log2: 2 };
/// GPT-2's `gelu_new` (tanh form), `α = 4`.
pub const GELU_TANH_LUT: ActLut = ActLut { func: Func::GeluTanh, alpha_log2: 2 };
/// SiLU, `α = 8`.
pub const SILU_LUT: ActLut = ActLut { func: Func::Silu, alpha_log2: 3 };

impl ActLut {
    pub fn alpha(&self) -> f64 {
        (self.alpha_log2 as f64).exp2()
    }

    /// Segment width `w = 2α / 256`.
    pub fn width(&self) -> f64 {
        2.0 * self.alpha() / ENTRIES as f64
    }

    /// `(a_j, d_j)` in f64: the least-squares line of `f` over `[−α + j·w, −α + (j+2)·w)`.
    pub fn lines(&self) -> Vec<(f64, f64)> {
        let (a, w) = (self.alpha(), self.width());
        (0..ENTRIES)
            .map(|j| {
                let (lo, hi) = (-a + j as f64 * w, -a + (j + 2) as f64 * w);
                least_squares_line(self.func, lo, hi)
            })
            .collect()
    }

    /// The table as AGREEMENT data: the function, `α` and every segment's line.
    pub fn params(&self) -> serde_json::Value {
        serde_json::json!({ "lut": self, "lines": self.lines() })
    }

    /// The approximation in f64 with segment `j − c` (`c ∈ {0, 1}` the secure index error),
    /// given the table's [`ActLut::lines`].
    pub fn eval_f64(&self, lines: &[(f64, f64)], x: f64, c: usize) -> f64 {
        let (a, w) = (self.alpha(), self.width());
        if x < -a + w {
            return 0.0;
        }
        if x >= a {
            return x;
        }
        let (s, d) = lines[((x + a) / w).floor() as usize - c];
        s * x + d
    }

    /// Max abs error of [`ActLut::eval_f64`] against `f` on `[−α − 4, α + 4]`, over both index
    /// values (exact and one less), on a grid of `2^16` points per unit.
    pub fn max_error(&self) -> f64 {
        let (a, lines) = (self.alpha(), self.lines());
        let (lo, hi) = (-a - 4.0, a + 4.0);
        let steps = ((hi - lo) * 65536.0) as usize;
        let mut worst = 0.0f64;
        for i in 0..=steps {
            let x = lo + (hi - lo) * i as f64 / steps as f64;
            let y = self.func.eval(x);
            for c in 0..=1 {
                worst = worst.max((self.eval_f64(&lines, x, c) - y).abs());
            }
        }
        worst
    }
}

/// The least-squares line of `f` on `[lo, hi]` (continuous, by Gauss–Legendre quadrature on
/// 64 points): `(slope, intercept)`.
fn least_squares_line(f: Func, lo: f64, hi: f64) -> (f64, f64) {
    // orthogonal basis on [lo, hi]: 1 and t = x − m
    let (m, h) = ((lo + hi) / 2.0, (hi - lo) / 2.0);
    let k = 256;
    let (mut s0, mut s1) = (0.0, 0.0);
    for i in 0..k {
        let t = -h + 2.0 * h * (i as f64 + 0.5) / k as f64;
        let y = f.eval(m + t);
        s0 += y;
        s1 += y * t;
    }
    let mean = s0 / k as f64;
    let var_t = h * h / 3.0 * (1.0 - 1.0 / (k * k) as f64);
    let slope = s1 / k as f64 / var_t;
    (slope, mean - slope * m)
}

/// The activation `p` on `x` (see the module docs). Format `(l, f)` with
/// `f + log2 w >= 0` and `|x| < 2^(l − f − 3)`.
pub fn lut_activation<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ActLut) -> Result<B::Val, NnError> {
    let fp = b.format();
    let shift = fp.f() as i32 + p.alpha_log2 + 1 - LUT_BITS as i32;
    if shift < 0 || shift as u32 + LUT_BITS + 2 > fp.l() {
        return Err(NnError::FormatTooNarrow {
            op: "LUT activation",
            l: fp.l(),
            f: fp.f(),
            why: format!("the index bits [{shift}, {}) of x + {} must lie in the ring", shift + LUT_BITS as i32, p.alpha()),
        });
    }
    let lines = p.lines();
    let slopes = lines.iter().map(|&(a, _)| enc(b, a)).collect::<Result<Vec<_>, _>>()?;
    let inter = lines.iter().map(|&(_, d)| enc(b, d)).collect::<Result<Vec<_>, _>>()?;
    let n = b.len(x);
    let xa = b.add_const(x, &[enc(b, p.alpha())?])?;
    let idx = LutIndex { shift: shift as u32, bits: LUT_BITS, exact: false };
    let mut ad = b.lut(&xa, idx, &[&slopes, &inter])?;
    let (d, a) = (ad.pop(), ad.pop());
    let (Some(a), Some(d)) = (a, d) else {
        return Err(NnError::BadArgument("lookup returned no table".into()));
    };
    let ax = b.mul(&a, x)?;
    let mid = b.add(&ax, &d)?;
    let th = [enc(b, -p.alpha() + p.width())?, enc(b, p.alpha())?];
    let lt = b.less_than_const(x, &th, 0)?;
    let (b_lo, b_hi) = (&lt[0], &lt[1]);
    let in_mid = b.xor(b_hi, b_lo)?;
    let above = b.not(b_hi)?;
    let sel = b.concat_bits(&[&in_mid, &above])?;
    let vals = b.concat(&[&mid, x])?;
    let both = b.mux(&sel, &vals)?;
    let lo_idx: Vec<usize> = (0..n).collect();
    let hi_idx: Vec<usize> = (n..2 * n).collect();
    let y0 = b.gather(&both, &lo_idx)?;
    let y1 = b.gather(&both, &hi_idx)?;
    b.add(&y0, &y1)
}

/// [`lut_activation`] in BumbleBee's small activation ring (§V-C, [`crate::mixed`]).
pub fn lut_activation_mixed<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ActLut) -> Result<B::Val, NnError> {
    crate::mixed::with_format(b, x, crate::mixed::ACT_FORMAT, |b, y| lut_activation(b, y, p))
}

/// Parameters of [`exp_lut`] (AGREEMENT): CipherGPT's `L = 12` fractional bits of the 16-bit
/// input and the clipping point `−16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ExpLut {
    pub frac_bits: u32,
}

/// CipherGPT / ROTL: `x ∈ [−16, 0]` at `L = 12` (a 16-bit input, two 8-bit halves).
pub const EXP_LUT: ExpLut = ExpLut { frac_bits: 12 };

impl ExpLut {
    /// The clipping point `−2^(16 − L)` (−16 at `L = 12`).
    pub fn clip(&self) -> f64 {
        -((2 * LUT_BITS - self.frac_bits) as f64).exp2()
    }

    /// The two tables in f64: `e^{−j/2^L}` (low byte) and `e^{−j·2^8/2^L}` (high byte).
    pub fn tables_f64(&self) -> (Vec<f64>, Vec<f64>) {
        let s = (self.frac_bits as f64).exp2();
        let lo = (0..ENTRIES).map(|j| (-(j as f64) / s).exp()).collect();
        let hi = (0..ENTRIES).map(|j| (-(j as f64) * ENTRIES as f64 / s).exp()).collect();
        (lo, hi)
    }
}

/// `e^x` for `x ≤ 0` (0 below the clipping point) by two 2^8-entry LUTs (module docs).
/// Format `(l, f)` with `f >= L` and `l >= f + 22`.
pub fn exp_lut<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &ExpLut) -> Result<B::Val, NnError> {
    let fp = b.format();
    if fp.f() < p.frac_bits || fp.l() < fp.f() + 22 {
        return Err(NnError::FormatTooNarrow {
            op: "LUT exp",
            l: fp.l(),
            f: fp.f(),
            why: format!("needs f >= {} and l >= f + 22", p.frac_bits),
        });
    }
    let u = b.neg(x)?;
    let u = if fp.f() > p.frac_bits {
        // to L fractional bits; the truncation may be one below the floor, so add one unit
        // first: the result is floor(u) + 1 or floor(u), never below 0 (0 would wrap the
        // index to 255)
        let s = fp.f() - p.frac_bits;
        let biased = b.add_const(&u, &[int(b, 1 << s)])?;
        b.trunc(&biased, s)?
    } else {
        u
    };
    let (lo_f, hi_f) = p.tables_f64();
    let lo_t = lo_f.iter().map(|&v| enc(b, v)).collect::<Result<Vec<_>, _>>()?;
    let ident: Vec<u64> = (0..ENTRIES as i64).map(|j| int(b, j)).collect();
    let hi_t = hi_f.iter().map(|&v| enc(b, v)).collect::<Result<Vec<_>, _>>()?;
    let mut r = b.lut(&u, LutIndex { shift: 0, bits: LUT_BITS, exact: true }, &[&lo_t, &ident])?;
    let (v, e_lo) = (r.pop(), r.pop());
    let (Some(e_lo), Some(v)) = (e_lo, v) else {
        return Err(NnError::BadArgument("lookup returned no table".into()));
    };
    let high = b.sub(&u, &v)?;
    let mut r = b.lut(&high, LutIndex { shift: LUT_BITS, bits: LUT_BITS, exact: true }, &[&hi_t])?;
    let Some(e_hi) = r.pop() else {
        return Err(NnError::BadArgument("lookup returned no table".into()));
    };
    let y = b.mul(&e_lo, &e_hi)?;
    // step 2b: zero the entries below the clipping point (u >= 2^16 at scale 2^L)
    let keep = b.less_than_const(&u, &[int(b, 1 << (2 * LUT_BITS))], 0)?;
    b.mux(&keep[0], &y)
}

/// The reciprocal table of [`reciprocal_lut`] for `[1, hi]`: `(log2 w, initial values, the
/// largest initial relative error over a window, Newton steps)`.
pub fn reciprocal_table(hi: f64) -> Result<(i32, Vec<f64>, f64, u32), NnError> {
    if !(hi > 1.0 && hi.is_finite()) {
        return Err(NnError::BadArgument(format!("reciprocal LUT on [1, {hi}]: needs hi > 1")));
    }
    let k = ((hi - 1.0) / (ENTRIES - 1) as f64).log2().ceil() as i32;
    let w = (k as f64).exp2();
    let mut worst: f64 = 0.0;
    let y0: Vec<f64> = (0..ENTRIES)
        .map(|j| {
            // the window of index j: s ∈ [1 + (j − 1)w, 1 + (j + 1)w) ∩ [1, hi]
            let lo = (1.0 + (j as f64 - 1.0) * w).max(1.0);
            let up = (1.0 + (j as f64 + 1.0) * w).min(hi.max(lo + w));
            let y = 2.0 / (lo + up);
            worst = worst.max((up - lo) / (up + lo));
            y
        })
        .collect();
    // Newton: relative error ε → ε²; stop when the absolute error (≤ ε on s ≥ 1) ≤ δ
    let mut e = worst;
    let mut t = 0;
    while e > DETERMINE_DELTA {
        e *= e;
        t += 1;
    }
    Ok((k, y0, worst, t))
}

/// `1/s` for `s ∈ [1, hi]` (softmax row sums): a 2^8-entry LUT initial value and Newton
/// steps (module docs). Format `(l, f)` with `f + log2 w >= 0`.
pub fn reciprocal_lut<B: Backend + ?Sized>(b: &mut B, s: &B::Val, hi: f64) -> Result<B::Val, NnError> {
    let fp = b.format();
    let (k, y0, _, iters) = reciprocal_table(hi)?;
    let shift = fp.f() as i32 + k;
    if shift < 0 || (hi * 2.0).log2() + 2.0 * fp.f() as f64 + 2.0 >= fp.l() as f64 {
        return Err(NnError::FormatTooNarrow {
            op: "LUT reciprocal",
            l: fp.l(),
            f: fp.f(),
            why: format!("segments of 2^{k} need f >= {}, and x·y up to {hi} needs log2(2·{hi}) + 2f + 2 < l", -k),
        });
    }
    let w = (k as f64).exp2();
    let t = b.add_const(s, &[enc(b, w - 1.0)?])?;
    let table = y0.iter().map(|&v| enc(b, v)).collect::<Result<Vec<_>, _>>()?;
    let mut r = b.lut(&t, LutIndex { shift: shift as u32, bits: LUT_BITS, exact: false }, &[&table])?;
    let Some(y) = r.pop() else {
        return Err(NnError::BadArgument("lookup returned no table".into()));
    };
    newton_steps(b, s, y, iters)
}


/// The row every protocol that looks tables up states in `nectar params`.
pub fn security() -> nectar_math::registry::Security {
    nectar_math::registry::Security {
        he: Vec::new(),
        statistical: vec![nectar_math::registry::StatRow {
            step: "ROTL lookups (rotation, opening of i − s)",
            session_bits: None,
            detail: "the opened i − s is uniform in Z_n (s is the sum of the client's uniform one-hot position \
                     and the server's uniform punctured point); the rotated row reaches the server masked by \
                     PRG outputs of the leaf it lacks (computational, half-tree PPRF with TCCR)"
                .into(),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activation_tables_meet_their_stated_errors() {
        // (table, stated max abs error over the whole line with either index)
        for (p, stated) in [(GELU_LUT, 2.6e-4), (GELU_TANH_LUT, 2.6e-4), (SILU_LUT, 2.9e-3)] {
            let e = p.max_error();
            assert!(e <= stated, "{}: {e:e} > {stated:e}", p.func.name());
            assert!(e > stated / 2.0, "{}: stated bound {stated:e} is loose ({e:e})", p.func.name());
        }
    }

    #[test]
    fn reciprocal_tables_reach_delta() {
        for hi in [2.0, 32.0, 128.0, 256.0, 4096.0] {
            let (k, y0, eps, t) = reciprocal_table(hi).unwrap();
            let w = (k as f64).exp2();
            assert!((hi - 1.0) / w <= 255.0);
            // f64 simulation with either index over the range
            for i in 0..=4000 {
                let s = 1.0 + (hi - 1.0) * i as f64 / 4000.0;
                let j = ((s - 1.0 + w) / w).floor() as usize;
                for c in 0..=1 {
                    let y = (0..t).fold(y0[(j - c).min(255)], |y, _| y * (2.0 - s * y));
                    assert!((y - 1.0 / s).abs() <= DETERMINE_DELTA * 1.0001, "hi={hi} s={s} c={c}");
                    assert!((1.0 - s * y0[(j - c).min(255)]).abs() <= eps + 1e-12);
                }
            }
        }
        assert!(reciprocal_table(1.0).is_err());
    }

    #[test]
    fn exp_tables() {
        let (lo, hi) = EXP_LUT.tables_f64();
        assert_eq!(EXP_LUT.clip(), -16.0);
        // e^{-u} for u = 5.5 = 22528/4096: hi byte 88, lo byte 0
        let u = 22528usize;
        assert!((lo[u % 256] * hi[u / 256] - (-5.5f64).exp()).abs() < 1e-15);
    }
}
