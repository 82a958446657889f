//! `embed = client-onehot`: BumbleBee §VII-B — the client inputs its one-hot rows to the OLT
//! `one_hot × table` itself: no nonlinear protocol at all.

use super::EmbedProtocol;
use crate::backend::DynBackend;
use crate::NnError;
use nectar_math::registry::Protocol;

/// The protocol `embed = client-onehot`.
pub struct ClientOneHot;

impl Protocol for ClientOneHot {
    fn name(&self) -> &'static str {
        "client-onehot"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §VII-B"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({})
    }
}

impl EmbedProtocol for ClientOneHot {
    fn input_len(&self, n: usize, vocab: usize) -> usize {
        n * vocab
    }
    fn client_values(&self, ids: &[u32], vocab: usize) -> Result<Vec<u64>, NnError> {
        let mut v = vec![0u64; ids.len() * vocab];
        for (i, &t) in super::in_vocab(ids, vocab)?.iter().enumerate() {
            v[i * vocab + t as usize] = 1;
        }
        Ok(v)
    }
    fn one_hot_rows(&self, _b: &mut DynBackend<'_>, input: &Vec<u64>, _n: usize, _vocab: usize) -> Result<Vec<u64>, NnError> {
        Ok(input.clone())
    }
    fn runs(&self) -> &'static str {
        "olt"
    }
}
