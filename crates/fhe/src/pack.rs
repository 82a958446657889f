//! Coefficient-encoded RLWE → slot-encoded BFV (LEAF §3.2 Alg. 1; the linear transform of
//! App. A Alg. 5/6; REFERENCE.md §6.3): `N/n` RLWE ciphertexts modulo `P` (after
//! [`crate::rlwe::switch_to_p`]) become one BFV ciphertext whose slots hold their phases
//! `α·m_t[c] + e_t[c]`, ready for the functional-bootstrapping polynomial.
//!
//! The decryption of coefficient `c` of ciphertext `t` is an inner product (LEAF Eq. (5)):
//! `b_t[c] + ⟨a_t^(c), s̲⟩ mod P` with `a^(c) = [a_c, …, a_0, −a_{n−1}, …, −a_{c+1}]`. The
//! client's **packing key** encrypts `[s̲, s̲, …, s̲]` in the BFV slots; the server evaluates
//! `Ecd(b̄) + A·key` with `A` block-diagonal (one `n × n` block per ciphertext).
//!
//! **Layout (fixed here).** BFV slots in the row layout ([`crate::lt`]); ciphertext `t`'s
//! coefficient `c` lands in slot `t·n + c`, so each block of `n` consecutive slots is one RLWE
//! ciphertext in coefficient order (`n | N/2` keeps every block inside one row); with a packed
//! prefix of `used < n` coefficients ([`Packer::pack`]), slot `t·used + c`. LEAF orders
//! the slots for its ring switching (§3.5); that order is a permutation which
//! [`crate::s2c`] folds into its matrix, so the values come back in place.
//!
//! **The transform (deviation: `n` diagonals, not `N`).** Because the key is periodic with
//! period `n` and each block is `n` wide, `rot_r(key)` for `r ∈ [n]` already brings every
//! coefficient of `s̲` to every slot: `A·key = Σ_{r<n} α_r ⊙ rot_r(key)` with
//! `α_r[t·n + c] = a_t[0]` for `r = 0`, `a_t[n − r]` if `c + r ≥ n` and `−a_t[n − r]` otherwise
//! (derived from `a^(c)[(c + r) mod n]`). LEAF's Alg. 5 sums over all `N` diagonals of the
//! `N × N` matrix; for this block-diagonal family with a periodic input the other `N − n`
//! diagonals are zero. The baby steps `rot_b(key)` do not depend on the input, so they are
//! computed once per key ([`Packer::new`]) and kept in NTT form (Alg. 6); the giant steps are
//! [`crate::lt::bsgs`]'s, so the Galois keys are those of two rotations (by 1 and by `B`,
//! [`pack_galois_elements`]).
//!
//! **Noise (LEAF Lemma 1).** The products multiply the key's noise by at most `n·P/2` per
//! slot; the rotations add key-switching noise. Measured by [`nectar_he::SecretKey::noise`]
//! in the tests and the bench.

use crate::lt::{baby_steps, bsgs, he, LtStats, RowSlots};
use crate::rlwe::{RlweSecretKey, SwitchedCt, LEAF_P};
use crate::FheError;
use nectar_he::{Ciphertext, GaloisKeys, Params, SecretKey};
use nectar_math::Prg;

/// The Galois elements [`Packer`] needs: rotations by 1 (baby steps) and by `B` (giant steps).
pub fn pack_galois_elements(params: &Params, n: usize) -> Vec<u64> {
    nectar_he::bfv::row_galois_elements(params.n(), &[1, baby_steps(n) as i64], false)
}

fn check_shapes(params: &Params, n: usize) -> Result<(), FheError> {
    let big = params.n();
    if params.plain_modulus(0) != LEAF_P as u128 {
        return Err(FheError::InvalidParams(format!("packing needs the BFV plaintext modulus P = {LEAF_P}")));
    }
    if !n.is_power_of_two() || n < 2 || n > big / 2 {
        return Err(FheError::InvalidParams(format!("RLWE degree {n} must be a power of two dividing N/2 = {}", big / 2)));
    }
    Ok(())
}

/// The client's packing key: a BFV encryption (under its BFV key) of the slots
/// `[s̲, s̲, …, s̲]` (`N/n` copies of the RLWE secret, entries `−1 ↦ P − 1`), LEAF §3.2.
pub fn packing_key(params: &Params, bfv_sk: &SecretKey, rlwe_sk: &RlweSecretKey, prg: &mut Prg) -> Result<Ciphertext, FheError> {
    let s = rlwe_sk.coeffs();
    check_shapes(params, s.len())?;
    let slots: Vec<u64> = (0..params.n()).map(|j| (s[j % s.len()] as i64).rem_euclid(LEAF_P as i64) as u64).collect();
    let pt = RowSlots::new(params)?.encode(params, &slots)?;
    bfv_sk.encrypt(params, &pt, prg).map_err(he)
}

