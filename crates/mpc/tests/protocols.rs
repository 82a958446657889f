//! Two-party tests of every share-level protocol: the exact relation (or the stated error
//! bound) on every element for random inputs and the edge values of the ring, sizes that are
//! not multiples of any block, typed errors on bad arguments.

#![allow(clippy::needless_range_loop)]

mod common;

use common::*;
use nectar_mpc::{MixedWidth, Mpc};
use nectar_net::Channel;

const N: usize = 1003;

#[test]
fn and_xor_not() {
    for n in [0usize, 1, N] {
        let a: Vec<bool> = values(n, 8, 3).iter().map(|v| v & 1 == 1).collect();
        let b: Vec<bool> = values(n, 8, 4).iter().map(|v| v & 2 == 2).collect();
        let (a0, a1) = share_bits(&a, 5);
        let (b0, b1) = share_bits(&b, 6);
        let ((z0, x0, n0), (z1, x1, n1)) = run(
            move |m, c| {
                (
                    m.and(c, &a0, &b0).unwrap(),
                    m.xor(&a0, &b0).unwrap(),
                    m.not(&a0),
                )
            },
            move |m, c| {
                (
                    m.and(c, &a1, &b1).unwrap(),
                    m.xor(&a1, &b1).unwrap(),
                    m.not(&a1),
                )
            },
        );
        let (z, x, nn) = (
            open_bits(&z0, &z1),
            open_bits(&x0, &x1),
            open_bits(&n0, &n1),
        );
        for i in 0..a.len() {
            assert_eq!(z[i], a[i] & b[i], "and at {i}");
            assert_eq!(x[i], a[i] ^ b[i]);
            assert_eq!(nn[i], !a[i]);
        }
    }
}

#[test]
fn b2a_and_mux() {
    for l in [1u32, 13, 32, 64] {
        let b: Vec<bool> = values(N, 8, 7).iter().map(|v| v & 1 == 1).collect();
        let x = values(N, l.max(2), 8)
            .iter()
            .map(|v| v & mask(l))
            .collect::<Vec<_>>();
        let (b0, b1) = share_bits(&b, 9);
        let (x0, x1) = share(&x, l, 10);
        let ((a0, m0), (a1, m1)) = run(
            move |m, c| (m.b2a(c, &b0, l).unwrap(), m.mux(c, &b0, &x0, l).unwrap()),
            move |m, c| (m.b2a(c, &b1, l).unwrap(), m.mux(c, &b1, &x1, l).unwrap()),
        );
        let (a, mx) = (open(&a0, &a1, l), open(&m0, &m1, l));
        for i in 0..b.len() {
            assert_eq!(a[i], b[i] as u64, "b2a l={l} at {i}");
            assert_eq!(mx[i], if b[i] { x[i] } else { 0 }, "mux l={l} at {i}");
        }
    }
}

#[test]
fn millionaire_batched_all_widths() {
    for bits in [1u32, 4, 5, 31, 63, 64] {
        let batch = 3;
        let y = values(200, bits.max(2), 11)
            .iter()
            .map(|v| v & mask(bits))
            .collect::<Vec<_>>();
        let mut x = values(208 * batch - 8, bits.max(2), 12)
            .iter()
            .map(|v| v & mask(bits))
            .collect::<Vec<_>>();
        // Equal values and neighbours for the first elements.
        for i in 0..y.len() {
            x[i * batch] = y[i];
            x[i * batch + 1] = y[i].wrapping_add(1) & mask(bits);
        }
        let (xx, yy) = (x.clone(), y.clone());
        let (g0, g1) = run(
            move |m, c| m.millionaire(c, &xx, batch, bits).unwrap(),
            move |m, c| m.millionaire(c, &yy, batch, bits).unwrap(),
        );
        let g = open_bits(&g0, &g1);
        assert_eq!(g.len(), x.len());
        for (t, &gt) in g.iter().enumerate() {
            assert_eq!(gt, x[t] > y[t / batch], "bits={bits} at {t}");
        }
    }
}

