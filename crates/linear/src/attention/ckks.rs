//! `matmul-shared = ckks`: BLB §5.1, App. C — the rotation-efficient multi-head ct-ct matmul,
//! both operands converted in one message ([`crate::ckks_linear::CkksLinear::batch_matmul`]); the
//! CKKS keys are shared with `matmul = ckks`.

use super::SharedMatmulProtocol;
use crate::ckks_linear::{params_fingerprint, setup_state, CkksLinear, STATE_KEY};
use crate::protocol::{LinearCx, LinearProtocol, State};
use crate::LinearError;
use nectar_math::registry::Protocol;
use nectar_math::Prg;
use nectar_net::{Channel, Role};

/// The protocol `matmul-shared = ckks`.
pub struct Ckks;

impl Protocol for Ckks {
    fn name(&self) -> &'static str {
        "ckks"
    }
    fn source(&self) -> &'static str {
        "BLB §5.1 ct-ct matmul"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "ckks": params_fingerprint() })
    }
    fn security(&self) -> Result<nectar_math::registry::Security, String> {
        crate::ckks_linear::security()
    }
}

impl LinearProtocol for Ckks {
    fn state_key(&self) -> Option<&'static str> {
        Some(STATE_KEY)
    }
    fn setup(&self, ch: &mut dyn Channel, role: Role, format: (u32, u32), prg: &mut Prg) -> Result<Option<State>, LinearError> {
        setup_state(ch, role, format, prg)
    }
}

impl SharedMatmulProtocol for Ckks {
    fn attention_matmul(&self, cx: &mut dyn LinearCx, a: &[u64], b: &[u64], shape: (usize, usize, usize, usize)) -> Result<Vec<u64>, LinearError> {
        let (l, f) = cx.format();
        let s = cx.session(Some(STATE_KEY));
        let lin = CkksLinear::of(s.state)?;
        lin.set_format(l, f)?;
        lin.batch_matmul(s.ch, s.mpc, s.prg, a, b, shape)
    }
}
