//! Versioned, length-checked, bit-packed wire formats for ciphertexts and key material.
//!
//! Every message starts with `"NH"`, a version byte ([`WIRE_VERSION`]), a kind byte and the
//! 8-byte [`Params::fingerprint`] of the parameter set (a mismatch is an error). Residues
//! modulo `q_i` are packed little-endian at `ceil(log2 q_i)` bits each, limb after limb; the
//! uniform `a` polynomials of fresh symmetric ciphertexts, public keys and Galois keys are
//! replaced by their 16-byte seed. Sizes (OLT preset, `N = 8192`, 163-bit `q`):
//! fresh `(b, seed)` ciphertext `N·163/8 + 31 = 166,943` bytes; unseeded `2·N·163/8 + 15`.
//! Decoding checks the exact length and that every residue is `< q_i`; malformed input is a
//! [`HeError::Malformed`], never a panic.
//!
//! [`Ciphertext::serialize_partial`] sends only the `b`-coefficients at agreed positions
//! (BumbleBee sends only the useful coefficients after H2A); the receiver passes the same
//! positions to [`Ciphertext::deserialize_partial`] and must ignore the other positions of
//! the decryption.

use crate::ciphertext::Ciphertext;
use crate::keys::{all_mods, expand_seed, GaloisKey, GaloisKeys, PublicKey};
use crate::params::Params;
use crate::poly::RnsPoly;
use crate::HeError;
use std::collections::BTreeMap;

/// Wire-format version (AGREEMENT).
pub const WIRE_VERSION: u8 = 1;
const KIND_CT: u8 = 1;
const KIND_PK: u8 = 2;
const KIND_GK: u8 = 3;
const KIND_GK_DIGITS: u8 = 4;
const F_SEEDED: u8 = 1;
const F_C0_NTT: u8 = 2;
const F_C1_NTT: u8 = 4;
const F_PARTIAL: u8 = 8;

fn malformed<T>(s: impl Into<String>) -> Result<T, HeError> {
    Err(HeError::Malformed(s.into()))
}

/// Little-endian bit packer: values enter an accumulator and leave it eight bytes at a time
/// (the same byte stream as writing it bit by bit).
struct BitWriter {
    out: Vec<u8>,
    acc: u128,
    nbits: u32,
}

impl BitWriter {
    fn new(out: Vec<u8>) -> Self {
        Self { out, acc: 0, nbits: 0 }
    }
    /// Appends the low `bits` (≤ 64) bits of `v`; `v < 2^bits`.
    fn put(&mut self, v: u64, bits: u32) {
        self.acc |= (v as u128) << self.nbits;
        self.nbits += bits;
        if self.nbits >= 64 {
            self.out.extend_from_slice(&(self.acc as u64).to_le_bytes());
            self.acc >>= 64;
            self.nbits -= 64;
        }
    }
    fn finish(mut self) -> Vec<u8> {
        let tail = self.nbits.div_ceil(8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..tail]);
        self.out
    }
}

/// The reader of [`BitWriter`]'s stream: refills eight bytes at a time while eight remain,
/// then byte by byte, so a truncated stream fails at the same value as a bitwise reader.
struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
    acc: u128,
    nbits: u32,
}

impl<'a> BitReader<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0, acc: 0, nbits: 0 }
    }
    /// The next `bits` (≤ 64) bits.
    fn get(&mut self, bits: u32) -> Result<u64, HeError> {
        if self.nbits < bits {
            match self.data.get(self.pos..self.pos + 8) {
                Some(w) => {
                    let mut word = [0u8; 8];
                    word.copy_from_slice(w);
                    self.acc |= (u64::from_le_bytes(word) as u128) << self.nbits;
                    self.pos += 8;
                    self.nbits += 64;
                }
                None => {
                    while self.nbits < bits {
                        let b = *self.data.get(self.pos).ok_or_else(|| HeError::Malformed("truncated".into()))?;
                        self.acc |= (b as u128) << self.nbits;
                        self.pos += 1;
                        self.nbits += 8;
                    }
                }
            }
        }
        let v = (self.acc & ((1u128 << bits) - 1)) as u64;
        self.acc >>= bits;
        self.nbits -= bits;
        Ok(v)
    }
    /// Remaining bits must be zero padding (less than a byte) and no bytes may follow.
    fn finish(self) -> Result<(), HeError> {
        let unread = self.data.len() - self.pos + (self.nbits / 8) as usize;
        if unread != 0 {
            return malformed(format!("{unread} trailing bytes"));
        }
        if self.acc != 0 {
            return malformed("non-zero padding");
        }
        Ok(())
    }
}

