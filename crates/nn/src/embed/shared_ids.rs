//! `embed = shared-ids`: the ids are secret-shared and the one-hot rows computed by `i_equal`
//! (BumbleBee Table IV's `i_equal` row; [`crate::onehot::one_hot`]).

use super::EmbedProtocol;
use crate::backend::DynBackend;
use crate::NnError;
use nectar_math::registry::Protocol;

/// The protocol `embed = shared-ids`.
pub struct SharedIds;

impl Protocol for SharedIds {
    fn name(&self) -> &'static str {
        "shared-ids"
    }
    fn source(&self) -> &'static str {
        "BumbleBee Table IV i_equal"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({})
    }
}

impl EmbedProtocol for SharedIds {
    fn input_len(&self, n: usize, _vocab: usize) -> usize {
        n
    }
    fn client_values(&self, ids: &[u32], vocab: usize) -> Result<Vec<u64>, NnError> {
        Ok(super::in_vocab(ids, vocab)?.iter().map(|&t| t as u64).collect())
    }
    fn one_hot_rows(&self, b: &mut DynBackend<'_>, input: &Vec<u64>, _n: usize, vocab: usize) -> Result<Vec<u64>, NnError> {
        crate::onehot::one_hot(b, input, vocab)
    }
    fn runs(&self) -> &'static str {
        "i_equal+olt"
    }
}
