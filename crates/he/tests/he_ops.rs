//! End-to-end correctness of the HE layer: exact decryption after every operation and chains
//! of them, for every encoding and parameter set; noise margins.

use nectar_he::keys::interleave_galois_elements;
use nectar_he::*;
use nectar_math::rns::BigUint;
use nectar_math::Prg;
use rand_core::RngCore;

fn rand_u64s(prg: &mut Prg, n: usize, t: u128) -> Vec<u64> {
    (0..n)
        .map(|_| if t == 1u128 << 64 { prg.next_u64() } else { (prg.next_u64() as u128 % t) as u64 })
        .collect()
}

/// Negacyclic product mod 2^64 with `b` sparse (indices, values).
fn negacyclic_u64(a: &[u64], b: &[(usize, u64)]) -> Vec<u64> {
    let n = a.len();
    let mut c = vec![0u64; n];
    for &(j, bj) in b {
        for (i, &ai) in a.iter().enumerate() {
            let v = ai.wrapping_mul(bj);
            let k = i + j;
            if k < n {
                c[k] = c[k].wrapping_add(v);
            } else {
                c[k - n] = c[k - n].wrapping_sub(v);
            }
        }
    }
    c
}

/// Plaintext image under X -> X^g mod 2^64.
fn auto_u64(a: &[u64], g: u64) -> Vec<u64> {
    let n = a.len();
    let mut out = vec![0u64; n];
    for (k, &x) in a.iter().enumerate() {
        let j = (k as u64 * g % (2 * n as u64)) as usize;
        if j < n {
            out[j] = x;
        } else {
            out[j - n] = x.wrapping_neg();
        }
    }
    out
}

fn monomial_u64(a: &[u64], k: usize) -> Vec<u64> {
    negacyclic_u64(a, &[(k % a.len(), if k >= a.len() { u64::MAX } else { 1 })])
}