fn packed_bytes(params: &Params, mods: &[usize], count: usize) -> usize {
    let bits: usize = mods.iter().map(|&m| params.modulus(m).bits() as usize).sum();
    (bits * count).div_ceil(8)
}

fn write_poly(params: &Params, w: &mut BitWriter, p: &RnsPoly, positions: Option<&[usize]>) {
    for (i, &mi) in p.mods.iter().enumerate() {
        let b = params.modulus(mi).bits();
        let l = p.limb(i);
        match positions {
            Some(pos) => pos.iter().for_each(|&k| w.put(l[k], b)),
            None => l.iter().for_each(|&x| w.put(x, b)),
        }
    }
}

fn read_poly(
    params: &Params,
    r: &mut BitReader,
    mods: Vec<usize>,
    ntt: bool,
    positions: Option<&[usize]>,
) -> Result<RnsPoly, HeError> {
    let mut p = RnsPoly::zero(params.n(), mods, ntt);
    for i in 0..p.limbs() {
        let m = *params.modulus(p.mods[i]);
        let b = m.bits();
        let n = params.n();
        let l = p.limb_mut(i);
        let mut one = |k: usize| -> Result<(), HeError> {
            let v = r.get(b)?;
            if v >= m.value() {
                return malformed(format!("residue {v} >= modulus {}", m.value()));
            }
            l[k] = v;
            Ok(())
        };
        match positions {
            Some(pos) => pos.iter().try_for_each(|&k| one(k))?,
            None => (0..n).try_for_each(one)?,
        }
    }
    Ok(p)
}

fn header(params: &Params, kind: u8) -> Vec<u8> {
    let mut v = vec![b'N', b'H', WIRE_VERSION, kind];
    v.extend_from_slice(&params.fingerprint().to_le_bytes());
    v
}

fn check_header<'a>(params: &Params, bytes: &'a [u8], kind: u8) -> Result<&'a [u8], HeError> {
    if bytes.len() < 12 {
        return malformed("truncated header");
    }
    if &bytes[..2] != b"NH" {
        return malformed("bad magic");
    }
    if bytes[2] != WIRE_VERSION {
        return malformed(format!("unsupported version {}", bytes[2]));
    }
    if bytes[3] != kind {
        return malformed(format!("kind {} where {kind} expected", bytes[3]));
    }
    let mut fp = [0u8; 8];
    fp.copy_from_slice(&bytes[4..12]);
    if u64::from_le_bytes(fp) != params.fingerprint() {
        return malformed("parameter fingerprint mismatch");
    }
    Ok(&bytes[12..])
}

fn take<'a>(b: &mut &'a [u8], n: usize) -> Result<&'a [u8], HeError> {
    if b.len() < n {
        return malformed("truncated");
    }
    let (h, t) = b.split_at(n);
    *b = t;
    Ok(h)
}

fn check_positions(params: &Params, keep: &[usize]) -> Result<(), HeError> {
    if keep.windows(2).any(|w| w[0] >= w[1]) || keep.last().is_some_and(|&k| k >= params.n()) {
        return Err(HeError::OutOfRange("positions must be strictly increasing and < N".into()));
    }
    Ok(())
}

