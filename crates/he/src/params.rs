//! HE parameter sets: an unchecked [`ParamsLiteral`] (plain public fields) turned into an
//! immutable, validated [`Params`] by [`Params::new`], which rejects parameter sets below
//! 128-bit security per the HE-standard table for ternary secrets (SEAL `hestdparms.h`;
//! REFERENCE.md §1.8).
//!
//! All fields are **AGREEMENT** constants (both parties must use the same set; the session
//! handshake compares [`Params::fingerprint`]), except the error width, which is **SECURITY**.

use crate::HeError;
use nectar_math::modulus::{is_ntt_friendly, ntt_primes, Modulus};
use nectar_math::ntt::NttPlan;
use nectar_math::rns::{RnsBasis, ScaleRound};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Max `log2(q·P)` for 128-bit classical security with a ternary secret (HE standard).
pub const SECURITY_TABLE_128: [(usize, u32); 6] =
    [(1024, 27), (2048, 54), (4096, 109), (8192, 218), (16384, 438), (32768, 881)];

/// Centred-binomial parameter of the RLWE error: `eta = 21` gives `sigma ≈ 3.24` (the HE
/// standard's 3.2). **SECURITY**.
pub const DEFAULT_ERROR_ETA: u32 = 21;

/// The smallest centred-binomial parameter with σ = √(η/2) ≥ 3.2 (the HE standard's width,
/// which the 128-bit table assumes). SECURITY.
pub const MIN_ERROR_ETA: u32 = 21;

/// The plaintext modulus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlainModulus {
    /// `t = 2^bits`, `1 <= bits <= 64`: coefficient encoding over `Z_{2^bits}`.
    PowerOfTwo(u32),
    /// A prime `t ≡ 1 (mod 2N)`, `t < 2^62`: SIMD batching (and coefficient encoding mod t).
    Prime(u64),
    /// Distinct primes `t_j ≡ 1 (mod 2N)`: CRT batching, one ciphertext per `t_j`.
    Crt(Vec<u64>),
}

/// An unchecked parameter literal; [`Params::new`] validates it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamsLiteral {
    /// Ring degree `N` (power of two, 1024..=32768).
    pub n: usize,
    /// Ciphertext primes `q_0, ..., q_{L-1}` (each `≡ 1 mod 2N`, `< 2^62`). Modulus switching
    /// drops them from the end.
    pub q: Vec<u64>,
    /// Special prime `P` of hybrid key switching; `None` disables Galois keys.
    pub special: Option<u64>,
    /// Plaintext modulus.
    pub plain: PlainModulus,
    /// Centred-binomial parameter of the encryption / key error.
    pub error_eta: u32,
}

impl ParamsLiteral {
    /// A literal whose primes are the largest NTT-friendly primes of the given bit sizes
    /// (in order, all distinct; the special prime, if any, is generated last).
    pub fn from_bit_sizes(
        n: usize,
        q_bits: &[u32],
        special_bits: Option<u32>,
        plain: PlainModulus,
    ) -> Result<Self, HeError> {
        let mut used: Vec<u64> = match &plain {
            PlainModulus::Prime(t) => vec![*t],
            PlainModulus::Crt(ts) => ts.clone(),
            PlainModulus::PowerOfTwo(_) => vec![],
        };
        let mut gen = |bits: u32| -> Result<u64, HeError> {
            let p = ntt_primes(bits, n, 1, &used)
                .ok_or_else(|| HeError::InvalidParams(format!("no {bits}-bit NTT prime for N = {n}")))?[0];
            used.push(p);
            Ok(p)
        };
        let q = q_bits.iter().map(|&b| gen(b)).collect::<Result<Vec<_>, _>>()?;
        let special = special_bits.map(&mut gen).transpose()?;
        Ok(Self { n, q, special, plain, error_eta: DEFAULT_ERROR_ETA })
    }
}

