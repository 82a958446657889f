//! `nectar bench fhe`: the BFV machinery of LEAF (issue 16) at LEAF's parameters (N = 32768,
//! t = 65537, 669-bit q; REFERENCE.md §6.1), single process, no traffic.
//!
//! - `mul`: one ct × ct product with relinearisation (HPS scale-and-round), averaged over
//!   `reps` products.
//! - `poly`: LEAF §3.3 step 6 — the degree-65536 functional-bootstrapping polynomial of GELU
//!   (Lemma 2, α/2 offset inside f) evaluated by Paterson–Stockmeyer on one encrypted
//!   ciphertext of 32768 slots `α·m + e` (`|e| < α/2`), checked slot by slot against
//!   `α·g(m)`. This is Table 1's "poly" stage only; the packing LT, S2C and the switches are
//!   not built yet.

use nectar_fhe::fbs_poly::{gelu, interpolate, FbsParams};
use nectar_he::bfv::{paterson_stockmeyer, BfvMul, BfvPolyOps};
use nectar_he::{HeError, Params, SecretKey};
use nectar_math::Prg;
use std::time::Instant;

/// One measurement (one JSON line).
#[derive(Clone, Debug, serde::Serialize)]
pub struct FheBench {
    pub op: &'static str,
    pub n: usize,
    pub q_bits: u32,
    pub plain: u64,
    /// Wall seconds of the measured part (per product for `mul`).
    pub seconds: f64,
    /// ms per slot (`poly`: the amortised cost per evaluated input, LEAF Table 1's unit).
    pub ms_per_slot: f64,
    /// ct × ct products performed.
    pub products: usize,
    /// Slots whose decryption differs from the expected value.
    pub mismatches: usize,
    /// Noise budget left (bits) after the operation.
    pub budget_bits: i64,
    pub threads: usize,
}

/// Runs `op` (`mul` or `poly`).
pub fn bench_fhe(op: &str, reps: usize) -> Result<FheBench, HeError> {
    let params = Params::leaf_bfv()?;
    let n = params.n();
    let t = params.plain_modulus(0) as u64;
    let mut prg = Prg::from_entropy();
    let sk = SecretKey::generate(&params, &mut prg);
    let rk = sk.relin_key(&params, &mut prg)?;
    let mul = BfvMul::new(&params)?;
    let threads = rayon::current_num_threads();
    let q_bits = params.q_bits(params.max_level());
    let rnd = |prg: &mut Prg, m: u64| (prg.next_u128() % m as u128) as u64;
    match op {
        "mul" => {
            let a: Vec<u64> = (0..n).map(|_| rnd(&mut prg, t)).collect();
            let b: Vec<u64> = (0..n).map(|_| rnd(&mut prg, t)).collect();
            let ca = sk.encrypt(&params, &params.encode_simd(&a, 0)?, &mut prg)?;
            let cb = sk.encrypt(&params, &params.encode_simd(&b, 0)?, &mut prg)?;
            let reps = reps.max(1);
            let t0 = Instant::now();
            let mut out = mul.multiply(&params, &ca, &cb, &rk)?;
            for _ in 1..reps {
                out = mul.multiply(&params, &ca, &cb, &rk)?;
            }
            let seconds = t0.elapsed().as_secs_f64() / reps as f64;
            let got = params.decode_simd(&sk.decrypt(&params, &out)?)?;
            let mismatches = (0..n).filter(|&i| got[i] != (a[i] as u128 * b[i] as u128 % t as u128) as u64).count();
            let budget_bits = sk.noise(&params, &out)?.budget_bits;
            Ok(FheBench { op: "mul", n, q_bits, plain: t, seconds, ms_per_slot: seconds * 1e3 / n as f64, products: reps, mismatches, budget_bits, threads })
        }
        "poly" => {
            let fp = FbsParams::LEAF;
            let coeffs = interpolate(fp.big_p, &fp.gelu_f().map_err(|e| HeError::InvalidParams(e.to_string()))?)
                .map_err(|e| HeError::InvalidParams(e.to_string()))?;
            let g = fp.g_table(gelu);
            let (alpha, p) = (fp.alpha as i64, fp.small_p);
            let ms: Vec<u64> = (0..n).map(|_| rnd(&mut prg, p)).collect();
            let xs: Vec<u64> = ms
                .iter()
                .map(|&m| {
                    let e = rnd(&mut prg, 127) as i64 - 63;
                    (alpha * m as i64 + e).rem_euclid(fp.big_p as i64) as u64
                })
                .collect();
            let ct = sk.encrypt(&params, &params.encode_simd(&xs, 0)?, &mut prg)?;
            let t0 = Instant::now();
            let mut ops = BfvPolyOps { params: &params, mul: &mul, rk: &rk };
            let (out, st) = paterson_stockmeyer(&mut ops, &ct, &coeffs, None)?;
            let seconds = t0.elapsed().as_secs_f64();
            let got = params.decode_simd(&sk.decrypt(&params, &out)?)?;
            let mismatches = (0..n).filter(|&s| got[s] != fp.alpha * g[ms[s] as usize]).count();
            let budget_bits = sk.noise(&params, &out)?.budget_bits;
            Ok(FheBench { op: "poly", n, q_bits, plain: t, seconds, ms_per_slot: seconds * 1e3 / n as f64, products: st.mults, mismatches, budget_bits, threads })
        }
        _ => Err(HeError::InvalidParams(format!("bench fhe: unknown op '{op}' (mul, poly)"))),
    }
}
