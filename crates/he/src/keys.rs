//! Key material: ternary secret key, seeded public key, Galois (automorphism) keys for hybrid
//! key switching with one special prime `P`.
//!
//! Galois key for `g` (BumbleBee App. E; SEAL-style single-prime digits): for every ciphertext
//! prime `q_j`, a ciphertext over `q_0…q_{L-1}·P`
//! `(b_j, a_j) = (−a_j·s + e_j + δ_{ij}·P·s(X^g) in limb i, a_j)`, with `a_j` expanded from a
//! per-key seed so a key travels as `L` polynomials plus 16 bytes.
//! Cost on the wire: `L · N · Σ_i ceil(log2 q_i)` bits per Galois element (+ seed).

use crate::params::Params;
use crate::poly::{automorphism, from_small, sample_error, sample_uniform, RnsPoly};
use crate::HeError;
use nectar_math::sample::ternary;
use nectar_math::{Block, Prg};
use std::collections::BTreeMap;

/// A ternary secret key `s ∈ {-1,0,1}^N`.
#[derive(Clone)]
pub struct SecretKey {
    pub(crate) s: Vec<i64>,
    /// `s` in NTT form on all moduli (ciphertext primes and the special prime).
    pub(crate) s_ntt: RnsPoly,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

/// Expands a public seed into the uniform polynomial `a` on the given moduli (NTT form).
pub(crate) fn expand_seed(params: &Params, seed: Block, mods: Vec<usize>) -> RnsPoly {
    sample_uniform(params, &mut Prg::new(seed), mods)
}

pub(crate) fn all_mods(params: &Params) -> Vec<usize> {
    (0..params.max_level() + params.has_special_prime() as usize).collect()
}

impl SecretKey {
    /// A fresh uniform ternary secret.
    pub fn generate(params: &Params, prg: &mut Prg) -> Self {
        let s: Vec<i64> = (0..params.n()).map(|_| ternary(prg) as i64).collect();
        let mut s_ntt = from_small(params, &s, all_mods(params));
        s_ntt.to_ntt(params);
        Self { s, s_ntt }
    }

    /// `-(a·s) + e` on `a`'s moduli, NTT form (`a` in NTT form).
    pub(crate) fn rlwe_body(&self, params: &Params, a: &RnsPoly, e: &[i64]) -> RnsPoly {
        let mut b = from_small(params, e, a.mods.clone());
        b.to_ntt(params);
        self.sub_a_s(params, &mut b, a);
        b
    }

    /// `b -= a·s` (both NTT).
    pub(crate) fn sub_a_s(&self, params: &Params, b: &mut RnsPoly, a: &RnsPoly) {
        let n = params.n();
        for (i, &mi) in a.mods.iter().enumerate() {
            let sidx = self.s_ntt.mods.iter().position(|&x| x == mi).unwrap_or(mi);
            let m = params.modulus(mi);
            let s = self.s_ntt.limb(sidx);
            let al = &a.data[i * n..(i + 1) * n];
            for (k, x) in b.limb_mut(i).iter_mut().enumerate() {
                *x = m.sub(*x, m.mul(al[k], s[k]));
            }
        }
    }

    /// The public key `(−a·s + e, a)` with `a` expanded from a fresh seed.
    pub fn public_key(&self, params: &Params, prg: &mut Prg) -> PublicKey {
        let seed = prg.gen_block();
        let a = expand_seed(params, seed, (0..params.max_level()).collect());
        let e = sample_error(params, prg);
        let p0 = self.rlwe_body(params, &a, &e);
        PublicKey { p0, p1: a, seed }
    }

