//! LEAF's coefficient-encoded RLWE, the ciphertexts of the non-polynomial part (LEAF §2.2,
//! §3.2, Alg. 4 steps 1–2; REFERENCE.md §6.1–6.2): encryption of matrix rows, the
//! plaintext–ciphertext matmul as integer matrix products over the `(A, B)` parts (PCMM, the
//! method of LEAF's ref. [1]), and the modulus switch to `q = P = 65537`.
//!
//! **Parameters (SECURITY, a documented deviation).** LEAF runs this ring at `n = 1024` with
//! the matmul's ciphertexts modulo the first 30-bit BFV prime (LEAFc), above the 27 bits the
//! HE standard allows at `n = 1024` for 128-bit security (REFERENCE.md §1.8). We keep
//! `n = 1024` and `p = 512` and take `q' = 2^27`: the largest modulus the standard allows, and
//! a power of two, so `p | q'`: the scale `Δ' = q'/p = 2^18` is exact and a product that wraps
//! modulo `p` wraps the ciphertext modulo `q'` in step (with `Δ' = ⌊q'/p⌋` and `p ∤ q'`, each
//! wrap would add `q' mod p` to the phase). The matmul is then plain wrapping `u32` arithmetic
//! masked to 27 bits. [`RlweParams::new`] refuses any `(n, log q')` above the 128-bit table.
//!
//! **Convention** (LEAF Eq. (2)): a ciphertext `(a, b)` of the coefficient-encoded message
//! `m ∈ Z_p^n` satisfies `b + a·s = Δ'·m + e (mod q')`, `a` uniform, `s` ternary, `e`
//! centred binomial (η = 21, σ ≈ 3.24, the HE standard's width).
//!
//! **Noise.** Fresh: `σ ≈ 3.24`. PCMM row `k`: `Σ_i W[k,i]·e_i`, `σ·‖W[k,·]‖₂`. The switch
//! to `P` scales that by `P/q' = 2^−11` and adds the rounding of `b` (≤ 1/2) and of `a`
//! (`Σ_j ε_j s_j`, σ ≈ √(n·(2/3)/12) ≈ 7.4 at n = 1024): LEAF's measured 7–10 (§4), against a
//! decoding bound of `⌊P/(2p)⌋ = 64`.

use crate::FheError;
use nectar_math::modulus::{ntt_primes, Modulus};
use nectar_math::ntt::NttPlan;
use nectar_math::sample::{centered_binomial, ternary};
use nectar_math::Prg;
use rand_core::RngCore;
use rayon::prelude::*;

/// The RLWE error's centred-binomial parameter (σ ≈ 3.24, the HE standard's). SECURITY.
pub const RLWE_ERROR_ETA: u32 = 21;

/// LEAF's prime `q = P = 65537`, the modulus the matmul's output is switched to (the BFV
/// plaintext modulus, REFERENCE.md §6.1).
pub const LEAF_P: u64 = 65537;

/// Parameters of the coefficient-encoded RLWE (see the module docs). AGREEMENT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RlweParams {
    n: usize,
    log_q: u32,
    log_p: u32,
    /// A prime `≡ 1 (mod 2n)` above `2·n·q'`: the negacyclic product `a·s` is computed
    /// exactly over the integers by one NTT modulo it.
    plan: NttPlanEq,
}

/// [`NttPlan`] compared by its prime (for `PartialEq` on the parameters).
#[derive(Clone, Debug)]
struct NttPlanEq(NttPlan);

impl PartialEq for NttPlanEq {
    fn eq(&self, o: &Self) -> bool {
        self.0.modulus().value() == o.0.modulus().value() && self.0.n() == o.0.n()
    }
}
impl Eq for NttPlanEq {}

impl RlweParams {
    /// LEAF's `n = 1024`, `p = 512`, with `q' = 2^27` (module docs).
    pub fn leaf() -> Result<Self, FheError> {
        Self::new(1024, 27, 9)
    }

