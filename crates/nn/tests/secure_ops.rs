//! Two-party tests of [`SecureBackend`]: every primitive and every operator run by both parties
//! (`nectar_net::mem::run_pair`), revealed, and compared with the plaintext twin
//! ([`PlainBackend`], same operator code) within the error the primitives' stated error models
//! allow, and with `f64`.
//!
//! Tolerances (LSB of the output's format, measured on the raw ring difference secure − twin):
//! see each case; the derivations are in `docs/results/nonlinear.md` ("Secure operators").

#![allow(clippy::ptr_arg)] // the Backend trait fixes `Val = Vec<u64>`

use nectar_math::{FixedPoint, Prg};
use nectar_net::mem::run_pair;
use nectar_net::Role;
use nectar_nn::backend::{enc, int, Backend, DynBackend};
use nectar_nn::secure::{MulProtocol, SecureBackend, SecureOpts};
use nectar_nn::{exp, gelu, layernorm, max, reciprocal, rmsnorm, rsqrt, silu, softmax, NnError, PlainBackend};
use nectar_ot::Producer;

const FP: FixedPoint = FixedPoint::BUMBLEBEE;
type R = Result<Vec<u64>, NnError>;

/// One operator written once, instantiated for the twin and the secure backend.
trait Case: Sync {
    fn plain(&self, b: &mut PlainBackend, x: &Vec<u64>) -> R;
    fn secure(&self, b: &mut SecureBackend<'_>, x: &Vec<u64>) -> R;
}

macro_rules! case {
    (|$b:ident, $x:ident| $body:expr) => {{
        struct C;
        impl Case for C {
            #[allow(unused_mut)]
            fn plain(&self, $b: &mut PlainBackend, $x: &Vec<u64>) -> R {
                $body
            }
            #[allow(unused_mut)]
            fn secure(&self, $b: &mut SecureBackend<'_>, $x: &Vec<u64>) -> R {
                $body
            }
        }
        Box::new(C) as Box<dyn Case>
    }};
}

/// A test item: inputs (reals, in `FP`), the operator, the tolerance twin vs secure (raw LSB).
struct Item {
    name: String,
    xs: Vec<f64>,
    case: Box<dyn Case>,
    tol: i64,
    /// Optional f64 reference of the output (decoded in `FP`) and its tolerance.
    float: Option<(Vec<f64>, f64)>,
}

fn item(name: impl Into<String>, xs: Vec<f64>, tol: i64, case: Box<dyn Case>) -> Item {
    Item { name: name.into(), xs, case, tol, float: None }
}

impl Item {
    fn float(mut self, f: impl Fn(f64) -> f64, tol: f64) -> Self {
        self.float = Some((self.xs.iter().map(|&v| f(v)).collect(), tol));
        self
    }
    fn float_vec(mut self, want: Vec<f64>, tol: f64) -> Self {
        self.float = Some((want, tol));
        self
    }
}

fn signed(v: u64, l: u32) -> i64 {
    if l >= 64 {
        v as i64
    } else {
        let s = 64 - l;
        ((v << s) as i64) >> s
    }
}

/// Runs all items in one two-party session; returns (twin, secure) raw outputs per item, and
/// checks both parties revealed the same.
fn run_items(opts: SecureOpts, items: &[Item]) -> Vec<(Vec<u64>, Vec<u64>)> {
    let mut prg = Prg::new([7; 16]);
    let mut shares0 = vec![];
    let mut shares1 = vec![];
    let mut twins = vec![];
    for it in items {
        let mut tw = PlainBackend::new(FP).unwrap();
        let x = tw.encode(&it.xs).unwrap();
        twins.push(it.case.plain(&mut tw, &x).unwrap_or_else(|e| panic!("twin {}: {e}", it.name)));
        let r: Vec<u64> = x.iter().map(|_| prg.next_u128() as u64).collect();
        shares0.push(x.iter().zip(&r).map(|(a, b)| a.wrapping_sub(*b)).collect::<Vec<u64>>());
        shares1.push(r);
    }
    let party = |role: Role, shares: Vec<Vec<u64>>| {
        move |c: &mut nectar_net::MemChannel| -> Vec<Vec<u64>> {
            let mut b = SecureBackend::setup(role, c, Prg::new([role as u8 + 11; 16]), opts).unwrap();
            items
                .iter()
                .zip(&shares)
                .map(|(it, x)| {
                    let y = it.case.secure(&mut b, x).unwrap_or_else(|e| panic!("secure {}: {e}", it.name));
                    assert_eq!(b.format(), FP, "{}: format restored", it.name);
                    y
                })
                .collect()
        }
    };
    let (a, b) = run_pair(party(Role::Server, shares0), party(Role::Client, shares1));
    assert_eq!(a, b, "both parties reveal the same");
    twins.into_iter().zip(a).collect()
}

/// Checks twin vs secure within each item's tolerance. Each item's worst differences are
/// printed first (`--nocapture` shows them, to re-derive a tolerance), then asserted: there is
/// no mode that skips the assertions.
fn check(opts: SecureOpts, items: Vec<Item>) {
    let out = run_items(opts, &items);
    for (it, (tw, se)) in items.iter().zip(out) {
        assert_eq!(tw.len(), se.len(), "{}", it.name);
        let d: Vec<i64> = tw.iter().zip(&se).map(|(a, b)| signed(b.wrapping_sub(*a), FP.l()).abs()).collect();
        let worst = d.iter().copied().max().unwrap_or(0);
        let got = FP.decode_vec(&se);
        let fe: Vec<f64> = match &it.float {
            Some((want, _)) => {
                assert_eq!(want.len(), se.len(), "{}", it.name);
                want.iter().zip(&got).map(|(w, g)| (w - g).abs()).collect()
            }
            None => Vec::new(),
        };
        let fworst = fe.iter().copied().fold(0.0f64, f64::max);
        println!(
            "{:<28} n = {:>5}  max |secure − twin| = {worst:>6} LSB (tol {:>6})  max |secure − f64| = {fworst:.2e}",
            it.name,
            tw.len(),
            it.tol
        );
        for (i, (a, b)) in tw.iter().zip(&se).enumerate() {
            assert!(
                d[i] <= it.tol,
                "{}: element {i} (x = {:?}): twin {} secure {} differ by {} > {} LSB",
                it.name,
                it.xs.get(i),
                signed(*a, FP.l()),
                signed(*b, FP.l()),
                d[i],
                it.tol
            );
        }
        if let Some((want, ftol)) = &it.float {
            for (i, e) in fe.iter().enumerate() {
                assert!(*e <= *ftol, "{}: element {i} (x = {:?}): f64 {} secure {} (err {e} > {ftol})", it.name, it.xs.get(i), want[i], got[i]);
            }
        }
    }
}

fn grid(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    (0..n).map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64).collect()
}

fn opts() -> SecureOpts {
    SecureOpts::test()
}

#[test]
fn primitives_match_twin() {
    let xs = grid(-100.0, 100.0, 301);
    let items = vec![
        item("add/sub/neg/add_const", xs.clone(), 0, case!(|b, x| {
            let c = enc(b, 1.25)?;
            let y = b.constant(&[int(b, 5)])?;
            let y = b.gather(&y, &vec![0; x.len()])?;
            let s = b.add(x, &y)?;
            let s = b.sub(&s, x)?;
            let s = b.add(&s, x)?;
            let s = b.neg(&s)?;
            let s = b.add_const(&s, &[c])?;
            let cat = b.concat(&[&s, x])?;
            let g = b.sum_groups(&cat, 2)?;
            let r = b.concat(&[&s, &g])?;
            b.reveal(&r)
        })),
        item("mul_const shift 0", xs.clone(), 0, case!(|b, x| {
            let y = b.mul_const(x, &[int(b, -3)], 0)?;
            b.reveal(&y)
        })),
        // one truncation: {0, −1}
        item("mul_const shift 18", xs.clone(), 1, case!(|b, x| {
            let y = b.mul_const(x, &[enc(b, 0.7)?], 18)?;
            b.reveal(&y)
        })),
        item("trunc 5", xs.clone(), 1, case!(|b, x| {
            let y = b.trunc(x, 5)?;
            b.reveal(&y)
        })),
        // product (exact by OT) + truncation {0, −1}
        item("mul", xs.clone(), 1, case!(|b, x| {
            let y = b.constant(&PlainBackend::new(FP).unwrap().encode(&grid(-100.0, 100.0, 301).iter().map(|v| 0.37 * v - 3.1).collect::<Vec<_>>())?)?;
            let z = b.mul(x, &y)?;
            b.reveal(&z)
        })),
        item("square", xs.clone(), 1, case!(|b, x| {
            let y = b.square(x)?;
            b.reveal(&y)
        })),
        // comparisons: exact for k = 0 (off-threshold and on-threshold alike)
        item("less_than_const k=0", xs.clone(), 0, case!(|b, x| {
            let t = [enc(b, -50.0)?, enc(b, 0.0)?, enc(b, 33.0 + 1.0 / 3.0)?];
            let bits = b.less_than_const(x, &t, 0)?;
            let cat = b.concat_bits(&[&bits[0], &bits[1], &bits[2]])?;
            let m = b.msb(x)?;
            let m2 = b.not(&m)?;
            let a = b.and(&bits[0], &bits[2])?;
            let xo = b.xor(&bits[1], &m2)?;
            let g = b.gather_bits(&xo, &(0..x.len()).rev().collect::<Vec<_>>())?;
            let all = b.concat_bits(&[&cat, &m, &a, &g])?;
            Ok(b.reveal_bits(&all)?.into_iter().map(|v| v as u64).collect())
        })),
        item("b2a/mux", xs.clone(), 0, case!(|b, x| {
            let m = b.msb(x)?;
            let a = b.b2a(&m)?;
            let y = b.mux(&m, x)?;
            let r = b.concat(&[&a, &y])?;
            b.reveal(&r)
        })),
        // x is a multiple of 2^-18 · 1 away from the thresholds by ≥ 2^14 LSB: the approximate
        // comparison (k = 14) equals the twin's there
        item("less_than_const k=14", grid(-90.0, 90.0, 181), 0, case!(|b, x| {
            let t = [enc(b, -4.5)?, enc(b, 0.5)?];
            let bits = b.less_than_const(x, &t, 14)?;
            let cat = b.concat_bits(&[&bits[0], &bits[1]])?;
            Ok(b.reveal_bits(&cat)?.into_iter().map(|v| v as u64).collect())
        })),
        // reduce then extend back: exact for |x| < 2^(32−2) raw, i.e. |x| < 4096 reals
        item("reduce/extend 64→32→64", xs.clone(), 0, case!(|b, x| {
            let r = b.reduce(x, 32)?;
            let e = b.extend(&r, 32, 64)?;
            b.reveal(&e)
        })),
    ];
    check(opts(), items);
}

