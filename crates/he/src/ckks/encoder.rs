//! CKKS encoding (CKKS paper (BLB ref. 6) §3.2; BLB §2.4): `N/2` complex slot values → the real
//! polynomial of their canonical embedding ([`super::fft`]), scaled by `Δ` and rounded to
//! integers, reduced per RNS prime. Decoding composes the centred value of each coefficient
//! (CRT), divides by the scale and applies the forward embedding.
//!
//! Error: rounding adds `|e_k| <= 1/2` per coefficient, so at most `N/(2Δ)` per slot (about
//! `√N/(2Δ)·few` for random inputs); floating point adds about `log2(N)·2^−53` relative. Scaled
//! coefficients up to `2^126` are rounded exactly (through `i128`), so scales up to `2^60` and
//! coefficients beyond 64 bits are handled.

use super::fft::C64;
use super::params::CkksParams;
use crate::poly::RnsPoly;
use crate::HeError;
use nectar_math::rns::BigUint;
use rayon::prelude::*;

/// Scaled coefficients must stay below `2^126` (exact `f64 -> i128` rounding).
const MAX_COEFF_LOG2: f64 = 126.0;

/// An encoded CKKS plaintext at a level, with its scale (NTT form on the level's primes).
#[derive(Clone, Debug, PartialEq)]
pub struct CkksPlaintext {
    pub(crate) poly: RnsPoly,
    pub(crate) scale: f64,
}

impl CkksPlaintext {
    /// Number of data primes it is encoded on.
    pub fn level(&self) -> usize {
        self.poly.limbs()
    }
    /// Its scale `Δ`.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// A plaintext from its integer coefficients given per prime of the level, coefficient form:
    /// `residues[i][k] = c_k mod q_i` (reduced). For protocols that build the encoded polynomial
    /// themselves, such as BLB's MPC → CKKS conversion (§6.3, Alg. 2), and for masks drawn
    /// uniformly from `R_q` (Alg. 1).
    pub fn from_coeff_residues(params: &CkksParams, residues: &[Vec<u64>], scale: f64) -> Result<Self, HeError> {
        let level = residues.len();
        params.check_level(level)?;
        if !(scale.is_finite() && scale > 0.0) {
            return Err(HeError::OutOfRange(format!("scale {scale}")));
        }
        let n = params.n();
        let e = params.engine();
        let mut poly = RnsPoly::zero_level(n, level, false);
        for (i, r) in residues.iter().enumerate() {
            let q = e.modulus(i).value();
            if r.len() != n || r.iter().any(|&x| x >= q) {
                return Err(HeError::OutOfRange(format!("residues for prime {i}: need {n} values below {q}")));
            }
            poly.limb_mut(i).copy_from_slice(r);
        }
        poly.to_ntt(e);
        Ok(CkksPlaintext { poly, scale })
    }

    /// The integer coefficients per prime of the level, coefficient form (the inverse of
    /// [`Self::from_coeff_residues`]); after decryption, the decryptor's share in BLB Alg. 1.
    pub fn coeff_residues(&self, params: &CkksParams) -> Vec<Vec<u64>> {
        let mut p = self.poly.clone();
        p.to_coeff(params.engine());
        (0..p.limbs()).map(|i| p.limb(i).to_vec()).collect()
    }
}

fn big_to_f64(b: &BigUint) -> f64 {
    b.words.iter().rev().fold(0.0, |acc, &w| acc * 18446744073709551616.0 + w as f64)
}

impl CkksParams {
    /// Encodes up to `N/2` complex values (missing slots are zero) at `level` with `scale`.
    /// Errors if a value is not finite or a scaled coefficient would not fit `q` at `level`.
    pub fn encode(&self, values: &[C64], level: usize, scale: f64) -> Result<CkksPlaintext, HeError> {
        self.check_level(level)?;
        if values.len() > self.slots() {
            return Err(HeError::OutOfRange(format!("{} values for {} slots", values.len(), self.slots())));
        }
        if values.iter().any(|z| !z.re.is_finite() || !z.im.is_finite()) {
            return Err(HeError::OutOfRange("non-finite slot value".into()));
        }
        let coeffs = self.fft().encode(values);
        let mut poly = self.poly_from_f64(&coeffs, scale, level)?;
        poly.to_ntt(self.engine());
        Ok(CkksPlaintext { poly, scale })
    }

