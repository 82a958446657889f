//! `matmul = blb-fused`: BLB §4 FineGrainFusion — chains of linear operators under CKKS between
//! conversions, planned and executed by `nectar_blb` and run for whole layers on the model's
//! engines (`nectar_model::secure::blb`; its CKKS keys, made per parameter set at the first
//! block, are the executor's, `nectar_blb::fused_ckks`), so there is no product at a time:
//! [`MatmulProtocol::fused`]. The blocks do the attention products themselves, so the suite's
//! `matmul-shared` must be `ckks`.

use super::MatmulProtocol;
use crate::attention::SharedMatmul;
use crate::ckks_linear::params_fingerprint;
use crate::protocol::{LinearCx, LinearProtocol};
use crate::LinearError;
use nectar_he::ckks::{CkksParams, CkksParamsLiteral};
use nectar_math::registry::Protocol;

/// The CKKS parameters a fused block of `depth` levels runs at with ring degree `n` (the
/// executor's module doc: one 40-bit prime per level above a 60 + 40-bit base, `Δ = 2^40`, a 60-bit
/// special prime; validated for 128-bit security at construction).
pub fn executable_params(n: usize, depth: u32) -> Result<CkksParams, LinearError> {
    let mut bits = vec![60u32, 40];
    bits.extend(std::iter::repeat_n(40, depth as usize));
    CkksParams::new(CkksParamsLiteral::from_bit_sizes(n, &bits, Some(60), 40)?).map_err(LinearError::from)
}

/// The protocol `matmul = blb-fused`.
pub struct BlbFused;

impl Protocol for BlbFused {
    fn name(&self) -> &'static str {
        "blb-fused"
    }
    fn source(&self) -> &'static str {
        "BLB §4 FineGrainFusion blocks"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "ckks": params_fingerprint() })
    }
    /// The deepest block each Table 6 ring degree takes (set 1: depth 4 at N = 2^14; sets
    /// 2-5: up to depth 7 at N = 2^15), plus the level the executor may add, at the parameters
    /// the blocks run at; and the conversions around the blocks.
    fn security(&self) -> Result<nectar_math::registry::Security, String> {
        let mut he = Vec::new();
        for (n, depth) in [(1 << 14, 5), (1 << 15, 8)] {
            he.push(executable_params(n, depth).map_err(|e| format!("CKKS parameters: {e}"))?.security_row("ckks-blb"));
        }
        Ok(nectar_math::registry::Security { he, statistical: vec![crate::ckks_convert::security_row()] })
    }
}

impl LinearProtocol for BlbFused {}

impl MatmulProtocol for BlbFused {
    fn layer_matmul(&self, _cx: &mut dyn LinearCx, _x: &[u64], _shape: (usize, usize, usize), _w: Option<&[u64]>, _key: &str) -> Result<Vec<u64>, LinearError> {
        Err(LinearError::Unsupported("matmul = blb-fused runs whole layers as fused blocks (the model's BLB executor), not one product".into()))
    }
    fn fused(&self) -> bool {
        true
    }
    fn check(&self, shared: SharedMatmul) -> Result<(), String> {
        if shared != SharedMatmul::new(&crate::attention::ckks::Ckks) {
            return Err(format!(
                "matmul = blb-fused evaluates Q·K^T and P·V inside its CKKS blocks: matmul-shared must be ckks, not {}",
                shared.name()
            ));
        }
        Ok(())
    }
}