    /// Galois keys for the given elements `g` (odd, `< 2N`).
    pub fn galois_keys(&self, params: &Params, elements: &[u64], prg: &mut Prg) -> Result<GaloisKeys, HeError> {
        params.special_modulus().ok_or(HeError::NoSpecialPrime)?;
        let two_n = 2 * params.n() as u64;
        let mut keys = BTreeMap::new();
        for &g in elements {
            if g % 2 == 0 || g >= two_n {
                return Err(HeError::OutOfRange(format!("Galois element {g} must be odd and < 2N")));
            }
            let s_poly = from_small(params, &self.s, all_mods(params));
            let s_g = automorphism(params, &s_poly, g);
            keys.insert(g, self.switch_key(params, &s_g, prg)?);
        }
        Ok(GaloisKeys { keys })
    }
}

impl SecretKey {
    /// The secret's coefficients in `{−1, 0, 1}`. SECURITY: the secret itself, for key
    /// material its owner derives outside this crate (LEAF's ring-switching key, §3.5).
    pub fn ternary_coeffs(&self) -> &[i64] {
        &self.s
    }
}

impl SecretKey {
    /// A key-switching key from `target` (a secret-like polynomial in coefficient form on all
    /// moduli, special prime included) to `s`: per ciphertext prime `q_j`,
    /// `(b_j, a_j) = (−a_j·s + e_j + δ_{ij}·P·target in limb i, a_j)`, `a_j` from a fresh seed.
    /// Galois keys use `target = s(X^g)`; CKKS relinearisation uses `target = s²`.
    pub(crate) fn switch_key(&self, params: &Params, target: &RnsPoly, prg: &mut Prg) -> Result<GaloisKey, HeError> {
        let sp = params.special_modulus().ok_or(HeError::NoSpecialPrime)?.value();
        let l = params.max_level();
        let seed = prg.gen_block();
        let mut a_prg = Prg::new(seed);
        let mut b = Vec::with_capacity(l);
        let mut a = Vec::with_capacity(l);
        for j in 0..l {
            let aj = sample_uniform(params, &mut a_prg, all_mods(params));
            let e = sample_error(params, prg);
            let mut bj = from_small(params, &e, all_mods(params));
            let m = *params.modulus(j);
            let p_mod = m.reduce(sp);
            let (ps, pss) = (p_mod, m.shoup(p_mod));
            let sg = target.limb(j);
            for (x, &y) in bj.limb_mut(j).iter_mut().zip(sg) {
                *x = m.add(*x, m.mul_shoup(y, ps, pss));
            }
            bj.to_ntt(params);
            self.sub_a_s(params, &mut bj, &aj);
            b.push(bj);
            a.push(aj);
        }
        Ok(GaloisKey { seed, b, a })
    }
}

/// A public key `(p0, p1) = (−a·s + e, a)`, `a` expanded from `seed` (NTT form, all
/// ciphertext primes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey {
    pub(crate) p0: RnsPoly,
    pub(crate) p1: RnsPoly,
    pub(crate) seed: Block,
}

/// One key-switching key from `s(X^g)` to `s`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GaloisKey {
    pub(crate) seed: Block,
    /// Per digit `j < L`: `b_j` over all moduli (NTT form).
    pub(crate) b: Vec<RnsPoly>,
    /// Per digit: `a_j`, expanded from `seed`.
    pub(crate) a: Vec<RnsPoly>,
}

/// Galois keys indexed by their element `g`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GaloisKeys {
    pub(crate) keys: BTreeMap<u64, GaloisKey>,
}

impl GaloisKeys {
    /// The Galois elements present.
    pub fn elements(&self) -> Vec<u64> {
        self.keys.keys().copied().collect()
    }

    /// Whether a key for `g` is present.
    pub fn contains(&self, g: u64) -> bool {
        self.keys.contains_key(&g)
    }
}

/// The Galois elements `N/h + 1` for `h = 1, 2, 4, …, N/2` (i.e. `2^i + 1`, `i = 1..=log2 N`),
/// which InterLeave (BumbleBee Fig. 6) and PackLWEs need (REFERENCE.md §1.1, §1.7).
pub fn interleave_galois_elements(n: usize) -> Vec<u64> {
    (1..=n.trailing_zeros()).map(|i| (1u64 << i) + 1).collect()
}