    /// `n` (a power of two in the HE standard's table), `q' = 2^log_q`, `p = 2^log_p`;
    /// refused below 128-bit security (`log_q` above the table's bound for `n`) or when the
    /// scale `Δ' = q'/p` leaves fewer than 8 bits for the noise.
    pub fn new(n: usize, log_q: u32, log_p: u32) -> Result<Self, FheError> {
        let bound = nectar_he::params::SECURITY_TABLE_128
            .iter()
            .find(|&&(d, _)| d == n)
            .map(|&(_, b)| b)
            .ok_or_else(|| FheError::InvalidParams(format!("RLWE degree {n} is not in the 128-bit table")))?;
        if log_q > bound {
            return Err(FheError::Insecure(format!(
                "RLWE n = {n} with log2 q' = {log_q} is above the {bound} bits of 128-bit security"
            )));
        }
        if log_q > 32 || log_p == 0 || log_p + 8 > log_q {
            return Err(FheError::InvalidParams(format!(
                "RLWE log2 q' = {log_q}, log2 p = {log_p}: need log2 p + 8 <= log2 q' <= 32"
            )));
        }
        let need_bits = (2 * n as u64).ilog2() + log_q + 2;
        let prime = ntt_primes(need_bits.max(40), n, 1, &[])
            .and_then(|v| v.first().copied())
            .ok_or_else(|| FheError::InvalidParams(format!("no NTT prime for n = {n}")))?;
        let plan = NttPlan::new(n, prime).ok_or_else(|| FheError::InvalidParams("NTT plan".into()))?;
        Ok(Self { n, log_q, log_p, plan: NttPlanEq(plan) })
    }

    /// Ring degree `n`.
    pub fn n(&self) -> usize {
        self.n
    }
    /// `log2 q'`.
    pub fn log_q(&self) -> u32 {
        self.log_q
    }
    /// Plaintext modulus `p`.
    pub fn p(&self) -> u32 {
        1 << self.log_p
    }
    /// `Δ' = q'/p`.
    pub fn delta(&self) -> u32 {
        1 << (self.log_q - self.log_p)
    }
    /// `q' − 1` (the reduction mask).
    pub fn mask(&self) -> u32 {
        ((1u64 << self.log_q) - 1) as u32
    }
    /// `α = ⌊P/p⌋` (128 for LEAF): the scale of the message after [`switch_to_p`].
    pub fn alpha(&self) -> u64 {
        LEAF_P / self.p() as u64
    }

    /// The exact negacyclic product `a·s` over the integers (`a < q'`, `s` ternary).
    fn mul_secret(&self, a: &[u32], s_ntt: &[u64]) -> Vec<i64> {
        let plan = &self.plan.0;
        let mut x: Vec<u64> = a.iter().map(|&v| v as u64).collect();
        plan.forward(&mut x);
        plan.mul_assign(&mut x, s_ntt);
        plan.inverse(&mut x);
        let m = plan.modulus();
        x.into_iter().map(|v| m.center(v)).collect()
    }
}

/// The client's ternary RLWE secret `s̲ ∈ {−1, 0, 1}^n` (LEAF's underlined s).
#[derive(Clone)]
pub struct RlweSecretKey {
    s: Vec<i8>,
    s_ntt: Vec<u64>,
}

impl std::fmt::Debug for RlweSecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RlweSecretKey(..)")
    }
}

impl RlweSecretKey {
    /// A fresh uniform ternary secret.
    pub fn generate(params: &RlweParams, prg: &mut Prg) -> Self {
        let s: Vec<i8> = (0..params.n).map(|_| ternary(prg)).collect();
        let plan = &params.plan.0;
        let m = plan.modulus();
        let mut s_ntt: Vec<u64> = s.iter().map(|&v| m.reduce_i64(v as i64)).collect();
        plan.forward(&mut s_ntt);
        Self { s, s_ntt }
    }

    /// The coefficients (for the packing key, LEAF §3.2).
    pub fn coeffs(&self) -> &[i8] {
        &self.s
    }

    /// Encrypts one row `m ∈ Z_p^{≤n}` (coefficient encoding, missing entries 0).
    pub fn encrypt(&self, params: &RlweParams, m: &[u32], prg: &mut Prg) -> Result<RlweCt, FheError> {
        let n = params.n;
        if m.len() > n {
            return Err(FheError::InvalidParams(format!("{} values in a ring of degree {n}", m.len())));
        }
        let (mask, p, delta) = (params.mask(), params.p(), params.delta());
        if let Some(v) = m.iter().find(|&&v| v >= p) {
            return Err(FheError::InvalidParams(format!("message {v} not below p = {p}")));
        }
        let a: Vec<u32> = (0..n).map(|_| prg.next_u32() & mask).collect();
        let dm: Vec<u32> = (0..n).map(|k| m.get(k).map_or(0, |&v| v.wrapping_mul(delta) & mask)).collect();
        let b = self.encrypt_raw_with_a(params, &dm, &a, prg)?;
        Ok(RlweCt { a, b })
    }

