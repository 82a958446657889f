//! `matmul = olt-ahead` (nectar, issue 49): the OLT of a decoding step's one-row products done
//! one step ahead, with a fresh random row in place of the client's share — Delphi's split of
//! a linear layer into an input-independent part and a one-message online part (Mishra et al.,
//! USENIX Security 2020, §4), applied step by step.
//!
//! A decoding step multiplies one new row `x` by every layer weight `W`, and the step after it
//! does the same with the next row. While step `t` runs, the client sends the OLT query of a
//! fresh uniform `r ∈ Z_{2^b}^{in}` (`b` the OLT ring's bits) for each weight, and the server
//! evaluates it on a background thread of the idle scheduling class: the OLT's response
//! (`Enc(r·W − s)`, flooded and masked exactly as [`crate::olt`]'s) and its own share `s` are
//! ready before step `t + 1` needs them. At step `t + 1` the product is one exchange: the
//! server sends the stored response, the client sends `d = x_1 − r` and opens the response
//! (its share `r·W − s`), and the server takes `(x_0 + d)·W + s` in the clear. The shares sum to
//! `x·W` mod `2^b`; [`LinearCx::olt_finish`] brings them back as the OLT's are.
//!
//! What moves: the client's encryption, the server's homomorphic products and InterLeave, off
//! the step's critical path (onto cores the protocol leaves idle); what stays: the same query
//! and response bytes (each step carries the next step's queries) and about the same flights
//! (the exchange, then the next query: SmolLM2 1 % more round trips per query). Measured
//! (`docs/results/llm.md`): a SmolLM2 step's four weight products 2.43 → 0.78 s, the step
//! 8.47 → 7.23 s — the background work slows the other operators by about 1 s per step.
//! Security: `d` is `x_1` under a one-time pad (`r` fresh from the client's PRG per weight per
//! step, used once); the query and response are the session's OLT on `r`. A call with no row
//! prepared (the prompt, a first step, a row count other than one) runs the plain OLT, and
//! prepares the next step when [`LinearCx::steps_follow`]; a row prepared but not used (the
//! client stopped the generation early) is dropped unused at the weight's next call.

use super::MatmulProtocol;
use crate::krdy::matmul_u64;
use crate::matmul::mask;
use crate::olt::{evaluate_offline, open_response, query_cts, recv_frames, result_layout, send_blocks};
use crate::protocol::{LinearCx, LinearProtocol, OltParts, State};
use crate::session::HeSession;
use crate::{LinearError, OltPlan, Side, Variant};
use nectar_math::registry::{Protocol, Security, StatRow};
use nectar_math::Prg;
use nectar_net::{Channel, Role};
use rand_core::RngCore;
use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};

/// The key the protocol's session state is kept under.
pub const STATE_KEY: &str = "olt-ahead";

/// The protocol `matmul = olt-ahead`.
pub struct OltAhead;

impl Protocol for OltAhead {
    fn name(&self) -> &'static str {
        "olt-ahead"
    }
    fn source(&self) -> &'static str {
        "BumbleBee §III OLT, a decoding step's rows one step ahead (Delphi §4)"
    }
    /// The OLT's HE set is the suite's `olt-ring`'s; this protocol adds the rows' mask.
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "ahead_rows": 1, "mask": "uniform over the OLT ring, fresh per weight per step" })
    }
    fn security(&self) -> Result<Security, String> {
        Ok(Security {
            he: Vec::new(),
            statistical: vec![StatRow {
                step: "olt-ahead: the client's row x − r",
                session_bits: None,
                detail: "r uniform over the OLT ring, fresh from the client's PRG for each weight and \
                         step and used once: a one-time pad (statistical distance 0); the query and \
                         response on r are the session's OLT (its rows)"
                    .into(),
            }],
        })
    }
}

/// Bytes of layer weights the server's evaluations in flight may hold (LOCAL): each holds its
/// weight until it finishes (a SmolLM2 layer's four: about 28 MB as ring elements); past this,
/// the server waits for the oldest before it starts another. A prompt queues a whole step's
/// evaluations while its own work keeps the cores busy: without a bound they held 0.84 GB more
/// at the server's peak (SmolLM2).
pub const AHEAD_WEIGHT_BUDGET: usize = 128 << 20;

/// What one weight has ready for the next step's row.
enum Ready {
    /// The client: the mask `r` whose query it sent.
    Client { plan: OltPlan, r: Vec<u64> },
    /// The server: the evaluation of that query on the background thread.
    Server { plan: OltPlan, job: Job },
}

/// The response frames and the server's share of `r·W`.
type Evaluated = Result<(Vec<Vec<u8>>, Vec<u64>), LinearError>;