#[test]
fn msb_exact_with_edges() {
    for l in [2u32, 17, 32, 64] {
        let x = values(N, l, 13);
        let (x0, x1) = share(&x, l, 14);
        let (s0, s1) = run(
            move |m, c| m.msb(c, &x0, l).unwrap(),
            move |m, c| m.msb(c, &x1, l).unwrap(),
        );
        let s = open_bits(&s0, &s1);
        for i in 0..x.len() {
            assert_eq!(s[i], (x[i] >> (l - 1)) & 1 == 1, "l={l} x={:#x}", x[i]);
        }
    }
}

#[test]
fn less_than_batched_thresholds() {
    let l = 64;
    let f = 18;
    // Seg4GeLU-like thresholds -5, -1.97, 3 plus 0, and inputs hitting them exactly.
    let ts: Vec<u64> = [-5.0f64, -1.97, 3.0, 0.0]
        .iter()
        .map(|t| ring((t * (1u64 << f) as f64).round() as i64, l))
        .collect();
    let mut x = bounded(N, l, 40, 15);
    x.extend(
        ts.iter()
            .flat_map(|&t| [t, t.wrapping_sub(1), t.wrapping_add(1)]),
    );
    let (x0, x1) = share(&x, l, 16);
    let (t0, t1) = (ts.clone(), ts.clone());
    let (r0, r1) = run(
        move |m, c| m.less_than_const(c, &x0, &t0, l, 0).unwrap(),
        move |m, c| m.less_than_const(c, &x1, &t1, l, 0).unwrap(),
    );
    assert_eq!(r0.len(), ts.len());
    for j in 0..ts.len() {
        let b = open_bits(&r0[j], &r1[j]);
        for i in 0..x.len() {
            assert_eq!(
                b[i],
                signed(x[i], l) < signed(ts[j], l),
                "t{j} x={}",
                signed(x[i], l)
            );
        }
    }
}

#[test]
fn less_than_many_thresholds_and_small_ring() {
    // 70 thresholds: two groups of 35; 131: three of 44, the last padded (all groups in one
    // millionaire call); l = 32 as in the mixed bit-width.
    let l = 32;
    for count in [70i64, 131] {
        let ts: Vec<u64> = (0..count).map(|j| ring((j - count / 2) * 1000, l)).collect();
        let mut x = bounded(300, l, 20, 17);
        x.extend(ts.iter().copied());
        let (x0, x1) = share(&x, l, 18);
        let (t0, t1) = (ts.clone(), ts.clone());
        let (r0, r1) = run(
            move |m, c| m.less_than_const(c, &x0, &t0, l, 0).unwrap(),
            move |m, c| m.less_than_const(c, &x1, &t1, l, 0).unwrap(),
        );
        assert_eq!(r0.len(), ts.len());
        for j in 0..ts.len() {
            let b = open_bits(&r0[j], &r1[j]);
            for i in 0..x.len() {
                assert_eq!(b[i], signed(x[i], l) < signed(ts[j], l), "{count} thresholds: t{j} x{i}");
            }
        }
    }
}

#[test]
fn approximate_less_than_ignores_low_bits() {
    let (l, k) = (64u32, 14u32);
    let ts: Vec<u64> = [-516_424i64, 0, 786_432, 12_345]
        .iter()
        .map(|&t| ring(t, l))
        .collect();
    let mut x = bounded(N, l, 24, 19);
    for &t in &ts {
        for d in [-20000i64, -16385, -16384, -1, 0, 1, 16383, 16384, 20000] {
            x.push(ring(signed(t, l) + d, l));
        }
    }
    let (x0, x1) = share(&x, l, 20);
    let (t0, t1) = (ts.clone(), ts.clone());
    let (r0, r1) = run(
        move |m, c| m.less_than_const(c, &x0, &t0, l, k).unwrap(),
        move |m, c| m.less_than_const(c, &x1, &t1, l, k).unwrap(),
    );
    let mut differ = 0;
    for j in 0..ts.len() {
        let b = open_bits(&r0[j], &r1[j]);
        for i in 0..x.len() {
            let (a, t) = (signed(x[i], l) >> k, signed(ts[j], l) >> k);
            let twin = a < t;
            if b[i] != twin {
                // The lost carry only matters when the shifted values coincide.
                assert_eq!(a, t, "x={} t={}", signed(x[i], l), signed(ts[j], l));
                assert!((signed(x[i], l) - signed(ts[j], l)).abs() < 1 << k);
                differ += 1;
            }
        }
    }
    println!("approximate less-than: {differ} bits differ from the twin (all within 2^{k} of a threshold)");
}

