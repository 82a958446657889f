//! RLWE ciphertexts: secret-key encryption with a seeded `a` (a fresh ciphertext travels as
//! `(b, seed)`), public-key encryption, exact decryption and exact noise measurement.
//!
//! A ciphertext at level `l` (the first `l` ciphertext primes) for plaintext component `j`
//! satisfies `c0 + c1·s = round(q_l·m/t_j) + e (mod q_l)`; it decrypts correctly while
//! `|e| < q_l/(2·t_j) − 1`.

use crate::encoding::Plaintext;
use crate::keys::{expand_seed, PublicKey, SecretKey};
use crate::params::Params;
use crate::poly::{from_small, sample_error, RnsPoly};
use crate::HeError;
use nectar_math::sample::ternary;
use nectar_math::{Block, Prg};
use rayon::prelude::*;

/// An RLWE ciphertext `(c0, c1)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ciphertext {
    pub(crate) c0: RnsPoly,
    pub(crate) c1: RnsPoly,
    /// Set while `c1` is exactly the expansion of this seed (fresh symmetric ciphertext).
    pub(crate) seed: Option<Block>,
    pub(crate) plain_index: usize,
}

/// Exact noise of a ciphertext: `log2 |e|_∞` and the remaining budget
/// `log2(q/(2t)) − log2 |e|_∞` in bits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoiseReport {
    /// Bit length of the largest noise coefficient.
    pub noise_bits: u32,
    /// `floor(log2(q/(2t))) − noise_bits`; decryption is correct while this is positive.
    pub budget_bits: i64,
}

impl Ciphertext {
    /// Number of ciphertext primes in use.
    pub fn level(&self) -> usize {
        self.c0.limbs()
    }
    /// The plaintext component `j` it encrypts.
    pub fn plain_index(&self) -> usize {
        self.plain_index
    }
    /// Whether `c1` is still the expansion of a seed (serializes as `(b, seed)`).
    pub fn is_seeded(&self) -> bool {
        self.seed.is_some()
    }
    /// Polynomial `c0` (the `b` part).
    pub fn c0(&self) -> &RnsPoly {
        &self.c0
    }
    /// Polynomial `c1` (the `a` part).
    pub fn c1(&self) -> &RnsPoly {
        &self.c1
    }
}

impl SecretKey {
    /// Symmetric encryption of `pt` at the top level: `(−a·s + e + round(q·m/t), a)` with `a`
    /// expanded from a fresh seed.
    pub fn encrypt(&self, params: &Params, pt: &Plaintext, prg: &mut Prg) -> Result<Ciphertext, HeError> {
        self.encrypt_at(params, pt, params.max_level(), prg)
    }

    /// [`SecretKey::encrypt`] at `level` (the first `level` primes of `q`): a fresh
    /// ciphertext whose noise is the fresh error alone (variance `σ² + 1/12` with the exact
    /// scaling `round(q_L·m/t)`), where switching a top-level one down to `level` adds the
    /// rounding `r0 + r1·s` (variance `≈ (1 + 2N/3)/12`); seeded like the top-level one, so it
    /// travels as `b` and the seed (`level` primes of `b` instead of all of them).
    pub fn encrypt_at(&self, params: &Params, pt: &Plaintext, level: usize, prg: &mut Prg) -> Result<Ciphertext, HeError> {
        params.check_plain_index(pt.plain_index)?;
        if level == 0 || level > params.max_level() {
            return Err(HeError::OutOfRange(format!("level {level}")));
        }
        let seed = prg.gen_block();
        let a = expand_seed(params, seed, (0..level).collect());
        let e = sample_error(params, prg);
        // b = e − INTT(a ⊙ s) + round(q·m/t), all limb-wise: the error never goes through
        // the NTT (same residues as transforming e and subtracting in the NTT domain).
        let scaled = pt.scaled(params, level);
        let n = params.n();
        let mut b = RnsPoly::zero_level(n, level, false);
        b.data.par_chunks_mut(n).enumerate().for_each(|(i, l)| {
            let m = params.modulus(i);
            let (al, sl) = (a.limb(i), self.s_ntt.limb(i));
            l.copy_from_slice(al);
            params.plan(i).mul_inverse(l, sl);
            let sc = scaled.limb(i);
            for ((x, &ek), &d) in l.iter_mut().zip(&e).zip(sc) {
                *x = m.add(m.sub(m.reduce_i64(ek), *x), d);
            }
        });
        Ok(Ciphertext { c0: b, c1: a, seed: Some(seed), plain_index: pt.plain_index })
    }

    /// `c0 + c1·s mod q` in coefficient form (one pass per limb: `c1` to NTT form if needed,
    /// times `s`, back, plus `c0`).
    fn phase(&self, params: &Params, ct: &Ciphertext) -> RnsPoly {
        let n = params.n();
        let level = ct.level();
        let mut out = RnsPoly::zero_level(n, level, false);
        let c0_coeff;
        let c0 = if ct.c0.ntt {
            let mut c = ct.c0.clone();
            c.to_coeff(params);
            c0_coeff = c;
            &c0_coeff
        } else {
            &ct.c0
        };
        out.data.par_chunks_mut(n).enumerate().for_each(|(i, l)| {
            let m = params.modulus(i);
            let plan = params.plan(i);
            l.copy_from_slice(ct.c1.limb(i));
            if !ct.c1.ntt {
                plan.forward(l);
            }
            plan.mul_inverse(l, self.s_ntt.limb(i));
            l.iter_mut().zip(c0.limb(i)).for_each(|(x, &y)| *x = m.add(*x, y));
        });
        out
    }