impl Ciphertext {
    fn ser(&self, params: &Params, keep: Option<&[usize]>) -> Result<Vec<u8>, HeError> {
        let mut c0 = self.c0.clone();
        let mut flags = 0u8;
        if let Some(k) = keep {
            check_positions(params, k)?;
            c0.to_coeff(params);
            flags |= F_PARTIAL;
        }
        // Every operation that changes `c1` (or its level) clears the seed, so a seed present
        // with `c1` in NTT form is the expansion of `c1` on its primes.
        let seeded = self.seed.filter(|_| self.c1.ntt);
        if seeded.is_some() {
            flags |= F_SEEDED;
        }
        if c0.ntt {
            flags |= F_C0_NTT;
        }
        if self.c1.ntt {
            flags |= F_C1_NTT;
        }
        let mut out = header(params, KIND_CT);
        out.extend_from_slice(&[self.level() as u8, self.plain_index as u8, flags]);
        if let Some(s) = seeded {
            out.extend_from_slice(&s);
        }
        if let Some(k) = keep {
            out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        }
        let values = keep.map_or(params.n(), |k| k.len()) + if seeded.is_none() { params.n() } else { 0 };
        out.reserve(packed_bytes(params, &c0.mods, values) + 8);
        let mut w = BitWriter::new(out);
        write_poly(params, &mut w, &c0, keep);
        if seeded.is_none() {
            write_poly(params, &mut w, &self.c1, None);
        }
        Ok(w.finish())
    }

    /// The wire form: `(b, seed)` for a fresh symmetric ciphertext, else `(c0, c1)`.
    pub fn serialize(&self, params: &Params) -> Vec<u8> {
        // Without positions there is nothing to validate, so this cannot fail.
        self.ser(params, None).unwrap_or_default()
    }

    /// Like [`Ciphertext::serialize`] but with only the `b` coefficients at `keep`
    /// (strictly increasing positions `< N`), `b` in coefficient form.
    pub fn serialize_partial(&self, params: &Params, keep: &[usize]) -> Result<Vec<u8>, HeError> {
        self.ser(params, Some(keep))
    }

    /// Size in bytes of [`Ciphertext::serialize`]'s output.
    pub fn serialized_len(&self, params: &Params) -> usize {
        let seeded = self.seed.is_some() && self.c1.ntt;
        params.ciphertext_len(self.level(), seeded)
    }

    fn de(params: &Params, bytes: &[u8], keep: Option<&[usize]>) -> Result<Ciphertext, HeError> {
        let mut b = check_header(params, bytes, KIND_CT)?;
        let h = take(&mut b, 3)?;
        let (level, plain_index, flags) = (h[0] as usize, h[1] as usize, h[2]);
        if level == 0 || level > params.max_level() || plain_index >= params.plain_count() {
            return malformed(format!("level {level} / plaintext component {plain_index}"));
        }
        if flags & !(F_SEEDED | F_C0_NTT | F_C1_NTT | F_PARTIAL) != 0 {
            return malformed("unknown flags");
        }
        let seed = if flags & F_SEEDED != 0 {
            if flags & F_C1_NTT == 0 {
                return malformed("seeded ciphertext must have a in NTT form");
            }
            let mut s = [0u8; 16];
            s.copy_from_slice(take(&mut b, 16)?);
            Some(s)
        } else {
            None
        };
        match (keep, flags & F_PARTIAL != 0) {
            (Some(k), true) => {
                let mut c = [0u8; 4];
                c.copy_from_slice(take(&mut b, 4)?);
                if u32::from_le_bytes(c) as usize != k.len() {
                    return malformed("position count differs from the agreed positions");
                }
                if flags & F_C0_NTT != 0 {
                    return malformed("partial ciphertext with b in NTT form");
                }
            }
            (None, false) => {}
            _ => return malformed("partial flag does not match the call"),
        }
        let mods: Vec<usize> = (0..level).collect();
        let mut r = BitReader::new(b);
        let c0 = read_poly(params, &mut r, mods.clone(), flags & F_C0_NTT != 0, keep)?;
        let c1 = match seed {
            Some(s) => expand_seed(params, s, mods),
            None => read_poly(params, &mut r, mods, flags & F_C1_NTT != 0, None)?,
        };
        r.finish()?;
        Ok(Ciphertext { c0, c1, seed, plain_index })
    }

    /// Parses [`Ciphertext::serialize`]'s output.
    pub fn deserialize(params: &Params, bytes: &[u8]) -> Result<Ciphertext, HeError> {
        Self::de(params, bytes, None)
    }

    /// Parses [`Ciphertext::serialize_partial`]'s output; `b` is zero outside `keep`.
    pub fn deserialize_partial(params: &Params, bytes: &[u8], keep: &[usize]) -> Result<Ciphertext, HeError> {
        check_positions(params, keep)?;
        Self::de(params, bytes, Some(keep))
    }
}