/// A server's evaluation on the background thread.
struct Job {
    /// When it started (the oldest is waited for first).
    seq: u64,
    /// Bytes of the weight it holds until it finishes.
    held: usize,
    rx: mpsc::Receiver<Evaluated>,
    done: Option<Evaluated>,
}

impl Job {
    /// Whether it has finished (its result then kept).
    fn poll(&mut self) -> bool {
        if self.done.is_none() {
            match self.rx.try_recv() {
                Ok(r) => self.done = Some(r),
                Err(mpsc::TryRecvError::Empty) => return false,
                Err(mpsc::TryRecvError::Disconnected) => self.done = Some(Err(stopped())),
            }
        }
        true
    }
    /// Waits for it to finish.
    fn finish(&mut self) {
        if self.done.is_none() {
            self.done = Some(self.rx.recv().unwrap_or_else(|_| Err(stopped())));
        }
    }
    fn result(mut self) -> Evaluated {
        self.finish();
        self.done.unwrap_or_else(|| Err(stopped()))
    }
}

fn stopped() -> LinearError {
    LinearError::BadParams("olt-ahead: the background evaluation stopped".into())
}

/// One party's session state: per weight (the call's `key`), the next step's prepared row.
#[derive(Default)]
pub struct AheadState {
    ready: HashMap<String, Ready>,
    started: u64,
}

impl AheadState {
    fn of(state: Option<&mut (dyn std::any::Any + Send)>) -> Result<&mut AheadState, LinearError> {
        state
            .and_then(|s| s.downcast_mut::<AheadState>())
            .ok_or_else(|| LinearError::Unsupported("this session has no olt-ahead state".into()))
    }

    /// Waits for the oldest unfinished evaluations until those still running hold at most
    /// [`AHEAD_WEIGHT_BUDGET`] − `more` bytes of weights.
    fn make_room(&mut self, more: usize) {
        loop {
            let mut running: Vec<&mut Job> = self
                .ready
                .values_mut()
                .filter_map(|r| match r {
                    Ready::Server { job, .. } => Some(job),
                    Ready::Client { .. } => None,
                })
                .filter_map(|j| (!j.poll()).then_some(j))
                .collect();
            let held: usize = running.iter().map(|j| j.held).sum();
            if held + more <= AHEAD_WEIGHT_BUDGET || running.is_empty() {
                return;
            }
            running.sort_by_key(|j| j.seq);
            running[0].finish();
        }
    }
}

impl LinearProtocol for OltAhead {
    fn state_key(&self) -> Option<&'static str> {
        Some(STATE_KEY)
    }
    /// Nothing to exchange: the OLT's keys are the session's.
    fn setup(&self, _ch: &mut dyn Channel, _role: Role, _format: (u32, u32), _prg: &mut Prg) -> Result<Option<State>, LinearError> {
        Ok(Some(Box::new(AheadState::default())))
    }
}

/// The thread the server's evaluations run on: one rayon thread (their parallel loops run on
/// it one after another, not on the global pool ahead of the protocol's own) of the idle
/// scheduling class ([`crate::prefetch`]), so it takes a core only while the protocol leaves
/// one idle.
fn background() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "olt-ahead".into())
            .start_handler(|_| crate::prefetch::lowest_priority())
            .build()
            .expect("a thread for olt-ahead's evaluations")
    })
}

impl MatmulProtocol for OltAhead {
    /// A prompt's products are the OLT's, prefetched as under `olt`; a decoding step's row
    /// comes prepared a step ahead (where it does not, it runs the plain OLT unprefetched).
    fn prefetch(&self, rows: usize) -> bool {
        rows > 1
    }

    fn layer_matmul(&self, cx: &mut dyn LinearCx, x: &[u64], shape: (usize, usize, usize), w: Option<&[u64]>, key: &str) -> Result<Vec<u64>, LinearError> {
        // Only the server holds the weight; it keeps it past the call in a shared copy.
        let shared = w.map(|v| Arc::new(v.to_vec()));
        self.layer_matmul_shared(cx, x, shape, shared.as_ref(), key)
    }

