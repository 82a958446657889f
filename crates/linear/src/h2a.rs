//! H2A: from an RLWE ciphertext held by one party (the *masker*) to additive shares of its
//! plaintext, the key owner decrypting (BumbleBee App. C, Alg. 4; REFERENCE.md §1.3).
//!
//! **Coeff branch** (coefficient encoding, `t = 2^64`; OLT): the masker draws `r̂` uniformly from
//! `R_q` (all of it, so the decryptor's view `c0 + c1·s` is uniform and hides the noise
//! perfectly), adds a fresh public-key encryption of zero (re-randomises `c1`) and `(r̂, 0)`,
//! and keeps `−⌊t·r̂/q⌉ mod t` as its share; the key owner's share is the decryption.
//! The shares sum to `m + ε`, `ε ∈ {0, ±1}`, and `ε ≠ 0` only when `t·r̂/q` falls within
//! `δ = t·|e|/q` of a rounding boundary (probability `≈ 2δ` per coefficient). `δ` does not change
//! under modulus switching; for an OLT it is set by the product noise at the top level
//! (`|e| ≈ 2^71` for 64-bit plaintexts with `m_w·n_w = N` terms against `q ≈ 2^163`), i.e. an
//! error probability of roughly `2^-27` per entry (none seen in the `1.3·10^5` entries checked by
//! the benchmarks). Products with a server's small weights run at the response level instead
//! ([`crate::olt::product_level`]), where their noise (`σ ≤ 2^-22·q_L/t`) keeps `δ` below about
//! `2^-21`. BumbleBee (App. C, after Cheetah) accepts this LSB error because a truncation
//! always follows a fixed-point product.
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

/// Bits of the plaintext modulus `t_j` (`t_j ≤ 2^bits`, exact for a power of two): the ring
/// an OLT under `params` computes in (`2^64` for [`Params::bumblebee_olt`], `2^51` for
/// [`Params::nectar_olt_narrow`]).
pub fn plain_bits(params: &Params, j: usize) -> u32 {
    128 - (params.plain_modulus(j) - 1).leading_zeros()
}

/// The smallest level whose modulus keeps `t·|e|/q ≤ 2^-20` for the noise of a mod-switched
/// ciphertext (about 2^28 including key switching): `log2 q ≥ log2 t + 48` (AGREEMENT).
pub fn response_level(params: &Params, plain_bits: u32) -> usize {
    (1..=params.max_level())
        .find(|&l| params.q_bits(l) >= plain_bits + 48)
        .unwrap_or(params.max_level())
}

/// [`response_level`] for an OLT's own plaintext modulus ([`plain_bits`]).
pub fn olt_response_level(params: &Params) -> usize {
    response_level(params, plain_bits(params, 0))
}

/// Masker side of the Coeff branch: re-randomises and masks `ct` in place (it must be at the
/// level it will be sent at) and returns the masker's share (`N` coefficients mod `2^64`).
pub fn mask_coeff(
    sess: &HeSession,
    ct: &mut Ciphertext,
    prg: &mut Prg,
) -> Result<Vec<u64>, LinearError> {
    let params = &sess.params;
    let level = ct.level();
    let zero = sess
        .peer_pk
        .encrypt_zero(params, level, ct.plain_index(), prg)?;
    ct.to_coeff(params);
    ct.add_assign(params, &zero)?;
    let moduli = &params.q_moduli()[..level];
    let n = params.n();
    // r̂ uniform in R_q: uniform residues per prime (CRT).
    let r: Vec<Vec<u64>> = moduli
        .iter()
        .map(|m| (0..n).map(|_| uniform_below(prg, m.value())).collect())
        .collect();
    ct.add_c0_assign(params, &r)?;
    let basis = RnsBasis::new(moduli).ok_or_else(|| LinearError::BadParams("RNS basis".into()))?;
    let sr = basis.scale_round_constants(params.plain_modulus(ct.plain_index()));
    Ok((0..n)
        .map(|k| {
            sr.apply(moduli, r.iter().map(|limb| limb[k]))
                .wrapping_neg()
        })
        .collect())
}

/// Key-owner side (both branches): the decryption is the share.
pub fn open(sess: &HeSession, ct: &Ciphertext) -> Result<Vec<u64>, LinearError> {
    Ok(sess.sk.decrypt(&sess.params, ct)?.coeffs().to_vec())
}

/// The most coefficients one party may noise-flood under one session key: `2^36` (about
/// 6.9·10^10; one MiniLM inference floods about 2^25–2^27). SECURITY, AGREEMENT: the flooding
/// width carries these bits so that the statistical distance of the WHOLE session stays below
/// `2^−40` (union bound over the flooded coefficients); a session that would exceed the budget
/// fails with an error (re-key by reconnecting) rather than degrade.
pub const SESSION_FLOODS_LOG2: u32 = 36;