impl Params {
    /// Size in bytes of a serialized ciphertext at `level` (all coefficients): `seeded` is a
    /// fresh symmetric one (`b` and a 16-byte seed), otherwise `(c0, c1)`.
    /// What a protocol plans its traffic with before any ciphertext exists (e.g. the OLT window
    /// chooser's byte prices).
    pub fn ciphertext_len(&self, level: usize, seeded: bool) -> usize {
        let mods: Vec<usize> = (0..level).collect();
        let polys = if seeded { 1 } else { 2 };
        15 + if seeded { 16 } else { 0 } + packed_bytes(self, &mods, polys * self.n())
    }
}

impl PublicKey {
    /// Wire form `(p0, seed)`.
    pub fn serialize(&self, params: &Params) -> Vec<u8> {
        let mut out = header(params, KIND_PK);
        out.extend_from_slice(&self.seed);
        let mut w = BitWriter::new(out);
        write_poly(params, &mut w, &self.p0, None);
        w.finish()
    }

    /// Parses [`PublicKey::serialize`]'s output.
    pub fn deserialize(params: &Params, bytes: &[u8]) -> Result<PublicKey, HeError> {
        let mut b = check_header(params, bytes, KIND_PK)?;
        let mut seed = [0u8; 16];
        seed.copy_from_slice(take(&mut b, 16)?);
        let mods: Vec<usize> = (0..params.max_level()).collect();
        let mut r = BitReader::new(b);
        let p0 = read_poly(params, &mut r, mods.clone(), true, None)?;
        r.finish()?;
        Ok(PublicKey { p0, p1: expand_seed(params, seed, mods), seed })
    }
}

/// A Galois key's element (odd, below `2N`, not seen before) and seed.
fn key_head(params: &Params, b: &mut &[u8], keys: &BTreeMap<u64, GaloisKey>) -> Result<(u64, [u8; 16]), HeError> {
    let mut gb = [0u8; 8];
    gb.copy_from_slice(take(b, 8)?);
    let g = u64::from_le_bytes(gb);
    if g % 2 == 0 || g >= 2 * params.n() as u64 || keys.contains_key(&g) {
        return malformed(format!("bad Galois element {g}"));
    }
    let mut seed = [0u8; 16];
    seed.copy_from_slice(take(b, 16)?);
    Ok((g, seed))
}

/// The first `d` polynomials `a_j` of a key from its seed, over every prime (as drawn).
fn expand_digits(params: &Params, seed: [u8; 16], d: usize) -> Vec<RnsPoly> {
    let mut prg = nectar_math::Prg::new(seed);
    (0..d).map(|_| crate::poly::sample_uniform(params, &mut prg, all_mods(params))).collect()
}

impl GaloisKeys {
    /// Wire form: count, then per element `g`, its seed and the `L` polynomials `b_j`.
    pub fn serialize(&self, params: &Params) -> Vec<u8> {
        let mut out = header(params, KIND_GK);
        out.extend_from_slice(&(self.keys.len() as u32).to_le_bytes());
        for (&g, k) in &self.keys {
            out.extend_from_slice(&g.to_le_bytes());
            out.extend_from_slice(&k.seed);
            let mut w = BitWriter::new(std::mem::take(&mut out));
            k.b.iter().for_each(|p| write_poly(params, &mut w, p, None));
            out = w.finish();
        }
        out
    }

