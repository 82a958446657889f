//! The OPPE fitter (East §4.1 used NFGen, whose tables are not published — REFERENCE.md §8
//! item 6): given a function, an input range, `m` pieces and degree `d`, choose breakpoints and
//! least-squares coefficients, and report the error in f64 and in the fixed-point twin.
//!
//! Method (deterministic, so the committed tables can be re-derived by the tests):
//! - the fixed tails of the function take whole pieces: a left value of 0 below `lo` (every
//!   table), and for GELU / SiLU the identity, for tanh the constant 2 (tanh is fitted as
//!   `tanh + 1`) from `hi` on; exp has no right tail (its input is `≤ 0`), its last fitted
//!   piece extends to `+∞`;
//! - the remaining `k` pieces cover `[lo, hi]`: for a target error `ε`, pieces are grown
//!   greedily from `lo` (the right end of each found by bisection as the farthest point whose
//!   least-squares polynomial has max error `≤ ε`); the smallest `ε` that needs at most `k`
//!   pieces is found by bisection on `ε` (60 steps), and the last piece ends at `hi`;
//! - each piece's polynomial is the least-squares fit on 64 Chebyshev nodes of the piece, in
//!   the normalised variable `t ∈ [−1, 1]` (well conditioned), then expanded to monomials in
//!   `x`; its max error is measured on 257 evenly spaced points.
//!
//! Errors are reported on the table's `domain` (wider than `[lo, hi]`, so the tails count).

use crate::oppe::{oppe, FitRecord, OppeTable};
use crate::plain::PlainBackend;
use crate::NnError;
use nectar_math::FixedPoint;

/// `samples` evenly spaced points of `[lo, hi]` (both ends included).
pub fn grid(lo: f64, hi: f64, samples: usize) -> Vec<f64> {
    let n = samples.max(2);
    (0..n).map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64).collect()
}

/// A function OPPE can approximate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Func {
    /// Exact GeLU `x Φ(x)` (BERT, ViT).
    Gelu,
    /// GPT-2's `gelu_new`, `x/2 (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
    GeluTanh,
    /// `e^x` for `x ≤ 0`.
    Exp,
    /// `tanh` (fitted as `tanh + 1`).
    Tanh,
    /// `x / (1 + e^−x)`.
    Silu,
}

impl Func {
    /// By name (`gelu`, `gelu_tanh`, `exp`, `tanh`, `silu`).
    pub fn parse(s: &str) -> Result<Func, NnError> {
        Ok(match s {
            "gelu" => Func::Gelu,
            "gelu_tanh" => Func::GeluTanh,
            "exp" => Func::Exp,
            "tanh" => Func::Tanh,
            "silu" => Func::Silu,
            other => {
                return Err(NnError::BadArgument(format!(
                    "unknown function '{other}' (gelu, gelu_tanh, exp, tanh, silu)"
                )))
            }
        })
    }
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Func::Gelu => "gelu",
            Func::GeluTanh => "gelu_tanh",
            Func::Exp => "exp",
            Func::Tanh => "tanh",
            Func::Silu => "silu",
        }
    }
    /// The function in f64.
    pub fn eval(self, x: f64) -> f64 {
        match self {
            Func::Gelu => nectar_math::real::gelu(x, nectar_math::real::GeluForm::Erf),
            Func::GeluTanh => nectar_math::real::gelu(x, nectar_math::real::GeluForm::Tanh),
            Func::Exp => x.exp(),
            Func::Tanh => x.tanh(),
            Func::Silu => nectar_math::real::silu(x),
        }
    }
    /// The function as fitted (`tanh + 1` for tanh, so that it is 0 on the left).
    fn fitted(self, x: f64) -> f64 {
        match self {
            Func::Tanh => x.tanh() + 1.0,
            _ => self.eval(x),
        }
    }
    /// The fixed right tail from `hi` on, as polynomial coefficients (lowest degree first).
    fn right_tail(self, d: usize) -> Option<Vec<f64>> {
        let mut c = vec![0.0; d + 1];
        match self {
            Func::Gelu | Func::GeluTanh | Func::Silu => c[1] = 1.0,
            Func::Tanh => c[0] = 2.0,
            Func::Exp => return None,
        }
        Some(c)
    }
    fn offset(self) -> f64 {
        if self == Func::Tanh {
            -1.0
        } else {
            0.0
        }
    }
}