/// Inputs on `[lo, hi]` at least `gap` away from every pivot in `ts` (where approximate
/// comparisons may legitimately pick the neighbouring segment).
fn off_pivots(lo: f64, hi: f64, n: usize, ts: &[f64], gap: f64) -> Vec<f64> {
    grid(lo, hi, n).into_iter().filter(|x| ts.iter().all(|t| (x - t).abs() > gap)).collect()
}

/// Deterministic pseudo-random reals in `[lo, hi)`.
fn randu(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

// ---- tolerances (twin vs secure, raw LSB of the (64, 18) output): the error models of
// `nectar_nn::tolerance`, shared with `nectar bench nn` ----
use nectar_nn::tolerance::{exp_taylor4_tol, softmax_tol, ELU_TOL, EXP_MIXED_TOL, EXP_TOL, NORM_TOL, RECIP_TOL, RSQRT_TOL};

#[test]
fn activations_match_twin_and_f64() {
    let p = gelu::SEG4_BUMBLEBEE;
    // approximate comparisons (BUMBLEBEE_LESS, precision 4) may pick the neighbouring segment
    // within 2^(f−4) LSB = 2^−4 of a pivot: the LSB tolerances hold off the pivots, and at the
    // pivots only the f64 bound (approximation error + segment jump) applies
    let gap = 1.0 / 16.0;
    let pivots: Vec<f64> = p.t.iter().flat_map(|&t| [t - 0.05, t - 1e-5, t, t + 1e-5, t + 0.05]).collect();
    let ge = off_pivots(-16.0, 0.0, 241, &[-14.0], gap);
    let ulp = 1.0 / FP.scale();
    let items = vec![
        item("gelu seg4 at pivots", pivots, i64::MAX, case!(|b, x| {
            let y = gelu::seg4_gelu(b, x, &gelu::SEG4_BUMBLEBEE)?;
            b.reveal(&y)
        }))
        .float(gelu::gelu_f64, 3.5e-2),
        item("exp mixed", ge.clone(), EXP_MIXED_TOL, case!(|b, x| {
            let y = exp::exp_neg_mixed(b, x, &exp::EXP_BUMBLEBEE)?;
            b.reveal(&y)
        }))
        .float(|v: f64| v.exp(), 2e-2 + EXP_MIXED_TOL as f64 * ulp),
        item("elu", off_pivots(-16.0, 4.0, 241, &[-14.0, 0.0], gap), ELU_TOL, case!(|b, x| {
            let y = nectar_nn::elu::elu(b, x, 1.0, &exp::EXP_BUMBLEBEE)?;
            b.reveal(&y)
        }))
        .float(|v: f64| nectar_nn::elu::elu_f64(v, 1.0), 5e-3 + ELU_TOL as f64 * ulp),
        item("rsqrt x ≥ 1", randu(241, 1.0, 60000.0, 3), RSQRT_TOL, case!(|b, x| {
            let y = rsqrt::rsqrt(b, x, &rsqrt::RSQRT_LAYERNORM, &rsqrt::BY_FOUR)?;
            b.reveal(&y)
        }))
        .float(|v: f64| 1.0 / v.sqrt(), 2e-3),
        // x < 1: the final scaling by 2^−e ≤ 2^9 multiplies the Newton rounding (≤ 12) first
        item("rsqrt x < 1", randu(241, 1e-4, 1.0, 4), 12 * 512 + 2, case!(|b, x| {
            let y = rsqrt::rsqrt(b, x, &rsqrt::RSQRT_LAYERNORM, &rsqrt::BY_FOUR)?;
            b.reveal(&y)
        }))
        .float(|v: f64| 1.0 / v.sqrt(), 2e-3 * 100.0f64.sqrt()),
        // `rsqrt = newton2` (powers of two, two steps) on the same inputs and bounds
        item("rsqrt newton2 x ≥ 1", randu(241, 1.0, 60000.0, 3), RSQRT_TOL, case!(|b, x| {
            let y = rsqrt::rsqrt(b, x, &rsqrt::newton2::params(&rsqrt::RSQRT_LAYERNORM), &rsqrt::BY_TWO)?;
            b.reveal(&y)
        }))
        .float(|v: f64| 1.0 / v.sqrt(), 2e-3),
        item("rsqrt newton2 x < 1", randu(241, 1e-4, 1.0, 4), 12 * 512 + 2, case!(|b, x| {
            let y = rsqrt::rsqrt(b, x, &rsqrt::newton2::params(&rsqrt::RSQRT_LAYERNORM), &rsqrt::BY_TWO)?;
            b.reveal(&y)
        }))
        .float(|v: f64| 1.0 / v.sqrt(), 2e-3 * 100.0f64.sqrt()),
        // `rsqrt = newton1` (eighth-octave guess, one step in three layers): its own bound on
        // the LayerNorm's domain, on both ranges; against f64 the inputs' own rounding at f = 18
        // dominates (as for newton2: the same float bounds)
        item("rsqrt newton1 x ≥ 1", randu(241, 1.0, 60000.0, 3), rsqrt::newton1::tolerance_lsb(&rsqrt::RSQRT_LAYERNORM), case!(|b, x| {
            let y = rsqrt::newton1::rsqrt1(b, x, &rsqrt::RSQRT_LAYERNORM)?;
            b.reveal(&y)
        }))
        .float(|v: f64| 1.0 / v.sqrt(), 2e-3),
        item("rsqrt newton1 x < 1", randu(241, 1e-4, 1.0, 4), rsqrt::newton1::tolerance_lsb(&rsqrt::RSQRT_LAYERNORM), case!(|b, x| {
            let y = rsqrt::newton1::rsqrt1(b, x, &rsqrt::RSQRT_LAYERNORM)?;
            b.reveal(&y)
        }))
        .float(|v: f64| 1.0 / v.sqrt(), 2e-3 * 100.0f64.sqrt()),
    ];
    check(opts(), items);
}

#[test]
fn row_operators_match_twin_and_f64() {
    let (rows, cols) = (6, 48);
    // softmax: random rows, one row with equal maxima, one partially masked, one fully masked
    let mut sx = randu(rows * cols, -6.0, 6.0, 5);
    for c in [3, 17, 40] {
        sx[cols + c] = 7.5;
    }
    let mut mask = vec![false; rows * cols];
    for c in 0..cols {
        mask[2 * cols + c] = c > 20; // causal-like
        mask[3 * cols + c] = true; // fully masked: uniform
    }
    let m2 = mask.clone();
    let smax_want = softmax::softmax_f64(&sx, cols, Some(&mask));
    // LayerNorm / RMSNorm: random rows, one constant row (variance 0)
    let mut lx = randu(rows * cols, -3.0, 3.0, 9);
    for c in 0..cols {
        lx[4 * cols + c] = 1.75;
    }
    let gamma: Vec<f64> = (0..cols).map(|c| 0.5 + c as f64 / cols as f64).collect();
    let beta: Vec<f64> = (0..cols).map(|c| 0.1 * c as f64 / cols as f64 - 0.05).collect();
    let ln_want = layernorm::layernorm_f64(&lx, cols, &gamma, &beta, 1e-5);
    let rms_want = rmsnorm::rmsnorm_f64(&lx, cols, &gamma, 1e-5);
    // argmax with ties (first index wins)
    let mut ax = randu(rows * cols, -50.0, 50.0, 11);
    for c in [5, 9, 30] {
        ax[c] = 60.0;
    }
    let mut am_want = vec![];
    for row in ax.chunks(cols) {
        let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        am_want.push(row.iter().position(|&v| v == mx).unwrap() as f64);
    }
    // token ids → one-hot over a vocabulary of 40
    let ids: Vec<f64> = [0, 39, 7, 7, 22].iter().map(|&i| i as f64 / FP.scale()).collect();
    let mut oh_want = vec![0.0; ids.len() * 40];
    for (r, &i) in [0usize, 39, 7, 7, 22].iter().enumerate() {
        oh_want[r * 40 + i] = 1.0 / FP.scale();
    }
    let items = vec![
        item("softmax (masked, ties)", sx.clone(), 3 * EXP_TOL, Box::new(SoftmaxCase { rows, cols, mask: m2 })).float_vec(smax_want, 5e-3 + (3 * EXP_TOL) as f64 / FP.scale()),
        narrow_softmax_item("softmax narrow taylor4 (masked, ties)"),
        item("layernorm", lx[..4 * cols].to_vec(), NORM_TOL, Box::new(NormCase { rows: 4, cols, gamma: gamma.clone(), beta: Some(beta.clone()) }))
            .float_vec(ln_want[..4 * cols].to_vec(), 1e-2 + NORM_TOL as f64 / FP.scale()),
        // variance 0: the twin returns β exactly; the secure x − μ is 0 or −1 LSB (one
        // truncation), the variance ≥ −2 LSB so var + ε ≥ 1 LSB stays in rsqrt's domain, and
        // the output is β − {0, 1 LSB}·rsqrt(var + ε)·γ: within 2^(f/2)·max γ + 8 LSB of β
        item("layernorm constant row", lx[4 * cols..5 * cols].to_vec(), 512 * 3 / 2 + 8, Box::new(NormCase { rows: 1, cols, gamma: gamma.clone(), beta: Some(beta.clone()) }))
            .float_vec(beta.clone(), (512.0 * 1.5 + 8.0) / FP.scale()),
        item("rmsnorm", lx.clone(), NORM_TOL, Box::new(NormCase { rows, cols, gamma: gamma.clone(), beta: None }))
            .float_vec(rms_want, 1e-2 + NORM_TOL as f64 / FP.scale()),
        item("argmax (ties)", ax.clone(), 0, Box::new(ArgmaxCase { rows, cols, narrow: false })).float_vec(
            am_want.iter().map(|&i| i / FP.scale()).collect(),
            0.0,
        ),
        item("argmax narrow (ties)", ax.clone(), 0, Box::new(ArgmaxCase { rows, cols, narrow: true })).float_vec(
            am_want.iter().map(|&i| i / FP.scale()).collect(),
            0.0,
        ),
        item("one-hot", ids, 0, case!(|b, x| {
            let y = nectar_nn::onehot::one_hot(b, x, 40)?;
            b.reveal(&y)
        }))
        .float_vec(oh_want, 0.0),
    ];
    check(opts(), items);
}

/// `softmax = narrow`, `coarse` or `grid` with `exp = taylor4` (the coarse and grid forms
/// clipping in `Z_2^34`, their reciprocal's domain from 1/2; grid's reciprocal in `Z_2^45`).
struct RingSoftmaxCase {
    rows: usize,
    cols: usize,
    mask: Vec<bool>,
    form: softmax::SoftmaxForm,
}
impl RingSoftmaxCase {
    fn go<B: Backend<Val = Vec<u64>, Bit = Vec<bool>>>(&self, b: &mut B, x: &Vec<u64>) -> R {
        let coarse = matches!(self.form, softmax::SoftmaxForm::Coarse | softmax::SoftmaxForm::Grid);
        let clip = exp::ExpParams { clip_l: coarse.then_some(softmax::COARSE_CMP_L), ..exp::EXP_TAYLOR4 };
        let recip = match coarse {
            true => softmax::coarse_recip(self.cols, reciprocal::RECIP_SOFTMAX),
            false => softmax::recip_for_rows(self.cols, reciprocal::RECIP_SOFTMAX),
        };
        let y = softmax::softmax_in_ring(
            b,
            x,
            self.rows,
            self.cols,
            Some(&self.mask),
            self.form,
            self.form == softmax::SoftmaxForm::Grid,
            |b, d| exp::exp_neg_taylor4(b, d, &clip),
            |b, s| reciprocal::reciprocal(b, s, &recip),
        )?;
        if b.format() != FP {
            return Err(NnError::BadArgument("softmax_in_ring left the narrow format set".into()));
        }
        b.reveal(&y)
    }
}
impl Case for RingSoftmaxCase {
    fn plain(&self, b: &mut PlainBackend, x: &Vec<u64>) -> R {
        self.go(b, x)
    }
    fn secure(&self, b: &mut SecureBackend<'_>, x: &Vec<u64>) -> R {
        self.go(b, x)
    }
}

struct SoftmaxCase {
    rows: usize,
    cols: usize,
    mask: Vec<bool>,
}
impl SoftmaxCase {
    fn go<B: Backend<Val = Vec<u64>, Bit = Vec<bool>>>(&self, b: &mut B, x: &Vec<u64>) -> R {
        let y = softmax::softmax(b, x, self.rows, self.cols, Some(&self.mask), &softmax::SOFTMAX_BUMBLEBEE)?;
        b.reveal(&y)
    }
}
impl Case for SoftmaxCase {
    fn plain(&self, b: &mut PlainBackend, x: &Vec<u64>) -> R {
        self.go(b, x)
    }
    fn secure(&self, b: &mut SecureBackend<'_>, x: &Vec<u64>) -> R {
        self.go(b, x)
    }
}

struct NormCase {
    rows: usize,
    cols: usize,
    gamma: Vec<f64>,
    beta: Option<Vec<f64>>,
}
impl NormCase {
    fn go<B: Backend<Val = Vec<u64>, Bit = Vec<bool>>>(&self, b: &mut B, x: &Vec<u64>) -> R {
        let g = b.constant(&FP.encode_vec::<u64>(&self.gamma)?)?;
        let y = match &self.beta {
            Some(beta) => {
                let be = b.constant(&FP.encode_vec::<u64>(beta)?)?;
                layernorm::layernorm(b, x, self.rows, self.cols, &g, &be, &layernorm::LAYERNORM_DEFAULT)?
            }
            None => rmsnorm::rmsnorm(b, x, self.rows, self.cols, &g, &layernorm::LAYERNORM_DEFAULT)?,
        };
        b.reveal(&y)
    }
}
impl Case for NormCase {
    fn plain(&self, b: &mut PlainBackend, x: &Vec<u64>) -> R {
        self.go(b, x)
    }
    fn secure(&self, b: &mut SecureBackend<'_>, x: &Vec<u64>) -> R {
        self.go(b, x)
    }
}

struct ArgmaxCase {
    rows: usize,
    cols: usize,
    /// `max::argmax_rows_narrow` instead of `max::argmax_rows`.
    narrow: bool,
}
impl ArgmaxCase {
    fn go<B: Backend + ?Sized>(&self, b: &mut B, x: &B::Val) -> Result<B::Val, NnError> {
        let f = if self.narrow { max::argmax_rows_narrow::<B> } else { max::argmax_rows::<B> };
        Ok(f(b, x, self.rows, self.cols)?.1)
    }
}
impl Case for ArgmaxCase {
    fn plain(&self, b: &mut PlainBackend, x: &Vec<u64>) -> R {
        let i = self.go(b, x)?;
        b.reveal(&i)
    }
    fn secure(&self, b: &mut SecureBackend<'_>, x: &Vec<u64>) -> R {
        let i = self.go(b, x)?;
        b.reveal(&i)
    }
}

/// bOLEe products (BumbleBee's default): the same operators with `bole_min_len = 0`, so every
/// product goes through Π_mul / Π_square (ring error {0, ±1} before the truncation).
/// A registered protocol as a test case: one closure serves the twin and the secure party
/// (both are a `DynBackend`).
struct Registered(Box<dyn Fn(&mut DynBackend<'_>, &Vec<u64>) -> Result<Vec<u64>, NnError> + Sync>);

impl Case for Registered {
    fn plain(&self, b: &mut PlainBackend, x: &Vec<u64>) -> R {
        let y = (self.0)(b, x)?;
        b.reveal(&y)
    }
    fn secure(&self, b: &mut SecureBackend<'_>, x: &Vec<u64>) -> R {
        let y = (self.0)(b, x)?;
        b.reveal(&y)
    }
}

/// Inputs of a generated case: a grid of `[lo, hi]` and random points, all off the pivots.
fn registry_inputs(lo: f64, hi: f64, pivots: &[f64], seed: u64) -> Vec<f64> {
    let gap = nectar_nn::tolerance::PIVOT_GAP;
    let mut xs = off_pivots(lo, hi, 241, pivots, gap);
    xs.extend(randu(60, lo, hi, seed).into_iter().filter(|x| pivots.iter().all(|t| (x - t).abs() > gap)));
    xs
}

/// bOLEe products for every length (the default backend's products above the crossover).
fn bole_opts() -> SecureOpts {
    SecureOpts::test().with_mul(MulProtocol::Bole).with_bole_min_len(0)
}


/// Generated from the registry: every GeLU protocol, both forms, every ring it runs in, on
/// [`gelu::DOMAIN`] off its pivots plus random points; twin vs protocol within the bound it
/// states, protocol vs the exact GeLU within its stated approximation error plus that bound.
fn gelu_items() -> Vec<Item> {
    use nectar_nn::mixed::ActRing;
    let (lo, hi) = gelu::DOMAIN;
    let ulp = 1.0 / FP.scale();
    let mut items = Vec::new();
    for p in gelu::Gelu::all() {
        for ring in [ActRing::Full, ActRing::Mixed] {
            if p.supports(ring).is_err() {
                continue;
            }
            for form in gelu::GeluForm::ALL {
                let xs = registry_inputs(lo, hi, &p.pivots(), 17);
                let tol = p.tolerance(form, ring).unwrap();
                let ftol = p.approx_error(form, ring).unwrap() + tol as f64 * ulp;
                items.push(
                    item(format!("gelu={p} {form:?} {ring:?}"), xs, tol, Box::new(Registered(Box::new(move |b, x| p.eval(b, x, form, ring))))).float(move |v| nectar_math::real::gelu(v, form), ftol),
                );
            }
        }
    }
    items
}


/// Generated from the registry as [`gelu_items`]: every SiLU protocol in every ring it runs in.
fn silu_items() -> Vec<Item> {
    use nectar_nn::mixed::ActRing;
    let (lo, hi) = silu::DOMAIN;
    let ulp = 1.0 / FP.scale();
    let mut items = Vec::new();
    for p in silu::Silu::all() {
        for ring in [ActRing::Full, ActRing::Mixed] {
            if p.supports(ring).is_err() {
                continue;
            }
            let xs = registry_inputs(lo, hi, &p.pivots(), 19);
            let tol = p.tolerance(ring).unwrap();
            let ftol = p.approx_error(ring).unwrap() + tol as f64 * ulp;
            items.push(item(format!("silu={p} {ring:?}"), xs, tol, Box::new(Registered(Box::new(move |b, x| p.eval(b, x, ring))))).float(nectar_math::real::silu, ftol));
        }
    }
    items
}

#[test]
fn every_gelu_protocol_matches_twin_and_f64() {
    check(opts(), gelu_items());
}

#[test]
fn every_gelu_protocol_matches_twin_and_f64_with_bole_products() {
    check(bole_opts(), gelu_items());
}


/// Generated from the registry as [`gelu_items`]: every exponential on [`exp::DOMAIN`].
fn exp_items() -> Vec<Item> {
    let (lo, hi) = exp::DOMAIN;
    let ulp = 1.0 / FP.scale();
    exp::Exp::all()
        .map(|p| {
            let xs = registry_inputs(lo, hi, &p.pivots(), 23);
            let tol = p.tolerance(FP).unwrap();
            let ftol = p.approx_error().unwrap() + tol as f64 * ulp;
            item(format!("exp={p}"), xs, tol, Box::new(Registered(Box::new(move |b, x| p.eval(b, x, None))))).float(f64::exp, ftol)
        })
        .collect()
}

/// Generated from the registry: every reciprocal on [`reciprocal::RANGE`].
fn reciprocal_items() -> Vec<Item> {
    let r = reciprocal::RANGE;
    let ulp = 1.0 / FP.scale();
    reciprocal::Reciprocal::all()
        .map(|p| {
            let xs = registry_inputs(r.lo, r.hi - 1.0, &[], 29);
            let tol = p.tolerance(&r, FP).unwrap();
            let ftol = p.approx_error(&r).unwrap() + tol as f64 * ulp;
            item(format!("reciprocal={p}"), xs, tol, Box::new(Registered(Box::new(move |b, x| p.eval(b, x, &r))))).float(|v| 1.0 / v, ftol)
        })
        .collect()
}

/// Generated from the registry: every rsqrt on [`rsqrt::RANGE`].
fn rsqrt_items() -> Vec<Item> {
    let r = rsqrt::RANGE;
    let ulp = 1.0 / FP.scale();
    rsqrt::Rsqrt::all()
        .map(|p| {
            let xs = registry_inputs(r.lo, r.hi, &[], 31);
            let tol = p.tolerance(&r, FP).unwrap();
            let ftol = p.approx_error(&r).unwrap() + tol as f64 * ulp;
            item(format!("rsqrt={p}"), xs, tol, Box::new(Registered(Box::new(move |b, x| p.eval(b, x, &r))))).float(|v| 1.0 / v.sqrt(), ftol)
        })
        .collect()
}

#[test]
fn every_rsqrt_protocol_matches_twin_and_f64() {
    check(opts(), rsqrt_items());
    check(bole_opts(), rsqrt_items());
}

/// Generated from the registry: every softmax composition (`softmax::compositions`) on rows of
/// 16 scores in `[−6, 6]` with a causal-style mask; twin vs protocol within the bound it states
/// (its float error is the exponential's and reciprocal's, tested per protocol above).
fn softmax_items() -> Vec<Item> {
    let (rows, cols) = (6, 16);
    let mask: Vec<bool> = (0..rows * cols).map(|i| i % cols > 10 + i / cols).collect();
    softmax::compositions()
        .into_iter()
        .map(|(p, e, r)| {
            let xs = randu(rows * cols, -6.0, 6.0, 37);
            let tol = p.tolerance(e, r, cols, FP).unwrap();
            let mask = mask.clone();
            let run = move |b: &mut DynBackend<'_>, x: &Vec<u64>| p.eval(b, x, &softmax::SoftmaxCall { rows, cols, mask: Some(&mask) }, e, r);
            item(format!("softmax={p}+exp={e}+reciprocal={r}"), xs, tol, Box::new(Registered(Box::new(run))))
        })
        .collect()
}

#[test]
fn every_softmax_composition_matches_twin() {
    check(opts(), softmax_items());
    check(bole_opts(), softmax_items());
}

/// Generated from the registry: every norm formulation a share-level backend runs, with every
/// rsqrt it accepts (`norm::compositions`), LayerNorm and RMSNorm of rows of 16 in `[−4, 4]` with
/// `γ = 1`, `β = 0`; twin vs protocol within the bound it states, and vs the f64 norm.
fn norm_items() -> Vec<Item> {
    let (rows, cols) = (4, 16);
    let eps = layernorm::LAYERNORM_DEFAULT.eps;
    let mut items = Vec::new();
    for (p, r) in nectar_nn::norm::compositions() {
        for layer in [true, false] {
            let xs = randu(rows * cols, -4.0, 4.0, 41);
            let tol = p.tolerance(r, cols, FP).unwrap();
            let (ones, zeros) = (vec![1.0; cols], vec![0.0; cols]);
            let want = match layer {
                true => layernorm::layernorm_f64(&xs, cols, &ones, &zeros, eps),
                false => rmsnorm::rmsnorm_f64(&xs, cols, &ones, eps),
            };
            let run = move |b: &mut DynBackend<'_>, x: &Vec<u64>| {
                let g_raw = FP.encode_vec::<u64>(&vec![1.0; cols])?;
                let g = b.constant(&g_raw)?;
                let be = b.constant(&vec![0; cols])?;
                let call = nectar_nn::norm::NormCall { rows, cols, eps, gamma: &g, gamma_server: Some(&g_raw), beta: layer.then_some(&be), stats_shift: 0 };
                p.eval(b, x, &call, r)
            };
            let name = format!("{}={p}+rsqrt={r}", if layer { "layernorm" } else { "rmsnorm" });
            // 1e-2: the norms' twin error `accuracy.rs::table_bounds` asserts, plus the stated bound
            items.push(item(name, xs, tol, Box::new(Registered(Box::new(run)))).float_vec(want, 1e-2 + tol as f64 / FP.scale()));
        }
    }
    items
}

#[test]
fn every_norm_composition_matches_twin_and_f64() {
    check(opts(), norm_items());
    check(bole_opts(), norm_items());
}

#[test]
fn every_reciprocal_protocol_matches_twin_and_f64() {
    check(opts(), reciprocal_items());
    check(bole_opts(), reciprocal_items());
}

#[test]
fn every_exp_protocol_matches_twin_and_f64() {
    check(opts(), exp_items());
}

#[test]
fn every_exp_protocol_matches_twin_and_f64_with_bole_products() {
    check(bole_opts(), exp_items());
}

#[test]
fn every_silu_protocol_matches_twin_and_f64() {
    check(opts(), silu_items());
}

#[test]
fn every_silu_protocol_matches_twin_and_f64_with_bole_products() {
    check(bole_opts(), silu_items());
}

#[test]
fn bole_products_match_twin() {
    let o = bole_opts();
    let items = vec![
        item("bole mul", grid(-100.0, 100.0, 201), 2, case!(|b, x| {
            let y = b.add_const(x, &[enc(b, 0.5)?])?;
            let z = b.mul(x, &y)?;
            b.reveal(&z)
        })),
        item("bole square", grid(-100.0, 100.0, 201), 2, case!(|b, x| {
            let z = b.square(x)?;
            b.reveal(&z)
        })),
        // mul(x, x): the header's second operand reuses the query its first one sends fresh
        item("bole mul self", grid(-100.0, 100.0, 201), 2, case!(|b, x| {
            let z = b.mul(x, x)?;
            b.reveal(&z)
        })),
        // softmax = narrow (45-bit ring, narrow bOLEe key set) with exp = taylor4
        narrow_softmax_item("bole softmax narrow taylor4"),
        // softmax = coarse (the default suite's): on the comparison grid, then off it
        coarse_softmax_item("bole softmax coarse taylor4 (grid)", true),
        coarse_softmax_item("bole softmax coarse taylor4 (random)", false),
        coarse_max_item(),
        grid_softmax_item(),
        grid_max_item(),
    ];
    check(o, items);
}

/// `mul = bole-duplex`: products of 2 chunks or more split between the parties (3 chunks of
/// 8192 here: P0 queries the first two, P1 the third), in the full ring and the narrow key set
/// (sq8's polynomial in `Z_2^45`), with query reuse across a square and a product and within
/// one product (`mul(x, x)`): the same bounds as the simplex products.
#[test]
fn duplex_bole_products_match_twin() {
    use nectar_nn::gelu::GeluProtocol;
    let o = bole_opts().with_bole_duplex(true);
    let xs = grid(-100.0, 100.0, 20_001);
    let (lo, hi) = gelu::DOMAIN;
    let sq8 = &gelu::sq8::Sq8;
    let gx = off_pivots(lo, hi, 17_001, &sq8.pivots(), nectar_nn::tolerance::PIVOT_GAP);
    let gtol = sq8.tolerance(gelu::GeluForm::Erf, nectar_nn::mixed::ActRing::Full).unwrap();
    let gf = sq8.approx_error(gelu::GeluForm::Erf, nectar_nn::mixed::ActRing::Full).unwrap() + gtol as f64 / FP.scale();
    let items = vec![
        item("duplex mul", xs.clone(), 2, case!(|b, x| {
            let y = b.add_const(x, &[enc(b, 0.5)?])?;
            let z = b.mul(x, &y)?;
            b.reveal(&z)
        })),
        item("duplex square", xs.clone(), 2, case!(|b, x| {
            let z = b.square(x)?;
            b.reveal(&z)
        })),
        item("duplex mul self", xs.clone(), 2, case!(|b, x| {
            let z = b.mul(x, x)?;
            b.reveal(&z)
        })),
        // x's halves are queried by the square and reused by the product
        item("duplex square then mul", xs.clone(), 4, case!(|b, x| {
            let s = b.square(x)?;
            let y = b.add_const(x, &[enc(b, 0.5)?])?;
            let z = b.mul(x, &y)?;
            let w = b.add(&s, &z)?;
            b.reveal(&w)
        })),
        item("duplex gelu sq8 (narrow key set)", gx, gtol, Box::new(Registered(Box::new(|b, x| sq8.eval(b, x, gelu::GeluForm::Erf, nectar_nn::mixed::ActRing::Full)))))
            .float(|v| nectar_math::real::gelu(v, gelu::GeluForm::Erf), gf),
    ];
    check(o, items);
}

/// The duplex products do cross: on a 3-chunk square each party sends query ciphertexts and
/// answers the other's in [`nectar_net::Channel::send_while_receiving`] (the server two
/// chunks' queries and one chunk's answers, the client the converse), where the simplex
/// product sends none that way; the frames of 100 kB or more (ciphertexts, and the
/// truncation's larger message, sent by either party) add up to the same in both.
#[test]
fn duplex_bole_splits_the_queries() {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;
    struct Big<'a> {
        inner: &'a mut nectar_net::MemChannel,
        big: Arc<AtomicU64>,
        duplex: Arc<AtomicU64>,
    }
    impl nectar_net::Channel for Big<'_> {
        fn send(&mut self, msg: &[u8]) -> Result<(), nectar_net::NetError> {
            if msg.len() >= 100_000 {
                self.big.fetch_add(msg.len() as u64, Relaxed);
            }
            self.inner.send(msg)
        }
        fn recv(&mut self) -> Result<Vec<u8>, nectar_net::NetError> {
            self.inner.recv()
        }
        fn flush(&mut self) -> Result<(), nectar_net::NetError> {
            self.inner.flush()
        }
        fn stats(&self) -> nectar_net::Stats {
            self.inner.stats()
        }
        // (an unbounded in-memory queue: both parties may send first)
        fn send_while_receiving(&mut self, mine: &[Vec<u8>], count: usize, _first: bool) -> Result<Vec<Vec<u8>>, nectar_net::NetError> {
            self.duplex.fetch_add(mine.iter().map(|m| m.len() as u64).sum(), Relaxed);
            for m in mine {
                self.send(m)?;
            }
            (0..count).map(|_| self.recv()).collect()
        }
    }
    let n = 20_000;
    let sent = |duplex: bool| {
        let o = bole_opts().with_bole_duplex(duplex);
        let party = move |role: Role| {
            move |c: &mut nectar_net::MemChannel| -> (u64, u64) {
                let (big, dx) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
                let mut ch = Big { inner: c, big: Arc::clone(&big), duplex: Arc::clone(&dx) };
                let mut b = SecureBackend::setup(role, &mut ch, Prg::new([role as u8 + 3; 16]), o).unwrap();
                let x: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
                let before = big.load(Relaxed);
                b.square(&x).unwrap();
                (big.load(Relaxed) - before, dx.load(Relaxed))
            }
        };
        run_pair(party(Role::Server), party(Role::Client))
    };
    let ((s0, sd0), (c0, cd0)) = sent(false);
    let ((s1, sd1), (c1, cd1)) = sent(true);
    println!("frames ≥ 100 kB: simplex server {s0} client {c0}; duplex server {s1} client {c1} (in duplex steps {sd1}, {cd1})");
    assert_eq!((sd0, cd0), (0, 0), "simplex products send nothing duplex");
    // 6 queries (186-bit ciphertexts) + 3 answers (2 × 62 bits) against 3 + 6
    assert!(sd1 > cd1 && cd1 > 500_000, "duplex moved nothing: {sd1} {cd1}");
    assert!((s0 + c0).abs_diff(s1 + c1) < 1_000, "the same bytes in total");
}