/// Precomputed per-level constants (level = number of ciphertext primes in use).
#[derive(Debug)]
pub(crate) struct LevelConsts {
    pub basis: RnsBasis,
    /// Per plaintext component j: decoder `round(t_j·x/q) mod t_j`.
    pub decode: Vec<ScaleRound>,
    /// Per component j: `floor(q/t_j) mod q_i` for each limb i, and `q mod t_j`.
    pub encode: Vec<(Vec<u64>, u64)>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub lit: ParamsLiteral,
    /// Ciphertext primes followed by the special prime (if any).
    pub moduli: Vec<Modulus>,
    pub plans: Vec<NttPlan>,
    /// `levels[l-1]` for level `l`.
    pub levels: Vec<LevelConsts>,
    /// Plaintext moduli `t_j` (as u128 so that `2^64` fits).
    pub t: Vec<u128>,
    /// NTT plans mod `t_j` (SIMD batching), when `t_j` is an NTT-friendly prime.
    pub t_plans: Vec<Option<NttPlan>>,
    /// CRT basis of the plaintext primes (for `Crt`).
    pub t_basis: Option<RnsBasis>,
    pub fingerprint: u64,
    /// Per Galois element `g`: the permutation of NTT slots that `X -> X^g` induces (the same
    /// for every modulus), or `None` if the NTT order did not allow one (then automorphisms go
    /// through the coefficient domain). Filled lazily by [`Params::ntt_galois_perm`].
    pub galois_perms: Mutex<HashMap<u64, Option<Arc<Vec<u32>>>>>,
}

/// A validated, immutable parameter set (cheap to clone).
#[derive(Clone, Debug)]
pub struct Params(pub(crate) Arc<Inner>);

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

impl Params {
    /// Validates `lit`: degree, primes (distinct, NTT-friendly, < 2^62), plaintext modulus,
    /// 128-bit security of `log2(q·P)`, and a minimum noise budget `log2 q >= log2 t + 20`.
    pub fn new(lit: ParamsLiteral) -> Result<Self, HeError> {
        let n = lit.n;
        let bad = |s: String| Err(HeError::InvalidParams(s));
        if !n.is_power_of_two() || !(1024..=32768).contains(&n) {
            return bad(format!("N = {n} is not a power of two in 1024..=32768"));
        }
        if lit.q.is_empty() {
            return bad("no ciphertext primes".into());
        }
        // The security table assumes the HE standard's error width σ ≈ 3.2; the centred
        // binomial with parameter η has σ = √(η/2), so η ≥ 21 (σ = 3.24).
        if lit.error_eta < MIN_ERROR_ETA || lit.error_eta > 64 {
            return bad(format!(
                "error_eta = {} outside {MIN_ERROR_ETA}..=64 (σ = √(η/2) must be at least 3.2 for 128-bit security)",
                lit.error_eta
            ));
        }
        let mut all: Vec<u64> = lit.q.clone();
        all.extend(lit.special);
        for (i, &p) in all.iter().enumerate() {
            if p >= 1 << 62 || !is_ntt_friendly(p, n) {
                return bad(format!("modulus {p} is not a prime < 2^62 with p ≡ 1 mod 2N"));
            }
            if all[..i].contains(&p) {
                return bad(format!("modulus {p} repeated"));
            }
        }
        let moduli: Vec<Modulus> = all.iter().map(|&p| Modulus::new(p)).collect::<Option<_>>()
            .ok_or_else(|| HeError::InvalidParams("bad modulus".into()))?;
        let full = RnsBasis::new(&moduli).ok_or_else(|| HeError::InvalidParams("bad basis".into()))?;
        let bits = full.total_bits();
        let max_bits = SECURITY_TABLE_128.iter().find(|(m, _)| *m == n).map(|x| x.1).unwrap_or(0);
        if bits > max_bits {
            return Err(HeError::Insecure { n, bits, max_bits });
        }
        // Plaintext moduli.
        let t: Vec<u128> = match &lit.plain {
            PlainModulus::PowerOfTwo(b) => {
                if !(1..=64).contains(b) {
                    return bad(format!("t = 2^{b}: need 1 <= bits <= 64"));
                }
                vec![1u128 << b]
            }
            PlainModulus::Prime(p) => vec![*p as u128],
            PlainModulus::Crt(ps) => {
                if ps.is_empty() {
                    return bad("empty CRT plaintext basis".into());
                }
                ps.iter().map(|&p| p as u128).collect()
            }
        };
        let mut t_plans = Vec::new();
        let prime_t = !matches!(lit.plain, PlainModulus::PowerOfTwo(_));
        for (j, &tj) in t.iter().enumerate() {
            if prime_t {
                let p = tj as u64;
                if p >= 1 << 62 || !is_ntt_friendly(p, n) {
                    return bad(format!("plaintext prime {p} is not a prime < 2^62 with t ≡ 1 mod 2N"));
                }
                if all.contains(&p) || t[..j].contains(&tj) {
                    return bad(format!("plaintext prime {p} repeats a modulus"));
                }
                t_plans.push(NttPlan::new(n, p));
            } else {
                t_plans.push(None);
            }
        }
        let t_basis = match &lit.plain {
            PlainModulus::Crt(ps) => {
                let ms: Vec<Modulus> = ps.iter().map(|&p| Modulus::new(p)).collect::<Option<_>>()
                    .ok_or_else(|| HeError::InvalidParams("bad CRT prime".into()))?;
                RnsBasis::new(&ms)
            }
            _ => None,
        };
        let q_data = RnsBasis::new(&moduli[..lit.q.len()])
            .ok_or_else(|| HeError::InvalidParams("bad basis".into()))?;
        let t_bits = t.iter().map(|&x| 128 - (x - 1).leading_zeros()).max().unwrap_or(0);
        if q_data.total_bits() < t_bits + 20 {
            return bad(format!(
                "log2 q = {} leaves no noise budget above log2 t = {t_bits} (need +20 bits)",
                q_data.total_bits()
            ));
        }
        let plans: Vec<NttPlan> = all.iter().map(|&p| NttPlan::new(n, p)).collect::<Option<_>>()
            .ok_or_else(|| HeError::InvalidParams("no NTT plan".into()))?;
        let mut levels = Vec::new();
        for l in 1..=lit.q.len() {
            let basis = RnsBasis::new(&moduli[..l]).ok_or_else(|| HeError::InvalidParams("bad basis".into()))?;
            // Encoding/decoding need t < q at this level; lower levels with q <= t are
            // still allowed to exist (e.g. for key material) but cannot be decrypted.
            let decode = t.iter().map(|&tj| basis.scale_round_constants(tj)).collect();
            let encode = t.iter().map(|&tj| basis.encode_constants(tj)).collect();
            levels.push(LevelConsts { basis, decode, encode });
        }
        let mut fp = Vec::new();
        fp.extend_from_slice(&(n as u64).to_le_bytes());
        for p in &all {
            fp.extend_from_slice(&p.to_le_bytes());
        }
        fp.push(lit.special.is_some() as u8);
        for tj in &t {
            fp.extend_from_slice(&tj.to_le_bytes());
        }
        fp.extend_from_slice(&lit.error_eta.to_le_bytes());
        let fingerprint = fnv1a(&fp);
        let galois_perms = Mutex::new(HashMap::new());
        Ok(Self(Arc::new(Inner { lit, moduli, plans, levels, t, t_plans, t_basis, fingerprint, galois_perms })))
    }

