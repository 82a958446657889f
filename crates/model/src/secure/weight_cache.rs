//! The server's encoded layer weights, kept between uses ([`crate::encoded`] holds them).
//!
//! A secure layer takes its weight as ring elements of the engine's format
//! ([`super::layers::load_decl`]): the tensor read from the checkpoint (a GGUF tensor
//! dequantised), scaled per output column and rounded. Without a cache that happens at every
//! use: once per query, and for a causal LM once per generated token — SmolLM2's 135 M weights,
//! its 28 M-entry tied LM head included, cost about 1.3 s of the server's time in every
//! decoding step on this machine. [`CachingSource`] keeps each encoding, as
//! 32-bit signed integers (the encodings of real weights are far below `2^31`: `|w| < 2^13` at
//! `f = 18`), so a server holds about 4 bytes per weight it has used, within a byte budget; a
//! tensor whose encoding does not fit 32 bits, or that would pass the budget, is encoded at
//! every use as before.
//!
//! The cache is keyed by everything the encoding depends on — the tensor's name and shape, the
//! layout, the fractional bits and the column scale — and returns the same ring elements the
//! encoding would (the ring width only masks, so it is applied at expansion). The weights are
//! then those the server read first: a checkpoint rewritten underneath a running server no
//! longer changes the matrices already encoded (the vectors, read at each use, still fail a
//! session when the file is truncated).

use crate::config::ModelConfig;
use crate::encoded::EncodedWeights;
use crate::weights::WeightSource;
use crate::ModelError;

/// The budget a server of `config` gives its cache: 4 bytes per entry of every matrix the config
/// implies in `w`, the token embedding twice where the LM head is tied to it (the lookup
/// encodes it `vocab × dim`, the head `dim × vocab`: two encodings), at most `max`. A server
/// counts it as resident from the start (its memory admission), as the cache fills with its
/// sessions.
pub fn budget_for(config: &ModelConfig, w: &dyn WeightSource, max: usize) -> Result<usize, ModelError> {
    let entries: usize = crate::shapes::expected_tensors(config, w)?
        .iter()
        .filter(|(_, shape)| shape.len() == 2)
        .map(|(_, shape)| shape.iter().product::<usize>())
        .sum();
    let tied_head = match config {
        ModelConfig::Gpt2(c) => c.vocab_size * c.n_embd,
        ModelConfig::Llama(c) if c.tie_word_embeddings && !w.contains("lm_head.weight") => c.vocab_size * c.hidden_size,
        _ => 0,
    };
    Ok((entries + tied_head).saturating_mul(std::mem::size_of::<i32>()).min(max))
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
    use crate::block::Layout;
    use nectar_math::FixedPoint;

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
