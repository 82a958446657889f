//! CKKS ciphertexts and encryption / decryption (CKKS paper (BLB ref. 6) §3.4; BLB §2.4).
//!
//! A ciphertext at level `l` with scale `Δ` satisfies `c0 + c1·s (+ c2·s²) = Δ·m + e (mod q_l)`,
//! `m` the encoded slot polynomial. Fresh noise: symmetric `e` (centred binomial, σ ≈ 3.24);
//! public-key `e1 + e·u + e2·s` (`u` ternary), about `σ·√(4N/3)` per coefficient.
//! Decryption returns the approximate plaintext `Δ·m + e`, noise included: revealing a
//! decryption to anyone but the key owner leaks `e` (Li–Micciancio), so protocols that do so
//! mask or flood first (BLB §6 masks with a uniform polynomial before P0 decrypts).

use super::encoder::CkksPlaintext;
use super::keys::{CkksPublicKey, CkksSecretKey};
use super::params::CkksParams;
use crate::ciphertext::Ciphertext;
use crate::keys::expand_seed;
use crate::poly::{from_small, sample_error, RnsPoly};
use crate::HeError;
use nectar_math::sample::ternary;
use nectar_math::Prg;
use rayon::prelude::*;

/// A CKKS ciphertext: `(c0, c1)` or, after a ct-ct product and before relinearisation,
/// `(c0, c1, c2)`; with its level (the number of data primes) and scale.
#[derive(Clone, Debug, PartialEq)]
pub struct CkksCiphertext {
    /// `(c0, c1)` on the level's primes (the shared RLWE type; component index 0).
    pub(crate) ct: Ciphertext,
    /// The `s²` component of an unrelinearised product.
    pub(crate) c2: Option<RnsPoly>,
    pub(crate) scale: f64,
}

impl CkksCiphertext {
    /// Number of data primes in use.
    pub fn level(&self) -> usize {
        self.ct.level()
    }
    /// The scale `Δ` of the encrypted values.
    pub fn scale(&self) -> f64 {
        self.scale
    }
    /// Reinterprets the scale (the encrypted integers are unchanged, so the decrypted values are
    /// multiplied by `old/new`). Used to align scales that differ by a negligible factor.
    pub fn set_scale(&mut self, scale: f64) -> Result<(), HeError> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(HeError::OutOfRange(format!("scale {scale}")));
        }
        self.scale = scale;
        Ok(())
    }
    /// Number of polynomials (2, or 3 before relinearisation).
    pub fn size(&self) -> usize {
        2 + self.c2.is_some() as usize
    }

    pub(crate) fn from_parts(c0: RnsPoly, c1: RnsPoly, c2: Option<RnsPoly>, scale: f64) -> Self {
        Self { ct: Ciphertext { c0, c1, seed: None, plain_index: 0 }, c2, scale }
    }
}

impl CkksSecretKey {
    /// Symmetric encryption of `pt` at its level: `(−a·s + e + pt, a)`, `a` from a fresh seed
    /// (a top-level ciphertext serializes as `(b, seed)`). NTT form.
    pub fn encrypt(&self, params: &CkksParams, pt: &CkksPlaintext, prg: &mut Prg) -> Result<CkksCiphertext, HeError> {
        let level = pt.level();
        params.check_level(level)?;
        let e_params = params.engine();
        let seed = prg.gen_block();
        let a = expand_seed(e_params, seed, (0..level).collect());
        let e = sample_error(e_params, prg);
        let mut b = from_small(e_params, &e, (0..level).collect());
        b.to_ntt(e_params);
        self.sk.sub_a_s(e_params, &mut b, &a);
        b.add_assign(e_params, &pt.poly, false);
        let mut out = CkksCiphertext::from_parts(b, a, None, pt.scale);
        if level == params.max_level() {
            out.ct.seed = Some(seed);
        }
        Ok(out)
    }

    /// The approximate plaintext `c0 + c1·s (+ c2·s²)` at the ciphertext's level and scale.
    pub fn decrypt(&self, params: &CkksParams, ct: &CkksCiphertext) -> Result<CkksPlaintext, HeError> {
        let level = ct.level();
        params.check_level(level)?;
        let e = params.engine();
        let n = params.n();
        let mut c0 = ct.ct.c0.clone();
        c0.to_ntt(e);
        let mut c1 = ct.ct.c1.clone();
        c1.to_ntt(e);
        let c2 = ct.c2.as_ref().map(|c| {
            let mut c = c.clone();
            c.to_ntt(e);
            c
        });
        c0.data.par_chunks_mut(n).enumerate().for_each(|(i, l)| {
            let m = e.modulus(i);
            let s = self.sk.s_ntt.limb(i);
            let x1 = c1.limb(i);
            match &c2 {
                Some(c2) => {
                    let x2 = c2.limb(i);
                    for k in 0..n {
                        // c0 + (c1 + c2·s)·s
                        let t = m.add(x1[k], m.mul(x2[k], s[k]));
                        l[k] = m.add(l[k], m.mul(t, s[k]));
                    }
                }
                None => {
                    for k in 0..n {
                        l[k] = m.add(l[k], m.mul(x1[k], s[k]));
                    }
                }
            }
        });
        Ok(CkksPlaintext { poly: c0, scale: ct.scale })
    }

    /// Decrypts and decodes (the `N/2` approximate slot values).
    pub fn decrypt_decode(&self, params: &CkksParams, ct: &CkksCiphertext) -> Result<Vec<super::C64>, HeError> {
        params.decode(&self.decrypt(params, ct)?)
    }
}

impl CkksPublicKey {
    /// Public-key encryption of `pt` at its level: `(p0·u + e1 + pt, p1·u + e2)`, `u` ternary.
    /// NTT form.
    pub fn encrypt(&self, params: &CkksParams, pt: &CkksPlaintext, prg: &mut Prg) -> Result<CkksCiphertext, HeError> {
        let level = pt.level();
        params.check_level(level)?;
        let e = params.engine();
        let n = params.n();
        let mods: Vec<usize> = (0..level).collect();
        let u: Vec<i64> = (0..n).map(|_| ternary(prg) as i64).collect();
        let mut u = from_small(e, &u, mods.clone());
        u.to_ntt(e);
        let mut c0 = from_small(e, &sample_error(e, prg), mods.clone());
        let mut c1 = from_small(e, &sample_error(e, prg), mods);
        c0.to_ntt(e);
        c1.to_ntt(e);
        for (c, pk) in [(&mut c0, &self.pk.p0), (&mut c1, &self.pk.p1)] {
            c.data.par_chunks_mut(n).enumerate().for_each(|(i, l)| {
                let m = e.modulus(i);
                let (p, ui) = (pk.limb(i), u.limb(i));
                l.iter_mut().zip(p.iter().zip(ui)).for_each(|(x, (&a, &b))| *x = m.add(*x, m.mul(a, b)));
            });
        }
        c0.add_assign(e, &pt.poly, false);
        Ok(CkksCiphertext::from_parts(c0, c1, None, pt.scale))
    }
}
