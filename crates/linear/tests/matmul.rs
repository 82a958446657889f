//! Shared matmuls equal the plaintext products mod 2^l.

use nectar_he::Params;
use nectar_linear::krdy::matmul_u64;
use nectar_linear::matmul::{
    batch_matmul_shared_shared, batch_matmul_shared_shared_duplex, matmul_shared_shared, matmul_shared_weight,
};
use nectar_linear::{HeSession, OltPlan, Shape, Variant, Windows};
use nectar_math::Prg;
use nectar_net::mem::run_pair;
use nectar_net::Role;
use rand_core::RngCore;

fn split(prg: &mut Prg, v: &[u64], l: u32) -> (Vec<u64>, Vec<u64>) {
    let m = if l == 64 { u64::MAX } else { (1 << l) - 1 };
    let a: Vec<u64> = v.iter().map(|_| prg.next_u64() & m).collect();
    let b = v
        .iter()
        .zip(&a)
        .map(|(x, y)| x.wrapping_sub(*y) & m)
        .collect();
    (a, b)
}

#[test]
fn shared_matmuls_exact() {
    // BumbleBee's t = 2^64 on shares of Z_2^37, and nectar's narrow t = 2^51 on shares of
    // Z_2^51 (the widest it serves).
    check(Params::bumblebee_olt(), 37, false);
    check(Params::nectar_olt_narrow(), 51, false);
}

/// The narrow OLT as the model uses it: small signed weights given mod 2^64 (reduced mod t as
/// they are encoded; the weight products then run at level 2), shares of Z_2^51.
#[test]
fn narrow_products_of_small_weights_mod_2_64() {
    check(Params::nectar_olt_narrow(), 51, true);
}

/// Shares of a ring wider than the session's plaintext modulus are refused.
#[test]
fn narrow_session_refuses_wider_shares() {
    let n = 8192;
    let s = Shape::new(2, 3, 2).unwrap();
    let plan = OltPlan::new(s, Windows::new(2, 4, 2, n, true).unwrap(), n, Variant::Interleave).unwrap();
    let x = vec![1u64; 6];
    let (a, b) = run_pair(
        |ch| {
            let mut p = Prg::new([1; 16]);
            let sess = HeSession::setup(ch, Role::Server, Params::nectar_olt_narrow(), true, &mut p).unwrap();
            matmul_shared_weight(ch, &sess, Role::Server, &plan, &x, Some(&x), 52, &mut p, None).is_err()
        },
        |ch| {
            let mut p = Prg::new([2; 16]);
            let sess = HeSession::setup(ch, Role::Client, Params::nectar_olt_narrow(), true, &mut p).unwrap();
            matmul_shared_weight(ch, &sess, Role::Client, &plan, &x, None, 52, &mut p, None).is_err()
        },
    );
    assert!(a && b);
}

