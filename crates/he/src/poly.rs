//! Polynomials of `Z_q[X]/(X^N+1)` in RNS form: one limb of `N` residues per prime, in either
//! coefficient or NTT (evaluation) representation.
//!
//! Limb `i` is taken modulo the `i`-th modulus of [`Params`] (ciphertext primes first); key
//! material additionally carries a last limb modulo the special prime, whose modulus index is
//! passed explicitly by the functions that handle it.

use crate::params::Params;
use nectar_math::sample::{centered_binomial, uniform_below};
use nectar_math::Prg;
use rayon::prelude::*;

/// An RNS polynomial.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RnsPoly {
    pub(crate) n: usize,
    /// `limbs · n` residues, limb-major.
    pub(crate) data: Vec<u64>,
    /// Whether the limbs hold NTT evaluations (else coefficients).
    pub(crate) ntt: bool,
    /// Modulus index of each limb (into the parameter moduli, special prime last).
    pub(crate) mods: Vec<usize>,
}

impl RnsPoly {
    /// The zero polynomial on the given modulus indices.
    pub(crate) fn zero(n: usize, mods: Vec<usize>, ntt: bool) -> Self {
        Self { n, data: vec![0; n * mods.len()], ntt, mods }
    }

    /// The zero polynomial on the first `level` ciphertext primes.
    pub(crate) fn zero_level(n: usize, level: usize, ntt: bool) -> Self {
        Self::zero(n, (0..level).collect(), ntt)
    }

    /// Number of limbs.
    pub fn limbs(&self) -> usize {
        self.mods.len()
    }

    /// Whether this polynomial is in NTT representation.
    pub fn is_ntt(&self) -> bool {
        self.ntt
    }

    /// Limb `i` (residues modulo modulus `mods[i]`).
    pub fn limb(&self, i: usize) -> &[u64] {
        &self.data[i * self.n..(i + 1) * self.n]
    }

    /// The limb of modulus index `m`, if the polynomial has it (a key truncated to a lower
    /// level lacks the upper primes).
    pub(crate) fn limb_of(&self, m: usize) -> Option<&[u64]> {
        self.mods.iter().position(|&x| x == m).map(|i| self.limb(i))
    }

    pub(crate) fn limb_mut(&mut self, i: usize) -> &mut [u64] {
        &mut self.data[i * self.n..(i + 1) * self.n]
    }

    /// Converts to NTT representation (no-op if already there).
    pub(crate) fn to_ntt(&mut self, params: &Params) {
        if self.ntt {
            return;
        }
        let mods = &self.mods;
        self.data.par_chunks_mut(self.n).zip(mods.par_iter()).for_each(|(l, &m)| {
            params.plan(m).forward(l);
        });
        self.ntt = true;
    }

    /// Converts to coefficient representation (no-op if already there).
    pub(crate) fn to_coeff(&mut self, params: &Params) {
        if !self.ntt {
            return;
        }
        let mods = &self.mods;
        self.data.par_chunks_mut(self.n).zip(mods.par_iter()).for_each(|(l, &m)| {
            params.plan(m).inverse(l);
        });
        self.ntt = false;
    }

    /// Drops limbs beyond the first `level` (all must be ciphertext primes `0..level`).
    pub(crate) fn truncate_limbs(&mut self, level: usize) {
        self.mods.truncate(level);
        self.data.truncate(level * self.n);
    }

    /// Moves the limbs into an allocation of their own size after [`Self::truncate_limbs`]
    /// (a truncated `Vec` keeps its capacity: an OLT holding thousands of switched-down
    /// products kept every one at its top-level size, 400 MB for MiniLM's embedding).
    pub(crate) fn release_dropped_limbs(&mut self) {
        if self.data.capacity() > self.data.len() {
            self.data = self.data.as_slice().to_vec();
        }
    }

    /// `self ± other` limb-wise (same representation and moduli).
    pub(crate) fn add_assign(&mut self, params: &Params, other: &RnsPoly, negate: bool) {
        debug_assert_eq!(self.ntt, other.ntt);
        debug_assert_eq!(self.mods[..], other.mods[..self.mods.len()]);
        let n = self.n;
        let mods = &self.mods;
        self.data.par_chunks_mut(n).enumerate().for_each(|(i, l)| {
            let m = params.modulus(mods[i]);
            let o = &other.data[i * n..(i + 1) * n];
            if negate {
                l.iter_mut().zip(o).for_each(|(a, &b)| *a = m.sub(*a, b));
            } else {
                l.iter_mut().zip(o).for_each(|(a, &b)| *a = m.add(*a, b));
            }
        });
    }

