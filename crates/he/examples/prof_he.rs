//! Profiling helper: per-operation wall and CPU time (CPU = sum over the process's threads,
//! from /proc/self/task/*/schedstat; robust against other processes on a loaded machine).
use nectar_he::*;
use nectar_math::Prg;
use rand_core::RngCore;
use std::hint::black_box;

fn cpu_ns() -> u64 {
    let mut s = 0;
    if let Ok(rd) = std::fs::read_dir("/proc/self/task") {
        for e in rd.flatten() {
            if let Ok(t) = std::fs::read_to_string(e.path().join("schedstat")) {
                s += t.split_whitespace().next().and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
            }
        }
    }
    s
}

fn measure(name: &str, iters: usize, mut f: impl FnMut()) {
    f();
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    for _ in 0..5 {
        let c = cpu_ns();
        let t = std::time::Instant::now();
        for _ in 0..iters {
            f();
        }
        walls.push(t.elapsed().as_secs_f64() * 1e6 / iters as f64);
        cpus.push((cpu_ns() - c) as f64 / 1e3 / iters as f64);
    }
    walls.sort_by(|a, b| a.total_cmp(b));
    cpus.sort_by(|a, b| a.total_cmp(b));
    println!("{name:<22} wall {:>8.1} us   cpu {:>8.1} us (min {:>8.1})", walls[2], cpus[2], cpus[0]);
}

fn main() {
    // Inside a pool's worker, as the protocols call these (a call from outside a pool pays a
    // cross-thread hand-off per parallel section). RAYON_NUM_THREADS picks the width.
    rayon::ThreadPoolBuilder::new().build().expect("thread pool").install(run);
}

fn run() {
    let which: Vec<String> = std::env::args().skip(1).collect();
    let want = |s: &str| which.is_empty() || which.iter().any(|w| w == s);
    // PROF_N=4096|8192|16384 profiles `bench_he`'s seal-default set instead of the OLT preset.
    // PROF_N=narrow profiles the narrow OLT set (`olt-ring = narrow`).
    let narrow = std::env::var("PROF_N").is_ok_and(|v| v == "narrow");
    let params = match std::env::var("PROF_N").ok().and_then(|v| v.parse::<usize>().ok()) {
        _ if narrow => Params::nectar_olt_narrow(),
        Some(n) => {
            let (q, sp): (&[u32], u32) = match n {
                4096 => (&[36, 36], 37),
                8192 => (&[43, 43, 44, 44], 44),
                _ => (&[48, 48, 48, 49, 49, 49, 49, 49], 49),
            };
            let t = nectar_math::modulus::ntt_primes(20, n, 1, &[]).unwrap()[0];
            Params::new(ParamsLiteral::from_bit_sizes(n, q, Some(sp), PlainModulus::Prime(t)).unwrap()).unwrap()
        }
        None => Params::bumblebee_olt(),
    };
    let n = params.n();
    let mut prg = Prg::new([1; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let pk = sk.public_key(&params, &mut prg);
    let gk = sk.galois_keys(&params, &[3], &mut prg).unwrap();
    let tm = params.plain_modulus(0);
    let m: Vec<u64> = (0..n).map(|_| (prg.next_u64() as u128 % tm) as u64).collect();
    let pt = Plaintext::from_coeffs(&params, &m, 0).unwrap();
    let pntt = PlainNtt::new(&params, &pt, params.max_level()).unwrap();
    let mut ct = sk.encrypt(&params, &pt, &mut prg).unwrap();
    ct.to_coeff(&params);
    let mut ctn = ct.clone();
    ctn.to_ntt(&params);
    let plan = nectar_math::ntt::NttPlan::new(n, params.q_moduli()[0].value()).unwrap();
    let mut buf: Vec<u64> = (0..n).map(|_| prg.next_u64() % params.q_moduli()[0].value()).collect();
    if want("ntt") {
        measure("ntt_fwd_inv_59bit", 200, || {
            plan.forward(&mut buf);
            plan.inverse(&mut buf);
        });
    }
    if want("auto") {
        measure("auto_ks_coeff_in", 40, || {
            black_box(ct.automorphism(&params, 3, &gk).unwrap());
        });
    }
    if want("auto_l2") {
        // An InterLeave step's key switch: at the OLT's response level (two primes).
        let mut c2 = ct.clone();
        c2.mod_switch_to(&params, 2.min(params.max_level())).unwrap();
        c2.to_coeff(&params);
        measure("auto_ks_coeff_in_l2", 40, || {
            black_box(c2.automorphism(&params, 3, &gk).unwrap());
        });
    }
    if want("auto_ntt") {
        measure("auto_ks_ntt_in", 40, || {
            black_box(ctn.automorphism(&params, 3, &gk).unwrap());
        });
    }
    if want("mulplain") {
        measure("mul_plain_ntt_form", 100, || {
            black_box(ctn.mul_plain(&params, &pntt).unwrap());
        });
    }
    if want("mulplain_incl") {
        measure("mul_plain_incl_ntt", 40, || {
            black_box(ct.mul_plain(&params, &pntt).unwrap());
        });
    }
    if want("dec") {
        measure("decrypt", 40, || {
            black_box(sk.decrypt(&params, &ct).unwrap());
        });
    }
    if want("enc") {
        measure("encrypt_sk", 40, || {
            black_box(sk.encrypt(&params, &pt, &mut prg).unwrap());
        });
    }
    if want("encpk") {
        measure("encrypt_pk", 40, || {
            black_box(pk.encrypt(&params, &pt, &mut prg).unwrap());
        });
    }
    if want("modsw") {
        measure("mod_switch_down", 40, || {
            let mut c = ct.clone();
            c.mod_switch_down(&params).unwrap();
            black_box(c);
        });
    }
    if want("fill") {
        // One OLT evaluator block of the embedding plan (32, 256, 1): 256 low coefficients,
        // re-encoded at level 2 (two primes).
        let lvl = 2.min(params.max_level());
        let mut blk = PlainNtt::new(&params, &pt, lvl).unwrap();
        let vals: Vec<u64> = (0..256).map(|_| prg.next_u64() >> 40).collect();
        measure("plain_refill_256_l2", 200, || {
            blk.refill_coeffs(&params, &vals, 0).unwrap();
            black_box(&blk);
        });
    }
    if want("mulacc") {
        let lvl = 2.min(params.max_level());
        let blk = PlainNtt::new(&params, &pt, lvl).unwrap();
        let mut c2 = ct.clone();
        c2.mod_switch_to(&params, lvl).unwrap();
        c2.to_ntt(&params);
        let mut acc = c2.mul_plain(&params, &blk).unwrap();
        measure("mul_plain_acc_l2", 200, || {
            acc.mul_plain_accumulate(&params, &c2, &blk).unwrap();
        });
        let mut sum = ProductSum::new(&params, lvl, 0).unwrap();
        measure("product_sum_add_l2", 200, || {
            sum.add(&params, &c2, &blk).unwrap();
        });
    }
}
