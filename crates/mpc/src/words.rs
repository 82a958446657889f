//! Helpers on ring words and operand lengths shared by every share-level protocol: masks of
//! `Z_{2^l}`, signed values, MSBs, public operands given once or per element.

use crate::{MpcError, Result};

/// `2^l − 1` for `1 <= l <= 64`.
pub fn mask(l: u32) -> Result<u64> {
    match l {
        1..=63 => Ok((1u64 << l) - 1),
        64 => Ok(u64::MAX),
        _ => Err(MpcError::BadArgument(format!(
            "ring width {l} not in 1..=64"
        ))),
    }
}

/// `2^k mod 2^64` (0 for `k >= 64`), for shifts that may reach the word size.
pub(crate) fn pow2(k: u32) -> u64 {
    if k >= 64 {
        0
    } else {
        1u64 << k
    }
}

/// Signed value of the ring element `v` of `Z_{2^l}`.
pub fn to_signed(v: u64, l: u32) -> i64 {
    if l >= 64 {
        v as i64
    } else {
        let v = v & ((1u64 << l) - 1);
        if v >> (l - 1) & 1 == 1 {
            (v as i64).wrapping_sub(1i64 << l)
        } else {
            v as i64
        }
    }
}

/// Most significant bit of `v` in `Z_{2^l}`.
pub fn msb_of(v: u64, l: u32) -> bool {
    (v >> (l - 1)) & 1 == 1
}

pub(crate) fn same_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected != got {
        return Err(MpcError::Length {
            what,
            expected,
            got,
        });
    }
    Ok(())
}

/// A public operand given once (broadcast) or once per element.
pub(crate) fn broadcast<'a>(
    c: &'a [u64],
    n: usize,
    what: &'static str,
) -> Result<Box<dyn Iterator<Item = u64> + 'a>> {
    match c.len() {
        1 => Ok(Box::new(std::iter::repeat_n(c[0], n))),
        m if m == n => Ok(Box::new(c.iter().copied())),
        m => Err(MpcError::Length {
            what,
            expected: n,
            got: m,
        }),
    }
}
