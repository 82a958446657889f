//! `matmul = nimbus-cop`: Nimbus §3.2 (Li et al., NeurIPS 2024; `docs/notes/nimbus.md` §2) —
//! the client-side outer product of [`crate::cop`]: each layer weight encrypted once per session
//! under the server's key and kept by the client, then one flight per product (the client's
//! masked results), instead of the OLT's query and response.
//!
//! Session state ([`STATE_KEY`]): the server's key pair (the server sends its public and Galois
//! keys at setup, [`HeSession::setup_server_key`]) and, per weight — named by the tensor names
//! both parties know ([`crate::layer::MatmulProtocol::layer_matmul`]'s `key`) — the windows it
//! was encrypted with and, on the client, its ciphertexts. A weight is sent at its first use in
//! the session and reused by every later query of the session, whatever its row count; the
//! transfer is recorded as preprocessing (`prepro_bytes` / `prepro_seconds` of the profile
//! rows), the rest of the call as online.
//!
//! Ring: products in `Z_{2^51}` under [`Params::nectar_olt_narrow`] (as `olt-ring = narrow`),
//! then one truncation with extension back to the shares' ring
//! ([`nectar_mpc::Mpc::trunc_extend`]); the same domain as the narrow OLT (`|x·w| < 2^13`).
//!
//! Key lifetime: one key pair per session (made at setup, dropped with the session); the
//! client holds at most [`MAX_CLIENT_WEIGHT_BYTES`] of encrypted weights and refuses more.
//! Nothing is flooded: every response is re-randomised and masked uniformly over `R_q`
//! ([`crate::cop`], security row below).

use super::MatmulProtocol;
use crate::cop::{cop_client, cop_lookup_client, cop_lookup_windows, cop_plan, cop_recv_weights, cop_send_weights, cop_server, cop_windows, CopWeights};
use crate::krdy::{Shape, Windows};
use crate::protocol::{LinearCx, LinearProtocol, State};
use crate::session::HeSession;
use crate::window::{CostModel, CtBytes};
use crate::LinearError;
use nectar_he::Params;
use nectar_math::registry::{Protocol, Security, StatRow};
use nectar_math::Prg;
use nectar_net::{Channel, Role};
use std::collections::HashMap;
use std::time::Instant;

/// The key the protocol's session state is kept under.
pub const STATE_KEY: &str = "nimbus-cop";

/// Most bytes of encrypted weights the client keeps per session (LOCAL; MiniLM's six layers
/// take about 0.5 GB, BERT-base's twelve about 4 GB in NTT form at three primes).
pub const MAX_CLIENT_WEIGHT_BYTES: usize = 12 << 30;

/// The protocol `matmul = nimbus-cop`.
pub struct NimbusCop;

fn he_params() -> Params {
    Params::nectar_olt_narrow()
}

/// The cost model the weights' windows are chosen by (AGREEMENT): `olt-cost = balanced`'s
/// prices with the narrow set's ciphertext sizes, applied to the online phase only.
fn cost_model() -> CostModel {
    CostModel::balanced(CtBytes::olt(&he_params()))
}

impl Protocol for NimbusCop {
    fn name(&self) -> &'static str {
        "nimbus-cop"
    }
    fn source(&self) -> &'static str {
        "Nimbus §3.2 client-side outer product"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "he": format!("{:#x}", he_params().fingerprint()), "setup_factor": crate::cop::SETUP_FACTOR })
    }
    fn security(&self) -> Result<Security, String> {
        Ok(Security {
            he: vec![he_params().security_row("nimbus-cop (server's key)")],
            statistical: vec![StatRow {
                step: "COP response (client masks under the server's key)",
                session_bits: None,
                detail: "Enc_pk(0) re-randomisation plus r uniform over all of R_q: the server's \
                         decrypted phase is uniform (statistical distance 0); the weights stay under \
                         RLWE; the ±1 LSB error is a correctness event"
                    .into(),
            }],
        })
    }
}

/// One weight as the session knows it.
struct Held {
    windows: Windows,
    /// The client's copy (`None` on the server).
    cts: Option<CopWeights>,
}

/// One party's COP session: the server's keys and the weights sent so far.
pub struct CopState {
    role: Role,
    sess: HeSession,
    weights: HashMap<(String, usize, usize), Held>,
    client_bytes: usize,
}

impl CopState {
    fn of(state: Option<&mut (dyn std::any::Any + Send)>) -> Result<&mut CopState, LinearError> {
        state
            .and_then(|s| s.downcast_mut::<CopState>())
            .ok_or_else(|| LinearError::Unsupported("this session has no COP keys".into()))
    }
}