    /// `-self`.
    pub(crate) fn neg_assign(&mut self, params: &Params) {
        let n = self.n;
        for (i, &mi) in self.mods.iter().enumerate() {
            let m = params.modulus(mi);
            self.data[i * n..(i + 1) * n].iter_mut().for_each(|a| *a = m.neg(*a));
        }
    }

    /// Adds the same small signed integer polynomial to every limb (coefficient form).
    pub(crate) fn add_small(&mut self, params: &Params, e: &[i64]) {
        debug_assert!(!self.ntt);
        let n = self.n;
        for (i, &mi) in self.mods.iter().enumerate() {
            let m = params.modulus(mi);
            self.data[i * n..(i + 1) * n].iter_mut().zip(e).for_each(|(a, &x)| *a = m.add(*a, m.reduce_i64(x)));
        }
    }

    /// Multiplies by `X^k` (`0 <= k < 2N`; coefficient form).
    pub(crate) fn mul_monomial(&mut self, params: &Params, k: usize) {
        debug_assert!(!self.ntt);
        let n = self.n;
        let k = k % (2 * n);
        let (shift, neg_all) = if k >= n { (k - n, true) } else { (k, false) };
        for (i, &mi) in self.mods.iter().enumerate() {
            let m = *params.modulus(mi);
            let l = &mut self.data[i * n..(i + 1) * n];
            l.rotate_right(shift);
            // Coefficients that wrapped (now at 0..shift) change sign; X^N = -1 flips all.
            for (j, x) in l.iter_mut().enumerate() {
                if (j < shift) != neg_all {
                    *x = m.neg(*x);
                }
            }
        }
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` on a per-thread scratch buffer of `len` words (contents unspecified), kept between
/// calls so that hot loops do not allocate (and fault in) fresh pages. Re-entrant use (a rayon
/// worker stealing another job while inside `f`) falls back to a fresh buffer.
pub(crate) fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [u64]) -> R) -> R {
    SCRATCH.with(|c| match c.try_borrow_mut() {
        Ok(mut v) => {
            if v.len() < len {
                v.resize(len, 0);
            }
            f(&mut v[..len])
        }
        Err(_) => f(&mut vec![0u64; len]),
    })
}

/// Runs `f` on limb `i` of `src` in NTT form: the limb itself, or (coefficient form) its
/// transform in a per-thread scratch buffer ([`with_scratch`]).
pub(crate) fn with_ntt_limb<R>(params: &Params, src: &RnsPoly, i: usize, f: impl FnOnce(&[u64]) -> R) -> R {
    if src.ntt {
        f(src.limb(i))
    } else {
        with_scratch(params.n(), |tmp| {
            tmp.copy_from_slice(src.limb(i));
            params.plan(i).forward(tmp);
            f(tmp)
        })
    }
}

/// The image of `p` under `X -> X^g` (coefficient form, `g` odd): `X^k -> ± X^{k·g mod N}`.
pub(crate) fn automorphism(params: &Params, p: &RnsPoly, g: u64) -> RnsPoly {
    debug_assert!(!p.ntt);
    let n = p.n;
    let two_n = 2 * n as u64;
    let g = g % two_n;
    let mut out = RnsPoly::zero(n, p.mods.clone(), false);
    let idx: Vec<u64> = (0..n as u64).map(|k| (k * g) % two_n).collect();
    out.data.par_chunks_mut(n).zip(p.data.par_chunks(n)).zip(p.mods.par_iter()).for_each(|((o, s), &mi)| {
        let m = params.modulus(mi);
        for (k, &x) in s.iter().enumerate() {
            let j = idx[k] as usize;
            if j < n {
                o[j] = x;
            } else {
                o[j - n] = m.neg(x);
            }
        }
    });
    out
}

/// Uniform polynomial on the given moduli, drawn from `prg` limb by limb (used as-is as an
/// NTT-form polynomial: a uniform vector is uniform in either representation).
pub(crate) fn sample_uniform(params: &Params, prg: &mut Prg, mods: Vec<usize>) -> RnsPoly {
    let n = params.n();
    let mut p = RnsPoly::zero(n, mods, true);
    for i in 0..p.limbs() {
        let q = params.modulus(p.mods[i]).value();
        for x in p.limb_mut(i) {
            *x = uniform_below(prg, q);
        }
    }
    p
}

/// RLWE error: `N` centred-binomial integers.
pub(crate) fn sample_error(params: &Params, prg: &mut Prg) -> Vec<i64> {
    (0..params.n()).map(|_| centered_binomial(prg, params.eta())).collect()
}

/// Lifts a small signed polynomial into RNS limbs on `mods` (coefficient form).
pub(crate) fn from_small(params: &Params, v: &[i64], mods: Vec<usize>) -> RnsPoly {
    let mut p = RnsPoly::zero(params.n(), mods, false);
    p.add_small(params, v);
    p
}
