//! `nectar bench fhe`: the BFV machinery of LEAF (issue 16) at LEAF's parameters (N = 32768,
//! t = 65537, 669-bit q; REFERENCE.md §6.1), single process, no traffic.
//!
//! - `mul`: one ct × ct product with relinearisation (HPS scale-and-round), averaged over
//!   `reps` products.
//! - `poly`: LEAF §3.3 step 6 — the degree-65536 functional-bootstrapping polynomial of GELU
//!   (Lemma 2, α/2 offset inside f) evaluated by Paterson–Stockmeyer on one encrypted
//!   ciphertext of 32768 slots `α·m + e` (`|e| < α/2`), checked slot by slot against
//!   `α·g(m)`: Table 1's "poly" stage alone.
//! - `gelu`: LEAF Table 1 end to end — `N/n = 32` coefficient RLWE ciphertexts (`n = 1024`,
//!   `q' = 2^27`, messages `m ∈ Z_512` uniform, i.e. inputs `m/16 ∈ [−16, 16)`) through the
//!   switch to `P`, the packing LT, the polynomial, S2C and the modulus / ring switches
//!   ([`nectar_fhe::LeafActivation`]), per-stage seconds, every output decrypted and checked
//!   against the table `g(m) = round(16·GELU(m/16))`, and the mean abs error of `g(m)/16`
//!   against GELU. Key generation is timed apart (the client's, once per key).
//! - `ffn`: LEAF Table 2's BERT-base feed-forward first half — `X·W1` by PCMM on 768 RLWE
//!   ciphertexts (one per input feature, the `tokens` in its first coefficients) with a
//!   768 × 3072 weight matrix, then GELU on the 3072 outputs, `tokens · 3072 / 32768` BFV
//!   ciphertexts (12 at 128 tokens). Inputs uniform in `Z_512`, weights uniform in
//!   `[−256, 256)` (the widest 9-bit weights: the most PCMM noise); every output checked
//!   against `g((W·M) mod 512)`.

use nectar_fhe::fbs_poly::{gelu, interpolate, FbsParams};
use nectar_fhe::{leaf_keygen, LeafActivation, RlweParams, StageTimes};
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
    /// Noise budget left (bits) after the operation (0 for `gelu` / `ffn`, whose outputs are
    /// RLWE ciphertexts checked by decryption instead).
    pub budget_bits: i64,
    pub threads: usize,
    /// `gelu`: per-stage times and counts.
    pub stages: Option<StageTimes>,
    /// `gelu`: seconds of the client's key generation.
    pub keygen_seconds: Option<f64>,
    /// `gelu`: mean |g(m)/16 − GELU(m/16)| over the inputs (LEAF reports 0.025).
    pub mean_abs_error: Option<f64>,
    /// `ffn`: seconds of the PCMM (`X·W1`).
    pub pcmm_seconds: Option<f64>,
    /// `ffn`: the shape `(tokens, hidden, ffn)`.
    pub shape: Option<(usize, usize, usize)>,
    /// `ffn`: serialized bytes of the RLWE ciphertexts into and out of the block (its whole
    /// communication: no interaction inside).
    pub bytes_in_out: Option<(usize, usize)>,
}

/// The line of a whole-pipeline run (`gelu`, `ffn`) over `inputs` evaluated values.
#[allow(clippy::too_many_arguments)]
fn pipeline_line(
    op: &'static str,
    params: &Params,
    threads: usize,
    seconds: f64,
    inputs: usize,
    st: StageTimes,
    mismatches: usize,
    keygen_seconds: f64,
) -> FheBench {
    FheBench {
        op,
        n: params.n(),
        q_bits: params.q_bits(params.max_level()),
        plain: params.plain_modulus(0) as u64,
        seconds,
        ms_per_slot: seconds * 1e3 / inputs as f64,
        products: st.poly_products,
        mismatches,
        budget_bits: 0,
        threads,
        stages: Some(st),
        keygen_seconds: Some(keygen_seconds),
        mean_abs_error: None,
        pcmm_seconds: None,
        shape: None,
        bytes_in_out: None,
    }
}

