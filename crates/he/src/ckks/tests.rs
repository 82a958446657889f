//! CKKS end-to-end and precision tests. Precision is `−log2 max_j |z̃_j − z_j|` over the slots
//! for inputs with real and imaginary parts uniform in `[−1, 1]`; each bound below states why.
//! Run with `--nocapture` to see the measured bits.
//!
//! Error model used in the bounds: a coefficient error of RMS `c` gives slot errors of RMS
//! `c·√N`, and the largest of the `N/2` slots is about `2^1.5` times that (Rayleigh tail,
//! `√ln(N/2)`), so the expected precision is `log2 Δ − log2 c − log2 N/2 − 1.5` bits. At
//! `N = 2^13`: fresh symmetric error `c = σ = 2^1.7` → 30.3 bits; public-key error
//! `c = σ·√(4N/3) = 2^8.4` → 23.6; key switch (centred digits, `q_0 ≈ P`) `c ≈ 2^6.4` → 25.6;
//! rescale rounding `c ≈ 0.29·√(2N/3) = 2^4.4` → 27.6. The asserts leave 1–3 bits of margin.

use super::*;
use crate::HeError;
use nectar_math::Prg;
use rand_core::RngCore;
use std::sync::OnceLock;

/// Test set: `N = 2^13`, data primes {60, 40, 40} bits, 60-bit special prime (200 ≤ 218 bits),
/// `Δ = 2^40`.
const LOG_N: u32 = 13;
const LOG_DELTA: f64 = 40.0;

struct Fixture {
    params: CkksParams,
    sk: CkksSecretKey,
    pk: CkksPublicKey,
    rk: RelinKey,
    gk: CkksGaloisKeys,
}

/// Rotation steps with keys in the fixture: BSGS for `d = 64` (1..=7, 8..=56 by 8) and a few
/// others (negative, large).
fn steps() -> Vec<i64> {
    let mut s: Vec<i64> = (1..8).chain((1..8).map(|g| 8 * g)).collect();
    s.extend([-1, 1000, -2047]);
    s
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let lit = CkksParamsLiteral::from_bit_sizes(1 << LOG_N, &[60, 40, 40], Some(60), LOG_DELTA as u32).unwrap();
        let params = CkksParams::new(lit).unwrap();
        let mut prg = Prg::new([42; 16]);
        let sk = CkksSecretKey::generate(&params, &mut prg);
        let pk = sk.public_key(&params, &mut prg);
        let rk = sk.relin_key(&params, &mut prg).unwrap();
        let gk = sk.galois_keys(&params, &steps(), true, &mut prg).unwrap();
        Fixture { params, sk, pk, rk, gk }
    })
}

fn evaluator(f: &Fixture) -> CkksEvaluator {
    CkksEvaluator::new(&f.params).with_relin_key(f.rk.clone()).with_galois_keys(f.gk.clone())
}