    /// [`Self::encode`] for real values.
    pub fn encode_real(&self, values: &[f64], level: usize, scale: f64) -> Result<CkksPlaintext, HeError> {
        let z: Vec<C64> = values.iter().map(|&x| C64::real(x)).collect();
        self.encode(&z, level, scale)
    }

    /// The `N/2` slot values of `pt`.
    pub fn decode(&self, pt: &CkksPlaintext) -> Result<Vec<C64>, HeError> {
        if !(pt.scale.is_finite() && pt.scale > 0.0) {
            return Err(HeError::OutOfRange(format!("scale {}", pt.scale)));
        }
        let mut p = pt.poly.clone();
        p.to_coeff(self.engine());
        let inv = 1.0 / pt.scale;
        let coeffs: Vec<f64> = self.poly_to_f64(&p).into_iter().map(|c| c * inv).collect();
        Ok(self.fft().decode(&coeffs))
    }

    /// The real parts of [`Self::decode`].
    pub fn decode_real(&self, pt: &CkksPlaintext) -> Result<Vec<f64>, HeError> {
        Ok(self.decode(pt)?.into_iter().map(|z| z.re).collect())
    }

    /// `round(scale·c_k)` per coefficient, reduced on the first `level` primes (coefficient
    /// form).
    pub(crate) fn poly_from_f64(&self, coeffs: &[f64], scale: f64, level: usize) -> Result<RnsPoly, HeError> {
        if !(scale.is_finite() && scale >= 1.0) {
            return Err(HeError::OutOfRange(format!("scale {scale} (need a finite scale >= 1)")));
        }
        let max = coeffs.iter().fold(0.0f64, |a, &c| a.max((c * scale).abs()));
        // Centred decoding needs |x| < q/2; the i128 rounding needs |x| < 2^126.
        let limit = (self.q_bits(level) as f64 - 2.0).min(MAX_COEFF_LOG2);
        if !max.is_finite() || max.log2() >= limit {
            return Err(HeError::OutOfRange(format!(
                "scaled coefficient 2^{:.1} does not fit q at level {level} ({} bits)",
                max.log2(),
                self.q_bits(level)
            )));
        }
        let ints: Vec<i128> = coeffs.iter().map(|&c| (c * scale).round() as i128).collect();
        let params = self.engine();
        let n = self.n();
        let mut p = RnsPoly::zero_level(n, level, false);
        p.data.par_chunks_mut(n).enumerate().for_each(|(i, limb)| {
            let m = params.modulus(i);
            limb.iter_mut().zip(&ints).for_each(|(x, &v)| *x = m.reduce_i128(v));
        });
        Ok(p)
    }

    /// The centred value of each coefficient of `p` (coefficient form) as `f64`.
    pub(crate) fn poly_to_f64(&self, p: &RnsPoly) -> Vec<f64> {
        let params = self.engine();
        let n = self.n();
        let level = p.limbs();
        if level == 1 {
            let m = params.modulus(0);
            return p.limb(0).iter().map(|&x| m.center(x) as f64).collect();
        }
        let basis = &params.level_consts(level).basis;
        let mut out = vec![0.0; n];
        out.par_chunks_mut(256).enumerate().for_each(|(c, o)| {
            let mut r = vec![0u64; level];
            for (k, x) in (c * 256..).zip(o.iter_mut()) {
                for (i, ri) in r.iter_mut().enumerate() {
                    *ri = p.data[i * n + k];
                }
                let (mag, neg) = basis.compose_centered(&r);
                let v = big_to_f64(&mag);
                *x = if neg { -v } else { v };
            }
        });
        out
    }
}
