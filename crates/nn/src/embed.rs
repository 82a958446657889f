//! How the client's token ids enter the embedding lookup `one_hot × table` (an OLT with the
//! server's table): the operator kind ([`EmbedProtocol`], [`ALL`]: one file per protocol in
//! `embed/`). A protocol says what the client inputs for its ids and how the shared input
//! becomes the `n × vocab` one-hot rows.

pub mod client_onehot;
pub mod nimbus_cop;
pub mod shared_ids;

use crate::backend::DynBackend;
use crate::NnError;
use nectar_math::registry::Protocol;

/// An embedding input protocol (DESIGN.md "Where a protocol plugs in").
pub trait EmbedProtocol: Protocol {
    /// How many values the client inputs for `n` ids over a vocabulary of `vocab`.
    fn input_len(&self, n: usize, vocab: usize) -> usize;

    /// The values the client inputs for its `ids` (`input_len` of them, ring integers); an
    /// id outside the vocabulary is an error.
    fn client_values(&self, ids: &[u32], vocab: usize) -> Result<Vec<u64>, NnError>;

    /// The `n × vocab` one-hot rows (ring integers 0/1, row-major) from the shared input.
    fn one_hot_rows(&self, b: &mut DynBackend<'_>, input: &Vec<u64>, n: usize, vocab: usize) -> Result<Vec<u64>, NnError>;

    /// What its profile row ran, e.g. `i_equal+olt` (the lookup itself is an OLT).
    fn runs(&self) -> &'static str;

    /// The linear protocol that runs the lookup `one_hot × table`
    /// ([`nectar_linear::layer::MatmulProtocol::lookup`], its session keys set up with the
    /// suite's); `None`: the session's OLT.
    fn lookup(&self) -> Option<&'static dyn nectar_linear::layer::MatmulProtocol> {
        None
    }
}

/// `ids`, checked to lie in the vocabulary.
fn in_vocab(ids: &[u32], vocab: usize) -> Result<&[u32], NnError> {
    match ids.iter().find(|&&t| t as usize >= vocab) {
        Some(t) => Err(NnError::BadArgument(format!("token id {t} >= vocabulary size {vocab}"))),
        None => Ok(ids),
    }
}

/// Every embedding input protocol, in the order `nectar suites` lists them.
pub static ALL: &[&dyn EmbedProtocol] = &[
    &client_onehot::ClientOneHot,
    &shared_ids::SharedIds,
    &nimbus_cop::NimbusCopEmbed,
];

nectar_math::kind!(
    /// The embedding input kind in the registry.
    EmbedKind,
    Embed,
    "embed",
    dyn EmbedProtocol,
    ALL
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plain::PlainBackend;
    use nectar_math::FixedPoint;

    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<EmbedKind>().unwrap();
    }

    /// Every protocol gives the same one-hot rows on the twin.
    #[test]
    fn every_protocol_gives_the_one_hot_rows() {
        let (ids, vocab) = ([3u32, 0, 7, 3], 9);
        let mut want = vec![0u64; ids.len() * vocab];
        for (i, &t) in ids.iter().enumerate() {
            want[i * vocab + t as usize] = 1;
        }
        for p in ALL {
            let mut b = PlainBackend::new(FixedPoint::BUMBLEBEE).unwrap();
            let x = p.client_values(&ids, vocab).unwrap();
            assert!(p.client_values(&[9], vocab).is_err(), "{}", p.name());
            assert_eq!(x.len(), p.input_len(ids.len(), vocab), "{}", p.name());
            let got = p.one_hot_rows(&mut b, &x, ids.len(), vocab).unwrap();
            assert_eq!(got, want, "{}", p.name());
        }
    }
}
