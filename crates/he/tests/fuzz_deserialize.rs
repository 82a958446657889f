//! Fuzzing the parsers of bytes that come from the peer (issue 18 item 5): ciphertexts, public
//! keys and Galois keys, from arbitrary bytes and from valid serializations with random bit
//! flips and truncations, must parse or fail with an error — never panic.

use nectar_he::{Ciphertext, GaloisKeys, Params, Plaintext, PublicKey, SecretKey};
use nectar_math::Prg;
use proptest::collection::vec;
use proptest::prelude::*;
use std::sync::OnceLock;

struct Valid {
    params: Params,
    ct: Vec<u8>,
    seeded: Vec<u8>,
    pk: Vec<u8>,
    /// Galois keys cut to their levels (`serialize_digits`) under the OLT parameters (the bOLEe
    /// set has no special prime).
    olt: Params,
    gk_digits: Vec<u8>,
}

/// Valid serializations under the bOLEe parameters (built once).
fn valid() -> &'static Valid {
    static V: OnceLock<Valid> = OnceLock::new();
    V.get_or_init(|| {
        let params = Params::bumblebee_bole();
        let mut prg = Prg::new([3; 16]);
        let sk = SecretKey::generate(&params, &mut prg);
        let pk = sk.public_key(&params, &mut prg);
        let m = vec![7u64; params.n()];
        let pt = Plaintext::from_coeffs(&params, &m, 0).unwrap();
        let ct = pk.encrypt(&params, &pt, &mut prg).unwrap().serialize(&params);
        let seeded = sk.encrypt(&params, &pt, &mut prg).unwrap().serialize(&params);
        let olt = Params::bumblebee_olt();
        let sk_olt = SecretKey::generate(&olt, &mut prg);
        let gk = sk_olt.galois_keys(&olt, &[3, 5, 9], &mut prg).unwrap();
        let gk_digits = gk.serialize_digits(&olt, &std::collections::BTreeMap::from([(3, 1), (5, 2)])).unwrap();
        Valid { pk: pk.serialize(&params), params, ct, seeded, olt, gk_digits }
    })
}

fn mutate(base: &[u8], flips: &[(usize, u8)], cut: usize) -> Vec<u8> {
    let mut b = base.to_vec();
    for &(i, x) in flips {
        let k = i % b.len();
        b[k] ^= x;
    }
    b.truncate(cut % (b.len() + 1));
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_are_errors_not_panics(bytes in vec(any::<u8>(), 0..8192)) {
        let p = &valid().params;
        let _ = Ciphertext::deserialize(p, &bytes);
        let _ = PublicKey::deserialize(p, &bytes);
        let _ = GaloisKeys::deserialize(p, &bytes);
        let _ = GaloisKeys::deserialize_digits(&valid().olt, &bytes);
        let _ = Ciphertext::deserialize_partial(p, &bytes, &[0, 5, 17]);
    }

    #[test]
    fn mutated_serializations_are_errors_not_panics(
        flips in vec((any::<usize>(), any::<u8>()), 1..24),
        cut in any::<usize>(),
    ) {
        let v = valid();
        let p = &v.params;
        let _ = Ciphertext::deserialize(p, &mutate(&v.ct, &flips, cut));
        let _ = Ciphertext::deserialize(p, &mutate(&v.seeded, &flips, cut));
        let _ = PublicKey::deserialize(p, &mutate(&v.pk, &flips, cut));
        let _ = GaloisKeys::deserialize_digits(&v.olt, &mutate(&v.gk_digits, &flips, cut));
    }
}

#[test]
fn valid_serializations_round_trip() {
    let v = valid();
    assert!(Ciphertext::deserialize(&v.params, &v.ct).is_ok());
    assert!(Ciphertext::deserialize(&v.params, &v.seeded).is_ok());
    assert!(PublicKey::deserialize(&v.params, &v.pk).is_ok());
    let (gk, digits) = GaloisKeys::deserialize_digits(&v.olt, &v.gk_digits).unwrap();
    assert_eq!((gk.elements().len(), digits.values().copied().collect::<Vec<_>>()), (3, vec![1, 2, 3]));
}