/// The server's side of the packing: the key's baby-step rotations, computed once.
pub struct Packer {
    params: Params,
    n: usize,
    enc: RowSlots,
    /// `rot_b(key)` for `b ∈ [B]`, NTT form.
    baby: Vec<Ciphertext>,
}

fn check_keys(params: &Params, keys: &GaloisKeys, n: usize) -> Result<(), FheError> {
    for g in pack_galois_elements(params, n) {
        if !keys.contains(g) {
            return Err(FheError::InvalidParams(format!("missing the Galois key {g} of the packing transform")));
        }
    }
    Ok(())
}

impl Packer {
    /// Precomputes `rot_b(key)` for `b < B` (`B − 1` rotations by 1). `keys` must hold
    /// [`pack_galois_elements`]`(params, n)`.
    pub fn new(params: &Params, key: &Ciphertext, keys: &GaloisKeys, n: usize) -> Result<Self, FheError> {
        check_shapes(params, n)?;
        check_keys(params, keys, n)?;
        let b = baby_steps(n);
        let mut baby = Vec::with_capacity(b);
        let mut cur = key.clone();
        for i in 0..b {
            if i > 0 {
                cur = cur.rotate_rows(params, 1, keys).map_err(he)?;
            }
            let mut c = cur.clone();
            c.to_ntt(params);
            baby.push(c);
        }
        Ok(Self { params: params.clone(), n, enc: RowSlots::new(params)?, baby })
    }

    /// RLWE degree `n` this packer serves.
    pub fn rlwe_degree(&self) -> usize {
        self.n
    }

    /// Ciphertexts one BFV ciphertext holds when `used` coefficients of each are packed:
    /// `N/used`.
    pub fn capacity(&self, used: usize) -> usize {
        self.params.n() / used.max(1)
    }

    /// Packs the first `used` coefficients (a power of two `<= n`; the rest must be known to
    /// the server as padding) of up to `N/used` switched ciphertexts (LEAF Alg. 1): slot
    /// `t·used + c` of the result (row layout) holds `b_t[c] + ⟨a_t^(c), s̲⟩ mod P`; slots past
    /// the last ciphertext hold 0. With `used = n` every coefficient is packed (LEAF's case);
    /// a smaller `used` packs ciphertexts whose other coefficients are padding (e.g. 128 tokens
    /// in a ring of 1024) without spending slots on them. `keys` as at [`Packer::new`].
    pub fn pack(&self, cts: &[SwitchedCt], used: usize, keys: &GaloisKeys) -> Result<(Ciphertext, LtStats), FheError> {
        let (p, n) = (&self.params, self.n);
        check_keys(p, keys, n)?;
        let big = p.n();
        if !used.is_power_of_two() || used > n {
            return Err(FheError::InvalidParams(format!("packed prefix {used} must be a power of two <= n = {n}")));
        }
        if cts.is_empty() || cts.len() > self.capacity(used) {
            return Err(FheError::InvalidParams(format!("{} ciphertexts for a packing of {}", cts.len(), self.capacity(used))));
        }
        if let Some(c) = cts.iter().find(|c| c.a.len() != n || c.b.len() != n) {
            return Err(FheError::InvalidParams(format!("a ciphertext of degree {} for a packing of degree {n}", c.a.len())));
        }
        if cts.iter().any(|c| c.a.iter().chain(&c.b).any(|&v| v as u64 >= LEAF_P)) {
            return Err(FheError::InvalidParams(format!("coefficients must be below P = {LEAF_P}")));
        }
        let half = big / 2;
        // diagonal r (module docs): slot j = t·used + c meets key coefficient
        // k = (col(j) + r) mod n and takes a_t^(c)[k] = a_t[c − k] (k <= c) or −a_t[n + c − k];
        // with used = n this is a_t[0] (r = 0), else ±a_t[n − r]
        let diag = |_: usize, r: usize, v: &mut [u64]| -> bool {
            v.fill(0);
            for (t, ct) in cts.iter().enumerate() {
                for c in 0..used {
                    let j = t * used + c;
                    let k = (j % half + r) % n;
                    let val = if k <= c { ct.a[c - k] as u64 } else { (LEAF_P - ct.a[n + c - k] as u64) % LEAF_P };
                    v[j] = val;
                }
            }
            true
        };
        let (mut acc, stats) = bsgs(p, &self.enc, std::slice::from_ref(&self.baby), n, diag, keys)?;
        let mut bbar = vec![0u64; big];
        for (t, ct) in cts.iter().enumerate() {
            bbar[t * used..(t + 1) * used].iter_mut().zip(&ct.b).for_each(|(x, &b)| *x = b as u64);
        }
        acc.add_plain_assign(p, &self.enc.encode(p, &bbar)?).map_err(he)?;
        Ok((acc, stats))
    }
}
