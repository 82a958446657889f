//! Negacyclic NTT over `Z_p[X]/(X^N + 1)` for word-size primes: a thin wrapper over the
//! `tfhe-ntt` crate's `prime64::Plan` (radix-2 with Shoup twiddles, AVX2/AVX-512 kernels).
//!
//! Convention: [`NttPlan::forward`] maps coefficients to evaluations in the crate's
//! (bit-reversed) order; [`NttPlan::inverse`] is its exact inverse (including the `N^{-1}`
//! normalisation). Point-wise products in the evaluation domain are negacyclic convolutions.

use crate::modulus::Modulus;
use tfhe_ntt::prime64::Plan;

/// A negacyclic NTT of size `n` modulo one prime.
#[derive(Clone, Debug)]
pub struct NttPlan {
    plan: Plan,
    modulus: Modulus,
}

impl NttPlan {
    /// The plan for degree `n` (power of two, `>= 16`) and prime `p ≡ 1 (mod 2n)`; `None`
    /// otherwise.
    pub fn new(n: usize, p: u64) -> Option<Self> {
        let modulus = Modulus::new(p)?;
        let plan = Plan::try_new(n, p)?;
        Some(Self { plan, modulus })
    }

    /// Ring degree `N`.
    pub fn n(&self) -> usize {
        self.plan.ntt_size()
    }

    /// The prime.
    pub fn modulus(&self) -> &Modulus {
        &self.modulus
    }

    /// Coefficients (each `< p`) to evaluations, in place.
    pub fn forward(&self, buf: &mut [u64]) {
        self.plan.fwd(buf);
    }

    /// Evaluations to coefficients, in place (normalised by `N^{-1}`).
    pub fn inverse(&self, buf: &mut [u64]) {
        self.plan.inv(buf);
        self.plan.normalize(buf);
    }

    /// `buf ← INTT(buf ⊙ rhs)` (both in the evaluation domain, entries `< p`): the point-wise
    /// product with the `N^{-1}` normalisation folded in, then the unnormalised inverse
    /// transform — one pass fewer than [`Self::mul_assign`] followed by [`Self::inverse`], same
    /// result.
    pub fn mul_inverse(&self, buf: &mut [u64], rhs: &[u64]) {
        self.plan.mul_assign_normalize(buf, rhs);
        self.plan.inv(buf);
    }

    /// `acc += a ⊙ b` point-wise (evaluation domain).
    pub fn mul_accumulate(&self, acc: &mut [u64], a: &[u64], b: &[u64]) {
        self.plan.mul_accumulate(acc, a, b);
    }

    /// `acc += a ⊙ b` point-wise in 128 bits, without any reduction (evaluation domain, entries
    /// of `a` and `b` `< p`): one scalar 64×64→128 product and a 128-bit add per entry instead
    /// of an emulated 64-bit modular product per SIMD lane (the four limbs of a level-2 OLT
    /// product: 28 µs against 40 µs, in cache, `nectar-he`'s `examples/prof_he mulacc`). The
    /// caller reduces with [`Self::reduce_wide`] before more than [`Self::wide_terms`] products
    /// are summed.
    pub fn mul_accumulate_wide(&self, acc: &mut [u128], a: &[u64], b: &[u64]) {
        for ((x, &u), &v) in acc.iter_mut().zip(a).zip(b) {
            *x = x.wrapping_add(u as u128 * v as u128);
        }
    }

    /// `acc0 += Σ_t a0_t ⊙ b_t` and `acc1 += Σ_t a1_t ⊙ b_t` point-wise in 128 bits, for the
    /// terms `(a0_t, a1_t, b_t)`: the two components of several ciphertexts times their
    /// plaintexts in one call, as [`Self::mul_accumulate_wide`] for each term and component.
    /// The accumulators are walked in L1-sized blocks, every term applied to a block before the
    /// next: an accumulator entry leaves the L1 cache once per call instead of once per term
    /// and component (the OLT's sums are bound by that traffic, not by the multiplications).
    pub fn mul_accumulate_wide_terms(&self, acc0: &mut [u128], acc1: &mut [u128], terms: &[(&[u64], &[u64], &[u64])]) {
        const BLOCK: usize = 128;
        let n = acc0.len().min(acc1.len());
        let mut lo = 0;
        while lo < n {
            let hi = (lo + BLOCK).min(n);
            let (s0, s1) = (&mut acc0[lo..hi], &mut acc1[lo..hi]);
            for &(a0, a1, b) in terms {
                let (a0, a1, b) = (&a0[lo..hi], &a1[lo..hi], &b[lo..hi]);
                for ((((x0, x1), &u0), &u1), &v) in s0.iter_mut().zip(s1.iter_mut()).zip(a0).zip(a1).zip(b) {
                    let v = v as u128;
                    *x0 = x0.wrapping_add(u0 as u128 * v);
                    *x1 = x1.wrapping_add(u1 as u128 * v);
                }
            }
            lo = hi;
        }
    }

    /// How many products of two entries `< p` a `u128` sums without overflow (counting an
    /// already-reduced entry as one): `⌊(2^128 − 1) / (p − 1)^2⌋`: at least 16 for a 62-bit prime,
    /// at least 1024 for a 59-bit one.
    pub fn wide_terms(&self) -> usize {
        let m = (self.modulus.value() - 1) as u128;
        (u128::MAX / (m * m)).min(usize::MAX as u128) as usize
    }