#[test]
fn equality_one_hot() {
    let l = 16;
    let ids: Vec<u64> = (0..300u64).map(|i| (i * 7919) % 150).collect();
    let consts: Vec<u64> = (0..150u64).collect(); // two OT groups (128 + 22)
    let (x0, x1) = share(&ids, l, 21);
    let (c0, c1) = (consts.clone(), consts.clone());
    let (r0, r1) = run(
        move |m, c| m.equal_const(c, &x0, &c0, l).unwrap(),
        move |m, c| m.equal_const(c, &x1, &c1, l).unwrap(),
    );
    for j in 0..consts.len() {
        let b = open_bits(&r0[j], &r1[j]);
        for i in 0..ids.len() {
            assert_eq!(b[i], ids[i] == consts[j]);
        }
    }
    // Full ring with edge values.
    let l = 64;
    let x = values(200, l, 22);
    let consts = vec![0, u64::MAX, 1 << 63, x[20]];
    let (x0, x1) = share(&x, l, 23);
    let (c0, c1) = (consts.clone(), consts.clone());
    let (r0, r1) = run(
        move |m, c| m.equal_const(c, &x0, &c0, l).unwrap(),
        move |m, c| m.equal_const(c, &x1, &c1, l).unwrap(),
    );
    for j in 0..consts.len() {
        let b = open_bits(&r0[j], &r1[j]);
        for i in 0..x.len() {
            assert_eq!(b[i], x[i] == consts[j]);
        }
    }
}

/// Error histogram of a truncation (secure − floor) in LSB.
fn trunc_errors(x: &[u64], y: &[u64], l: u32, s: u32) -> [usize; 3] {
    let mut h = [0usize; 3];
    for i in 0..x.len() {
        let want = signed(x[i], l) >> s;
        let e = signed(y[i].wrapping_sub(ring(want, l)) & mask(l), l);
        assert!(
            (-1..=1).contains(&e),
            "x={} want {want} got {}",
            signed(x[i], l),
            signed(y[i], l)
        );
        h[(e + 1) as usize] += 1;
    }
    h
}

type TruncFn = fn(&mut Mpc, &mut dyn Channel, &[u64], u32, u32) -> Vec<u64>;

fn run_trunc(x: &[u64], l: u32, s: u32, f: TruncFn) -> Vec<u64> {
    let (x0, x1) = share(x, l, 24);
    let (y0, y1) = run(
        move |m, c| f(m, c, &x0, l, s),
        move |m, c| f(m, c, &x1, l, s),
    );
    open(&y0, &y1, l)
}

#[test]
fn heuristic_truncation_error_and_bound() {
    for (l, s) in [(64u32, 18u32), (32, 12), (40, 1), (64, 62)] {
        let x = bounded(4 * N, l, l - 2, 25);
        let y = run_trunc(&x, l, s, |m, c, x, l, s| m.trunc(c, x, l, s).unwrap());
        let h = trunc_errors(&x, &y, l, s);
        assert_eq!(h[2], 0, "error is never +1");
        println!("trunc (heuristic) l={l} s={s}: errors -1/0/+1 = {h:?}");
    }
}

