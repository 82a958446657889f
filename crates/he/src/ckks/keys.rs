//! CKKS key material on the shared RLWE engine: a ternary secret, a seeded public key, a
//! relinearisation key (key switching `s² → s`) and Galois keys for slot rotations and
//! conjugation (key switching `s(X^g) → s`), all hybrid with one special prime `P`
//! (BLB §2.4; the Galois-key layout is [`crate::keys`]'s).
//!
//! Sizes: a relinearisation or Galois key is `L` RLWE samples over `q·P`,
//! `L·N·Σ_i ceil(log2 q_i)` bits each plus a 16-byte seed.

use super::params::CkksParams;
use super::galois::{conjugation_element, rotation_element};
use crate::keys::{all_mods, GaloisKey, GaloisKeys, PublicKey, SecretKey};
use crate::poly::RnsPoly;
use crate::HeError;
use nectar_math::Prg;

/// A CKKS secret key: a uniform ternary `s` (**SECURITY**: never leaves its owner).
#[derive(Clone, Debug)]
pub struct CkksSecretKey {
    pub(crate) sk: SecretKey,
}

/// A CKKS public key `(−a·s + e, a)` over all data primes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CkksPublicKey {
    pub(crate) pk: PublicKey,
}

/// The relinearisation key: a key-switching key from `s²` to `s`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelinKey {
    pub(crate) key: GaloisKey,
}

/// Galois keys for slot rotations (`g = 5^k mod 2N`) and conjugation (`g = 2N − 1`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CkksGaloisKeys {
    pub(crate) keys: GaloisKeys,
}

impl CkksGaloisKeys {
    /// The Galois elements present.
    pub fn elements(&self) -> Vec<u64> {
        self.keys.elements()
    }
    /// Whether rotation by `k` slots (left; negative = right) has a key (`k ≡ 0` needs none).
    pub fn has_rotation(&self, params: &CkksParams, k: i64) -> bool {
        let g = rotation_element(params.n(), k);
        g == 1 || self.keys.contains(g)
    }
    /// Whether the conjugation key is present.
    pub fn has_conjugation(&self, params: &CkksParams) -> bool {
        self.keys.contains(conjugation_element(params.n()))
    }
    /// Adds `other`'s keys (keys sent in several messages, e.g. as new rotation steps are
    /// needed); a key already present is kept.
    pub fn merge(&mut self, other: CkksGaloisKeys) {
        for (g, k) in other.keys.keys {
            self.keys.keys.entry(g).or_insert(k);
        }
    }
}

impl CkksSecretKey {
    /// A fresh uniform ternary secret from `prg`.
    pub fn generate(params: &CkksParams, prg: &mut Prg) -> Self {
        Self { sk: SecretKey::generate(params.engine(), prg) }
    }

    /// The public key, `a` expanded from a fresh seed.
    pub fn public_key(&self, params: &CkksParams, prg: &mut Prg) -> CkksPublicKey {
        CkksPublicKey { pk: self.sk.public_key(params.engine(), prg) }
    }

    /// The relinearisation key (needs the special prime).
    pub fn relin_key(&self, params: &CkksParams, prg: &mut Prg) -> Result<RelinKey, HeError> {
        let e = params.engine();
        e.special_modulus().ok_or(HeError::NoSpecialPrime)?;
        // s² on every modulus (special prime included), coefficient form.
        let n = params.n();
        let mut s2 = RnsPoly::zero(n, all_mods(e), true);
        for (i, &mi) in s2.mods.clone().iter().enumerate() {
            let m = e.modulus(mi);
            let s = self.sk.s_ntt.limb(i);
            s2.limb_mut(i).iter_mut().zip(s).for_each(|(x, &y)| *x = m.mul(y, y));
        }
        s2.to_coeff(e);
        Ok(RelinKey { key: self.sk.switch_key(e, &s2, prg)? })
    }

    /// Galois keys for left rotations by each `k` in `steps` (negative = right; `k ≡ 0 mod N/2`
    /// is skipped) and, if `conjugation`, for complex conjugation.
    pub fn galois_keys(&self, params: &CkksParams, steps: &[i64], conjugation: bool, prg: &mut Prg) -> Result<CkksGaloisKeys, HeError> {
        let n = params.n();
        let mut elements: Vec<u64> = steps.iter().map(|&k| rotation_element(n, k)).filter(|&g| g != 1).collect();
        if conjugation {
            elements.push(conjugation_element(n));
        }
        elements.sort_unstable();
        elements.dedup();
        Ok(CkksGaloisKeys { keys: self.sk.galois_keys(params.engine(), &elements, prg)? })
    }
}