    /// `out ← acc mod p` point-wise.
    pub fn reduce_wide(&self, acc: &[u128], out: &mut [u64]) {
        for (o, &x) in out.iter_mut().zip(acc) {
            *o = self.modulus.reduce_u128(x);
        }
    }

    /// `a ← a ⊙ b` point-wise (evaluation domain).
    pub fn mul_assign(&self, a: &mut [u64], b: &[u64]) {
        let m = self.modulus;
        for (x, &y) in a.iter_mut().zip(b) {
            *x = m.mul(*x, y);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modulus::ntt_primes;
    use crate::sample::uniform_below;
    use crate::Prg;

    fn naive(a: &[u64], b: &[u64], m: &Modulus) -> Vec<u64> {
        let n = a.len();
        let mut c = vec![0u64; n];
        for i in 0..n {
            for j in 0..n {
                let v = m.mul(a[i], b[j]);
                let k = i + j;
                if k < n {
                    c[k] = m.add(c[k], v);
                } else {
                    c[k - n] = m.sub(c[k - n], v);
                }
            }
        }
        c
    }

    #[test]
    fn negacyclic_product_and_round_trip() {
        let n = 64;
        let mut prg = Prg::new([9; 16]);
        for bits in [30u32, 49, 59, 61] {
            let p = ntt_primes(bits, n, 1, &[]).unwrap()[0];
            let plan = NttPlan::new(n, p).unwrap();
            let m = *plan.modulus();
            let a: Vec<u64> = (0..n).map(|_| uniform_below(&mut prg, p)).collect();
            let b: Vec<u64> = (0..n).map(|_| uniform_below(&mut prg, p)).collect();
            let (mut fa, mut fb) = (a.clone(), b.clone());
            plan.forward(&mut fa);
            plan.forward(&mut fb);
            assert!(fa.iter().all(|&x| x < p));
            let mut acc = vec![0u64; n];
            plan.mul_accumulate(&mut acc, &fa, &fb);
            assert!(acc.iter().all(|&x| x < p));
            plan.inverse(&mut acc);
            assert_eq!(acc, naive(&a, &b, &m));
            let mut fused = fa.clone();
            plan.mul_inverse(&mut fused, &fb);
            assert_eq!(fused, naive(&a, &b, &m));
            plan.inverse(&mut fa);
            assert_eq!(fa, a);
        }
    }

    #[test]
    fn wide_accumulation_matches_reduced_products() {
        let n = 64;
        for bits in [62u32, 59, 45] {
            let p = ntt_primes(bits, n, 1, &[]).unwrap()[0];
            let plan = NttPlan::new(n, p).unwrap();
            let m = *plan.modulus();
            let terms = plan.wide_terms();
            let expect = (u128::MAX / ((p - 1) as u128 * (p - 1) as u128)) as usize;
            assert_eq!(terms, expect);
            if bits == 62 {
                assert_eq!(terms, 16);
            }
            // the worst case: every entry p − 1, `terms` times, no overflow
            let a = vec![p - 1; n];
            let mut acc = vec![0u128; n];
            let mut reduced = vec![0u64; n];
            for _ in 0..terms.min(4096) {
                plan.mul_accumulate_wide(&mut acc, &a, &a);
                plan.mul_accumulate(&mut reduced, &a, &a);
            }
            let mut out = vec![0u64; n];
            plan.reduce_wide(&acc, &mut out);
            assert_eq!(out, reduced, "{bits}-bit prime");
            assert_eq!(out[0], m.mul(terms.min(4096) as u64 % p, 1));
        }
    }

    #[test]
    fn wide_terms_pass_equals_one_product_at_a_time() {
        // 300 entries: two whole blocks of the pass and a tail
        let n = 300;
        let p = ntt_primes(59, 512, 1, &[]).unwrap()[0];
        let plan = NttPlan::new(512, p).unwrap();
        let mut prg = Prg::new([9; 16]);
        let mut rand = || (0..n).map(|_| uniform_below(&mut prg, p)).collect::<Vec<u64>>();
        let (mut acc0, mut acc1): (Vec<u128>, Vec<u128>) = (rand().into_iter().map(u128::from).collect(), rand().into_iter().map(u128::from).collect());
        let (mut ref0, mut ref1) = (acc0.clone(), acc1.clone());
        let terms: Vec<(Vec<u64>, Vec<u64>, Vec<u64>)> = (0..5).map(|_| (rand(), rand(), rand())).collect();
        for (a0, a1, b) in &terms {
            plan.mul_accumulate_wide(&mut ref0, a0, b);
            plan.mul_accumulate_wide(&mut ref1, a1, b);
        }
        let slices: Vec<(&[u64], &[u64], &[u64])> = terms.iter().map(|(a0, a1, b)| (&a0[..], &a1[..], &b[..])).collect();
        plan.mul_accumulate_wide_terms(&mut acc0, &mut acc1, &slices);
        assert_eq!((acc0, acc1), (ref0, ref1));
    }
}
