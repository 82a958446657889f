//! `Lift` / `Down` of bOLEe (BumbleBee §IV, Prop. 2–3) over a CRT plaintext modulus
//! `t = t_0·t_1·…` (each `t_i` a prime `≡ 1 mod 2N` for SIMD batching, REFERENCE.md §1.2).
//!
//! - `Lift(x) = ⌊t·x/2^l⌉ mod t` for `x ∈ Z_{2^l}`;
//! - `Down(y) = ⌊2^l·y/t⌉ mod 2^l` for `y ∈ Z_t`.
//!
//! If `t > 2^{2l}`: `Down(Lift(x)·y mod t) = x·y mod 2^l` (Prop. 2), and for `r` uniform in `Z_t`,
//! `Down(Lift(x)·y − r) + Down(r) = x·y + e`, `e ∈ {0, ±1}` (Prop. 3).
//!
//! `Down` works on the RNS residues without reconstructing `y`: with `y'_i = y_i·(t/t_i)^{-1} mod
//! t_i`, `Σ_i y'_i·t/t_i = y + κ·t` for an integer `κ`, so `2^l·y/t ≡ Σ_i y'_i·2^l/t_i (mod 2^l)`.
//! Each term is split into an integer part and a 64-bit fixed-point fraction; the rounding is
//! exact unless the true value lies within `#primes·2^{-64}` of a rounding boundary, where it may
//! differ by one: inside bOLEe's `±1` bound, and never the case for Prop. 2 inputs, whose
//! fractional part is within `2^{2l-1}/t` of an integer.

use crate::LinearError;

/// A CRT plaintext modulus with the precomputations of `Lift` / `Down` (AGREEMENT).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrtModulus {
    primes: Vec<u64>,
    /// `t` as little-endian 64-bit limbs (at most 3 limbs: `t < 2^192`).
    t: [u64; 4],
    /// `(t/t_i)^{-1} mod t_i`.
    hat_inv: Vec<u64>,
    bits: u32,
}

fn mulmod(a: u64, b: u64, m: u64) -> u64 {
    ((a as u128 * b as u128) % m as u128) as u64
}

fn powmod(mut a: u64, mut e: u64, m: u64) -> u64 {
    let mut r = 1u64 % m;
    while e > 0 {
        if e & 1 == 1 {
            r = mulmod(r, a, m);
        }
        a = mulmod(a, a, m);
        e >>= 1;
    }
    r
}

/// `a · b` for a 4-limb `a` and a word `b` (the caller guarantees no overflow past 256 bits).
fn mul_small(a: &[u64; 4], b: u64) -> [u64; 4] {
    let mut out = [0u64; 4];
    let mut carry = 0u128;
    for i in 0..4 {
        let v = a[i] as u128 * b as u128 + carry;
        out[i] = v as u64;
        carry = v >> 64;
    }
    out
}

fn mod_small(a: &[u64; 4], m: u64) -> u64 {
    a.iter().rev().fold(0u64, |r, &limb| {
        (((r as u128) << 64 | limb as u128) % m as u128) as u64
    })
}

impl CrtModulus {
    /// `primes` must be distinct odd primes below `2^62` with product below `2^190` (checked:
    /// distinct, odd, size; primality is the HE layer's parameter check).
    pub fn new(primes: &[u64]) -> Result<Self, LinearError> {
        if primes.is_empty() {
            return Err(LinearError::BadParams(
                "CRT modulus needs at least one prime".into(),
            ));
        }
        let mut t = [1u64, 0, 0, 0];
        let mut bits = 0u32;
        for (i, &p) in primes.iter().enumerate() {
            if p < 3 || p & 1 == 0 || p >= 1 << 62 || primes[..i].contains(&p) {
                return Err(LinearError::BadParams(format!(
                    "CRT prime {p} invalid or repeated"
                )));
            }
            bits += 64 - p.leading_zeros();
            if bits > 190 {
                return Err(LinearError::BadParams("CRT modulus above 2^190".into()));
            }
            t = mul_small(&t, p);
        }
        let hat_inv = primes
            .iter()
            .map(|&p| {
                let hat = primes
                    .iter()
                    .filter(|&&o| o != p)
                    .fold(1u64, |acc, &o| mulmod(acc, o % p, p));
                powmod(hat, p - 2, p)
            })
            .collect();
        // Exact bit length of t.
        let top = (0..4).rev().find(|&i| t[i] != 0).unwrap_or(0);
        let bits = 64 * top as u32 + (64 - t[top].leading_zeros());
        Ok(CrtModulus {
            primes: primes.to_vec(),
            t,
            hat_inv,
            bits,
        })
    }

    pub fn primes(&self) -> &[u64] {
        &self.primes
    }

    /// Bit length of `t`.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Checks Prop. 2's condition `t > 2^{2l}` for ring width `l ≤ 64`.
    pub fn check_ring(&self, l: u32) -> Result<(), LinearError> {
        if l == 0 || l > 64 || self.bits <= 2 * l {
            return Err(LinearError::BadParams(format!(
                "bOLEe needs t > 2^(2l): t has {} bits, l = {l}",
                self.bits
            )));
        }
        Ok(())
    }