/// Runs `op` (`mul`, `poly`, `gelu` or `ffn`; `tokens` is `ffn`'s sequence length).
pub fn bench_fhe(op: &str, reps: usize, tokens: usize) -> Result<FheBench, HeError> {
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
            Ok(FheBench { op: "mul", n, q_bits, plain: t, seconds, ms_per_slot: seconds * 1e3 / n as f64, products: reps, mismatches, budget_bits, threads, stages: None, keygen_seconds: None, mean_abs_error: None, pcmm_seconds: None, shape: None, bytes_in_out: None })
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
            Ok(FheBench { op: "poly", n, q_bits, plain: t, seconds, ms_per_slot: seconds * 1e3 / n as f64, products: st.mults, mismatches, budget_bits, threads, stages: None, keygen_seconds: None, mean_abs_error: None, pcmm_seconds: None, shape: None, bytes_in_out: None })
        }
        "gelu" => {
            let fe = |e: nectar_fhe::FheError| HeError::InvalidParams(e.to_string());
            let rp = RlweParams::leaf().map_err(fe)?;
            let fp = FbsParams::LEAF;
            let t0 = Instant::now();
            let (client, eval) = leaf_keygen(&params, &rp, &mut prg).map_err(fe)?;
            let keygen_seconds = t0.elapsed().as_secs_f64();
            let act = LeafActivation::new(&params, &rp, eval, &fp, &fp.gelu_f().map_err(fe)?, rp.n()).map_err(fe)?;
            let count = n / rp.n();
            let ms: Vec<Vec<u32>> = (0..count).map(|_| (0..rp.n()).map(|_| rnd(&mut prg, fp.small_p) as u32).collect()).collect();
            let cts = ms.iter().map(|m| client.rlwe.encrypt(&rp, m, &mut prg)).collect::<Result<Vec<_>, _>>().map_err(fe)?;
            let t0 = Instant::now();
            let (out, st) = act.evaluate(&cts).map_err(fe)?;
            let seconds = t0.elapsed().as_secs_f64();
            let g = fp.g_table(gelu);
            let (mut mismatches, mut err) = (0usize, 0.0f64);
            let sgn = |v: u64| if 2 * v >= fp.small_p { v as f64 - fp.small_p as f64 } else { v as f64 };
            for (m, o) in ms.iter().zip(&out) {
                let got = client.rlwe.decrypt(&rp, o);
                for (&mi, &gi) in m.iter().zip(&got) {
                    mismatches += (gi as u64 != g[mi as usize]) as usize;
                    err += (sgn(gi as u64) / fp.scale as f64 - gelu(sgn(mi as u64) / fp.scale as f64)).abs();
                }
            }
            let inputs = count * rp.n();
            Ok(FheBench {
                mean_abs_error: Some(err / inputs as f64),
                ..pipeline_line("gelu", &params, threads, seconds, inputs, st, mismatches, keygen_seconds)
            })
        }
        "ffn" => {
            let fe = |e: nectar_fhe::FheError| HeError::InvalidParams(e.to_string());
            let rp = RlweParams::leaf().map_err(fe)?;
            let (hidden, ffn) = (768usize, 3072usize);
            if tokens == 0 || tokens > rp.n() {
                return Err(HeError::InvalidParams(format!("bench fhe ffn: tokens in 1..={}", rp.n())));
            }
            let used = tokens.next_power_of_two();
            let fp = FbsParams::LEAF;
            let t0 = Instant::now();
            let (client, eval) = leaf_keygen(&params, &rp, &mut prg).map_err(fe)?;
            let keygen_seconds = t0.elapsed().as_secs_f64();
            let act = LeafActivation::new(&params, &rp, eval, &fp, &fp.gelu_f().map_err(fe)?, used).map_err(fe)?;
            // M: one row per input feature, the tokens in the first coefficients
            let p = fp.small_p;
            let m: Vec<Vec<u32>> = (0..hidden).map(|_| (0..tokens).map(|_| rnd(&mut prg, p) as u32).collect()).collect();
            let w: Vec<i32> = (0..ffn * hidden).map(|_| rnd(&mut prg, 512) as i32 - 256).collect();
            let cts = m.iter().map(|r| client.rlwe.encrypt(&rp, r, &mut prg)).collect::<Result<Vec<_>, _>>().map_err(fe)?;
            let t0 = Instant::now();
            let y = nectar_fhe::pcmm(&rp, &w, &cts).map_err(fe)?;
            let pcmm_seconds = t0.elapsed().as_secs_f64();
            let t1 = Instant::now();
            let (out, st) = act.evaluate(&y).map_err(fe)?;
            let seconds = pcmm_seconds + t1.elapsed().as_secs_f64();
            let g = fp.g_table(gelu);
            let q = rp.n() / used;
            let mut mismatches = 0usize;
            let dec: Vec<Vec<u32>> = out.iter().map(|o| client.rlwe.decrypt(&rp, o)).collect();
            for k in 0..ffn {
                for c in 0..tokens {
                    let pre: i64 = (0..hidden).map(|i| w[k * hidden + i] as i64 * m[i][c] as i64).sum();
                    let want = g[pre.rem_euclid(p as i64) as usize];
                    mismatches += (dec[k / q][(k % q) * used + c] as u64 != want) as usize;
                }
            }
            let inputs = ffn * tokens;
            let bytes_in: usize = cts.iter().map(|c| c.to_bytes(&rp).len()).sum();
            let bytes_out: usize = out.iter().map(|c| c.to_bytes(&rp).len()).sum();
            Ok(FheBench {
                pcmm_seconds: Some(pcmm_seconds),
                shape: Some((tokens, hidden, ffn)),
                bytes_in_out: Some((bytes_in, bytes_out)),
                ..pipeline_line("ffn", &params, threads, seconds, inputs, st, mismatches, keygen_seconds)
            })
        }
        _ => Err(HeError::InvalidParams(format!("bench fhe: unknown op '{op}' (mul, poly, gelu, ffn)"))),
    }
}
