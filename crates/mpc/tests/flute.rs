//! Two-party tests of FLUTE+ (ROTL §V): every index of random tables of several sizes and
//! widths, preprocessing consumed in order across calls, typed errors on bad arguments.

mod common;

use common::*;
use nectar_math::Prg;
use nectar_mpc::flute::flute_twin;
use nectar_mpc::{FlutePrepro, MpcError};

fn table(n: usize, l: u32, seed: u8) -> Vec<u64> {
    let mut p = Prg::new([seed; 16]);
    let mut t: Vec<u64> = (0..n).map(|_| p.next_u128() as u64 & mask(l)).collect();
    t[0] = mask(l); // an all-ones entry
    t
}

/// Index bits of `xs`, lookup-major, LSB first.
fn bits(xs: &[usize], k: usize) -> Vec<bool> {
    xs.iter()
        .flat_map(|&x| (0..k).map(move |j| (x >> j) & 1 == 1))
        .collect()
}

#[test]
fn every_index() {
    for log_n in [1u32, 2, 4, 8] {
        let n = 1usize << log_n;
        let k = log_n as usize;
        // Every index, twice, in a scrambled order.
        let xs: Vec<usize> = (0..2 * n).map(|i| (i * 37 + 11) % n).collect();
        let x = bits(&xs, k);
        let (x0, x1) = share_bits(&x, 3 + log_n as u8);
        let tables: Vec<(u32, Vec<u64>)> = [1u32, 8, 64]
            .iter()
            .map(|&l| (l, table(n, l, 7 + l as u8)))
            .collect();
        let count = xs.len() * tables.len();
        let party = |x: Vec<bool>, tables: Vec<(u32, Vec<u64>)>| {
            move |m: &mut nectar_mpc::Mpc, c: &mut dyn nectar_net::Channel| {
                // All lookups preprocessed once, then consumed table by table.
                let mut pre = m.flute_preprocess(c, count, log_n).unwrap();
                assert_eq!(pre.len(), count);
                let out: Vec<Vec<u64>> = tables
                    .iter()
                    .map(|(l, t)| m.flute_lookup(c, &mut pre, &x, t, *l).unwrap())
                    .collect();
                assert!(pre.is_empty());
                out
            }
        };
        let (y0, y1) = run(party(x0, tables.clone()), party(x1, tables.clone()));
        for (ti, (l, t)) in tables.iter().enumerate() {
            let want = flute_twin(t, &x, *l).unwrap();
            for (i, &xi) in xs.iter().enumerate() {
                let got = y0[ti][i] ^ y1[ti][i];
                assert_eq!(got, t[xi], "n = {n}, l = {l}, x = {xi}");
                assert_eq!(got, want[i]);
                assert_eq!(y0[ti][i] & !mask(*l), 0, "share wider than l");
            }
        }
    }
}

/// Preprocess ahead, then two online calls (different tables) consume the queue in order;
/// preprocessing in two batches appended gives the same as one.
#[test]
fn preprocess_ahead_two_calls() {
    let log_n = 4u32;
    let xs_a: Vec<usize> = vec![0, 15, 3, 9, 9];
    let xs_b: Vec<usize> = vec![1, 2, 14];
    let (a0, a1) = share_bits(&bits(&xs_a, 4), 21);
    let (b0, b1) = share_bits(&bits(&xs_b, 4), 22);
    let ta = table(16, 16, 23);
    let tb = table(16, 64, 24);
    let party = |a: Vec<bool>, b: Vec<bool>, ta: Vec<u64>, tb: Vec<u64>| {
        move |m: &mut nectar_mpc::Mpc, c: &mut dyn nectar_net::Channel| {
            let mut pre = m.flute_preprocess(c, 2, log_n).unwrap();
            pre.append(m.flute_preprocess(c, 7, log_n).unwrap())
                .unwrap();
            assert_eq!(pre.len(), 9);
            let first = pre.clone().take(5).unwrap();
            let ya = m.flute_lookup(c, &mut pre, &a, &ta, 16).unwrap();
            assert_eq!(pre.len(), 4);
            let yb = m.flute_lookup(c, &mut pre, &b, &tb, 64).unwrap();
            assert_eq!(pre.len(), 1);
            // Too few left: typed error, the queue untouched, no communication.
            let e = m.flute_lookup(c, &mut pre, &b, &tb, 64);
            assert!(matches!(e, Err(MpcError::BadArgument(_))), "{e:?}");
            assert_eq!(pre.len(), 1);
            (ya, yb, first)
        }
    };
    let ((ya0, yb0, f0), (ya1, yb1, f1)) = run(
        party(a0, b0, ta.clone(), tb.clone()),
        party(a1, b1, ta.clone(), tb.clone()),
    );
    for (i, &x) in xs_a.iter().enumerate() {
        assert_eq!(ya0[i] ^ ya1[i], ta[x]);
    }
    for (i, &x) in xs_b.iter().enumerate() {
        assert_eq!(yb0[i] ^ yb1[i], tb[x]);
    }
    // The shared masks and S(w) are consistent: S(w) = ∧_j (α_j ⊕ w_j).
    for i in 0..f0.len() {
        let alpha: Vec<bool> = f0
            .alpha(i)
            .iter()
            .zip(f1.alpha(i))
            .map(|(a, b)| a ^ b)
            .collect();
        for w in 0..16 {
            let direct = (0..4).all(|j| alpha[j] ^ ((w >> j) & 1 == 1));
            assert_eq!(f0.s_share(i, w) ^ f1.s_share(i, w), direct);
        }
    }
}

