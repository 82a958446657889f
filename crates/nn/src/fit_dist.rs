//! The distribution-aware fitter (Nimbus §4, `docs/notes/nimbus.md` §3): low-degree
//! approximations weighted by where a model's activation inputs actually fall, instead of
//! uniformly over a range.
//!
//! Method (deterministic; the committed tables are re-derived by `nectar fit --model`):
//! - the inputs are the values the f32 model feeds the function on calibration texts
//!   (`nectar_model::calibrate::activation_samples`): every GeLU / SiLU input, every softmax
//!   `score − row max`;
//! - a quartic in the normalised variable `w ∈ [−1/2, 1/2]` is fitted by weighted least squares
//!   over those inputs (weight 1 each) plus a uniform floor over the fitted range (2001 points
//!   carrying `floor` times the samples' total weight), which bounds the worst case where the
//!   calibration texts put few inputs;
//! - the quartic is rewritten as a chain of two squarings ([`chain_of_quartic`]).
//!
//! [`DistError`] reports the error over the samples (what the model sees) and over an evenly
//! spaced domain (the worst case), in f64 and in the fixed-point twin.

use crate::exp::nimbus::ExpChain;
use crate::fit::Func;
use crate::gelu::abs_form::AbsChain;
use crate::plain::PlainBackend;
use crate::poly::LessMode;
use crate::NnError;
use nectar_math::FixedPoint;

/// Points of the uniform floor.
const FLOOR_POINTS: usize = 2001;

/// Bound on `|u|` the chain is scaled to (the squares' truncation domain needs `< 0.7`).
const U_MAX: f64 = 0.6;

/// Weighted least-squares polynomial of degree 4 in `w`: monomial coefficients `c0..c4` of the
/// points `(w, y, weight)`.
fn weighted_quartic(points: &[(f64, f64, f64)]) -> Result<[f64; 5], NnError> {
    const K: usize = 5;
    let mut ata = [0.0f64; K * K];
    let mut aty = [0.0f64; K];
    for &(w, y, wt) in points {
        let pw = [1.0, w, w * w, w * w * w, w * w * w * w];
        for r in 0..K {
            aty[r] += wt * pw[r] * y;
            for s in 0..K {
                ata[r * K + s] += wt * pw[r] * pw[s];
            }
        }
    }
    let c = crate::fit::solve(&mut ata, &mut aty, K);
    if c.iter().any(|v| !v.is_finite()) {
        return Err(NnError::BadArgument("distribution fit: singular system (too few distinct inputs)".into()));
    }
    Ok([c[0], c[1], c[2], c[3], c[4]])
}

/// The quartic `Σ c_k w^k` as the chain `p1 = w², u = a1·p1 + b1·w + c1, Q = k2·u² + k1·p1 +
/// kw·w + k0` with `|u| ≤ U_MAX` on `[w_lo, w_hi]`: with `β = c3/(2c4)`, `v = w² + βw` is
/// centred by `γ = −(min v + max v)/2` and scaled by `a`, so `u = a(w² + βw + γ)`; expanding
/// `(w² + βw + γ)² = w⁴ + 2βw³ + (β² + 2γ)w² + 2βγw + γ²` gives `k2 = c4/a²`,
/// `k1 = c2 − c4(β² + 2γ)`, `kw = c1 − 2c4βγ`, `k0 = c0 − c4γ²`. Returns
/// `[a1, b1, c1, k2, k1, kw, k0]`.
pub fn chain_of_quartic(c: [f64; 5], w_lo: f64, w_hi: f64) -> Result<[f64; 7], NnError> {
    let [c0, c1, c2, c3, c4] = c;
    if c4.abs() < 1e-12 {
        return Err(NnError::BadArgument("distribution fit: the quartic term vanished (use a lower degree)".into()));
    }
    let beta = c3 / (2.0 * c4);
    let v = |w: f64| w * w + beta * w;
    let mut vs = vec![v(w_lo), v(w_hi)];
    if (w_lo..=w_hi).contains(&(-beta / 2.0)) {
        vs.push(v(-beta / 2.0));
    }
    let (vmin, vmax) = vs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
    let gamma = -(vmin + vmax) / 2.0;
    let half = ((vmax - vmin) / 2.0).max(1e-9);
    let a = U_MAX / half;
    Ok([
        a,
        a * beta,
        a * gamma,
        c4 / (a * a),
        c2 - c4 * (beta * beta + 2.0 * gamma),
        c1 - 2.0 * c4 * beta * gamma,
        c0 - c4 * gamma * gamma,
    ])
}

