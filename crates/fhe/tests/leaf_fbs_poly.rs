//! LEAF Lemma 2 at LEAF's size (`P = 65537`): the GELU / SiLU polynomials agree with their
//! tables on all of `Z_P` (Horner, every point) and map `α·m + e` to `α·g(m)` for `|e| < α/2`.

use nectar_fhe::fbs_poly::{eval_horner, gelu, interpolate, silu, FbsParams};
use rayon::prelude::*;
use std::time::Instant;

const P: u64 = 65537;

/// Horner at every point of `Z_P` (P² ≈ 4.3·10^9 multiply-adds, in parallel): eight points per
/// pass for instruction-level parallelism, `P` a constant so `%` is a multiply-shift.
fn eval_all(c: &[u64], p: u64) -> Vec<u64> {
    assert_eq!(p, P);
    let mut out = vec![0u64; P as usize];
    out.par_chunks_mut(8).enumerate().for_each(|(blk, o)| {
        let xs: [u64; 8] = std::array::from_fn(|i| (blk * 8 + i) as u64 % P);
        let mut v = [0u64; 8];
        for &ci in c.iter().rev() {
            for i in 0..8 {
                v[i] = (v[i] * xs[i] + ci) % P;
            }
        }
        o.copy_from_slice(&v[..o.len()]);
    });
    // Spot-check the fast loop against the library's Horner.
    for x in [0u64, 1, 2, 12345, P - 1] {
        assert_eq!(out[x as usize], eval_horner(c, p, x));
    }
    out
}

#[test]
fn leaf_gelu_and_silu_polynomials() {
    let fp = FbsParams::LEAF;
    let (a, p) = (fp.alpha as i64, fp.small_p as i64);
    for (name, r) in [("GELU", gelu as fn(f64) -> f64), ("SiLU", silu)] {
        let f = if name == "GELU" { fp.gelu_f().unwrap() } else { fp.silu_f().unwrap() };
        let t0 = Instant::now();
        let c = interpolate(fp.big_p, &f).unwrap();
        let t_build = t0.elapsed();
        let t0 = Instant::now();
        let vals = eval_all(&c, fp.big_p);
        eprintln!("{name}: Lemma 2 coefficients in {t_build:?}, Horner on all {} points in {:?}", fp.big_p, t0.elapsed());
        assert_eq!(vals, f, "{name}: f_poly != f on Z_P");
        let g = fp.g_table(r);
        for m in 0..p {
            for e in -(a / 2 - 1)..a / 2 {
                let x = (a * m + e).rem_euclid(fp.big_p as i64) as usize;
                assert_eq!(vals[x], fp.alpha * g[m as usize], "{name}: m = {m}, e = {e}");
            }
        }
    }
}

/// LEAF §4 "measured error": GELU through LEAF's quantisation (inputs rounded to 1/16 in
/// `[−16, 16)`, outputs `round(16·GELU)/16` in `Z_512`) has mean absolute error ≤ 0.025 on
/// `[−16, 16]` — the value the paper reports. The polynomial reproduces `g` exactly (the tests
/// above), so this is the end-to-end approximation error of the FBS GELU.
#[test]
fn quantised_gelu_mean_abs_error_within_leaf_figure() {
    let fp = FbsParams::LEAF;
    let g = fp.g_table(gelu);
    let (p, s) = (fp.small_p as i64, fp.scale as f64);
    let signed = |v: u64| if 2 * v as i64 >= p { v as i64 - p } else { v as i64 };
    let samples = 200_000;
    let mut sum = 0.0;
    let mut max = 0f64;
    for i in 0..samples {
        // Uniform grid over [−16, 16], offset so no point sits on a rounding boundary.
        let x = -16.0 + 32.0 * (i as f64 + 0.37) / samples as f64;
        let m = ((x * s).round() as i64).clamp(-p / 2, p / 2 - 1);
        let y = signed(g[m.rem_euclid(p) as usize]) as f64 / s;
        let e = (y - gelu(x)).abs();
        sum += e;
        max = max.max(e);
    }
    let mean = sum / samples as f64;
    eprintln!("quantised GELU on [-16, 16]: mean abs error {mean:.4}, max {max:.4}");
    assert!(mean <= 0.025, "mean abs error {mean}");
    // Input rounding (≤ 1/32 · max|GELU'| ≈ 1.13) plus output rounding (≤ 1/32), and the clamp
    // at 16 − 1/16 for inputs in (15.97, 16]: at most 0.1.
    assert!(max <= 0.1, "max abs error {max}");
}
