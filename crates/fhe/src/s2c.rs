//! Slots to coefficients (S2C, LEAF §3.4, App. A.3 Alg. 7–9; REFERENCE.md §6.5): a BFV
//! ciphertext whose slots hold `m` becomes one whose plaintext polynomial has `m` as its
//! coefficients, in the order the ring switching ([`crate::ring_switch`]) splits.
//!
//! Slot `j` of a plaintext polynomial `q(X)` is `q(ζ_j)`, so the output polynomial with
//! coefficient `σ⁻¹(l)` equal to slot `l`'s value has slots `y = M·m` with
//! `M[j, l] = ζ_j^{σ⁻¹(l)}` (LEAF's `U`, Eq. (10), times the permutation). Slot `l = t·n + i`
//! of the packing layout ([`crate::pack`]: coefficient `i` of RLWE ciphertext `t`) goes to
//! coefficient `σ⁻¹(l) = i·(N/n) + t`, the coefficient ring switching hands back as
//! coefficient `i` of ciphertext `t` (§3.5): the whole pipeline keeps every value in place.
//!
//! `M` is dense, so the transform is LEAF's "2-baby-step 1-giant-step" (Alg. 7): diagonals of
//! `m` and of its row swap, `N/2` each, in [`crate::lt::bsgs`]. The roots are read from the
//! parameters (the slots of the polynomial `X`) and the entries from a table of `ζ^k`,
//! `k < 2N`. **Deviation:** LEAF precomputes the `N` encoded diagonals (Alg. 8); at
//! `N = 32768` and the three primes the transform runs at, that is 25 GB, so they are encoded
//! on the fly (the encoding is the largest cost of this stage, reported by the bench).
//!
//! The input is first switched down to [`S2C_LEVEL`] primes: the transform adds ~`log2(N·P/2)`
//! bits of noise and the ring switching needs the noise below `q0/(2P)` afterwards; after the
//! functional-bootstrapping polynomial a ciphertext's noise scales down with `q`.

use crate::lt::{baby_steps, bsgs, he, LtStats, RowSlots};
use crate::rlwe::LEAF_P;
use crate::FheError;
use nectar_he::bfv::row_galois_elements;
use nectar_he::{Ciphertext, GaloisKeys, Params, Plaintext};

/// Ciphertext primes the transform runs at (AGREEMENT).
pub const S2C_LEVEL: usize = 3;

/// The Galois elements of [`SlotsToCoeffs::apply`]: rotations by 1 and by `B`, and the row swap.
pub fn s2c_galois_elements(params: &Params) -> Vec<u64> {
    row_galois_elements(params.n(), &[1, baby_steps(params.n() / 2) as i64], true)
}

/// The slots-to-coefficients transform for RLWE degree `n` (precomputed tables).
pub struct SlotsToCoeffs {
    params: Params,
    n: usize,
    used: usize,
    enc: RowSlots,
    /// `E_j` with `ζ_j = ζ^{E_j}`, per row-layout slot.
    exps: Vec<u64>,
    /// `ζ^k mod P` for `k < 2^8` and `ζ^(2^8·k)` for `k < 2N/2^8`.
    zeta_lo: Vec<u64>,
    zeta_hi: Vec<u64>,
    /// [`Self::coefficient_of_slot`] of every slot.
    coef: Vec<u32>,
}