/// The uniform floor over `[lo, hi]`: points with a total weight of `floor · total`.
fn floor_points(lo: f64, hi: f64, floor: f64, total: f64) -> impl Iterator<Item = (f64, f64)> {
    let wt = floor * total / FLOOR_POINTS as f64;
    (0..FLOOR_POINTS).map(move |i| (lo + (hi - lo) * i as f64 / (FLOOR_POINTS - 1) as f64, wt))
}

fn check_floor(floor: f64) -> Result<(), NnError> {
    if !(0.0..=10.0).contains(&floor) || !floor.is_finite() {
        return Err(NnError::BadArgument(format!("--floor must be in [0, 10] (got {floor})")));
    }
    Ok(())
}

/// An [`AbsChain`] for `func` (GeLU, its tanh form or SiLU): `Q ≈ t − f(t)` on `t = |x| < r`,
/// fitted to the inputs `samples` with `|x| < r`, plus the uniform floor.
pub fn fit_abs_chain(func: Func, samples: &[f32], r: f64, floor: f64, less: LessMode) -> Result<AbsChain, NnError> {
    if !matches!(func, Func::Gelu | Func::GeluTanh | Func::Silu) {
        return Err(NnError::BadArgument(format!("the |x| form fits gelu, gelu_tanh or silu, not {}", func.name())));
    }
    check_floor(floor)?;
    if !(r.is_finite() && r > 0.0) {
        return Err(NnError::BadArgument(format!("range must be positive (got {r})")));
    }
    let scale = r.log2().ceil().exp2();
    let g = |t: f64| t - func.eval(t);
    let inside: Vec<f64> = samples.iter().map(|&x| (x as f64).abs()).filter(|t| *t < r).collect();
    if inside.len() < 16 {
        return Err(NnError::BadArgument(format!("only {} samples with |x| < {r}", inside.len())));
    }
    let total = inside.len() as f64;
    let mut pts: Vec<(f64, f64, f64)> = inside.iter().map(|&t| (t / scale - 0.5, g(t), 1.0)).collect();
    pts.extend(floor_points(0.0, r, floor, total).map(|(t, wt)| (t / scale - 0.5, g(t), wt)));
    let c = chain_of_quartic(weighted_quartic(&pts)?, -0.5, r / scale - 0.5)?;
    Ok(AbsChain { c, range: r, scale, less })
}