/// Rows of `cols` scores for the narrow / coarse softmax items: random in [−7, 7] with two equal
/// maxima (8) in row 0, row 2 causal-masked after column 12, row 3 fully masked (the rows past
/// 3 unmasked).
fn softmax_rows(rows: usize, cols: usize, seed: u64) -> (Vec<f64>, Vec<bool>) {
    let mut sx = randu(rows * cols, -7.0, 7.0, seed);
    for c in [2, 19] {
        sx[c] = 8.0;
    }
    let mut mask = vec![false; rows * cols];
    for c in 0..cols {
        mask[2 * cols + c] = c > 12;
        mask[3 * cols + c] = true;
    }
    (sx, mask)
}

/// The narrow composition's twin-vs-secure bound: `softmax_tol(exp_taylor4_tol((45, 18)), RECIP_TOL)`.
fn narrow_softmax_tol() -> i64 {
    let narrow = FixedPoint::new(softmax::NARROW_L, FP.f()).expect("the narrow format");
    softmax_tol(exp_taylor4_tol(narrow, &exp::EXP_TAYLOR4).expect("taylor4 in (45, 18)"), RECIP_TOL)
}

/// `softmax = narrow` with `exp = taylor4` on rows of 40 (random, equal
/// maxima, causal-masked, fully masked): within `softmax_tol(exp_taylor4_tol((45, 18)),
/// RECIP_TOL)` of the twin and within taylor4's approximation error (7.5e−5, renormalised) of
/// f64.
fn narrow_softmax_item(name: &'static str) -> Item {
    let (rows, cols) = (4, 40);
    let (sx, mask) = softmax_rows(rows, cols, 31);
    let want = softmax::softmax_f64(&sx, cols, Some(&mask));
    let tol = narrow_softmax_tol();
    assert_eq!(tol, 60, "softmax_tol(20, 8)");
    let case = Box::new(RingSoftmaxCase { rows, cols, mask, form: softmax::SoftmaxForm::Narrow });
    item(name, sx, tol, case).float_vec(want, 3e-4 + tol as f64 / FP.scale())
}

