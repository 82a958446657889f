//! Two-party tests of [`SecureBackend`]: every primitive and every operator run by both parties
//! (`nectar_net::mem::run_pair`), revealed, and compared with the plaintext twin
//! ([`PlainBackend`], same operator code) within the error the primitives' stated error models
//! allow, and with `f64`.
//!
//! Tolerances (LSB of the output's format, measured on the raw ring difference secure − twin):
//! see each case; the derivations are in `docs/results/nonlinear.md` ("Secure operators").

use nectar_math::{FixedPoint, Prg};
use nectar_net::mem::run_pair;
use nectar_net::Role;
use nectar_nn::backend::{enc, int, Backend};
use nectar_nn::secure::{MulProtocol, SecureBackend, SecureOpts};
use nectar_nn::{exp, gelu, layernorm, max, onehot, reciprocal, rmsnorm, rsqrt, silu, softmax, NnError, PlainBackend};
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
    name: &'static str,
    xs: Vec<f64>,
    case: Box<dyn Case>,
    tol: i64,
}

fn item(name: &'static str, xs: Vec<f64>, tol: i64, case: Box<dyn Case>) -> Item {
    Item { name, xs, case, tol }
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

/// Checks twin vs secure within each item's tolerance; prints the max difference.
fn check(opts: SecureOpts, items: Vec<Item>) {
    let out = run_items(opts, &items);
    for (it, (tw, se)) in items.iter().zip(out) {
        assert_eq!(tw.len(), se.len(), "{}", it.name);
        let mut worst = 0i64;
        for (i, (a, b)) in tw.iter().zip(&se).enumerate() {
            let d = signed(b.wrapping_sub(*a), FP.l()).abs();
            worst = worst.max(d);
            assert!(
                d <= it.tol,
                "{}: element {i} (x = {:?}): twin {} secure {} differ by {d} > {} LSB",
                it.name,
                it.xs.get(i),
                signed(*a, FP.l()),
                signed(*b, FP.l()),
                it.tol
            );
        }
        println!("{:<28} n = {:>5}  max |secure − twin| = {worst} LSB (tolerance {})", it.name, tw.len(), it.tol);
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
    let ys: Vec<f64> = xs.iter().map(|v| 0.37 * v - 3.1).collect();
    let ye = PlainBackend::new(FP).unwrap().encode(&ys).unwrap();
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
    let _ = ye;
    check(opts(), items);
}