/// What to fit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FitSpec {
    pub func: Func,
    /// The fitted interval `[lo, hi]` (left of `lo` the result is 0; right of `hi` the tail).
    pub lo: f64,
    pub hi: f64,
    /// Pieces, tails included.
    pub m: usize,
    /// Degree.
    pub d: usize,
    /// The range the error is reported on.
    pub domain: [f64; 2],
    /// Comparison precision (BumbleBee's approximate less-than); `None`: exact.
    pub less_precision: Option<u32>,
    /// The twin's format.
    pub format: FixedPoint,
    /// Evenly spaced points of `domain` for the error figures.
    pub samples: usize,
}

const NODES: usize = 64;
/// The most points the error figures may be measured on (memory of the twin run).
pub const MAX_SAMPLES: usize = 10_000_000;
const CHECK: usize = 257;

/// Least-squares polynomial of degree `d` of `f` on `[a, b]`; returns monomial coefficients
/// in `x` and the max error on `CHECK` points.
fn fit_piece(f: &dyn Fn(f64) -> f64, a: f64, b: f64, d: usize) -> (Vec<f64>, f64) {
    let (c, h) = ((a + b) / 2.0, (b - a) / 2.0);
    // Normal equations in t on Chebyshev nodes.
    let k = d + 1;
    let mut ata = vec![0.0; k * k];
    let mut aty = vec![0.0; k];
    for i in 0..NODES {
        let t = (std::f64::consts::PI * (i as f64 + 0.5) / NODES as f64).cos();
        let y = f(c + h * t);
        let pw: Vec<f64> = (0..k).map(|j| t.powi(j as i32)).collect();
        for r in 0..k {
            aty[r] += pw[r] * y;
            for s in 0..k {
                ata[r * k + s] += pw[r] * pw[s];
            }
        }
    }
    let q = solve(&mut ata, &mut aty, k);
    // p(x) = Σ_j q_j ((x − c)/h)^j, expanded: (x − c)^j = Σ_i C(j,i) x^i (−c)^(j−i).
    let mut coef = vec![0.0; k];
    for (j, &qj) in q.iter().enumerate() {
        let scale = qj / h.powi(j as i32);
        let mut binom = 1.0;
        for i in 0..=j {
            coef[i] += scale * binom * (-c).powi((j - i) as i32);
            binom = binom * (j - i) as f64 / (i + 1) as f64;
        }
    }
    // binom above iterates C(j, i) for i = 0..j: C(j,0)=1, C(j,i+1) = C(j,i)(j−i)/(i+1).
    let err = (0..CHECK)
        .map(|i| {
            let x = a + (b - a) * i as f64 / (CHECK - 1) as f64;
            (horner(&coef, x) - f(x)).abs()
        })
        .fold(0.0, f64::max);
    (coef, err)
}

fn horner(c: &[f64], x: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, &ck| acc * x + ck)
}

/// Gaussian elimination with partial pivoting on a small dense system.
pub(crate) fn solve(a: &mut [f64], y: &mut [f64], k: usize) -> Vec<f64> {
    for col in 0..k {
        let piv = (col..k)
            .max_by(|&r, &s| a[r * k + col].abs().total_cmp(&a[s * k + col].abs()))
            .unwrap_or(col);
        if piv != col {
            for j in 0..k {
                a.swap(col * k + j, piv * k + j);
            }
            y.swap(col, piv);
        }
        let p = a[col * k + col];
        for r in col + 1..k {
            let fct = a[r * k + col] / p;
            for j in col..k {
                a[r * k + j] -= fct * a[col * k + j];
            }
            y[r] -= fct * y[col];
        }
    }
    let mut x = vec![0.0; k];
    for r in (0..k).rev() {
        let s: f64 = (r + 1..k).map(|j| a[r * k + j] * x[j]).sum();
        x[r] = (y[r] - s) / a[r * k + r];
    }
    x
}

