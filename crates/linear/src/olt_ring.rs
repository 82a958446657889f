//! The ring every OLT computes its products in (`olt-ring`: the layers' `matmul = olt`, the
//! attention products of `matmul-shared = olt`, the heads, embeddings and LayerNorm `outer`'s
//! `r ⊗ γ`): the kind ([`OltRingProtocol`], [`ALL`]: one file per ring in `olt_ring/`).
//! AGREEMENT: it names the session's OLT keys.

pub mod full;
pub mod narrow;

use nectar_math::registry::{Protocol, Security, StatRow};

/// An OLT ring (DESIGN.md "Where a protocol plugs in").
pub trait OltRingProtocol: Protocol {
    /// The OLT's HE parameter set of this ring.
    fn he_params(&self) -> nectar_he::Params;

    /// Whether the products are computed in a ring narrower than the shares' (then one
    /// truncation with extension brings them back).
    fn narrow(&self) -> bool;

    /// Whether the client's queries against the server's weights travel at the response
    /// level ([`crate::QueryLevel::Response`]) instead of the top level.
    fn low_weight_queries(&self) -> bool {
        false
    }
}

/// Every OLT ring, in the order `nectar suites` lists them.
pub static ALL: &[&dyn OltRingProtocol] = &[
    &full::Full,
    &narrow::Narrow,
];

nectar_math::kind!(
    /// The OLT ring kind in the registry.
    OltRingKind,
    OltRing,
    "olt-ring",
    dyn OltRingProtocol,
    ALL
);

/// The rows of an OLT ring with HE set `p` in `nectar params`.
pub(crate) fn security_of(p: &nectar_he::Params) -> Security {
    Security {
        he: vec![p.security_row("olt")],
        statistical: vec![StatRow {
            step: "OLT H2A (coefficient branch)",
            session_bits: None,
            detail: "the masker adds r uniform over all of R_q: the decryptor's view is uniform \
                     (statistical distance 0); the ±1 LSB error is a correctness event"
                .into(),
        }],
    }
}

/// The HE set's fingerprint (what the digest hashes).
pub(crate) fn params_of(p: &nectar_he::Params) -> serde_json::Value {
    serde_json::json!({ "he": format!("{:#x}", p.fingerprint()) })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::OltRingKind>().unwrap();
    }
}
