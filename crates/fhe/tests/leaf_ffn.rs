//! LEAF's block between two parties (issue 16 item 6, `nectar_fhe::ffn`): shares of `X` in,
//! shares of `act(X·W1 + b1)` out, over an in-memory channel. The BFV side runs at
//! `N = 8192`, `t = 65537` (a 128-bit set) with a table whose Lemma 2 polynomial is shallow
//! enough for it (`f(x) = x + 5α`: the identity on the phase, plus 5 in the message); the GELU
//! table's degree-65536 polynomial needs LEAF's `N = 32768` (`nectar bench fhe`,
//! `nectar demo --suite leaf`). The twin is checked against GELU here.

use nectar_fhe::ffn::{LeafFfnClient, LeafFfnParams, LeafFfnServer, LeafFormat, LeafTable};
use nectar_fhe::fbs_poly::gelu;
use nectar_fhe::rlwe::LEAF_P;
use nectar_fhe::FheError;
use nectar_he::{Params, ParamsLiteral, PlainModulus};
use nectar_math::Prg;
use nectar_net::mem::run_pair;
use nectar_net::Channel;
use rand_core::RngCore;

fn params() -> LeafFfnParams {
    let bfv = Params::new(ParamsLiteral::from_bit_sizes(8192, &[50, 50, 50], Some(50), PlainModulus::Prime(LEAF_P)).unwrap()).unwrap();
    LeafFfnParams::new(bfv, LeafFormat::wide().unwrap()).unwrap()
}

/// `v` mod 2^27 read as signed.
fn signed27(v: u64) -> i64 {
    let v = (v & ((1 << 27) - 1)) as i64;
    if v >= 1 << 26 {
        v - (1 << 27)
    } else {
        v
    }
}

#[test]
fn shares_in_shares_out_through_the_whole_pipeline() {
    let (bfv_cts, bytes_in) = block_within_noise(5, 12, 300);
    assert_eq!(bfv_cts, 1);
    // the client sends a seed and 27 bits per used input coefficient, nothing else
    assert!(bytes_in <= 16 + 16 + 8 * 2 + (5 * 12 * 27usize).div_ceil(8) as u64 + 64, "{bytes_in} bytes in");
}

#[test]
fn more_tokens_than_one_ring() {
    // 1030 tokens over RLWE degree 1024: two chunks (1024 + 6 rows), each its own RLWE
    // ciphertexts, packed together (2 × 5 RLWE ciphertexts of 1024 slots: 2 BFV ciphertexts of
    // 8 at N = 8192); still one flight in with 27 bits per input coefficient.
    let (rows, in_dim, out_dim) = (1030usize, 3usize, 5usize);
    let (bfv_cts, bytes_in) = block_within_noise(rows, in_dim, out_dim);
    assert_eq!(bfv_cts, 2);
    assert!(bytes_in <= 16 + 16 + 8 * 2 + (rows * in_dim * 27).div_ceil(8) as u64 + 64, "{bytes_in} bytes in");
}

/// Runs the block on random shares of `rows × in_dim` inputs with the table `x + 5` and checks
/// every output against the exact pre-activation within the noise; returns the BFV
/// ciphertexts the server evaluated and the bytes it received.
fn block_within_noise(rows: usize, in_dim: usize, out_dim: usize) -> (usize, u64) {
    let p = params();
    let fmt = p.fmt.clone();
    let (xf, wf, pf) = (fmt.x_frac, fmt.w_frac(), fmt.pre_frac());
    assert_eq!((xf, wf, pf), (10, 11, 21));
    let mut prg = Prg::new([9; 16]);
    let unif = |prg: &mut Prg, lo: f64, hi: f64| lo + (hi - lo) * (prg.next_u32() as f64 / u32::MAX as f64);
    // X in [-2, 2] at 10 bits, W in [-0.25, 0.25] at 11 bits, bias in [-0.5, 0.5] at 21 bits:
    // |z| < 6.5; 16z + 5 (the table's output) inside the output bound 2^25 / Δ' = 256
    let x: Vec<i64> = (0..rows * in_dim).map(|_| (unif(&mut prg, -2.0, 2.0) * (1u64 << xf) as f64).round() as i64).collect();
    let w: Vec<i32> = (0..in_dim * out_dim).map(|_| (unif(&mut prg, -0.25, 0.25) * (1u64 << wf) as f64).round() as i32).collect();
    let bias: Vec<u32> = (0..out_dim).map(|_| ((unif(&mut prg, -0.5, 0.5) * (1u64 << pf) as f64).round() as i64) as u32 & ((1 << 27) - 1)).collect();
    let xc: Vec<u64> = (0..x.len()).map(|_| (prg.next_u32() & ((1 << 27) - 1)) as u64).collect();
    let xs: Vec<u64> = x.iter().zip(&xc).map(|(&v, &c)| (v as u64).wrapping_sub(c) & ((1 << 27) - 1)).collect();
    let alpha = fmt.rp.alpha();
    let table = LeafTable { f: (0..LEAF_P).map(|v| (v + 5 * alpha) % LEAF_P).collect(), out: vec![] };
    let (pc, ps) = (p.clone(), p);
    let (yc, (ys, bytes_in)) = run_pair(
        |ch| {
            let mut prg = Prg::new([1; 16]);
            let mut c = LeafFfnClient::setup(ch, pc, &mut prg).unwrap();
            c.ffn1(ch, &mut prg, &xc, rows, in_dim, out_dim).unwrap()
        },
        |ch| {
            let mut prg = Prg::new([2; 16]);
            let mut s = LeafFfnServer::setup(ch, ps).unwrap();
            let before = ch.stats();
            let y = s.ffn1(ch, &mut prg, &xs, &w, &bias, &table, rows, in_dim, out_dim).unwrap();
            (y, (s.stages().bfv_cts, ch.stats().bytes_recv - before.bytes_recv))
        },
    );
    let (bfv_cts, bytes_in) = bytes_in;
    let mut worst = 0.0f64;
    for r in 0..rows {
        for k in 0..out_dim {
            let mut z = bias[k] as i64;
            if z >= 1 << 26 {
                z -= 1 << 27;
            }
            let z = (z as f64 + (0..in_dim).map(|i| (x[r * in_dim + i] * w[i * out_dim + k] as i64) as f64).sum::<f64>()) / (1u64 << pf) as f64;
            // output phase = q'/P·(α·16z + e + 5α) ≈ Δ'·(16z + 5), Δ' = 2^17
            let got = signed27(yc[r * out_dim + k].wrapping_add(ys[r * out_dim + k])) as f64 / (1u64 << 17) as f64;
            worst = worst.max((got - (16.0 * z + 5.0)).abs());
        }
    }
    // the noise e at P is σ ≈ 7.6 (the switch's rounding of a·s̲, σ ≈ 7.4, and the PCMM's):
    // e/α < 0.6 is ≈ 5σ at α = 64
    assert!(worst < 0.6, "worst error {worst} (in units of the 1/16 grid)");
    // the server's shares are masks: not the values
    assert!(ys.iter().zip(&yc).filter(|(a, b)| a == b).count() < 3);
    (bfv_cts, bytes_in)
}

