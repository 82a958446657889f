//! Homomorphic operations that need no key: addition/subtraction, plaintext addition,
//! plaintext × ciphertext products (plaintext pre-transformed, [`PlainNtt`]), multiplication
//! by a monomial `X^k` or a scalar, modulus switching (drop the last prime with rounding) and
//! noise flooding.
//!
//! Noise: add/sub add noises; a product with a plaintext of centred coefficients `|p_k| <= t/2`
//! multiplies the noise by at most `N·t/2` (about `sqrt(N)·t/2` for random `p`); a monomial
//! keeps it; modulus switching `q -> q/q_last` divides it by `q_last` and adds the rounding
//! term `(1 + |s|_1)/2`; flooding with `b` bits adds a uniform value in `[−2^(b−1), 2^(b−1))`.

use crate::ciphertext::Ciphertext;
use crate::encoding::{PlainNtt, Plaintext};
use crate::params::Params;
use crate::poly::{with_ntt_limb, RnsPoly};
use crate::HeError;
use crate::keyswitch::mod_down_limb;
use nectar_math::Prg;
use rayon::prelude::*;

/// The widest noise flood [`Ciphertext::flood`] draws, in bits.
pub const MAX_FLOOD_BITS: u32 = 192;

fn same_form(params: &Params, target: &RnsPoly, other: &RnsPoly) -> RnsPoly {
    let mut o = other.clone();
    if target.ntt {
        o.to_ntt(params);
    } else {
        o.to_coeff(params);
    }
    o
}

impl Ciphertext {
    fn check_compat(&self, other: &Ciphertext) -> Result<(), HeError> {
        if self.level() != other.level() || self.plain_index != other.plain_index {
            return Err(HeError::Mismatch(format!(
                "ciphertexts at level {}/{} for plaintext components {}/{}",
                self.level(),
                other.level(),
                self.plain_index,
                other.plain_index
            )));
        }
        Ok(())
    }

    /// Converts both polynomials to NTT form (what products and accumulations want).
    pub fn to_ntt(&mut self, params: &Params) {
        self.c0.to_ntt(params);
        self.c1.to_ntt(params);
    }

    /// Converts both polynomials to coefficient form (what shifts, H2A and sending want).
    pub fn to_coeff(&mut self, params: &Params) {
        self.c0.to_coeff(params);
        self.c1.to_coeff(params);
    }

    fn add_sub(&mut self, params: &Params, other: &Ciphertext, neg: bool) -> Result<(), HeError> {
        self.check_compat(other)?;
        // Converted copies only when the representations differ.
        for (mine, theirs) in [(&mut self.c0, &other.c0), (&mut self.c1, &other.c1)] {
            if mine.ntt == theirs.ntt {
                mine.add_assign(params, theirs, neg);
            } else {
                let o = same_form(params, mine, theirs);
                mine.add_assign(params, &o, neg);
            }
        }
        self.seed = None;
        Ok(())
    }

    /// `self += other`.
    pub fn add_assign(&mut self, params: &Params, other: &Ciphertext) -> Result<(), HeError> {
        self.add_sub(params, other, false)
    }

    /// `self -= other`.
    pub fn sub_assign(&mut self, params: &Params, other: &Ciphertext) -> Result<(), HeError> {
        self.add_sub(params, other, true)
    }

    /// `self = −self`.
    pub fn negate(&mut self, params: &Params) {
        self.c0.neg_assign(params);
        self.c1.neg_assign(params);
        self.seed = None;
    }

    fn add_plain_sign(&mut self, params: &Params, pt: &Plaintext, neg: bool) -> Result<(), HeError> {
        if pt.plain_index != self.plain_index {
            return Err(HeError::Mismatch("plaintext component".into()));
        }
        let mut d = pt.scaled(params, self.level());
        if self.c0.ntt {
            d.to_ntt(params);
        }
        self.c0.add_assign(params, &d, neg);
        Ok(())
    }

    /// `self += Enc(pt)` without noise (touches only `c0`; a seeded ciphertext stays seeded).
    pub fn add_plain_assign(&mut self, params: &Params, pt: &Plaintext) -> Result<(), HeError> {
        self.add_plain_sign(params, pt, false)
    }

