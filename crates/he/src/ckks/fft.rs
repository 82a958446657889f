//! The CKKS canonical embedding by a "special FFT" (CKKS paper (BLB ref. 6) §3; BLB §2.4, §6 step 4).
//!
//! A real polynomial `m = Σ m_k X^k` of degree `< N` is identified with its `N/2` slot values
//! `z_j = m(ζ^{5^j})`, `ζ = e^{iπ/N}` (the other `N/2` roots give the conjugates). Since
//! `ζ^{5^j·N/2} = i` (`5^j ≡ 1 mod 4`), `z_j = Σ_{k<N/2} (m_k + i·m_{k+N/2})·ζ^k·ω^{k·s_j}` with
//! `ω = ζ^4` a primitive `N/2`-th root and `5^j ≡ 1 + 4·s_j (mod 2N)`: a twist by `ζ^k`, one
//! complex DFT of length `N/2` and the slot permutation `j -> s_j`. Cost `O(N log N)` flops;
//! with this slot order `X -> X^{5^k}` rotates the slots left by `k` and `X -> X^{-1}`
//! conjugates them. Floating-point error: about `log2(N)·2^−53` relative per transform.

use std::ops::{Add, AddAssign, Mul, Neg, Sub};

/// A complex number (`f64` parts), the CKKS slot type.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct C64 {
    pub re: f64,
    pub im: f64,
}

impl C64 {
    /// `re + i·im`.
    pub const fn new(re: f64, im: f64) -> Self {
        Self { re, im }
    }
    /// A real number.
    pub const fn real(re: f64) -> Self {
        Self { re, im: 0.0 }
    }
    /// `e^{iθ}`.
    pub fn expi(theta: f64) -> Self {
        Self { re: theta.cos(), im: theta.sin() }
    }
    /// The complex conjugate.
    pub fn conj(self) -> Self {
        Self { re: self.re, im: -self.im }
    }
    /// `|z|`.
    pub fn abs(self) -> f64 {
        self.re.hypot(self.im)
    }
    /// `z·a` for a real `a`.
    pub fn scale(self, a: f64) -> Self {
        Self { re: self.re * a, im: self.im * a }
    }
}

impl Add for C64 {
    type Output = C64;
    fn add(self, o: C64) -> C64 {
        C64::new(self.re + o.re, self.im + o.im)
    }
}
impl AddAssign for C64 {
    fn add_assign(&mut self, o: C64) {
        self.re += o.re;
        self.im += o.im;
    }
}
impl Sub for C64 {
    type Output = C64;
    fn sub(self, o: C64) -> C64 {
        C64::new(self.re - o.re, self.im - o.im)
    }
}
impl Mul for C64 {
    type Output = C64;
    fn mul(self, o: C64) -> C64 {
        C64::new(self.re * o.re - self.im * o.im, self.re * o.im + self.im * o.re)
    }
}
impl Neg for C64 {
    type Output = C64;
    fn neg(self) -> C64 {
        C64::new(-self.re, -self.im)
    }
}

/// Precomputed tables of the special FFT for one ring degree `N`.
#[derive(Clone, Debug)]
pub(crate) struct SpecialFft {
    n: usize,
    /// `ζ^k = e^{iπk/N}` for `k < N` (each from its own angle, not by repeated products).
    zeta: Vec<C64>,
    /// `s_j = (5^j mod 2N − 1)/4`: the DFT output index holding slot `j`.
    slot_pos: Vec<usize>,
    /// Bit reversal of `0..N/2`.
    bitrev: Vec<usize>,
}

impl SpecialFft {
    /// Tables for degree `n` (a power of two `>= 4`).
    pub(crate) fn new(n: usize) -> Self {
        let m = n / 2;
        let zeta = (0..n).map(|k| C64::expi(std::f64::consts::PI * k as f64 / n as f64)).collect();
        let two_n = 2 * n as u64;
        let mut g = 1u64;
        let mut slot_pos = Vec::with_capacity(m);
        for _ in 0..m {
            slot_pos.push(((g - 1) / 4) as usize);
            g = g * 5 % two_n;
        }
        let bits = m.trailing_zeros();
        let bitrev = (0..m).map(|i| if bits == 0 { 0 } else { i.reverse_bits() >> (usize::BITS - bits) }).collect();
        Self { n, zeta, slot_pos, bitrev }
    }

    /// In-place DFT of length `N/2`: `X_s = Σ_k x_k·ω^{±ks}` (`+` forward), unnormalised.
    fn dft(&self, a: &mut [C64], inverse: bool) {
        let m = a.len();
        for i in 0..m {
            let j = self.bitrev[i];
            if i < j {
                a.swap(i, j);
            }
        }
        let mut len = 2;
        while len <= m {
            // ω^{j·m/len} = ζ^{4·j·m/len}, with 4·j·m/len < 2m = N.
            let step = 4 * (m / len);
            for chunk in a.chunks_mut(len) {
                let (lo, hi) = chunk.split_at_mut(len / 2);
                for (j, (u, v)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                    let w = self.zeta[j * step];
                    let w = if inverse { w.conj() } else { w };
                    let t = *v * w;
                    *v = *u - t;
                    *u += t;
                }
            }
            len *= 2;
        }
    }

    /// Slot values of the real polynomial with coefficients `coeffs` (length `N`).
    pub(crate) fn decode(&self, coeffs: &[f64]) -> Vec<C64> {
        let m = self.n / 2;
        let mut u: Vec<C64> = (0..m).map(|k| C64::new(coeffs[k], coeffs[k + m]) * self.zeta[k]).collect();
        self.dft(&mut u, false);
        self.slot_pos.iter().map(|&s| u[s]).collect()
    }

    /// The real coefficients (length `N`) of the polynomial with slot values `slots`
    /// (`<= N/2` values; missing slots are zero). Inverse of [`Self::decode`].
    pub(crate) fn encode(&self, slots: &[C64]) -> Vec<f64> {
        let m = self.n / 2;
        let mut u = vec![C64::default(); m];
        for (&s, &z) in self.slot_pos.iter().zip(slots) {
            u[s] = z;
        }
        self.dft(&mut u, true);
        let inv_m = 1.0 / m as f64;
        let mut out = vec![0.0; self.n];
        for (k, x) in u.iter().enumerate() {
            let y = (*x * self.zeta[k].conj()).scale(inv_m);
            out[k] = y.re;
            out[k + m] = y.im;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The special FFT against the definition `z_j = m(ζ^{5^j})`, and the round trip.
    #[test]
    fn matches_naive_embedding() {
        let n = 64;
        let f = SpecialFft::new(n);
        let coeffs: Vec<f64> = (0..n).map(|k| ((k * 37 % 11) as f64 - 5.0) / 3.0).collect();
        let z = f.decode(&coeffs);
        let mut g = 1u64;
        for zj in &z {
            let root = C64::expi(std::f64::consts::PI * g as f64 / n as f64);
            let mut acc = C64::default();
            let mut p = C64::real(1.0);
            for &c in &coeffs {
                acc += p.scale(c);
                p = p * root;
            }
            assert!((acc - *zj).abs() < 1e-12, "{acc:?} vs {zj:?}");
            g = g * 5 % (2 * n as u64);
        }
        let back = f.encode(&z);
        for (a, b) in back.iter().zip(&coeffs) {
            assert!((a - b).abs() < 1e-12);
        }
    }
}