/// An [`ExpChain`]: `e^z ≈ B(w)^(2^n)` on `z ∈ [t_exp, 0]`, `w = z/(2^n R) + 1/2`, fitted to
/// the softmax inputs `samples` with `z ≥ t_exp`, each weighted by the squarings' gain
/// `(2^n e^(z(1 − 2^−n)))²` (an error `δ` of the base becomes `≈ 2^n e^(z(1 − 2^−n))·δ`),
/// plus the uniform floor.
pub fn fit_exp_chain(samples: &[f32], t_exp: f64, n: u32, floor: f64, less: LessMode) -> Result<ExpChain, NnError> {
    check_floor(floor)?;
    if !(t_exp.is_finite() && t_exp < 0.0) || n > 4 {
        return Err(NnError::BadArgument(format!("exp: needs a negative clip and at most 4 squarings (got {t_exp}, {n})")));
    }
    let pow = (n as f64).exp2();
    let scale = (-t_exp / pow).log2().ceil().exp2();
    let w_of = |z: f64| z / (pow * scale) + 0.5;
    let target = |z: f64| (z / pow).exp();
    let gain = |z: f64| (pow * (z * (1.0 - 1.0 / pow)).exp()).powi(2);
    let kept: Vec<f64> = samples.iter().map(|&z| z as f64).filter(|z| *z >= t_exp && *z <= 0.0).collect();
    if kept.len() < 16 {
        return Err(NnError::BadArgument(format!("only {} samples in [{t_exp}, 0]", kept.len())));
    }
    let total: f64 = kept.iter().map(|&z| gain(z)).sum();
    let mut pts: Vec<(f64, f64, f64)> = kept.iter().map(|&z| (w_of(z), target(z), gain(z))).collect();
    pts.extend(floor_points(t_exp, 0.0, floor, total).map(|(z, wt)| (w_of(z), target(z), wt * gain(z))));
    let c = chain_of_quartic(weighted_quartic(&pts)?, w_of(t_exp), 0.5)?;
    Ok(ExpChain { t_exp, n, scale, c, less })
}

/// Error figures of a distribution-fitted approximation.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DistError {
    /// Over the calibration inputs: count, RMS, mean |error|, 99.9th percentile and max.
    pub samples: usize,
    pub rms: f64,
    pub mean_abs: f64,
    pub p999_abs: f64,
    pub max_abs: f64,
    /// Over `domain` (evenly spaced points): the worst case, in f64 and in the twin.
    pub domain: [f64; 2],
    pub worst_abs: f64,
    pub twin_worst_abs: f64,
    /// The twin over the calibration inputs.
    pub twin_max_abs: f64,
    pub twin_rms: f64,
    pub format: [u32; 2],
}

/// A protocol run on the twin (`x` encoded in the backend's format).
pub type TwinFn<'a> = &'a dyn Fn(&mut PlainBackend, &Vec<u64>) -> Result<Vec<u64>, NnError>;