    /// BumbleBee OLT (matrix multiplication) parameters, as in the artifact (REFERENCE.md §1.1):
    /// `N = 8192`, ciphertext primes of {59, 55, 49} bits (163-bit `q`), a 49-bit special prime
    /// (212 bits in all ≤ 218), `t = 2^64`.
    pub fn bumblebee_olt() -> Self {
        Self::preset(8192, &[59, 55, 49], Some(49), PlainModulus::PowerOfTwo(64))
    }

    /// Ring width of [`Params::nectar_olt_narrow`]'s plaintext modulus `t = 2^51` (AGREEMENT).
    pub const OLT_NARROW_BITS: u32 = 51;

    /// nectar's narrow OLT parameters (issue 17): `N = 8192`, three 50-bit ciphertext primes and
    /// a 50-bit special prime (200 bits ≤ 218), `t = 2^51` ([`Params::OLT_NARROW_BITS`]).
    /// Every prime is below `2^50`, where `tfhe-ntt` transforms with AVX-512 IFMA: 14 / 15 µs
    /// per forward / inverse 8192-point transform against 33 / 37 µs for the 55- and 59-bit
    /// primes of [`Params::bumblebee_olt`] (this machine, one thread). Two primes (≈ 100 bits)
    /// still hold a response of `t·2^48` (`nectar_linear::h2a::response_level`) and MiniLM's
    /// weight products (`σ ≤ 2^26.3`, 27.0 allowed); three hold the products of two shares.
    /// The OLT then computes products mod `2^51`; `nectar_mpc`'s `trunc_extend` brings them
    /// back to `Z_2^64`.
    pub fn nectar_olt_narrow() -> Self {
        Self::preset(8192, &[50, 50, 50], Some(50), PlainModulus::PowerOfTwo(Self::OLT_NARROW_BITS))
    }

    /// bOLEe (element-wise products) parameters: `N = 8192`, primes {62, 62, 62} bits (186-bit
    /// `q`, below the 218-bit bound of 128-bit security at this `N`), no special prime, `t` =
    /// product of the three largest 47-bit primes `≡ 1 (mod 2N)` (141 bits; the paper writes
    /// `t ≈ 2^(45·3)`). Deviation from the artifact's {60, 32, 56} (148 bits; REFERENCE.md
    /// §1.2): its 98-bit noise flood gives 40 bits of statistical security per coefficient
    /// only, about 2^−13 for a whole inference; the 38 extra bits of `q` carry a flood sized
    /// for 40 bits over a whole session (`nectar_linear::h2a::flood_bits`, 136 bits).
    pub fn bumblebee_bole() -> Self {
        let ts = ntt_primes(47, 8192, 3, &[]).unwrap_or_default();
        Self::preset(8192, &[62, 62, 62], None, PlainModulus::Crt(ts))
    }