#[test]
fn known_msb_truncation() {
    let (l, s) = (64u32, 18u32);
    let x: Vec<u64> = values(N, l, 26);
    for msb in [false, true] {
        let xs: Vec<u64> = x
            .iter()
            .copied()
            .filter(|v| (v >> 63 == 1) == msb)
            .collect();
        let f: TruncFn = if msb {
            |m, c, x, l, s| m.trunc_known_msb(c, x, l, s, true).unwrap()
        } else {
            |m, c, x, l, s| m.trunc_known_msb(c, x, l, s, false).unwrap()
        };
        let y = run_trunc(&xs, l, s, f);
        let h = trunc_errors(&xs, &y, l, s);
        assert_eq!(h[2], 0);
    }
}

#[test]
fn approximate_and_faithful_truncation_any_input() {
    for (l, s) in [(64u32, 18u32), (32, 12), (17, 16), (64, 1)] {
        let x = values(N, l, 27);
        let y = run_trunc(&x, l, s, |m, c, x, l, s| {
            m.trunc_approx(c, x, l, s).unwrap()
        });
        let h = trunc_errors(&x, &y, l, s);
        assert_eq!(h[2], 0);
        println!("trunc (Cheetah approx) l={l} s={s}: errors -1/0/+1 = {h:?}");
        let y = run_trunc(&x, l, s, |m, c, x, l, s| {
            m.trunc_faithful(c, x, l, s).unwrap()
        });
        for i in 0..x.len() {
            assert_eq!(
                signed(y[i], l),
                signed(x[i], l) >> s,
                "faithful l={l} s={s}"
            );
        }
    }
}

#[test]
fn truncation_with_extension() {
    // floor(x / 2^s) − {0, 1} in the wider ring on the domain |x| < 2^(from−2) (`bounded`
    // includes both ends), both carries seen; s = 0 is the exact extension.
    for (from, s, to) in [(51u32, 36u32, 64u32), (51, 18, 64), (20, 5, 37), (40, 0, 64), (51, 36, 51)] {
        let x = bounded(4 * N, from, from - 2, 40);
        let (x0, x1) = share(&x, from, 41);
        let (y0, y1) = run(
            move |mp, c| mp.trunc_extend(c, &x0, from, s, to).unwrap(),
            move |mp, c| mp.trunc_extend(c, &x1, from, s, to).unwrap(),
        );
        let y = open(&y0, &y1, to);
        let mut carries = 0;
        for i in 0..x.len() {
            let want = signed(x[i], from) >> s;
            let e = signed(y[i].wrapping_sub(ring(want, to)) & mask(to), to);
            assert!((-1..=0).contains(&e), "from={from} s={s} to={to}: x={} got {}", signed(x[i], from), signed(y[i], to));
            carries += (e != 0) as usize;
        }
        if s == 0 {
            assert_eq!(carries, 0, "extension is exact");
        } else {
            assert!(carries > 0 && carries < x.len(), "both carries occur ({carries})");
        }
    }
    // Bad arguments are refused.
    let (r0, r1) = run(
        |mp, c| (mp.trunc_extend(c, &[1], 51, 50, 64).is_err(), mp.trunc_extend(c, &[1], 51, 0, 51).is_err(), mp.trunc_extend(c, &[1], 51, 3, 65).is_err()),
        |mp, c| (mp.trunc_extend(c, &[1], 51, 50, 64).is_err(), mp.trunc_extend(c, &[1], 51, 0, 51).is_err(), mp.trunc_extend(c, &[1], 51, 3, 65).is_err()),
    );
    assert_eq!(r0, (true, true, true));
    assert_eq!(r1, (true, true, true));
}

#[test]
fn ring_extension_and_reduction() {
    for (m, n) in [(32u32, 64u32), (20, 37), (3, 64)] {
        let x = bounded(N, m, m - 2, 28);
        let (x0, x1) = share(&x, m, 29);
        let (y0, y1) = run(
            move |mp, c| mp.extend(c, &x0, m, n).unwrap(),
            move |mp, c| mp.extend(c, &x1, m, n).unwrap(),
        );
        let y = open(&y0, &y1, n);
        for i in 0..x.len() {
            assert_eq!(
                signed(y[i], n),
                signed(x[i], m),
                "heuristic extension {m}->{n}"
            );
        }
        // Exact extension on the whole ring.
        let x = values(N, m, 30);
        let (x0, x1) = share(&x, m, 31);
        let (y0, y1) = run(
            move |mp, c| {
                (
                    mp.extend_exact(c, &x0, m, n).unwrap(),
                    mp.reduce(&x0, m).unwrap(),
                )
            },
            move |mp, c| {
                (
                    mp.extend_exact(c, &x1, m, n).unwrap(),
                    mp.reduce(&x1, m).unwrap(),
                )
            },
        );
        let y = open(&y0.0, &y1.0, n);
        let r = open(&y0.1, &y1.1, m);
        for i in 0..x.len() {
            assert_eq!(signed(y[i], n), signed(x[i], m), "exact extension {m}->{n}");
            assert_eq!(r[i], x[i]);
        }
    }
}

