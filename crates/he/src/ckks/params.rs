//! CKKS parameter sets: an unchecked [`CkksParamsLiteral`] turned into an immutable, validated
//! [`CkksParams`] by [`CkksParams::new`], and the BLB Table 6 presets (BLB §7.1; REFERENCE.md
//! §5.1).
//!
//! Modulus chain convention (SEAL / EVA, which BLB used): in a prime list such as Table 6's
//! `{60, 35, 60, …, 60}` the **first** prime `q_0` is the base prime that remains after every
//! rescale, the middle ones are divided out by rescales (from the end of the list towards
//! `q_1`), and the **last** one is the special prime `P` of hybrid key switching (it never holds
//! data). A chain of `k` primes therefore gives `L = k − 1` data primes (levels `1..=L`) and
//! `L − 1` rescales. Table 6's "Mul. Depth" is EVA's multiplicative depth of the block, which
//! can exceed the rescale count (EVA's waterline rescaling lets several products share one
//! 60-bit rescale), so it is recorded as data, not derived.
//!
//! All fields are **AGREEMENT** (both parties must use the same set; compare
//! [`CkksParams::fingerprint`]) except the error width, which is **SECURITY**.

use super::fft::SpecialFft;
use crate::params::{Params, ParamsLiteral, PlainModulus, DEFAULT_ERROR_ETA, SECURITY_TABLE_128};
use crate::HeError;
use nectar_math::modulus::{is_ntt_friendly, ntt_primes, Modulus, MAX_MODULUS_BITS};
use nectar_math::rns::RnsBasis;
use std::sync::Arc;

/// The largest default scale `log2 Δ` accepted (a scaled value must fit a 62-bit base prime).
pub const MAX_SCALE_BITS: u32 = 60;

/// An unchecked CKKS parameter literal; [`CkksParams::new`] validates it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CkksParamsLiteral {
    /// Ring degree `N` (power of two, 1024..=32768); `N/2` complex slots.
    pub n: usize,
    /// Data primes `q_0 (base), q_1, …, q_{L−1}` (each `≡ 1 mod 2N`, at most 62 bits); rescaling
    /// divides by the last prime of the current level.
    pub q: Vec<u64>,
    /// Special prime `P` of hybrid key switching; `None` disables relinearisation and rotations.
    /// Take `P` at least as large as every data prime: the key-switching error grows with
    /// `max q_j / P` (about `2^7.9·max q_j/P` per coefficient at `N = 2^14`, four digits).
    pub special: Option<u64>,
    /// Default scale `log2 Δ` of fresh encodings.
    pub scale_bits: u32,
    /// Centred-binomial parameter of the RLWE error (SECURITY; `>= 21`, σ ≈ 3.24).
    pub error_eta: u32,
}

impl CkksParamsLiteral {
    /// A literal whose primes are the largest distinct NTT-friendly primes of the given sizes
    /// (data primes in order, then the special prime).
    pub fn from_bit_sizes(n: usize, q_bits: &[u32], special_bits: Option<u32>, scale_bits: u32) -> Result<Self, HeError> {
        if !n.is_power_of_two() {
            return Err(HeError::InvalidParams(format!("N = {n} is not a power of two")));
        }
        let mut used: Vec<u64> = Vec::new();
        let mut gen = |bits: u32| -> Result<u64, HeError> {
            let p = ntt_primes(bits, n, 1, &used)
                .and_then(|v| v.first().copied())
                .ok_or_else(|| HeError::InvalidParams(format!("no {bits}-bit NTT prime for N = {n}")))?;
            used.push(p);
            Ok(p)
        };
        let q = q_bits.iter().map(|&b| gen(b)).collect::<Result<Vec<_>, _>>()?;
        let special = special_bits.map(&mut gen).transpose()?;
        Ok(Self { n, q, special, scale_bits, error_eta: DEFAULT_ERROR_ETA })
    }

