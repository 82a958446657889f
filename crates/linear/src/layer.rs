//! The layers' `X·W` (the client's shares × the server's weight): the kind
//! ([`MatmulProtocol`], [`ALL`]: one file per protocol in `layer/`), on the session of
//! [`crate::protocol::LinearCx`].

pub mod blb_fused;
pub mod ckks;
pub mod nimbus_cop;
pub mod olt;
pub mod olt_ahead;
pub mod olt_krdy;

use crate::attention::SharedMatmul;
use crate::protocol::{LinearCx, LinearProtocol};
use crate::LinearError;
use std::sync::Arc;

/// A protocol for the layers' client-share × server-weight products (DESIGN.md "Where a
/// protocol plugs in").
pub trait MatmulProtocol: LinearProtocol {
    /// `x·W` for shared `x` (`rows × in_dim`) and the server's `W` (`in_dim × out_dim`; `None`
    /// on the client), truncated by the format's `f`. `key` names the weight, the same on both
    /// parties and for every query of the session (its tensor names): a protocol that keeps
    /// something per weight across queries (`nimbus-cop`'s encrypted weights) keys it by this.
    fn layer_matmul(&self, cx: &mut dyn LinearCx, x: &[u64], shape: (usize, usize, usize), w: Option<&[u64]>, key: &str) -> Result<Vec<u64>, LinearError>;

    /// [`MatmulProtocol::layer_matmul`] with the server's weight shared, for a protocol that
    /// keeps it past the call (`olt-ahead`'s work for the next decoding step). Default:
    /// [`MatmulProtocol::layer_matmul`].
    fn layer_matmul_shared(&self, cx: &mut dyn LinearCx, x: &[u64], shape: (usize, usize, usize), w: Option<&Arc<Vec<u64>>>, key: &str) -> Result<Vec<u64>, LinearError> {
        self.layer_matmul(cx, x, shape, w.map(|v| v.as_slice()), key)
    }

    /// The lookup `one_hot × table` (`x`: shared one-hot rows, ring integers; `w`: the server's
    /// table) without truncation, for an `embed` protocol that names this one as its lookup
    /// (`nectar_nn::embed::EmbedProtocol::lookup`); `key` as in
    /// [`MatmulProtocol::layer_matmul`].
    fn lookup(&self, cx: &mut dyn LinearCx, x: &[u64], shape: (usize, usize, usize), w: Option<&[u64]>, key: &str) -> Result<Vec<u64>, LinearError> {
        let _ = (cx, x, shape, w, key);
        Err(LinearError::Unsupported(format!("matmul = {} does not run the embedding lookup", self.name())))
    }

    /// Transfers at session setup what [`MatmulProtocol::lookup`] of the table `key` (`vocab ×
    /// dim`; `w` the server's) would otherwise transfer at its first use in a query (`nimbus-cop`:
    /// the encrypted table, or its cached copy's check). Both parties call it at the same point
    /// of the setup, with the lookup's `key` and shape. Default: nothing to transfer.
    fn preload_lookup(&self, cx: &mut dyn LinearCx, shape: (usize, usize), w: Option<&[u64]>, key: &str) -> Result<(), LinearError> {
        let _ = (cx, shape, w, key);
        Ok(())
    }

    /// Whether the layers run as BLB's fused blocks instead (the model's BLB executor;
    /// [`MatmulProtocol::layer_matmul`] is then not called and the attention products are the
    /// blocks' own).
    fn fused(&self) -> bool {
        false
    }

    /// Whether the server may prepare a layer's weight blocks ahead of its operator on `rows`
    /// rows (the OLT's prefetch, local to the server).
    fn prefetch(&self, rows: usize) -> bool {
        let _ = rows;
        false
    }

    /// Whether it runs with the attention protocol `shared` (refused at start).
    fn check(&self, shared: SharedMatmul) -> Result<(), String> {
        let _ = shared;
        Ok(())
    }
}

/// Every layer-matmul protocol, in the order `nectar suites` lists them.
pub static ALL: &[&dyn MatmulProtocol] = &[
    &olt::Olt,
    &olt_ahead::OltAhead,
    &olt_krdy::OltKrdy,
    &ckks::Ckks,
    &blb_fused::BlbFused,
    &nimbus_cop::NimbusCop,
];

nectar_math::kind!(
    /// The layers' matmul kind in the registry.
    MatmulKind,
    Matmul,
    "matmul",
    dyn MatmulProtocol,
    ALL
);

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_well_formed() {
        nectar_math::registry::check_list::<super::MatmulKind>().unwrap();
    }
}
