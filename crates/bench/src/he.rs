//! `nectar bench he`: per-operation timings of the RLWE layer for one ring degree.
//!
//! Parameter sets: SEAL's default BFV coefficient moduli for 128-bit security (its
//! `CoeffModulus::BFVDefault`: N = 4096 {36,36 | 37}, 8192 {43,43,44,44 | 44},
//! 16384 {48,48,48,49,49,49,49,49 | 49}; the last prime is the special prime, as in SEAL) with
//! a 20-bit batching prime `t`, so times compare with SEAL's `sealbench` at the same N and
//! modulus size; at N = 8192 also the BumbleBee OLT preset. Each time is the median of
//! repeated runs (at least 5, up to ~0.3 s per operation), in microseconds, on the calling
//! thread pool (rayon; parallel over RNS limbs). Both wall-clock time and process CPU time
//! (all threads; on Linux) are recorded: on a shared, oversubscribed machine the CPU time is
//! the robust one (time spent waiting for a core does not count). `scripts/seal_bench`
//! measures Microsoft SEAL the same way.

use nectar_he::keys::SecretKey;
use nectar_he::{Ciphertext, HeError, Params, ParamsLiteral, PlainModulus, PlainNtt, Plaintext};
use nectar_math::modulus::ntt_primes;
use nectar_math::Prg;
use rand_core::RngCore;
use std::time::Instant;

/// One measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct HeBenchLine {
    /// Ring degree.
    pub n: usize,
    /// Parameter-set name (`seal-default` or `bumblebee-olt`).
    pub params: String,
    /// Ciphertext prime bit sizes (`|` before the special prime).
    pub moduli: String,
    /// Operation name.
    pub op: String,
    /// Median wall-clock time in microseconds (0 for size-only lines).
    pub micros: f64,
    /// Median process CPU time (all threads) in microseconds; equal to `micros` where the
    /// platform has no process CPU clock.
    pub cpu_micros: f64,
    /// Bytes (ciphertext sizes), when the line is a size.
    pub bytes: Option<usize>,
    /// rayon threads available.
    pub threads: usize,
}

/// Process CPU time (all threads) in microseconds, if the platform exposes it.
#[cfg(target_os = "linux")]
fn process_cpu_micros() -> Option<f64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_PROCESS_CPUTIME_ID is a valid clock.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as f64 * 1e6 + ts.tv_nsec as f64 / 1e3)
}

#[cfg(not(target_os = "linux"))]
fn process_cpu_micros() -> Option<f64> {
    None
}

/// `(median wall µs, median CPU µs)` of repeated runs of `f`.
fn median_micros(mut f: impl FnMut()) -> (f64, f64) {
    median_micros_setup(|| (), |()| f())
}

