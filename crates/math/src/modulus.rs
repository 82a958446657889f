//! Word-size prime moduli for RLWE: Barrett and Shoup multiplication, inverse, power, and the
//! generation/validation of NTT-friendly primes (`p ≡ 1 mod 2N`).
//!
//! All moduli are odd primes `p < 2^62`, so that sums of two residues never overflow a `u64`
//! and lazy reductions in `[0, 2p)` stay below `2^63`. Barrett reduction of a 128-bit product
//! uses the precomputed `floor(2^128 / p)`; Shoup multiplication by a fixed operand `w` uses
//! `floor(w·2^64 / p)`. Neither branches on secret data except for the final conditional
//! subtractions, which compile to branch-free selects.

/// Largest supported modulus bit width (residue sums must fit in a `u64` with slack).
pub const MAX_MODULUS_BITS: u32 = 62;

/// A prime modulus `p < 2^62` with its Barrett constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Modulus {
    p: u64,
    /// `floor(2^128 / p)` as (low, high) 64-bit words.
    ratio: (u64, u64),
}

impl Modulus {
    /// Wraps `p`; returns `None` unless `p` is a prime in `[3, 2^62)`.
    pub fn new(p: u64) -> Option<Self> {
        if p < 3 || p >> MAX_MODULUS_BITS != 0 || !is_prime(p) {
            return None;
        }
        // floor(2^128 / p) = floor((2^128 - 1) / p) because p is not a power of two.
        let r = u128::MAX / p as u128;
        Some(Self { p, ratio: (r as u64, (r >> 64) as u64) })
    }

    /// The modulus value.
    #[inline]
    pub fn value(&self) -> u64 {
        self.p
    }

    /// `ceil(log2 p)` = number of bits of `p` (p is not a power of two).
    #[inline]
    pub fn bits(&self) -> u32 {
        64 - self.p.leading_zeros()
    }

    /// `x mod p` for a full 128-bit `x`.
    #[inline]
    pub fn reduce_u128(&self, x: u128) -> u64 {
        let (x0, x1) = (x as u64, (x >> 64) as u64);
        let (r0, r1) = self.ratio;
        // q ≈ floor(x · ratio / 2^128), under-estimating by at most 2 (the dropped low
        // products contribute < 3 units of 2^128).
        let lo = (x0 as u128 * r0 as u128) >> 64;
        let m1 = x0 as u128 * r1 as u128;
        let m2 = x1 as u128 * r0 as u128;
        let mid = lo + (m1 as u64 as u128) + (m2 as u64 as u128);
        let q = (x1 as u128 * r1 as u128)
            .wrapping_add(m1 >> 64)
            .wrapping_add(m2 >> 64)
            .wrapping_add(mid >> 64) as u64;
        let mut r = x0.wrapping_sub(q.wrapping_mul(self.p));
        // r < 3p < 2^64 here.
        r = if r >= self.p { r - self.p } else { r };
        if r >= self.p {
            r - self.p
        } else {
            r
        }
    }

    /// `x mod p` for a 64-bit `x`.
    #[inline]
    pub fn reduce(&self, x: u64) -> u64 {
        if x < self.p {
            x
        } else {
            self.reduce_u128(x as u128)
        }
    }

    /// The residue of the signed integer `x`.
    #[inline]
    pub fn reduce_i64(&self, x: i64) -> u64 {
        let r = self.reduce(x.unsigned_abs());
        if x < 0 {
            self.neg(r)
        } else {
            r
        }
    }

    /// The residue of the signed 128-bit integer `x`.
    #[inline]
    pub fn reduce_i128(&self, x: i128) -> u64 {
        let r = self.reduce_u128(x.unsigned_abs());
        if x < 0 {
            self.neg(r)
        } else {
            r
        }
    }

    /// `(a + b) mod p` for `a, b < p`.
    #[inline]
    pub fn add(&self, a: u64, b: u64) -> u64 {
        let s = a + b;
        if s >= self.p {
            s - self.p
        } else {
            s
        }
    }

    /// `(a - b) mod p` for `a, b < p`.
    #[inline]
    pub fn sub(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            a - b
        } else {
            a + self.p - b
        }
    }

    /// `-a mod p` for `a < p`.
    #[inline]
    pub fn neg(&self, a: u64) -> u64 {
        if a == 0 {
            0
        } else {
            self.p - a
        }
    }

    /// `a·b mod p` (Barrett) for `a, b < 2^64`.
    #[inline]
    pub fn mul(&self, a: u64, b: u64) -> u64 {
        self.reduce_u128(a as u128 * b as u128)
    }

    /// The Shoup companion `floor(w·2^64 / p)` of a fixed operand `w < p`.
    #[inline]
    pub fn shoup(&self, w: u64) -> u64 {
        (((w as u128) << 64) / self.p as u128) as u64
    }

    /// `a·w mod p` with the Shoup companion `w_shoup = self.shoup(w)`, for any `a < 2^64`.
    #[inline]
    pub fn mul_shoup(&self, a: u64, w: u64, w_shoup: u64) -> u64 {
        let q = ((a as u128 * w_shoup as u128) >> 64) as u64;
        let r = a.wrapping_mul(w).wrapping_sub(q.wrapping_mul(self.p));
        if r >= self.p {
            r - self.p
        } else {
            r
        }
    }

    /// `a^e mod p`.
    pub fn pow(&self, a: u64, mut e: u64) -> u64 {
        let mut base = self.reduce(a);
        let mut acc = 1u64;
        while e > 0 {
            if e & 1 == 1 {
                acc = self.mul(acc, base);
            }
            base = self.mul(base, base);
            e >>= 1;
        }
        acc
    }

    /// `a^{-1} mod p`, or `None` when `a ≡ 0`.
    pub fn inv(&self, a: u64) -> Option<u64> {
        let a = self.reduce(a);
        if a == 0 {
            None
        } else {
            Some(self.pow(a, self.p - 2))
        }
    }

    /// Centred representative of `a < p` in `(-p/2, p/2]`.
    #[inline]
    pub fn center(&self, a: u64) -> i64 {
        if a > self.p / 2 {
            a as i64 - self.p as i64
        } else {
            a as i64
        }
    }
}