/// `softmax = coarse` with `exp = taylor4` on rows of 40 (random, equal maxima, causal-masked,
/// fully masked) and one row of large scores (±3000, inside the |x| < 4096 domain). With
/// `grid` the inputs are multiples of the comparison grid 2^−4 (rows of 40: 6 levels, p = 4),
/// where the approximate comparisons are exact up to ties, so the secure max equals the twin's
/// and the narrow bound holds; off the grid the secure tree may keep another element within
/// the slack, and [`nectar_nn::tolerance::coarse_softmax_tol`] applies. Both within
/// `COARSE_SOFTMAX_F64` of f64.
fn coarse_softmax_item(name: &'static str, grid: bool) -> Item {
    use nectar_nn::tolerance::{coarse_softmax_tol, COARSE_SOFTMAX_F64};
    let (rows, cols) = (5, 40);
    let (mut sx, mask) = softmax_rows(rows, cols, 37);
    for (c, v) in sx[4 * cols..].iter_mut().enumerate() {
        *v = if c % 2 == 0 { 3000.0 - 0.7 * c as f64 } else { -3000.0 + c as f64 };
    }
    if grid {
        assert_eq!(softmax::coarse_compare(cols).precision, 4, "rows of 40: grid 2^-4");
        sx.iter_mut().for_each(|v| *v = (*v * 16.0).round() / 16.0);
    }
    let want = softmax::softmax_f64(&sx, cols, Some(&mask));
    let tight = narrow_softmax_tol();
    let tol = if grid { tight } else { coarse_softmax_tol(tight, FP.f()) };
    let case = Box::new(RingSoftmaxCase { rows, cols, mask, form: softmax::SoftmaxForm::Coarse });
    item(name, sx, tol, case).float_vec(want, COARSE_SOFTMAX_F64 + tight as f64 / FP.scale())
}

