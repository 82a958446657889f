//! The tensors a config implies — names and shapes — checked against a checkpoint without
//! reading any tensor data, so that a `config.json` that does not match its weights is found
//! when a server starts, not in the middle of a client's query.
//!
//! Derived from the declarations the loaders read: the block's ([`block_tensors`], as
//! [`crate::reference::BlockWeights::load`] loads them) and each architecture's embeddings and
//! heads ([`crate::arch::ArchTensors`]).

use crate::arch::{block_decls, ArchTensors, Decl};
use crate::block::{BlockConfig, BlockNames};
use crate::config::ModelConfig;
use crate::weights::WeightSource;
use crate::ModelError;

pub use crate::arch::Expected;

/// The tensors of blocks `0..layers`, at the shapes `cfg` implies.
pub fn block_tensors(cfg: &BlockConfig, names: impl Fn(usize) -> BlockNames, layers: usize) -> Result<Vec<Expected>, ModelError> {
    Ok(block_decls(cfg, names, layers)?.iter().flat_map(Decl::expected).collect())
}

/// Every tensor `config` implies in `w` (optional heads included when `w` holds them).
pub fn expected_tensors(config: &ModelConfig, w: &dyn WeightSource) -> Result<Vec<Expected>, ModelError> {
    let (mut out, arch): (Vec<Expected>, Vec<Decl>) = match config {
        ModelConfig::Bert(c) => (
            block_tensors(&crate::bert::block_config(c), crate::bert::block_names, c.num_hidden_layers)?,
            crate::bert::Tensors::new(c, Some(w))?.all(),
        ),
        ModelConfig::Gpt2(c) => (
            block_tensors(&crate::gpt2::block_config(c), crate::gpt2::block_names, c.n_layer)?,
            crate::gpt2::Tensors::new(c).all(),
        ),
        ModelConfig::Llama(c) => (
            block_tensors(&crate::llama::block_config(c), crate::llama::block_names, c.num_hidden_layers)?,
            crate::llama::Tensors::new(c, Some(w)).all(),
        ),
        ModelConfig::Vit(c) => (
            block_tensors(&crate::vit::block_config(c), crate::vit::block_names, c.num_hidden_layers)?,
            crate::vit::Tensors::new(c, Some(w))?.all(),
        ),
    };
    out.extend(arch.iter().flat_map(Decl::expected));
    Ok(out)
}

/// Checks every tensor `config` implies against `w` (presence, shape, float dtype) without
/// reading tensor data; returns how many were checked, or the first mismatch.
pub fn check_shapes(config: &ModelConfig, w: &dyn WeightSource) -> Result<usize, ModelError> {
    let expected = expected_tensors(config, w)?;
    for (name, shape) in &expected {
        w.check(name, shape)?;
    }
    Ok(expected.len())
}
