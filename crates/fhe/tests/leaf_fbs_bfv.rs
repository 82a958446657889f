//! LEAF step 6 at full size: the degree-65536 GELU polynomial evaluated by Paterson–Stockmeyer
//! on one encrypted N = 32768 BFV ciphertext (LEAF §3.3, Table 1 "poly" column). Minutes on two
//! cores and ~4 GB of memory, hence ignored by default:
//! `cargo test -p nectar-fhe --test leaf_fbs_bfv -- --ignored --nocapture`. Measured: 345 s on two
//! shared cores, 765 ct-ct products (bound 766), 117 bits of noise budget left, all slots exact.

use nectar_fhe::fbs_poly::{gelu, interpolate, FbsParams};
use nectar_he::bfv::{paterson_stockmeyer, BfvMul, BfvPolyOps};
use nectar_he::{Params, SecretKey};
use nectar_math::Prg;
use rand_core::RngCore;
use std::time::Instant;

#[test]
#[ignore = "minutes: full-size LEAF GELU polynomial on one N = 32768 ciphertext"]
fn leaf_gelu_polynomial_on_bfv_ciphertext() {
    let fp = FbsParams::LEAF;
    let coeffs = interpolate(fp.big_p, &fp.gelu_f().unwrap()).unwrap();
    let g = fp.g_table(gelu);
    let params = Params::leaf_bfv().unwrap();
    let mut prg = Prg::new([21; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let rk = sk.relin_key(&params, &mut prg).unwrap();
    let mul = BfvMul::new(&params).unwrap();
    let n = params.n();
    let (a, p) = (fp.alpha as i64, fp.small_p);
    // Slots α·m + e, m ∈ Z_512, |e| < 64 (what LEAF's packing step produces).
    let ms: Vec<u64> = (0..n).map(|_| prg.next_u64() % p).collect();
    let xs: Vec<u64> = ms
        .iter()
        .map(|&m| {
            let e = (prg.next_u64() % 127) as i64 - 63;
            (a * m as i64 + e).rem_euclid(fp.big_p as i64) as u64
        })
        .collect();
    let ct = sk.encrypt(&params, &params.encode_simd(&xs, 0).unwrap(), &mut prg).unwrap();
    let t0 = Instant::now();
    let mut ops = BfvPolyOps { params: &params, mul: &mul, rk: &rk };
    let (out, st) = paterson_stockmeyer(&mut ops, &ct, &coeffs, None).unwrap();
    let el = t0.elapsed();
    let nr = sk.noise(&params, &out).unwrap();
    eprintln!("LEAF GELU polynomial on N = {n}: {el:?} ({:.2} ms/slot), {st:?}, {nr:?}", el.as_secs_f64() * 1e3 / n as f64);
    let got = params.decode_simd(&sk.decrypt(&params, &out).unwrap()).unwrap();
    let bad = (0..n).filter(|&s| got[s] != fp.alpha * g[ms[s] as usize]).count();
    assert_eq!(bad, 0, "{bad} wrong slots");
}
