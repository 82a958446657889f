//! CKKS Galois elements (slot rotations by powers of 5, conjugation by `2N − 1`): pure
//! arithmetic shared by the key generator ([`super::keys`]) and the evaluator's rotations
//! ([`super::rotation`]).

/// The Galois element `5^k mod 2N` of a left rotation by `k` slots (`k` taken mod `N/2`;
/// negative `k` rotates right). `1` for `k ≡ 0`.
pub fn rotation_element(n: usize, k: i64) -> u64 {
    let slots = (n / 2) as i64;
    let mut e = k.rem_euclid(slots.max(1)) as u64;
    let two_n = 2 * n as u64;
    let (mut acc, mut base) = (1u64, 5u64 % two_n);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc * base % two_n;
        }
        base = base * base % two_n;
        e >>= 1;
    }
    acc
}

/// The Galois element `2N − 1` of complex conjugation.
pub fn conjugation_element(n: usize) -> u64 {
    2 * n as u64 - 1
}
