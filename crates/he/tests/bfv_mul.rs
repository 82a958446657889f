//! BFV ct × ct multiplication with relinearisation, row rotations, Paterson–Stockmeyer and the
//! LEAF parameter set (`nectar_he::bfv`).

use nectar_he::bfv::*;
use nectar_he::*;
use nectar_math::Prg;
use rand_core::RngCore;
use std::time::Instant;

const T: u64 = 65537;

/// N = 8192, three 54-bit data primes + a 54-bit special prime (216 <= 218 bits).
fn params_8192() -> Params {
    let lit = ParamsLiteral::from_bit_sizes(8192, &[54, 54, 54], Some(54), PlainModulus::Prime(T)).unwrap();
    Params::new(lit).unwrap()
}

/// N = 16384, seven 55-bit data primes + a 53-bit special prime (438 <= 438 bits).
fn params_16384() -> Params {
    let lit = ParamsLiteral::from_bit_sizes(16384, &[55; 7], Some(53), PlainModulus::Prime(T)).unwrap();
    Params::new(lit).unwrap()
}

fn rand_slots(prg: &mut Prg, n: usize) -> Vec<u64> {
    (0..n).map(|_| prg.next_u64() % T).collect()
}

/// Slot-vector equality with a short message (first mismatch, count).
#[track_caller]
fn same(got: &[u64], want: &[u64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
    assert!(bad.is_empty(), "{what}: {} wrong slots, first {} (got {}, want {})", bad.len(), bad[0], got[bad[0]], want[bad[0]]);
}

fn mulv(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().zip(b).map(|(&x, &y)| x * y % T).collect()
}

struct Ctx {
    params: Params,
    sk: SecretKey,
    rk: RelinKey,
    mul: BfvMul,
}

fn ctx(params: Params, prg: &mut Prg) -> Ctx {
    let sk = SecretKey::generate(&params, prg);
    let rk = sk.relin_key(&params, prg).unwrap();
    let mul = BfvMul::new(&params).unwrap();
    Ctx { params, sk, rk, mul }
}

fn enc(c: &Ctx, v: &[u64], prg: &mut Prg) -> Ciphertext {
    let pt = c.params.encode_simd(v, 0).unwrap();
    c.sk.encrypt(&c.params, &pt, prg).unwrap()
}

fn dec(c: &Ctx, ct: &Ciphertext) -> Vec<u64> {
    c.params.decode_simd(&c.sk.decrypt(&c.params, ct).unwrap()).unwrap()
}

#[test]
fn ct_ct_product_is_slotwise_and_noise_is_small() {
    let mut prg = Prg::new([1; 16]);
    let c = ctx(params_8192(), &mut prg);
    let n = c.params.n();
    let (a, b) = (rand_slots(&mut prg, n), rand_slots(&mut prg, n));
    let (ca, cb) = (enc(&c, &a, &mut prg), enc(&c, &b, &mut prg));
    let fresh = c.sk.noise(&c.params, &ca).unwrap();
    let t0 = Instant::now();
    let prod = c.mul.multiply(&c.params, &ca, &cb, &c.rk).unwrap();
    eprintln!("N = 8192 ct-ct mult + relin: {:?}", t0.elapsed());
    same(&dec(&c, &prod), &mulv(&a, &b), "prod");
    let nr = c.sk.noise(&c.params, &prod).unwrap();
    eprintln!("fresh noise {} bits, product noise {} bits, budget left {}", fresh.noise_bits, nr.noise_bits, nr.budget_bits);
    // log2 t + log2 N + a few bits per level (module docs of bfv::mul).
    assert!(nr.noise_bits <= fresh.noise_bits + 17 + 13 + 8, "{nr:?}");
    // Square (shared-operand path) and NTT-form inputs.
    let mut ca_ntt = ca.clone();
    ca_ntt.to_ntt(&c.params);
    let sq = c.mul.square(&c.params, &ca_ntt, &c.rk).unwrap();
    same(&dec(&c, &sq), &mulv(&a, &a), "sq");
    // Public-key ciphertexts at a lower level.
    let pk = c.sk.public_key(&c.params, &mut prg);
    let pa = pk.encrypt_at(&c.params, &c.params.encode_simd(&a, 0).unwrap(), 2, &mut prg).unwrap();
    let pb = pk.encrypt_at(&c.params, &c.params.encode_simd(&b, 0).unwrap(), 2, &mut prg).unwrap();
    let p2 = c.mul.multiply(&c.params, &pa, &pb, &c.rk).unwrap();
    assert_eq!(p2.level(), 2);
    same(&dec(&c, &p2), &mulv(&a, &b), "p2");
    // The relinearisation key survives its wire form; truncated bytes are an error.
    let bytes = c.rk.serialize(&c.params);
    let rk2 = RelinKey::deserialize(&c.params, &bytes).unwrap();
    assert_eq!(rk2, c.rk);
    assert!(RelinKey::deserialize(&c.params, &bytes[..bytes.len() - 1]).is_err());
    // Mismatched levels are refused.
    assert!(c.mul.multiply(&c.params, &ca, &pb, &c.rk).is_err());
}

#[test]
fn scalar_simd_plain_and_linear_combination() {
    let mut prg = Prg::new([2; 16]);
    let c = ctx(params_8192(), &mut prg);
    let n = c.params.n();
    let (a, b, w) = (rand_slots(&mut prg, n), rand_slots(&mut prg, n), rand_slots(&mut prg, n));
    let (ca, cb) = (enc(&c, &a, &mut prg), enc(&c, &b, &mut prg));
    let s = c.mul_plain_scalar_check(&ca, &a, T - 3);
    assert!(s);
    let pw = PlainNtt::new(&c.params, &c.params.encode_simd(&w, 0).unwrap(), 3).unwrap();
    let cw = ca.mul_plain(&c.params, &pw).unwrap();
    same(&dec(&c, &cw), &mulv(&a, &w), "cw");
    let lc = Ciphertext::linear_combination(&c.params, &[(&ca, 5), (&cb, T - 7), (&cw, 0)], 11).unwrap();
    let want: Vec<u64> = (0..n).map(|i| (5 * a[i] + (T - 7) * b[i] + 11) % T).collect();
    same(&dec(&c, &lc), &want, "lin comb");
    assert!(Ciphertext::linear_combination(&c.params, &[(&ca, T)], 0).is_err());
}

impl Ctx {
    fn mul_plain_scalar_check(&self, ct: &Ciphertext, v: &[u64], k: u64) -> bool {
        let r = ct.mul_plain_scalar(&self.params, k).unwrap();
        dec(self, &r) == v.iter().map(|&x| x * k % T).collect::<Vec<_>>()
    }
}

/// Repeated squaring until the budget runs out, printing the budget after each level.
#[test]
fn depth_by_repeated_squaring() {
    let mut prg = Prg::new([3; 16]);
    let c = ctx(params_8192(), &mut prg);
    let n = c.params.n();
    let a = rand_slots(&mut prg, n);
    let mut ct = enc(&c, &a, &mut prg);
    let mut want = a.clone();
    let mut depth = 0;
    eprintln!("N = 8192, log2 q = {}: fresh budget {:?}", c.params.q_bits(3), c.sk.noise(&c.params, &ct).unwrap());
    loop {
        ct = c.mul.square(&c.params, &ct, &c.rk).unwrap();
        want = mulv(&want, &want);
        let nr = c.sk.noise(&c.params, &ct).unwrap();
        eprintln!("depth {}: noise {} bits, budget {} bits", depth + 1, nr.noise_bits, nr.budget_bits);
        if nr.budget_bits <= 0 {
            break;
        }
        same(&dec(&c, &ct), &want, "depth");
        depth += 1;
    }
    assert!(depth >= 3, "only {depth} levels");
}

#[test]
fn row_rotations_and_swap() {
    let mut prg = Prg::new([4; 16]);
    let c = ctx(params_8192(), &mut prg);
    let n = c.params.n();
    let h = n / 2;
    let steps = [1i64, 5, -3, 1000];
    let gk = c.sk.galois_keys(&c.params, &row_galois_elements(n, &steps, true), &mut prg).unwrap();
    let v = rand_slots(&mut prg, n);
    // The row layout is a permutation of encode_simd's slots with slot 0 shared.
    let layout = c.params.simd_row_layout(0).unwrap();
    assert_eq!(layout[0], 0);
    let mut seen = layout.clone();
    seen.sort_unstable();
    assert_eq!(seen, (0..n).collect::<Vec<_>>());
    let pt = c.params.encode_simd_rows(&v, 0).unwrap();
    assert_eq!(c.params.decode_simd_rows(&pt).unwrap(), v);
    let ct = c.sk.encrypt(&c.params, &pt, &mut prg).unwrap();
    let dec_rows = |ct: &Ciphertext| c.params.decode_simd_rows(&c.sk.decrypt(&c.params, ct).unwrap()).unwrap();
    for &k in &steps {
        let r = ct.rotate_rows(&c.params, k, &gk).unwrap();
        let want: Vec<u64> = (0..n)
            .map(|s| {
                let (row, i) = (s / h, s % h);
                v[row * h + (i as i64 + k).rem_euclid(h as i64) as usize]
            })
            .collect();
        same(&dec_rows(&r), &want, "rotation");
    }
    let sw = ct.swap_rows(&c.params, &gk).unwrap();
    let want: Vec<u64> = (0..n).map(|s| v[(s + h) % n]).collect();
    same(&dec_rows(&sw), &want, "swap");
    // Rotation by a multiple of N/2 is the identity; a missing key is an error.
    same(&dec_rows(&ct.rotate_rows(&c.params, h as i64, &gk).unwrap()), &v, "rot N/2");
    assert!(matches!(ct.rotate_rows(&c.params, 2, &gk), Err(HeError::MissingGaloisKey(_))));
}

#[test]
fn paterson_stockmeyer_matches_horner() {
    let mut prg = Prg::new([5; 16]);
    let d = 300;
    let coeffs: Vec<u64> = (0..=d).map(|_| prg.next_u64() % T).collect();
    let horner = |x: u64| coeffs.iter().rev().fold(0u64, |acc, &c| (acc * x + c) % T);
    // Plaintext twin over many slots, several baby steps.
    let xs = rand_slots(&mut prg, 4096);
    let want: Vec<u64> = xs.iter().map(|&x| horner(x)).collect();
    for baby in [None, Some(1), Some(7), Some(17), Some(25), Some(d + 1)] {
        let (got, st) = paterson_stockmeyer(&mut SlotPolyOps { t: T }, &xs, &coeffs, baby).unwrap();
        same(&got, &want, "twin");
        assert!(st.mults <= st.mults_bound, "{st:?}");
    }
    // A dense polynomial at the default baby step takes exactly the bound of the giant steps by
    // halves, k + m + ⌈log2 m⌉ − 3 (k = 16, m = 19: 37), against LEAF Alg. 2's k + 2m − 4 = 50.
    let (_, st) = paterson_stockmeyer(&mut SlotPolyOps { t: T }, &xs, &coeffs, None).unwrap();
    assert_eq!((st.baby, st.blocks, st.mults, st.mults_bound), (16, 19, 37, 37));
    // Encrypted: N = 16384, depth ceil(log2 16) + ceil(log2 18) + 1 = 10.
    let c = ctx(params_16384(), &mut prg);
    let n = c.params.n();
    let xs = rand_slots(&mut prg, n);
    let ct = enc(&c, &xs, &mut prg);
    let t0 = Instant::now();
    let mut ops = BfvPolyOps { params: &c.params, mul: &c.mul, rk: &c.rk };
    let (out, st) = paterson_stockmeyer(&mut ops, &ct, &coeffs, None).unwrap();
    let nr = c.sk.noise(&c.params, &out).unwrap();
    eprintln!(
        "PS degree {d} at N = {n}: {st:?} (2·sqrt(2d) = {:.1}), {:?}, budget left {} bits",
        2.0 * (2.0 * d as f64).sqrt(),
        t0.elapsed(),
        nr.budget_bits
    );
    assert!(nr.budget_bits > 0);
    let got = dec(&c, &out);
    for (i, (&g, &x)) in got.iter().zip(&xs).enumerate() {
        assert_eq!(g, horner(x), "slot {i}");
    }
    assert!(st.mults <= st.mults_bound);
}

#[test]
fn leaf_params_validate_and_insecure_refused() {
    let lit = ParamsLiteral::leaf_bfv().unwrap();
    let bits: Vec<u32> = lit.q.iter().map(|&q| 64 - q.leading_zeros()).collect();
    assert_eq!(bits, vec![30, 60, 28, 55, 55, 55, 55, 55, 55, 55, 55, 55, 56]);
    assert_eq!(bits.iter().sum::<u32>(), 669);
    assert!(lit.q.iter().chain(lit.special.iter()).all(|&q| q % 65536 == 1));
    let p = Params::new(lit.clone()).unwrap();
    assert_eq!((p.n(), p.plain_modulus(0), p.q_bits(13)), (32768, 65537, 669));
    // 669 + 60 = 729 <= 881; widening past 881 bits is refused.
    let mut wide = lit.clone();
    let extra = nectar_math::modulus::ntt_primes(60, 32768, 4, &[&wide.q[..], &[wide.special.unwrap(), 65537]].concat()).unwrap();
    wide.q.extend(extra.iter().take(3));
    assert!(matches!(Params::new(wide), Err(HeError::Insecure { n: 32768, max_bits: 881, .. })));
    // The same primes at N = 16384 would be insecure (and not NTT-friendly is not the reason).
    let mut small = lit;
    small.n = 16384;
    assert!(matches!(Params::new(small), Err(HeError::Insecure { .. })));
}

/// One ct-ct multiplication + relinearisation at the LEAF parameters (N = 32768, 669-bit q),
/// then repeated squaring to the end of the noise budget.
#[test]
fn leaf_params_product_and_depth() {
    let mut prg = Prg::new([6; 16]);
    let t0 = Instant::now();
    let c = ctx(Params::leaf_bfv().unwrap(), &mut prg);
    eprintln!("LEAF keygen + multiplier: {:?}, aux primes {}", t0.elapsed(), c.mul.aux_moduli().len());
    let n = c.params.n();
    let (a, b) = (rand_slots(&mut prg, n), rand_slots(&mut prg, n));
    let (ca, cb) = (enc(&c, &a, &mut prg), enc(&c, &b, &mut prg));
    let t0 = Instant::now();
    let prod = c.mul.multiply(&c.params, &ca, &cb, &c.rk).unwrap();
    eprintln!("LEAF N = 32768 ct-ct mult + relin: {:?}", t0.elapsed());
    same(&dec(&c, &prod), &mulv(&a, &b), "prod");
    let nr = c.sk.noise(&c.params, &prod).unwrap();
    eprintln!("LEAF product: {nr:?}");
    assert!(nr.budget_bits > 500);
    // Depth: square until the budget is spent (LEAF §1.2 needs 13 levels; its degree-65536
    // Paterson–Stockmeyer needs 17).
    let mut ct = prod;
    let mut want = mulv(&a, &b);
    let mut depth = 1;
    let t0 = Instant::now();
    loop {
        ct = c.mul.square(&c.params, &ct, &c.rk).unwrap();
        want = mulv(&want, &want);
        let nr = c.sk.noise(&c.params, &ct).unwrap();
        eprintln!("LEAF depth {}: noise {} bits, budget {} bits", depth + 1, nr.noise_bits, nr.budget_bits);
        if nr.budget_bits <= 0 {
            break;
        }
        same(&dec(&c, &ct), &want, "LEAF depth");
        depth += 1;
    }
    eprintln!("LEAF parameters: {depth} levels ({:?} for the squarings)", t0.elapsed());
    assert!(depth >= 17, "only {depth} levels");
}