    fn check_decodable(params: &Params, ct: &Ciphertext) -> Result<(), HeError> {
        params.check_plain_index(ct.plain_index)?;
        let tb = 128 - (params.plain_modulus(ct.plain_index) - 1).leading_zeros();
        if params.q_bits(ct.level()) <= tb + 1 {
            return Err(HeError::NoiseBudget(format!("q at level {} is not larger than t", ct.level())));
        }
        Ok(())
    }

    /// Decryption `round(t·(c0 + c1·s)/q) mod t`, computed exactly in RNS.
    pub fn decrypt(&self, params: &Params, ct: &Ciphertext) -> Result<Plaintext, HeError> {
        Self::check_decodable(params, ct)?;
        let level = ct.level();
        let ph = self.phase(params, ct);
        let n = params.n();
        let sr = &params.level_consts(level).decode[ct.plain_index];
        let moduli = &params.q_moduli()[..level];
        let mut coeffs = vec![0u64; n];
        coeffs.par_chunks_mut(1024).enumerate().for_each(|(c, out)| {
            for (o, k) in out.iter_mut().zip(c * 1024..) {
                *o = sr.apply(moduli, (0..level).map(|i| ph.data[i * n + k]));
            }
        });
        Ok(Plaintext { coeffs, plain_index: ct.plain_index })
    }

    /// Exact noise of `ct` (test helper: needs the secret key).
    pub fn noise(&self, params: &Params, ct: &Ciphertext) -> Result<NoiseReport, HeError> {
        let pt = self.decrypt(params, ct)?;
        let level = ct.level();
        let mut e = self.phase(params, ct);
        e.add_assign(params, &pt.scaled(params, level), true);
        let basis = &params.level_consts(level).basis;
        let n = params.n();
        let noise_bits = (0..n)
            .into_par_iter()
            .map(|k| {
                let r: Vec<u64> = (0..level).map(|i| e.data[i * n + k]).collect();
                basis.compose_centered(&r).0.bits()
            })
            .max()
            .unwrap_or(0);
        let tb = 128 - (params.plain_modulus(ct.plain_index) - 1).leading_zeros();
        let budget = params.q_bits(level) as i64 - 1 - tb as i64 - 1 - noise_bits as i64;
        Ok(NoiseReport { noise_bits, budget_bits: budget })
    }
}

impl PublicKey {
    /// Public-key encryption of `pt` at `level`: `(p0·u + e1 + round(q·m/t), p1·u + e2)`.
    pub fn encrypt_at(&self, params: &Params, pt: &Plaintext, level: usize, prg: &mut Prg) -> Result<Ciphertext, HeError> {
        params.check_plain_index(pt.plain_index)?;
        if level == 0 || level > params.max_level() {
            return Err(HeError::OutOfRange(format!("level {level}")));
        }
        let n = params.n();
        let u: Vec<i64> = (0..n).map(|_| ternary(prg) as i64).collect();
        let mut u = from_small(params, &u, (0..level).collect());
        u.to_ntt(params);
        let e1 = sample_error(params, prg);
        let e2 = sample_error(params, prg);
        let scaled = pt.scaled(params, level);
        // One pass per (polynomial, limb): INTT(p_b ⊙ u) + e_b (+ round(q·m/t) in c0).
        let mut c0 = RnsPoly::zero_level(n, level, false);
        let mut c1 = RnsPoly::zero_level(n, level, false);
        c0.data.par_chunks_mut(n).chain(c1.data.par_chunks_mut(n)).enumerate().for_each(|(idx, out)| {
            let (first, i) = (idx < level, idx % level);
            let m = params.modulus(i);
            let pk = if first { self.p0.limb(i) } else { self.p1.limb(i) };
            out.copy_from_slice(pk);
            params.plan(i).mul_inverse(out, u.limb(i));
            let e = if first { &e1 } else { &e2 };
            out.iter_mut().zip(e).for_each(|(x, &ek)| *x = m.add(*x, m.reduce_i64(ek)));
            if first {
                out.iter_mut().zip(scaled.limb(i)).for_each(|(x, &d)| *x = m.add(*x, d));
            }
        });
        Ok(Ciphertext { c0, c1, seed: None, plain_index: pt.plain_index })
    }

    /// Public-key encryption of `pt` at the top level.
    pub fn encrypt(&self, params: &Params, pt: &Plaintext, prg: &mut Prg) -> Result<Ciphertext, HeError> {
        self.encrypt_at(params, pt, params.max_level(), prg)
    }

    /// A public-key encryption of zero at `level` for plaintext component `j` (re-randomisation,
    /// e.g. in H2A).
    pub fn encrypt_zero(&self, params: &Params, level: usize, j: usize, prg: &mut Prg) -> Result<Ciphertext, HeError> {
        let pt = Plaintext::from_coeffs(params, &[], j)?;
        self.encrypt_at(params, &pt, level, prg)
    }
}
