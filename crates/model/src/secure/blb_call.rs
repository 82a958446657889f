//! What one of BLB's fused blocks needs of the CKKS parameters ([`BlockExec`]), simulated from
//! the public shapes with zero weights at the model's shapes; apart from [`super::blb`]'s layer
//! stack, which runs the calls.

use crate::block::{BlockConfig, BlockNames, FfnKind};
use crate::reference::BlockWeights;
use crate::secure::blb_spec::layer_params;
use crate::secure::SecureError;
use crate::secure::WeightSource;
use nectar_blb::{BlockExec, FusedCall};

/// Zero tensors of any shape asked: a block's public shapes without the server's values.
struct ZeroWeights;

impl WeightSource for ZeroWeights {
    fn tensor(&self, _name: &str, shape: &[usize]) -> Result<Vec<f32>, crate::ModelError> {
        Ok(vec![0.0; shape.iter().product()])
    }
    fn contains(&self, _name: &str) -> bool {
        true
    }
    fn shape(&self, _name: &str) -> Option<Vec<usize>> {
        None
    }
}

/// Runs `call`'s block on the slot simulator with zero weights of `cfg`'s shapes and zero
/// inputs ([`BlockExec::simulate`]).
pub fn simulate(cfg: &BlockConfig, call: &FusedCall<'_>) -> Result<BlockExec, SecureError> {
    let names = BlockNames {
        norm1: "n1".into(),
        norm2: "n2".into(),
        qkv: vec!["q".into(), "k".into(), "v".into()],
        o: "o".into(),
        ffn_in: match cfg.ffn {
            FfnKind::Plain => vec!["up".into()],
            FfnKind::Gated => vec!["gate".into(), "up".into()],
        },
        ffn_out: "down".into(),
    };
    let zeros = BlockWeights::load(&ZeroWeights, cfg, |_| names.clone(), 1)?;
    let p = layer_params(&zeros, cfg, &names, &names)?;
    Ok(BlockExec::simulate(call, &p)?)
}