impl SlotsToCoeffs {
    /// The transform for RLWE degree `n` and the packed prefix `used` of [`crate::Packer::pack`].
    pub fn new(params: &Params, n: usize, used: usize) -> Result<Self, FheError> {
        let big = params.n();
        if params.plain_modulus(0) != LEAF_P as u128 || !n.is_power_of_two() || n < 2 || n > big / 2 {
            return Err(FheError::InvalidParams(format!("S2C needs t = {LEAF_P} and n | N/2 (n = {n}, N = {big})")));
        }
        if !used.is_power_of_two() || used > n {
            return Err(FheError::InvalidParams(format!("packed prefix {used} must be a power of two <= n = {n}")));
        }
        if params.max_level() < S2C_LEVEL {
            return Err(FheError::InvalidParams(format!("S2C runs at {S2C_LEVEL} primes; the set has {}", params.max_level())));
        }
        let enc = RowSlots::new(params)?;
        // the slots of X are the roots ζ_j
        let x = Plaintext::from_coeffs(params, &[0, 1], 0).map_err(he)?;
        let roots = params.decode_simd_rows(&x).map_err(he)?;
        let two_n = 2 * big as u64;
        let zeta = roots[0];
        let mut zeta_pow = Vec::with_capacity(2 * big);
        let mut z = 1u64;
        for _ in 0..2 * big {
            zeta_pow.push(z);
            z = z * zeta % LEAF_P;
        }
        let half = big / 2;
        let mut exps = vec![0u64; big];
        let mut e = 1u64;
        for c in 0..half {
            exps[c] = e;
            exps[half + c] = two_n - e;
            e = e * 5 % two_n;
        }
        if exps.iter().zip(&roots).any(|(&e, &r)| zeta_pow[e as usize] != r) {
            return Err(FheError::InvalidParams("the row layout's roots are not ζ^(±5^i)".into()));
        }
        // ζ^e = ζ^(e_hi·2^8)·ζ^(e_lo): two tables of a few KB that stay in L1, where one
        // table of 2N entries made every lookup of `apply` a cache miss (once its largest cost).
        let lo_bits = 8u32.min((2 * big).trailing_zeros());
        let zeta_lo = zeta_pow[..1 << lo_bits].to_vec();
        let zeta_hi = zeta_pow.iter().step_by(1 << lo_bits).copied().collect();
        let mut s2c = Self { params: params.clone(), n, used, enc, exps, zeta_lo, zeta_hi, coef: Vec::new() };
        s2c.coef = (0..big).map(|l| s2c.coefficient_of_slot(l) as u32).collect();
        Ok(s2c)
    }

    /// The output coefficient of slot `l = t·used + c`: ciphertext `t` of the packing goes to
    /// ring-switched ciphertext `t' = t / (n/used)`, coefficient `i = (t mod n/used)·used + c`,
    /// i.e. polynomial coefficient `σ⁻¹(l) = i·(N/n) + t'` (with `used = n`: `c·(N/n) + t`).
    pub fn coefficient_of_slot(&self, l: usize) -> usize {
        let per = self.params.n() / self.n;
        let q = self.n / self.used;
        let (t, c) = (l / self.used, l % self.used);
        ((t % q) * self.used + c) * per + t / q
    }

    /// Applies the transform (module docs); the result is at [`S2C_LEVEL`] primes, coefficient
    /// form. `keys` must hold [`s2c_galois_elements`]. The stats count every rotation (baby
    /// steps and the swap included).
    pub fn apply(&self, ct: &Ciphertext, keys: &GaloisKeys) -> Result<(Ciphertext, LtStats), FheError> {
        let p = &self.params;
        for g in s2c_galois_elements(p) {
            if !keys.contains(g) {
                return Err(FheError::InvalidParams(format!("missing the Galois key {g} of S2C")));
            }
        }
        let big = p.n();
        let half = big / 2;
        let b = baby_steps(half);
        let mut x = ct.clone();
        if x.level() > S2C_LEVEL {
            x.mod_switch_to(p, S2C_LEVEL).map_err(he)?;
        }
        x.to_coeff(p);
        let swapped = x.swap_rows(p, keys).map_err(he)?;
        let mut baby_rotations = 1;
        let mut babies = Vec::with_capacity(2);
        for start in [x, swapped] {
            let mut v = Vec::with_capacity(b);
            let mut cur = start;
            for i in 0..b {
                if i > 0 {
                    cur = cur.rotate_rows(p, 1, keys).map_err(he)?;
                    baby_rotations += 1;
                }
                let mut c = cur.clone();
                c.to_ntt(p);
                v.push(c);
            }
            babies.push(v);
        }
        // d_{s,r}[(ρ, c)] = M[(ρ, c), (ρ ⊕ s, c + r mod H)]; N and H are powers of two, and
        // the exponent is taken mod 2N (ζ has order 2N).
        let mask = 2 * big as u64 - 1;
        let (lo_bits, lo_mask) = (self.zeta_lo.len().trailing_zeros(), self.zeta_lo.len() as u64 - 1);
        let (zeta_lo, zeta_hi) = (&self.zeta_lo, &self.zeta_hi);
        let diag = |s: usize, r: usize, v: &mut [u64]| -> bool {
            for (j, out) in v.iter_mut().enumerate() {
                let (row, col) = (j / half, j % half);
                let l = ((row ^ s) * half) + ((col + r) & (half - 1));
                let e = self.exps[j] * self.coef[l] as u64 & mask;
                *out = zeta_hi[(e >> lo_bits) as usize] * zeta_lo[(e & lo_mask) as usize] % LEAF_P;
            }
            true
        };
        let (out, mut stats) = bsgs(p, &self.enc, &babies, half, diag, keys)?;
        stats.rotations += baby_rotations;
        Ok((out, stats))
    }
}