/// The coarse max tree ([`max::max_rows_coarse`], comparisons in `Z_2^34` on a 2^−4 grid):
/// on rows with near-ties below the grid (gaps of 2^−6) its result is within the slack of the
/// row maximum (the f64 check) and, as the twin's, within the slack of the twin (the LSB check:
/// `slack · 2^f`); rows of 40: slack 6·2^−4.
fn coarse_max_item() -> Item {
    let (rows, cols) = (6, 40);
    let mut sx = randu(rows * cols, -100.0, 100.0, 41);
    // Rows 0–2: a cluster of near-equal maxima (gaps of 2^−6 under the 2^−4 grid), larger to
    // the left: the comparison `a < c` of a left `a` may then err (a lost carry), and does so
    // for most share values, so the secure tree keeps a smaller element of the cluster.
    for r in 0..3 {
        for c in 0..8 {
            sx[r * cols + 5 * c] = 150.0 + (7 - c) as f64 / 64.0;
        }
    }
    let cmp = softmax::coarse_compare(cols);
    let slack = cmp.slack(cols);
    let want: Vec<f64> = sx.chunks(cols).map(|r| r.iter().cloned().fold(f64::MIN, f64::max)).collect();
    let tol = (slack * FP.scale()).ceil() as i64;
    item("coarse max (near ties)", sx, tol, case!(|b, x| {
        let narrow = FixedPoint::new(softmax::NARROW_L, FP.f())?;
        let xn = b.reduce(x, narrow.l())?;
        b.set_format(narrow);
        let m = max::max_rows_coarse(b, &xn, 6, 40, softmax::coarse_compare(40));
        b.set_format(FP);
        let m = b.extend(&m?, narrow.l(), FP.l())?;
        b.reveal(&m)
    }))
    .float_vec(want, slack + 1.0 / FP.scale())
}