    /// `self -= Enc(pt)` without noise.
    pub fn sub_plain_assign(&mut self, params: &Params, pt: &Plaintext) -> Result<(), HeError> {
        self.add_plain_sign(params, pt, true)
    }

    /// `c0 += r` for an arbitrary polynomial `r ∈ R_q` given by its RNS residues in
    /// **coefficient form**: `residues[i][k]` is coefficient `k` modulo the `i`-th ciphertext
    /// prime, one limb per prime of the ciphertext's level, each `< q_i` (H2A adds a uniform
    /// `r̂` this way, BumbleBee App. C). Works in either representation of `c0` (the residues
    /// are transformed when `c0` is in NTT form; the ciphertext keeps its form). Only `c0`
    /// changes, so a seeded ciphertext stays seeded. The decryption becomes
    /// `round(t·(c0 + r + c1·s)/q)`: a noiseless shift of the phase by `r`.
    pub fn add_c0_assign(&mut self, params: &Params, residues: &[Vec<u64>]) -> Result<(), HeError> {
        let r = Self::poly_from_residues(params, self.level(), residues)?;
        let r = same_form(params, &self.c0, &r);
        self.c0.add_assign(params, &r, false);
        Ok(())
    }

    /// The trivial (noiseless, unseeded) ciphertext `(r, 0)` at `level` for plaintext component
    /// `j`, with `r` given by its RNS residues in coefficient form as in
    /// [`Ciphertext::add_c0_assign`]; the result is in coefficient form.
    pub fn trivial(params: &Params, level: usize, j: usize, residues: &[Vec<u64>]) -> Result<Ciphertext, HeError> {
        params.check_plain_index(j)?;
        if level == 0 || level > params.max_level() {
            return Err(HeError::OutOfRange(format!("level {level} of {}", params.max_level())));
        }
        let c0 = Self::poly_from_residues(params, level, residues)?;
        let c1 = RnsPoly::zero_level(params.n(), level, false);
        Ok(Ciphertext { c0, c1, seed: None, plain_index: j })
    }

    fn poly_from_residues(params: &Params, level: usize, residues: &[Vec<u64>]) -> Result<RnsPoly, HeError> {
        let n = params.n();
        if residues.len() != level || residues.iter().any(|l| l.len() != n) {
            return Err(HeError::Mismatch(format!("expected {level} limbs of {n} residues")));
        }
        let mut p = RnsPoly::zero_level(n, level, false);
        for (i, limb) in residues.iter().enumerate() {
            let q = params.modulus(i).value();
            if limb.iter().any(|&x| x >= q) {
                return Err(HeError::OutOfRange(format!("residue not below prime {i}")));
            }
            p.limb_mut(i).copy_from_slice(limb);
        }
        Ok(p)
    }

    pub(crate) fn check_pt(&self, pt: &PlainNtt) -> Result<(), HeError> {
        if pt.plain_index != self.plain_index || pt.level() < self.level() {
            return Err(HeError::Mismatch(format!(
                "plaintext (component {}, level {}) vs ciphertext (component {}, level {})",
                pt.plain_index,
                pt.level(),
                self.plain_index,
                self.level()
            )));
        }
        Ok(())
    }

    /// `self ⊠ pt` (negacyclic product with the plaintext). The result is in NTT form.
    pub fn mul_plain(&self, params: &Params, pt: &PlainNtt) -> Result<Ciphertext, HeError> {
        self.check_pt(pt)?;
        let mut acc = Ciphertext {
            c0: RnsPoly::zero_level(params.n(), self.level(), true),
            c1: RnsPoly::zero_level(params.n(), self.level(), true),
            seed: None,
            plain_index: self.plain_index,
        };
        acc.accumulate_product(params, self, pt);
        Ok(acc)
    }

