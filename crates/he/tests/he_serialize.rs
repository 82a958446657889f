//! Wire formats: round trips, sizes, rejection of truncated / corrupt input, pinned bytes.

use nectar_he::keys::interleave_galois_elements;
use nectar_he::*;
use nectar_math::Prg;
use rand_core::RngCore;

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

#[test]
fn ciphertext_round_trips_sizes_and_rejections() {
    let params = Params::bumblebee_olt();
    let n = params.n();
    let mut prg = Prg::new([7; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let m: Vec<u64> = (0..n).map(|_| prg.next_u64()).collect();
    let pt = Plaintext::from_coeffs(&params, &m, 0).unwrap();
    let ct = sk.encrypt(&params, &pt, &mut prg).unwrap();
    let bytes = ct.serialize(&params);
    // Fresh (b, seed): N·ceil(log2 q)/8 + seed + header.
    let qbits: u32 = params.q_moduli().iter().map(|m| m.bits()).sum();
    assert_eq!(bytes.len(), n * qbits as usize / 8 + 16 + 15);
    assert_eq!(bytes.len(), ct.serialized_len(&params));
    let back = Ciphertext::deserialize(&params, &bytes).unwrap();
    assert_eq!(back, ct);
    assert_eq!(sk.decrypt(&params, &back).unwrap(), pt);
    // Truncated, extended, corrupted header, out-of-range residue: all errors.
    for cut in [0, 5, 12, 30, bytes.len() - 1] {
        assert!(matches!(Ciphertext::deserialize(&params, &bytes[..cut]), Err(HeError::Malformed(_))), "cut {cut}");
    }
    let mut ext = bytes.clone();
    ext.push(0);
    assert!(Ciphertext::deserialize(&params, &ext).is_err());
    for pos in [0usize, 2, 3, 4, 12, 13, 14] {
        let mut bad = bytes.clone();
        bad[pos] ^= 0x40;
        assert!(Ciphertext::deserialize(&params, &bad).is_err(), "byte {pos}");
    }
    let mut bad = bytes.clone();
    bad[31..39].iter_mut().for_each(|b| *b = 0xff); // first residue = 2^59 - 1 >= q_0
    assert!(matches!(Ciphertext::deserialize(&params, &bad), Err(HeError::Malformed(_))));
    // Other parameters: fingerprint mismatch.
    assert!(Ciphertext::deserialize(&Params::bumblebee_bole(), &bytes).is_err());
    // Random garbage never panics.
    for len in [0usize, 1, 15, 100, 1000] {
        let g: Vec<u8> = (0..len).map(|_| prg.next_u32() as u8).collect();
        assert!(Ciphertext::deserialize(&params, &g).is_err());
    }

    // Unseeded (after an operation, NTT form) and mod-switched ciphertexts.
    let mut ct2 = ct.clone();
    ct2.mul_scalar_assign(&params, 3);
    ct2.to_ntt(&params);
    let b2 = ct2.serialize(&params);
    assert_eq!(b2.len(), 2 * n * qbits as usize / 8 + 15);
    assert_eq!(Ciphertext::deserialize(&params, &b2).unwrap(), ct2);
    ct2.mod_switch_down(&params).unwrap();
    let b3 = ct2.serialize(&params);
    let back3 = Ciphertext::deserialize(&params, &b3).unwrap();
    let expect: Vec<u64> = m.iter().map(|v| v.wrapping_mul(3)).collect();
    assert_eq!(sk.decrypt(&params, &back3).unwrap().coeffs(), &expect[..]);

    // Partial: only the agreed b positions.
    let keep: Vec<usize> = (0..n).step_by(64).collect();
    let bp = ct2.serialize_partial(&params, &keep).unwrap();
    assert!(bp.len() < b3.len() * 6 / 10);
    let backp = Ciphertext::deserialize_partial(&params, &bp, &keep).unwrap();
    let dec = sk.decrypt(&params, &backp).unwrap();
    for &k in &keep {
        assert_eq!(dec.coeffs()[k], expect[k]);
    }
    assert!(Ciphertext::deserialize(&params, &bp).is_err());
    assert!(Ciphertext::deserialize_partial(&params, &bp, &keep[1..]).is_err());
    assert!(Ciphertext::deserialize_partial(&params, &bp[..bp.len() - 1], &keep).is_err());
    assert!(ct2.serialize_partial(&params, &[5, 3]).is_err());
}

/// A fresh symmetric ciphertext below the top level (`SecretKey::encrypt_at`, the OLT's low
/// weight queries) travels seeded on its own primes, decrypts, and has the fresh noise, below
/// the noise of a top-level one switched down to the same level; a switched-down one (seed
/// cleared) travels whole.
#[test]
fn low_level_seeded_ciphertexts() {
    let params = Params::nectar_olt_narrow();
    let n = params.n();
    let mut prg = Prg::new([9; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let m: Vec<u64> = (0..n).map(|_| prg.next_u64() & ((1 << 51) - 1)).collect();
    let pt = Plaintext::from_coeffs(&params, &m, 0).unwrap();
    let low = sk.encrypt_at(&params, &pt, 2, &mut prg).unwrap();
    assert_eq!(low.level(), 2);
    assert!(low.is_seeded());
    let bytes = low.serialize(&params);
    let q2: u32 = params.q_moduli()[..2].iter().map(|m| m.bits()).sum();
    assert_eq!(bytes.len(), n * q2 as usize / 8 + 16 + 15);
    assert_eq!(bytes.len(), low.serialized_len(&params));
    assert_eq!(bytes.len(), params.ciphertext_len(2, true));
    let back = Ciphertext::deserialize(&params, &bytes).unwrap();
    assert_eq!(back, low);
    assert_eq!(sk.decrypt(&params, &back).unwrap(), pt);
    let fresh = sk.noise(&params, &back).unwrap();
    let mut switched = sk.encrypt(&params, &pt, &mut prg).unwrap();
    switched.mod_switch_to(&params, 2).unwrap();
    assert!(!switched.is_seeded());
    let sw = sk.noise(&params, &switched).unwrap();
    assert!(fresh.noise_bits <= 6 && fresh.noise_bits + 2 <= sw.noise_bits, "fresh {fresh:?} switched {sw:?}");
    assert_eq!(switched.serialize(&params).len(), params.ciphertext_len(2, false));
    assert!(sk.encrypt_at(&params, &pt, 0, &mut prg).is_err());
    assert!(sk.encrypt_at(&params, &pt, params.max_level() + 1, &mut prg).is_err());
    for cut in [0, 20, bytes.len() - 1] {
        assert!(Ciphertext::deserialize(&params, &bytes[..cut]).is_err(), "cut {cut}");
    }
}

#[test]
fn key_round_trips() {
    let lit = ParamsLiteral::from_bit_sizes(4096, &[36, 36], Some(37), PlainModulus::PowerOfTwo(16)).unwrap();
    let params = Params::new(lit).unwrap();
    let mut prg = Prg::new([8; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let pk = sk.public_key(&params, &mut prg);
    let pb = pk.serialize(&params);
    assert_eq!(pb.len(), 12 + 16 + 4096 * 72 / 8);
    let pk2 = PublicKey::deserialize(&params, &pb).unwrap();
    assert_eq!(pk2, pk);
    assert!(PublicKey::deserialize(&params, &pb[..pb.len() - 1]).is_err());
    let gk = sk.galois_keys(&params, &interleave_galois_elements(4096)[..3], &mut prg).unwrap();
    let gb = gk.serialize(&params);
    let gk2 = GaloisKeys::deserialize(&params, &gb).unwrap();
    assert_eq!(gk2, gk);
    assert!(GaloisKeys::deserialize(&params, &gb[..gb.len() - 3]).is_err());
    let mut bad = gb.clone();
    bad[16] ^= 1; // g becomes even
    assert!(GaloisKeys::deserialize(&params, &bad).is_err());
    // A deserialized key set works.
    let m: Vec<u64> = (0..4096).map(|i| i as u64).collect();
    let ct = pk2.encrypt(&params, &Plaintext::from_coeffs(&params, &m, 0).unwrap(), &mut prg).unwrap();
    let r = ct.automorphism(&params, 3, &gk2).unwrap();
    let dec = sk.decrypt(&params, &r).unwrap();
    assert_eq!(dec.coeffs()[3], 1);
}

/// Pins the wire format: a fixed-seed fresh ciphertext must serialize to the same bytes.
#[test]
fn wire_format_pinned() {
    let lit = ParamsLiteral::from_bit_sizes(4096, &[36, 36], Some(37), PlainModulus::PowerOfTwo(16)).unwrap();
    let params = Params::new(lit).unwrap();
    let mut prg = Prg::new([9; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let pt = Plaintext::from_coeffs(&params, &[1, 2, 3], 0).unwrap();
    let ct = sk.encrypt(&params, &pt, &mut prg).unwrap();
    let h = fnv(&ct.serialize(&params));
    println!("wire hash {h:#018x}");
    assert_eq!(h, PINNED);
}
const PINNED: u64 = 0x327f97e845d28336;
