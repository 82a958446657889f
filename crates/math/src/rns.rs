//! Residue number system (RNS) arithmetic for RLWE ciphertext moduli `q = q_0 · … · q_{k-1}`.
//!
//! - [`BigUint`]: a minimal little-endian multi-word unsigned integer (composition, tests,
//!   constants); never used on hot paths.
//! - [`RnsBasis`]: CRT composition/decomposition and the precomputed constants of the
//!   exact scaling operations that BFV-style decoding and modulus switching need:
//!   * [`RnsBasis::scale_round`]: `round(t·x / q) mod t` for `t <= 2^64` (BFV decoding, also
//!     with `t = 2^64`), computed limb-wise without composing `x`;
//!   * [`RnsBasis::encode_constants`]: `floor(q/t) mod q_i` and `q mod t`, so that
//!     `round(q·m/t) = floor(q/t)·m + round((q mod t)·m / t)` can be evaluated per limb;
//!   * [`div_round_by_last`]: `round(x / q_last)` in the remaining limbs (modulus switching and
//!     the special-prime mod-down of hybrid key switching).
//!
//! Exactness of `scale_round`: with `x = Σ y_i·(q/q_i) − v·q`, `y_i = [x·(q/q_i)^{-1}]_{q_i}`,
//! `t·x/q ≡ Σ y_i·t/q_i (mod t)`. Each `t/q_i` is split into an integer part (exact, mod t)
//! and a 128-bit fraction; the accumulated fraction error is below `k·2^-64`, so the rounding
//! is exact whenever `t·x/q` is at least `k·2^-64` away from a half-integer — true for every
//! ciphertext whose noise is inside the decryption bound.

use crate::modulus::Modulus;
use std::cmp::Ordering;

/// Little-endian multi-word unsigned integer (no normalisation invariant beyond trimming
/// in comparisons).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BigUint {
    /// 64-bit words, least significant first.
    pub words: Vec<u64>,
}

impl BigUint {
    /// The value `v`.
    pub fn from_u64(v: u64) -> Self {
        Self { words: vec![v] }
    }

    /// The value `v`.
    pub fn from_u128(v: u128) -> Self {
        Self { words: vec![v as u64, (v >> 64) as u64] }
    }