/// `softmax = grid` with `exp = taylor4` on the coarse item's rows (random, equal maxima,
/// causal-masked, fully masked, ±3000), BumbleBee's reciprocal on the row sums in `Z_2^45`:
/// the secure max may keep another element than the twin's within the slack, so
/// [`nectar_nn::tolerance::coarse_softmax_tol`] applies; within `COARSE_SOFTMAX_F64` of f64.
fn grid_softmax_item() -> Item {
    use nectar_nn::tolerance::{coarse_softmax_tol, COARSE_SOFTMAX_F64};
    let (rows, cols) = (5, 40);
    let (mut sx, mask) = softmax_rows(rows, cols, 37);
    for (c, v) in sx[4 * cols..].iter_mut().enumerate() {
        *v = if c % 2 == 0 { 3000.0 - 0.7 * c as f64 } else { -3000.0 + c as f64 };
    }
    let want = softmax::softmax_f64(&sx, cols, Some(&mask));
    let tight = narrow_softmax_tol();
    let case = Box::new(RingSoftmaxCase { rows, cols, mask, form: softmax::SoftmaxForm::Grid });
    item("bole softmax grid taylor4 (random)", sx, coarse_softmax_tol(tight, FP.f()), case)
        .float_vec(want, COARSE_SOFTMAX_F64 + tight as f64 / FP.scale())
}

/// The grid max ([`max::grid::max_rows_grid`], one rounding to 2^−2, groups of up to 8): rows
/// of 1, 2, 3, 7, 25 and 40 with near-equal maxima below the grid (gaps of 2^−6), exact ties,
/// a row of equal values, the coarse domain's ends (±4095) and random values. Its result is
/// within the slack 2^−1 of the row maximum (the f64 check) and of the twin's (the LSB check).
fn grid_max_item() -> Item {
    let shapes = [1usize, 2, 3, 7, 25, 40];
    let mut sx = Vec::new();
    for (k, &cols) in shapes.iter().enumerate() {
        let mut row = randu(2 * cols, -100.0, 100.0, 43 + k as u64);
        for c in (0..cols).step_by(3) {
            row[c] = 150.0 + (c % 7) as f64 / 64.0; // a cluster of near-ties in row 0
        }
        row[cols..].iter_mut().enumerate().for_each(|(c, v)| {
            *v = match k % 3 {
                0 => -4095.0 + c as f64,
                1 => 7.25,
                _ => if c % 2 == 0 { 4095.0 - c as f64 / 64.0 } else { *v },
            }
        });
        sx.extend(row);
    }
    let g = softmax::grid_max(FP.f()).unwrap();
    assert_eq!((g.l, g.precision), (17, 2), "f = 18: grid 2^-2, comparisons in Z_2^17");
    let slack = g.slack();
    let mut want = Vec::new();
    let mut at = 0;
    for &cols in &shapes {
        for r in 0..2 {
            let row = &sx[at + r * cols..at + (r + 1) * cols];
            want.push(row.iter().cloned().fold(f64::MIN, f64::max));
        }
        at += 2 * cols;
    }
    let tol = (slack * FP.scale()).ceil() as i64;
    item("grid max (near ties, shapes)", sx, tol, case!(|b, x| {
        let narrow = FixedPoint::new(softmax::NARROW_L, FP.f())?;
        let xn = b.reduce(x, narrow.l())?;
        b.set_format(narrow);
        let mut out = Vec::new();
        let mut at = 0;
        for &cols in &[1usize, 2, 3, 7, 25, 40] {
            let part = b.gather(&xn, &(at..at + 2 * cols).collect::<Vec<_>>())?;
            out.push(max::grid::max_rows_grid(b, &part, 2, cols, softmax::grid_max(FP.f())?));
            at += 2 * cols;
        }
        b.set_format(FP);
        let mut all = Vec::new();
        for m in out {
            all.extend(b.extend(&m?, narrow.l(), FP.l())?);
        }
        b.reveal(&all)
    }))
    .float_vec(want, slack + 1.0 / FP.scale())
}

/// IKNP as the COT producer gives the same results (the producer only changes the OT layer).
#[test]
fn iknp_producer_works() {
    let o = SecureOpts::test().with_producer(Producer::Iknp);
    let items = vec![item("iknp exp", grid(-10.0, 0.0, 101), EXP_TOL, case!(|b, x| {
        let y = exp::exp_neg(b, x, &exp::EXP_BUMBLEBEE)?;
        b.reveal(&y)
    }))];
    check(o, items);
}

/// Length mismatches and bad arguments are errors, not panics, and leave the session usable.
#[test]
fn bad_arguments_are_errors() {
    let party = |role: Role| {
        move |c: &mut nectar_net::MemChannel| {
            let mut b = SecureBackend::setup(role, c, Prg::new([role as u8 + 40; 16]), SecureOpts::test()).unwrap();
            assert!(matches!(b.add(&vec![1, 2], &vec![1]), Err(NnError::Length { .. })));
            assert!(b.mul(&vec![1, 2], &vec![1]).is_err());
            assert!(b.mux(&vec![true], &vec![1, 2]).is_err());
            assert!(b.and(&vec![true], &vec![]).is_err());
            assert!(b.add_const(&vec![1, 2, 3], &[1, 2]).is_err());
            assert!(b.gather(&vec![1], &[3]).is_err());
            assert!(b.sum_groups(&vec![1, 2, 3], 2).is_err());
            assert!(b.extend(&vec![1], 64, 32).is_err());
            assert!(b.less_than_const(&vec![1], &[0], 63).is_err());
            assert!(b.trunc(&vec![1], 63).is_err());
            // empty vectors are no-ops
            assert_eq!(b.mul(&vec![], &vec![]).unwrap(), Vec::<u64>::new());
            // still in step with the peer
            let x = b.constant(&[int(&b, 42)]).unwrap();
            b.reveal(&x).unwrap()
        }
    };
    let (a, c) = run_pair(party(Role::Server), party(Role::Client));
    assert_eq!(a, vec![42]);
    assert_eq!(a, c);
}

