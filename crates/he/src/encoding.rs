//! Plaintext encodings.
//!
//! - **Coefficient encoding** over `Z_t` (`t = 2^l`, `l <= 64`, or a prime): the message is the
//!   coefficient vector itself ([`Plaintext::from_coeffs`]). Products with a plaintext are
//!   negacyclic convolutions mod `t` — what the Cheetah/BumbleBee matrix encodings need.
//! - **SIMD batching** over a prime `t ≡ 1 (mod 2N)` ([`Params::encode_simd`]): slot `i` is the
//!   evaluation of the plaintext at the `i`-th primitive `2N`-th root of unity, in the
//!   (bit-reversed) order of `tfhe-ntt`'s forward transform; products of plaintexts are
//!   slot-wise products. (No rotation structure is promised by this slot order: BumbleBee's
//!   bOLE only needs slot-wise products.)
//! - **CRT batching** for a plaintext modulus `T = t_0·…·t_{k-1}` ([`Params::encode_simd_crt`]):
//!   one SIMD plaintext (and ciphertext) per prime `t_j`.
//!
//! In the ciphertext, a plaintext `m` is scaled to `round(q·m/t) = floor(q/t)·m +
//! round((q mod t)·m/t)` (not `floor(q/t)·m`): the rounding keeps the error of a product with
//! a plaintext `p` at `(e + 1/2)·|p|` instead of `(q mod t)·|p|`, which matters for `t = 2^64`.

use crate::params::Params;
use crate::poly::RnsPoly;
use crate::HeError;
use nectar_math::rns::BigUint;
use rayon::prelude::*;

/// At most `N` coefficients, each `< t_j`, for an existing plaintext component `j`.
fn check_coeffs(params: &Params, values: &[u64], j: usize) -> Result<(), HeError> {
    params.check_plain_index(j)?;
    let n = params.n();
    if values.len() > n {
        return Err(HeError::OutOfRange(format!("{} coefficients > N = {n}", values.len())));
    }
    let t = params.plain_modulus(j);
    // Every u64 is below t = 2^64: only smaller moduli need the scan.
    if t <= u64::MAX as u128 {
        if let Some(v) = values.iter().find(|&&v| v as u128 >= t) {
            return Err(HeError::OutOfRange(format!("coefficient {v} >= t = {t}")));
        }
    }
    Ok(())
}

/// A plaintext polynomial: `N` coefficients in `[0, t_j)` for plaintext component `j`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plaintext {
    pub(crate) coeffs: Vec<u64>,
    pub(crate) plain_index: usize,
}

impl Plaintext {
    /// Coefficient encoding of `values` (at most `N`, zero-padded; each `< t_j`) for plaintext
    /// component `j` (0 unless CRT batching).
    pub fn from_coeffs(params: &Params, values: &[u64], j: usize) -> Result<Self, HeError> {
        check_coeffs(params, values, j)?;
        let n = params.n();
        let mut coeffs = values.to_vec();
        coeffs.resize(n, 0);
        Ok(Self { coeffs, plain_index: j })
    }

    /// Coefficient encoding of signed values (reduced mod `t_j`).
    pub fn from_signed(params: &Params, values: &[i64], j: usize) -> Result<Self, HeError> {
        params.check_plain_index(j)?;
        let t = params.plain_modulus(j) as i128;
        let v: Vec<u64> = values.iter().map(|&x| (x as i128).rem_euclid(t) as u64).collect();
        Self::from_coeffs(params, &v, j)
    }

    /// The coefficients (each `< t_j`).
    pub fn coeffs(&self) -> &[u64] {
        &self.coeffs
    }

    /// The plaintext component `j` this plaintext belongs to.
    pub fn plain_index(&self) -> usize {
        self.plain_index
    }