    fn trim(&mut self) {
        while self.words.len() > 1 && *self.words.last().unwrap_or(&1) == 0 {
            self.words.pop();
        }
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Number of significant bits (0 for zero).
    pub fn bits(&self) -> u32 {
        for (i, &w) in self.words.iter().enumerate().rev() {
            if w != 0 {
                return i as u32 * 64 + 64 - w.leading_zeros();
            }
        }
        0
    }

    /// `self · m`.
    pub fn mul_u64(&self, m: u64) -> Self {
        let mut out = Vec::with_capacity(self.words.len() + 1);
        let mut carry = 0u128;
        for &w in &self.words {
            let v = w as u128 * m as u128 + carry;
            out.push(v as u64);
            carry = v >> 64;
        }
        out.push(carry as u64);
        let mut r = Self { words: out };
        r.trim();
        r
    }

    /// `self + o`.
    pub fn add(&self, o: &Self) -> Self {
        let n = self.words.len().max(o.words.len());
        let mut out = Vec::with_capacity(n + 1);
        let mut carry = 0u128;
        for i in 0..n {
            let v = *self.words.get(i).unwrap_or(&0) as u128
                + *o.words.get(i).unwrap_or(&0) as u128
                + carry;
            out.push(v as u64);
            carry = v >> 64;
        }
        out.push(carry as u64);
        let mut r = Self { words: out };
        r.trim();
        r
    }

    /// `self − o`; `None` if `o > self`.
    pub fn checked_sub(&self, o: &Self) -> Option<Self> {
        if self.cmp_big(o) == Ordering::Less {
            return None;
        }
        let mut out = Vec::with_capacity(self.words.len());
        let mut borrow = 0u64;
        for i in 0..self.words.len() {
            let a = self.words[i];
            let b = *o.words.get(i).unwrap_or(&0);
            let (d1, b1) = a.overflowing_sub(b);
            let (d2, b2) = d1.overflowing_sub(borrow);
            out.push(d2);
            borrow = (b1 || b2) as u64;
        }
        let mut r = Self { words: out };
        r.trim();
        Some(r)
    }

    /// Numeric comparison.
    pub fn cmp_big(&self, o: &Self) -> Ordering {
        let n = self.words.len().max(o.words.len());
        for i in (0..n).rev() {
            let a = *self.words.get(i).unwrap_or(&0);
            let b = *o.words.get(i).unwrap_or(&0);
            match a.cmp(&b) {
                Ordering::Equal => continue,
                c => return c,
            }
        }
        Ordering::Equal
    }

    /// `(self / d, self mod d)` for a non-zero word `d`.
    pub fn divrem_u64(&self, d: u64) -> (Self, u64) {
        assert!(d != 0, "division by zero");
        let mut q = vec![0u64; self.words.len()];
        let mut r = 0u128;
        for i in (0..self.words.len()).rev() {
            let cur = (r << 64) | self.words[i] as u128;
            q[i] = (cur / d as u128) as u64;
            r = cur % d as u128;
        }
        let mut qq = Self { words: q };
        qq.trim();
        (qq, r as u64)
    }

    /// `self mod m`.
    pub fn rem_modulus(&self, m: &Modulus) -> u64 {
        let mut r = 0u64;
        for &w in self.words.iter().rev() {
            r = m.reduce_u128(((r as u128) << 64) | w as u128);
        }
        r
    }

    /// The low 128 bits.
    pub fn low_u128(&self) -> u128 {
        *self.words.first().unwrap_or(&0) as u128
            | (*self.words.get(1).unwrap_or(&0) as u128) << 64
    }

    /// `self >> 64·w` (drop `w` low words).
    pub fn shr_words(&self, w: usize) -> Self {
        let mut r = Self { words: self.words.get(w..).map(|s| s.to_vec()).unwrap_or_default() };
        if r.words.is_empty() {
            r.words.push(0);
        }
        r
    }
}

/// An RNS basis of distinct primes with the CRT constants of its product `q`.
#[derive(Clone, Debug)]
pub struct RnsBasis {
    moduli: Vec<Modulus>,
    product: BigUint,
    /// `q / q_i`.
    q_hat: Vec<BigUint>,
    /// `(q / q_i)^{-1} mod q_i` and its Shoup companion.
    q_hat_inv: Vec<(u64, u64)>,
}

impl RnsBasis {
    /// The basis of the given (distinct, prime) moduli; `None` if empty or not pairwise distinct.
    pub fn new(moduli: &[Modulus]) -> Option<Self> {
        if moduli.is_empty() {
            return None;
        }
        for (i, a) in moduli.iter().enumerate() {
            if moduli[..i].iter().any(|b| b.value() == a.value()) {
                return None;
            }
        }
        let mut product = BigUint::from_u64(1);
        for m in moduli {
            product = product.mul_u64(m.value());
        }
        let mut q_hat = Vec::new();
        let mut q_hat_inv = Vec::new();
        for (i, mi) in moduli.iter().enumerate() {
            let mut h = BigUint::from_u64(1);
            for (j, mj) in moduli.iter().enumerate() {
                if i != j {
                    h = h.mul_u64(mj.value());
                }
            }
            let inv = mi.inv(h.rem_modulus(mi))?;
            q_hat_inv.push((inv, mi.shoup(inv)));
            q_hat.push(h);
        }
        Some(Self { moduli: moduli.to_vec(), product, q_hat, q_hat_inv })
    }

    /// The moduli.
    pub fn moduli(&self) -> &[Modulus] {
        &self.moduli
    }

    /// Number of limbs.
    pub fn len(&self) -> usize {
        self.moduli.len()
    }

    /// Always false (a basis has at least one modulus).
    pub fn is_empty(&self) -> bool {
        self.moduli.is_empty()
    }

    /// The product `q`.
    pub fn product(&self) -> &BigUint {
        &self.product
    }

    /// Total bit size `ceil(log2 q)` (as the bit length of `q`).
    pub fn total_bits(&self) -> u32 {
        self.product.bits()
    }

    /// Residues of `x` (any size; reduced mod each `q_i`).
    pub fn decompose(&self, x: &BigUint) -> Vec<u64> {
        self.moduli.iter().map(|m| x.rem_modulus(m)).collect()
    }

    /// The unique `x ∈ [0, q)` with the given residues (each `< q_i`).
    pub fn compose(&self, residues: &[u64]) -> BigUint {
        assert_eq!(residues.len(), self.moduli.len(), "residue count");
        let mut acc = BigUint::from_u64(0);
        for (i, m) in self.moduli.iter().enumerate() {
            let (w, ws) = self.q_hat_inv[i];
            let y = m.mul_shoup(residues[i], w, ws);
            acc = acc.add(&self.q_hat[i].mul_u64(y));
        }
        while acc.cmp_big(&self.product) != Ordering::Less {
            acc = acc.checked_sub(&self.product).unwrap_or_default();
        }
        acc
    }

