//! `matmul = ckks`: BLB §5.2, §6.3 — each product under CKKS between a conversion in and out
//! (BOLT's spatial-first ct × pt matmul; [`crate::ckks_linear::CkksLinear`]), the client's CKKS
//! keys sent once per session (shared with `matmul-shared = ckks`).

use super::MatmulProtocol;
use crate::ckks_linear::{params_fingerprint, setup_state, CkksLinear, STATE_KEY};
use crate::protocol::{LinearCx, LinearProtocol, State};
use crate::LinearError;
use nectar_math::registry::Protocol;
use nectar_math::Prg;
use nectar_net::{Channel, Role};

/// The protocol `matmul = ckks`.
pub struct Ckks;

impl Protocol for Ckks {
    fn name(&self) -> &'static str {
        "ckks"
    }
    fn source(&self) -> &'static str {
        "BLB §5-6 per-operator CKKS"
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

impl MatmulProtocol for Ckks {
    fn layer_matmul(&self, cx: &mut dyn LinearCx, x: &[u64], shape: (usize, usize, usize), w: Option<&[u64]>, _key: &str) -> Result<Vec<u64>, LinearError> {
        let (l, f) = cx.format();
        let s = cx.session(Some(STATE_KEY));
        let lin = CkksLinear::of(s.state)?;
        lin.set_format(l, f)?;
        lin.matmul_weight(s.ch, s.mpc, s.prg, x, shape, w, f)
    }
}
