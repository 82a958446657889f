//! `matmul = nimbus-cop`: Nimbus §3.2 (Li et al., NeurIPS 2024; `docs/notes/nimbus.md` §2) —
//! the client-side outer product of [`crate::cop`]: each layer weight encrypted under the
//! server's key and kept by the client, then one flight per product (the client's masked
//! results), instead of the OLT's query and response.
//!
//! Session setup (two flights): the server sends its key's digest, public key and Galois keys
//! (the process's key, [`crate::cop_cache::server_key`]); the client lists the weights it has
//! cached under that key ([`crate::cop_cache::ClientCache`]; nothing when no cache directory is
//! set). Per weight — named by the tensor names both parties know
//! ([`crate::layer::MatmulProtocol::layer_matmul`]'s `key`) — at its first use in the session the
//! server computes the weight's digest and sends it with a flag: the client's cached copy is
//! current, or the ciphertexts follow (then the client caches them). Every later query of the
//! session reuses them, whatever its row count. A layer weight is decoded once (every product
//! uses all of it); the embedding table of a lookup stays serialized — in the client's cache, or
//! in memory without one — and each query reads and decodes the blocks of its rows only (`k·n'`
//! ciphertexts, repeats included, whatever the ids). A layer weight's transfer is recorded as
//! preprocessing (`prepro_bytes` / `prepro_seconds` of the profile rows), the rest of the call
//! as online; the lookup table's runs at session setup ([`MatmulProtocol::preload_lookup`]).
//!
//! Ring: products in `Z_{2^51}` under [`Params::nectar_olt_narrow`] (as `olt-ring = narrow`),
//! then one truncation with extension back to the shares' ring
//! ([`nectar_mpc::Mpc::trunc_extend`]); the same domain as the narrow OLT (`|x·w| < 2^13`).
//!
//! Key lifetime: the server's key lives for the server process, at most
//! [`crate::cop_cache::KEY_MAX_AGE`] and [`crate::cop_cache::KEY_MAX_SESSIONS`] sessions; the
//! client holds at most [`MAX_CLIENT_WEIGHT_BYTES`] of encrypted weights per session and
//! refuses more. Nothing is flooded: every response is re-randomised and masked uniformly over
//! `R_q` ([`crate::cop`], security row below).

use super::MatmulProtocol;
use crate::cop::{cop_client, cop_lookup_blocks, cop_lookup_client, cop_lookup_cts, cop_plan, cop_recv_parts, cop_send_weights, cop_server, cop_weights_from_parts, cop_windows, CopWeights};
use crate::cop_cache::{client_cache_dir, inventory_from_bytes, inventory_to_bytes, key_digest, server_key, weight_digest, ClientCache, Entry, Hash};
use crate::krdy::{Shape, Windows};
use crate::protocol::{LinearCx, LinearProtocol, State};
use crate::session::HeSession;
use crate::window::{CostModel, CtBytes};
use crate::LinearError;
use nectar_he::{Params, SecretKey};
use nectar_math::registry::{Protocol, Security, StatRow};
use nectar_math::Prg;
use nectar_net::{Channel, Role};
use std::collections::HashMap;
use std::time::Instant;

/// The key the protocol's session state is kept under.
pub const STATE_KEY: &str = "nimbus-cop";

/// Most bytes of encrypted weights the client keeps per session (LOCAL; MiniLM's six layers
/// and its embedding take about 1.3 GB, BERT-base's twelve about 5.4 GB in NTT form at three
/// primes).
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
        serde_json::json!({ "he": format!("{:#x}", he_params().fingerprint()), "setup_factor": crate::cop::SETUP_FACTOR, "ref_rows": crate::cop::REF_ROWS })
    }
    fn security(&self) -> Result<Security, String> {
        Ok(Security {
            he: vec![he_params().security_row("nimbus-cop (server's key)")],
            statistical: vec![StatRow {
                step: "COP response (client masks under the server's key)",
                session_bits: None,
                detail: "Enc_pk(0) re-randomisation plus r uniform over all of R_q: the server's \
                         decrypted phase is uniform (statistical distance 0); the weights stay under \
                         RLWE; the ±1 LSB error is a correctness event; the server's key lives for its \
                         process (at most 24 h and 2^20 sessions)"
                    .into(),
            }],
        })
    }
}

/// One weight as the session knows it: its windows and, on the client, its copy.
struct Held {
    windows: Windows,
    copy: Option<Copy>,
}

/// The client's copy of a weight.
enum Copy {
    /// A layer weight: every ciphertext decoded (the products use them all).
    Decoded(CopWeights),
    /// A lookup table held as received (serialized; the rows a query needs are decoded then).
    Parts(Vec<Vec<u8>>),
    /// A lookup table in the client's cache (the rows a query needs are read then).
    Cached(Hash),
}

