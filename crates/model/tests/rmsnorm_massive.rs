//! RMSNorm on rows with "massive activations" (SmolLM2: a few channels of the first positions
//! reach 2.5e4) under the default suite's `norm = outer` with a statistics shift
//! (`nectar_model::calibrate`): the twin against f64 (the format's error, which the row's
//! large entries multiply) and the two-party protocol against the twin.

use nectar_math::{FixedPoint, Prg};
use nectar_model::secure::operators::rmsnorm;
use nectar_model::secure::{Engine, SecureEngine, WeightRef};
use nectar_model::twin::PlainEngine;
use nectar_model::Suite;
use nectar_nn::Backend;
use nectar_net::{mem::run_pair, Channel, Role};
use nectar_nn::rmsnorm::rmsnorm_f64;

const ROWS: usize = 3;
const COLS: usize = 576;
const EPS: f64 = 1e-5;
/// The shift the calibration picks for these rows (SmolLM2's from its 12th layer on):
/// `|x|·2^−k ≤ 2^11` and `mean(x²)·4^−k ≤ 2^14`.
const SHIFT: u32 = 4;

/// Rows like SmolLM2's (hidden 576): row 0 with one channel at 2.5e4 (and one at −3e3), the
/// others in `[−4, 4]`; `γ` from 1e−4 (the massive channels' size in SmolLM2's norms) to 1.5.
fn inputs() -> (Vec<f64>, Vec<f64>) {
    let mut prg = Prg::new([7; 16]);
    let mut u = || (prg.next_u128() >> 75) as f64 / (1u64 << 53) as f64;
    let mut x: Vec<f64> = (0..ROWS * COLS).map(|_| 8.0 * u() - 4.0).collect();
    x[3] = 2.5e4;
    x[17] = -3.0e3;
    let mut gamma: Vec<f64> = (0..COLS).map(|_| 0.05 + 1.45 * u()).collect();
    gamma[3] = 1e-4;
    gamma[17] = 3e-4;
    (x, gamma)
}

fn suite() -> Suite {
    Suite::parse("nectar+ot=iknp").unwrap()
}

fn enc(fp: FixedPoint, v: &[f64]) -> Vec<u64> {
    v.iter().map(|&a| fp.encode::<u64>(a).unwrap()).collect()
}

fn max_err(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0f64, f64::max)
}

#[test]
fn massive_rows_keep_the_formats_precision() {
    let fp = FixedPoint::BUMBLEBEE;
    let (x, gamma) = inputs();
    let (xe, ge) = (enc(fp, &x), enc(fp, &gamma));
    // The reference takes γ as the format holds it (γ = 1e−4 is 26 LSB: its own rounding is
    // not the norm's error).
    let want = rmsnorm_f64(&x, COLS, &fp.decode_vec(&ge), EPS);

    let mut t = PlainEngine::new(fp, &suite()).unwrap();
    let xs = t.client_input(Some(&xe), xe.len()).unwrap();
    let y = rmsnorm(&mut t, &xs, ROWS, COLS, WeightRef::Server(&ge), EPS, SHIFT).unwrap();
    let twin = fp.decode_vec(&t.reveal(&y).unwrap());
    // The massive channels' outputs are small (x·r·γ ≈ 2e−3) but their inputs are not: the
    // former order, x ⊙ (r' ⊗ γ·2^−k) at f bits, rounded r'·γ·2^−k ≈ 2e−7 to 0 and lost them
    // (relative error 1). Now they keep r''s precision (≈ 4000 LSB, and the Newton steps').
    for &i in &[3, 17] {
        let rel = (twin[i] - want[i]).abs() / want[i].abs();
        eprintln!("massive channel {i}: want {:.4e}, twin {:.4e} (relative error {rel:.1e})", want[i], twin[i]);
        assert!(rel < 2e-3, "massive channel {i}: relative error {rel}");
    }
    // Every output: the statistics of x·2^−k keep f − 2k fractional bits of mean(x²)·4^−k
    // (ms ≈ 5.3 → 5.5e3 LSB), ≈ 2e−4 of the unit rows' outputs (|y| ≤ 3.3 here).
    let err = max_err(&twin, &want);
    eprintln!("twin vs f64: max error {err:.2e}");
    assert!(err < 1e-3, "twin vs f64: {err}");

    let (s, c) = run_pair(
        |ch| {
            let ch: &mut dyn Channel = ch;
            let mut e = SecureEngine::setup(ch, Role::Server, &suite(), Prg::from_entropy()).unwrap();
            let xs = e.client_input(None, ROWS * COLS).unwrap();
            let y = rmsnorm(&mut e, &xs, ROWS, COLS, WeightRef::Server(&ge), EPS, SHIFT).unwrap();
            e.reveal(&y).unwrap()
        },
        |ch| {
            let ch: &mut dyn Channel = ch;
            let mut e = SecureEngine::setup(ch, Role::Client, &suite(), Prg::from_entropy()).unwrap();
            let xs = e.client_input(Some(&xe), ROWS * COLS).unwrap();
            let y = rmsnorm(&mut e, &xs, ROWS, COLS, WeightRef::Client, EPS, SHIFT).unwrap();
            e.reveal(&y).unwrap()
        },
    );
    assert_eq!(s, c, "both parties open the same values");
    let secure = fp.decode_vec(&c);
    let err = max_err(&secure, &twin);
    eprintln!("protocol vs twin: max error {err:.2e}");
    // The protocol's ±1 LSB truncations of the statistics (mean(x²)·4^−k ≈ 5.5e3 LSB in the unit
    // rows) move r' by ≈ 1e−4 of itself, times |y| ≤ 3.3, plus the rsqrt's own steps.
    assert!(err < 1e-3, "protocol vs twin: {err}");
}