/// Errors of `approx` (f64) and `twin` (the protocol on [`PlainBackend`]) against `exact` over
/// `samples` and over `domain`. The twin runs on at most 10^6 of the samples (evenly strided).
pub fn dist_error(
    samples: &[f32],
    domain: [f64; 2],
    exact: &dyn Fn(f64) -> f64,
    approx: &dyn Fn(f64) -> f64,
    twin: TwinFn<'_>,
    fp: FixedPoint,
) -> Result<DistError, NnError> {
    let xs: Vec<f64> = samples.iter().map(|&x| x as f64).collect();
    if xs.is_empty() {
        return Err(NnError::BadArgument("no samples".into()));
    }
    let mut errs: Vec<f64> = xs.iter().map(|&x| (approx(x) - exact(x)).abs()).collect();
    let n = errs.len() as f64;
    let rms = (errs.iter().map(|e| e * e).sum::<f64>() / n).sqrt();
    let mean_abs = errs.iter().sum::<f64>() / n;
    errs.sort_by(f64::total_cmp);
    let p999_abs = errs[((errs.len() - 1) as f64 * 0.999) as usize];
    let max_abs = errs[errs.len() - 1];
    let grid = crate::fit::grid(domain[0], domain[1], 100_001);
    let worst_abs = grid.iter().map(|&x| (approx(x) - exact(x)).abs()).fold(0.0, f64::max);
    let run_twin = |pts: &[f64]| -> Result<(f64, f64), NnError> {
        let mut b = PlainBackend::new(fp)?;
        let x = b.encode(pts)?;
        let xq = b.decode(&x);
        let yv = twin(&mut b, &x)?;
        let y = b.decode(&yv);
        let e: Vec<f64> = xq.iter().zip(&y).map(|(&xi, &yi)| (yi - exact(xi)).abs()).collect();
        let rms = (e.iter().map(|v| v * v).sum::<f64>() / e.len().max(1) as f64).sqrt();
        Ok((e.iter().copied().fold(0.0, f64::max), rms))
    };
    let stride = xs.len().div_ceil(1_000_000);
    let sub: Vec<f64> = xs.iter().step_by(stride).copied().collect();
    let (twin_max_abs, twin_rms) = run_twin(&sub)?;
    let (twin_worst_abs, _) = run_twin(&grid)?;
    Ok(DistError {
        samples: xs.len(),
        rms,
        mean_abs,
        p999_abs,
        max_abs,
        domain,
        worst_abs,
        twin_worst_abs,
        twin_max_abs,
        twin_rms,
        format: [fp.l(), fp.f()],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_is_the_quartic() {
        let c = [0.1, -0.3, 0.7, 0.4, -1.3];
        let ch = chain_of_quartic(c, -0.5, 0.25).unwrap();
        let [a1, b1, c1, k2, k1, kw, k0] = ch;
        for i in 0..=100 {
            let w = -0.5 + 0.75 * i as f64 / 100.0;
            let u = a1 * w * w + b1 * w + c1;
            assert!(u.abs() <= U_MAX + 1e-12, "|u| = {u} at {w}");
            let q = k2 * u * u + k1 * w * w + kw * w + k0;
            let want: f64 = c.iter().enumerate().map(|(k, ck)| ck * w.powi(k as i32)).sum();
            assert!((q - want).abs() < 1e-12, "{q} vs {want}");
        }
        assert!(chain_of_quartic([1.0, 0.0, 0.0, 0.0, 0.0], -0.5, 0.5).is_err());
    }

    #[test]
    fn a_quartic_is_recovered_and_weights_matter() {
        // samples of a known quartic target are fitted exactly, whatever their distribution
        let pts: Vec<(f64, f64, f64)> = (0..200)
            .map(|i| {
                let w = -0.5 + i as f64 / 199.0;
                (w, 1.0 - w + 2.0 * w.powi(4), 1.0 + (i % 3) as f64)
            })
            .collect();
        let c = weighted_quartic(&pts).unwrap();
        for (got, want) in c.iter().zip([1.0, -1.0, 0.0, 0.0, 2.0]) {
            assert!((got - want).abs() < 1e-9, "{c:?}");
        }
        // GeLU fitted to inputs near 0 is better there than one fitted to inputs near 2
        let near0: Vec<f32> = (0..4000).map(|i| (i as f32 / 4000.0 - 0.5) * 0.8).collect();
        let near2: Vec<f32> = (0..4000).map(|i| 1.8 + i as f32 / 10000.0).collect();
        let less = crate::poly::BUMBLEBEE_LESS;
        let a = fit_abs_chain(Func::Gelu, &near0, 3.0, 0.0, less).unwrap();
        let b = fit_abs_chain(Func::Gelu, &near2, 3.0, 0.0, less).unwrap();
        let err = |p: &AbsChain, x: f64| (p.eval_f64(x) - Func::Gelu.eval(x)).abs();
        assert!(err(&a, 0.1) < err(&b, 0.1));
        assert!(err(&b, 1.9) < err(&a, 1.9));
    }

    #[test]
    fn bad_arguments_are_errors() {
        let less = crate::poly::BUMBLEBEE_LESS;
        assert!(fit_abs_chain(Func::Exp, &[0.5; 100], 3.0, 0.1, less).is_err());
        assert!(fit_abs_chain(Func::Gelu, &[9.0; 100], 3.0, 0.1, less).is_err(), "no sample inside");
        assert!(fit_abs_chain(Func::Gelu, &[0.5; 100], 3.0, -1.0, less).is_err());
        assert!(fit_exp_chain(&[-1.0; 100], 1.0, 2, 0.1, less).is_err());
        assert!(fit_exp_chain(&[-1.0; 100], -8.0, 9, 0.1, less).is_err());
    }
}
