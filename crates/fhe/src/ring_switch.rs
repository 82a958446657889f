//! Modulus and ring switching back to the coefficient RLWE (LEAF §3.5, Alg. 4 steps 8–9;
//! REFERENCE.md §6.6): a coefficient-encoded BFV ciphertext of degree `N` (after
//! [`crate::s2c`]) becomes `N/n` RLWE ciphertexts of degree `n` modulo `q' = 2^27`.
//!
//! With `s'(X) = s̲(X^{N/n})` (the RLWE secret spread over every `(N/n)`-th coefficient) and
//! `c = Σ_t X^t·c_t(X^{N/n})`, the product `c1·s'` splits as `Σ_t X^t·(c1_t·s̲)(X^{N/n})` with
//! `c1_t·s̲` in `R_n` (`X^N = −1 = (X^{N/n})^n`), so `(c1_t, c0_t)` — coefficients
//! `i·(N/n) + t` of a ciphertext under `s'` — is an RLWE ciphertext of coefficient
//! `i·(N/n) + t` of the message under `s̲`.
//!
//! **Order (SECURITY).** LEAF switches the modulus first, `Q → q'`, and only then the key,
//! `s → s'`, at `q'`. The order matters: every polyphase component of a key-switching key
//! towards `s'` is an RLWE sample of dimension `n` under `s̲`, so that key must live modulo a
//! `q'` that is secure at dimension `n` (27 bits at `n = 1024`); made at the BFV modulus (669
//! bits) it would hand the server `s̲`, and through it the BFV secret. So: switch the BFV
//! ciphertext down to one prime `q0`, scale every coefficient to `q'` (`x ↦ round(q'·x/q0)`),
//! then key-switch modulo `q'` with a digit decomposition in base `2^`[`RS_DIGIT_BITS`]
//! ([`RingSwitchKey`]: `(a_k, b_k = −a_k·s' + e_k + 2^{k·b}·s)` for every digit `k`),
//! then split.
//!
//! **Noise.** The scaling adds the rounding of `c1` times the dense BFV secret,
//! σ ≈ √(N·(2/3)/12) ≈ 42 at `N = 32768`; the key switch adds `Σ_k D_k·e_k`,
//! σ ≈ √(d·N·E[D²])·3.24: with one-bit digits (`b = 1`, `d = 27`, `E[D²] = 1/2`) ≈ 2^11 at
//! `N = 32768` (3-bit digits: ≈ 2^12.8, nine digits, a third of the key). The RLWE message `g`
//! sits at the scale `Δ' = q'/p = 2^18` (the BFV message `α·g` reads as `g` up to
//! `−Δ'·g/P < 2^9`), so the total stays far below the decoding bound `Δ'/2 = 2^17`; the suite
//! keeps the whole phase as a fixed-point value ([`crate::ffn`]: `2^20` per unit), where the
//! one-bit digits' 2^11 is ≈ 0.002 (3-bit digits: ≈ 0.007, enough to lower MiniLM's cosine
//! from 0.9994 to 0.9990).

use crate::lt::he;
use crate::rlwe::{expand_a, RlweCt, RlweParams, RlweSecretKey, RLWE_ERROR_ETA};
use crate::FheError;
use nectar_he::{Ciphertext, Params, SecretKey};
use nectar_math::modulus::ntt_primes;
use nectar_math::ntt::NttPlan;
use nectar_math::sample::centered_binomial;
use nectar_math::Prg;

/// Bits per digit of the key switching modulo `q'` (AGREEMENT): one, for the least noise (module
/// docs); the key is `27 × N × 27` bits ≈ 3 MB at `N = 32768`.
pub const RS_DIGIT_BITS: u32 = 1;

/// The ring-switching key (client → server): per digit `k`, `(a_k, b_k)` modulo `q'` with
/// `b_k + a_k·s' = e_k + 2^{k·b}·s`, kept in NTT form over an exact-product prime.
pub struct RingSwitchKey {
    plan: NttPlan,
    /// `(NTT(a_k), NTT(b_k))` of the centred residues.
    digits: Vec<(Vec<u64>, Vec<u64>)>,
    log_q: u32,
    /// The public seed of every `a_k` (the wire form carries it instead of the `a_k`).
    seed: [u8; 16],
    /// The `b_k` modulo `q'` (wire form).
    b_raw: Vec<Vec<u32>>,
}