/// Greedy cover of `[lo, hi]` by pieces of max error `≤ eps`; `None` if more than `k` needed.
fn cover(f: &dyn Fn(f64) -> f64, lo: f64, hi: f64, d: usize, k: usize, eps: f64) -> Option<Vec<f64>> {
    let mut starts = vec![lo];
    let mut a = lo;
    loop {
        if fit_piece(f, a, hi, d).1 <= eps {
            return Some(starts);
        }
        if starts.len() == k {
            return None;
        }
        // Farthest b with error ≤ eps (error grows with the width).
        let (mut good, mut bad) = (a, hi);
        for _ in 0..50 {
            let mid = (good + bad) / 2.0;
            if fit_piece(f, a, mid, d).1 <= eps {
                good = mid;
            } else {
                bad = mid;
            }
        }
        if good <= a {
            return None;
        }
        a = good;
        starts.push(a);
    }
}

/// The spec that reproduces a committed table (its recorded arguments).
pub fn spec_of(t: &OppeTable) -> Result<FitSpec, NnError> {
    Ok(FitSpec {
        func: Func::parse(&t.func)?,
        lo: t.fit.fitted[0],
        hi: t.fit.fitted[1],
        m: t.pieces(),
        d: t.degree(),
        domain: t.domain,
        less_precision: t.less_precision,
        format: FixedPoint::new(t.fit.format[0], t.fit.format[1])?,
        samples: t.fit.samples,
    })
}

/// Fits a table (module docs) and measures its error in f64 and in the twin.
pub fn fit(spec: &FitSpec) -> Result<OppeTable, NnError> {
    let FitSpec { func, lo, hi, m, d, domain, .. } = *spec;
    if !(1..=8).contains(&d) {
        return Err(NnError::BadArgument(format!("degree d = {d} out of bounds (1..=8)")));
    }
    let tail = func.right_tail(d);
    let k = m.checked_sub(tail.is_some() as usize).unwrap_or(0);
    if !(1..=64).contains(&m) || k == 0 {
        return Err(NnError::BadArgument(format!(
            "m = {m} pieces out of bounds (1..=64, and at least one fitted piece besides the tail)"
        )));
    }
    if !(lo < hi) || !lo.is_finite() || !hi.is_finite() || !(domain[0] <= lo && hi <= domain[1]) {
        return Err(NnError::BadArgument(format!(
            "need lo < hi inside the domain (got [{lo}, {hi}] in {domain:?})"
        )));
    }
    if !(2..=MAX_SAMPLES).contains(&spec.samples) {
        return Err(NnError::BadArgument(format!(
            "{} error samples out of bounds (2..={MAX_SAMPLES})",
            spec.samples
        )));
    }
    if func == Func::Exp && hi > 0.0 {
        return Err(NnError::BadArgument("exp is fitted on x <= 0 (hi must be <= 0)".into()));
    }
    let fp = spec.format;
    let bound = ((fp.l() - 2 - fp.f()) as f64).exp2();
    if domain[0].abs() >= bound || domain[1].abs() >= bound {
        return Err(NnError::FormatTooNarrow {
            op: "oppe fit",
            l: fp.l(),
            f: fp.f(),
            why: format!("domain {domain:?} exceeds the comparison range ±2^(l−2−f) = ±{bound}"),
        });
    }
    crate::poly::check_headroom("oppe fit", fp, crate::oppe::power_log2(domain, d))?;
    let f = |x: f64| func.fitted(x);
    // Bisection on the target error: the largest single-piece error is an upper bound.
    let (mut lo_e, mut hi_e) = (0.0, fit_piece(&f, lo, hi, d).1.max(1e-300));
    let mut best = cover(&f, lo, hi, d, k, hi_e).unwrap_or_else(|| vec![lo]);
    for _ in 0..60 {
        let mid = (lo_e + hi_e) / 2.0;
        match cover(&f, lo, hi, d, k, mid) {
            Some(s) => {
                hi_e = mid;
                best = s;
            }
            None => lo_e = mid,
        }
    }
    let mut breaks = best.clone();
    let mut coeffs: Vec<Vec<f64>> = Vec::new();
    for (i, &a) in best.iter().enumerate() {
        let b = best.get(i + 1).copied().unwrap_or(hi);
        coeffs.push(fit_piece(&f, a, b, d).0);
    }
    if let Some(t) = tail {
        breaks.push(hi);
        coeffs.push(t);
    }
    let command = format!(
        "nectar fit --func {} --lo {lo} --hi {hi} --m {m} --d {d} --domain {},{} --samples {}{}",
        func.name(),
        domain[0],
        domain[1],
        spec.samples,
        if spec.less_precision.is_none() { " --exact-compare" } else { "" }
    );
    let mut table = OppeTable {
        func: func.name().into(),
        breaks,
        coeffs,
        offset: func.offset(),
        domain,
        less_precision: spec.less_precision,
        fit: FitRecord {
            command,
            fitted: [lo, hi],
            float_max_abs: 0.0,
            float_mean_abs: 0.0,
            twin_max_abs: 0.0,
            twin_mean_abs: 0.0,
            format: [fp.l(), fp.f()],
            samples: spec.samples,
        },
    };
    table.validate()?;
    table.fit = measure(&table, func, fp, spec.samples)?;
    Ok(table)
}