    /// A literal from a full chain of prime sizes in the SEAL / EVA convention (BLB Table 6):
    /// the last entry is the special prime, the others are the data primes, base first.
    pub fn from_chain_bits(n: usize, chain_bits: &[u32], scale_bits: u32) -> Result<Self, HeError> {
        match chain_bits.split_last() {
            Some((&sp, q)) if !q.is_empty() => Self::from_bit_sizes(n, q, Some(sp), scale_bits),
            _ => Err(HeError::InvalidParams("a chain needs a data prime and a special prime".into())),
        }
    }
}

/// One row of BLB Table 6 (BLB §7.1): the CKKS parameters EVA chose for a fused block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlbPreset {
    /// Fused-block number (1..=5, BLB Fig. 10).
    pub block: usize,
    /// EVA multiplicative depth of the block (as printed; see the module doc).
    pub depth: u32,
    /// Ring degree.
    pub n: usize,
    /// Prime bit sizes in the SEAL / EVA order (base first, special prime last).
    pub prime_bits: &'static [u32],
    /// Scale `log2 Δ`.
    pub scale_bits: u32,
    /// The MSE versus plaintext reported in the table, where its exponent is legible
    /// (blocks 3 and 4 are garbled in our copy: `None`, REFERENCE.md §5.1).
    pub mse: Option<f64>,
}

impl BlbPreset {
    /// `blb-1` .. `blb-5`: the fused block of BLB Fig. 10 it was chosen for.
    pub fn name(&self) -> String {
        format!("blb-{}", self.block)
    }
    /// Total modulus bits, special prime included (BLB Table 10's CKKS bit widths).
    pub fn total_bits(&self) -> u32 {
        self.prime_bits.iter().sum()
    }
    /// Plaintext slots, `N/2`.
    pub fn slots(&self) -> usize {
        self.n / 2
    }
}

/// BLB Table 6, blocks 1–5. Levels / rescales under the convention above: block 1: 4 / 3,
/// block 2: 7 / 6, block 3: 8 / 7, block 4: 6 / 5, block 5: 7 / 6 (Table 6's depths: 4, 7, 7,
/// 7, 6). Totals 300 / 455 / 400 / 420 / 452 bits, all within the 128-bit bound at their `N`.
pub const BLB_TABLE6: [BlbPreset; 5] = [
    BlbPreset { block: 1, depth: 4, n: 16384, prime_bits: &[60, 60, 60, 60, 60], scale_bits: 38, mse: Some(7.2e-13) },
    BlbPreset { block: 2, depth: 7, n: 32768, prime_bits: &[60, 35, 60, 60, 60, 60, 60, 60], scale_bits: 44, mse: Some(3.4e-12) },
    BlbPreset { block: 3, depth: 7, n: 32768, prime_bits: &[60, 40, 40, 40, 40, 40, 40, 40, 60], scale_bits: 40, mse: None },
    BlbPreset { block: 4, depth: 7, n: 32768, prime_bits: &[60, 60, 60, 60, 60, 60, 60], scale_bits: 43, mse: None },
    BlbPreset { block: 5, depth: 6, n: 32768, prime_bits: &[60, 32, 60, 60, 60, 60, 60, 60], scale_bits: 46, mse: Some(6.9e-14) },
];

#[derive(Debug)]
pub(crate) struct CkksInner {
    pub lit: CkksParamsLiteral,
    /// The RNS / NTT / key-switching engine shared with the BFV code (its plaintext modulus is
    /// unused by CKKS).
    pub engine: Params,
    pub fft: SpecialFft,
    pub fingerprint: u64,
}

/// A validated, immutable CKKS parameter set (cheap to clone).
#[derive(Clone, Debug)]
pub struct CkksParams(pub(crate) Arc<CkksInner>);