fn mul_mod_u64(a: u64, b: u64, m: u64) -> u64 {
    ((a as u128 * b as u128) % m as u128) as u64
}

fn pow_mod_u64(mut a: u64, mut e: u64, m: u64) -> u64 {
    let mut r = 1u64 % m;
    a %= m;
    while e > 0 {
        if e & 1 == 1 {
            r = mul_mod_u64(r, a, m);
        }
        a = mul_mod_u64(a, a, m);
        e >>= 1;
    }
    r
}

/// Deterministic Miller–Rabin for all 64-bit integers (the first 12 primes as bases suffice
/// below 3.3·10^24).
pub fn is_prime(n: u64) -> bool {
    const BASES: [u64; 12] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37];
    if n < 2 {
        return false;
    }
    for &b in &BASES {
        if n % b == 0 {
            return n == b;
        }
    }
    let s = (n - 1).trailing_zeros();
    let d = (n - 1) >> s;
    'outer: for &a in &BASES {
        let mut x = pow_mod_u64(a, d, n);
        if x == 1 || x == n - 1 {
            continue;
        }
        for _ in 1..s {
            x = mul_mod_u64(x, x, n);
            if x == n - 1 {
                continue 'outer;
            }
        }
        return false;
    }
    true
}

/// Whether `p` is a prime with `p ≡ 1 (mod 2n)`, i.e. supports a negacyclic NTT of size `n`
/// (`n` a power of two).
pub fn is_ntt_friendly(p: u64, n: usize) -> bool {
    n.is_power_of_two() && p % (2 * n as u64) == 1 && is_prime(p)
}

/// The `count` largest primes below `2^bits` that are `≡ 1 (mod 2n)` and not in `exclude`,
/// in decreasing order. `None` if `bits` is out of `[log2(2n)+2, 62]` or the range runs out.
pub fn ntt_primes(bits: u32, n: usize, count: usize, exclude: &[u64]) -> Option<Vec<u64>> {
    if !n.is_power_of_two() || bits > MAX_MODULUS_BITS {
        return None;
    }
    let step = 2 * n as u64;
    if bits < step.trailing_zeros() + 2 {
        return None;
    }
    let lower = 1u64 << (bits - 1);
    // Largest value ≡ 1 mod 2n below 2^bits.
    let mut c = ((1u64 << bits) - 1) / step * step + 1;
    if c >= 1u64 << bits {
        c -= step;
    }
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        if c < lower {
            return None;
        }
        if is_prime(c) && !exclude.contains(&c) {
            out.push(c);
        }
        c -= step;
    }
    Some(out)
}

/// A generator of the order-`2n` subgroup: a primitive `2n`-th root of unity mod `p`
/// (the smallest one found by trying `g^((p-1)/2n)` for `g = 2, 3, ...`).
pub fn primitive_root_2n(m: &Modulus, n: usize) -> Option<u64> {
    let two_n = 2 * n as u64;
    let p = m.value();
    if (p - 1) % two_n != 0 {
        return None;
    }
    for g in 2..p.min(1 << 20) {
        let w = m.pow(g, (p - 1) / two_n);
        // Order exactly 2n  <=>  w^n = -1 (n a power of two).
        if m.pow(w, n as u64) == p - 1 {
            return Some(w);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Prg;
    use rand_core::RngCore;

    #[test]
    fn barrett_and_shoup_match_u128() {
        let mut prg = Prg::new([3; 16]);
        for p in ntt_primes(59, 8192, 2, &[]).unwrap().into_iter().chain([3u64, 65537, (1 << 61) - 1]) {
            let m = Modulus::new(p).unwrap();
            for _ in 0..2000 {
                let x = prg.next_u128();
                assert_eq!(m.reduce_u128(x) as u128, x % p as u128);
                let a = prg.next_u64();
                let w = prg.next_u64() % p;
                assert_eq!(m.mul(a, w) as u128, a as u128 * w as u128 % p as u128);
                assert_eq!(m.mul_shoup(a, w, m.shoup(w)), m.mul(a, w));
            }
            assert_eq!(m.reduce_u128(u128::MAX) as u128, u128::MAX % p as u128);
            let a = 123456789 % p;
            if a != 0 {
                assert_eq!(m.mul(a, m.inv(a).unwrap()), 1);
            }
            assert_eq!(m.reduce_i64(-5), (-5i64).rem_euclid(p as i64) as u64);
        }
    }

    #[test]
    fn prime_generation() {
        assert!(is_prime(2) && is_prime(65537) && !is_prime(65535) && !is_prime(1));
        assert!(is_prime((1 << 61) - 1) && !is_prime(3215031751));
        let ps = ntt_primes(49, 8192, 3, &[]).unwrap();
        assert_eq!(ps.len(), 3);
        for &p in &ps {
            assert!(is_ntt_friendly(p, 8192) && p < 1 << 49 && p >= 1 << 48);
            let m = Modulus::new(p).unwrap();
            let w = primitive_root_2n(&m, 8192).unwrap();
            assert_eq!(m.pow(w, 8192), p - 1);
        }
        assert!(ps.windows(2).all(|w| w[0] > w[1]));
        let more = ntt_primes(49, 8192, 1, &ps[..1]).unwrap();
        assert_eq!(more[0], ps[1]);
    }
}
