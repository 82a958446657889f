//! `embed = nimbus-cop`: the client inputs its one-hot rows (as `client-onehot`) and the lookup
//! `one_hot × table` runs on Nimbus's client-side outer product (§3.2; `nectar_linear::cop`):
//! the table encrypted once per session under the server's key, then one flight per lookup, the
//! client skipping the all-zero blocks of its rows (`nectar_linear::cop::cop_lookup_client`).

use super::EmbedProtocol;
use crate::backend::DynBackend;
use crate::NnError;
use nectar_linear::layer::nimbus_cop::NimbusCop;
use nectar_linear::layer::MatmulProtocol;
use nectar_math::registry::{Protocol, Security};

/// The protocol `embed = nimbus-cop`.
pub struct NimbusCopEmbed;

impl Protocol for NimbusCopEmbed {
    fn name(&self) -> &'static str {
        "nimbus-cop"
    }
    fn source(&self) -> &'static str {
        "Nimbus §3.2 COP lookup"
    }
    fn params(&self) -> serde_json::Value {
        NimbusCop.params()
    }
    fn security(&self) -> Result<Security, String> {
        NimbusCop.security()
    }
}

impl EmbedProtocol for NimbusCopEmbed {
    fn input_len(&self, n: usize, vocab: usize) -> usize {
        super::client_onehot::ClientOneHot.input_len(n, vocab)
    }
    fn client_values(&self, ids: &[u32], vocab: usize) -> Result<Vec<u64>, NnError> {
        super::client_onehot::ClientOneHot.client_values(ids, vocab)
    }
    fn one_hot_rows(&self, _b: &mut DynBackend<'_>, input: &Vec<u64>, _n: usize, _vocab: usize) -> Result<Vec<u64>, NnError> {
        Ok(input.clone())
    }
    fn runs(&self) -> &'static str {
        "nimbus-cop"
    }
    fn lookup(&self) -> Option<&'static dyn MatmulProtocol> {
        Some(&NimbusCop)
    }
}