    fn layer_matmul_shared(&self, cx: &mut dyn LinearCx, x: &[u64], shape: (usize, usize, usize), w: Option<&Arc<Vec<u64>>>, key: &str) -> Result<Vec<u64>, LinearError> {
        let (rows, in_dim, out_dim) = shape;
        let f = cx.format().1;
        let role = cx.session(None).mpc.role();
        if role == Role::Server && w.is_none() {
            return Err(LinearError::BadParams("the server must provide the weight".into()));
        }
        let ready = AheadState::of(cx.session(Some(STATE_KEY)).state)?.ready.remove(key);
        let y = match ready {
            Some(r) if rows == 1 && r.plan().shape == crate::krdy::Shape { k: 1, m: in_dim, n: out_dim } => {
                let raw = online(cx.olt_parts(shape, None)?, r, x, w)?;
                cx.olt_finish(raw, f)?
            }
            // Nothing prepared for this call (dropped unused if prepared for another shape).
            _ => cx.olt_matmul_weight(x, shape, w.map(|v| v.as_slice()), f, Variant::Interleave)?,
        };
        if cx.steps_follow() {
            ahead(cx.olt_parts((1, in_dim, out_dim), Some(STATE_KEY))?, role, w, key)?;
        }
        Ok(y)
    }
}

impl Ready {
    fn plan(&self) -> &OltPlan {
        match self {
            Ready::Client { plan, .. } | Ready::Server { plan, .. } => plan,
        }
    }
}

/// Starts the next step's row of the weight `key`: the client's query of a fresh `r` (sent
/// now), the server's evaluation of it (received now, evaluated on the background thread once
/// the evaluations in flight leave room, [`AHEAD_WEIGHT_BUDGET`]). Nothing where the plan has
/// the server encrypt (its weight would be the query).
fn ahead(p: OltParts<'_>, role: Role, w: Option<&Arc<Vec<u64>>>, key: &str) -> Result<(), LinearError> {
    let plan = p.plan;
    if plan.rhs_encrypts {
        return Ok(());
    }
    let m = mask(p.bits);
    let st = AheadState::of(p.state)?;
    let next = match (role, w) {
        (Role::Client, None) => {
            let r: Vec<u64> = (0..plan.shape.m).map(|_| p.prg.next_u64() & m).collect();
            send_blocks(p.ch, p.sess, &plan, Side::Lhs, &[&r], p.prg)?;
            Ready::Client { plan, r }
        }
        (Role::Server, Some(w)) => {
            let held = std::mem::size_of_val(w.as_slice());
            st.make_room(held);
            let frames = recv_frames(p.ch, query_cts(&plan))?;
            let (sess, w, mut prg): (Arc<HeSession>, Arc<Vec<u64>>, Prg) = (Arc::clone(p.sess), Arc::clone(w), p.prg.fork());
            let (tx, rx) = mpsc::channel();
            background().spawn(move || {
                // A panic is an error at the join, not the pool's (an abort).
                let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| evaluate_offline(&sess, &plan, Side::Rhs, &w, frames, &mut prg)))
                    .unwrap_or_else(|_| Err(LinearError::BadParams("olt-ahead: the background evaluation panicked".into())));
                drop(w);
                let _ = tx.send(out);
            });
            st.started += 1;
            Ready::Server { plan, job: Job { seq: st.started, held, rx, done: None } }
        }
        _ => return Err(LinearError::BadParams("the weight belongs to the server".into())),
    };
    st.ready.insert(key.to_string(), next);
    Ok(())
}

/// The product of a prepared row (module docs): the raw shares mod `2^bits`.
fn online(p: OltParts<'_>, ready: Ready, x: &[u64], w: Option<&Arc<Vec<u64>>>) -> Result<Vec<u64>, LinearError> {
    let m = mask(p.bits);
    let s = ready.plan().shape;
    if x.len() != s.m {
        return Err(LinearError::BadShape(format!("a row of {} entries for {} inputs", x.len(), s.m)));
    }
    match (ready, w) {
        (Ready::Client { plan, r }, None) => {
            let d: Vec<u64> = x.iter().zip(&r).map(|(a, b)| a.wrapping_sub(*b) & m).collect();
            p.ch.send_u64s(&d)?;
            p.ch.flush()?;
            let share = open_response(p.ch, p.sess, &result_layout(&plan, 1))?;
            Ok(share.into_iter().map(|v| v & m).collect())
        }
        (Ready::Server { job, .. }, Some(w)) => {
            let (frames, share) = job.result()?;
            for fr in &frames {
                p.ch.send(fr)?;
            }
            p.ch.flush()?;
            let d = p.ch.recv_u64s()?;
            if d.len() != s.m || w.len() != s.m * s.n || share.len() != s.n {
                return Err(LinearError::BadShape(format!("olt-ahead: a row of {} entries for {} inputs", d.len(), s.m)));
            }
            let xd: Vec<u64> = x.iter().zip(&d).map(|(a, b)| a.wrapping_add(*b)).collect();
            let local = matmul_u64(&xd, w, s);
            Ok(local.iter().zip(&share).map(|(a, b)| a.wrapping_add(*b) & m).collect())
        }
        _ => Err(LinearError::BadParams("the weight belongs to the server".into())),
    }
}
