//! Two-party tests of ROTL (rotl-lut.txt §III–§VI): Π_Rotate, the LUT on arithmetic shares
//! (every index, wrap-around shares, several tables, preprocessing ahead / on demand, the
//! preprocessing / online split of the traffic), bad inputs, and the comparison from LUTs
//! against the OT millionaire.

mod common;

use common::{mask, open, open_bits, run, share, values};
use nectar_math::Prg;
use nectar_mpc::rotate::{rot_left, BitRows};
use nectar_mpc::{Comparison, Mpc};
use nectar_net::Channel;

fn random_rows(h: u32, count: usize, seed: u8) -> BitRows {
    let mut p = Prg::new([seed; 16]);
    let w = (1usize << h).div_ceil(64);
    let m = if h >= 6 { u64::MAX } else { (1u64 << (1u32 << h)) - 1 };
    let words = (0..count * w)
        .map(|i| {
            let v = p.next_u128() as u64;
            if i % w == w - 1 { v & m } else { v }
        })
        .collect();
    BitRows::from_words(h, words).unwrap()
}

#[test]
fn rotate_shares_the_rotated_vector() {
    for h in [1u32, 3, 6, 7, 8, 9] {
        let count = 40;
        let x = random_rows(h, count, h as u8);
        let xc = x.clone();
        let ((p, s), c) = run(
            move |m, ch| m.rotate_bits_server(ch, h, count).unwrap(),
            move |m, ch| m.rotate_bits_client(ch, &xc).unwrap(),
        );
        assert_eq!((p.len(), s.len(), c.len()), (count, count, count));
        let w = (1usize << h).div_ceil(64);
        for i in 0..count {
            let mut want = vec![0u64; w];
            rot_left(h, x.row(i), p[i], &mut want);
            let got: Vec<u64> = s.row(i).iter().zip(c.row(i)).map(|(a, b)| a ^ b).collect();
            assert_eq!(got, want, "h={h} row {i} offset {}", p[i]);
        }
        // the offsets are the server's only and spread over Z_n
        if h <= 3 {
            let mut seen = vec![false; 1 << h];
            p.iter().for_each(|&q| seen[q] = true);
            assert!(seen.iter().all(|&b| b), "offsets {p:?}");
        }
    }
}

fn table(n: usize, lo: u32, seed: u8) -> Vec<u64> {
    let mut p = Prg::new([seed; 16]);
    let mut t: Vec<u64> = (0..n).map(|_| p.next_u128() as u64 & mask(lo)).collect();
    // the extremes of the output ring
    t[0] = mask(lo);
    if n > 2 {
        t[1] = 0;
        t[2] = 1u64 << (lo - 1);
    }
    t
}

/// Every index of the table, with random shares and shares that wrap around `Z_{2^lx}`.
fn indices(n: usize, lx: u32, seed: u8) -> (Vec<u64>, Vec<u64>, Vec<usize>) {
    let mut want = Vec::new();
    let mut x = Vec::new();
    for i in 0..n {
        for k in 0..3 {
            // value ≡ i mod n, spread over the ring
            let hi = ((i as u64).wrapping_mul(0x9e37_79b9) ^ k) << (n.trailing_zeros());
            x.push((hi | i as u64) & mask(lx));
            want.push(i);
        }
    }
    let (mut x0, mut x1) = share(&x, lx, seed);
    // explicit wrap-around shares: x0 = 2^lx − 1 − j, x1 = i + 1 + j
    for i in 0..n {
        for j in [0u64, 5] {
            x0.push(mask(lx).wrapping_sub(j) & mask(lx));
            x1.push((i as u64 + 1 + j) & mask(lx));
            want.push(i);
        }
    }
    (x0, x1, want)
}