use nectar_nn::tolerance::oppe_tol;

/// East's OPPE operators (GELU, exp, tanh, SiLU with the committed tables) on the secure
/// backend: vs the twin within [`oppe_tol`], vs f64 within the table's recorded twin error.
#[test]
fn east_oppe_matches_twin_and_f64() {
    use nectar_nn::fit::Func;
    use nectar_nn::oppe::{east_table, oppe};
    let ulp = 1.0 / FP.scale();
    let mut items = Vec::new();
    for (name, lo, hi, f) in [
        ("gelu", -8.0, 8.0, (|v: f64| Func::Gelu.eval(v)) as fn(f64) -> f64),
        ("gelu_tanh", -8.0, 8.0, gelu::gelu_f64 as fn(f64) -> f64),
        ("exp", -20.0, 0.0, (|v: f64| v.exp()) as fn(f64) -> f64),
        ("tanh", -8.0, 8.0, (|v: f64| v.tanh()) as fn(f64) -> f64),
        ("silu", -16.0, 16.0, silu::silu_f64 as fn(f64) -> f64),
    ] {
        let t = east_table(name).unwrap();
        let tol = oppe_tol(t);
        let ftol = t.fit.twin_max_abs * 1.01 + tol as f64 * ulp;
        // the grid plus the breakpoints themselves and their neighbours
        let mut xs = grid(lo, hi, 241);
        xs.extend(t.breaks.iter().flat_map(|&w| [w - ulp, w, w + ulp]));
        let case: Box<dyn Case> = match name {
            "gelu" => case!(|b, x| {
                let y = oppe(b, x, east_table("gelu")?)?;
                b.reveal(&y)
            }),
            "gelu_tanh" => case!(|b, x| {
                let y = oppe(b, x, east_table("gelu_tanh")?)?;
                b.reveal(&y)
            }),
            "exp" => case!(|b, x| {
                let y = oppe(b, x, east_table("exp")?)?;
                b.reveal(&y)
            }),
            "tanh" => case!(|b, x| {
                let y = oppe(b, x, east_table("tanh")?)?;
                b.reveal(&y)
            }),
            _ => case!(|b, x| {
                let y = oppe(b, x, east_table("silu")?)?;
                b.reveal(&y)
            }),
        };
        let label: &'static str = match name {
            "gelu" => "oppe gelu",
            "gelu_tanh" => "oppe gelu_tanh",
            "exp" => "oppe exp",
            "tanh" => "oppe tanh",
            _ => "oppe silu",
        };
        items.push(item(label, xs, tol, case).float(f, ftol));
    }
    // far outside every piece: the overflowing powers cancel exactly (module docs)
    items.push(
        item("oppe gelu far out", vec![-3000.0, -400.0, 400.0, 3000.0], 2, case!(|b, x| {
            let y = oppe(b, x, east_table("gelu")?)?;
            b.reveal(&y)
        }))
        .float(|v| Func::Gelu.eval(v), 4.0 * ulp),
    );
    check(opts(), items);
}

/// East softmax (Alg. 3): OPPE exp and the Determine reciprocal on `[1, cols]`.
struct EastSoftmaxCase {
    rows: usize,
    cols: usize,
    mask: Vec<bool>,
}
impl EastSoftmaxCase {
    fn go<B: Backend<Val = Vec<u64>, Bit = Vec<bool>>>(&self, b: &mut B, x: &Vec<u64>) -> R {
        use nectar_nn::oppe::{east_table, oppe};
        let hi = self.cols as f64;
        let y = softmax::softmax_with(
            b,
            x,
            self.rows,
            self.cols,
            Some(&self.mask),
            |b, d| oppe(b, d, east_table("exp")?),
            |b, s| reciprocal::reciprocal_determine(b, s, 1.0, hi),
        )?;
        b.reveal(&y)
    }
}
impl Case for EastSoftmaxCase {
    fn plain(&self, b: &mut PlainBackend, x: &Vec<u64>) -> R {
        self.go(b, x)
    }
    fn secure(&self, b: &mut SecureBackend<'_>, x: &Vec<u64>) -> R {
        self.go(b, x)
    }
}

/// East's Newton with Determine (§4.2, Alg. 2) on the secure backend, and East softmax.
/// Reciprocal: `t` iterations of two products, each ±2 LSB, contracting (|1 − x·y| < 1), so the
/// twin–secure gap stays within `4t` LSB; vs f64 within Determine's δ plus that rounding.
#[test]
fn east_determine_and_softmax_match_twin_and_f64() {
    use nectar_nn::reciprocal::{determine_reciprocal, reciprocal_determine, DETERMINE_DELTA};
    let ulp = 1.0 / FP.scale();
    let (a, hi) = (1.0, 128.0);
    let t = determine_reciprocal(a, hi, DETERMINE_DELTA).unwrap().iters as i64;
    let tol = 4 * t;
    let (rows, cols) = (4, 64);
    let sx = randu(rows * cols, -8.0, 8.0, 21);
    let mut mask = vec![false; rows * cols];
    for c in 0..cols {
        mask[2 * cols + c] = c > 30;
        mask[3 * cols + c] = true;
    }
    let want = softmax::softmax_f64(&sx, cols, Some(&mask));
    let items = vec![
        item("reciprocal determine [1,128]", grid(a, hi, 241), tol, case!(|b, x| {
            let y = reciprocal_determine(b, x, 1.0, 128.0)?;
            b.reveal(&y)
        }))
        .float(|v: f64| 1.0 / v, DETERMINE_DELTA + tol as f64 * ulp),
        item("reciprocal determine [1,2]", grid(1.0, 2.0, 101), tol, case!(|b, x| {
            let y = reciprocal_determine(b, x, 1.0, 2.0)?;
            b.reveal(&y)
        }))
        .float(|v: f64| 1.0 / v, DETERMINE_DELTA + tol as f64 * ulp),
        // |Δp_i| ≤ (|Δe_i| + p_i·|Δs|)/s with |Δe| ≤ 2.6e-5 (the exp table's twin error),
        // |Δs| ≤ cols·2.6e-5, s ≥ 1, p_i ≤ 1; plus δ of the reciprocal and the rounding
        item("softmax east (masked)", sx, 3 * tol, Box::new(EastSoftmaxCase { rows, cols, mask }))
            .float_vec(want, 2.6e-5 * (1.0 + cols as f64) + DETERMINE_DELTA + (3 * tol) as f64 * ulp),
    ];
    check(opts(), items);
}

/// CipherGPT-style LUT operators on ROTL lookups (ROTL §II-E; `nectar_nn::lut`): the
/// activations, the two-LUT exp with its clip, the LUT + Newton reciprocal and the softmax,
/// twin vs secure within `nectar_nn::tolerance`'s LUT bounds and f64 within the tables' errors.
#[test]
fn rotl_lut_operators_match_twin_and_f64() {
    use nectar_nn::fit::Func;
    use nectar_nn::lut::*;
    use nectar_nn::reciprocal::DETERMINE_DELTA;
    use nectar_nn::tolerance::{exp_lut_tol, lut_act_tol, reciprocal_lut_tol};
    let ulp = 1.0 / FP.scale();
    let f = FP.f();
    let mut items = Vec::new();
    // the tables at their segment boundaries (GeLU's on a grid: `every_gelu_protocol_matches_twin_and_f64`)
    for p in [GELU_LUT, GELU_TANH_LUT, SILU_LUT] {
        let tol = lut_act_tol(&p, f);
        let (a, w) = (p.alpha(), p.width());
        // a grid plus the region edges and segment boundaries with their neighbours
        let mut xs = grid(-2.0 * a, 2.0 * a, 301);
        for e in [-a + w, a, -a + 2.0 * w, 0.0, a - w] {
            xs.extend([e - ulp, e, e + ulp]);
        }
        xs.extend(randu(200, -a, a, 5));
        let func = p.func;
        let case: Box<dyn Case> = match func {
            Func::Gelu => case!(|b, x| {
                let y = lut_activation(b, x, &GELU_LUT)?;
                b.reveal(&y)
            }),
            Func::GeluTanh => case!(|b, x| {
                let y = lut_activation(b, x, &GELU_TANH_LUT)?;
                b.reveal(&y)
            }),
            _ => case!(|b, x| {
                let y = lut_activation(b, x, &SILU_LUT)?;
                b.reveal(&y)
            }),
        };
        let label: &'static str = match func {
            Func::Gelu => "lut gelu",
            Func::GeluTanh => "lut gelu_tanh",
            _ => "lut silu",
        };
        items.push(item(label, xs, tol, case).float(move |v| func.eval(v), p.max_error() + tol as f64 * ulp));
    }
    // mixed ring (32, 12): entering truncation (1 LSB' times slope ≤ 1.13) + the bound at f' = 12
    let mtol = (lut_act_tol(&GELU_LUT, 12) + 2) << 6;
    items.push(
        item("lut gelu mixed", grid(-8.0, 8.0, 161), mtol, case!(|b, x| {
            let y = lut_activation_mixed(b, x, &GELU_LUT)?;
            b.reveal(&y)
        }))
        .float(|v| Func::Gelu.eval(v), GELU_LUT.max_error() + mtol as f64 * ulp),
    );
    let etol = exp_lut_tol(&EXP_LUT, f);
    let mut ex = grid(-20.0, 0.0, 241);
    ex.extend([-16.0 - ulp, -16.0, -16.0 + ulp, -ulp, -1.0 / 16.0, -255.0 / 4096.0]);
    // exp table rounding (2^-19 each) and the input truncation (relative 2^-12)
    items.push(
        item("lut exp (clip at -16)", ex, etol, case!(|b, x| {
            let y = exp_lut(b, x, &EXP_LUT)?;
            b.reveal(&y)
        }))
        .float(|v: f64| if v < -16.0 { 0.0 } else { v.exp() }, etol as f64 * ulp),
    );
    let hi = 128.0;
    let rtol = reciprocal_lut_tol(hi, f).unwrap();
    let mut rx = grid(1.0, hi, 241);
    rx.extend([1.0 + ulp, 1.5, 1.5 - ulp, 2.0, hi - ulp]);
    items.push(
        item("lut reciprocal [1,128]", rx, rtol, case!(|b, x| {
            let y = reciprocal_lut(b, x, 128.0)?;
            b.reveal(&y)
        }))
        .float(|v: f64| 1.0 / v, DETERMINE_DELTA + rtol as f64 * ulp),
    );
    let (rows, cols) = (4, 64);
    let sx = randu(rows * cols, -8.0, 8.0, 23);
    let mut mask = vec![false; rows * cols];
    for c in 0..cols {
        mask[2 * cols + c] = c > 30;
        mask[3 * cols + c] = true;
    }
    let want = softmax::softmax_f64(&sx, cols, Some(&mask));
    let stol = softmax_tol(etol, rtol);
    // exp relative error 2^-12 on each entry and on the sum, δ of the reciprocal, rounding
    items.push(
        item("lut softmax (masked)", sx, stol, Box::new(LutSoftmaxCase { rows, cols, mask }))
            .float_vec(want, 2.0 * (2.0f64).powi(-12) + DETERMINE_DELTA + stol as f64 * ulp),
    );
    check(opts(), items);
}