    fn preset(n: usize, q: &[u32], sp: Option<u32>, plain: PlainModulus) -> Self {
        // The presets are fixed literals that pass validation (checked by the tests).
        match ParamsLiteral::from_bit_sizes(n, q, sp, plain).and_then(Self::new) {
            Ok(p) => p,
            Err(e) => panic!("preset parameters invalid: {e}"),
        }
    }

    /// The literal this set was built from.
    pub fn literal(&self) -> &ParamsLiteral {
        &self.0.lit
    }
    /// Ring degree `N`.
    pub fn n(&self) -> usize {
        self.0.lit.n
    }
    /// Number of ciphertext primes `L` (the top level).
    pub fn max_level(&self) -> usize {
        self.0.lit.q.len()
    }
    /// The ciphertext primes (without the special prime).
    pub fn q_moduli(&self) -> &[Modulus] {
        &self.0.moduli[..self.max_level()]
    }
    /// The special prime, if any.
    pub fn special_modulus(&self) -> Option<&Modulus> {
        self.0.lit.special.map(|_| &self.0.moduli[self.max_level()])
    }
    /// Bit length of `q` at `level`.
    pub fn q_bits(&self, level: usize) -> u32 {
        self.0.levels[level - 1].basis.total_bits()
    }
    /// Number of plaintext components (1 unless CRT batching).
    pub fn plain_count(&self) -> usize {
        self.0.t.len()
    }
    /// Plaintext modulus `t_j` of component `j` (`2^64` fits in a u128).
    pub fn plain_modulus(&self, j: usize) -> u128 {
        self.0.t[j]
    }
    /// The CRT basis of the plaintext primes (`Crt` only).
    pub fn plain_crt_basis(&self) -> Option<&RnsBasis> {
        self.0.t_basis.as_ref()
    }
    /// Whether Galois keys / automorphisms are available.
    pub fn has_special_prime(&self) -> bool {
        self.0.lit.special.is_some()
    }
    /// A 64-bit digest of every AGREEMENT field (FNV-1a; detects mismatches, not an adversary).
    pub fn fingerprint(&self) -> u64 {
        self.0.fingerprint
    }
    pub(crate) fn plan(&self, i: usize) -> &NttPlan {
        &self.0.plans[i]
    }
    pub(crate) fn modulus(&self, i: usize) -> &Modulus {
        &self.0.moduli[i]
    }
    pub(crate) fn level_consts(&self, level: usize) -> &LevelConsts {
        &self.0.levels[level - 1]
    }
    /// The slot permutation `perm` with `NTT(τ_g(a))[i] = NTT(a)[perm[i]]` on every modulus,
    /// computed once per `g` (odd, `< 2N`) and cached: the NTT evaluates at the primitive
    /// `2N`-th roots `ω_i`, and `τ_g(a)(ω_i) = a(ω_i^g)`, so `perm[i]` is the slot of `ω_i^g`.
    /// Found from the transforms of `X` and `X^g` on the first prime and checked on all.
    pub(crate) fn ntt_galois_perm(&self, g: u64) -> Option<Arc<Vec<u32>>> {
        if let Some(p) = self.0.galois_perms.lock().ok()?.get(&g) {
            return p.clone();
        }
        let perm = self.compute_galois_perm(g).map(Arc::new);
        if let Ok(mut cache) = self.0.galois_perms.lock() {
            cache.insert(g, perm.clone());
        }
        perm
    }

    fn compute_galois_perm(&self, g: u64) -> Option<Vec<u32>> {
        let n = self.n();
        let g = g % (2 * n as u64);
        if g & 1 == 0 {
            return None;
        }
        let transforms = |i: usize| {
            let m = self.modulus(i);
            let mut x = vec![0u64; n];
            x[1] = 1;
            let mut xg = vec![0u64; n];
            let gi = g as usize;
            if gi < n {
                xg[gi] = 1;
            } else {
                xg[gi - n] = m.neg(1);
            }
            self.plan(i).forward(&mut x);
            self.plan(i).forward(&mut xg);
            (x, xg)
        };
        let (x, xg) = transforms(0);
        let slot: HashMap<u64, u32> = x.iter().enumerate().map(|(i, &v)| (v, i as u32)).collect();
        if slot.len() != n {
            return None;
        }
        let perm: Vec<u32> = xg.iter().map(|v| slot.get(v).copied()).collect::<Option<_>>()?;
        for i in 1..self.0.moduli.len() {
            let (x, xg) = transforms(i);
            if xg.iter().zip(&perm).any(|(&v, &p)| x[p as usize] != v) {
                return None;
            }
        }
        Some(perm)
    }