/// As [`median_micros`], with an untimed `setup` before each run whose result `f` consumes
/// (e.g. a fresh copy for an in-place operation).
fn median_micros_setup<T>(mut setup: impl FnMut() -> T, mut f: impl FnMut(T)) -> (f64, f64) {
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    let start = Instant::now();
    while wall.len() < 5 || (start.elapsed().as_secs_f64() < 0.3 && wall.len() < 200) {
        let x = setup();
        let c = process_cpu_micros();
        let t = Instant::now();
        f(x);
        let w = t.elapsed().as_secs_f64() * 1e6;
        wall.push(w);
        cpu.push(match (c, process_cpu_micros()) {
            (Some(a), Some(b)) => b - a,
            _ => w,
        });
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    (med(&mut wall), med(&mut cpu))
}

fn seal_default(n: usize) -> Result<(Vec<u32>, u32), HeError> {
    match n {
        4096 => Ok((vec![36, 36], 37)),
        8192 => Ok((vec![43, 43, 44, 44], 44)),
        16384 => Ok((vec![48, 48, 48, 49, 49, 49, 49, 49], 49)),
        _ => Err(HeError::InvalidParams(format!("bench he: N = {n} not in 4096, 8192, 16384"))),
    }
}

fn bench_set(name: &str, params: &Params, out: &mut Vec<HeBenchLine>) -> Result<(), HeError> {
    let n = params.n();
    let mut bits: Vec<String> = params.q_moduli().iter().map(|m| m.bits().to_string()).collect();
    if let Some(sp) = params.special_modulus() {
        bits.push(format!("| {}", sp.bits()));
    }
    let moduli = bits.join(",");
    let threads = rayon::current_num_threads();
    let mut push = |op: &str, (micros, cpu_micros): (f64, f64), bytes: Option<usize>| {
        out.push(HeBenchLine {
            n,
            params: name.into(),
            moduli: moduli.clone(),
            op: op.into(),
            micros,
            cpu_micros,
            bytes,
            threads,
        })
    };
    let mut prg = Prg::new([0x42; 16]);
    for (i, m) in params.q_moduli().iter().chain(params.special_modulus()).enumerate() {
        let plan =
            nectar_math::ntt::NttPlan::new(n, m.value()).ok_or_else(|| HeError::InvalidParams("no NTT plan".into()))?;
        let mut buf: Vec<u64> = (0..n).map(|_| prg.next_u64() % m.value()).collect();
        let t = median_micros(|| {
            plan.forward(&mut buf);
            plan.inverse(&mut buf);
        });
        push(&format!("ntt_fwd_inv_prime{i}_{}bit", m.bits()), t, None);
    }
    let sk = SecretKey::generate(params, &mut prg);
    let pk = sk.public_key(params, &mut prg);
    let gk = sk.galois_keys(params, &[3], &mut prg)?;
    let t = params.plain_modulus(0);
    let m: Vec<u64> = (0..n).map(|_| (prg.next_u64() as u128 % t) as u64).collect();
    let pt = Plaintext::from_coeffs(params, &m, 0)?;
    let pntt = PlainNtt::new(params, &pt, params.max_level())?;
    let mut ct = sk.encrypt(params, &pt, &mut prg)?;
    push("encrypt_sk", median_micros(|| ct = sk.encrypt(params, &pt, &mut prg).unwrap_or_else(|_| ct.clone())), None);
    push(
        "encrypt_pk",
        median_micros(|| {
            let _ = pk.encrypt(params, &pt, &mut prg);
        }),
        None,
    );
    push("ct_bytes_fresh_seeded", (0.0, 0.0), Some(ct.serialize(params).len()));
    push(
        "decrypt",
        median_micros(|| {
            let _ = sk.decrypt(params, &ct);
        }),
        None,
    );
    let mut ctn = ct.clone();
    ctn.to_ntt(params);
    push(
        "mul_plain_ntt_form",
        median_micros(|| {
            let _ = ctn.mul_plain(params, &pntt);
        }),
        None,
    );
    let mut ctc = ct.clone();
    ctc.to_coeff(params);
    push(
        "mul_plain_incl_ntt",
        median_micros(|| {
            let _ = ctc.mul_plain(params, &pntt);
        }),
        None,
    );
    push(
        "plain_to_ntt",
        median_micros(|| {
            let _ = PlainNtt::new(params, &pt, params.max_level());
        }),
        None,
    );
    push(
        "automorphism_keyswitch",
        median_micros(|| {
            let _ = ctc.automorphism(params, 3, &gk);
        }),
        None,
    );
    push(
        "automorphism_keyswitch_ntt_input",
        median_micros(|| {
            let _ = ctn.automorphism(params, 3, &gk);
        }),
        None,
    );
    push(
        "mod_switch_down",
        // In place on a fresh copy (the copy untimed), as SEAL's `mod_switch_to_next_inplace`
        // in scripts/seal_bench.
        median_micros_setup(
            || ctc.clone(),
            |mut c| {
                let _ = c.mod_switch_down(params);
            },
        ),
        None,
    );
    push("ct_bytes_full", (0.0, 0.0), Some(ctc.serialize(params).len()));
    let mut low = ctc.clone();
    low.mod_switch_to(params, 1)?;
    push("ct_bytes_one_prime", (0.0, 0.0), Some(low.serialize(params).len()));
    let _: &Ciphertext = &low;
    Ok(())
}

/// One line per call of `record`, with the set's fixed fields.
struct Recorder<'a> {
    n: usize,
    name: &'a str,
    moduli: String,
    threads: usize,
    out: &'a mut Vec<HeBenchLine>,
}

impl Recorder<'_> {
    fn record(&mut self, op: &str, (micros, cpu_micros): (f64, f64)) {
        self.out.push(HeBenchLine {
            n: self.n,
            params: self.name.into(),
            moduli: self.moduli.clone(),
            op: op.into(),
            micros,
            cpu_micros,
            bytes: None,
            threads: self.threads,
        });
    }
}

