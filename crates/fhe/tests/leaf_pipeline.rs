//! LEAF Alg. 4 steps 1–4 on real ciphertexts: PCMM over the (A, B) parts, the switch to
//! `P = 65537`, and the packing into slot BFV (LEAF §2.2, §3.2). The BFV side runs at
//! `N = 8192` with `t = 65537` (a 128-bit set: 3 × 50-bit primes plus a 50-bit special prime,
//! 200 ≤ 218 bits), the RLWE side at LEAF's `n = 1024`, `q' = 2^27`, `p = 512`: 8 RLWE
//! ciphertexts per BFV ciphertext.

use nectar_fhe::pack::{pack_galois_elements, packing_key, Packer};
use nectar_fhe::rlwe::{decode_p, pcmm, switch_to_p, RlweCt, RlweParams, RlweSecretKey, LEAF_P};
use nectar_he::{Params, ParamsLiteral, PlainModulus, SecretKey};
use nectar_math::Prg;
use rand_core::RngCore;

fn bfv_params() -> Params {
    Params::new(ParamsLiteral::from_bit_sizes(8192, &[50, 50, 50], Some(50), PlainModulus::Prime(LEAF_P)).unwrap()).unwrap()
}

fn random_rows(prg: &mut Prg, rows: usize, n: usize, p: u32) -> Vec<Vec<u32>> {
    (0..rows).map(|_| (0..n).map(|_| prg.next_u32() % p).collect()).collect()
}

#[test]
fn pcmm_computes_w_times_m_mod_p() {
    let rp = RlweParams::leaf().unwrap();
    let mut prg = Prg::new([1; 16]);
    let sk = RlweSecretKey::generate(&rp, &mut prg);
    let (l, d, n, p) = (24, 5, rp.n(), rp.p());
    let m = random_rows(&mut prg, l, n, p);
    let cts: Vec<RlweCt> = m.iter().map(|r| sk.encrypt(&rp, r, &mut prg).unwrap()).collect();
    // signed weights in [-256, 256)
    let w: Vec<i32> = (0..d * l).map(|_| (prg.next_u32() % 512) as i32 - 256).collect();
    let out = pcmm(&rp, &w, &cts).unwrap();
    assert_eq!(out.len(), d);
    for k in 0..d {
        let want: Vec<u32> = (0..n)
            .map(|j| {
                let s: i64 = (0..l).map(|i| w[k * l + i] as i64 * m[i][j] as i64).sum();
                s.rem_euclid(p as i64) as u32
            })
            .collect();
        assert_eq!(sk.decrypt(&rp, &out[k]), want, "row {k}");
        // after the switch to P the phase decodes to the same message (|e'| < α/2)
        let sw = switch_to_p(&rp, &out[k]);
        let got: Vec<u32> = sk.phase_p(&rp, &sw).into_iter().map(|x| decode_p(&rp, x)).collect();
        assert_eq!(got, want, "row {k} after the switch");
    }
    assert!(pcmm(&rp, &w[..7], &cts).is_err());
}

#[test]
fn packing_puts_every_phase_in_its_slot() {
    let params = bfv_params();
    let rp = RlweParams::leaf().unwrap();
    let n = rp.n();
    let mut prg = Prg::new([2; 16]);
    let bfv_sk = SecretKey::generate(&params, &mut prg);
    let sk = RlweSecretKey::generate(&rp, &mut prg);
    let key = packing_key(&params, &bfv_sk, &sk, &mut prg).unwrap();
    let gk = bfv_sk.galois_keys(&params, &pack_galois_elements(&params, n), &mut prg).unwrap();
    let packer = Packer::new(&params, &key, &gk, n).unwrap();
    assert_eq!(packer.capacity(n), 8);
    // 7 of 8 blocks used: the last block stays zero
    let m = random_rows(&mut prg, 7, n, rp.p());
    let cts: Vec<_> = m.iter().map(|r| switch_to_p(&rp, &sk.encrypt(&rp, r, &mut prg).unwrap())).collect();
    let (ct, stats) = packer.pack(&cts, n, &gk).unwrap();
    assert_eq!(stats.products, n);
    assert_eq!(stats.rotations, n.div_ceil(nectar_fhe::lt::baby_steps(n)) - 1);
    let noise = bfv_sk.noise(&params, &ct).unwrap();
    assert!(noise.budget_bits > 60, "budget left {}", noise.budget_bits);
    let slots = params.decode_simd_rows(&bfv_sk.decrypt(&params, &ct).unwrap()).unwrap();
    for (t, c) in cts.iter().enumerate() {
        let phase = sk.phase_p(&rp, c);
        assert_eq!(&slots[t * n..(t + 1) * n], &phase[..], "block {t}");
        let msg: Vec<u32> = phase.iter().map(|&x| decode_p(&rp, x)).collect();
        assert_eq!(msg, m[t]);
    }
    assert!(slots[7 * n..].iter().all(|&v| v == 0));
    // bad inputs: too many ciphertexts, a wrong degree, coefficients not below P
    assert!(packer.pack(&vec![cts[0].clone(); 9], n, &gk).is_err());
    assert!(packer.pack(&cts, 3, &gk).is_err());
    let mut short = cts[0].clone();
    short.a.pop();
    assert!(packer.pack(&[short], n, &gk).is_err());
    let mut big = cts[0].clone();
    big.b[3] = LEAF_P as u32;
    assert!(packer.pack(&[big], n, &gk).is_err());
}

