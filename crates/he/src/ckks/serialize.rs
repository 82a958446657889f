//! Wire format of CKKS ciphertexts (keys reuse the RLWE formats of [`crate::serialize`]), so that BLB's communication (Table 9/10) can be counted:
//! `"NC"`, a version byte ([`CKKS_WIRE_VERSION`]), a kind byte, the 8-byte
//! [`CkksParams::fingerprint`], the scale as an `f64` (8 bytes), then the `(c0, c1)` body in the
//! RLWE format of [`crate::serialize`] (its own header, exact length and residue checks; a fresh
//! top-level symmetric ciphertext travels as `(b, seed)`). Malformed input is a
//! [`HeError::Malformed`], never a panic. Size at level `l`: `35 + ceil(2·N·Σ_{i<l} log2 q_i / 8)`
//! bytes (`51 + ceil(N·Σ/8)` seeded).

use super::ciphertext::CkksCiphertext;
use super::keys::{CkksGaloisKeys, CkksPublicKey, RelinKey};
use super::params::CkksParams;
use crate::ciphertext::Ciphertext;
use crate::keys::{GaloisKeys, PublicKey};
use crate::HeError;

/// Wire-format version (AGREEMENT).
pub const CKKS_WIRE_VERSION: u8 = 1;
const KIND_CT: u8 = 1;
const HEADER: usize = 20;
/// Header of the inner RLWE body (`"NH"`, version, kind, fingerprint, level, component, flags).
const INNER_HEADER: usize = 15;

impl CkksParams {
    /// Bytes of a serialized 2-component ciphertext at `level` (`seeded`: a fresh symmetric
    /// top-level ciphertext, sent as `(b, seed)`).
    pub fn ciphertext_bytes(&self, level: usize, seeded: bool) -> Result<usize, HeError> {
        self.check_level(level)?;
        let seeded = seeded && level == self.max_level();
        let bits: usize = (0..level).map(|i| self.engine().modulus(i).bits() as usize).sum();
        let polys = if seeded { 1 } else { 2 };
        Ok(HEADER + INNER_HEADER + if seeded { 16 } else { 0 } + (bits * polys * self.n()).div_ceil(8))
    }
}

impl CkksCiphertext {
    /// The wire form (2-component ciphertexts only: relinearise first).
    pub fn serialize(&self, params: &CkksParams) -> Result<Vec<u8>, HeError> {
        if self.c2.is_some() {
            return Err(HeError::Mismatch("serializing an unrelinearised ciphertext".into()));
        }
        let mut out = vec![b'N', b'C', CKKS_WIRE_VERSION, KIND_CT];
        out.extend_from_slice(&params.fingerprint().to_le_bytes());
        out.extend_from_slice(&self.scale.to_le_bytes());
        out.extend_from_slice(&self.ct.serialize(params.engine()));
        Ok(out)
    }

    /// Size in bytes of [`Self::serialize`]'s output.
    pub fn serialized_len(&self, params: &CkksParams) -> usize {
        HEADER + self.ct.serialized_len(params.engine())
    }

    /// Parses [`Self::serialize`]'s output (exact length, parameter fingerprint, residues
    /// below their primes, a finite positive scale).
    pub fn deserialize(params: &CkksParams, bytes: &[u8]) -> Result<Self, HeError> {
        let bad = |s: &str| Err(HeError::Malformed(s.into()));
        if bytes.len() < HEADER {
            return bad("truncated CKKS header");
        }
        if &bytes[..2] != b"NC" {
            return bad("bad magic");
        }
        if bytes[2] != CKKS_WIRE_VERSION {
            return Err(HeError::Malformed(format!("unsupported CKKS version {}", bytes[2])));
        }
        if bytes[3] != KIND_CT {
            return bad("not a CKKS ciphertext");
        }
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[4..12]);
        if u64::from_le_bytes(w) != params.fingerprint() {
            return bad("CKKS parameter fingerprint mismatch");
        }
        w.copy_from_slice(&bytes[12..20]);
        let scale = f64::from_le_bytes(w);
        if !(scale.is_finite() && scale >= 1.0) {
            return bad("scale is not a finite value >= 1");
        }
        let ct = Ciphertext::deserialize(params.engine(), &bytes[HEADER..])?;
        Ok(CkksCiphertext { ct, c2: None, scale })
    }
}

impl CkksPublicKey {
    /// Wire form (the RLWE public-key format: `p0` and the seed of `a`).
    pub fn serialize(&self, params: &CkksParams) -> Vec<u8> {
        self.pk.serialize(params.engine())
    }
    /// Parses [`Self::serialize`]'s output.
    pub fn deserialize(params: &CkksParams, bytes: &[u8]) -> Result<Self, HeError> {
        Ok(Self { pk: PublicKey::deserialize(params.engine(), bytes)? })
    }
}

impl CkksGaloisKeys {
    /// Wire form (the RLWE Galois-key format: per element, its seed and `L` polynomials).
    pub fn serialize(&self, params: &CkksParams) -> Vec<u8> {
        self.keys.serialize(params.engine())
    }
    /// Parses [`Self::serialize`]'s output.
    pub fn deserialize(params: &CkksParams, bytes: &[u8]) -> Result<Self, HeError> {
        Ok(Self { keys: GaloisKeys::deserialize(params.engine(), bytes)? })
    }
    /// Wire form with each key truncated to the level it is used at (ciphertexts of
    /// `levels[k]` primes and below, per rotation step `k`; absent: the top level): the
    /// RLWE format of [`GaloisKeys::serialize_digits`].
    pub fn serialize_at_levels(&self, params: &CkksParams, levels: &std::collections::BTreeMap<i64, usize>) -> Result<Vec<u8>, HeError> {
        let digits = levels.iter().map(|(&k, &l)| (crate::ckks::rotation_element(params.n(), k), l)).collect();
        self.keys.serialize_digits(params.engine(), &digits)
    }
    /// Parses [`Self::serialize_at_levels`]'s output: the keys and, per Galois element, the
    /// highest level each serves.
    pub fn deserialize_at_levels(params: &CkksParams, bytes: &[u8]) -> Result<(Self, std::collections::BTreeMap<u64, usize>), HeError> {
        let (keys, digits) = GaloisKeys::deserialize_digits(params.engine(), bytes)?;
        Ok((Self { keys }, digits))
    }
}

impl RelinKey {
    /// Wire form: the Galois-key format with the single element `g = 1` (the same layout).
    pub fn serialize(&self, params: &CkksParams) -> Vec<u8> {
        let mut keys = std::collections::BTreeMap::new();
        keys.insert(1, self.key.clone());
        GaloisKeys { keys }.serialize(params.engine())
    }
    /// Parses [`Self::serialize`]'s output (exactly one key, for `g = 1`).
    pub fn deserialize(params: &CkksParams, bytes: &[u8]) -> Result<Self, HeError> {
        let mut gk = GaloisKeys::deserialize(params.engine(), bytes)?;
        match (gk.keys.len(), gk.keys.remove(&1)) {
            (1, Some(key)) => Ok(Self { key }),
            _ => Err(HeError::Malformed("a relinearisation key is exactly one key for g = 1".into())),
        }
    }
}