    /// `b = v + e − a·s (mod q')` for a given `a` (e.g. expanded from a public seed,
    /// [`expand_a`]): the ciphertext `(a, b)` of the raw phase `v` (each `< q'`, at most `n`
    /// values; the rest of `b` is not computed and stays 0). Used for values that are not
    /// messages of `Z_p` (shares of fixed-point numbers, [`crate::ffn`]).
    pub fn encrypt_raw_with_a(&self, params: &RlweParams, v: &[u32], a: &[u32], prg: &mut Prg) -> Result<Vec<u32>, FheError> {
        let n = params.n;
        if v.len() > n || a.len() != n {
            return Err(FheError::InvalidParams(format!("{} values / a of degree {} in a ring of degree {n}", v.len(), a.len())));
        }
        let mask = params.mask();
        let as_ = params.mul_secret(a, &self.s_ntt);
        Ok(v.iter()
            .zip(&as_)
            .map(|(&x, &y)| {
                let e = centered_binomial(prg, RLWE_ERROR_ETA);
                (x as i64 + e - y) as u32 & mask
            })
            .collect())
    }

    /// A public key: an encryption of zero `(a, −a·s + e)` (for [`RlwePublicKey::rerandomize`]).
    pub fn public_key(&self, params: &RlweParams, prg: &mut Prg) -> RlwePublicKey {
        let n = params.n;
        let a: Vec<u32> = (0..n).map(|_| prg.next_u32() & params.mask()).collect();
        let b = self.encrypt_raw_with_a(params, &vec![0; n], &a, prg).expect("degree n by construction");
        RlwePublicKey { ct: RlweCt { a, b } }
    }

    /// The phase `b + a·s mod q'` (= `Δ'·m + e`).
    pub fn phase(&self, params: &RlweParams, ct: &RlweCt) -> Vec<u32> {
        let as_ = params.mul_secret(&ct.a, &self.s_ntt);
        ct.b.iter().zip(&as_).map(|(&b, &x)| (b as i64 + x) as u32 & params.mask()).collect()
    }

    /// Decrypts to `m ∈ Z_p^n` (rounding the phase by `Δ'`).
    pub fn decrypt(&self, params: &RlweParams, ct: &RlweCt) -> Vec<u32> {
        let half = params.delta() / 2;
        let shift = params.log_q - params.log_p;
        self.phase(params, ct).into_iter().map(|v| (v.wrapping_add(half) & params.mask()) >> shift).collect()
    }

    /// The phase `b + a·s mod P` of a switched ciphertext (= `α·m + e'`).
    pub fn phase_p(&self, params: &RlweParams, ct: &SwitchedCt) -> Vec<u64> {
        // a < P < q' and the product is exact over the integers, so reduce it mod P.
        let as_ = params.mul_secret(&ct.a, &self.s_ntt);
        let p = LEAF_P as i64;
        ct.b.iter().zip(&as_).map(|(&b, &x)| (b as i64 + x).rem_euclid(p) as u64).collect()
    }
}

/// A coefficient-encoded RLWE ciphertext modulo `q'` (`a`, `b`: `n` coefficients `< q'`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RlweCt {
    pub a: Vec<u32>,
    pub b: Vec<u32>,
}

impl RlweCt {
    /// Wire form: `a` then `b`, each coefficient in `log2 q'` bits, little-endian bit order.
    pub fn to_bytes(&self, params: &RlweParams) -> Vec<u8> {
        let mut v = self.a.clone();
        v.extend_from_slice(&self.b);
        pack_bits(&v, params.log_q)
    }

    /// Parses [`RlweCt::to_bytes`]; a wrong length is an error.
    pub fn from_bytes(params: &RlweParams, bytes: &[u8]) -> Result<Self, FheError> {
        let n = params.n;
        let mut a = unpack_bits(bytes, params.log_q, 2 * n).map_err(|want| {
            FheError::InvalidParams(format!("RLWE ciphertext of {} bytes (want {want})", bytes.len()))
        })?;
        let b = a.split_off(n);
        Ok(RlweCt { a, b })
    }
}

/// `values` (each `< 2^bits`) as a little-endian bit string of `values.len()·bits` bits.
pub fn pack_bits(values: &[u32], bits: u32) -> Vec<u8> {
    let bits = bits as usize;
    let mut out = vec![0u8; (values.len() * bits).div_ceil(8)];
    let (mut acc, mut have, mut pos) = (0u64, 0usize, 0usize);
    for &v in values {
        acc |= ((v as u64) & ((1u64 << bits) - 1)) << have;
        have += bits;
        while have >= 8 {
            out[pos] = acc as u8;
            pos += 1;
            acc >>= 8;
            have -= 8;
        }
    }
    if have > 0 {
        out[pos] = acc as u8;
    }
    out
}