    /// The centred value of the residues as (magnitude, is_negative), in `(-q/2, q/2]`.
    pub fn compose_centered(&self, residues: &[u64]) -> (BigUint, bool) {
        let x = self.compose(residues);
        let twice = x.add(&x);
        if twice.cmp_big(&self.product) == Ordering::Greater {
            (self.product.checked_sub(&x).unwrap_or_default(), true)
        } else {
            (x, false)
        }
    }

    /// Constants for `round(t·x/q) mod t` ([`Self::scale_round`]); `t` in `[2, 2^64]`.
    pub fn scale_round_constants(&self, t: u128) -> ScaleRound {
        assert!((2..=1u128 << 64).contains(&t), "t out of range");
        let mut int_part = Vec::new();
        let mut frac = Vec::new();
        for m in &self.moduli {
            let p = m.value() as u128;
            let w = t / p;
            let r = t % p;
            // floor(r·2^128 / p) in two steps (r < p < 2^62).
            let hi = (r << 64) / p;
            let rem = (r << 64) % p;
            let lo = (rem << 64) / p;
            int_part.push((w % t) as u64);
            frac.push((hi << 64) | lo);
        }
        ScaleRound { t, int_part, frac, q_hat_inv: self.q_hat_inv.clone() }
    }

    /// `(floor(q/t) mod q_i for each i, q mod t)` for `t` in `[2, 2^64]`.
    pub fn encode_constants(&self, t: u128) -> (Vec<u64>, u64) {
        assert!((2..=1u128 << 64).contains(&t), "t out of range");
        let (quot, rem) = if t == 1u128 << 64 {
            (self.product.shr_words(1), self.product.words[0])
        } else {
            self.product.divrem_u64(t as u64)
        };
        (self.decompose(&quot), rem)
    }
}

/// Precomputed constants of `round(t·x/q) mod t` over one RNS basis.
#[derive(Clone, Debug)]
pub struct ScaleRound {
    t: u128,
    /// `floor(t/q_i) mod t`.
    int_part: Vec<u64>,
    /// `frac(t/q_i)` as a 128-bit binary fraction.
    frac: Vec<u128>,
    q_hat_inv: Vec<(u64, u64)>,
}

impl ScaleRound {
    /// `round(t·x/q) mod t` for the RNS residues `x_i` of `x` (one per limb of the basis
    /// this was built for, in order). See the module docs for the exactness condition.
    #[inline]
    pub fn apply(&self, moduli: &[Modulus], residues: impl Iterator<Item = u64>) -> u64 {
        let mut int_acc: u128 = 0; // mod t, kept < 2^65
        let mut frac_acc: u128 = 0; // units of 2^-64, plus carries into int
        let mut carry_int: u64 = 0;
        for (i, x) in residues.enumerate() {
            let m = &moduli[i];
            let (w, ws) = self.q_hat_inv[i];
            let y = m.mul_shoup(x, w, ws) as u128;
            // Integer part: y · floor(t/q_i) mod t (zero whenever t < q_i; a wrapping
            // add for t = 2^64 — avoids a u128 division on the common paths).
            let w = self.int_part[i];
            if w != 0 {
                if self.t == 1u128 << 64 {
                    int_acc = (int_acc as u64).wrapping_add((y as u64).wrapping_mul(w)) as u128;
                } else {
                    int_acc = (int_acc + y * w as u128) % self.t;
                }
            }
            // Fractional part: y · frac(t/q_i), units of 2^-128; keep the top 128 bits of the
            // 192-bit product: integer units (>= 2^128) and 64 fractional bits.
            let fh = self.frac[i] >> 64;
            let fl = self.frac[i] as u64 as u128;
            let p_hi = y * fh; // units of 2^-64
            let p_lo = (y * fl) >> 64; // units of 2^-64 (truncated)
            let s = p_hi + p_lo; // < 2^127
            carry_int += (s >> 64) as u64;
            frac_acc += s as u64 as u128;
        }
        let rounded = carry_int as u128 + ((frac_acc + (1u128 << 63)) >> 64);
        if self.t == 1u128 << 64 {
            return (int_acc as u64).wrapping_add(rounded as u64);
        }
        let r = int_acc + rounded;
        (if r < self.t { r } else { r % self.t }) as u64
    }
}

/// `round(x / q_last)` for one coefficient: given the residue `x_last` of `x` modulo the
/// dropped prime and a residue `x_i` modulo a kept prime `q_i`, returns the residue of the
/// rounded quotient modulo `q_i`. `last_inv` is `q_last^{-1} mod q_i` with Shoup companion.
#[inline]
pub fn div_round_by_last(
    x_i: u64,
    x_last: u64,
    last: &Modulus,
    mi: &Modulus,
    last_inv: (u64, u64),
) -> u64 {
    // round(x/q_last) = (x − [x]_{q_last, centred}) / q_last.
    let c = last.center(x_last);
    let c_i = mi.reduce_i64(c);
    let d = mi.sub(x_i, c_i);
    mi.mul_shoup(d, last_inv.0, last_inv.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modulus::ntt_primes;
    use crate::Prg;
    use rand_core::RngCore;

    fn basis(bits: &[u32]) -> RnsBasis {
        let mut used = Vec::new();
        for &b in bits {
            let p = ntt_primes(b, 8192, 1, &used).unwrap()[0];
            used.push(p);
        }
        let ms: Vec<Modulus> = used.iter().map(|&p| Modulus::new(p).unwrap()).collect();
        RnsBasis::new(&ms).unwrap()
    }

    fn rand_big(prg: &mut Prg, words: usize) -> BigUint {
        BigUint { words: (0..words).map(|_| prg.next_u64()).collect() }
    }

    #[test]
    fn crt_round_trip() {
        let b = basis(&[59, 55, 49]);
        let mut prg = Prg::new([1; 16]);
        for _ in 0..200 {
            let x = rand_big(&mut prg, 2);
            let r = b.decompose(&x);
            assert_eq!(b.compose(&r), x);
        }
        assert!((161..=163).contains(&b.total_bits()));
    }

    /// Reference: round(t·x/q) mod t by big-integer arithmetic.
    fn reference(b: &RnsBasis, x: &BigUint, t: u128) -> u128 {
        // t·x + q/2, divide by q via repeated subtraction of q·2^k (small sizes).
        let tx = if t == 1u128 << 64 {
            BigUint { words: std::iter::once(0).chain(x.words.iter().copied()).collect() }
        } else {
            x.mul_u64(t as u64)
        };
        let (half, _) = b.product().divrem_u64(2);
        let mut num = tx.add(&half);
        // Long division bit by bit.
        let q = b.product().clone();
        let nb = num.bits();
        let qb = q.bits();
        let mut quo_big = BigUint::from_u64(0);
        if nb >= qb {
            for s in (0..=(nb - qb)).rev() {
                // q << s
                let mut sh = q.clone();
                for _ in 0..s {
                    sh = sh.add(&sh);
                }
                if let Some(d) = num.checked_sub(&sh) {
                    num = d;
                    let mut one = BigUint::from_u64(1);
                    for _ in 0..s {
                        one = one.add(&one);
                    }
                    quo_big = quo_big.add(&one);
                }
            }
        }
        if t == 1u128 << 64 {
            quo_big.low_u128() & u64::MAX as u128
        } else {
            quo_big.divrem_u64(t as u64).1 as u128
        }
    }

    #[test]
    fn scale_round_exact() {
        let b = basis(&[59, 55, 49]);
        let mut prg = Prg::new([2; 16]);
        for &t in &[1u128 << 64, 1u128 << 37, 65537u128, (1u128 << 47) - 115] {
            let sr = b.scale_round_constants(t);
            for _ in 0..100 {
                let x = rand_big(&mut prg, 3);
                let r = b.decompose(&x);
                let x = b.compose(&r);
                let got = sr.apply(b.moduli(), r.iter().copied()) as u128;
                assert_eq!(got, reference(&b, &x, t), "t={t}");
            }
        }
    }

    #[test]
    fn encode_constants_and_div_round() {
        let b = basis(&[60, 32, 56]);
        let t = 1u128 << 64;
        let (delta, rt) = b.encode_constants(t);
        // floor(q/t)·t + rt == q, checked mod each q_i.
        for (i, m) in b.moduli().iter().enumerate() {
            let lhs = m.add(m.mul(delta[i], m.reduce_u128(t)), m.reduce(rt));
            assert_eq!(lhs, 0);
        }
        let mut prg = Prg::new([4; 16]);
        let ms = b.moduli();
        let last = ms[2];
        for _ in 0..200 {
            let x = rand_big(&mut prg, 3);
            let r = b.decompose(&x);
            let xx = b.compose(&r);
            let (quot, rem) = xx.divrem_u64(last.value());
            let expect = if rem > last.value() / 2 { quot.add(&BigUint::from_u64(1)) } else { quot };
            for i in 0..2 {
                let inv = ms[i].inv(last.value()).unwrap();
                let got = div_round_by_last(r[i], r[2], &last, &ms[i], (inv, ms[i].shoup(inv)));
                assert_eq!(got, expect.rem_modulus(&ms[i]));
            }
        }
    }
}
