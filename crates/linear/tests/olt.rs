//! Two-party OLT runs over an in-memory channel: exact products for small and edge shapes,
//! every compression, both role assignments.

use nectar_he::Params;
use nectar_linear::krdy::matmul_u64;
use nectar_linear::window::Compression;
use nectar_linear::{olt, HeSession, OltPlan, Shape, Side, Variant, Windows};
use nectar_math::Prg;
use nectar_net::mem::run_pair;
use nectar_net::Role;
use rand_core::RngCore;

fn run(shape: Shape, plan: OltPlan, batch: usize, seed: u8) -> (Vec<u64>, Vec<u64>) {
    let mut prg = Prg::new([seed; 16]);
    let qs: Vec<Vec<u64>> = (0..batch)
        .map(|_| (0..shape.k * shape.m).map(|_| prg.next_u64()).collect())
        .collect();
    let vs: Vec<Vec<u64>> = (0..batch)
        .map(|_| (0..shape.m * shape.n).map(|_| prg.next_u64()).collect())
        .collect();
    let (a, b) = run_pair(
        |ch| {
            let mut p = Prg::new([seed ^ 0x55; 16]);
            let s =
                HeSession::setup(ch, Role::Server, Params::bumblebee_olt(), true, &mut p).unwrap();
            let m: Vec<&[u64]> = qs.iter().map(|x| &x[..]).collect();
            olt(ch, &s, &plan, Side::Lhs, &m, &mut p).unwrap()
        },
        |ch| {
            let mut p = Prg::new([seed ^ 0xaa; 16]);
            let s =
                HeSession::setup(ch, Role::Client, Params::bumblebee_olt(), true, &mut p).unwrap();
            let m: Vec<&[u64]> = vs.iter().map(|x| &x[..]).collect();
            olt(ch, &s, &plan, Side::Rhs, &m, &mut p).unwrap()
        },
    );
    let got: Vec<u64> = a.iter().zip(&b).map(|(x, y)| x.wrapping_add(*y)).collect();
    let want: Vec<u64> = qs
        .iter()
        .zip(&vs)
        .flat_map(|(q, v)| matmul_u64(q, v, shape))
        .collect();
    (got, want)
}

fn check(shape: Shape, plan: OltPlan, batch: usize, seed: u8) {
    let (got, want) = run(shape, plan, batch, seed);
    assert_eq!(got.len(), want.len());
    let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    assert_eq!(
        bad, 0,
        "{shape:?} {:?} {:?}: {bad} wrong entries",
        plan.windows, plan.compression
    );
}

#[test]
fn olt_interleave_exact_edge_shapes() {
    let n = 8192;
    // k'n' = 3·5 = 15 products, m_w = 8: two InterLeave groups, the last one partial.
    let s = Shape::new(5, 19, 9).unwrap();
    let w = Windows::new(2, 8, 2, n, true).unwrap();
    let p = OltPlan::new(s, w, n, Variant::Interleave).unwrap();
    assert_eq!(p.compression, Compression::Interleave);
    check(s, p, 1, 1);
    // role flip (k' > n'), n = 1.
    let s = Shape::new(7, 10, 1).unwrap();
    let w = Windows::new(2, 4, 1, n, true).unwrap();
    let p = OltPlan::new(s, w, n, Variant::Interleave).unwrap();
    assert!(p.rhs_encrypts);
    check(s, p, 1, 2);
}

#[test]
fn olt_krdy_and_packlwes_exact() {
    let n = 8192;
    // k = 1, m > N.
    let s = Shape::new(1, 8200, 3).unwrap();
    let w = Windows::new(1, 4096, 2, n, false).unwrap();
    check(s, OltPlan::new(s, w, n, Variant::Krdy).unwrap(), 1, 3);
    let s = Shape::new(3, 6, 5).unwrap();
    let w = Windows::new(2, 4, 2, n, true).unwrap();
    check(s, OltPlan::new(s, w, n, Variant::KrdyPlus).unwrap(), 1, 4);
}

#[test]
fn olt_batched_equals_separate_products() {
    let n = 8192;
    let s = Shape::new(3, 5, 4).unwrap();
    let w = Windows::new(2, 4, 2, n, true).unwrap();
    check(s, OltPlan::new(s, w, n, Variant::Interleave).unwrap(), 3, 5);
}

#[test]
fn malformed_peer_messages_are_errors() {
    let n = 8192;
    let s = Shape::new(2, 3, 2).unwrap();
    let plan = OltPlan::new(
        s,
        Windows::new(2, 4, 2, n, true).unwrap(),
        n,
        Variant::Interleave,
    )
    .unwrap();
    let q = vec![1u64; 6];
    let v = vec![2u64; 6];
    // The evaluator (V holder) answers garbage; then the encryptor gets a truncated query.
    let (a, b) = run_pair(
        |ch| {
            let mut p = Prg::new([1; 16]);
            let sess =
                HeSession::setup(ch, Role::Server, Params::bumblebee_olt(), true, &mut p).unwrap();
            let r1 = olt(ch, &sess, &plan, Side::Lhs, &[&q], &mut p);
            use nectar_net::Channel;
            ch.send(&[1, 0, 0, 0, 9, 9]).unwrap();
            r1.is_err()
        },
        |ch| {
            let mut p = Prg::new([2; 16]);
            let sess =
                HeSession::setup(ch, Role::Client, Params::bumblebee_olt(), true, &mut p).unwrap();
            use nectar_net::Channel;
            let _ = ch.recv().unwrap();
            ch.send(b"NH garbage").unwrap();
            olt(ch, &sess, &plan, Side::Rhs, &[&v], &mut p).is_err()
        },
    );
    assert!(a && b);
    // Wrong input sizes are errors too.
    let (a, _) = run_pair(
        |ch| {
            let mut p = Prg::new([1; 16]);
            let sess =
                HeSession::setup(ch, Role::Server, Params::bumblebee_olt(), false, &mut p).unwrap();
            olt(ch, &sess, &plan, Side::Lhs, &[&q[..5]], &mut p).is_err()
        },
        |ch| {
            let mut p = Prg::new([2; 16]);
            HeSession::setup(ch, Role::Client, Params::bumblebee_olt(), false, &mut p).unwrap();
        },
    );
    assert!(a);
}
