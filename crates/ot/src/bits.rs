//! Bit packing helpers for wire messages (bit `i` is bit `i % 8` of byte `i / 8`).

use crate::OtError;

/// Pack booleans into bytes.
pub fn pack_bits(bits: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; bits.len().div_ceil(8)];
    for (i, &b) in bits.iter().enumerate() {
        out[i / 8] |= (b as u8) << (i % 8);
    }
    out
}

/// Unpack exactly `n` bits from a message that must be exactly `ceil(n/8)` bytes.
pub fn unpack_bits(bytes: &[u8], n: usize) -> Result<Vec<bool>, OtError> {
    if bytes.len() != n.div_ceil(8) {
        return Err(OtError::BadMessage { what: "bit vector", expected: n.div_ceil(8), got: bytes.len() });
    }
    Ok((0..n).map(|i| (bytes[i / 8] >> (i % 8)) & 1 == 1).collect())
}

/// Pack `k`-bit words (`1 <= k <= 128`, the low `k` bits of each value) into a byte string.
pub fn pack_words(xs: &[u128], k: usize) -> Vec<u8> {
    debug_assert!((1..=128).contains(&k));
    let total = xs.len() * k;
    let mut out = vec![0u8; total.div_ceil(8) + WORD_SLACK];
    let mask = mask128(k);
    for (i, &x) in xs.iter().enumerate() {
        or_word(&mut out, i * k, x & mask, k);
    }
    out.truncate(total.div_ceil(8));
    out
}

/// Bytes a buffer read by [`word_at`] needs past its last word's first byte.
pub const WORD_SLACK: usize = 17;

/// ORs the `k`-bit word `x` (already masked to `k` bits) into `out` at bit position `pos`: the
/// layout of [`pack_words`]. Touches only the bytes the word spans.
pub fn or_word(out: &mut [u8], pos: usize, x: u128, k: usize) {
    let byte = pos / 8;
    let sh = pos % 8;
    let span = (sh + k).div_ceil(8);
    // Up to 136 bits: the low part shifted, then the spill.
    let lo = (x << sh).to_le_bytes();
    for (o, b) in out[byte..byte + span.min(16)].iter_mut().zip(lo) {
        *o |= b;
    }
    if span > 16 {
        out[byte + 16] |= (x >> (128 - sh)) as u8;
    }
}

/// The `k`-bit word at bit position `pos` of `padded` (the layout of [`pack_words`]); `padded`
/// must extend [`WORD_SLACK`] bytes past byte `pos / 8`.
pub fn word_at(padded: &[u8], pos: usize, k: usize) -> u128 {
    let byte = pos / 8;
    let sh = pos % 8;
    let mut lo = [0u8; 16];
    lo.copy_from_slice(&padded[byte..byte + 16]);
    let mut x = u128::from_le_bytes(lo) >> sh;
    if sh != 0 {
        x |= (padded[byte + 16] as u128) << (128 - sh);
    }
    x & mask128(k)
}

/// Unpack `n` words of `k` bits from a message that must be exactly `ceil(n*k/8)` bytes.
pub fn unpack_words(bytes: &[u8], n: usize, k: usize) -> Result<Vec<u128>, OtError> {
    let padded = padded_words(bytes.to_vec(), n, k)?;
    Ok((0..n).map(|i| word_at(&padded, i * k, k)).collect())
}

/// A message of `n` packed `k`-bit words, checked to be exactly `ceil(n*k/8)` bytes and padded
/// with [`WORD_SLACK`] zero bytes so that [`word_at`] can read any of its words.
pub fn padded_words(mut bytes: Vec<u8>, n: usize, k: usize) -> Result<Vec<u8>, OtError> {
    let need = (n * k).div_ceil(8);
    if bytes.len() != need {
        return Err(OtError::BadMessage { what: "packed words", expected: need, got: bytes.len() });
    }
    bytes.resize(need + WORD_SLACK, 0);
    Ok(bytes)
}

/// The low-`k`-bits mask (`k <= 128`).
pub fn mask128(k: usize) -> u128 {
    if k >= 128 {
        u128::MAX
    } else {
        (1u128 << k) - 1
    }
}

/// The low-`l`-bits mask (`l <= 64`).
pub fn mask64(l: u32) -> u64 {
    if l >= 64 {
        u64::MAX
    } else {
        (1u64 << l) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let bits: Vec<bool> = (0..77).map(|i| i % 3 == 0).collect();
        assert_eq!(unpack_bits(&pack_bits(&bits), 77).unwrap(), bits);
        assert!(unpack_bits(&pack_bits(&bits), 78).is_ok());
        assert!(unpack_bits(&pack_bits(&bits), 90).is_err());
        for k in [1usize, 2, 7, 8, 13, 64, 100, 127, 128] {
            let xs: Vec<u128> = (0..37u128).map(|i| 0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835u128.wrapping_mul(i + 1) & mask128(k)).collect();
            let p = pack_words(&xs, k);
            assert_eq!(p.len(), (37 * k).div_ceil(8));
            assert_eq!(unpack_words(&p, 37, k).unwrap(), xs, "k={k}");
            // The layout bit by bit: bit b of word i is bit i·k + b of the string.
            for (i, &x) in xs.iter().enumerate() {
                for b in 0..k {
                    let at = i * k + b;
                    assert_eq!((p[at / 8] >> (at % 8)) & 1 == 1, (x >> b) & 1 == 1, "k={k} word {i} bit {b}");
                }
            }
        }
    }
}