#[test]
fn olt_encrypt_decrypt_exact_and_noise() {
    let params = Params::bumblebee_olt();
    let mut prg = Prg::new([1; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let pk = sk.public_key(&params, &mut prg);
    let m = rand_u64s(&mut prg, params.n(), 1u128 << 64);
    let pt = Plaintext::from_coeffs(&params, &m, 0).unwrap();
    let ct = sk.encrypt(&params, &pt, &mut prg).unwrap();
    assert!(ct.is_seeded());
    assert_eq!(sk.decrypt(&params, &ct).unwrap().coeffs(), &m[..]);
    let nr = sk.noise(&params, &ct).unwrap();
    assert!(nr.noise_bits <= 8 && nr.budget_bits > 80, "{nr:?}");
    let ct = pk.encrypt(&params, &pt, &mut prg).unwrap();
    assert_eq!(sk.decrypt(&params, &ct).unwrap().coeffs(), &m[..]);
    let nr = sk.noise(&params, &ct).unwrap();
    assert!(nr.budget_bits > 70, "{nr:?}");
    // Extreme messages.
    for v in [0u64, 1, u64::MAX, 1 << 63, (1 << 63) - 1] {
        let pt = Plaintext::from_coeffs(&params, &vec![v; params.n()], 0).unwrap();
        let ct = sk.encrypt(&params, &pt, &mut prg).unwrap();
        assert_eq!(sk.decrypt(&params, &ct).unwrap(), pt);
    }
}

#[test]
fn olt_chain_mul_plain_monomial_automorphisms_modswitch() {
    let params = Params::bumblebee_olt();
    let n = params.n();
    let mut prg = Prg::new([2; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let pk = sk.public_key(&params, &mut prg);
    let elems = interleave_galois_elements(n);
    assert_eq!(elems.len(), 13);
    let gk = sk.galois_keys(&params, &elems, &mut prg).unwrap();
    let m = rand_u64s(&mut prg, n, 1u128 << 64);
    let ct = pk.encrypt(&params, &Plaintext::from_coeffs(&params, &m, 0).unwrap(), &mut prg).unwrap();
    // Plaintext with full-range coefficients on a few positions (worst-case magnitude 2^63).
    let sparse: Vec<(usize, u64)> = (0..8).map(|i| (i * 1000 + 3, prg.next_u64())).collect();
    let mut pv = vec![0u64; n];
    sparse.iter().for_each(|&(i, v)| pv[i] = v);
    let pntt = PlainNtt::new(&params, &Plaintext::from_coeffs(&params, &pv, 0).unwrap(), 3).unwrap();
    let mut ct = ct.mul_plain(&params, &pntt).unwrap();
    let mut expect = negacyclic_u64(&m, &sparse);
    assert_eq!(sk.decrypt(&params, &ct).unwrap().coeffs(), &expect[..]);
    // Accumulate a second product.
    let m2 = rand_u64s(&mut prg, n, 1u128 << 64);
    let mut ct2 = sk.encrypt(&params, &Plaintext::from_coeffs(&params, &m2, 0).unwrap(), &mut prg).unwrap();
    ct2.to_ntt(&params);
    ct.mul_plain_accumulate(&params, &ct2, &pntt).unwrap();
    let e2 = negacyclic_u64(&m2, &sparse);
    expect.iter_mut().zip(&e2).for_each(|(a, b)| *a = a.wrapping_add(*b));
    assert_eq!(sk.decrypt(&params, &ct).unwrap().coeffs(), &expect[..]);
    // Monomial shifts, including past N.
    for k in [1usize, 77, n - 1, n, n + 5, 2 * n - 1] {
        ct.mul_monomial_assign(&params, k);
        expect = monomial_u64(&expect, k);
        assert_eq!(sk.decrypt(&params, &ct).unwrap().coeffs(), &expect[..], "X^{k}");
    }
    // Every InterLeave automorphism N/2^j + 1, in a chain.
    for &g in &elems {
        ct = ct.automorphism(&params, g, &gk).unwrap();
        expect = auto_u64(&expect, g);
        assert_eq!(sk.decrypt(&params, &ct).unwrap().coeffs(), &expect[..], "g = {g}");
    }
    let nr = sk.noise(&params, &ct).unwrap();
    assert!(nr.budget_bits > 15, "{nr:?}");
    // ZeroGap step of InterLeave: (a + Auto(a, N+1)) * 2^{-1} keeps even coefficients.
    let mut z = ct.clone();
    z.mul_inv_pow2_assign(&params, 1);
    let za = z.automorphism(&params, (n + 1) as u64, &gk).unwrap();
    z.add_assign(&params, &za).unwrap();
    let zexp: Vec<u64> = expect.iter().enumerate().map(|(i, &v)| if i % 2 == 0 { v } else { 0 }).collect();
    assert_eq!(sk.decrypt(&params, &z).unwrap().coeffs(), &zexp[..]);
    // Add / sub / plaintext add, then switch down to the 59+55-bit modulus.
    let mut d = ct.clone();
    d.add_assign(&params, &ct).unwrap();
    d.sub_assign(&params, &ct).unwrap();
    let r = rand_u64s(&mut prg, n, 1u128 << 64);
    d.add_plain_assign(&params, &Plaintext::from_coeffs(&params, &r, 0).unwrap()).unwrap();
    expect.iter_mut().zip(&r).for_each(|(a, b)| *a = a.wrapping_add(*b));
    d.mod_switch_down(&params).unwrap();
    assert_eq!(d.level(), 2);
    assert_eq!(sk.decrypt(&params, &d).unwrap().coeffs(), &expect[..]);
    let nr = sk.noise(&params, &d).unwrap();
    assert!(nr.budget_bits > 10, "{nr:?}");
    // Missing key and mismatches are errors.
    assert!(matches!(ct.automorphism(&params, 3 + 2 * 8, &gk), Err(HeError::MissingGaloisKey(_))));
    assert!(d.add_assign(&params, &ct).is_err());
}

#[test]
fn coefficient_encoding_small_power_of_two_and_flooding() {
    let lit = ParamsLiteral::from_bit_sizes(4096, &[36, 36], Some(37), PlainModulus::PowerOfTwo(16)).unwrap();
    let params = Params::new(lit).unwrap();
    let n = params.n();
    let mut prg = Prg::new([3; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let gk = sk.galois_keys(&params, &interleave_galois_elements(n), &mut prg).unwrap();
    let m = rand_u64s(&mut prg, n, 1 << 16);
    let mut ct = sk.encrypt(&params, &Plaintext::from_coeffs(&params, &m, 0).unwrap(), &mut prg).unwrap();
    let p: Vec<(usize, u64)> = vec![(0, 3), (5, 65535)];
    let mut pv = vec![0u64; n];
    p.iter().for_each(|&(i, v)| pv[i] = v);
    ct = ct.mul_plain(&params, &PlainNtt::new(&params, &Plaintext::from_coeffs(&params, &pv, 0).unwrap(), 2).unwrap()).unwrap();
    let mut expect: Vec<u64> = negacyclic_u64(&m, &p).iter().map(|v| v & 0xffff).collect();
    for &g in &[5u64, 2 * n as u64 - 1, 4097] {
        ct = ct.automorphism(&params, g, &gk).unwrap_or_else(|_| ct.clone());
        if gk.contains(g) {
            expect = auto_u64(&expect, g).iter().map(|v| v & 0xffff).collect();
        }
    }
    assert_eq!(sk.decrypt(&params, &ct).unwrap().coeffs(), &expect[..]);
    let before = sk.noise(&params, &ct).unwrap();
    ct.flood(&params, 30, &mut prg).unwrap();
    let after = sk.noise(&params, &ct).unwrap();
    assert!(after.noise_bits >= 28 && after.noise_bits <= 31, "{before:?} {after:?}");
    assert_eq!(sk.decrypt(&params, &ct).unwrap().coeffs(), &expect[..]);
    assert!(matches!(ct.flood(&params, 60, &mut prg), Err(HeError::NoiseBudget(_))));
}

#[test]
fn simd_prime_batching() {
    let t = nectar_math::modulus::ntt_primes(20, 4096, 1, &[]).unwrap()[0];
    let lit = ParamsLiteral::from_bit_sizes(4096, &[36, 36], Some(37), PlainModulus::Prime(t)).unwrap();
    let params = Params::new(lit).unwrap();
    let n = params.n();
    let mut prg = Prg::new([4; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let pk = sk.public_key(&params, &mut prg);
    let x = rand_u64s(&mut prg, n, t as u128);
    let y = rand_u64s(&mut prg, n, t as u128);
    let px = params.encode_simd(&x, 0).unwrap();
    assert_eq!(params.decode_simd(&px).unwrap(), x);
    let py = PlainNtt::new(&params, &params.encode_simd(&y, 0).unwrap(), 2).unwrap();
    let ct = pk.encrypt(&params, &px, &mut prg).unwrap();
    let mut prod = ct.mul_plain(&params, &py).unwrap();
    let expect: Vec<u64> = x.iter().zip(&y).map(|(&a, &b)| (a as u128 * b as u128 % t as u128) as u64).collect();
    assert_eq!(params.decode_simd(&sk.decrypt(&params, &prod).unwrap()).unwrap(), expect);
    prod.add_plain_assign(&params, &px).unwrap();
    let expect2: Vec<u64> = expect.iter().zip(&x).map(|(&a, &b)| (a + b) % t).collect();
    assert_eq!(params.decode_simd(&sk.decrypt(&params, &prod).unwrap()).unwrap(), expect2);
    // Power-of-two t has no SIMD encoding.
    assert!(Params::bumblebee_olt().encode_simd(&[1], 0).is_err());
}

#[test]
fn bole_crt_batching_flood_modswitch() {
    let params = Params::bumblebee_bole();
    let n = params.n();
    let mut prg = Prg::new([5; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let pk = sk.public_key(&params, &mut prg);
    let basis = params.plain_crt_basis().unwrap().clone();
    let big_t = basis.product().clone();
    // Random values in [0, T): 3 words masked to 141 bits, reduced by rejection.
    let mut vals = Vec::new();
    while vals.len() < n {
        let v = BigUint { words: vec![prg.next_u64(), prg.next_u64(), prg.next_u64() & ((1 << (big_t.bits() - 128)) - 1)] };
        if v.cmp_big(&big_t) == std::cmp::Ordering::Less {
            vals.push(v);
        }
    }
    let res = params.crt_split(&vals).unwrap();
    let back = params.crt_join(&res).unwrap();
    assert!(back.iter().zip(&vals).all(|(a, b)| a.cmp_big(b).is_eq()));
    let pts = params.encode_simd_crt(&res).unwrap();
    assert_eq!(params.decode_simd_crt(&pts).unwrap(), res);
    // Multiply by y (small signed, centred as bOLEe does), flood 98 bits, switch down.
    let y: Vec<i64> = (0..n).map(|_| (prg.next_u64() as i64) >> 1).collect();
    let mut out = Vec::new();
    for (j, pt) in pts.iter().enumerate() {
        let tj = params.plain_modulus(j) as i128;
        let ys: Vec<u64> = y.iter().map(|&v| (v as i128).rem_euclid(tj) as u64).collect();
        let yp = PlainNtt::new(&params, &params.encode_simd(&ys, j).unwrap(), 3).unwrap();
        let ct = pk.encrypt(&params, pt, &mut prg).unwrap();
        let mut prod = ct.mul_plain(&params, &yp).unwrap();
        prod.flood(&params, 98, &mut prg).unwrap();
        prod.add_assign(&params, &pk.encrypt_zero(&params, 3, j, &mut prg).unwrap()).unwrap();
        prod.mod_switch_to(&params, 2).unwrap();
        assert!(sk.noise(&params, &prod).unwrap().budget_bits >= 1);
        prod.mod_switch_to(&params, 1).unwrap();
        assert!(sk.noise(&params, &prod).unwrap().budget_bits >= 1);
        let dec = params.decode_simd(&sk.decrypt(&params, &prod).unwrap()).unwrap();
        let expect: Vec<u64> = res[j].iter().zip(&ys).map(|(&a, &b)| (a as u128 * b as u128 % tj as u128) as u64).collect();
        assert_eq!(dec, expect, "prime {j}");
        out.push(dec);
    }
    assert_eq!(params.crt_join(&out).unwrap().len(), n);
}

#[test]
fn add_c0_assign_matches_trivial_ciphertext_in_both_forms() {
    let params = Params::bumblebee_olt();
    let mut prg = Prg::new([7; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let n = params.n();
    let m = rand_u64s(&mut prg, n, 1u128 << 64);
    let pt = Plaintext::from_coeffs(&params, &m, 0).unwrap();
    let ct = sk.encrypt(&params, &pt, &mut prg).unwrap();
    let level = ct.level();
    let r: Vec<Vec<u64>> = params.q_moduli()[..level]
        .iter()
        .map(|q| (0..n).map(|_| prg.next_u64() % q.value()).collect())
        .collect();
    // Reference: add the trivial ciphertext (r, 0).
    let triv = Ciphertext::trivial(&params, level, 0, &r).unwrap();
    assert!(!triv.is_seeded() && triv.level() == level);
    let mut reference = ct.clone();
    reference.add_assign(&params, &triv).unwrap();
    // Coefficient form: only c0 changes, the seed survives.
    let mut a = ct.clone();
    a.add_c0_assign(&params, &r).unwrap();
    assert!(a.is_seeded());
    assert_eq!(a.c0(), reference.c0());
    assert_eq!(a.c1(), reference.c1());
    // NTT form: same polynomial.
    let mut b = ct.clone();
    b.to_ntt(&params);
    b.add_c0_assign(&params, &r).unwrap();
    assert!(b.c0().is_ntt());
    b.to_coeff(&params);
    assert_eq!(b.c0(), reference.c0());
    // Adding −r back restores the message exactly.
    let neg: Vec<Vec<u64>> = r
        .iter()
        .zip(params.q_moduli())
        .map(|(l, q)| l.iter().map(|&x| if x == 0 { 0 } else { q.value() - x }).collect())
        .collect();
    a.add_c0_assign(&params, &neg).unwrap();
    assert_eq!(sk.decrypt(&params, &a).unwrap().coeffs(), &m[..]);
    // Malformed input is an error, not a panic.
    assert!(a.add_c0_assign(&params, &r[..level - 1]).is_err());
    let mut big = r.clone();
    big[0][3] = params.q_moduli()[0].value();
    assert!(a.add_c0_assign(&params, &big).is_err());
    assert!(Ciphertext::trivial(&params, level + 1, 0, &r).is_err());
}

#[test]
fn automorphism_same_result_from_either_form() {
    let params = Params::bumblebee_olt();
    let mut prg = Prg::new([8; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let n = params.n();
    let elems = [3u64, 5, 2 * n as u64 - 1, n as u64 + 1];
    let gk = sk.galois_keys(&params, &elems, &mut prg).unwrap();
    let m = rand_u64s(&mut prg, n, 1u128 << 64);
    let pt = Plaintext::from_coeffs(&params, &m, 0).unwrap();
    let mut ct = sk.encrypt(&params, &pt, &mut prg).unwrap();
    ct.to_coeff(&params);
    for level in [3usize, 2, 1] {
        ct.mod_switch_to(&params, level).unwrap();
        let mut ntt = ct.clone();
        ntt.to_ntt(&params);
        for &g in &elems {
            let a = ct.automorphism(&params, g, &gk).unwrap();
            let b = ntt.automorphism(&params, g, &gk).unwrap();
            assert_eq!(a, b, "g = {g}, level {level}");
            assert!(!a.c0().is_ntt() && !a.c1().is_ntt());
            if level >= 2 {
                assert_eq!(sk.decrypt(&params, &a).unwrap().coeffs(), &auto_u64(&m, g)[..]);
            }
        }
    }
}

#[test]
fn plain_ntt_refill_equals_a_fresh_encoding() {
    let mut prg = Prg::new([43; 16]);
    for params in [Params::bumblebee_olt(), Params::bumblebee_bole()] {
        let n = params.n();
        let t = params.plain_modulus(0);
        let level = params.max_level();
        let a = rand_u64s(&mut prg, n, t);
        let b = rand_u64s(&mut prg, n / 3, t);
        let mut pt = PlainNtt::new(&params, &Plaintext::from_coeffs(&params, &a, 0).unwrap(), level).unwrap();
        pt.refill_coeffs(&params, &b, 0).unwrap();
        let fresh = PlainNtt::new(&params, &Plaintext::from_coeffs(&params, &b, 0).unwrap(), level).unwrap();
        // same products with a ciphertext
        let sk = SecretKey::generate(&params, &mut prg);
        let ct = sk.encrypt(&params, &Plaintext::from_coeffs(&params, &a, 0).unwrap(), &mut prg).unwrap();
        assert_eq!(ct.mul_plain(&params, &pt).unwrap(), ct.mul_plain(&params, &fresh).unwrap());
        // Built from the short coefficient list (no padded plaintext), at the top level and
        // one below: the same products.
        let short = PlainNtt::from_coeffs(&params, &b, 0, level).unwrap();
        assert_eq!(ct.mul_plain(&params, &short).unwrap(), ct.mul_plain(&params, &fresh).unwrap());
        let low = PlainNtt::from_coeffs(&params, &b, 0, level - 1).unwrap();
        let mut ct_low = ct.clone();
        ct_low.mod_switch_to(&params, level - 1).unwrap();
        assert_eq!(ct_low.mul_plain(&params, &low).unwrap(), ct_low.mul_plain(&params, &fresh).unwrap());
        assert!(PlainNtt::from_coeffs(&params, &b, 0, 0).is_err());
        assert!(PlainNtt::from_coeffs(&params, &b, 0, level + 1).is_err());
        assert!(PlainNtt::from_coeffs(&params, &vec![0; n + 1], 0, level).is_err());
        assert!(pt.refill_coeffs(&params, &vec![0; n + 1], 0).is_err());
        if t < 1u128 << 64 {
            assert!(pt.refill_coeffs(&params, &[t as u64], 0).is_err());
        }
    }
}

#[test]
fn product_sum_equals_reduced_accumulation() {
    let mut prg = Prg::new([44; 16]);
    for params in [Params::bumblebee_olt(), Params::bumblebee_bole(), Params::nectar_olt_narrow()] {
        let n = params.n();
        let t = params.plain_modulus(0);
        let sk = SecretKey::generate(&params, &mut prg);
        for level in [params.max_level(), 2] {
            // 40 terms: the 62-bit primes of the bOLEe set hold 16 per u128 entry, so the sum
            // folds twice (the narrow set sums in IFMA words: no fold); every fifth ciphertext
            // stays in coefficient form.
            let mut reference: Option<Ciphertext> = None;
            let mut sum = ProductSum::new(&params, level, 0).unwrap();
            assert!(sum.is_empty());
            // The same terms through `add_many` in groups of 1 to 20 (NTT-form ones; a
            // coefficient-form one goes through `add`), crossing the folds of the 62-bit primes.
            let mut many = ProductSum::new(&params, level, 0).unwrap();
            let mut group: Vec<(Ciphertext, PlainNtt)> = Vec::new();
            let mut sizes = [1usize, 3, 20, 7, 2].into_iter().cycle();
            let mut want = sizes.next().unwrap_or(1);
            for k in 0..40 {
                let m = rand_u64s(&mut prg, n, t);
                let mut ct = sk.encrypt(&params, &Plaintext::from_coeffs(&params, &m, 0).unwrap(), &mut prg).unwrap();
                ct.mod_switch_to(&params, level).unwrap();
                if k % 5 != 0 {
                    ct.to_ntt(&params);
                }
                let w = rand_u64s(&mut prg, n, t);
                let pt = PlainNtt::new(&params, &Plaintext::from_coeffs(&params, &w, 0).unwrap(), level).unwrap();
                match reference.as_mut() {
                    None => reference = Some(ct.mul_plain(&params, &pt).unwrap()),
                    Some(r) => r.mul_plain_accumulate(&params, &ct, &pt).unwrap(),
                }
                sum.add(&params, &ct, &pt).unwrap();
                if k % 5 == 0 {
                    assert!(many.add_many(&params, &[(&ct, &pt)]).is_err(), "coefficient form");
                    many.add(&params, &ct, &pt).unwrap();
                } else {
                    group.push((ct, pt));
                }
                if group.len() == want || k == 39 {
                    let terms: Vec<(&Ciphertext, &PlainNtt)> = group.iter().map(|(c, p)| (c, p)).collect();
                    many.add_many(&params, &terms).unwrap();
                    group.clear();
                    want = sizes.next().unwrap_or(1);
                }
            }
            let reference = reference.unwrap();
            assert_eq!(many.finish(&params).unwrap(), reference, "add_many, level {level}");
            assert_eq!(sum.finish(&params).unwrap(), reference, "level {level}");
        }
        // a ciphertext of another level, or a plaintext below the sum's level, is refused
        let mut sum = ProductSum::new(&params, 2, 0).unwrap();
        let ct = sk.encrypt(&params, &Plaintext::from_coeffs(&params, &[1], 0).unwrap(), &mut prg).unwrap();
        let pt1 = PlainNtt::new(&params, &Plaintext::from_coeffs(&params, &[1], 0).unwrap(), 1).unwrap();
        let pt3 = PlainNtt::new(&params, &Plaintext::from_coeffs(&params, &[1], 0).unwrap(), 3).unwrap();
        assert!(sum.add(&params, &ct, &pt3).is_err());
        let mut low = ct.clone();
        low.mod_switch_to(&params, 2).unwrap();
        assert!(sum.add(&params, &low, &pt1).is_err());
        low.to_ntt(&params);
        assert!(sum.add_many(&params, &[(&low, &pt1)]).is_err());
        assert!(sum.add_many(&params, &[(&ct, &pt3)]).is_err());
        assert!(ProductSum::new(&params, 0, 0).is_err());
        assert!(ProductSum::new(&params, 2, 0).unwrap().finish(&params).is_none());
    }
}