struct LutSoftmaxCase {
    rows: usize,
    cols: usize,
    mask: Vec<bool>,
}
impl LutSoftmaxCase {
    fn go<B: Backend<Val = Vec<u64>, Bit = Vec<bool>>>(&self, b: &mut B, x: &Vec<u64>) -> R {
        let y = nectar_nn::softmax::lut::softmax_lut(b, x, self.rows, self.cols, Some(&self.mask))?;
        b.reveal(&y)
    }
}
impl Case for LutSoftmaxCase {
    fn plain(&self, b: &mut PlainBackend, x: &Vec<u64>) -> R {
        self.go(b, x)
    }
    fn secure(&self, b: &mut SecureBackend<'_>, x: &Vec<u64>) -> R {
        self.go(b, x)
    }
}

/// LUT lookups refuse indices outside the ring and tables of the wrong size (no panic).
#[test]
fn lut_primitive_refuses_bad_tables() {
    use nectar_nn::backend::LutIndex;
    let mut tw = PlainBackend::new(FP).unwrap();
    let x = tw.encode(&[1.0, 2.0]).unwrap();
    let t: Vec<u64> = (0..256).collect();
    assert!(tw.lut(&x, LutIndex { shift: 60, bits: 8, exact: false }, &[&t]).is_err());
    assert!(tw.lut(&x, LutIndex { shift: 0, bits: 7, exact: false }, &[&t]).is_err());
    assert!(tw.lut(&x, LutIndex { shift: 0, bits: 8, exact: false }, &[]).is_err());
    let y = tw.lut(&x, LutIndex { shift: 18, bits: 8, exact: false }, &[&t]).unwrap();
    assert_eq!(y, vec![vec![1, 2]]);
}

/// East's LayerNorm / RMSNorm by Eq. (9) with the Determine InvSqrt (§4.2, Alg. 4) on rows whose
/// variances span the documented domain `[2^−10, 2^12]`, and the Determine rsqrt alone.
/// Twin vs secure: one truncation of `z = n·x − Σx` ({0, −1} LSB) reaches the output times
/// `η·√n = 2^k/(n·√(Var + ε))` ≤ 1.34/√Var and `|γ|` ≤ 1.5, plus the products' ±2 LSB each and the
/// Newton rounding (far below 1 LSB at f + 10 bits); f64 vs secure: the relative 2^−12 of the
/// rsqrt times |(x − μ)/σ| ≤ √n, plus that.
#[test]
fn east_layernorm_and_determine_rsqrt_match_twin_and_f64() {
    use nectar_nn::layernorm::{layernorm_east, EAST_NORM_DEFAULT};
    use nectar_nn::rsqrt::{rsqrt_determine, DETERMINE_RSQRT_DELTA};
    let ulp = 1.0 / FP.scale();
    let (rows, cols) = (5, 96);
    // rows of variance ~ 2^-9.7, 2^-3, 1, 2^5, 2^11 (spread s: Var ≈ s²/3)
    let spreads = [0.06, 0.6, 1.7, 9.8, 78.0];
    let mut lx = Vec::new();
    for (r, &sp) in spreads.iter().enumerate() {
        lx.extend(randu(cols, -sp, sp, 40 + r as u64).iter().map(|v| v + 0.3 * r as f64));
    }
    let gamma: Vec<f64> = (0..cols).map(|c| 0.5 + c as f64 / cols as f64).collect();
    let beta: Vec<f64> = (0..cols).map(|c| 0.1 * c as f64 / cols as f64 - 0.05).collect();
    let ln_want = layernorm::layernorm_f64(&lx, cols, &gamma, &beta, 1e-5);
    let rms_want = rmsnorm::rmsnorm_f64(&lx, cols, &gamma, 1e-5);
    let var_min = lx
        .chunks(cols)
        .map(|r| {
            let m = r.iter().sum::<f64>() / cols as f64;
            r.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / cols as f64
        })
        .fold(f64::MAX, f64::min);
    assert!(var_min >= EAST_NORM_DEFAULT.var_lo, "test rows inside the domain");
    let tol = nectar_nn::tolerance::east_norm_tol(var_min, 1.5);
    let ftol = DETERMINE_RSQRT_DELTA * (cols as f64).sqrt() * 1.5 + tol as f64 * ulp;
    struct EastNorm {
        rows: usize,
        cols: usize,
        gamma: Vec<f64>,
        beta: Option<Vec<f64>>,
    }
    impl EastNorm {
        fn go<B: Backend<Val = Vec<u64>, Bit = Vec<bool>>>(&self, b: &mut B, x: &Vec<u64>) -> R {
            let g = b.constant(&FP.encode_vec::<u64>(&self.gamma)?)?;
            let be = match &self.beta {
                Some(v) => Some(b.constant(&FP.encode_vec::<u64>(v)?)?),
                None => None,
            };
            let y = layernorm_east(b, x, self.rows, self.cols, &g, be.as_ref(), &EAST_NORM_DEFAULT)?;
            b.reveal(&y)
        }
    }
    impl Case for EastNorm {
        fn plain(&self, b: &mut PlainBackend, x: &Vec<u64>) -> R {
            self.go(b, x)
        }
        fn secure(&self, b: &mut SecureBackend<'_>, x: &Vec<u64>) -> R {
            self.go(b, x)
        }
    }
    // rsqrt alone on [1, 2^16] (relative 2^-12 in f64; t steps of three products, each ±2 LSB)
    let (a, hi) = (1.0, 65536.0);
    let t = nectar_nn::rsqrt::determine_rsqrt(a, hi, DETERMINE_RSQRT_DELTA).unwrap().iters as i64;
    assert_eq!(nectar_nn::tolerance::rsqrt_determine_tol(a, hi).unwrap(), 6 * t);
    let mut rx: Vec<f64> = (0..=200).map(|i| a * (hi / a).powf(i as f64 / 200.0)).collect();
    rx.push(hi - 1.0);
    let rwant: Vec<f64> = rx.iter().map(|v| 1.0 / v.sqrt()).collect();
    let rftol: Vec<f64> = rwant.iter().map(|w| w * DETERMINE_RSQRT_DELTA + (6 * t) as f64 * ulp).collect();
    let items = vec![
        item("east layernorm (Eq. 9)", lx.clone(), tol, Box::new(EastNorm { rows, cols, gamma: gamma.clone(), beta: Some(beta) }))
            .float_vec(ln_want, ftol),
        item("east rmsnorm", lx, tol, Box::new(EastNorm { rows, cols, gamma, beta: None })).float_vec(rms_want, ftol),
        item("rsqrt determine [1, 2^16]", rx, 6 * t, case!(|b, x| {
            let y = rsqrt_determine(b, x, 1.0, 65536.0)?;
            b.reveal(&y)
        }))
        .float_vec(rwant, rftol.iter().cloned().fold(0.0, f64::max)),
    ];
    check(opts(), items);
}