impl CkksParams {
    /// Validates `lit`: power-of-two `N` in 1024..=32768, distinct NTT-friendly primes of at
    /// most 62 bits, a scale of `1..=60` bits below the base prime, and 128-bit security of
    /// `log2(q·P)` (special prime included, ternary secret) per the HE-standard table
    /// ([`SECURITY_TABLE_128`], REFERENCE.md §1.8) — else [`HeError::Insecure`].
    pub fn new(lit: CkksParamsLiteral) -> Result<Self, HeError> {
        let n = lit.n;
        let bad = |s: String| Err(HeError::InvalidParams(s));
        if !n.is_power_of_two() || !(1024..=32768).contains(&n) {
            return bad(format!("N = {n} is not a power of two in 1024..=32768"));
        }
        if lit.q.is_empty() {
            return bad("no data primes".into());
        }
        let mut all = lit.q.clone();
        all.extend(lit.special);
        for (i, &p) in all.iter().enumerate() {
            if p >> MAX_MODULUS_BITS != 0 || !is_ntt_friendly(p, n) {
                return bad(format!("modulus {p} is not a prime of at most {MAX_MODULUS_BITS} bits with p ≡ 1 mod 2N"));
            }
            if all[..i].contains(&p) {
                return bad(format!("modulus {p} repeated"));
            }
        }
        if !(1..=MAX_SCALE_BITS).contains(&lit.scale_bits) {
            return bad(format!("scale 2^{} outside 2^1..=2^{MAX_SCALE_BITS}", lit.scale_bits));
        }
        let base_bits = 64 - lit.q[0].leading_zeros();
        if base_bits <= lit.scale_bits {
            return bad(format!("base prime ({base_bits} bits) must exceed the scale (2^{})", lit.scale_bits));
        }
        // log2(q·P) as the bit length of the product (what the HE-standard table bounds).
        let moduli: Vec<Modulus> = all.iter().filter_map(|&p| Modulus::new(p)).collect();
        let bits = RnsBasis::new(&moduli).map_or(0, |b| b.total_bits());
        let max_bits = SECURITY_TABLE_128.iter().find(|(m, _)| *m == n).map_or(0, |x| x.1);
        if bits > max_bits {
            return Err(HeError::Insecure { n, bits, max_bits });
        }
        // The engine validates the same (and the error width); its plaintext modulus t = 2 is
        // a placeholder that CKKS never uses.
        let engine = Params::new(ParamsLiteral {
            n,
            q: lit.q.clone(),
            special: lit.special,
            plain: PlainModulus::PowerOfTwo(1),
            error_eta: lit.error_eta,
        })?;
        let mut fp = b"nectar-ckks".to_vec();
        fp.extend_from_slice(&engine.fingerprint().to_le_bytes());
        fp.extend_from_slice(&lit.scale_bits.to_le_bytes());
        fp.extend_from_slice(&(lit.q.len() as u64).to_le_bytes());
        let fingerprint = fnv1a(&fp);
        let fft = SpecialFft::new(n);
        Ok(Self(Arc::new(CkksInner { lit, engine, fft, fingerprint })))
    }

    /// The BLB Table 6 preset of fused block `block` (1..=5), see [`BLB_TABLE6`].
    pub fn blb_block(block: usize) -> Result<Self, HeError> {
        let p = BLB_TABLE6
            .iter()
            .find(|p| p.block == block)
            .ok_or_else(|| HeError::OutOfRange(format!("BLB block {block} (Table 6 has blocks 1..=5)")))?;
        Self::new(CkksParamsLiteral::from_chain_bits(p.n, p.prime_bits, p.scale_bits)?)
    }