    pub(crate) fn eta(&self) -> u32 {
        self.0.lit.error_eta
    }

    /// Variance of one coefficient of a fresh encryption's error: `η/2` (centred binomial).
    pub fn error_variance(&self) -> f64 {
        self.eta() as f64 / 2.0
    }
    pub(crate) fn check_plain_index(&self, j: usize) -> Result<(), HeError> {
        if j < self.plain_count() {
            Ok(())
        } else {
            Err(HeError::OutOfRange(format!("plaintext component {j} of {}", self.plain_count())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_validate() {
        let olt = Params::bumblebee_olt();
        assert_eq!(olt.n(), 8192);
        assert_eq!(olt.q_moduli().iter().map(|m| m.bits()).collect::<Vec<_>>(), vec![59, 55, 49]);
        assert_eq!(olt.special_modulus().map(|m| m.bits()), Some(49));
        assert_eq!(olt.plain_modulus(0), 1u128 << 64);
        let bole = Params::bumblebee_bole();
        assert_eq!(bole.q_moduli().iter().map(|m| m.bits()).collect::<Vec<_>>(), vec![62, 62, 62]);
        assert_eq!(bole.plain_count(), 3);
        for j in 0..3 {
            let t = bole.plain_modulus(j) as u64;
            assert_eq!(64 - t.leading_zeros(), 47);
            assert_eq!(t % 16384, 1);
        }
        assert!(!bole.has_special_prime());
        assert_ne!(olt.fingerprint(), bole.fingerprint());
        // The narrow OLT set: every prime below 2^50 (tfhe-ntt's IFMA path), t = 2^51, and two
        // primes hold t·2^48.
        let narrow = Params::nectar_olt_narrow();
        assert_eq!(narrow.max_level(), 3);
        assert!(narrow.has_special_prime());
        for m in narrow.q_moduli().iter().chain(narrow.special_modulus()) {
            assert!(m.value() < 1 << 50 && m.value() > 1 << 49, "{}", m.value());
        }
        assert_eq!(narrow.plain_modulus(0), 1u128 << Params::OLT_NARROW_BITS);
        assert!(narrow.q_bits(2) >= Params::OLT_NARROW_BITS + 48);
        assert_ne!(narrow.fingerprint(), olt.fingerprint());
    }

    #[test]
    fn rejects_insecure_and_invalid() {
        let lit = ParamsLiteral::from_bit_sizes(4096, &[60, 50], None, PlainModulus::PowerOfTwo(20)).unwrap();
        assert!(matches!(Params::new(lit), Err(HeError::Insecure { n: 4096, max_bits: 109, .. })));
        let lit = ParamsLiteral::from_bit_sizes(8192, &[60, 60, 60], Some(60), PlainModulus::PowerOfTwo(64)).unwrap();
        assert!(matches!(Params::new(lit), Err(HeError::Insecure { .. })));
        let mut lit = ParamsLiteral::from_bit_sizes(8192, &[59, 55], Some(49), PlainModulus::PowerOfTwo(64)).unwrap();
        lit.q[0] += 2; // no longer prime ≡ 1 mod 2N
        assert!(matches!(Params::new(lit), Err(HeError::InvalidParams(_))));
        let lit = ParamsLiteral::from_bit_sizes(8192, &[30], None, PlainModulus::PowerOfTwo(64)).unwrap();
        assert!(matches!(Params::new(lit), Err(HeError::InvalidParams(_))));
        let lit = ParamsLiteral::from_bit_sizes(8192, &[59], None, PlainModulus::Prime(12289)).unwrap();
        assert!(matches!(Params::new(lit), Err(HeError::InvalidParams(_))));
        let lit = ParamsLiteral::from_bit_sizes(32768, &[60; 13], Some(60), PlainModulus::PowerOfTwo(64)).unwrap();
        assert!(Params::new(lit).is_ok());
        // σ = √(η/2) below the HE standard's 3.2 is refused
        let mut lit = ParamsLiteral::from_bit_sizes(8192, &[59, 55], Some(49), PlainModulus::PowerOfTwo(64)).unwrap();
        lit.error_eta = MIN_ERROR_ETA - 1;
        assert!(matches!(Params::new(lit), Err(HeError::InvalidParams(_))));
    }
}