/// Inverse of [`pack_bits`] for `count` values; `Err(expected length)` when `bytes` has
/// another length.
pub fn unpack_bits(bytes: &[u8], bits: u32, count: usize) -> Result<Vec<u32>, usize> {
    let want = (count * bits as usize).div_ceil(8);
    if bytes.len() != want {
        return Err(want);
    }
    let mask = (1u64 << bits) - 1;
    let (mut acc, mut have, mut it) = (0u64, 0u32, bytes.iter());
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        while have < bits {
            acc |= (*it.next().unwrap_or(&0) as u64) << have;
            have += 8;
        }
        out.push((acc & mask) as u32);
        acc >>= bits;
        have -= bits;
    }
    Ok(out)
}

/// `count` uniform polynomials of `len` coefficients modulo `q'` expanded from a public seed
/// (the `a` parts of seeded ciphertexts and keys: the sender transmits the seed instead).
pub fn expand_a(params: &RlweParams, seed: [u8; 16], count: usize, len: usize) -> Vec<Vec<u32>> {
    let mut prg = Prg::new(seed);
    let mask = params.mask();
    (0..count).map(|_| (0..len).map(|_| prg.next_u32() & mask).collect()).collect()
}

/// The client's RLWE public key `(a, −a·s̲ + e)`: lets the server re-randomise a ciphertext
/// it computed before the client decrypts it (circuit privacy of the `a` part,
/// [`crate::ffn`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RlwePublicKey {
    pub ct: RlweCt,
}

impl RlwePublicKey {
    /// Adds a fresh encryption of zero, `(u·a_pk + e_2, u·b_pk + e_1)` with `u` ternary and
    /// `e_1`, `e_2` centred binomial: the result's `a` is pseudo-uniform and independent of
    /// how `ct` was computed (RLWE); the phase grows by `u·e_pk + e_1 + e_2·s̲` (σ ≈ 110).
    pub fn rerandomize(&self, params: &RlweParams, ct: &mut RlweCt, prg: &mut Prg) {
        let plan = &params.plan.0;
        let m = plan.modulus();
        let mut u: Vec<u64> = (0..params.n).map(|_| m.reduce_i64(ternary(prg) as i64)).collect();
        plan.forward(&mut u);
        let ua = params.mul_secret(&self.ct.a, &u);
        let ub = params.mul_secret(&self.ct.b, &u);
        let mask = params.mask();
        for (x, y) in ct.a.iter_mut().zip(&ua) {
            *x = (*x as i64 + y + centered_binomial(prg, RLWE_ERROR_ETA)) as u32 & mask;
        }
        for (x, y) in ct.b.iter_mut().zip(&ub) {
            *x = (*x as i64 + y + centered_binomial(prg, RLWE_ERROR_ETA)) as u32 & mask;
        }
    }

    /// Wire form (that of the ciphertext).
    pub fn to_bytes(&self, params: &RlweParams) -> Vec<u8> {
        self.ct.to_bytes(params)
    }

    /// Parses [`RlwePublicKey::to_bytes`].
    pub fn from_bytes(params: &RlweParams, bytes: &[u8]) -> Result<Self, FheError> {
        Ok(RlwePublicKey { ct: RlweCt::from_bytes(params, bytes)? })
    }
}

/// An RLWE ciphertext modulo `P = 65537` after [`switch_to_p`] (coefficients `< P`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwitchedCt {
    pub a: Vec<u32>,
    pub b: Vec<u32>,
}

/// PCMM (LEAF Alg. 4 step 1; ref. [1]): `d = W.len() / l` output ciphertexts, output `k`
/// `= Σ_i W[k, i]·ct_i`, i.e. the two integer matrix products `W·B` and `W·A` (rows of `A`,
/// `B` = the ciphertexts' coefficient vectors) modulo `q'`, no HE operation. `w` is row-major
/// `d × l` with `l = cts.len()`; it encrypts row `k` of `W·M mod p`. Any integer weights are
/// accepted; the noise grows as `‖W[k,·]‖₂` (module docs).
pub fn pcmm(params: &RlweParams, w: &[i32], cts: &[RlweCt]) -> Result<Vec<RlweCt>, FheError> {
    let (l, n) = (cts.len(), params.n);
    if l == 0 || !w.len().is_multiple_of(l) {
        return Err(FheError::InvalidParams(format!("PCMM: {} weights for {l} ciphertexts", w.len())));
    }
    if let Some(c) = cts.iter().find(|c| c.a.len() != n || c.b.len() != n) {
        return Err(FheError::InvalidParams(format!("PCMM: a ciphertext of degree {} in a ring of {n}", c.a.len())));
    }
    let mask = params.mask();
    let d = w.len() / l;
    Ok((0..d)
        .into_par_iter()
        .map(|k| {
            let mut a = vec![0u32; n];
            let mut b = vec![0u32; n];
            for (i, &wk) in w[k * l..(k + 1) * l].iter().enumerate() {
                if wk == 0 {
                    continue;
                }
                // wrapping u32 arithmetic is exact modulo 2^32, hence modulo q' = 2^log_q
                let wk = wk as u32;
                for (x, &y) in a.iter_mut().zip(&cts[i].a) {
                    *x = x.wrapping_add(wk.wrapping_mul(y));
                }
                for (x, &y) in b.iter_mut().zip(&cts[i].b) {
                    *x = x.wrapping_add(wk.wrapping_mul(y));
                }
            }
            a.iter_mut().chain(b.iter_mut()).for_each(|x| *x &= mask);
            RlweCt { a, b }
        })
        .collect())
}

