//! H2A: from an RLWE ciphertext held by one party (the *masker*) to additive shares of its
//! plaintext, the key owner decrypting (BumbleBee App. C, Alg. 4; REFERENCE.md §1.3).
//!
//! **Coeff branch** (coefficient encoding, `t = 2^64`; OLT): the masker draws `r̂` uniformly from
//! `R_q` (all of it, so the decryptor's view `c0 + c1·s` is uniform and hides the noise
//! perfectly), adds a fresh public-key encryption of zero (re-randomises `c1`) and `(r̂, 0)`,
//! and keeps `−⌊t·r̂/q⌉ mod t` as its share; the key owner's share is the decryption.
//! The shares sum to `m + ε`, `ε ∈ {0, ±1}`, and `ε ≠ 0` only when `t·r̂/q` falls within
//! `t·|e|/q` of a rounding boundary: with the OLT parameters (`|e| ≲ 2^72` at the 114-bit response
//! level) that is a probability of about `2^-25` per coefficient. BumbleBee (App. C, after
//! Cheetah) accepts this LSB error because a truncation always follows a fixed-point product.
//!
//! **SIMD branch** (prime / CRT `t`; bOLEe): the masker draws its share `z0` uniformly from
//! `R_t` (per CRT prime), subtracts its encoding, floods the noise with `B'` bits
//! ([`flood_bits`]: 40 bits of statistical distance above the noise bound) and adds a fresh
//! encryption of zero; the key owner's share is the decryption. Exact (no LSB error).
//!
//! Cost: one ciphertext (at the response level) from the masker to the key owner.

use crate::session::HeSession;
use crate::LinearError;
use nectar_he::{Ciphertext, Params, Plaintext};
use nectar_math::rns::RnsBasis;
use nectar_math::sample::uniform_below;
use nectar_math::Prg;

/// Statistical security of noise flooding, in bits (SECURITY).
pub const STAT_SECURITY_BITS: u32 = 40;

/// The smallest level whose modulus keeps `t·|e|/q ≤ 2^-20` for the noise of a mod-switched
/// ciphertext (about 2^28 including key switching): `log2 q ≥ log2 t + 48` (AGREEMENT).
pub fn response_level(params: &Params, plain_bits: u32) -> usize {
    (1..=params.max_level()).find(|&l| params.q_bits(l) >= plain_bits + 48).unwrap_or(params.max_level())
}

/// Masker side of the Coeff branch: re-randomises and masks `ct` in place (it must be at the
/// level it will be sent at) and returns the masker's share (`N` coefficients mod `2^64`).
pub fn mask_coeff(sess: &HeSession, ct: &mut Ciphertext, prg: &mut Prg) -> Result<Vec<u64>, LinearError> {
    let params = &sess.params;
    let level = ct.level();
    let zero = sess.peer_pk.encrypt_zero(params, level, ct.plain_index(), prg)?;
    ct.to_coeff(params);
    ct.add_assign(params, &zero)?;
    let moduli = &params.q_moduli()[..level];
    let n = params.n();
    // r̂ uniform in R_q: uniform residues per prime (CRT).
    let r: Vec<Vec<u64>> = moduli.iter().map(|m| (0..n).map(|_| uniform_below(prg, m.value())).collect()).collect();
    add_to_c0(params, ct, &r)?;
    let basis = RnsBasis::new(moduli).ok_or_else(|| LinearError::BadParams("RNS basis".into()))?;
    let sr = basis.scale_round_constants(params.plain_modulus(ct.plain_index()));
    Ok((0..n).map(|k| sr.apply(moduli, r.iter().map(|limb| limb[k])).wrapping_neg()).collect())
}

/// Key-owner side (both branches): the decryption is the share.
pub fn open(sess: &HeSession, ct: &Ciphertext) -> Result<Vec<u64>, LinearError> {
    Ok(sess.sk.decrypt(&sess.params, ct)?.coeffs().to_vec())
}

