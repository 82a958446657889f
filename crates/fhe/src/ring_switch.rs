//! Modulus and ring switching back to the coefficient RLWE (LEAF §3.5, Alg. 4 steps 8–9;
//! REFERENCE.md §6.6): a coefficient-encoded BFV ciphertext of degree `N` (after
//! [`crate::s2c`]) becomes `N/n` RLWE ciphertexts of degree `n` modulo `q'`.
//!
//! With `s'(X) = s̲(X^{N/n})` (the RLWE secret spread over every `(N/n)`-th coefficient) and
//! `c = Σ_t X^t·c_t(X^{N/n})`, the product `c1·s'` splits as `Σ_t X^t·(c1_t·s̲)(X^{N/n})` with
//! `c1_t·s̲` in `R_n` (`X^N = −1 = (X^{N/n})^n`), so `(c1_t, c0_t)` — coefficients
//! `i·(N/n) + t` of the switched ciphertext — is an RLWE ciphertext of coefficient
//! `i·(N/n) + t` of the message under `s̲`.
//!
//! Order (a documented choice): the ciphertext is first switched down to one prime `q0`, then
//! key-switched from the BFV secret `s` to `s'` (one digit: the cheapest place for it), then
//! every coefficient is scaled from `q0` to `q' = 2^27` (`x ↦ round(q'·x/q0)`). The BFV
//! message `α·g` then reads, under the RLWE scale `Δ' = q'/p`, as `g` up to `q'·α·g/P − Δ'·g
//! = −Δ'·g/P` (below `2^9` for `g < p`) plus the switches' rounding — far below `Δ'/2 = 2^17`.
//! The key-switching key is the client's (`ring_switch_key`), sent with the other evaluation keys.

use crate::lt::he;
use crate::rlwe::{RlweCt, RlweParams, RlweSecretKey};
use crate::FheError;
use nectar_he::{Ciphertext, Params, SecretKey, SwitchingKey};
use nectar_math::Prg;

/// The client's key-switching key from its BFV secret to `s'(X) = s̲(X^{N/n})`.
pub fn ring_switch_key(params: &Params, bfv_sk: &SecretKey, rlwe_sk: &RlweSecretKey, prg: &mut Prg) -> Result<SwitchingKey, FheError> {
    let s = rlwe_sk.coeffs();
    let big = params.n();
    if s.is_empty() || !big.is_multiple_of(s.len()) {
        return Err(FheError::InvalidParams(format!("RLWE degree {} does not divide N = {big}", s.len())));
    }
    let per = big / s.len();
    let spread: Vec<i64> = (0..big).map(|k| if k % per == 0 { s[k / per] as i64 } else { 0 }).collect();
    let target = SecretKey::from_ternary(params, &spread).map_err(he)?;
    target.switching_key_from(params, bfv_sk, prg).map_err(he)
}

/// Ring switching (module docs): `N/n` RLWE ciphertexts modulo `q'`; ciphertext `t`
/// coefficient `i` carries coefficient `i·(N/n) + t` of `ct`'s message.
pub fn ring_switch(params: &Params, rp: &RlweParams, ct: &Ciphertext, key: &SwitchingKey) -> Result<Vec<RlweCt>, FheError> {
    let (big, n) = (params.n(), rp.n());
    if !big.is_multiple_of(n) || n > big {
        return Err(FheError::InvalidParams(format!("RLWE degree {n} does not divide N = {big}")));
    }
    let mut c = ct.clone();
    c.mod_switch_to(params, 1).map_err(he)?;
    let mut c = c.switch_key(params, key).map_err(he)?;
    c.to_coeff(params);
    let q0 = params.q_moduli()[0].value() as u128;
    let lq = rp.log_q();
    let scale = |x: u64| -> u32 { ((((x as u128) << lq) + q0 / 2) / q0) as u32 & rp.mask() };
    let (c0, c1) = (c.c0().limb(0), c.c1().limb(0));
    let per = big / n;
    Ok((0..per)
        .map(|t| RlweCt {
            a: (0..n).map(|i| scale(c1[i * per + t])).collect(),
            b: (0..n).map(|i| scale(c0[i * per + t])).collect(),
        })
        .collect())
}