    /// `round(q·m/t) mod q_i` on the first `level` primes (coefficient form).
    pub(crate) fn scaled(&self, params: &Params, level: usize) -> RnsPoly {
        let n = params.n();
        let t = params.plain_modulus(self.plain_index);
        let (delta, rt) = &params.level_consts(level).encode[self.plain_index];
        let fracs: Vec<u64> = self
            .coeffs
            .iter()
            .map(|&m| {
                let num = *rt as u128 * m as u128 + t / 2;
                if t == 1u128 << 64 {
                    (num >> 64) as u64
                } else {
                    (num / t) as u64
                }
            })
            .collect();
        let mut p = RnsPoly::zero_level(n, level, false);
        for i in 0..level {
            let m = *params.modulus(i);
            let (d, ds) = (delta[i], m.shoup(delta[i]));
            // `a mod q_i` for any 64-bit `a` as a Shoup product by 1 (cheaper than Barrett).
            let one_s = m.shoup(1);
            for (k, x) in p.limb_mut(i).iter_mut().enumerate() {
                *x = m.add(m.mul_shoup(self.coeffs[k], d, ds), m.mul_shoup(fracs[k], 1, one_s));
            }
        }
        p
    }
}

/// A plaintext lifted (centred) into `R_q` and transformed to NTT form, reusable for any number
/// of plaintext × ciphertext products at levels up to its own.
#[derive(Clone, Debug)]
pub struct PlainNtt {
    pub(crate) poly: RnsPoly,
    pub(crate) plain_index: usize,
}

impl PlainNtt {
    /// Prepares `pt` for products with ciphertexts of level `<= level`.
    pub fn new(params: &Params, pt: &Plaintext, level: usize) -> Result<Self, HeError> {
        Self::from_coeffs(params, &pt.coeffs, pt.plain_index, level)
    }

    /// [`PlainNtt::new`] of `Plaintext::from_coeffs(params, values, j)` without the padded
    /// copy: the limbs are built from `values` (missing coefficients 0), each entry written
    /// once (no zero fill first: the OLT server prepares thousands of weight blocks per layer;
    /// allocating them zeroed was 0.7 CPU-s of a MiniLM run in `perf`, though the run's wall
    /// time did not change measurably: 20.13 against 20.05 s, two runs each).
    pub fn from_coeffs(params: &Params, values: &[u64], j: usize, level: usize) -> Result<Self, HeError> {
        if level == 0 || level > params.max_level() {
            return Err(HeError::OutOfRange(format!("level {level}")));
        }
        check_coeffs(params, values, j)?;
        let n = params.n();
        let (lifted, bits) = (centred_lift(params, values, j), pow2_bits(params, j));
        let mut data = Vec::with_capacity(level * n);
        for i in 0..level {
            let residue = limb_residue(params, i);
            if lifted.is_empty() {
                data.extend(values.iter().map(|&c| residue(lift_pow2(c, bits))));
                data.resize((i + 1) * n, 0);
            } else {
                data.extend(lifted.iter().map(|&v| residue(v)));
            }
        }
        data.par_chunks_mut(n).enumerate().for_each(|(i, l)| params.plan(i).forward(l));
        Ok(Self { poly: RnsPoly { n, data, ntt: true, mods: (0..level).collect() }, plain_index: j })
    }

    /// Re-encodes `self` in place, at its level, as [`PlainNtt::new`] of
    /// `Plaintext::from_coeffs(params, values, j)` would: the buffer is reused (no allocation,
    /// no zero fill), for callers that encode many plaintexts one after another.
    pub fn refill_coeffs(&mut self, params: &Params, values: &[u64], j: usize) -> Result<(), HeError> {
        check_coeffs(params, values, j)?;
        let n = params.n();
        // The centred lift of each coefficient, computed per limb (no N-entry table: S2C
        // re-encodes 32768 diagonals of N = 32768 in a row).
        let lift = centred(params, j);
        self.poly.data.par_chunks_mut(n).enumerate().for_each(|(i, l)| {
            let residue = limb_residue(params, i);
            // Only the given coefficients are lifted; the rest of the limb is zeroed in one
            // pass (an OLT evaluator's block fills `m_w·n_w` of the `N`, e.g. 256 of 8192
            // for MiniLM's embedding table).
            let (head, tail) = l.split_at_mut(values.len());
            head.iter_mut().zip(values).for_each(|(x, &c)| *x = residue(lift(c)));
            tail.fill(0);
            params.plan(i).forward(l);
        });
        self.plain_index = j;
        Ok(())
    }