/// One party's COP session (module docs).
pub struct CopState {
    role: Role,
    sess: HeSession,
    key: Hash,
    /// The server's copy of the client's list of cached weights.
    listed: Vec<Entry>,
    /// The client's cache (`None`: no cache directory set).
    cache: Option<ClientCache>,
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
        let params = he_params();
        let st = match role {
            Role::Server => {
                let k = server_key(&params, prg)?;
                let mut msg = k.digest.to_vec();
                msg.extend(crate::wire::keys_to_bytes(&params, &k.pk, Some(&k.gk))?);
                ch.send(&msg)?;
                ch.flush()?;
                let listed = inventory_from_bytes(&ch.recv()?)?;
                let sess = HeSession::from_keys(params, k.sk.clone(), k.pk.clone(), None);
                CopState { role, sess, key: k.digest, listed, cache: None, weights: HashMap::new(), client_bytes: 0 }
            }
            Role::Client => {
                let msg = ch.recv()?;
                let (digest, keys) = msg.split_at_checked(32).ok_or_else(|| LinearError::Malformed("COP keys: short message".into()))?;
                let (pk, gk) = crate::wire::keys_from_bytes(&params, keys)?;
                let gk = gk.ok_or_else(|| LinearError::Malformed("the server sent no Galois keys".into()))?;
                let key = key_digest(&params, &pk)?;
                if key[..] != digest[..] {
                    return Err(LinearError::Malformed("COP keys: the key digest does not match the public key".into()));
                }
                let cache = client_cache_dir().map(|root| ClientCache::open(&root, &key));
                for p in cache.iter().flat_map(|c| &c.problems) {
                    eprintln!("nectar: COP weight cache: {p}");
                }
                let listed = cache.as_ref().map(|c| c.inventory()).unwrap_or_default();
                ch.send(&inventory_to_bytes(&listed))?;
                ch.flush()?;
                // A secret key of the client's own that nothing uses (the session type holds one).
                let sess = HeSession::from_keys(params.clone(), SecretKey::generate(&params, prg), pk, Some(gk));
                CopState { role, sess, key, listed: Vec::new(), cache, weights: HashMap::new(), client_bytes: 0 }
            }
        };
        Ok(Some(Box::new(st)))
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
    /// The table's first use ([`first_use`]) at session setup: a query then sends only its
    /// lookup's flight, and the transfer counts as setup (`setup_bytes`), not as the first
    /// query's preprocessing.
    fn preload_lookup(&self, cx: &mut dyn LinearCx, (m, n): (usize, usize), w: Option<&[u64]>, key: &str) -> Result<(), LinearError> {
        let s = cx.session(Some(STATE_KEY));
        let st = CopState::of(s.state)?;
        let id = (key.to_string(), m, n);
        if !st.weights.contains_key(&id) {
            let held = first_use(st, s.ch, s.prg, key, (m, n), w, true)?;
            st.weights.insert(id, held);
        }
        Ok(())
    }
}

/// Flag of a weight's first use: the client's cached copy is current.
const CACHED: u8 = 0;
/// Flag of a weight's first use: the ciphertexts follow.
const FRESH: u8 = 1;

