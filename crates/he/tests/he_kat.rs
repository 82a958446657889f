//! Known-answer test of the evaluation operations: a fixed-seed pipeline (encryptions,
//! plaintext products in both input forms, automorphisms with key switching from both forms,
//! modulus switching, public-key encryption, decryption) must produce the same bytes as when
//! pinned. Guards the optimised kernels (lazy key-switch inner product, NTT-slot automorphism,
//! fused transforms) against any change of results, at the OLT preset (three digits: an odd
//! count) and at an eight-prime set (`N = 8192`, 24-bit primes: eight digits).

use nectar_he::*;
use nectar_math::Prg;
use rand_core::RngCore;

fn fnv(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, &b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

fn pipeline(params: &Params, seed: u8) -> u64 {
    let n = params.n();
    let mut prg = Prg::new([seed; 16]);
    let sk = SecretKey::generate(params, &mut prg);
    let pk = sk.public_key(params, &mut prg);
    let gk = sk.galois_keys(params, &[3, 2 * n as u64 - 1], &mut prg).unwrap();
    let t = params.plain_modulus(0);
    let m: Vec<u64> = (0..n).map(|_| (prg.next_u64() as u128 % t) as u64).collect();
    let w: Vec<u64> = (0..n).map(|_| (prg.next_u64() as u128 % t) as u64).collect();
    let pt = Plaintext::from_coeffs(params, &m, 0).unwrap();
    let pw = PlainNtt::new(params, &Plaintext::from_coeffs(params, &w, 0).unwrap(), params.max_level()).unwrap();
    let mut h = 0xcbf29ce484222325u64;
    let ct = sk.encrypt(params, &pt, &mut prg).unwrap();
    h = fnv(h, &ct.serialize(params));
    let mut ctn = ct.clone();
    ctn.to_ntt(params);
    let mut ctc = ct.clone();
    ctc.to_coeff(params);
    for c in [&ctn, &ctc] {
        let mut p = c.mul_plain(params, &pw).unwrap();
        p.to_coeff(params);
        h = fnv(h, &p.serialize(params));
        for g in gk.elements() {
            h = fnv(h, &c.automorphism(params, g, &gk).unwrap().serialize(params));
        }
    }
    let mut prod = ctn.mul_plain(params, &pw).unwrap();
    let rot = prod.automorphism(params, 3, &gk).unwrap();
    h = fnv(h, &rot.serialize(params));
    h = fnv(h, &sk.decrypt(params, &rot).unwrap().coeffs().iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
    prod.mod_switch_down(params).unwrap();
    h = fnv(h, &prod.serialize(params));
    let cp = pk.encrypt(params, &pt, &mut prg).unwrap();
    h = fnv(h, &cp.serialize(params));
    assert_eq!(sk.decrypt(params, &cp).unwrap().coeffs(), &m[..]);
    h
}

#[test]
fn evaluation_pipeline_pinned() {
    let olt = pipeline(&Params::bumblebee_olt(), 11);
    let t = nectar_math::modulus::ntt_primes(20, 8192, 1, &[]).unwrap()[0];
    let lit = ParamsLiteral::from_bit_sizes(8192, &[24, 24, 24, 24, 24, 24, 24, 24], Some(24), PlainModulus::Prime(t));
    let eight = pipeline(&Params::new(lit.unwrap()).unwrap(), 12);
    println!("kat hashes {olt:#018x} {eight:#018x}");
    assert_eq!((olt, eight), PINNED);
}
/// Pinned with the code before the blocked key-switch inner product (commit c4b1db9).
const PINNED: (u64, u64) = (0x1abf9bdc7f1ede86, 0xd387f88798cc61db);