    /// Highest ciphertext level this plaintext can multiply.
    pub fn level(&self) -> usize {
        self.poly.limbs()
    }

    /// The plaintext component `j`.
    pub fn plain_index(&self) -> usize {
        self.plain_index
    }
}

/// The centred lift `(−t/2, t/2]` of `coeffs` (missing ones 0) for plaintext component `j`, as
/// (magnitude, sign) per coefficient; empty for a power of two `t`, whose lift ([`lift_pow2`])
/// is computed on the fly, per limb, without an intermediate vector.
fn centred_lift(params: &Params, coeffs: &[u64], j: usize) -> Vec<(u64, bool)> {
    if params.plain_modulus(j).is_power_of_two() {
        return Vec::new();
    }
    let lift = centred(params, j);
    (0..params.n()).map(|k| lift(coeffs.get(k).copied().unwrap_or(0))).collect()
}

/// The centred lift modulo `t_j` of one coefficient `c < t_j`, as (magnitude, sign).
fn centred(params: &Params, j: usize) -> impl Fn(u64) -> (u64, bool) {
    let (t, bits) = (params.plain_modulus(j), pow2_bits(params, j));
    move |c| {
        if t.is_power_of_two() {
            lift_pow2(c, bits)
        } else if 2 * c as u128 > t {
            ((t - c as u128) as u64, true)
        } else {
            (c, false)
        }
    }
}

/// `b` for `t_j = 2^b` (`b ≤ 64`); 64 otherwise (unused then: [`centred_lift`] lifts).
fn pow2_bits(params: &Params, j: usize) -> u32 {
    let t = params.plain_modulus(j);
    if t.is_power_of_two() {
        t.trailing_zeros()
    } else {
        64
    }
}

/// The centred lift of a coefficient `c < 2^bits` modulo `t = 2^bits` (`1 ≤ bits ≤ 64`) as
/// (magnitude, sign): `c` if `c <= 2^(bits−1)`, else `−(2^bits − c)`.
#[inline]
fn lift_pow2(c: u64, bits: u32) -> (u64, bool) {
    let neg = c > 1u64 << (bits - 1);
    // For 0 < c < 2^bits, (2^64 − c) mod 2^bits = 2^bits − c.
    (if neg { c.wrapping_neg() & (u64::MAX >> (64 - bits)) } else { c }, neg)
}

/// The residue modulo prime `i` of a lifted (magnitude, sign). A magnitude at or above the
/// prime (`< 2^64`) reduces with a Shoup product by 1; one below it (zeros and small weights:
/// most coefficients of a sparse block) is already reduced.
fn limb_residue(params: &Params, i: usize) -> impl Fn((u64, bool)) -> u64 {
    let m = *params.modulus(i);
    let (one_s, q) = (m.shoup(1), m.value());
    move |(a, neg)| {
        let r = if a < q { a } else { m.mul_shoup(a, 1, one_s) };
        if neg {
            m.neg(r)
        } else {
            r
        }
    }
}

impl Params {
    fn t_plan(&self, j: usize) -> Result<&nectar_math::ntt::NttPlan, HeError> {
        self.check_plain_index(j)?;
        self.0.t_plans[j]
            .as_ref()
            .ok_or_else(|| HeError::Mismatch("SIMD batching needs a prime t ≡ 1 (mod 2N)".into()))
    }