/// The error figures of `table` against `func` on its domain: f64 and the twin in `fp`.
pub fn measure(table: &OppeTable, func: Func, fp: FixedPoint, samples: usize) -> Result<FitRecord, NnError> {
    let xs = grid(table.domain[0], table.domain[1], samples);
    let mut b = PlainBackend::new(fp)?;
    let x = b.encode(&xs)?;
    let xq = b.decode(&x);
    let y = oppe(&mut b, &x, table)?;
    let got = b.decode(&y);
    let (mut fmax, mut fsum, mut tmax, mut tsum) = (0.0f64, 0.0, 0.0f64, 0.0);
    for (i, &xi) in xs.iter().enumerate() {
        let fe = (table.eval_f64(xi) - func.eval(xi)).abs();
        let te = (got[i] - func.eval(xq[i])).abs();
        fmax = fmax.max(fe);
        tmax = tmax.max(te);
        fsum += fe;
        tsum += te;
    }
    let n = xs.len() as f64;
    Ok(FitRecord {
        command: table.fit.command.clone(),
        fitted: table.fit.fitted,
        float_max_abs: fmax,
        float_mean_abs: fsum / n,
        twin_max_abs: tmax,
        twin_mean_abs: tsum / n,
        format: [fp.l(), fp.f()],
        samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cubic_is_fitted_exactly() {
        let f = |x: f64| 0.5 - 2.0 * x + 0.25 * x * x * x;
        let (c, err) = fit_piece(&f, -3.0, 5.0, 3);
        assert!(err < 1e-9, "{err}");
        for (got, want) in c.iter().zip([0.5, -2.0, 0.0, 0.25]) {
            assert!((got - want).abs() < 1e-9, "{c:?}");
        }
    }

    #[test]
    fn bad_arguments_are_errors() {
        let spec = FitSpec {
            func: Func::Gelu,
            lo: -5.0,
            hi: 5.0,
            m: 8,
            d: 3,
            domain: [-8.0, 8.0],
            less_precision: None,
            format: FixedPoint::BUMBLEBEE,
            samples: 100,
        };
        assert!(fit(&FitSpec { d: 0, ..spec }).is_err());
        assert!(fit(&FitSpec { d: 9, ..spec }).is_err());
        assert!(fit(&FitSpec { m: 1, ..spec }).is_err()); // only the tail
        assert!(fit(&FitSpec { m: 65, ..spec }).is_err());
        assert!(fit(&FitSpec { lo: 5.0, hi: -5.0, ..spec }).is_err());
        let narrow = FixedPoint::new(32, 12).unwrap();
        let e = fit(&FitSpec { domain: [-1e4, 1e4], lo: -5.0, hi: 5.0, format: narrow, ..spec }).unwrap_err();
        assert!(e.to_string().contains("too narrow"), "{e}");
        assert!(Func::parse("relu").is_err());
        assert!(fit(&FitSpec { samples: 1, ..spec }).is_err());
        assert!(fit(&FitSpec { samples: usize::MAX, ..spec }).is_err());
    }
}