/// Flooding width for the SIMD branch: `40 + log2 t_j + ⌈log2(2·√N·6·σ)⌉` bits
/// (REFERENCE.md §1.2, the artifact's rule; 98 bits for 47-bit `t_j` and `N = 8192`), an upper
/// bound on a product `ct ⊠ p` with `|p| < t_j/2`.
pub fn flood_bits(params: &Params, j: usize) -> u32 {
    let tb = 128 - (params.plain_modulus(j) - 1).leading_zeros();
    let n = params.n() as f64;
    let spread = (2.0 * n.sqrt() * 6.0 * 3.19).log2().ceil() as u32;
    STAT_SECURITY_BITS + (tb - 1) + spread
}

/// Masker side of the SIMD branch for component `j`: `ct ← ct − Enc(z0) + flood + Enc_pk(0)`;
/// returns `z0` (the plaintext polynomial's coefficients, uniform in `R_{t_j}`).
pub fn mask_simd(sess: &HeSession, ct: &mut Ciphertext, prg: &mut Prg) -> Result<Vec<u64>, LinearError> {
    let params = &sess.params;
    let j = ct.plain_index();
    let t = params.plain_modulus(j) as u64;
    let z0: Vec<u64> = (0..params.n()).map(|_| uniform_below(prg, t)).collect();
    ct.to_coeff(params);
    ct.sub_plain_assign(params, &Plaintext::from_coeffs(params, &z0, j)?)?;
    ct.flood(params, flood_bits(params, j), prg)?;
    let zero = sess.peer_pk.encrypt_zero(params, ct.level(), j, prg)?;
    ct.add_assign(params, &zero)?;
    ct.mod_switch_to(params, simd_response_level(params, j))?;
    Ok(z0)
}

/// Level a flooded SIMD ciphertext is switched down to before it is sent: the lowest whose
/// modulus has 10 bits above `t_j` (the artifact's rule: the flood, `2^{98}` at the top level,
/// shrinks with the modulus; the switching rounding stays below `q/(2t_j)`).
pub fn simd_response_level(params: &Params, j: usize) -> usize {
    let tb = 128 - (params.plain_modulus(j) - 1).leading_zeros();
    (1..=params.max_level()).find(|&l| params.q_bits(l) >= tb + 10).unwrap_or(params.max_level())
}

/// Adds the RNS polynomial `r` (one limb per prime of `ct`'s level, coefficient form) to `c0`.
///
/// `nectar-he` has no public operation adding an arbitrary `R_q` polynomial to `c0`, so the
/// trivial ciphertext `(r, 0)` is built in the HE layer's documented wire format (header, level,
/// plaintext index, flags = coefficient form, bit-packed residues) and added homomorphically.
/// To be replaced by a direct `Ciphertext` operation when the HE layer offers one.
fn add_to_c0(params: &Params, ct: &mut Ciphertext, r: &[Vec<u64>]) -> Result<(), LinearError> {
    let level = ct.level();
    let moduli = &params.q_moduli()[..level];
    if r.len() != level {
        return Err(LinearError::BadParams("mask limbs".into()));
    }
    let mut out = vec![b'N', b'H', nectar_he::serialize::WIRE_VERSION, 1];
    out.extend_from_slice(&params.fingerprint().to_le_bytes());
    out.extend_from_slice(&[level as u8, ct.plain_index() as u8, 0]);
    let (mut acc, mut nbits) = (0u128, 0u32);
    let zeros = vec![0u64; params.n()];
    for poly in [r, &vec![zeros; level][..]] {
        for (limb, m) in poly.iter().zip(moduli) {
            let b = m.bits();
            for &v in limb {
                acc |= (v as u128) << nbits;
                nbits += b;
                while nbits >= 8 {
                    out.push(acc as u8);
                    acc >>= 8;
                    nbits -= 8;
                }
            }
        }
    }
    if nbits > 0 {
        out.push(acc as u8);
    }
    let mask = Ciphertext::deserialize(params, &out)?;
    ct.add_assign(params, &mask)?;
    Ok(())
}
