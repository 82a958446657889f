//! Encoded layer weights kept between uses: the cache behind
//! [`crate::secure::weight_cache::CachingSource`] (its module docs say why). A leaf module:
//! [`crate::weights::WeightSource`] names it, so it names nothing of the crate.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What an encoded weight depends on besides the ring width (which only masks): the tensor's
/// name and shape, whether it is stored `out × in`, the fractional bits and the column scale
/// (`scale_cols` columns multiplied by `scale_by`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EncodedKey {
    name: String,
    in_dim: usize,
    out_dim: usize,
    out_in: bool,
    frac_bits: u32,
    scale_cols: usize,
    scale_by: u64,
}

impl EncodedKey {
    /// The key of `name` (`in_dim × out_dim`, stored `out × in` when `out_in`) encoded with
    /// `frac_bits` fractional bits, its first `scale_cols` output columns scaled by `scale_by`.
    pub fn new(name: &str, in_dim: usize, out_dim: usize, out_in: bool, frac_bits: u32, scale_cols: usize, scale_by: f64) -> Self {
        EncodedKey { name: name.to_string(), in_dim, out_dim, out_in, frac_bits, scale_cols, scale_by: scale_by.to_bits() }
    }
}

/// Largest budget of a server's [`EncodedWeights`] (LOCAL: SmolLM2-135M takes 0.65 GB with its tied head, BERT-base
/// 0.44 GB; [`crate::secure::weight_cache::budget_for`]).
pub const MAX_BUDGET_BYTES: usize = 1 << 30;

/// Encoded weights by [`EncodedKey`] as 32-bit signed integers, at most `budget` bytes of them.
pub struct EncodedWeights {
    budget: usize,
    inner: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    map: HashMap<EncodedKey, Arc<[i32]>>,
    bytes: usize,
}

impl EncodedWeights {
    /// An empty cache that holds at most `budget` bytes (0: nothing is kept).
    pub fn new(budget: usize) -> Self {
        EncodedWeights { budget, inner: Mutex::new(Held::default()) }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.inner.lock().map(|h| h.bytes).unwrap_or(0)
    }

    /// The encoding under `key` as elements of `Z_{2^l}`, if held.
    pub fn get(&self, key: &EncodedKey, l: u32) -> Option<Vec<u64>> {
        let v = self.inner.lock().ok()?.map.get(key).cloned()?;
        Some(expand(&v, l))
    }

    /// Keeps `values` (elements of `Z_{2^l}`) under `key` when each fits 32 signed bits and the
    /// budget allows; whether it was kept.
    pub fn insert(&self, key: EncodedKey, values: &[u64], l: u32) -> bool {
        let bytes = values.len() * std::mem::size_of::<i32>();
        if !(1..=64).contains(&l) || bytes > self.budget {
            return false;
        }
        let Some(small) = compress(values, l) else { return false };
        let Ok(mut h) = self.inner.lock() else { return false };
        if h.map.contains_key(&key) {
            return true;
        }
        if h.bytes + bytes > self.budget {
            return false;
        }
        h.bytes += bytes;
        h.map.insert(key, small);
        true
    }
}

/// `values` (elements of `Z_{2^l}`, `1 ≤ l ≤ 64`) as signed 32-bit integers, if each fits.
fn compress(values: &[u64], l: u32) -> Option<Arc<[i32]>> {
    let s = 64 - l;
    values
        .iter()
        .map(|&v| i32::try_from(((v << s) as i64) >> s).ok())
        .collect::<Option<Vec<i32>>>()
        .map(Arc::from)
}

/// The elements of `Z_{2^l}` that [`compress`] took.
fn expand(values: &[i32], l: u32) -> Vec<u64> {
    let mask = if l >= 64 { u64::MAX } else { (1u64 << l) - 1 };
    values.iter().map(|&v| (v as i64 as u64) & mask).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> EncodedKey {
        EncodedKey::new(name, 2, 3, false, 18, 0, 1.0)
    }

    #[test]
    fn an_encoding_comes_back_as_it_went_in() {
        for l in [37u32, 51, 64] {
            let m = if l == 64 { u64::MAX } else { (1u64 << l) - 1 };
            let vals: Vec<u64> = [0i64, 1, -1, 5 << 18, -(3 << 20), i32::MAX as i64, i32::MIN as i64]
                .iter()
                .map(|&v| (v as u64) & m)
                .collect();
            let c = EncodedWeights::new(1 << 20);
            assert!(c.insert(key("w"), &vals, l));
            assert_eq!(c.get(&key("w"), l).unwrap(), vals, "l = {l}");
            assert_eq!(c.bytes(), 4 * vals.len());
        }
    }

    #[test]
    fn wide_encodings_and_the_budget_are_refused() {
        let c = EncodedWeights::new(16);
        let wide = [(1u64 << 31) & ((1 << 40) - 1)];
        assert!(!c.insert(key("wide"), &wide, 40), "2^31 does not fit 32 signed bits");
        assert!(c.get(&key("wide"), 40).is_none());
        assert!(c.insert(key("a"), &[1, 2, 3], 40));
        assert!(!c.insert(key("b"), &[1, 2], 40), "12 + 8 bytes pass the 16-byte budget");
        assert!(c.get(&key("b"), 40).is_none());
        assert_eq!(c.bytes(), 12);
        assert!(c.get(&EncodedKey::new("a", 2, 3, false, 18, 1, 0.5), 40).is_none(), "a different column scale is a different encoding");
    }
}