#[test]
fn mixed_bit_width_round_trip() {
    let mw = MixedWidth::BUMBLEBEE;
    assert_eq!(mw.small_bound(), (1u64 << 18) as f64);
    // Values up to ±2^17 real units at f = 18 → fit the (32, 12) small ring.
    let x = bounded(N, 64, 17 + 18, 32);
    let (x0, x1) = share(&x, 64, 33);
    let (r0, r1) = run(
        move |m, c| {
            let s = m.to_small(c, &x0, mw).unwrap();
            (s.clone(), m.to_large(c, &s, mw).unwrap())
        },
        move |m, c| {
            let s = m.to_small(c, &x1, mw).unwrap();
            (s.clone(), m.to_large(c, &s, mw).unwrap())
        },
    );
    let small = open(&r0.0, &r1.0, 32);
    let big = open(&r0.1, &r1.1, 64);
    for i in 0..x.len() {
        let want = signed(x[i], 64) >> 6;
        let got = signed(small[i], 32);
        assert!(got == want || got == want - 1);
        assert_eq!(signed(big[i], 64), got << 6);
    }
}

#[test]
fn ot_based_products() {
    for l in [64u32, 37, 1] {
        let x = values(300, l.max(2), 34)
            .iter()
            .map(|v| v & mask(l))
            .collect::<Vec<_>>();
        let y = values(300, l.max(2), 35)
            .iter()
            .map(|v| v & mask(l))
            .collect::<Vec<_>>();
        let (x0, x1) = share(&x, l, 36);
        let (y0, y1) = share(&y, l, 37);
        let (r0, r1) = run(
            move |m, c| {
                (
                    m.mul(c, &x0, &y0, l).unwrap(),
                    m.square(c, &x0, l).unwrap(),
                    m.mul_public(&x0, &[3], l).unwrap(),
                )
            },
            move |m, c| {
                (
                    m.mul(c, &x1, &y1, l).unwrap(),
                    m.square(c, &x1, l).unwrap(),
                    m.mul_public(&x1, &[3], l).unwrap(),
                )
            },
        );
        let (p, s, t) = (
            open(&r0.0, &r1.0, l),
            open(&r0.1, &r1.1, l),
            open(&r0.2, &r1.2, l),
        );
        for i in 0..x.len() {
            assert_eq!(p[i], x[i].wrapping_mul(y[i]) & mask(l));
            assert_eq!(s[i], x[i].wrapping_mul(x[i]) & mask(l));
            assert_eq!(t[i], x[i].wrapping_mul(3) & mask(l));
        }
    }
}

/// `ole`: the client's private vector times the server's, exact, whichever party leads (the
/// lead chooses with its bits; the server leads the first, the client the second).
#[test]
fn ole_of_private_vectors() {
    for l in [64u32, 51, 2] {
        let a = values(301, l, 40).iter().map(|v| v & mask(l)).collect::<Vec<_>>();
        let b = values(301, l, 41).iter().map(|v| v & mask(l)).collect::<Vec<_>>();
        let (a0, b1) = (a.clone(), b.clone());
        let (r0, r1) = run(
            move |m, c| {
                assert_eq!(m.lead(), nectar_net::Role::Server);
                let first = m.ole(c, &a0, l).unwrap();
                assert_eq!(m.lead(), nectar_net::Role::Client);
                (first, m.ole(c, &a0, l).unwrap(), m.ole(c, &[], l).unwrap())
            },
            move |m, c| {
                let first = m.ole(c, &b1, l).unwrap();
                (first, m.ole(c, &b1, l).unwrap(), m.ole(c, &[], l).unwrap())
            },
        );
        for (s, c) in [(&r0.0, &r1.0), (&r0.1, &r1.1)] {
            let p = open(s, c, l);
            for i in 0..a.len() {
                assert_eq!(p[i], a[i].wrapping_mul(b[i]) & mask(l), "l = {l}, element {i}");
            }
        }
        assert!(r0.2.is_empty() && r1.2.is_empty());
    }
}

