//! Approximation-accuracy measurement: an operator run on the plaintext twin vs an `f64`
//! reference over a grid of inputs. Used by the tests (with bounds) and by
//! [`approximation_table`] (the numbers of `docs/results/nonlinear.md`; callable from the
//! `nectar bench` CLI).

use crate::backend::Backend;
use crate::plain::PlainBackend;
use crate::NnError;
use nectar_math::FixedPoint;

/// Error statistics of one operator over one input range.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrStats {
    pub op: String,
    /// Input range `[lo, hi]` (elementwise ops) or a description.
    pub range: String,
    pub samples: usize,
    pub max_abs: f64,
    /// An input where `max_abs` is attained.
    pub argmax: f64,
    pub mean_abs: f64,
    /// Mean error in units of the output format's LSB (2^−f).
    pub mean_ulp: f64,
    /// The paper's / reference figure for comparison (text).
    pub paper: String,
}

/// `samples` evenly spaced points of `[lo, hi]` (both ends included).
pub fn grid(lo: f64, hi: f64, samples: usize) -> Vec<f64> {
    let n = samples.max(2);
    (0..n).map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64).collect()
}

/// Run `op` on the twin in format `fp` on `xs` and compare elementwise with `reference`.
pub fn measure_elementwise<F, R>(
    op: &str,
    fp: FixedPoint,
    xs: &[f64],
    run: F,
    reference: R,
    paper: &str,
) -> Result<ErrStats, NnError>
where
    F: Fn(&mut PlainBackend, &Vec<u64>) -> Result<Vec<u64>, NnError>,
    R: Fn(f64) -> f64,
{
    let mut b = PlainBackend::new(fp)?;
    let x = b.encode(xs)?;
    let y = run(&mut b, &x)?;
    let got = b.decode(&b.clone().reveal(&y)?);
    let want: Vec<f64> = b.decode(&x).into_iter().map(reference).collect();
    Ok(stats(op, &format!("[{}, {}]", xs[0], xs[xs.len() - 1]), xs, &got, &want, b.format(), paper))
}

/// Statistics of `got` vs `want` (inputs `xs` for the argmax report).
pub fn stats(op: &str, range: &str, xs: &[f64], got: &[f64], want: &[f64], fp: FixedPoint, paper: &str) -> ErrStats {
    let mut max_abs = 0.0f64;
    let mut argmax = f64::NAN;
    let mut sum = 0.0;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let e = (g - w).abs();
        sum += e;
        if e > max_abs || argmax.is_nan() {
            max_abs = e;
            argmax = xs.get(i).copied().unwrap_or(f64::NAN);
        }
    }
    let mean_abs = sum / got.len().max(1) as f64;
    ErrStats {
        op: op.to_string(),
        range: range.to_string(),
        samples: got.len(),
        max_abs,
        argmax,
        mean_abs,
        mean_ulp: mean_abs * fp.scale(),
        paper: paper.to_string(),
    }
}