#[test]
fn twin_matches_gelu_within_the_grid() {
    // LEAF's set on [-16, 16) and the suite's on [-32, 32), both on the 1/16 grid
    for (fmt, range) in [(LeafFormat::leaf().unwrap(), 16), (LeafFormat::wide().unwrap(), 32)] {
        let t = fmt.table(gelu).unwrap();
        assert_eq!((t.f.len() as u64, t.out.len() as u64), (LEAF_P, fmt.fbs.small_p));
        assert_eq!(fmt.x_frac + fmt.w_frac(), fmt.pre_frac());
        // a 1 × 1 × 1 product: x = v at x_frac bits, w = 1 at w_frac bits, no bias
        let (one, xs) = (1i32 << fmt.w_frac(), 1i64 << fmt.x_frac);
        let mut worst = 0.0f64;
        for v in -range * xs..range * xs - xs / 16 {
            let x = [(v as u64 & ((1 << 27) - 1)) as u32];
            let y = fmt.twin(&t, &x, &[one], &[0], 1, 1, 1).unwrap()[0];
            let got = signed27(y as u64) as f64 / (1u64 << fmt.out_frac) as f64;
            worst = worst.max((got - gelu(v as f64 / xs as f64)).abs());
        }
        // half a grid step plus the switch to P's shift of the bin edges (its rounding, 1/2,
        // and the scale P/q'·2^pre_frac = 16α·(1 + 1/65536), ≤ 1/2 at the range's end: 1/α
        // of a step) times GELU's slope (≤ 1.13), plus the output rounding
        let bound = 1.13 * (1.0 / 32.0 + 1.0 / (16.0 * fmt.fbs.alpha as f64)) + 1e-5;
        assert!(worst <= bound, "range {range}: worst {worst} > {bound}");
        assert!(fmt.twin(&t, &[0; 3], &[1; 2], &[0], 1, 3, 1).is_err());
    }
    // a table beyond the output bound is refused
    assert!(LeafFormat::leaf().unwrap().table(|x| 4.0 * x).is_err());
}

#[test]
fn malformed_peer_messages_are_errors() {
    let p = params();
    let ps = p.clone();
    // a key message that does not parse
    let (_, server) = run_pair(
        move |ch| {
            ch.send(b"not keys").unwrap();
            ch.flush().unwrap();
        },
        move |ch| LeafFfnServer::setup(ch, ps).err(),
    );
    assert!(matches!(server, Some(FheError::Malformed(_))), "{server:?}");
    // the client side: a reply of the wrong length
    let (_, got) = run_pair(
        |ch| {
            let _keys = ch.recv().unwrap();
            let _input = ch.recv().unwrap();
            ch.send(&[0u8; 10]).unwrap();
            ch.flush().unwrap();
        },
        |ch| {
            let mut prg = Prg::new([3; 16]);
            let mut c = LeafFfnClient::setup(ch, p, &mut prg).unwrap();
            c.ffn1(ch, &mut prg, &[0; 4], 2, 2, 3).err()
        },
    );
    assert!(matches!(got, Some(FheError::Malformed(_))), "{got:?}");
}