    /// `Lift(x)` as residues mod each prime (`x < 2^l`).
    pub fn lift(&self, x: u64, l: u32, out: &mut [u64]) {
        // ⌊(t·x + 2^{l-1}) / 2^l⌋ < t.
        let mut v = mul_small(&self.t, x);
        let half = 1u128 << (l - 1);
        let s = v[0] as u128 + (half as u64) as u128;
        v[0] = s as u64;
        let mut carry = (s >> 64) as u64 + (half >> 64) as u64;
        for limb in v.iter_mut().skip(1) {
            let (r, c) = limb.overflowing_add(carry);
            *limb = r;
            carry = c as u64;
        }
        // Shift right by l (1 <= l <= 64).
        let sh = if l == 64 {
            [v[1], v[2], v[3], 0]
        } else {
            [
                (v[0] >> l) | (v[1] << (64 - l)),
                (v[1] >> l) | (v[2] << (64 - l)),
                (v[2] >> l) | (v[3] << (64 - l)),
                v[3] >> l,
            ]
        };
        for (o, &p) in out.iter_mut().zip(&self.primes) {
            *o = mod_small(&sh, p);
        }
    }

    /// `Down(y)` from the residues of `y ∈ Z_t`.
    pub fn down(&self, y: &[u64], l: u32) -> u64 {
        let mut int = 0u64;
        let mut frac = 0u128;
        for ((&yi, &p), &hi) in y.iter().zip(&self.primes).zip(&self.hat_inv) {
            let yp = mulmod(yi % p, hi, p);
            let num = (yp as u128) << l;
            let (qi, ri) = (num / p as u128, num % p as u128);
            int = int.wrapping_add(qi as u64);
            frac += (ri << 64) / p as u128;
        }
        let mut res = int.wrapping_add((frac >> 64) as u64);
        if (frac as u64) >= 1 << 63 {
            res = res.wrapping_add(1);
        }
        if l == 64 {
            res
        } else {
            res & ((1u64 << l) - 1)
        }
    }

    /// A signed value `v ∈ [-2^{l-1}, 2^{l-1})` given as its `l`-bit pattern, reduced mod each prime
    /// (the receiver's centred SIMD encoding of `y`).
    pub fn centred(&self, y: u64, l: u32, out: &mut [u64]) {
        let s = if l == 64 {
            y as i64
        } else {
            ((y << (64 - l)) as i64) >> (64 - l)
        };
        for (o, &p) in out.iter_mut().zip(&self.primes) {
            *o = if s >= 0 {
                (s as u64) % p
            } else {
                p - ((s.unsigned_abs()) % p)
            } % p;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_math::{sample::uniform_below, Prg};
    use rand_core::RngCore;

    /// Deterministic Miller–Rabin for u64.
    pub(crate) fn is_prime(n: u64) -> bool {
        if n < 2 {
            return false;
        }
        for p in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
            if n.checked_rem(p) == Some(0) {
                return n == p;
            }
        }
        let (mut d, mut s) = (n - 1, 0);
        while d % 2 == 0 {
            d /= 2;
            s += 1;
        }
        'a: for a in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
            let mut x = powmod(a, d, n);
            if x == 1 || x == n - 1 {
                continue;
            }
            for _ in 1..s {
                x = mulmod(x, x, n);
                if x == n - 1 {
                    continue 'a;
                }
            }
            return false;
        }
        true
    }

    pub(crate) fn ntt_primes(bits: u32, two_n: u64, count: usize) -> Vec<u64> {
        let mut out = vec![];
        let mut c = ((1u64 << bits) / two_n) * two_n + 1;
        while out.len() < count {
            c -= two_n;
            if is_prime(c) {
                out.push(c);
            }
        }
        out
    }

    fn mul_mod_t(m: &CrtModulus, a: &[u64], b: &[u64]) -> Vec<u64> {
        a.iter()
            .zip(b)
            .zip(m.primes())
            .map(|((&x, &y), &p)| mulmod(x, y, p))
            .collect()
    }

    #[test]
    fn prop2_exact_and_prop3_error() {
        let mut prg = Prg::new([4; 16]);
        for &(l, bits, count) in &[
            (64u32, 47u32, 3usize),
            (32, 47, 2),
            (16, 20, 2),
            (64, 60, 3),
        ] {
            let m = CrtModulus::new(&ntt_primes(bits, 16384, count)).unwrap();
            m.check_ring(l).unwrap();
            let mask = if l == 64 { u64::MAX } else { (1 << l) - 1 };
            let (mut lx, mut cy) = (vec![0; count], vec![0; count]);
            for i in 0..3000 {
                let (x, y) = match i {
                    0 => (mask, mask),
                    1 => (0, mask),
                    2 => (1 << (l - 1), 1 << (l - 1)),
                    _ => (prg.next_u64() & mask, prg.next_u64() & mask),
                };
                let want = x.wrapping_mul(y) & mask;
                m.lift(x, l, &mut lx);
                m.centred(y, l, &mut cy);
                let prod = mul_mod_t(&m, &lx, &cy);
                assert_eq!(m.down(&prod, l), want, "Prop. 2, l={l} x={x} y={y}");
                let r: Vec<u64> = m
                    .primes()
                    .iter()
                    .map(|&p| uniform_below(&mut prg, p))
                    .collect();
                let u: Vec<u64> = prod
                    .iter()
                    .zip(&r)
                    .zip(m.primes())
                    .map(|((&a, &b), &p)| (a + p - b) % p)
                    .collect();
                let e = m.down(&u, l).wrapping_add(m.down(&r, l)).wrapping_sub(want) & mask;
                assert!(e == 0 || e == 1 || e == mask, "Prop. 3, l={l}: error {e}");
            }
        }
    }

    #[test]
    fn rejects_small_t_and_bad_primes() {
        let m = CrtModulus::new(&ntt_primes(47, 16384, 2)).unwrap();
        assert!(m.check_ring(64).is_err());
        assert!(m.check_ring(40).is_ok());
        assert!(CrtModulus::new(&[]).is_err());
        assert!(CrtModulus::new(&[7, 7]).is_err());
        assert!(CrtModulus::new(&[8]).is_err());
    }
}