impl LinearProtocol for NimbusCop {
    fn state_key(&self) -> Option<&'static str> {
        Some(STATE_KEY)
    }
    fn setup(&self, ch: &mut dyn Channel, role: Role, _format: (u32, u32), prg: &mut Prg) -> Result<Option<State>, LinearError> {
        let sess = HeSession::setup_server_key(ch, role, he_params(), prg)?;
        Ok(Some(Box::new(CopState { role, sess, weights: HashMap::new(), client_bytes: 0 })))
    }
}

impl MatmulProtocol for NimbusCop {
    fn layer_matmul(&self, cx: &mut dyn LinearCx, x: &[u64], shape: (usize, usize, usize), w: Option<&[u64]>, key: &str) -> Result<Vec<u64>, LinearError> {
        let f = cx.format().1;
        product(cx, x, shape, w, key, f, false)
    }
    fn lookup(&self, cx: &mut dyn LinearCx, x: &[u64], shape: (usize, usize, usize), w: Option<&[u64]>, key: &str) -> Result<Vec<u64>, LinearError> {
        product(cx, x, shape, w, key, 0, true)
    }
}

/// `x·W` by COP, truncated by `shift`; `lookup`: `x` is one-hot rows (the embedding), whose
/// weight is encrypted with `k_w = 1` windows and whose zero blocks the client skips
/// ([`crate::cop::cop_lookup_client`]).
fn product(cx: &mut dyn LinearCx, x: &[u64], (k, m, n): (usize, usize, usize), w: Option<&[u64]>, key: &str, shift: u32, lookup: bool) -> Result<Vec<u64>, LinearError> {
    let l = cx.format().0;
    let s = cx.session(Some(STATE_KEY));
    let st = CopState::of(s.state)?;
    let bits = l.min(crate::h2a::plain_bits(&st.sess.params, 0));
    let shape = Shape::new(k, m, n)?;
    let degree = st.sess.degree();
    let id = (key.to_string(), m, n);
    // First use in this session: the server encrypts and sends the weight (preprocessing).
    if !st.weights.contains_key(&id) {
        let windows = if lookup { cop_lookup_windows(shape, degree, &cost_model())? } else { cop_windows(shape, degree, &cost_model())? };
        let plan = cop_plan(shape, windows, degree)?;
        let (before, t0) = (s.ch.stats(), Instant::now());
        let cts = match (st.role, w) {
            (Role::Server, Some(w)) => {
                cop_send_weights(s.ch, &st.sess, &plan, w, s.prg)?;
                None
            }
            (Role::Client, None) => {
                let held = cop_recv_weights(s.ch, &st.sess, &plan)?;
                let bytes = held.memory_bytes(&st.sess);
                if st.client_bytes + bytes > MAX_CLIENT_WEIGHT_BYTES {
                    return Err(LinearError::Unsupported(format!(
                        "matmul = nimbus-cop: the client would hold {} MiB of encrypted weights (at most {} MiB per session)",
                        (st.client_bytes + bytes) >> 20,
                        MAX_CLIENT_WEIGHT_BYTES >> 20
                    )));
                }
                st.client_bytes += bytes;
                Some(held)
            }
            _ => return Err(LinearError::BadParams("the weight belongs to the server".into())),
        };
        s.mpc.note_prepro(s.ch.stats() - before, t0.elapsed().as_secs_f64());
        st.weights.insert(id.clone(), Held { windows, cts });
    }
    let held = st.weights.get(&id).ok_or_else(|| LinearError::BadShape("COP weight not held".into()))?;
    let plan = cop_plan(shape, held.windows, degree)?;
    let raw = match (st.role, w, &held.cts) {
        (Role::Server, Some(w), _) => cop_server(s.ch, &st.sess, &plan, x, w, bits)?,
        (Role::Client, None, Some(c)) if lookup => cop_lookup_client(s.ch, &st.sess, c, &plan, x, bits, s.prg)?,
        (Role::Client, None, Some(c)) => cop_client(s.ch, &st.sess, c, &plan, x, bits, s.prg)?,
        _ => return Err(LinearError::BadParams("the weight belongs to the server".into())),
    };
    // The client sent last (both parties set it here, AGREEMENT): the truncation's first
    // message rides on its flight.
    s.mpc.set_lead(Role::Client);
    let out = match (bits == l, shift) {
        (true, 0) => Ok(raw),
        (true, _) => s.mpc.trunc(s.ch, &raw, l, shift),
        (false, _) => s.mpc.trunc_extend(s.ch, &raw, bits, shift, l),
    };
    out.map_err(|e| LinearError::Session(Box::new(e)))
}