/// `"b0,b1,…,| bs"`: prime bit sizes, the special prime last.
fn moduli_string(q: impl Iterator<Item = u64>, special: Option<u64>) -> String {
    let bits = |v: u64| 64 - v.leading_zeros();
    let mut parts: Vec<String> = q.map(|v| bits(v).to_string()).collect();
    if let Some(sp) = special {
        parts.push(format!("| {}", bits(sp)));
    }
    parts.join(",")
}

/// NTT forward + inverse on the first prime (`ntt_fwd_inv_prime0_<bits>bit`).
fn bench_ntt_prime0(rec: &mut Recorder, q0: u64, prg: &mut Prg) -> Result<(), HeError> {
    let n = rec.n;
    let plan = nectar_math::ntt::NttPlan::new(n, q0).ok_or_else(|| HeError::InvalidParams("no NTT plan".into()))?;
    let mut buf: Vec<u64> = (0..n).map(|_| prg.next_u64() % q0).collect();
    let t = median_micros(|| {
        plan.forward(&mut buf);
        plan.inverse(&mut buf);
    });
    rec.record(&format!("ntt_fwd_inv_prime0_{}bit", 64 - q0.leading_zeros()), t);
    Ok(())
}

/// BFV ct × ct at LEAF's set ([`Params::leaf_bfv`]: N = 32768, t = 65537, 13 ciphertext
/// primes of 669 bits + a 60-bit special prime), two fresh ciphertexts in coefficient form at
/// the top level (as SEAL keeps BFV ciphertexts): `bfv_mul_relin` (HPS tensor + scale-and-round
/// + relinearisation, [`nectar_he::bfv::BfvMul::multiply`]), its two halves `bfv_mul` and
/// `bfv_relin`, and `bfv_square_relin`.
fn bench_bfv_leaf(out: &mut Vec<HeBenchLine>) -> Result<(), HeError> {
    use nectar_he::bfv::BfvMul;
    let params = Params::leaf_bfv()?;
    let n = params.n();
    let moduli = moduli_string(params.q_moduli().iter().map(|m| m.value()), params.special_modulus().map(|m| m.value()));
    let mut rec = Recorder { n, name: "leaf-bfv", moduli, threads: rayon::current_num_threads(), out };
    let mut prg = Prg::new([0x43; 16]);
    bench_ntt_prime0(&mut rec, params.q_moduli()[0].value(), &mut prg)?;
    let sk = SecretKey::generate(&params, &mut prg);
    let rk = sk.relin_key(&params, &mut prg)?;
    let mul = BfvMul::new(&params)?;
    let t = params.plain_modulus(0);
    let mut fresh = || -> Result<Ciphertext, HeError> {
        let m: Vec<u64> = (0..n).map(|_| (prg.next_u64() as u128 % t) as u64).collect();
        let mut ct = sk.encrypt(&params, &Plaintext::from_coeffs(&params, &m, 0)?, &mut prg)?;
        ct.to_coeff(&params);
        Ok(ct)
    };
    let (a, b) = (fresh()?, fresh()?);
    rec.record(
        "bfv_mul_relin",
        median_micros(|| {
            let _ = mul.multiply(&params, &a, &b, &rk);
        }),
    );
    rec.record(
        "bfv_mul",
        median_micros(|| {
            let _ = mul.tensor(&params, &a, &b);
        }),
    );
    let t3 = mul.tensor(&params, &a, &b)?;
    rec.record(
        "bfv_relin",
        median_micros(|| {
            let _ = t3.relinearize(&params, &rk);
        }),
    );
    rec.record(
        "bfv_square_relin",
        median_micros(|| {
            let _ = mul.square(&params, &a, &rk);
        }),
    );
    Ok(())
}