impl RingSwitchKey {
    /// Wire form: the seed of the `a_k`, then every `b_k` in `log2 q'` bits per coefficient
    /// (`27 × N × 27` bits ≈ 3 MB at `N = 32768`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.seed.to_vec();
        let all: Vec<u32> = self.b_raw.iter().flatten().copied().collect();
        out.extend(crate::rlwe::pack_bits(&all, self.log_q));
        out
    }

    /// Parses [`RingSwitchKey::to_bytes`] for the BFV degree of `params` and the RLWE set `rp`.
    pub fn from_bytes(params: &Params, rp: &RlweParams, bytes: &[u8]) -> Result<Self, FheError> {
        let big = params.n();
        let lq = rp.log_q();
        let digits = lq.div_ceil(RS_DIGIT_BITS) as usize;
        if bytes.len() < 16 {
            return Err(FheError::Malformed("ring-switching key shorter than its seed".into()));
        }
        let mut seed = [0u8; 16];
        seed.copy_from_slice(&bytes[..16]);
        let all = crate::rlwe::unpack_bits(&bytes[16..], lq, digits * big)
            .map_err(|want| FheError::Malformed(format!("ring-switching key of {} bytes (want {})", bytes.len(), want + 16)))?;
        let b_raw: Vec<Vec<u32>> = all.chunks(big).map(|c| c.to_vec()).collect();
        Self::assemble(big, rp, seed, b_raw)
    }

    /// The key from its seed and `b_k` (NTT forms computed here).
    fn assemble(big: usize, rp: &RlweParams, seed: [u8; 16], b_raw: Vec<Vec<u32>>) -> Result<Self, FheError> {
        let lq = rp.log_q();
        let plan = exact_plan(big, lq)?;
        let a = expand_a(rp, seed, b_raw.len(), big);
        let digits = a.iter().zip(&b_raw).map(|(a, b)| (to_ntt_centred(&plan, a, lq), to_ntt_centred(&plan, b, lq))).collect();
        Ok(RingSwitchKey { plan, digits, log_q: lq, seed, b_raw })
    }
}


/// An NTT prime for degree `big` large enough for the exact products here: digit products
/// `Σ_k D_k·x_k` with `D_k < 2^b`, `|x_k| < 2^log_q`, `big` terms and `d` digits.
fn exact_plan(big: usize, log_q: u32) -> Result<NttPlan, FheError> {
    let digits = log_q.div_ceil(RS_DIGIT_BITS);
    let need = RS_DIGIT_BITS + log_q + big.ilog2() + digits.ilog2() + 3;
    let p = ntt_primes(need.max(50), big, 1, &[])
        .and_then(|v| v.first().copied())
        .ok_or_else(|| FheError::InvalidParams(format!("no {need}-bit NTT prime for N = {big}")))?;
    NttPlan::new(big, p).ok_or_else(|| FheError::InvalidParams("NTT plan".into()))
}

/// `x mod q'` (centred in `(−q'/2, q'/2]`) as residues modulo the plan's prime, transformed.
fn to_ntt_centred(plan: &NttPlan, x: &[u32], log_q: u32) -> Vec<u64> {
    let m = plan.modulus();
    let half = 1i64 << (log_q - 1);
    let mut v: Vec<u64> = x
        .iter()
        .map(|&c| {
            let c = c as i64;
            m.reduce_i64(if c >= half { c - (1i64 << log_q) } else { c })
        })
        .collect();
    plan.forward(&mut v);
    v
}