fn unit(prg: &mut Prg) -> f64 {
    (prg.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

fn random_slots(prg: &mut Prg, count: usize) -> Vec<C64> {
    (0..count).map(|_| C64::new(unit(prg), unit(prg))).collect()
}

fn precision_bits(got: &[C64], want: &[C64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let err = got.iter().zip(want).map(|(a, b)| (*a - *b).abs()).fold(0.0f64, f64::max);
    -err.log2()
}

fn report(what: &str, bits: f64, expect: f64) {
    println!("ckks precision: {what:<34} {bits:6.2} bits (asserted >= {expect})");
    assert!(bits >= expect, "{what}: {bits:.2} bits < {expect}");
}

fn dec(f: &Fixture, ct: &CkksCiphertext) -> Vec<C64> {
    f.sk.decrypt_decode(&f.params, ct).unwrap()
}

#[test]
fn encode_decode_precision() {
    let f = fixture();
    let p = &f.params;
    let mut prg = Prg::new([1; 16]);
    let z = random_slots(&mut prg, p.slots());
    let pt = p.encode(&z, p.max_level(), p.default_scale()).unwrap();
    // Rounding: |e_k| <= 1/2, so <= N/(2Δ) = 2^(log Δ − log N + 1) per slot (worst case).
    report("encode/decode (Δ=2^40)", precision_bits(&p.decode(&pt).unwrap(), &z), LOG_DELTA - LOG_N as f64 + 1.0);
    // Level 1 (single-prime fast path) gives the same.
    let pt1 = p.encode(&z, 1, p.default_scale()).unwrap();
    report("encode/decode level 1", precision_bits(&p.decode(&pt1).unwrap(), &z), LOG_DELTA - LOG_N as f64 + 1.0);
    // Δ = 2^60 with values up to 2^8: coefficients beyond 64 bits (i128 rounding and CRT
    // decoding); f64 keeps 53 bits of each coefficient, so ~2^(8−53)·√N·few relative error.
    let big: Vec<C64> = z.iter().map(|x| x.scale(256.0)).collect();
    let pt = p.encode(&big, p.max_level(), 2f64.powi(60)).unwrap();
    let got: Vec<C64> = p.decode(&pt).unwrap().into_iter().map(|x| x.scale(1.0 / 256.0)).collect();
    report("encode/decode (Δ=2^60, |z|<=2^8)", precision_bits(&got, &z), 53.0 - 8.0 - LOG_N as f64 / 2.0 - 4.0);
    // Real-vector API.
    let r: Vec<f64> = (0..100).map(|_| unit(&mut prg)).collect();
    let back = p.decode_real(&p.encode_real(&r, 2, p.default_scale()).unwrap()).unwrap();
    assert!(r.iter().zip(&back).all(|(a, b)| (a - b).abs() < 1e-7));
    assert!(back[100..].iter().all(|x| x.abs() < 1e-7));
    // Too many values, a value that does not fit q, a bad scale.
    assert!(matches!(p.encode(&vec![C64::default(); p.slots() + 1], 1, 1e6), Err(HeError::OutOfRange(_))));
    assert!(matches!(p.encode(&z, 1, 2f64.powi(70)), Err(HeError::OutOfRange(_))));
    assert!(matches!(p.encode(&z, 1, f64::NAN), Err(HeError::OutOfRange(_))));
    assert!(matches!(p.encode(&z, 0, 1e6), Err(HeError::OutOfRange(_))));
}

#[test]
fn encrypt_decrypt_precision() {
    let f = fixture();
    let p = &f.params;
    let mut prg = Prg::new([2; 16]);
    let z = random_slots(&mut prg, p.slots());
    for level in [p.max_level(), 1] {
        let pt = p.encode(&z, level, p.default_scale()).unwrap();
        let ct = f.sk.encrypt(p, &pt, &mut prg).unwrap();
        assert_eq!(ct.level(), level);
        // Fresh error e (σ ≈ 3.24): per slot ≈ σ·√N·(≤ 6 at the max over N/2 slots) = 2^10.8.
        report(&format!("sk encrypt/decrypt (level {level})"), precision_bits(&dec(f, &ct), &z), LOG_DELTA - 10.8 - 1.0);
        let ct = f.pk.encrypt(p, &pt, &mut prg).unwrap();
        // e1 + e·u + e2·s: σ·√(4N/3) per coefficient, ×√N·6 in the slots = 2^(8.4+6.5+2.6).
        report(&format!("pk encrypt/decrypt (level {level})"), precision_bits(&dec(f, &ct), &z), LOG_DELTA - 17.5 - 1.0);
    }
}

#[test]
fn add_sub_precision() {
    let f = fixture();
    let p = &f.params;
    let ev = evaluator(f);
    let mut prg = Prg::new([3; 16]);
    let (x, y) = (random_slots(&mut prg, p.slots()), random_slots(&mut prg, p.slots()));
    let enc = |v: &[C64], prg: &mut Prg| f.sk.encrypt(p, &p.encode(v, p.max_level(), p.default_scale()).unwrap(), prg).unwrap();
    let (cx, cy) = (enc(&x, &mut prg), enc(&y, &mut prg));
    let sum: Vec<C64> = x.iter().zip(&y).map(|(a, b)| *a + *b).collect();
    let diff: Vec<C64> = x.iter().zip(&y).map(|(a, b)| *a - *b).collect();
    // Two fresh errors add: one bit below a fresh ciphertext.
    report("ct + ct", precision_bits(&dec(f, &ev.add(&cx, &cy).unwrap()), &sum), LOG_DELTA - 10.8 - 2.0);
    report("ct - ct", precision_bits(&dec(f, &ev.sub(&cx, &cy).unwrap()), &diff), LOG_DELTA - 10.8 - 2.0);
    let py = p.encode(&y, p.max_level(), p.default_scale()).unwrap();
    report("ct + pt", precision_bits(&dec(f, &ev.add_plain(&cx, &py).unwrap()), &sum), LOG_DELTA - 10.8 - 2.0);
    report("ct - pt", precision_bits(&dec(f, &ev.sub_plain(&cx, &py).unwrap()), &diff), LOG_DELTA - 10.8 - 2.0);
    let plus: Vec<C64> = x.iter().map(|a| *a + C64::real(0.25)).collect();
    report("ct + const", precision_bits(&dec(f, &ev.add_const(&cx, 0.25).unwrap()), &plus), LOG_DELTA - 10.8 - 1.0);
    let neg: Vec<C64> = x.iter().map(|a| -*a).collect();
    report("-ct", precision_bits(&dec(f, &ev.negate(&cx)), &neg), LOG_DELTA - 10.8 - 1.0);
    let three: Vec<C64> = x.iter().map(|a| a.scale(3.0)).collect();
    report("ct * 3 (integer)", precision_bits(&dec(f, &ev.mul_int(&cx, 3)), &three), LOG_DELTA - 10.8 - 3.0);
    // Mixed levels: the higher operand is dropped.
    let low = ev.mod_drop_to(&cy, 1).unwrap();
    let s = ev.add(&cx, &low).unwrap();
    assert_eq!(s.level(), 1);
    report("ct + ct (levels 3, 1)", precision_bits(&dec(f, &s), &sum), LOG_DELTA - 10.8 - 2.0);
    // Scale mismatch is refused.
    let other = f.sk.encrypt(p, &p.encode(&y, p.max_level(), p.default_scale() * 1.001).unwrap(), &mut prg).unwrap();
    assert!(matches!(ev.add(&cx, &other), Err(HeError::Mismatch(_))));
}

#[test]
fn multiply_rescale_precision() {
    let f = fixture();
    let p = &f.params;
    let ev = evaluator(f);
    let mut prg = Prg::new([4; 16]);
    let (x, y) = (random_slots(&mut prg, p.slots()), random_slots(&mut prg, p.slots()));
    let top = p.max_level();
    let cx = f.sk.encrypt(p, &p.encode(&x, top, p.default_scale()).unwrap(), &mut prg).unwrap();
    let cy = f.pk.encrypt(p, &p.encode(&y, top, p.default_scale()).unwrap(), &mut prg).unwrap();
    let prod: Vec<C64> = x.iter().zip(&y).map(|(a, b)| *a * *b).collect();

    // ct-pt with the plaintext at scale q_last: the rescale restores Δ exactly. Error: the
    // rescale rounding (27.6 bits) plus the fresh error times |y| <= √2 (29.8): ~27 bits.
    let q_last = p.last_prime(top).unwrap() as f64;
    let py = p.encode(&y, top, q_last).unwrap();
    let before = ev.stats().snapshot();
    let r = ev.rescale(&ev.mul_plain(&cx, &py).unwrap()).unwrap();
    assert_eq!((r.level(), r.scale()), (top - 1, p.default_scale()));
    report("ct*pt + rescale", precision_bits(&dec(f, &r), &prod), 25.0);

    // ct-ct → 3 components, decryptable as is (x·e_y + y·e_x: y was public-key encrypted, so
    // ~23.1 bits), then relinearised (key switch at scale Δ²: negligible) and rescaled (27.6).
    let m3 = ev.mul(&cx, &cy).unwrap();
    assert_eq!(m3.size(), 3);
    report("ct*ct (3 components, no rescale)", precision_bits(&dec(f, &m3), &prod), 21.5);
    let m = ev.rescale(&ev.relinearize(&m3).unwrap()).unwrap();
    assert_eq!((m.size(), m.level()), (2, top - 1));
    report("ct*ct + relin + rescale", precision_bits(&dec(f, &m), &prod), 21.5);

    // Depth 2 (x·y·x at the base prime): the product's error times |x| plus x's error times
    // |xy|, and a second rescale rounding: about one bit below depth 1.
    let cx1 = ev.rescale(&ev.mul_const(&cx, 1.0).unwrap()).unwrap();
    let m2 = ev.rescale(&ev.mul_relin(&m, &cx1).unwrap()).unwrap();
    let prod2: Vec<C64> = prod.iter().zip(&x).map(|(a, b)| *a * *b).collect();
    assert_eq!(m2.level(), 1);
    report("depth 2 (x*y*x) at level 1", precision_bits(&dec(f, &m2), &prod2), 20.5);

    // Constant product.
    let half: Vec<C64> = x.iter().map(|a| a.scale(-0.375)).collect();
    let c = ev.rescale(&ev.mul_const(&cx, -0.375).unwrap()).unwrap();
    assert_eq!(c.scale(), cx.scale());
        // As ct*pt (the constant is an exact integer multiple of q_last up to 1/2).
    report("ct*const + rescale", precision_bits(&dec(f, &c), &half), 25.0);

    let d = ev.stats().snapshot() - before;
    assert_eq!((d.ct_pt_mults, d.ct_ct_mults, d.key_switches, d.rescales), (1, 2, 2, 5));
    assert!(matches!(ev.rescale(&m2), Err(HeError::OutOfRange(_))));
    assert!(matches!(ev.mul(&m3, &cx), Err(HeError::Mismatch(_))));
    assert!(matches!(CkksEvaluator::new(p).relinearize(&m3), Err(HeError::MissingRelinKey)));
}

#[test]
fn rotation_conjugation_precision() {
    let f = fixture();
    let p = &f.params;
    let ev = evaluator(f);
    let mut prg = Prg::new([5; 16]);
    let s = p.slots();
    let x = random_slots(&mut prg, s);
    let cx = f.sk.encrypt(p, &p.encode(&x, p.max_level(), p.default_scale()).unwrap(), &mut prg).unwrap();
    let before = ev.stats().snapshot();
    for k in [1i64, 5, 56, -1, 1000, -2047] {
        let r = ev.rotate(&cx, k).unwrap();
        let want: Vec<C64> = (0..s).map(|j| x[(j as i64 + k).rem_euclid(s as i64) as usize]).collect();
        // Fresh (30.3) + one key switch (25.6 bits expected, measured 24.3–24.9).
        report(&format!("rotate by {k}"), precision_bits(&dec(f, &r), &want), 23.0);
    }
    let c = ev.conjugate(&cx).unwrap();
    let want: Vec<C64> = x.iter().map(|z| z.conj()).collect();
    report("conjugate", precision_bits(&dec(f, &c), &want), 23.0);
    // Rotation after a rescale (lower level) and a rotation by 0 (free).
    let low = ev.mod_drop_to(&cx, 1).unwrap();
    let r = ev.rotate(&low, 3).unwrap();
    let want: Vec<C64> = (0..s).map(|j| x[(j + 3) % s]).collect();
    report("rotate by 3 at level 1", precision_bits(&dec(f, &r), &want), 23.0);
    assert_eq!(ev.rotate(&cx, s as i64).unwrap(), cx);
    let d = ev.stats().snapshot() - before;
    assert_eq!((d.rotations, d.conjugations, d.key_switches), (7, 1, 8));
    assert!(matches!(ev.rotate(&cx, 9), Err(HeError::MissingGaloisKey(_))));
    assert!(f.gk.has_rotation(p, -1) && f.gk.has_conjugation(p) && !f.gk.has_rotation(p, 9));
    assert_eq!(rotation_element(p.n(), 1), 5);
    assert_eq!(rotation_element(p.n(), -1), rotation_element(p.n(), s as i64 - 1));
    assert_eq!(conjugation_element(p.n()), 2 * p.n() as u64 - 1);
}

/// Galois keys truncated to the level they serve (`serialize_at_levels`): fewer bytes, the same
/// rotations at that level and below, a clear error above it, and a garbled count refused.
#[test]
fn galois_keys_truncated_to_their_level() {
    let f = fixture();
    let p = &f.params;
    let mut prg = Prg::new([6; 16]);
    let s = p.slots();
    let x = random_slots(&mut prg, s);
    let cx = f.sk.encrypt(p, &p.encode(&x, p.max_level(), p.default_scale()).unwrap(), &mut prg).unwrap();
    let low = evaluator(f).mod_drop_to(&cx, 1).unwrap();
    let levels = std::collections::BTreeMap::from([(3i64, 1usize), (5, p.max_level())]);
    let keys = f.sk.galois_keys(p, &[3, 5], false, &mut prg).unwrap();
    let (full, cut) = (keys.serialize(p), keys.serialize_at_levels(p, &levels).unwrap());
    // Level L = 3: step 5 keeps 3 digits on 4 primes, step 3 one digit on 2 primes.
    assert!(cut.len() * 12 < full.len() * 8, "{} vs {} bytes", cut.len(), full.len());
    let (back, digits) = CkksGaloisKeys::deserialize_at_levels(p, &cut).unwrap();
    assert_eq!(digits.values().copied().collect::<Vec<_>>(), vec![1, 3]);
    let ev = CkksEvaluator::new(p).with_relin_key(f.rk.clone()).with_galois_keys(back);
    let r = ev.rotate(&low, 3).unwrap();
    let want: Vec<C64> = (0..s).map(|j| x[(j + 3) % s]).collect();
    report("rotate by 3 at level 1, key cut at level 1", precision_bits(&dec(f, &r), &want), 23.0);
    let r = ev.rotate(&cx, 5).unwrap();
    let want: Vec<C64> = (0..s).map(|j| x[(j + 5) % s]).collect();
    report("rotate by 5 at the top, whole key", precision_bits(&dec(f, &r), &want), 23.0);
    assert!(matches!(ev.rotate(&cx, 3), Err(HeError::Mismatch(_))), "a key cut at level 1 used at the top");
    let mut bad = cut.clone();
    bad[12] ^= 0x40;
    assert!(CkksGaloisKeys::deserialize_at_levels(p, &bad).is_err());
    assert!(CkksGaloisKeys::deserialize_at_levels(p, &cut[..cut.len() - 1]).is_err());
}

/// `mul_i` is exact (no key switch, no level): `i·z` in every slot at the fresh precision;
/// together with a conjugation it separates the real and imaginary parts of a ciphertext
/// (`z + z̄ = 2·Re z`, `i·(z̄ − z) = 2·Im z`), as the CKKS ↔ MPC conversions' complex packing does.
#[test]
fn multiplication_by_i_and_part_separation() {
    let f = fixture();
    let p = &f.params;
    let ev = evaluator(f);
    let mut prg = Prg::new([15; 16]);
    let s = p.slots();
    let x = random_slots(&mut prg, s);
    let cx = f.sk.encrypt(p, &p.encode(&x, p.max_level(), p.default_scale()).unwrap(), &mut prg).unwrap();
    let before = ev.stats().snapshot();
    let ix = ev.mul_i(&cx);
    assert_eq!(ix.level(), cx.level());
    let want: Vec<C64> = x.iter().map(|z| C64::new(-z.im, z.re)).collect();
    // Fresh symmetric error only (30.3 bits expected).
    report("i * z", precision_bits(&dec(f, &ix), &want), 28.0);
    let four = ev.mul_i(&ev.mul_i(&ev.mul_i(&ix)));
    assert_eq!(dec(f, &four), dec(f, &cx), "i^4 must be the identity exactly");
    let conj = ev.conjugate(&cx).unwrap();
    let mut re = ev.add(&cx, &conj).unwrap();
    let mut im = ev.mul_i(&ev.sub(&conj, &cx).unwrap());
    re.set_scale(2.0 * cx.scale()).unwrap();
    im.set_scale(2.0 * cx.scale()).unwrap();
    let want_re: Vec<C64> = x.iter().map(|z| C64::new(z.re, 0.0)).collect();
    let want_im: Vec<C64> = x.iter().map(|z| C64::new(z.im, 0.0)).collect();
    // One key switch (25.6 bits expected), halved by the scale doubling: ≥ 24.
    report("Re z from z + conj z", precision_bits(&dec(f, &re), &want_re), 24.0);
    report("Im z from i(conj z - z)", precision_bits(&dec(f, &im), &want_im), 24.0);
    let d = ev.stats().snapshot() - before;
    assert_eq!((d.conjugations, d.key_switches), (1, 1));
}

#[test]
fn bsgs_linear_transform() {
    let f = fixture();
    let p = &f.params;
    let ev = evaluator(f);
    let mut prg = Prg::new([6; 16]);
    let d = 64;
    // Entries in [−1, 1]/d so that |y_i| <= √2.
    let m: Vec<Vec<C64>> = (0..d).map(|_| random_slots(&mut prg, d).into_iter().map(|z| z.scale(1.0 / d as f64)).collect()).collect();
    let x = random_slots(&mut prg, d);
    let top = p.max_level();
    let lt = LinearTransform::from_matrix(p, &m, top, p.last_prime(top).unwrap() as f64).unwrap();
    assert_eq!((lt.baby_steps(), lt.rotation_count()), (8, 14));
    assert!(lt.rotation_steps().iter().all(|&k| f.gk.has_rotation(p, k)));
    let cx = f.sk.encrypt(p, &p.encode(&replicate(&x, p.slots()), top, p.default_scale()).unwrap(), &mut prg).unwrap();
    let before = ev.stats().snapshot();
    let y = ev.rescale(&lt.apply(&ev, &cx).unwrap()).unwrap();
    let d_stats = ev.stats().snapshot() - before;
    // D = 64 diagonals: B + G − 2 = 8 + 8 − 2 = 14 rotations (instead of 63), 64 ct-pt products.
    assert_eq!((d_stats.rotations, d_stats.ct_pt_mults, d_stats.rescales), (14, 64, 1));
    assert_eq!(y.scale(), cx.scale());
    let want: Vec<C64> = (0..d).map(|i| (0..d).fold(C64::default(), |acc, j| acc + m[i][j] * x[j])).collect();
    let got = dec(f, &y);
    // Every replica holds y.
    let want_all = replicate(&want, p.slots());
    // Baby-step key-switch and fresh errors times Σ_j |M_ij| (~ √64·√2/64), giant key switches
    // at scale Δ·q_last (divided away by the rescale), one rescale rounding (27.6): ~27 bits.
    report("BSGS 64x64 (14 rotations)", precision_bits(&got, &want_all), 25.0);

    // A sparse (tridiagonal) transform uses fewer rotations.
    let diags: Vec<(usize, Vec<C64>)> = [0usize, 1, d - 1].iter().map(|&k| (k, random_slots(&mut prg, d))).collect();
    let lt2 = LinearTransform::from_diagonals(p, d, &diags, top, p.default_scale()).unwrap();
    assert!(lt2.rotation_count() <= 2, "{}", lt2.rotation_count());
    assert!(matches!(LinearTransform::from_diagonals(p, d, &[(d, vec![C64::default(); d])], top, 1e6), Err(HeError::Mismatch(_))));
    assert!(LinearTransform::from_matrix(p, &m[..3], top, 1e6).is_err());
}

#[test]
fn serialization_round_trip_and_sizes() {
    let f = fixture();
    let p = &f.params;
    let ev = evaluator(f);
    let mut prg = Prg::new([7; 16]);
    let x = random_slots(&mut prg, 16);
    let top = p.max_level();
    let fresh = f.sk.encrypt(p, &p.encode(&x, top, p.default_scale()).unwrap(), &mut prg).unwrap();
    let bytes = fresh.serialize(p).unwrap();
    assert_eq!(bytes.len(), fresh.serialized_len(p));
    assert_eq!(bytes.len(), p.ciphertext_bytes(top, true).unwrap());
    // (b, seed): N·140/8 + 51 bytes.
    assert_eq!(bytes.len(), 8192 * 140 / 8 + 51);
    assert_eq!(CkksCiphertext::deserialize(p, &bytes).unwrap(), fresh);
    let low = ev.rescale(&fresh).unwrap();
    let b2 = low.serialize(p).unwrap();
    assert_eq!(b2.len(), p.ciphertext_bytes(2, false).unwrap());
    assert_eq!(b2.len(), 2 * 8192 * 100 / 8 + 35);
    let back = CkksCiphertext::deserialize(p, &b2).unwrap();
    assert_eq!(back, low);
    // Malformed input: truncated, trailing, wrong parameters, bad scale, 3 components.
    assert!(matches!(CkksCiphertext::deserialize(p, &b2[..b2.len() - 1]), Err(HeError::Malformed(_))));
    assert!(matches!(CkksCiphertext::deserialize(p, &b2[..10]), Err(HeError::Malformed(_))));
    let mut t = b2.clone();
    t.push(0);
    assert!(matches!(CkksCiphertext::deserialize(p, &t), Err(HeError::Malformed(_))));
    let mut t = b2.clone();
    t[12..20].copy_from_slice(&f64::NAN.to_le_bytes());
    assert!(matches!(CkksCiphertext::deserialize(p, &t), Err(HeError::Malformed(_))));
    let mut t = b2.clone();
    t[5] ^= 1;
    assert!(matches!(CkksCiphertext::deserialize(p, &t), Err(HeError::Malformed(_))));
    let m3 = ev.mul(&fresh, &fresh).unwrap();
    assert!(m3.serialize(p).is_err());
    // Keys round-trip; a relinearisation key is sent in the Galois-key layout (g = 1).
    let pk2 = CkksPublicKey::deserialize(p, &f.pk.serialize(p)).unwrap();
    assert_eq!(pk2, f.pk);
    let rk_bytes = f.rk.serialize(p);
    assert_eq!(RelinKey::deserialize(p, &rk_bytes).unwrap(), f.rk);
    assert!(RelinKey::deserialize(p, &rk_bytes[..rk_bytes.len() - 1]).is_err());
    let gk_bytes = f.gk.serialize(p);
    assert_eq!(CkksGaloisKeys::deserialize(p, &gk_bytes).unwrap(), f.gk);
    assert!(RelinKey::deserialize(p, &gk_bytes).is_err());
    println!("ckks sizes (N = 2^13, 140-bit q): fresh ct {} B, level-2 ct {} B, relin key {} B, {} Galois keys {} B",
        bytes.len(), b2.len(), rk_bytes.len(), f.gk.elements().len(), gk_bytes.len());
    // Determinism: every random choice comes from the Prg.
    let again = |seed| {
        let mut g = Prg::new(seed);
        f.sk.encrypt(p, &p.encode(&x, top, p.default_scale()).unwrap(), &mut g).unwrap().serialize(p).unwrap()
    };
    assert_eq!(again([9; 16]), again([9; 16]));
    assert_ne!(again([9; 16]), again([10; 16]));
}

/// BLB Table 6 block 1 (N = 16384, {60, 60, 60, 60 | 60}, Δ = 2^38): encryption, a ct-pt
/// product with rescale, a ct-ct product (scale 2^76, not rescaled: EVA's waterline rescaling
/// waits until the scale exceeds 2^60 + Δ), and a rotation.
#[test]
fn blb_block1_precision() {
    let p = CkksParams::blb_block(1).unwrap();
    let mut prg = Prg::new([8; 16]);
    let sk = CkksSecretKey::generate(&p, &mut prg);
    let ev = CkksEvaluator::new(&p)
        .with_relin_key(sk.relin_key(&p, &mut prg).unwrap())
        .with_galois_keys(sk.galois_keys(&p, &[1], false, &mut prg).unwrap());
    let x = random_slots(&mut prg, p.slots());
    let top = p.max_level();
    let delta = 38.0;
    let log_n = 14.0;
    let cx = sk.encrypt(&p, &p.encode(&x, top, p.default_scale()).unwrap(), &mut prg).unwrap();
    let d = |ct: &CkksCiphertext| sk.decrypt_decode(&p, ct).unwrap();
    // Fresh: 38 − 1.7 − 7 − 1.5 = 27.8 expected.
    report("block 1: encrypt/decrypt", precision_bits(&d(&cx), &x), delta - (log_n / 2.0 + 1.7 + 1.5) - 1.5);
    let sq: Vec<C64> = x.iter().map(|a| *a * *a).collect();
    let m = ev.mul_relin(&cx, &cx).unwrap();
    // 2·x·e: one bit below fresh.
    report("block 1: ct*ct + relin (Δ²)", precision_bits(&d(&m), &sq), delta - (log_n / 2.0 + 1.7 + 1.5) - 2.5);
    let q_last = p.last_prime(top).unwrap() as f64;
    let r = ev.rescale(&ev.mul_plain(&cx, &p.encode(&x, top, q_last).unwrap()).unwrap()).unwrap();
    // Rescale rounding 0.29·√(2N/3) = 2^4.9 per coefficient: 38 − 4.9 − 7 − 1.5 = 24.6 expected.
    report("block 1: ct*pt + rescale", precision_bits(&d(&r), &sq), 22.5);
    let rot = ev.rotate(&cx, 1).unwrap();
    let want: Vec<C64> = (0..p.slots()).map(|j| x[(j + 1) % p.slots()]).collect();
    // Key switch, 4 centred 60-bit digits over a 60-bit P: √(4N/12)·σ = 2^7.9 → 21.6 expected.
    report("block 1: rotate by 1", precision_bits(&d(&rot), &want), 19.5);
}