#[test]
fn lut_every_index_every_ring() {
    for (h, lx, lo) in [(1u32, 1u32, 64u32), (1, 64, 1), (4, 4, 8), (4, 37, 37), (5, 64, 1), (8, 64, 64), (8, 37, 37), (8, 12, 16)] {
        let n = 1usize << h;
        let t1 = table(n, lo, 3);
        let t2 = table(n, lo, 4);
        let (x0, x1, want) = indices(n, lx, 9);
        let (ta, tb) = ((t1.clone(), t2.clone()), (t1.clone(), t2.clone()));
        let (r0, r1) = run(
            move |m, c| m.rotl_lut(c, &x0, lx, &[&ta.0, &ta.1], lo).unwrap(),
            move |m, c| m.rotl_lut(c, &x1, lx, &[&tb.0, &tb.1], lo).unwrap(),
        );
        for (t, tab) in [&t1, &t2].iter().enumerate() {
            let got = if lo == 1 {
                r0[t].iter().zip(&r1[t]).map(|(a, b)| (a ^ b) & 1).collect()
            } else {
                open(&r0[t], &r1[t], lo)
            };
            for (k, &i) in want.iter().enumerate() {
                assert_eq!(got[k], tab[i], "h={h} lx={lx} lo={lo} table {t} index {i} (lookup {k})");
            }
        }
    }
}

type Costs = (nectar_mpc::PreproCost, nectar_net::Stats, nectar_net::Stats);

/// Preprocess `count` lookups ahead, then two online calls; returns the outputs and, per
/// party, (preprocessing cost, channel stats after preprocessing, after the online calls).
fn ahead(m: &mut Mpc, c: &mut dyn Channel, x: &[u64], t: &[u64], count: usize) -> (Vec<u64>, Costs) {
    m.rotl_preprocess(c, 8, count, 1).unwrap();
    assert_eq!(m.rotl_available(8), count);
    let p = m.prepro_cost();
    let s0 = c.stats();
    let mut out = m.rotl_lut(c, &x[..count / 2], 64, &[t], 64).unwrap().remove(0);
    out.extend(m.rotl_lut(c, &x[count / 2..], 64, &[t], 64).unwrap().remove(0));
    assert_eq!(m.rotl_available(8), 0);
    assert_eq!(m.prepro_cost(), p, "online lookups must not preprocess when enough is stored");
    (out, (p, s0, c.stats()))
}

#[test]
fn preprocessing_ahead_is_consumed_in_order_and_online_is_small() {
    let count = 600;
    let t = table(256, 64, 5);
    let x: Vec<u64> = values(count - 8, 64, 6);
    let (x0, x1) = share(&x, 64, 7);
    let (t0, t1) = (t.clone(), t.clone());
    let ((o0, c0), (o1, c1)) = run(move |m, c| ahead(m, c, &x0, &t0, count), move |m, c| ahead(m, c, &x1, &t1, count));
    let got = open(&o0, &o1, 64);
    for i in 0..count {
        assert_eq!(got[i], t[(x[i] & 255) as usize]);
    }
    // preprocessing: one PPRF message (8 blocks) + 256 bits per lookup, client → server
    let pre = c0.0.bytes_total();
    assert_eq!(pre, c1.0.bytes_total());
    assert!(pre as f64 / count as f64 >= 128.0 + 32.0, "prepro {pre} B");
    // online: 2·8 bits of opening + one 64-bit MUX per lookup, far below the rotation
    let online = (c0.2 - c0.1).bytes_total();
    let per = online as f64 / count as f64;
    assert!(per < 30.0, "online {per} B per lookup");
    assert!(per >= 2.0 + 16.0, "online {per} B per lookup");
}