    /// SIMD encoding of up to `N` slot values (each `< t_j`) for plaintext component `j`.
    pub fn encode_simd(&self, values: &[u64], j: usize) -> Result<Plaintext, HeError> {
        let plan = self.t_plan(j)?;
        let mut pt = Plaintext::from_coeffs(self, values, j)?;
        plan.inverse(&mut pt.coeffs);
        Ok(pt)
    }

    /// [`Params::encode_simd`] in place: the `N` slot values in `values` (each `< t_j`) become
    /// the plaintext's coefficients (for [`PlainNtt::refill_coeffs`]; no allocation).
    pub fn encode_simd_in_place(&self, values: &mut [u64], j: usize) -> Result<(), HeError> {
        let plan = self.t_plan(j)?;
        if values.len() != self.n() {
            return Err(HeError::Mismatch(format!("{} slot values for N = {}", values.len(), self.n())));
        }
        check_coeffs(self, values, j)?;
        plan.inverse(values);
        Ok(())
    }

    /// The `N` slot values of a SIMD-encoded plaintext.
    pub fn decode_simd(&self, pt: &Plaintext) -> Result<Vec<u64>, HeError> {
        let plan = self.t_plan(pt.plain_index)?;
        let mut v = pt.coeffs.clone();
        plan.forward(&mut v);
        Ok(v)
    }

    /// CRT batching: `residues[j]` holds the slot values modulo `t_j` (as from
    /// [`Params::crt_split`]); returns one SIMD plaintext per prime.
    pub fn encode_simd_crt(&self, residues: &[Vec<u64>]) -> Result<Vec<Plaintext>, HeError> {
        if residues.len() != self.plain_count() {
            return Err(HeError::Mismatch(format!("{} residue vectors for {} CRT primes", residues.len(), self.plain_count())));
        }
        residues.iter().enumerate().map(|(j, r)| self.encode_simd(r, j)).collect()
    }

    /// Inverse of [`Params::encode_simd_crt`]: per-prime slot residues.
    pub fn decode_simd_crt(&self, pts: &[Plaintext]) -> Result<Vec<Vec<u64>>, HeError> {
        if pts.len() != self.plain_count() || pts.iter().enumerate().any(|(j, p)| p.plain_index != j) {
            return Err(HeError::Mismatch("need one plaintext per CRT prime, in order".into()));
        }
        pts.iter().map(|p| self.decode_simd(p)).collect()
    }

    /// Splits values in `[0, T)` (`T = Π t_j`) into per-prime residue vectors.
    pub fn crt_split(&self, values: &[BigUint]) -> Result<Vec<Vec<u64>>, HeError> {
        let b = self.plain_crt_basis().ok_or_else(|| HeError::Mismatch("not a CRT plaintext modulus".into()))?;
        let mut out = vec![Vec::with_capacity(values.len()); b.len()];
        for v in values {
            if v.cmp_big(b.product()) != std::cmp::Ordering::Less {
                return Err(HeError::OutOfRange("CRT value >= T".into()));
            }
            for (j, r) in b.decompose(v).into_iter().enumerate() {
                out[j].push(r);
            }
        }
        Ok(out)
    }

    /// Joins per-prime residue vectors into values in `[0, T)`.
    pub fn crt_join(&self, residues: &[Vec<u64>]) -> Result<Vec<BigUint>, HeError> {
        let b = self.plain_crt_basis().ok_or_else(|| HeError::Mismatch("not a CRT plaintext modulus".into()))?;
        if residues.len() != b.len() || residues.iter().any(|r| r.len() != residues[0].len()) {
            return Err(HeError::Mismatch("residue vectors".into()));
        }
        let mut out = Vec::with_capacity(residues[0].len());
        for k in 0..residues[0].len() {
            let r: Vec<u64> = residues.iter().map(|v| v[k]).collect();
            for (j, &x) in r.iter().enumerate() {
                if x >= b.moduli()[j].value() {
                    return Err(HeError::OutOfRange("residue >= t_j".into()));
                }
            }
            out.push(b.compose(&r));
        }
        Ok(out)
    }
}