    /// The literal this set was built from.
    pub fn literal(&self) -> &CkksParamsLiteral {
        &self.0.lit
    }
    /// Ring degree `N`.
    pub fn n(&self) -> usize {
        self.0.lit.n
    }
    /// Number of complex slots, `N/2`.
    pub fn slots(&self) -> usize {
        self.0.lit.n / 2
    }
    /// The top level `L` (number of data primes).
    pub fn max_level(&self) -> usize {
        self.0.lit.q.len()
    }
    /// Rescales available from the top level (`L − 1`).
    pub fn rescale_depth(&self) -> usize {
        self.max_level() - 1
    }
    /// Default scale `log2 Δ`.
    pub fn scale_bits(&self) -> u32 {
        self.0.lit.scale_bits
    }
    /// Default scale `Δ = 2^scale_bits`.
    pub fn default_scale(&self) -> f64 {
        (self.0.lit.scale_bits as f64).exp2()
    }
    /// Data prime `q_i` (`i < L`).
    pub fn prime(&self, i: usize) -> Option<u64> {
        self.0.lit.q.get(i).copied()
    }
    /// The prime a rescale at `level` divides by (`q_{level−1}`).
    pub fn last_prime(&self, level: usize) -> Option<u64> {
        level.checked_sub(1).and_then(|i| self.prime(i))
    }
    /// The special prime, if any.
    pub fn special_prime(&self) -> Option<u64> {
        self.0.lit.special
    }
    /// Bit length of `q` at `level`.
    pub fn q_bits(&self, level: usize) -> u32 {
        self.0.engine.q_bits(level)
    }
    /// A 64-bit digest of every AGREEMENT field (FNV-1a; detects mismatches, not an adversary).
    pub fn fingerprint(&self) -> u64 {
        self.0.fingerprint
    }
    pub(crate) fn engine(&self) -> &Params {
        &self.0.engine
    }
    pub(crate) fn fft(&self) -> &SpecialFft {
        &self.0.fft
    }
    pub(crate) fn check_level(&self, level: usize) -> Result<(), HeError> {
        if level == 0 || level > self.max_level() {
            return Err(HeError::OutOfRange(format!("level {level} outside 1..={}", self.max_level())));
        }
        Ok(())
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blb_presets_construct() {
        for p in BLB_TABLE6 {
            let c = CkksParams::blb_block(p.block).unwrap();
            assert_eq!(c.n(), p.n);
            let mut bits: Vec<u32> = (0..c.max_level()).map(|i| 64 - c.prime(i).unwrap().leading_zeros()).collect();
            bits.push(64 - c.special_prime().unwrap().leading_zeros());
            assert_eq!(bits, p.prime_bits, "block {}", p.block);
            assert_eq!(c.scale_bits(), p.scale_bits);
            assert_eq!(c.rescale_depth(), p.prime_bits.len() - 2);
            let total: u32 = p.prime_bits.iter().sum();
            assert!(total <= SECURITY_TABLE_128.iter().find(|x| x.0 == p.n).unwrap().1);
        }
        assert!(matches!(CkksParams::blb_block(0), Err(HeError::OutOfRange(_))));
        assert!(matches!(CkksParams::blb_block(6), Err(HeError::OutOfRange(_))));
    }

    #[test]
    fn rejects_insecure_and_invalid() {
        // N = 4096 allows 109 bits; 200 is refused.
        let lit = CkksParamsLiteral::from_bit_sizes(4096, &[50, 50, 50], Some(50), 40).unwrap();
        assert!(matches!(CkksParams::new(lit), Err(HeError::Insecure { n: 4096, max_bits: 109, .. })));
        // Block-1 primes at N = 8192 (300 > 218 bits).
        let lit = CkksParamsLiteral::from_chain_bits(8192, &[60; 5], 38).unwrap();
        assert!(matches!(CkksParams::new(lit), Err(HeError::Insecure { n: 8192, max_bits: 218, .. })));
        let ok = CkksParamsLiteral::from_bit_sizes(8192, &[60, 40, 40], Some(60), 40).unwrap();
        assert!(CkksParams::new(ok.clone()).is_ok());
        let mut l = ok.clone();
        l.n = 3000;
        assert!(matches!(CkksParams::new(l), Err(HeError::InvalidParams(_))));
        let mut l = ok.clone();
        l.q[1] += 2;
        assert!(matches!(CkksParams::new(l), Err(HeError::InvalidParams(_))));
        let mut l = ok.clone();
        l.q[2] = l.q[1];
        assert!(matches!(CkksParams::new(l), Err(HeError::InvalidParams(_))));
        let mut l = ok.clone();
        l.scale_bits = 60; // not below the 60-bit base prime
        assert!(matches!(CkksParams::new(l), Err(HeError::InvalidParams(_))));
        let mut l = ok.clone();
        l.error_eta = 10;
        assert!(matches!(CkksParams::new(l), Err(HeError::InvalidParams(_))));
        assert!(CkksParamsLiteral::from_chain_bits(8192, &[60], 40).is_err());
        // a 63-bit prime is refused
        let mut l = ok;
        l.q[0] = (1u64 << 62) + 1; // not prime ≡ 1 mod 2N of <= 62 bits
        assert!(matches!(CkksParams::new(l), Err(HeError::InvalidParams(_))));
    }
}