/// The client's key from its BFV secret `s` to `s'(X) = s̲(X^{N/n})`, modulo `q'`.
pub fn ring_switch_key(params: &Params, rp: &RlweParams, bfv_sk: &SecretKey, rlwe_sk: &RlweSecretKey, prg: &mut Prg) -> Result<RingSwitchKey, FheError> {
    let (big, n) = (params.n(), rp.n());
    let s_small = rlwe_sk.coeffs();
    if !big.is_multiple_of(n) || n > big {
        return Err(FheError::InvalidParams(format!("RLWE degree {n} does not divide N = {big}")));
    }
    let per = big / n;
    let s = bfv_sk.ternary_coeffs();
    let plan = exact_plan(big, rp.log_q())?;
    let m = *plan.modulus();
    let mut s_spread: Vec<u64> = (0..big).map(|k| if k % per == 0 { m.reduce_i64(s_small[k / per] as i64) } else { 0 }).collect();
    plan.forward(&mut s_spread);
    let (lq, mask) = (rp.log_q(), rp.mask());
    let digits = lq.div_ceil(RS_DIGIT_BITS);
    let seed = prg.gen_block();
    let all_a = expand_a(rp, seed, digits as usize, big);
    let mut b_raw = Vec::with_capacity(digits as usize);
    for (k, a) in all_a.iter().enumerate() {
        // a·s' exactly over the integers (|a| < 2^27, s' has n ternary entries)
        let mut as_ = a.iter().map(|&v| v as u64).collect::<Vec<_>>();
        plan.forward(&mut as_);
        plan.mul_assign(&mut as_, &s_spread);
        plan.inverse(&mut as_);
        let gadget = 1i64 << (k as u32 * RS_DIGIT_BITS);
        let b: Vec<u32> = (0..big)
            .map(|j| {
                let e = centered_binomial(prg, RLWE_ERROR_ETA);
                (e + gadget * s[j] - m.center(as_[j])) as u32 & mask
            })
            .collect();
        b_raw.push(b);
    }
    RingSwitchKey::assemble(big, rp, seed, b_raw)
}

/// Ring switching (module docs): `N/n` RLWE ciphertexts modulo `q'`; ciphertext `t`
/// coefficient `i` carries coefficient `i·(N/n) + t` of `ct`'s message.
pub fn ring_switch(params: &Params, rp: &RlweParams, ct: &Ciphertext, key: &RingSwitchKey) -> Result<Vec<RlweCt>, FheError> {
    let (big, n) = (params.n(), rp.n());
    if !big.is_multiple_of(n) || n > big || key.plan.n() != big || key.log_q != rp.log_q() {
        return Err(FheError::InvalidParams(format!("ring switching key for another shape (n = {n}, N = {big})")));
    }
    // 1. down to q0, then each coefficient scaled to q'
    let mut c = ct.clone();
    c.mod_switch_to(params, 1).map_err(he)?;
    c.to_coeff(params);
    let q0 = params.q_moduli()[0].value() as u128;
    let (lq, mask) = (rp.log_q(), rp.mask());
    let scale = |x: u64| -> u32 { ((((x as u128) << lq) + q0 / 2) / q0) as u32 & mask };
    let c0: Vec<u32> = c.c0().limb(0).iter().map(|&x| scale(x)).collect();
    let c1: Vec<u32> = c.c1().limb(0).iter().map(|&x| scale(x)).collect();
    // 2. key switch s -> s' modulo q': c1 = Σ_k D_k·2^{k·b}, (c0 + Σ D_k·b_k, Σ D_k·a_k)
    let plan = &key.plan;
    let m = *plan.modulus();
    let (mut acc0, mut acc1) = (vec![0u64; big], vec![0u64; big]);
    for (k, (a_k, b_k)) in key.digits.iter().enumerate() {
        let shift = k as u32 * RS_DIGIT_BITS;
        let mut d: Vec<u64> = c1.iter().map(|&x| ((x >> shift) & ((1 << RS_DIGIT_BITS) - 1)) as u64).collect();
        plan.forward(&mut d);
        plan.mul_accumulate(&mut acc0, &d, b_k);
        plan.mul_accumulate(&mut acc1, &d, a_k);
    }
    plan.inverse(&mut acc0);
    plan.inverse(&mut acc1);
    let back = |v: u64| (m.center(v) as u32) & mask;
    let new0: Vec<u32> = c0.iter().zip(&acc0).map(|(&x, &y)| x.wrapping_add(back(y)) & mask).collect();
    let new1: Vec<u32> = acc1.iter().map(|&y| back(y)).collect();
    // 3. split by polyphase component
    let per = big / n;
    Ok((0..per)
        .map(|t| RlweCt { a: (0..n).map(|i| new1[i * per + t]).collect(), b: (0..n).map(|i| new0[i * per + t]).collect() })
        .collect())
}