/// The weight named `name` (`m×n`) held for this session: at its first use the server's
/// digest and flag, then (unless the client's cached copy is current) the ciphertexts. A
/// lookup table (`lookup`) is not decoded here: each query decodes the blocks its rows use.
#[allow(clippy::too_many_arguments)]
fn first_use(st: &mut CopState, ch: &mut dyn Channel, prg: &mut Prg, name: &str, (m, n): (usize, usize), w: Option<&[u64]>, lookup: bool) -> Result<Held, LinearError> {
    let degree = st.sess.degree();
    let windows = cop_windows(m, n, degree, &cost_model())?;
    // The plan of the weight's ciphertexts: they do not depend on the rows (k_w = 1).
    let plan = cop_plan(Shape::new(1, m, n)?, windows, degree)?;
    match (st.role, w) {
        (Role::Server, Some(w)) => {
            let d = weight_digest(&st.key, name, (m, n), windows, w);
            let cached = st.listed.iter().any(|e| e.digest == d && e.name == name && (e.m, e.n) == (m, n) && e.windows == windows);
            let mut msg = vec![if cached { CACHED } else { FRESH }];
            msg.extend_from_slice(&d);
            ch.send(&msg)?;
            if !cached {
                cop_send_weights(ch, &st.sess, &plan, w, prg)?;
            }
            ch.flush()?;
            Ok(Held { windows, copy: None })
        }
        (Role::Client, None) => {
            let msg = ch.recv()?;
            let (&flag, d) = msg.split_first().ok_or_else(|| LinearError::Malformed("COP: empty weight header".into()))?;
            let d: Hash = d.try_into().map_err(|_| LinearError::Malformed("COP: weight header of the wrong size".into()))?;
            let copy = match (flag, st.cache.as_mut(), lookup) {
                (CACHED, Some(_), true) => Copy::Cached(d),
                (CACHED, Some(c), false) => Copy::Decoded(cop_weights_from_parts(&st.sess, &plan, &c.load(&d, None)?)?),
                (CACHED, None, _) => return Err(LinearError::Malformed("COP: the server named a cached weight, but this client caches nothing".into())),
                (FRESH, cache, _) => {
                    let parts = cop_recv_parts(ch, &st.sess, &plan)?;
                    let stored = match cache {
                        Some(c) => match c.store(Entry { name: name.to_string(), m, n, windows, digest: d }, &parts) {
                            Ok(()) => true,
                            Err(err) => {
                                eprintln!("nectar: COP weight cache: {err}");
                                false
                            }
                        },
                        None => false,
                    };
                    match (lookup, stored) {
                        (true, true) => Copy::Cached(d),
                        (true, false) => Copy::Parts(parts),
                        (false, _) => Copy::Decoded(cop_weights_from_parts(&st.sess, &plan, &parts)?),
                    }
                }
                (f, _, _) => return Err(LinearError::Malformed(format!("COP: weight header flag {f}"))),
            };
            let bytes = match &copy {
                Copy::Decoded(c) => c.memory_bytes(&st.sess),
                Copy::Parts(p) => p.iter().map(Vec::len).sum(),
                Copy::Cached(_) => 0,
            };
            if st.client_bytes + bytes > MAX_CLIENT_WEIGHT_BYTES {
                return Err(LinearError::Unsupported(format!(
                    "matmul = nimbus-cop: the client would hold {} MiB of encrypted weights (at most {} MiB per session)",
                    (st.client_bytes + bytes) >> 20,
                    MAX_CLIENT_WEIGHT_BYTES >> 20
                )));
            }
            st.client_bytes += bytes;
            Ok(Held { windows, copy: Some(copy) })
        }
        _ => Err(LinearError::BadParams("the weight belongs to the server".into())),
    }
}

/// `x·W` by COP, truncated by `shift`; `lookup`: `x` is one-hot rows (the embedding), whose
/// zero blocks the client skips ([`crate::cop::cop_lookup_client`]).
fn product(cx: &mut dyn LinearCx, x: &[u64], (k, m, n): (usize, usize, usize), w: Option<&[u64]>, key: &str, shift: u32, lookup: bool) -> Result<Vec<u64>, LinearError> {
    let l = cx.format().0;
    let s = cx.session(Some(STATE_KEY));
    let st = CopState::of(s.state)?;
    let bits = l.min(crate::h2a::plain_bits(&st.sess.params, 0));
    let id = (key.to_string(), m, n);
    if !st.weights.contains_key(&id) {
        let (before, t0) = (s.ch.stats(), Instant::now());
        let held = first_use(st, s.ch, s.prg, key, (m, n), w, lookup)?;
        s.mpc.note_prepro(s.ch.stats() - before, t0.elapsed().as_secs_f64());
        st.weights.insert(id.clone(), held);
    }
    let held = st.weights.get(&id).ok_or_else(|| LinearError::BadShape("COP weight not held".into()))?;
    let plan = cop_plan(Shape::new(k, m, n)?, held.windows, st.sess.degree())?;
    let raw = match (st.role, w, &held.copy) {
        (Role::Server, Some(w), _) => cop_server(s.ch, &st.sess, &plan, x, w, bits)?,
        (Role::Client, None, Some(Copy::Decoded(c))) if !lookup => cop_client(s.ch, &st.sess, c, &plan, x, bits, s.prg)?,
        (Role::Client, None, Some(copy)) if lookup => {
            // The blocks the rows use, read or taken from the held copy, decoded now.
            let idx = cop_lookup_blocks(&st.sess, &plan, x)?;
            let parts = match copy {
                Copy::Parts(p) => idx.iter().map(|&i| p.get(i).cloned().ok_or_else(|| LinearError::BadShape(format!("weight ciphertext {i} not held")))).collect::<Result<Vec<_>, _>>()?,
                Copy::Cached(d) => {
                    let d = *d;
                    st.cache.as_mut().ok_or_else(|| LinearError::BadParams("COP: no cache".into()))?.load(&d, Some(&idx))?
                }
                Copy::Decoded(_) => return Err(LinearError::BadParams(format!("COP: `{key}` was not received as a lookup table"))),
            };
            let cts = cop_lookup_cts(&st.sess, &idx, &parts)?;
            cop_lookup_client(s.ch, &st.sess, &plan, &cts, x, bits, s.prg)?
        }
        _ => return Err(LinearError::BadParams("COP: the weight belongs to the server, and a lookup table is no layer weight".into())),
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