#[test]
fn reveal_and_constants() {
    let l = 40;
    let x = values(50, l, 38);
    let (x0, x1) = share(&x, l, 39);
    let (a, b) = run(
        move |m, c| {
            let k = m.constant(&[5, 6], l).unwrap();
            let y = m.add_public(&x0, &[1], l).unwrap();
            (
                m.reveal(c, &y, l).unwrap(),
                m.reveal(c, &k, l).unwrap(),
                m.reveal_bits(c, &[true, false]).unwrap(),
            )
        },
        move |m, c| {
            let k = m.constant(&[5, 6], l).unwrap();
            let y = m.add_public(&x1, &[1], l).unwrap();
            (
                m.reveal(c, &y, l).unwrap(),
                m.reveal(c, &k, l).unwrap(),
                m.reveal_bits(c, &[true, true]).unwrap(),
            )
        },
    );
    assert_eq!(a, b);
    assert_eq!(a.1, vec![5, 6]);
    assert_eq!(a.2, vec![false, true]);
    for i in 0..x.len() {
        assert_eq!(a.0[i], x[i].wrapping_add(1) & mask(l));
    }
}

#[test]
fn bad_arguments_are_errors() {
    let (a, b) = run(
        |m, c| {
            [
                m.and(c, &[true], &[true, false]).is_err(),
                m.mux(c, &[true], &[1, 2], 64).is_err(),
                m.msb(c, &[1], 1).is_err(),
                m.b2a(c, &[true], 65).is_err(),
                m.less_than_const(c, &[1], &[0], 8, 7).is_err(),
                m.trunc(c, &[1], 64, 63).is_err(),
                m.extend(c, &[1], 32, 65).is_err(),
                m.millionaire(c, &[1, 2, 3], 2, 8).is_err(),
            ]
        },
        |m, c| {
            [
                m.and(c, &[true], &[true, false]).is_err(),
                m.mux(c, &[true], &[1, 2], 64).is_err(),
                m.msb(c, &[1], 1).is_err(),
                m.b2a(c, &[true], 65).is_err(),
                m.less_than_const(c, &[1], &[0], 8, 7).is_err(),
                m.trunc(c, &[1], 64, 63).is_err(),
                m.extend(c, &[1], 32, 65).is_err(),
                m.add_public(&[1, 2], &[1, 2, 3], 8).is_err(),
            ]
        },
    );
    assert!(a.iter().all(|x| *x), "{a:?}");
    assert!(b.iter().all(|x| *x), "{b:?}");
}

#[test]
fn malformed_or_missing_peer_messages_are_typed_errors() {
    let (a, _) = run(
        |m, c| {
            matches!(
                m.reveal(c, &[1, 2, 3], 32),
                Err(nectar_mpc::MpcError::BadMessage { .. })
            )
        },
        |_m, c| {
            let _ = c.recv();
            c.send(&[1, 2, 3]).unwrap();
            c.flush().unwrap();
        },
    );
    assert!(a, "short opening frame");
    let (a, _) = run(
        |m, c| {
            let (x0, _) = share(&values(100, 64, 1), 64, 2);
            [
                m.msb(c, &x0, 64).is_err(),
                m.and(c, &[true; 9], &[false; 9]).is_err(),
            ]
        },
        |_m, _c| (),
    );
    assert!(a.iter().all(|x| *x), "disconnected peer");
}