#[test]
fn packer_refuses_missing_keys_and_bad_degrees() {
    let params = bfv_params();
    let rp = RlweParams::leaf().unwrap();
    let mut prg = Prg::new([3; 16]);
    let bfv_sk = SecretKey::generate(&params, &mut prg);
    let sk = RlweSecretKey::generate(&rp, &mut prg);
    let key = packing_key(&params, &bfv_sk, &sk, &mut prg).unwrap();
    let only_one = bfv_sk.galois_keys(&params, &pack_galois_elements(&params, 1024)[..1], &mut prg).unwrap();
    assert!(Packer::new(&params, &key, &only_one, 1024).is_err());
    let gk = bfv_sk.galois_keys(&params, &pack_galois_elements(&params, 1000), &mut prg).unwrap();
    assert!(Packer::new(&params, &key, &gk, 1000).is_err());
}

/// Pack → (a slot-wise map) → S2C: the BFV plaintext's coefficient `σ⁻¹(slot)` is exactly the
/// map of the input phase (mod P); then the ring switch hands back RLWE ciphertexts that decrypt
/// to the messages, at the same ciphertext and coefficient.
#[test]
fn pack_s2c_ring_switch_round_trip() {
    use nectar_fhe::ring_switch::{ring_switch, ring_switch_key};
    use nectar_fhe::activation::leaf_galois_elements;
    use nectar_fhe::s2c::SlotsToCoeffs;
    let params = bfv_params();
    let rp = RlweParams::leaf().unwrap();
    let n = rp.n();
    let mut prg = Prg::new([4; 16]);
    let bfv_sk = SecretKey::generate(&params, &mut prg);
    let sk = RlweSecretKey::generate(&rp, &mut prg);
    let key = packing_key(&params, &bfv_sk, &sk, &mut prg).unwrap();
    let elems = leaf_galois_elements(&params, n);
    let gk = bfv_sk.galois_keys(&params, &elems, &mut prg).unwrap();
    let packer = Packer::new(&params, &key, &gk, n).unwrap();
    let s2c = SlotsToCoeffs::new(&params, n, n).unwrap();
    let rsk = ring_switch_key(&params, &rp, &bfv_sk, &sk, &mut prg).unwrap();
    let m = random_rows(&mut prg, 8, n, rp.p());
    let cts: Vec<_> = m.iter().map(|r| switch_to_p(&rp, &sk.encrypt(&rp, r, &mut prg).unwrap())).collect();
    let phases: Vec<Vec<u64>> = cts.iter().map(|c| sk.phase_p(&rp, c)).collect();
    let (packed, _) = packer.pack(&cts, n, &gk).unwrap();
    for scale in [1u64, 3] {
        let mapped = packed.mul_plain_scalar(&params, scale).unwrap();
        let (coeff_ct, st) = s2c.apply(&mapped, &gk).unwrap();
        assert_eq!(st.products, params.n());
        let budget = bfv_sk.noise(&params, &coeff_ct).unwrap().budget_bits;
        assert!(budget > 20, "S2C left {budget} bits");
        let poly = bfv_sk.decrypt(&params, &coeff_ct).unwrap();
        for (t, ph) in phases.iter().enumerate() {
            for (c, &x) in ph.iter().enumerate() {
                assert_eq!(poly.coeffs()[s2c.coefficient_of_slot(t * n + c)], x * scale % LEAF_P, "ciphertext {t} coefficient {c}");
            }
        }
        if scale == 1 {
            let out = ring_switch(&params, &rp, &coeff_ct, &rsk).unwrap();
            assert_eq!(out.len(), 8);
            for (t, ct) in out.iter().enumerate() {
                assert_eq!(sk.decrypt(&rp, ct), m[t], "ciphertext {t}");
                // the noise at q' against the message scale q'/P of the phase: one-bit digits at
                // N = 8192, σ ≈ √(27·8192/2)·3.24 ≈ 2^10; 2^13 is > 7σ
                let worst = sk
                    .phase(&rp, ct)
                    .iter()
                    .zip(&phases[t])
                    .map(|(&y, &x)| ((y as i64 - ((x << 27) / LEAF_P) as i64 + (1 << 26)).rem_euclid(1 << 27) - (1 << 26)).abs())
                    .max()
                    .unwrap();
                assert!(worst < 1 << 13, "ring-switch noise {worst}");
            }
        }
    }
}