/// `log2` of the number of keys one party floods under per session: 2 (the bOLEe key set and
/// its narrow variant for rings `l ≤ 32`, each with its own [`SESSION_FLOODS_LOG2`] budget).
/// SECURITY, AGREEMENT.
pub const SESSION_KEYS_LOG2: u32 = 1;

/// The noise bound of a SIMD product before flooding, in bits: `log2 t_j − 1` for the centred
/// plaintext, `⌈log2(2·√N·6·σ)⌉` for the fresh encryption noise it multiplies (REFERENCE.md
/// §1.2, the artifact's rule), and `⌈log2 terms⌉` for a sum of `terms` such products (Π_mul
/// answers two: `q(x0)⊠y1 + q(y0)⊠x1`).
pub fn product_noise_bits(params: &Params, j: usize, terms: usize) -> u32 {
    let tb = 128 - (params.plain_modulus(j) - 1).leading_zeros();
    let n = params.n() as f64;
    let spread = (2.0 * n.sqrt() * 6.0 * 3.19).log2().ceil() as u32;
    let sum = (terms.max(1) as f64).log2().ceil() as u32;
    (tb - 1) + spread + sum
}

/// Flooding width for the SIMD branch: 40 bits of statistical distance per SESSION above the
/// noise of a sum of `terms` products, i.e. `40 + SESSION_FLOODS_LOG2 + SESSION_KEYS_LOG2 +
/// product_noise_bits` (136 bits for 47-bit `t_j`, `N = 8192`, two terms; the artifact's 98-bit
/// rule gives 40 bits per coefficient only, about 2^−13 for a whole inference).
pub fn flood_bits(params: &Params, j: usize, terms: usize) -> u32 {
    STAT_SECURITY_BITS + SESSION_FLOODS_LOG2 + SESSION_KEYS_LOG2 + product_noise_bits(params, j, terms)
}

/// The statistical security, in bits, of a session in which a party floods at most
/// `2^SESSION_FLOODS_LOG2` coefficients under each of at most `2^SESSION_KEYS_LOG2` keys, each
/// a sum of at most `terms` products: `flood − noise − log2(budget)` (union bound), the minimum
/// over the CRT components.
pub fn session_security_bits(params: &Params, terms: usize) -> u32 {
    (0..params.plain_count())
        .map(|j| {
            flood_bits(params, j, terms) - product_noise_bits(params, j, terms) - SESSION_FLOODS_LOG2 - SESSION_KEYS_LOG2
        })
        .min()
        .unwrap_or(0)
}