#[test]
fn bad_arguments() {
    let party = |x: Vec<bool>| {
        move |m: &mut nectar_mpc::Mpc, c: &mut dyn nectar_net::Channel| {
            let bad = |r: Result<Vec<u64>, MpcError>| {
                assert!(
                    matches!(
                        r,
                        Err(MpcError::BadArgument(_)) | Err(MpcError::Length { .. })
                    ),
                    "{r:?}"
                )
            };
            assert!(m.flute_preprocess(c, 4, 0).is_err());
            assert!(m.flute_preprocess(c, 4, 13).is_err());
            assert!(FlutePrepro::empty(0).is_err());
            let mut pre = m.flute_preprocess(c, 2, 2).unwrap();
            let t4 = [1u64, 2, 3, 4];
            // Not a power of two, too large, empty, wider than l, bad l, other log n.
            bad(m.flute_lookup(c, &mut pre, &x, &[1, 2, 3], 8));
            bad(m.flute_lookup(c, &mut pre, &x, &vec![0; 1 << 13], 8));
            bad(m.flute_lookup(c, &mut pre, &x, &[], 8));
            bad(m.flute_lookup(c, &mut pre, &x, &[1, 2, 3, 256], 8));
            bad(m.flute_lookup(c, &mut pre, &x, &t4, 0));
            bad(m.flute_lookup(c, &mut pre, &x, &t4, 65));
            bad(m.flute_lookup(c, &mut pre, &x[..2], &[1, 2], 8));
            // Index bits not a multiple of log n.
            bad(m.flute_lookup(c, &mut pre, &x[..3], &t4, 8));
            // More lookups than preprocessed (3 > 2).
            bad(m.flute_lookup(c, &mut pre, &x, &t4, 8));
            assert!(pre.take(3).is_err());
            let mut other = FlutePrepro::empty(3).unwrap();
            assert!(other.append(pre.clone()).is_err());
            assert_eq!(pre.len(), 2);
            // Still usable after the refusals.
            m.flute_lookup(c, &mut pre, &x[..4], &t4, 8).unwrap()
        }
    };
    let x = bits(&[3, 1, 2], 2);
    let (x0, x1) = share_bits(&x, 31);
    let (y0, y1) = run(party(x0), party(x1));
    assert_eq!(open_xor(&y0, &y1), vec![4, 2]);
}

#[test]
fn empty_lookup() {
    let (a, b) = run(
        |m, c| {
            let mut pre = m.flute_preprocess(c, 0, 3).unwrap();
            m.flute_lookup(c, &mut pre, &[], &[0; 8], 8).unwrap()
        },
        |m, c| {
            let mut pre = m.flute_preprocess(c, 0, 3).unwrap();
            m.flute_lookup(c, &mut pre, &[], &[0; 8], 8).unwrap()
        },
    );
    assert!(a.is_empty() && b.is_empty());
}

fn open_xor(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}
