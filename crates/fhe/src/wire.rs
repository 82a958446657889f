//! Length-prefixed framing of the LEAF messages (key bundle, ciphertext lists). Every decoder
//! returns [`FheError::Malformed`] on bytes that do not parse (SECURITY: bytes from the peer).

use crate::FheError;

/// `parts` as `(u64 length, bytes)*`.
pub(crate) fn frame(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 8).sum());
    for p in parts {
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// Exactly `count` parts of [`frame`] (trailing bytes are an error).
pub(crate) fn unframe(mut b: &[u8], count: usize) -> Result<Vec<&[u8]>, FheError> {
    let bad = || FheError::Malformed("truncated or oversized frame".into());
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let (len, rest) = b.split_first_chunk::<8>().ok_or_else(bad)?;
        let len = usize::try_from(u64::from_le_bytes(*len)).map_err(|_| bad())?;
        if rest.len() < len {
            return Err(bad());
        }
        out.push(&rest[..len]);
        b = &rest[len..];
    }
    if !b.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_reject_bad_lengths() {
        let f = frame(&[b"ab", b"", b"xyz"]);
        assert_eq!(unframe(&f, 3).unwrap(), vec![&b"ab"[..], b"", b"xyz"]);
        assert!(unframe(&f, 2).is_err());
        assert!(unframe(&f, 4).is_err());
        assert!(unframe(&f[..f.len() - 1], 3).is_err());
    }
}