#[test]
fn lut_refuses_bad_input() {
    let (e0, ()) = run(
        |m, c| {
            vec![
                m.rotl_lut(c, &[1, 2], 8, &[&[1, 2, 3]], 8).unwrap_err().to_string(),
                m.rotl_lut(c, &[1, 2], 8, &[&[1, 256, 3, 4]], 8).unwrap_err().to_string(),
                m.rotl_lut(c, &[1, 300], 8, &[&[1, 2, 3, 4]], 8).unwrap_err().to_string(),
                m.rotl_lut(c, &[1], 1, &[&[0, 1, 2, 3]], 8).unwrap_err().to_string(),
                m.rotl_lut(c, &[1], 8, &[&[0, 1], &[0, 1, 2, 3]], 8).unwrap_err().to_string(),
                m.rotl_lut(c, &[1], 8, &[], 8).unwrap_err().to_string(),
            ]
        },
        |_, _| (),
    );
    assert!(e0[0].contains("power of two"), "{}", e0[0]);
    assert!(e0[1].contains("does not fit Z_2^8"), "{}", e0[1]);
    assert!(e0[2].contains("another ring"), "{}", e0[2]);
    assert!(e0[3].contains("smaller than the table"), "{}", e0[3]);
    assert!(e0[4].contains("different sizes"), "{}", e0[4]);
    assert!(e0[5].contains("without a table"), "{}", e0[5]);
}

#[test]
fn lut_comparison_agrees_with_the_millionaire() {
    for block in [1u32, 3, 4, 5, 8] {
        for bits in [1u32, 5, 36, 63, 64] {
            let batch = 2;
            let y: Vec<u64> = values(60, bits.max(2), 21).iter().map(|v| v & mask(bits)).collect();
            let mut x: Vec<u64> = values(68 * batch - 8, bits.max(2), 22).iter().map(|v| v & mask(bits)).collect();
            for i in 0..y.len() {
                x[i * batch] = y[i];
                x[i * batch + 1] = y[i].wrapping_add(1) & mask(bits);
            }
            let (xx, yy) = (x.clone(), y.clone());
            let (g0, g1) = run(
                move |m, c| {
                    m.set_comparison(Comparison::RotlLut { block }).unwrap();
                    m.millionaire(c, &xx, batch, bits).unwrap()
                },
                move |m, c| {
                    m.set_comparison(Comparison::RotlLut { block }).unwrap();
                    m.millionaire(c, &yy, batch, bits).unwrap()
                },
            );
            let g = open_bits(&g0, &g1);
            for (t, &gt) in g.iter().enumerate() {
                assert_eq!(gt, x[t] > y[t / batch], "block={block} bits={bits} at {t}");
            }
        }
    }
}

#[test]
fn lut_msb_and_less_than_match_the_ot_protocols() {
    for l in [2u32, 37, 64] {
        let x = values(300, l, 31);
        let (x0, x1) = share(&x, l, 32);
        let ts = vec![0u64, 5, mask(l)];
        let go = |m: &mut Mpc, c: &mut dyn Channel, x: &[u64], ts: &[u64], cmp| {
            m.set_comparison(cmp).unwrap();
            (m.msb(c, x, l).unwrap(), m.less_than_const(c, x, ts, l, 0).unwrap())
        };
        let mut res = Vec::new();
        for cmp in [Comparison::Millionaire, Comparison::RotlLut { block: 4 }] {
            let (a, b, t0, t1) = (x0.clone(), x1.clone(), ts.clone(), ts.clone());
            let ((m0, l0), (m1, l1)) = run(move |m, c| go(m, c, &a, &t0, cmp), move |m, c| go(m, c, &b, &t1, cmp));
            let lt: Vec<Vec<bool>> = l0.iter().zip(&l1).map(|(p, q)| open_bits(p, q)).collect();
            res.push((open_bits(&m0, &m1), lt));
        }
        assert_eq!(res[0], res[1], "l={l}");
        for (i, &v) in x.iter().enumerate() {
            assert_eq!(res[1].0[i], v >> (l - 1) & 1 == 1);
        }
    }
}

#[test]
fn bad_block_sizes_are_refused() {
    let (a, _) = run(
        |m, _| {
            (
                m.set_comparison(Comparison::RotlLut { block: 0 }).is_err(),
                m.set_comparison(Comparison::RotlLut { block: 12 }).is_err(),
                m.set_comparison(Comparison::RotlLut { block: 11 }).is_ok(),
            )
        },
        |_, _| (),
    );
    assert_eq!(a, (true, true, true));
}
