//! Two-party bOLEe, Π_mul, Π_square and query reuse: within ±1 per entry.

use nectar_he::Params;
use nectar_linear::bole::{self, Queries, QueryPair};
use nectar_linear::HeSession;
use nectar_math::Prg;
use nectar_net::mem::run_pair;
use nectar_net::Role;
use rand_core::RngCore;

fn mask(l: u32) -> u64 {
    if l == 64 {
        u64::MAX
    } else {
        (1 << l) - 1
    }
}

fn assert_close(got: &[u64], want: &[u64], l: u32) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let e = g.wrapping_sub(*w) & mask(l);
        assert!(e == 0 || e == 1 || e == mask(l), "entry {i}: error {e}");
    }
}

fn sessions<A: Send, B: Send>(
    f0: impl FnOnce(&mut nectar_net::MemChannel, &HeSession, &mut Prg) -> A + Send,
    f1: impl FnOnce(&mut nectar_net::MemChannel, &HeSession, &mut Prg) -> B + Send,
) -> (A, B) {
    run_pair(
        |ch| {
            let mut p = Prg::new([1; 16]);
            let s = HeSession::setup(ch, Role::Server, Params::bumblebee_bole(), false, &mut p)
                .unwrap();
            f0(ch, &s, &mut p)
        },
        |ch| {
            let mut p = Prg::new([2; 16]);
            let s = HeSession::setup(ch, Role::Client, Params::bumblebee_bole(), false, &mut p)
                .unwrap();
            f1(ch, &s, &mut p)
        },
    )
}

#[test]
fn bole_within_one() {
    for &(len, l) in &[(10_000usize, 64u32), (5, 32)] {
        let mut prg = Prg::new([7; 16]);
        let x: Vec<u64> = (0..len).map(|_| prg.next_u64() & mask(l)).collect();
        let y: Vec<u64> = (0..len).map(|_| prg.next_u64() & mask(l)).collect();
        let (a, b) = sessions(
            |ch, s, p| bole::bole(ch, s, Role::Server, &x, l, p).unwrap(),
            |ch, s, p| bole::bole(ch, s, Role::Client, &y, l, p).unwrap(),
        );
        let got: Vec<u64> = a
            .iter()
            .zip(&b)
            .map(|(u, v)| u.wrapping_add(*v) & mask(l))
            .collect();
        let want: Vec<u64> = x
            .iter()
            .zip(&y)
            .map(|(u, v)| u.wrapping_mul(*v) & mask(l))
            .collect();
        assert_close(&got, &want, l);
    }
}

#[test]
fn mul_square_and_cube_by_reuse() {
    let (len, l) = (9000usize, 64u32); // two chunks: three frames of FRAME_CTS, the last short
    let mut prg = Prg::new([8; 16]);
    let x: Vec<u64> = (0..len).map(|_| prg.next_u64() % 1000).collect();
    let y: Vec<u64> = (0..len).map(|_| prg.next_u64()).collect();
    let x0: Vec<u64> = (0..len).map(|_| prg.next_u64()).collect();
    let y0: Vec<u64> = (0..len).map(|_| prg.next_u64()).collect();
    let x1: Vec<u64> = x.iter().zip(&x0).map(|(a, b)| a.wrapping_sub(*b)).collect();
    let y1: Vec<u64> = y.iter().zip(&y0).map(|(a, b)| a.wrapping_sub(*b)).collect();
    let ((m0, sq0, c0), (m1, sq1, c1)) = sessions(
        |ch, s, p| {
            let (m, _) = bole::mul(ch, s, Role::Server, &x0, &y0, l, p).unwrap();
            let (sq, Queries::Server(qx)) = bole::square(ch, s, Role::Server, &x0, l, p).unwrap()
            else {
                panic!()
            };
            let (_, Queries::Server(qsq)) = bole::square(ch, s, Role::Server, &sq, l, p).unwrap()
            else {
                panic!()
            };
            let c =
                bole::mul_reusing(ch, s, QueryPair::Server(qx[0], qsq[0]), &x0, &sq, p).unwrap();
            (m, sq, c)
        },
        |ch, s, p| {
            let (m, _) = bole::mul(ch, s, Role::Client, &x1, &y1, l, p).unwrap();
            let (sq, Queries::Client(qx)) = bole::square(ch, s, Role::Client, &x1, l, p).unwrap()
            else {
                panic!()
            };
            let (_, Queries::Client(qsq)) = bole::square(ch, s, Role::Client, &sq, l, p).unwrap()
            else {
                panic!()
            };
            let c =
                bole::mul_reusing(ch, s, QueryPair::Client(&qx[0], &qsq[0]), &x1, &sq, p).unwrap();
            (m, sq, c)
        },
    );
    let add = |a: &[u64], b: &[u64]| -> Vec<u64> {
        a.iter().zip(b).map(|(u, v)| u.wrapping_add(*v)).collect()
    };
    let xy: Vec<u64> = x.iter().zip(&y).map(|(u, v)| u.wrapping_mul(*v)).collect();
    assert_close(&add(&m0, &m1), &xy, l);
    let sq = add(&sq0, &sq1);
    let xx: Vec<u64> = x.iter().map(|u| u.wrapping_mul(*u)).collect();
    assert_close(&sq, &xx, l);
    // x · (x^2 + e): compare with x times the shared square actually computed.
    let want: Vec<u64> = x.iter().zip(&sq).map(|(u, v)| u.wrapping_mul(*v)).collect();
    assert_close(&add(&c0, &c1), &want, l);
}