    /// Wire form of keys each truncated to the level it is used at: per element `g` its
    /// seed, its digit count `d = digits[g]` (`1..=L`; absent: `L`) and the polynomials
    /// `b_0..b_{d−1}` on the primes `q_0..q_{d−1}` and `P` only. Such a key switches
    /// ciphertexts of level `d` and below (their digits and primes are a prefix of the
    /// key's); it is `d(d+1)/(L(L+1))` of the whole key's bytes.
    pub fn serialize_digits(&self, params: &Params, digits: &BTreeMap<u64, usize>) -> Result<Vec<u8>, HeError> {
        let l = params.max_level();
        let mut out = header(params, KIND_GK_DIGITS);
        out.extend_from_slice(&(self.keys.len() as u32).to_le_bytes());
        for (&g, k) in &self.keys {
            let d = digits.get(&g).copied().unwrap_or(l);
            if d == 0 || d > l || k.b.len() < d {
                return Err(HeError::Mismatch(format!("Galois key {g}: {d} digits of {}", k.b.len())));
            }
            out.extend_from_slice(&g.to_le_bytes());
            out.extend_from_slice(&k.seed);
            out.extend_from_slice(&(d as u32).to_le_bytes());
            let mut w = BitWriter::new(std::mem::take(&mut out));
            for p in &k.b[..d] {
                for t in (0..d).chain([l]) {
                    let limb = p.limb_of(t).ok_or_else(|| HeError::Mismatch(format!("Galois key {g} lacks prime {t}")))?;
                    let bits = params.modulus(t).bits();
                    limb.iter().for_each(|&v| w.put(v, bits));
                }
            }
            out = w.finish();
        }
        Ok(out)
    }

    /// Parses [`GaloisKeys::serialize_digits`]'s output; returns the keys and each one's digit
    /// count.
    pub fn deserialize_digits(params: &Params, bytes: &[u8]) -> Result<(GaloisKeys, BTreeMap<u64, usize>), HeError> {
        if !params.has_special_prime() {
            return Err(HeError::NoSpecialPrime);
        }
        let mut b = check_header(params, bytes, KIND_GK_DIGITS)?;
        let mut c = [0u8; 4];
        c.copy_from_slice(take(&mut b, 4)?);
        let count = u32::from_le_bytes(c) as usize;
        if count > params.n() {
            return malformed("Galois key count above N");
        }
        let l = params.max_level();
        let (mut keys, mut digits) = (BTreeMap::new(), BTreeMap::new());
        for _ in 0..count {
            let (g, seed) = key_head(params, &mut b, &keys)?;
            c.copy_from_slice(take(&mut b, 4)?);
            let d = u32::from_le_bytes(c) as usize;
            if d == 0 || d > l {
                return malformed(format!("Galois key {g}: {d} digits (1..={l})"));
            }
            let mods: Vec<usize> = (0..d).chain([l]).collect();
            let body = take(&mut b, packed_bytes(params, &mods, params.n() * d))?;
            let mut r = BitReader::new(body);
            let bs = (0..d).map(|_| read_poly(params, &mut r, mods.clone(), true, None)).collect::<Result<Vec<_>, _>>()?;
            r.finish()?;
            // `a_j` as the client drew them (over every prime, in order), the first `d`.
            keys.insert(g, GaloisKey { seed, b: bs, a: expand_digits(params, seed, d) });
            digits.insert(g, d);
        }
        if !b.is_empty() {
            return malformed("bytes after the last Galois key");
        }
        Ok((GaloisKeys { keys }, digits))
    }

    /// Parses [`GaloisKeys::serialize`]'s output.
    pub fn deserialize(params: &Params, bytes: &[u8]) -> Result<GaloisKeys, HeError> {
        if !params.has_special_prime() {
            return Err(HeError::NoSpecialPrime);
        }
        let mut b = check_header(params, bytes, KIND_GK)?;
        let mut c = [0u8; 4];
        c.copy_from_slice(take(&mut b, 4)?);
        let count = u32::from_le_bytes(c) as usize;
        let mods = all_mods(params);
        let l = params.max_level();
        let per_key = packed_bytes(params, &mods, params.n() * l);
        if count > params.n() || b.len() != count * (24 + per_key) {
            return malformed("Galois key count does not match the length");
        }
        let mut keys = BTreeMap::new();
        for _ in 0..count {
            let (g, seed) = key_head(params, &mut b, &keys)?;
            let body = take(&mut b, per_key)?;
            let mut r = BitReader::new(body);
            let bs = (0..l).map(|_| read_poly(params, &mut r, mods.clone(), true, None)).collect::<Result<Vec<_>, _>>()?;
            r.finish()?;
            keys.insert(g, GaloisKey { seed, b: bs, a: expand_digits(params, seed, l) });
        }
        Ok(GaloisKeys { keys })
    }
}