/// Modulus switch `q' → P` (LEAF Alg. 4 step 2): every coefficient `x ↦ round(P·x/q')`
/// (mod P). The message scale becomes `P/p` (`= α + 1/p`, absorbed in the noise: below 1 for
/// every `m < p`).
pub fn switch_to_p(params: &RlweParams, ct: &RlweCt) -> SwitchedCt {
    let (lq, half) = (params.log_q, 1u64 << (params.log_q - 1));
    let f = |x: &u32| (((*x as u64) * LEAF_P + half) >> lq) as u32 % LEAF_P as u32;
    SwitchedCt { a: ct.a.iter().map(f).collect(), b: ct.b.iter().map(f).collect() }
}

/// `⌊(x + α/2)/α⌋ mod p` for a phase `x = α·m + e` modulo `P`: the message when `|e| < α/2`
/// (the decoding the functional-bootstrapping table applies, [`crate::fbs_poly`]).
pub fn decode_p(params: &RlweParams, x: u64) -> u32 {
    let alpha = params.alpha();
    (((x + alpha / 2) / alpha) % params.p() as u64) as u32
}

/// The modulus of the reduction in [`RlweParams::mul_secret`] (for tests).
#[doc(hidden)]
pub fn product_prime(params: &RlweParams) -> Modulus {
    *params.plan.0.modulus()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insecure_and_malformed_sets_are_refused() {
        assert!(RlweParams::leaf().is_ok());
        // LEAFc's 30-bit modulus at n = 1024 is above the 27-bit bound
        assert!(matches!(RlweParams::new(1024, 30, 9), Err(FheError::Insecure(_))));
        assert!(matches!(RlweParams::new(512, 20, 9), Err(FheError::InvalidParams(_))));
        assert!(RlweParams::new(1024, 27, 20).is_err());
        assert!(RlweParams::new(2048, 32, 9).is_ok());
        assert!(RlweParams::new(2048, 33, 9).is_err());
    }

    #[test]
    fn product_prime_covers_the_exact_product() {
        let p = RlweParams::leaf().unwrap();
        assert!(product_prime(&p).value() > 2 * 1024 * (1u64 << 27));
    }

    #[test]
    fn encrypt_decrypt_and_noise() {
        let params = RlweParams::leaf().unwrap();
        let mut prg = Prg::new([7; 16]);
        let sk = RlweSecretKey::generate(&params, &mut prg);
        let m: Vec<u32> = (0..1024).map(|i| (i * 37 % 512) as u32).collect();
        let ct = sk.encrypt(&params, &m, &mut prg).unwrap();
        assert_eq!(sk.decrypt(&params, &ct), m);
        let ph = sk.phase(&params, &ct);
        let worst = ph
            .iter()
            .zip(&m)
            .map(|(&x, &v)| ((x.wrapping_sub(v * params.delta()) & params.mask()) as i32).wrapping_shl(5) >> 5)
            .map(|e| e.unsigned_abs())
            .max()
            .unwrap();
        assert!(worst <= 21, "fresh noise {worst} > η");
        assert!(sk.encrypt(&params, &[512], &mut prg).is_err());
        let bytes = ct.to_bytes(&params);
        assert_eq!(bytes.len(), 2 * 1024 * 27 / 8);
        assert_eq!(RlweCt::from_bytes(&params, &bytes).unwrap(), ct);
        assert!(RlweCt::from_bytes(&params, &bytes[1..]).is_err());
        assert!(sk.encrypt(&params, &vec![0; 1025], &mut prg).is_err());
    }
}
