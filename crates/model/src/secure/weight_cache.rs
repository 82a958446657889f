//! The server's encoded layer weights, kept between uses.
//!
//! A secure layer takes its weight as ring elements of the engine's format
//! ([`super::layers::load_decl`]): the tensor read from the checkpoint (a GGUF tensor
//! dequantised), scaled per output column and rounded. Without a cache that happens at every
//! use: once per query, and for a causal LM once per generated token — SmolLM2's 135 M weights,
//! its 28 M-entry tied LM head included, cost about 1.3 s of every decoding step on this
//! machine's server, on the step's critical path. [`CachingSource`] keeps each encoding, as
//! 32-bit signed integers (the encodings of real weights are far below `2^31`: `|w| < 2^13` at
//! `f = 18`), so a server holds about 4 bytes per weight it has used, within a byte budget; a
//! tensor whose encoding does not fit 32 bits, or that would pass the budget, is encoded at
//! every use as before.
//!
//! The cache is keyed by everything the encoding depends on — the tensor's name and shape, the
//! layout, the fractional bits and the column scale — and returns the same ring elements the
//! encoding would (the ring width only masks, so it is applied at expansion). The weights are
//! then those the server read first: a checkpoint rewritten underneath a running server no
//! longer changes the answers of later sessions (it fails none either).

use super::layers::EncodedKey;
use crate::config::ModelConfig;
use crate::weights::WeightSource;
use crate::ModelError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Largest budget of a server's [`EncodedWeights`] (LOCAL: SmolLM2-135M takes 0.54 GB, BERT-base
/// 0.44 GB; [`budget_for`]).
pub const DEFAULT_BUDGET_BYTES: usize = 1 << 30;

/// The budget a server of `config` gives its cache: 4 bytes per entry of every matrix the config
/// implies in `w` (each layer weight and embedding table once), at most `max`. A server counts
/// it as resident from the start (its memory admission), as the cache fills with its sessions.
pub fn budget_for(config: &ModelConfig, w: &dyn WeightSource, max: usize) -> Result<usize, ModelError> {
    let entries: usize = crate::shapes::expected_tensors(config, w)?
        .iter()
        .filter(|(_, shape)| shape.len() == 2)
        .map(|(_, shape)| shape.iter().product::<usize>())
        .sum();
    Ok(entries.saturating_mul(std::mem::size_of::<i32>()).min(max))
}

/// Encoded weights by [`EncodedKey`], at most `budget` bytes of them (module docs).
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

/// A weight source with an [`EncodedWeights`] cache (the server's: [`WeightSource::encoded`]).
pub struct CachingSource<S> {
    inner: S,
    cache: EncodedWeights,
}

impl<S: WeightSource> CachingSource<S> {
    /// `inner` with a cache of at most `budget` bytes.
    pub fn new(inner: S, budget: usize) -> Self {
        CachingSource { inner, cache: EncodedWeights::new(budget) }
    }
}

impl<S: WeightSource> WeightSource for CachingSource<S> {
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        self.inner.tensor(name, shape)
    }
    fn contains(&self, name: &str) -> bool {
        self.inner.contains(name)
    }
    fn shape(&self, name: &str) -> Option<Vec<usize>> {
        self.inner.shape(name)
    }
    fn check(&self, name: &str, shape: &[usize]) -> Result<(), ModelError> {
        self.inner.check(name, shape)
    }
    fn encoded(&self) -> Option<&EncodedWeights> {
        Some(&self.cache)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{Layout, NO_SCALE};
    use nectar_math::FixedPoint;

    fn key(name: &str) -> EncodedKey {
        EncodedKey::new(name, 2, 3, Layout::InOut, FixedPoint::new(64, 18).unwrap(), NO_SCALE)
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
        let other_scale = EncodedKey::new("a", 2, 3, Layout::InOut, FixedPoint::new(64, 18).unwrap(), crate::block::ColScale { cols: 1, by: 0.5 });
        assert!(c.get(&other_scale, 40).is_none(), "a different column scale is a different encoding");
    }

    /// A source that counts its reads.
    struct Counting {
        t: Vec<f32>,
        reads: std::sync::atomic::AtomicUsize,
    }

    impl WeightSource for Counting {
        fn tensor(&self, _name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
            self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            assert_eq!(shape.iter().product::<usize>(), self.t.len());
            Ok(self.t.clone())
        }
        fn contains(&self, _name: &str) -> bool {
            true
        }
        fn shape(&self, _name: &str) -> Option<Vec<usize>> {
            None
        }
    }

    #[test]
    fn a_cached_weight_is_read_once_and_encodes_as_before() {
        use crate::arch::DenseDecl;
        use crate::secure::layers::load_decl;
        let t: Vec<f32> = (0..4 * 6).map(|i| (i as f32 - 11.5) * 0.37).collect();
        let d = DenseDecl::new("w", 4, 6, Layout::OutIn, false);
        let fp = FixedPoint::new(37, 18).unwrap();
        let scale = crate::block::ColScale { cols: 2, by: 0.125 };
        let plain = Counting { t: t.clone(), reads: 0.into() };
        let want = load_decl(Some(&plain), fp, &d, scale).unwrap().unwrap().w;
        let cached = CachingSource::new(Counting { t: t.clone(), reads: 0.into() }, 1 << 20);
        for _ in 0..3 {
            assert_eq!(load_decl(Some(&cached), fp, &d, scale).unwrap().unwrap().w, want);
        }
        assert_eq!(cached.inner.reads.load(std::sync::atomic::Ordering::Relaxed), 1, "read once, then from the cache");
        let wider = FixedPoint::new(64, 18).unwrap();
        let w64 = load_decl(Some(&cached), wider, &d, scale).unwrap().unwrap().w;
        assert_eq!(w64, load_decl(Some(&plain), wider, &d, scale).unwrap().unwrap().w, "another ring width masks the same integers");
        let other = load_decl(Some(&cached), FixedPoint::new(37, 12).unwrap(), &d, scale).unwrap().unwrap().w;
        assert_eq!(other, load_decl(Some(&plain), FixedPoint::new(37, 12).unwrap(), &d, scale).unwrap().unwrap().w);
        assert_eq!(cached.inner.reads.load(std::sync::atomic::Ordering::Relaxed), 2, "other fractional bits are another encoding");
        let none = CachingSource::new(Counting { t, reads: 0.into() }, 8);
        for _ in 0..2 {
            assert_eq!(load_decl(Some(&none), fp, &d, scale).unwrap().unwrap().w, want);
        }
        assert_eq!(none.inner.reads.load(std::sync::atomic::Ordering::Relaxed), 2, "over the budget: read at each use");
    }
}