    /// `self += ct ⊠ pt` (`self` is brought to NTT form; `ct` may be in either form but NTT
    /// form avoids a conversion per call).
    pub fn mul_plain_accumulate(&mut self, params: &Params, ct: &Ciphertext, pt: &PlainNtt) -> Result<(), HeError> {
        self.check_compat(ct)?;
        ct.check_pt(pt)?;
        self.to_ntt(params);
        self.seed = None;
        self.accumulate_product(params, ct, pt);
        Ok(())
    }

    /// `self += ct ⊠ pt` with `self` in NTT form: one parallel pass over the `2·l` limbs, each
    /// transformed (if `ct` is in coefficient form) into a per-thread scratch buffer.
    fn accumulate_product(&mut self, params: &Params, ct: &Ciphertext, pt: &PlainNtt) {
        let n = params.n();
        let l = self.level();
        self.c0.data.par_chunks_mut(n).chain(self.c1.data.par_chunks_mut(n)).enumerate().for_each(|(idx, acc)| {
            let (src, i) = if idx < l { (&ct.c0, idx) } else { (&ct.c1, idx - l) };
            with_ntt_limb(params, src, i, |a| params.plan(i).mul_accumulate(acc, a, pt.poly.limb(i)));
        });
    }

    /// Multiplies by the monomial `X^k` (`k` taken mod `2N`; `X^N = −1`). Exact, no noise growth.
    pub fn mul_monomial_assign(&mut self, params: &Params, k: usize) {
        self.to_coeff(params);
        self.c0.mul_monomial(params, k);
        self.c1.mul_monomial(params, k);
        self.seed = None;
    }

    /// Multiplies by the integer `k` (mod q): the plaintext is multiplied by `k` mod t when `k`
    /// is small; `k = (2^r)^{-1} mod q` is InterLeave's pre-scaling (see
    /// [`Ciphertext::mul_inv_pow2_assign`]).
    pub fn mul_scalar_assign(&mut self, params: &Params, k: u64) {
        let scalars: Vec<u64> = (0..self.level()).map(|i| params.modulus(i).reduce(k)).collect();
        self.mul_limb_scalars(params, &scalars);
    }

    /// Multiplies by `2^{-r} mod q` (InterLeave, BumbleBee Fig. 6; q odd).
    pub fn mul_inv_pow2_assign(&mut self, params: &Params, r: u32) {
        let scalars: Vec<u64> = (0..self.level())
            .map(|i| {
                let m = params.modulus(i);
                let two_r = m.pow(2, r as u64);
                m.inv(two_r).unwrap_or(0)
            })
            .collect();
        self.mul_limb_scalars(params, &scalars);
    }

    fn mul_limb_scalars(&mut self, params: &Params, scalars: &[u64]) {
        let n = params.n();
        for p in [&mut self.c0, &mut self.c1] {
            p.data.par_chunks_mut(n).enumerate().for_each(|(i, l)| {
                let m = params.modulus(i);
                let (w, ws) = (scalars[i], m.shoup(scalars[i]));
                l.iter_mut().for_each(|x| *x = m.mul_shoup(*x, w, ws));
            });
        }
        self.seed = None;
    }

    /// Modulus switching `q_l -> q_{l-1}`: divides by the last prime with rounding (exact
    /// RNS rescale). The result is in coefficient form.
    pub fn mod_switch_down(&mut self, params: &Params) -> Result<(), HeError> {
        let l = self.level();
        if l <= 1 {
            return Err(HeError::OutOfRange("cannot switch below one prime".into()));
        }
        self.to_coeff(params);
        let n = params.n();
        let last = *params.modulus(l - 1);
        {
            let (keep0, tail0) = self.c0.data.split_at_mut((l - 1) * n);
            let (keep1, tail1) = self.c1.data.split_at_mut((l - 1) * n);
            let (tail0, tail1): (&[u64], &[u64]) = (tail0, tail1);
            keep0.par_chunks_mut(n).chain(keep1.par_chunks_mut(n)).enumerate().for_each(|(idx, limb)| {
                let i = idx % (l - 1);
                let tail = if idx < l - 1 { tail0 } else { tail1 };
                mod_down_limb(params.modulus(i), &last, limb, tail);
            });
        }
        self.c0.truncate_limbs(l - 1);
        self.c1.truncate_limbs(l - 1);
        self.seed = None;
        Ok(())
    }