/// Masker side of the SIMD branch for component `j`: `ct ← ct − Enc(z0) + flood + Enc_pk(0)`;
/// returns `z0` (the plaintext polynomial's coefficients, uniform in `R_{t_j}`). `terms`: the
/// number of products summed in `ct` (sizes the flood). Counts the `N` flooded coefficients
/// against the session budget and fails once it would be exceeded.
pub fn mask_simd(
    sess: &HeSession,
    ct: &mut Ciphertext,
    terms: usize,
    prg: &mut Prg,
) -> Result<Vec<u64>, LinearError> {
    let params = &sess.params;
    let j = ct.plain_index();
    let n = params.n() as u64;
    let before = sess.flooded.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    if before.saturating_add(n) > 1u64 << SESSION_FLOODS_LOG2 {
        return Err(LinearError::Unsupported(format!(
            "this session has noise-flooded 2^{SESSION_FLOODS_LOG2} coefficients, its statistical-security \
             budget; start a new session (reconnect) to continue"
        )));
    }
    let t = params.plain_modulus(j) as u64;
    let z0: Vec<u64> = (0..params.n()).map(|_| uniform_below(prg, t)).collect();
    ct.to_coeff(params);
    ct.sub_plain_assign(params, &Plaintext::from_coeffs(params, &z0, j)?)?;
    ct.flood(params, flood_bits(params, j, terms), prg)?;
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
    (1..=params.max_level())
        .find(|&l| params.q_bits(l) >= tb + 10)
        .unwrap_or(params.max_level())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_he::{PlainNtt, SecretKey};

    fn session(params: Params, seed: u8) -> HeSession {
        let mut prg = Prg::new([seed; 16]);
        let sk = SecretKey::generate(&params, &mut prg);
        let pk = sk.public_key(&params, &mut prg);
        HeSession::from_keys(params, sk, pk, None)
    }

    /// Histogram of the top 4 bits of `vals` (values in `[0, 2^bits)`).
    fn hist(vals: &[u64], bits: u32) -> [usize; 16] {
        let mut h = [0usize; 16];
        vals.iter()
            .for_each(|&v| h[(v >> (bits - 4)) as usize & 15] += 1);
        h
    }

    fn assert_uniform(h: &[usize; 16], total: usize) {
        let e = total as f64 / 16.0;
        for &c in h {
            // ±6 standard deviations of a binomial bucket.
            assert!((c as f64 - e).abs() < 6.0 * e.sqrt(), "{h:?}");
        }
    }

    /// The key owner's view of a Coeff-masked ciphertext: the phase is uniform mod q (noise
    /// hidden) and the decrypted share is uniform whatever the message.
    #[test]
    fn coeff_mask_hides_message_and_noise() {
        let s = session(Params::bumblebee_olt(), 1);
        let p = &s.params;
        let mut prg = Prg::new([2; 16]);
        let lvl = response_level(p, 64);
        for msg in [0u64, u64::MAX / 3] {
            let m = vec![msg; p.n()];
            let mut ct =
                s.sk.encrypt(p, &Plaintext::from_coeffs(p, &m, 0).unwrap(), &mut prg)
                    .unwrap();
            ct.mod_switch_to(p, lvl).unwrap();
            let z0 = mask_coeff(&s, &mut ct, &mut prg).unwrap();
            let noise = s.sk.noise(p, &ct).unwrap();
            // The residual `phase − Δ·z1` fills the whole rounding interval `±q/(2t)`: the
            // ciphertext noise is drowned by the uniform mask.
            assert!(
                noise.budget_bits <= 0,
                "mask does not cover the rounding interval: {noise:?}"
            );
            let z1 = open(&s, &ct).unwrap();
            assert_uniform(&hist(&z1, 64), p.n());
            let bad = z0
                .iter()
                .zip(&z1)
                .filter(|(a, b)| a.wrapping_add(**b) != msg)
                .count();
            assert!(bad <= 2, "{bad} coefficients off");
        }
    }

    /// SIMD branch: the flooded noise is at least 40 + SESSION_FLOODS_LOG2 bits above the
    /// measured product noise (40 bits for the whole session), and the decrypted share is
    /// uniform in Z_t whatever the message.
    #[test]
    fn simd_mask_floods_and_hides() {
        let s = session(Params::bumblebee_bole(), 3);
        let p = &s.params;
        let mut prg = Prg::new([4; 16]);
        let t = p.plain_modulus(0) as u64;
        assert_eq!(flood_bits(p, 0, 1), 135);
        assert_eq!(flood_bits(p, 0, 2), 136);
        assert_eq!(session_security_bits(p, 2), STAT_SECURITY_BITS);
        for msg in [0u64, t / 2] {
            let pt = p.encode_simd(&vec![msg; p.n()], 0).unwrap();
            let ct0 = s.sk.encrypt(p, &pt, &mut prg).unwrap();
            let y = p.encode_simd(&vec![t - 12345; p.n()], 0).unwrap();
            let mut ct = ct0
                .mul_plain(p, &PlainNtt::new(p, &y, p.max_level()).unwrap())
                .unwrap();
            let before = s.sk.noise(p, &ct).unwrap().noise_bits;
            let z0 = mask_simd(&s, &mut ct, 1, &mut prg).unwrap();
            assert!(
                flood_bits(p, 0, 1) >= before + STAT_SECURITY_BITS + SESSION_FLOODS_LOG2 + SESSION_KEYS_LOG2,
                "noise {before} bits"
            );
            assert!(before <= product_noise_bits(p, 0, 1), "noise {before} bits above the bound");
            let z1 = open(&s, &ct).unwrap();
            let slots = p
                .decode_simd(&Plaintext::from_coeffs(p, &z1, 0).unwrap())
                .unwrap();
            let tb = 64 - t.leading_zeros();
            assert_uniform(
                &hist(
                    &slots
                        .iter()
                        .map(|v| v % (1 << (tb - 1)))
                        .collect::<Vec<_>>(),
                    tb - 1,
                ),
                p.n(),
            );
            let z0s = p
                .decode_simd(&Plaintext::from_coeffs(p, &z0, 0).unwrap())
                .unwrap();
            let want = ((msg as u128 * (t - 12345) as u128) % t as u128) as u64;
            assert!(slots
                .iter()
                .zip(&z0s)
                .all(|(a, b)| (*a as u128 + *b as u128) % t as u128 == want as u128));
        }
    }

    /// The session budget is enforced: flooding stops with an error once `2^36` coefficients
    /// would be exceeded.
    #[test]
    fn session_flood_budget_is_enforced() {
        let s = session(Params::bumblebee_bole(), 5);
        let p = &s.params;
        let mut prg = Prg::new([6; 16]);
        let pt = p.encode_simd(&vec![1; p.n()], 0).unwrap();
        let mut ct = s.sk.encrypt(p, &pt, &mut prg).unwrap();
        s.flooded.store((1u64 << SESSION_FLOODS_LOG2) - p.n() as u64, std::sync::atomic::Ordering::Relaxed);
        assert!(mask_simd(&s, &mut ct.clone(), 1, &mut prg).is_ok());
        let e = mask_simd(&s, &mut ct, 1, &mut prg).unwrap_err();
        assert!(e.to_string().contains("budget"), "{e}");
    }
}