/// CKKS at one of BLB's executable sets
/// ([`nectar_linear::layer::blb_fused::executable_params`]: primes {60, 40, 40×depth} + a
/// 60-bit special prime, Δ = 2^40), fresh ciphertexts at the top level (NTT form, as
/// encryption leaves them and as SEAL keeps CKKS ciphertexts): `ckks_mul_relin_rescale` (the
/// product step of BLB's blocks), `ckks_mul` (tensor, 3 components), `ckks_relin`,
/// `ckks_mul_relin`, `ckks_rescale` (of the relinearised product: coefficient form, as
/// relinearisation leaves it), `ckks_rescale_ntt_input` (of an NTT-form ciphertext, SEAL's case)
/// and `ckks_rotate1` (slot rotation by one: automorphism + key switch).
fn bench_ckks_blb(name: &str, n: usize, depth: u32, out: &mut Vec<HeBenchLine>) -> Result<(), HeError> {
    use nectar_he::ckks::{CkksEvaluator, CkksSecretKey};
    let p = nectar_linear::layer::blb_fused::executable_params(n, depth).map_err(|e| HeError::InvalidParams(e.to_string()))?;
    let level = p.max_level();
    let moduli = moduli_string((0..level).filter_map(|i| p.prime(i)), p.special_prime());
    let mut rec = Recorder { n, name, moduli, threads: rayon::current_num_threads(), out };
    let mut prg = Prg::new([0x44; 16]);
    bench_ntt_prime0(&mut rec, p.prime(0).ok_or_else(|| HeError::InvalidParams("no prime".into()))?, &mut prg)?;
    let sk = CkksSecretKey::generate(&p, &mut prg);
    let ev = CkksEvaluator::new(&p).with_relin_key(sk.relin_key(&p, &mut prg)?).with_galois_keys(sk.galois_keys(&p, &[1], false, &mut prg)?);
    let mut fresh = || -> Result<_, HeError> {
        let v: Vec<f64> = (0..p.slots()).map(|_| (prg.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0).collect();
        sk.encrypt(&p, &p.encode_real(&v, level, p.default_scale())?, &mut prg)
    };
    let (a, b) = (fresh()?, fresh()?);
    rec.record(
        "ckks_mul_relin_rescale",
        median_micros(|| {
            let _ = ev.mul_relin(&a, &b).and_then(|c| ev.rescale(&c));
        }),
    );
    rec.record(
        "ckks_mul",
        median_micros(|| {
            let _ = ev.mul(&a, &b);
        }),
    );
    let t3 = ev.mul(&a, &b)?;
    rec.record(
        "ckks_relin",
        median_micros(|| {
            let _ = ev.relinearize(&t3);
        }),
    );
    rec.record(
        "ckks_mul_relin",
        median_micros(|| {
            let _ = ev.mul_relin(&a, &b);
        }),
    );
    let r = ev.relinearize(&t3)?;
    rec.record(
        "ckks_rescale",
        median_micros(|| {
            let _ = ev.rescale(&r);
        }),
    );
    rec.record(
        "ckks_rescale_ntt_input",
        median_micros(|| {
            let _ = ev.rescale(&a);
        }),
    );
    rec.record(
        "ckks_rotate1",
        median_micros(|| {
            let _ = ev.rotate(&a, 1);
        }),
    );
    Ok(())
}

/// The kernel comparison of issue 50 (item 3) with SEAL: BFV ct × ct + relinearisation at
/// LEAF's set (`leaf-bfv`, N = 32768) and CKKS ct × ct / relinearisation / rescale / rotation at
/// BLB's two executable sets (`blb-exec-d4`: N = 2^14, depth 4; `blb-exec-d7`: N = 2^15,
/// depth 7). `scripts/seal_bench/seal_bench.cpp kernels` measures SEAL at the same sets.
pub fn bench_he_kernels() -> Result<Vec<HeBenchLine>, HeError> {
    let mut out = Vec::new();
    bench_bfv_leaf(&mut out)?;
    bench_ckks_blb("blb-exec-d4", 1 << 14, 4, &mut out)?;
    bench_ckks_blb("blb-exec-d7", 1 << 15, 7, &mut out)?;
    Ok(out)
}

/// Runs the HE benchmark for ring degree `n` (4096, 8192 or 16384).
pub fn bench_he(n: usize) -> Result<Vec<HeBenchLine>, HeError> {
    let (q, sp) = seal_default(n)?;
    let t = ntt_primes(20, n, 1, &[]).ok_or_else(|| HeError::InvalidParams("no 20-bit t".into()))?[0];
    let params = Params::new(ParamsLiteral::from_bit_sizes(n, &q, Some(sp), PlainModulus::Prime(t))?)?;
    let mut out = Vec::new();
    bench_set("seal-default", &params, &mut out)?;
    if n == 8192 {
        bench_set("bumblebee-olt", &Params::bumblebee_olt(), &mut out)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn rejects_unknown_degree() {
        assert!(super::bench_he(2048).is_err());
    }
}