/// The whole non-polynomial evaluation (LEAF Alg. 4 steps 2–9) with a table whose Lemma 2
/// polynomial is shallow enough for this test set: `f(x) = x + 5α` (the message plus 5); the
/// degree-65536 GELU polynomial runs at LEAF's parameters in `nectar bench fhe --op gelu`.
#[test]
fn leaf_activation_applies_the_table_to_every_message() {
    use nectar_fhe::activation::{leaf_keygen, LeafActivation};
    use nectar_fhe::fbs_poly::FbsParams;
    let params = bfv_params();
    let rp = RlweParams::leaf().unwrap();
    let mut prg = Prg::new([5; 16]);
    let (client, eval) = leaf_keygen(&params, &rp, &mut prg).unwrap();
    let alpha = rp.alpha();
    let f: Vec<u64> = (0..LEAF_P).map(|x| (x + 5 * alpha) % LEAF_P).collect();
    let act = LeafActivation::new(&params, &rp, eval, &FbsParams::LEAF, &f, rp.n()).unwrap();
    // 10 ciphertexts: one full BFV ciphertext (8) and a partial one (2)
    let m = random_rows(&mut prg, 10, rp.n(), rp.p());
    let cts: Vec<_> = m.iter().map(|r| client.rlwe.encrypt(&rp, r, &mut prg).unwrap()).collect();
    let (out, st) = act.evaluate(&cts).unwrap();
    assert_eq!((out.len(), st.bfv_cts), (10, 2));
    for (t, o) in out.iter().enumerate() {
        let want: Vec<u32> = m[t].iter().map(|&v| (v + 5) % rp.p()).collect();
        assert_eq!(client.rlwe.decrypt(&rp, o), want, "ciphertext {t}");
    }
}

/// A packed prefix (`used = 256` of `n = 1024`, e.g. 256 tokens in a ring of 1024; table
/// `f(x) = x + 7α`): 32
/// ciphertexts per BFV ciphertext, and input `t`'s coefficient `c` comes back at output
/// `t / 4`, coefficient `(t mod 4)·256 + c`.
#[test]
fn leaf_activation_on_a_packed_prefix() {
    use nectar_fhe::activation::{leaf_keygen, LeafActivation};
    use nectar_fhe::fbs_poly::FbsParams;
    let params = bfv_params();
    let rp = RlweParams::leaf().unwrap();
    let (n, used) = (rp.n(), 256);
    let mut prg = Prg::new([6; 16]);
    let (client, eval) = leaf_keygen(&params, &rp, &mut prg).unwrap();
    let alpha = rp.alpha();
    let f: Vec<u64> = (0..LEAF_P).map(|x| (x + 7 * alpha) % LEAF_P).collect();
    let act = LeafActivation::new(&params, &rp, eval, &FbsParams::LEAF, &f, used).unwrap();
    let m = random_rows(&mut prg, 10, n, rp.p());
    let cts: Vec<_> = m.iter().map(|r| client.rlwe.encrypt(&rp, r, &mut prg).unwrap()).collect();
    let (out, st) = act.evaluate(&cts).unwrap();
    assert_eq!((out.len(), st.bfv_cts), (3, 1));
    let q = n / used;
    let dec: Vec<Vec<u32>> = out.iter().map(|o| client.rlwe.decrypt(&rp, o)).collect();
    for t in 0..cts.len() {
        for c in 0..used {
            assert_eq!(dec[t / q][(t % q) * used + c], (m[t][c] + 7) % rp.p(), "input {t} coefficient {c}");
        }
    }
    assert!(LeafActivation::new(&params, &rp, leaf_keygen(&params, &rp, &mut prg).unwrap().1, &FbsParams::LEAF, &f, 3).is_err());
}
