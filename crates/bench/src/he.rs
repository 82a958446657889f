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