fn check(params: Params, l: u32, small_weights: bool) {
    let n = 8192;
    let m = (1u64 << l) - 1;
    let s = Shape::new(4, 13, 6).unwrap();
    let plan = OltPlan::new(
        s,
        Windows::new(2, 8, 4, n, true).unwrap(),
        n,
        Variant::Interleave,
    )
    .unwrap();
    let mut prg = Prg::new([11; 16]);
    let heads = 3;
    let xs: Vec<Vec<u64>> = (0..heads)
        .map(|_| (0..s.k * s.m).map(|_| prg.next_u64() & m).collect())
        .collect();
    let ys: Vec<Vec<u64>> = (0..heads)
        .map(|_| (0..s.m * s.n).map(|_| prg.next_u64() & m).collect())
        .collect();
    let (x0, x1): (Vec<_>, Vec<_>) = xs.iter().map(|x| split(&mut prg, x, l)).unzip();
    let (y0, y1): (Vec<_>, Vec<_>) = ys.iter().map(|y| split(&mut prg, y, l)).unzip();
    // Weights in [−2^17, 2^17) as u64 (mod 2^64), or uniform in Z_2^l.
    let w: Vec<u64> = if small_weights {
        (0..s.m * s.n).map(|_| ((prg.next_u64() % (1 << 18)) as i64 - (1 << 17)) as u64).collect()
    } else {
        ys[0].clone()
    };
    let w = &w;
    let (pa, pb) = (params.clone(), params);
    let (a, b) = run_pair(
        |ch| {
            let mut p = Prg::new([1; 16]);
            let sess =
                HeSession::setup(ch, Role::Server, pa, true, &mut p).unwrap();
            let r1 =
                matmul_shared_weight(ch, &sess, Role::Server, &plan, &x0[0], Some(w), l, &mut p, None)
                    .unwrap();
            let r2 =
                matmul_shared_shared(ch, &sess, Role::Server, &plan, &x0[0], &y0[0], l, &mut p)
                    .unwrap();
            let xr: Vec<&[u64]> = x0.iter().map(|v| &v[..]).collect();
            let yr: Vec<&[u64]> = y0.iter().map(|v| &v[..]).collect();
            let r3 =
                batch_matmul_shared_shared(ch, &sess, Role::Server, &plan, &xr, &yr, l, &mut p)
                    .unwrap();
            // the same products with the two OLTs in the same flights
            let r4 = batch_matmul_shared_shared_duplex(ch, &sess, Role::Server, &plan, &xr, &yr, l, &mut p).unwrap();
            (r1, r2, r3, r4)
        },
        |ch| {
            let mut p = Prg::new([2; 16]);
            let sess =
                HeSession::setup(ch, Role::Client, pb, true, &mut p).unwrap();
            let r1 = matmul_shared_weight(ch, &sess, Role::Client, &plan, &x1[0], None, l, &mut p, None)
                .unwrap();
            let r2 =
                matmul_shared_shared(ch, &sess, Role::Client, &plan, &x1[0], &y1[0], l, &mut p)
                    .unwrap();
            let xr: Vec<&[u64]> = x1.iter().map(|v| &v[..]).collect();
            let yr: Vec<&[u64]> = y1.iter().map(|v| &v[..]).collect();
            let r3 =
                batch_matmul_shared_shared(ch, &sess, Role::Client, &plan, &xr, &yr, l, &mut p)
                    .unwrap();
            // the same products with the two OLTs in the same flights
            let r4 = batch_matmul_shared_shared_duplex(ch, &sess, Role::Client, &plan, &xr, &yr, l, &mut p).unwrap();
            (r1, r2, r3, r4)
        },
    );
    let rec = |u: &[u64], v: &[u64]| -> Vec<u64> {
        u.iter()
            .zip(v)
            .map(|(p, q)| p.wrapping_add(*q) & m)
            .collect()
    };
    let want = |x: &[u64], y: &[u64]| -> Vec<u64> {
        matmul_u64(x, y, s).into_iter().map(|v| v & m).collect()
    };
    assert_eq!(rec(&a.0, &b.0), want(&xs[0], w));
    assert_eq!(rec(&a.1, &b.1), want(&xs[0], &ys[0]));
    let batched: Vec<u64> = (0..heads).flat_map(|h| want(&xs[h], &ys[h])).collect();
    assert_eq!(rec(&a.2, &b.2), batched);
    assert_eq!(rec(&a.3, &b.3), batched);
}

/// The duplex shared product on a plan whose weight side (`Y`) encrypts (more row blocks than
/// column blocks: `rhs_encrypts`), where the server encrypts OLT A's query and the client
/// OLT B's — the converse of the plan above.
#[test]
fn duplex_shared_matmul_with_the_rhs_encrypting() {
    let (n, l) = (8192, 37);
    let m = (1u64 << l) - 1;
    let s = Shape::new(8, 13, 2).unwrap();
    let plan = OltPlan::new(s, Windows::new(2, 8, 2, n, true).unwrap(), n, Variant::Interleave).unwrap();
    assert!(plan.rhs_encrypts);
    let mut prg = Prg::new([5; 16]);
    let heads = 2;
    let xs: Vec<Vec<u64>> = (0..heads).map(|_| (0..s.k * s.m).map(|_| prg.next_u64() & m).collect()).collect();
    let ys: Vec<Vec<u64>> = (0..heads).map(|_| (0..s.m * s.n).map(|_| prg.next_u64() & m).collect()).collect();
    let (x0, x1): (Vec<_>, Vec<_>) = xs.iter().map(|x| split(&mut prg, x, l)).unzip();
    let (y0, y1): (Vec<_>, Vec<_>) = ys.iter().map(|y| split(&mut prg, y, l)).unzip();
    let party = |role: Role, x: Vec<Vec<u64>>, y: Vec<Vec<u64>>, seed: u8| {
        let plan = plan.clone();
        move |ch: &mut nectar_net::MemChannel| {
            let mut p = Prg::new([seed; 16]);
            let sess = HeSession::setup(ch, role, Params::bumblebee_olt(), true, &mut p).unwrap();
            let xr: Vec<&[u64]> = x.iter().map(|v| &v[..]).collect();
            let yr: Vec<&[u64]> = y.iter().map(|v| &v[..]).collect();
            batch_matmul_shared_shared_duplex(ch, &sess, role, &plan, &xr, &yr, l, &mut p).unwrap()
        }
    };
    let (a, b) = run_pair(party(Role::Server, x0, y0, 3), party(Role::Client, x1, y1, 4));
    let got: Vec<u64> = a.iter().zip(&b).map(|(p, q)| p.wrapping_add(*q) & m).collect();
    let want: Vec<u64> = (0..heads).flat_map(|h| matmul_u64(&xs[h], &ys[h], s).into_iter().map(|v| v & m)).collect();
    assert_eq!(got, want);
}