    /// Switches down to `level` (one prime at a time).
    pub fn mod_switch_to(&mut self, params: &Params, level: usize) -> Result<(), HeError> {
        if level == 0 || level > self.level() {
            return Err(HeError::OutOfRange(format!("level {level} from {}", self.level())));
        }
        if self.level() > level {
            while self.level() > level {
                self.mod_switch_down(params)?;
            }
            self.c0.release_dropped_limbs();
            self.c1.release_dropped_limbs();
        }
        Ok(())
    }

    /// Noise flooding: adds to `c0` a fresh uniform integer in `[−2^(bits−1), 2^(bits−1))` per
    /// coefficient (statistically hides a noise of width `<= 2^(bits−σ)` with distance `2^−σ`
    /// per coefficient; the caller sizes `bits` for a whole session, see
    /// `nectar_linear::h2a::flood_bits`). Widths up to [`MAX_FLOOD_BITS`] are drawn as several
    /// 64-bit words and reduced per prime. Errors if the flooded noise would not leave
    /// decryption correct at the current level.
    pub fn flood(&mut self, params: &Params, bits: u32, prg: &mut Prg) -> Result<(), HeError> {
        if bits == 0 || bits > MAX_FLOOD_BITS {
            return Err(HeError::OutOfRange(format!("flood width {bits} bits (1..={MAX_FLOOD_BITS})")));
        }
        let tb = 128 - (params.plain_modulus(self.plain_index) - 1).leading_zeros();
        let qb = params.q_bits(self.level());
        if bits + tb + 2 > qb {
            return Err(HeError::NoiseBudget(format!(
                "flooding {bits} bits with log2 t = {tb} needs log2 q >= {}, have {qb}",
                bits + tb + 2
            )));
        }
        self.c0.to_coeff(params);
        let n = params.n();
        // Each value: words w_0.. (little-endian, the top one masked) minus 2^(bits−1).
        let words = bits.div_ceil(64) as usize;
        let top_bits = bits - 64 * (words as u32 - 1);
        let top_mask = if top_bits == 64 { u64::MAX } else { (1u64 << top_bits) - 1 };
        let mut draw = || -> u64 { prg.next_u128() as u64 };
        let v: Vec<Vec<u64>> = (0..n)
            .map(|_| {
                let mut w: Vec<u64> = (0..words).map(|_| draw()).collect();
                w[words - 1] &= top_mask;
                w
            })
            .collect();
        let l = self.level();
        for i in 0..l {
            let m = *params.modulus(i);
            // 2^(bits−1) mod m, and each value mod m by Horner in base 2^64.
            let mut half = 1u64 % m.value();
            for _ in 0..bits - 1 {
                half = m.add(half, half);
            }
            let red = |w: &[u64]| -> u64 {
                let mut r = 0u64;
                for &x in w.iter().rev() {
                    r = m.reduce_u128(((r as u128) << 64) | x as u128);
                }
                m.sub(r, half)
            };
            self.c0.limb_mut(i).iter_mut().zip(&v).for_each(|(x, w)| *x = m.add(*x, red(w)));
        }
        Ok(())
    }

    /// Keeps the coefficients of `c0` (the `b` part) at the positions in `keep` and zeroes the
    /// others (the receiver must ignore the other positions of the decryption).
    pub fn keep_c0_positions(&mut self, params: &Params, keep: &[usize]) -> Result<(), HeError> {
        let n = params.n();
        if keep.iter().any(|&k| k >= n) {
            return Err(HeError::OutOfRange("coefficient position >= N".into()));
        }
        self.c0.to_coeff(params);
        let mut mask = vec![false; n];
        keep.iter().for_each(|&k| mask[k] = true);
        for i in 0..self.level() {
            self.c0.limb_mut(i).iter_mut().zip(&mask).for_each(|(x, &m)| {
                if !m {
                    *x = 0
                }
            });
        }
        Ok(())
    }
}
