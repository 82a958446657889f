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
}
