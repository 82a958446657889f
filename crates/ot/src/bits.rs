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
    let mut out = vec![0u8; total.div_ceil(8) + 16];
    let mask = mask128(k);
    let mut pos = 0usize;
    for &x in xs {
        let x = x & mask;
        let byte = pos / 8;
        let sh = pos % 8;
        // Write up to 136 bits: low part shifted, then the spill.
        let lo = x << sh;
        let hi = if sh == 0 { 0 } else { x >> (128 - sh) };
        for (j, b) in lo.to_le_bytes().iter().enumerate() {
            out[byte + j] |= b;
        }
        out[byte + 16] |= hi as u8;
        pos += k;
    }
    out.truncate(total.div_ceil(8));
    out
}

/// Unpack `n` words of `k` bits from a message that must be exactly `ceil(n*k/8)` bytes.
pub fn unpack_words(bytes: &[u8], n: usize, k: usize) -> Result<Vec<u128>, OtError> {
    let need = (n * k).div_ceil(8);
    if bytes.len() != need {
        return Err(OtError::BadMessage { what: "packed words", expected: need, got: bytes.len() });
    }
    let mut padded = bytes.to_vec();
    padded.resize(need + 17, 0);
    let mask = mask128(k);
    let mut out = Vec::with_capacity(n);
    let mut pos = 0usize;
    for _ in 0..n {
        let byte = pos / 8;
        let sh = pos % 8;
        let mut lo = [0u8; 16];
        lo.copy_from_slice(&padded[byte..byte + 16]);
        let mut x = u128::from_le_bytes(lo) >> sh;
        if sh != 0 {
            x |= (padded[byte + 16] as u128) << (128 - sh);
        }
        out.push(x & mask);
        pos += k;
    }
    Ok(out)
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
        }
    }
}
