//! Two-party sessions: handshake, session setup, queries.
//!
//! Wire protocol (pinned; JSON control frames on the same [`Channel`] as the protocols):
//! 1. client → server `Hello { agreement }`: protocol version, the resolved [`Suite`] (every
//!    operator's protocol) and its digest over all AGREEMENT parameters (fixed-point format,
//!    HE parameter fingerprints, coefficients; [`Suite::digest`]); on a mismatch the server's
//!    `Reject` names the first differing operator (`gelu: client p4, server seg4`);
//! 2. server → client `Welcome { config_json, reveal_to_server }` (the public architecture) or
//!    `Reject { reason }`; the client compares the architecture with its own copy when it has
//!    one (model-shape mismatch ends the session);
//! 3. session setup of the engine: base OTs both ways, HE public and Galois keys (once per session);
//! 4. any number of `Query { task, len }` (the sequence length is public; the ids stay with the
//!    client), each followed by the secure run; if the server announced `reveal_to_server`, the
//!    client sends its output after each query (semi-honest: equivalent to revealing to both);
//! 5. `Bye`.
//!
//! Any error ends that session, on both sides, with a message; the server keeps serving others.
//! When the server ends a session for a reason the client should hear (a query the model
//! cannot answer, an oversized or late message, an internal error), it sends an abort frame
//! (`nectar_net::ABORT_MARK`) with a one-line reason, which the client reports as
//! [`SessionError::Server`] wherever it was waiting; honest transcripts never contain one.
//!
//! Limits ([`SessionLimits`]): before the `Hello` arrives only [`HANDSHAKE_MAX_FRAME`]-sized
//! frames are accepted and the `Hello` must arrive within the handshake deadline; a valid
//! `Hello` is then admitted or turned away by the server ([`ServerHooks::admit`]: its session
//! slots, a drain) with a one-line reason in an abort frame; after it,
//! protocol messages up to `max_frame` and control messages up to [`CONTROL_MAX_FRAME`], each
//! within the idle deadline. Every query's public fields are
//! checked against the model ([`SecureModel::check_query`]) before any work or allocation.

use nectar_math::Prg;
use nectar_model::config::ModelConfig;
use nectar_model::secure::{Output, Profile, Query, SecureEngine, SecureModel, Task, WeightSource};
use nectar_model::Suite;
use nectar_net::{Channel, Limits, NetError, Role, Stats, DEFAULT_MAX_FRAME, HANDSHAKE_MAX_FRAME};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest control message after the handshake (`Query`, `Output`, `Bye`; LOCAL): a revealed
/// output is at most a context window of token ids or one row of floats, far below this.
pub const CONTROL_MAX_FRAME: usize = 4 << 20;

/// The server's limits on one session (LOCAL; `nectar serve` flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    /// Time from connect to a complete `Hello` (`--handshake-timeout`).
    pub handshake: Duration,
    /// Time allowed for each whole message after the handshake: a session that makes no
    /// progress for this long is closed, however it trickles bytes (`--idle-timeout`).
    pub idle: Duration,
    /// Largest message after the handshake (`--max-frame-mib`).
    pub max_frame: usize,
    /// Bytes of weight blocks the session prepares ahead of their operator
    /// (`--memory-budget-mib`, [`SecureEngine::set_prefetch_budget`]).
    pub memory_budget: usize,
    /// Most tokens of one batched query ([`Task::Batch`], `--max-batch-tokens`); `None`: the
    /// model's longest query, the length a session's memory reservation is calibrated at
    /// ([`crate::admission`]).
    pub max_batch_tokens: Option<usize>,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            handshake: Duration::from_secs(5),
            idle: Duration::from_secs(600),
            max_frame: DEFAULT_MAX_FRAME,
            memory_budget: nectar_model::secure::secure_engine::DEFAULT_PREFETCH_BUDGET,
            max_batch_tokens: None,
        }
    }
}

/// Refuses a batch above the server's bound on a batch's tokens ([`SessionLimits::max_batch_tokens`]).
fn check_batch_tokens(q: &Query, config: &ModelConfig, limits: &SessionLimits) -> Result<(), SessionError> {
    let Task::Batch { lens, .. } = &q.task else { return Ok(()) };
    let bound = limits.max_batch_tokens.unwrap_or_else(|| crate::admission::longest_query(config));
    if q.len > bound {
        return Err(SessionError::BadRequest(format!(
            "a batch of {} inputs and {} tokens exceeds this server's {bound} tokens per batch (its memory budget per session; --max-batch-tokens): send smaller batches",
            lens.len(),
            q.len
        )));
    }
    Ok(())
}

/// Version of this wire protocol (AGREEMENT). 2: the typed suite and its digest. 3: HE
/// ciphertexts streamed in frames (`nectar_linear::FRAME_CTS`), both directions' additive COTs
/// of a product in two flights, `sq8`'s one three-threshold comparison (issue 17): transcripts
/// a version-2 peer cannot follow under the same suite digest. 4: `Task::Chat` turns (the
/// client's go-on message after each token) and a decoding step's heads in one block-diagonal
/// OLT (issue 49). 5: `Task::Batch` queries (issue 52). 6: OT products' COTs with graded
/// widths and bOLEe or OT products chosen by their bits (issue 48; the suites' digests change
/// with the `mul` parameters too). 7: grouped-query attention's products once per key/value
/// head, and `norm = outer`'s `r ⊗ γ` by OT OLEs where their bits are fewer than the OLT's
/// (issue 49; the `norm` parameters name the second). 8: the session setup sends `embed =
/// nimbus-cop`'s token table (`SecureModel::preload`), and a masked softmax skips its masked
/// scores (issue 49). 9: `olt-ring = narrow` sends the client's queries against the server's
/// weights at the response level (`nectar_linear::QueryLevel`; its parameters say so).
pub const PROTOCOL_VERSION: u32 = 9;

/// Everything both parties must agree on, compared in the handshake.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    pub version: u32,
    /// Every operator's protocol.
    pub suite: Suite,
    /// [`Suite::digest`]: the protocols and all their AGREEMENT parameters.
    pub digest: String,
}

impl Agreement {
    /// The agreement of a suite; refused if the suite names a protocol not implemented yet.
    pub fn new(suite: &Suite) -> Result<Self, String> {
        suite.validate().map_err(|e| e.to_string())?;
        Ok(Agreement { version: PROTOCOL_VERSION, suite: *suite, digest: suite.digest() })
    }

    /// Why `peer` (the client's) differs from ours: the version, the first differing operator,
    /// or (same protocols, different builds) the parameter digest.
    fn mismatch(&self, peer: &Agreement) -> Option<String> {
        if peer.version != self.version {
            return Some(format!(
                "protocol version mismatch: client speaks {}, server speaks {}",
                peer.version, self.version
            ));
        }
        if let Some(op) = self.suite.mismatch(&peer.suite) {
            return Some(format!("suite mismatch: {op}"));
        }
        if peer.digest != self.digest {
            // The peer's digest is arbitrary text: cut it by characters, never by bytes.
            let head = |d: &str| d.chars().take(12).collect::<String>();
            return Some(format!(
                "suite parameters differ (same protocols, digest client {}…, server {}…): the two builds use different coefficients or HE parameters",
                head(&peer.digest),
                head(&self.digest)
            ));
        }
        None
    }
}

#[derive(Serialize, Deserialize, Debug)]
enum ClientMsg {
    Hello { agreement: Agreement },
    Query { task: Task, len: usize },
    Output { output: Output },
    Bye,
}

#[derive(Serialize, Deserialize, Debug)]
enum ServerMsg {
    Welcome { config_json: String, reveal_to_server: bool },
    Reject { reason: String },
}

/// Errors that end a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("network: {0}")]
    Net(#[from] NetError),
    #[error("malformed {what} message from the peer: {detail}")]
    Malformed { what: &'static str, detail: String },
    #[error("session rejected: {0}")]
    Rejected(String),
    #[error("{0}")]
    Mismatch(String),
    #[error("unexpected message from the peer: {0}")]
    Unexpected(String),
    #[error("{0}")]
    Secure(#[from] nectar_model::secure::SecureError),
    #[error("{0}")]
    Model(#[from] nectar_model::ModelError),
    /// A query the model cannot answer (checked before any work).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The server ended the session and said why (client side).
    #[error("server: {0}")]
    Server(String),
    /// The server turned a valid `Hello` away ([`ServerHooks::admit`]: busy, draining).
    #[error("{0}")]
    Refused(String),
}

impl SessionError {
    /// The transport error at the root of this one, if any.
    pub fn net_cause(&self) -> Option<&NetError> {
        let mut e: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(x) = e {
            if let Some(n) = x.downcast_ref::<NetError>() {
                return Some(n);
            }
            e = x.source();
        }
        None
    }

    /// Client side: an abort frame from the server becomes [`SessionError::Server`].
    fn with_server_reason(self) -> Self {
        match self.net_cause() {
            Some(NetError::Aborted(r)) => SessionError::Server(r.clone()),
            Some(_) => self,
            // Operators wrap their channel's error in layers whose `source` skips it
            // (`#[error(transparent)]`, as `crate::retry` reads them): the server's reason is
            // what follows the channel's words at the end of the message.
            None => {
                let text = self.to_string();
                let marker = NetError::Aborted(String::new()).to_string();
                match text.find(&marker) {
                    Some(i) => SessionError::Server(text[i + marker.len()..].to_string()),
                    None => self,
                }
            }
        }
    }

    /// Server side: the one line the client is told when this error ends its session, or
    /// `None` where the client cannot or need not hear it (it left; the transport already
    /// told it; the handshake's `Reject` did). Internal errors name only the session, whose
    /// log line holds the detail.
    fn reason_for_client(&self, session: usize) -> Option<String> {
        if self.net_cause().is_some() {
            return match self.net_cause() {
                Some(e @ (NetError::Truncated { .. } | NetError::Misaligned { .. } | NetError::UnexpectedLength { .. })) => {
                    Some(format!("bad request: malformed protocol message: {e}"))
                }
                _ => None,
            };
        }
        match self {
            SessionError::BadRequest(_) | SessionError::Refused(_) => Some(self.to_string()),
            SessionError::Malformed { .. } | SessionError::Unexpected(_) => Some(format!("bad request: {self}")),
            SessionError::Rejected(_) | SessionError::Mismatch(_) | SessionError::Server(_) => None,
            _ => Some(format!("internal error (ref: session {session})")),
        }
    }
}

fn send_json<T: Serialize>(ch: &mut dyn Channel, m: &T) -> Result<(), SessionError> {
    let b = serde_json::to_vec(m).map_err(|e| SessionError::Malformed { what: "outgoing", detail: e.to_string() })?;
    ch.send(&b)?;
    ch.flush()?;
    Ok(())
}

fn recv_json<T: for<'de> Deserialize<'de>>(ch: &mut dyn Channel, what: &'static str) -> Result<T, SessionError> {
    let b = ch.recv()?;
    serde_json::from_slice(&b).map_err(|e| SessionError::Malformed { what, detail: e.to_string() })
}

/// One channel used by two holders in turn: the engine (protocol messages) and the session loop
/// (control messages). Never used by both at once; the lock only satisfies the borrow checker.
#[derive(Clone)]
pub struct SharedChannel(Arc<Mutex<Box<dyn Channel>>>);

impl SharedChannel {
    pub fn new(ch: Box<dyn Channel>) -> Self {
        SharedChannel(Arc::new(Mutex::new(ch)))
    }
    fn with<R>(&self, f: impl FnOnce(&mut dyn Channel) -> R) -> R {
        let mut g = match self.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(g.as_mut())
    }
}

impl Channel for SharedChannel {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        self.with(|c| c.send(msg))
    }
    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        self.with(|c| c.recv())
    }
    fn flush(&mut self) -> Result<(), NetError> {
        self.with(|c| c.flush())
    }
    fn stats(&self) -> Stats {
        self.with(|c| c.stats())
    }
    fn set_limits(&mut self, limits: Limits) -> Result<(), NetError> {
        self.with(|c| c.set_limits(limits))
    }
    fn abort(&mut self, reason: &str) -> Result<(), NetError> {
        self.with(|c| c.abort(reason))
    }
    fn cancel_token(&self) -> Option<nectar_net::CancelToken> {
        self.with(|c| c.cancel_token())
    }
    fn send_while_receiving(&mut self, mine: &[Vec<u8>], count: usize, first: bool) -> Result<Vec<Vec<u8>>, NetError> {
        self.with(|c| c.send_while_receiving(mine, count, first))
    }
}

/// What the server serves: a model's public config and its weights.
pub struct Served<'w> {
    pub config: ModelConfig,
    pub config_json: String,
    pub weights: &'w dyn WeightSource,
    pub agreement: Agreement,
    pub reveal_to_server: bool,
}

/// Per-query record of a session.
#[derive(Clone, Debug, Serialize)]
pub struct QueryReport {
    pub task: Task,
    pub len: usize,
    pub seconds: f64,
    pub bytes_sent: u64,
    pub bytes_recv: u64,
    pub rounds: u64,
    pub output: Output,
    /// Generations (client): seconds from the query's start to each token's opening.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub token_seconds: Vec<f64>,
    /// Generations (client): bytes both ways from the query's start to each token's opening.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub token_bytes: Vec<u64>,
    /// Generations (client): the client's rounds (round trips) from the query's start to each
    /// token's opening.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub token_rounds: Vec<u64>,
    #[serde(skip)]
    pub profile: Profile,
}

impl QueryReport {
    /// Seconds per generated token after the first (the prompt's): `None` below two tokens.
    pub fn seconds_per_token(&self) -> Option<f64> {
        per_token_after_first(&self.token_seconds, |s| s)
    }

    /// Bytes (both ways) per generated token after the first: `None` below two tokens.
    pub fn bytes_per_token(&self) -> Option<f64> {
        per_token_after_first(&self.token_bytes, |b| b as f64)
    }

    /// The client's rounds (round trips) per generated token after the first: `None` below two
    /// tokens.
    pub fn rounds_per_token(&self) -> Option<f64> {
        per_token_after_first(&self.token_rounds, |r| r as f64)
    }
}

/// The mean step of a cumulative per-token series after its first entry (the prompt's):
/// `None` below two entries.
fn per_token_after_first<T: Copy>(xs: &[T], f: impl Fn(T) -> f64) -> Option<f64> {
    match xs {
        [first, .., last] => Some((f(*last) - f(*first)) / (xs.len() - 1) as f64),
        _ => None,
    }
}

/// Called on the client with (query index, token) as each generated token is opened
/// (streaming output). It must not block for long: the session waits for it.
pub type TokenHook = Arc<dyn Fn(usize, u32) + Send + Sync>;

/// What a server does around its sessions: admission after the handshake, a record of each
/// query. The default admits every session and records nothing.
pub trait ServerHooks {
    /// Called once a valid `Hello` has arrived, before the `Welcome`: `Err` turns the session
    /// away with that one-line reason (sent to the client). Whatever the hooks take here (a
    /// session slot) they hold until they are dropped, after the session.
    fn admit(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// Called after each query the session served.
    fn query(&mut self, _report: &QueryReport) {}
}

impl ServerHooks for () {}

/// Server side of one session (`id` names it in the log and in internal-error replies).
/// Returns the queries it served; on an error the client is told why where it can be
/// ([`SessionError::reason_for_client`]).
pub fn serve_session(
    ch: Box<dyn Channel>,
    s: &Served,
    limits: &SessionLimits,
    id: usize,
    prg: Prg,
) -> Result<Vec<QueryReport>, SessionError> {
    serve_session_with(ch, s, limits, id, prg, &mut ())
}

/// [`serve_session`] with the server's [`ServerHooks`].
pub fn serve_session_with(
    ch: Box<dyn Channel>,
    s: &Served,
    limits: &SessionLimits,
    id: usize,
    prg: Prg,
    hooks: &mut dyn ServerHooks,
) -> Result<Vec<QueryReport>, SessionError> {
    let shared = SharedChannel::new(ch);
    let r = serve_queries(&shared, s, limits, prg, hooks);
    if let Err(e) = &r {
        if let Some(reason) = e.reason_for_client(id) {
            let _ = shared.clone().abort(&reason);
        }
    }
    r
}

fn serve_queries(
    shared: &SharedChannel,
    s: &Served,
    limits: &SessionLimits,
    prg: Prg,
    hooks: &mut dyn ServerHooks,
) -> Result<Vec<QueryReport>, SessionError> {
    let mut ctl = shared.clone();
    ctl.set_limits(Limits { max_frame: HANDSHAKE_MAX_FRAME, frame_deadline: Some(limits.handshake) })?;
    let hello: ClientMsg = recv_json(&mut ctl, "hello")?;
    let ClientMsg::Hello { agreement } = hello else {
        return Err(SessionError::Unexpected("expected Hello".into()));
    };
    if let Some(reason) = s.agreement.mismatch(&agreement) {
        send_json(&mut ctl, &ServerMsg::Reject { reason: reason.clone() })?;
        return Err(SessionError::Mismatch(reason));
    }
    hooks.admit().map_err(SessionError::Refused)?;
    // Protocol messages may be large; control messages (Query, Output, Bye) never are.
    let protocol = Limits { max_frame: limits.max_frame, frame_deadline: Some(limits.idle) };
    let control = Limits { max_frame: CONTROL_MAX_FRAME.min(limits.max_frame), ..protocol };
    ctl.set_limits(protocol)?;
    send_json(&mut ctl, &ServerMsg::Welcome { config_json: s.config_json.clone(), reveal_to_server: s.reveal_to_server })?;
    let model = SecureModel::new(&s.config, Some(s.weights))?;
    let mut engine_ch = shared.clone();
    let mut engine = SecureEngine::setup(&mut engine_ch, Role::Server, &s.agreement.suite, prg)?;
    model.preload(&mut engine)?;
    engine.set_prefetch_budget(limits.memory_budget);
    let mut reports = Vec::new();
    // A conversation's KV cache shares, kept across `Chat` turns.
    let mut cache = model.new_cache();
    loop {
        ctl.set_limits(control)?;
        match recv_json::<ClientMsg>(&mut ctl, "query")? {
            ClientMsg::Query { task, len } => {
                let q = Query { task: task.clone(), ids: None, len };
                // Every field came from the network: check it before any work.
                model.check_turn(&q, cache.len()).map_err(|e| SessionError::BadRequest(e.to_string()))?;
                check_batch_tokens(&q, &s.config, limits)?;
                ctl.set_limits(protocol)?;
                let s0 = ctl.stats();
                let t = Instant::now();
                let _ = model.run_turn(&mut engine, &q, &mut cache, None)?;
                let output = if s.reveal_to_server {
                    ctl.set_limits(control)?;
                    match recv_json::<ClientMsg>(&mut ctl, "output")? {
                        ClientMsg::Output { output } => output,
                        other => return Err(SessionError::Unexpected(format!("{other:?}"))),
                    }
                } else {
                    Output::Nothing
                };
                let d = ctl.stats() - s0;
                let report = QueryReport {
                    task,
                    len,
                    seconds: t.elapsed().as_secs_f64(),
                    bytes_sent: d.bytes_sent,
                    bytes_recv: d.bytes_recv,
                    rounds: d.rounds,
                    output,
                    token_seconds: Vec::new(),
                    token_bytes: Vec::new(),
                    token_rounds: Vec::new(),
                    profile: engine.take_profile(),
                };
                hooks.query(&report);
                reports.push(report);
            }
            ClientMsg::Bye => return Ok(reports),
            other => return Err(SessionError::Unexpected(format!("{other:?}"))),
        }
    }
}

/// Called on the client as a query's transformer blocks complete, with
/// `(query index, number of queries, blocks done, blocks)` (a generation reports each step's
/// blocks again). For progress bars; it must not block.
pub type QueryProgress = Arc<dyn Fn(usize, usize, usize, usize) + Send + Sync>;

/// Client side of a session: handshake and setup, then queries via [`ClientSession::run`].
pub struct ClientSession {
    shared: SharedChannel,
    engine_ch: Box<SharedChannel>,
    config: ModelConfig,
    reveal_to_server: bool,
    agreement: Agreement,
    setup_stats: Stats,
    setup_seconds: f64,
    prg: Option<Prg>,
    progress: Option<QueryProgress>,
    on_token: Option<TokenHook>,
}

impl ClientSession {
    /// Handshake: `expected` is the client's own copy of the architecture, if it has one.
    pub fn connect(ch: Box<dyn Channel>, agreement: Agreement, expected: Option<&ModelConfig>, prg: Prg) -> Result<Self, SessionError> {
        Self::handshake(ch, agreement, expected, prg).map_err(SessionError::with_server_reason)
    }

    fn handshake(ch: Box<dyn Channel>, agreement: Agreement, expected: Option<&ModelConfig>, prg: Prg) -> Result<Self, SessionError> {
        let shared = SharedChannel::new(ch);
        let mut ctl = shared.clone();
        let t = Instant::now();
        send_json(&mut ctl, &ClientMsg::Hello { agreement: agreement.clone() })?;
        let (config_json, reveal_to_server) = match recv_json::<ServerMsg>(&mut ctl, "welcome")? {
            ServerMsg::Welcome { config_json, reveal_to_server } => (config_json, reveal_to_server),
            ServerMsg::Reject { reason } => return Err(SessionError::Rejected(reason)),
        };
        let config = ModelConfig::from_json_str(&config_json, std::path::Path::new("<server config.json>"))?;
        if let Some(e) = expected {
            if !e.same_architecture(&config) {
                let _ = send_json(&mut ctl, &ClientMsg::Bye);
                return Err(SessionError::Mismatch(format!(
                    "model-shape mismatch: the server serves {} {:?}, the client expects {} {:?}",
                    config.model_type(),
                    config.dims(),
                    e.model_type(),
                    e.dims()
                )));
            }
        }
        Ok(ClientSession {
            engine_ch: Box::new(shared.clone()),
            shared,
            config,
            reveal_to_server,
            agreement,
            setup_stats: Stats::default(),
            setup_seconds: t.elapsed().as_secs_f64(),
            prg: Some(prg),
            progress: None,
            on_token: None,
        })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Whether the server will also learn each output.
    pub fn reveal_to_server(&self) -> bool {
        self.reveal_to_server
    }

    /// Tell `h` each generated token as it is opened (streaming output).
    pub fn with_token_hook(mut self, h: TokenHook) -> Self {
        self.on_token = Some(h);
        self
    }

    /// Report each query's progress to `p` (after each transformer block).
    pub fn with_progress(mut self, p: QueryProgress) -> Self {
        self.progress = Some(p);
        self
    }

    /// Run the whole session: setup once, then `queries` in order, then `Bye`. Each query is
    /// checked against the model before the session setup starts.
    pub fn run(self, queries: &[(Task, Input)]) -> Result<ClientRun, SessionError> {
        self.run_queries(queries).map_err(SessionError::with_server_reason)
    }

    fn run_queries(self, queries: &[(Task, Input)]) -> Result<ClientRun, SessionError> {
        let n = queries.len();
        let config = self.config.clone();
        let check = SecureModel::new(&config, None)?;
        for (task, input) in queries {
            let len = input.len(&config);
            check.check_query(&Query { task: task.clone(), ids: None, len })?;
        }
        let hook = self.on_token.clone();
        let ((), run) = self.live(|live| {
            for (i, (task, input)) in queries.iter().enumerate() {
                live.set_progress_index(i, n);
                match &hook {
                    Some(h) => live.query(task.clone(), input, Some(&mut |t| {
                        h(i, t);
                        true
                    }))?,
                    None => live.query(task.clone(), input, None)?,
                };
            }
            Ok(())
        })?;
        Ok(run)
    }

    /// Runs the session setup, then `f` with a [`Live`] session to send queries one at a time
    /// (an interactive chat), then `Bye`; returns `f`'s value and what the session measured.
    pub fn run_live<T>(self, f: impl FnOnce(&mut Live<'_, '_>) -> Result<T, SessionError>) -> Result<(T, ClientRun), SessionError> {
        self.live(f).map_err(SessionError::with_server_reason)
    }

    fn live<T>(mut self, f: impl FnOnce(&mut Live<'_, '_>) -> Result<T, SessionError>) -> Result<(T, ClientRun), SessionError> {
        let current = Arc::new(AtomicUsize::new(0));
        let total = Arc::new(AtomicUsize::new(1));
        let mut model = SecureModel::new(&self.config, None)?;
        if let Some(p) = self.progress.clone() {
            let (current, total) = (Arc::clone(&current), Arc::clone(&total));
            model = model.with_progress(Box::new(move |done, blocks| p(current.load(Ordering::Relaxed), total.load(Ordering::Relaxed), done, blocks)));
        }
        let mut ctl = self.shared.clone();
        let t = Instant::now();
        let prg = self.prg.take().unwrap_or_else(Prg::from_entropy);
        let mut engine = SecureEngine::setup(self.engine_ch.as_mut(), Role::Client, &self.agreement.suite, prg)?;
        model.preload(&mut engine)?;
        self.setup_seconds += t.elapsed().as_secs_f64();
        self.setup_stats = ctl.stats();
        let cache = model.new_cache();
        let mut live = Live {
            engine: &mut engine,
            model: &model,
            ctl: &mut ctl,
            config: &self.config,
            reveal_to_server: self.reveal_to_server,
            cache,
            pending: None,
            current,
            total,
            reports: Vec::new(),
        };
        let value = f(&mut live)?;
        let reports = std::mem::take(&mut live.reports);
        drop(live);
        send_json(&mut ctl, &ClientMsg::Bye)?;
        Ok((value, ClientRun { reports, setup_seconds: self.setup_seconds, setup_stats: self.setup_stats, total_stats: ctl.stats() }))
    }
}

/// A client session past its setup, sending queries one at a time ([`ClientSession::run_live`]).
pub struct Live<'s, 'c> {
    engine: &'s mut SecureEngine<'c>,
    model: &'s SecureModel<'static>,
    ctl: &'s mut SharedChannel,
    config: &'s ModelConfig,
    reveal_to_server: bool,
    /// The conversation's KV cache shares ([`Task::Chat`]).
    cache: nectar_model::KvCache<Vec<u64>>,
    /// The conversation's last opened token, not in the cache yet: the next turn starts with it.
    pending: Option<u32>,
    current: Arc<AtomicUsize>,
    total: Arc<AtomicUsize>,
    reports: Vec<QueryReport>,
}

impl Live<'_, '_> {
    /// The model's public architecture.
    pub fn config(&self) -> &ModelConfig {
        self.config
    }

    /// Positions the conversation holds (its earlier turns, the last token included).
    pub fn conversation_len(&self) -> usize {
        self.cache.len() + usize::from(self.pending.is_some())
    }

    /// The progress hook's query numbering.
    fn set_progress_index(&self, i: usize, n: usize) {
        self.current.store(i, Ordering::Relaxed);
        self.total.store(n, Ordering::Relaxed);
    }

    /// Runs one query; `on_token` is told each generated token as it is opened (streaming),
    /// and for [`Task::Chat`] answers whether to go on (the server learns where a turn
    /// stopped). A chat turn's input is the new text's ids: the previous turn's last token
    /// goes first (it was opened, not yet run), unless `reset`.
    pub fn query(&mut self, task: Task, input: &Input, on_token: Option<&mut dyn FnMut(u32) -> bool>) -> Result<QueryReport, SessionError> {
        let input = match (&task, input, self.pending) {
            (Task::Chat { reset: false, .. }, Input::Ids(ids), Some(p)) => Input::Ids(std::iter::once(p).chain(ids.iter().copied()).collect()),
            _ => input.clone(),
        };
        let len = input.len(self.config);
        let cached = if matches!(task, Task::Chat { reset: true, .. }) { 0 } else { self.cache.len() };
        self.model.check_turn(&Query { task: task.clone(), ids: None, len }, cached)?;
        send_json(self.ctl, &ClientMsg::Query { task: task.clone(), len })?;
        let s0 = self.ctl.stats();
        let t = Instant::now();
        let mut token_seconds = Vec::new();
        let mut token_bytes = Vec::new();
        let mut token_rounds = Vec::new();
        let mut on_token = on_token;
        let counter = self.ctl.clone();
        let mut timed_hook = |tok: u32| {
            token_seconds.push(t.elapsed().as_secs_f64());
            let d = counter.stats() - s0;
            token_bytes.push(d.bytes_sent + d.bytes_recv);
            token_rounds.push(d.rounds);
            on_token.as_mut().is_none_or(|f| f(tok))
        };
        let output = match &input {
            Input::Ids(ids) => self.model.run_turn(self.engine, &Query { task: task.clone(), ids: Some(ids.clone()), len }, &mut self.cache, Some(&mut timed_hook))?,
            Input::Pixels(px) => self.model.run_image(self.engine, Some(px))?,
        };
        if let Task::Chat { .. } = task {
            self.pending = match &output {
                Output::Tokens(t) => t.last().copied(),
                _ => None,
            };
        }
        if self.reveal_to_server {
            send_json(self.ctl, &ClientMsg::Output { output: output.clone() })?;
        }
        let d = self.ctl.stats() - s0;
        let report = QueryReport {
            task,
            len,
            seconds: t.elapsed().as_secs_f64(),
            bytes_sent: d.bytes_sent,
            bytes_recv: d.bytes_recv,
            rounds: d.rounds,
            output,
            token_seconds,
            token_bytes,
            token_rounds,
            profile: self.engine.take_profile(),
        };
        self.reports.push(report.clone());
        Ok(report)
    }
}

/// One private input of the client: token ids (text models) or normalised pixels (ViT).
#[derive(Clone, Debug)]
pub enum Input {
    Ids(Vec<u32>),
    Pixels(Vec<f32>),
}

impl Input {
    /// The public length the server is told: tokens, or a ViT's rows (patches + `[CLS]`).
    pub fn len(&self, cfg: &ModelConfig) -> usize {
        match (self, cfg) {
            (Input::Ids(ids), _) => ids.len(),
            (Input::Pixels(_), ModelConfig::Vit(c)) => nectar_model::vit::num_patches(c) + 1,
            (Input::Pixels(_), _) => 0,
        }
    }
}

/// What a client session measured.
pub struct ClientRun {
    pub reports: Vec<QueryReport>,
    pub setup_seconds: f64,
    /// The client's traffic from connect to the end of the session setup.
    pub setup_stats: Stats,
    /// The client's traffic of the whole session (handshake, setup, queries, `Bye`).
    pub total_stats: Stats,
}

impl ClientRun {
    /// The run's measurements as one JSON object (client view): `seconds` (the caller's wall
    /// clock of the whole session, `wall_seconds`), `setup_seconds`, `inference_seconds`,
    /// bytes each way (`bytes_client_to_server`, `bytes_server_to_client`, `bytes_total`,
    /// `setup_bytes`), `rounds` (flights this party sent), one object per query under
    /// `queries`, and the per-operator profile of all queries under `ops` (each row an
    /// [`nectar_model::secure::OpRecord`], with its protocol and preprocessing share).
    pub fn metrics(&self, suite: &Suite, wall_seconds: f64, reveal_to_server: bool) -> serde_json::Value {
        let mut profile = Profile::default();
        for r in &self.reports {
            profile.merge(&r.profile);
        }
        let queries: Vec<serde_json::Value> = self
            .reports
            .iter()
            .map(|r| {
                serde_json::json!({
                    "task": r.task,
                    "tokens": r.len,
                    "seconds": r.seconds,
                    "bytes_sent": r.bytes_sent,
                    "bytes_recv": r.bytes_recv,
                    "rounds": r.rounds,
                })
            })
            .collect();
        let t = &self.total_stats;
        serde_json::json!({
            "suite": suite.label(),
            "protocols": suite.json_map(),
            "seconds": wall_seconds,
            "setup_seconds": self.setup_seconds,
            "inference_seconds": self.reports.iter().map(|r| r.seconds).sum::<f64>(),
            "bytes_client_to_server": t.bytes_sent,
            "bytes_server_to_client": t.bytes_recv,
            "bytes_total": t.bytes_sent + t.bytes_recv,
            "setup_bytes": self.setup_stats.bytes_sent + self.setup_stats.bytes_recv,
            "rounds": t.rounds,
            "reveal_to_server": reveal_to_server,
            "queries": queries,
            "ops": profile.ops,
        })
    }
}

#[cfg(test)]
mod fuzz {
    //! Issue 18, item 5: the server's control messages (`Hello`, `Query`, `Output`, `Bye`) come
    //! from the network. Arbitrary bytes and mutated valid messages go through exactly what
    //! `serve_queries` does with them — parse, compare the agreement, validate the query against
    //! the model — and must end in a value or an error, never a panic; an accepted query is
    //! within the model's limits.
    use super::*;
    use proptest::prelude::*;

    /// The tiny BERT and GPT-2 with their position limits.
    fn tiny_models() -> Vec<(SecureModel<'static>, usize)> {
        let root = std::env::temp_dir().join(format!("nectar-fuzz-control-{}", std::process::id()));
        let mut out = Vec::new();
        for gpt2 in [false, true] {
            let dir = root.join(if gpt2 { "gpt2" } else { "bert" });
            std::fs::create_dir_all(&dir).unwrap();
            if gpt2 {
                nectar_bench::fixtures::tiny::write_tiny_gpt2(&dir, 3).unwrap();
            } else {
                nectar_bench::fixtures::tiny::write_tiny_bert(&dir, 3).unwrap();
            }
            let config = ModelConfig::from_file(&dir.join("config.json")).unwrap();
            let positions = if gpt2 { nectar_bench::fixtures::tiny::GPT2_POSITIONS } else { nectar_bench::fixtures::tiny::BERT_MAX_POS };
            out.push((SecureModel::new(&config, None).unwrap(), positions));
        }
        let _ = std::fs::remove_dir_all(&root);
        out
    }

    fn valid_messages() -> Vec<Vec<u8>> {
        let agreement = Agreement::new(&Suite::parse("bumblebee").unwrap()).unwrap();
        [
            ClientMsg::Hello { agreement },
            ClientMsg::Query { task: Task::Embed, len: 3 },
            ClientMsg::Query { task: Task::Generate { n_new: 2 }, len: 3 },
            ClientMsg::Output { output: Output::Nothing },
            ClientMsg::Bye,
        ]
        .iter()
        .map(|m| serde_json::to_vec(m).unwrap())
        .collect()
    }

    /// What the server does with one control message's bytes.
    fn serve_bytes(models: &[(SecureModel<'static>, usize)], ours: &Agreement, bytes: &[u8]) {
        let Ok(msg) = serde_json::from_slice::<ClientMsg>(bytes) else { return };
        match msg {
            ClientMsg::Hello { agreement } => {
                let _ = ours.mismatch(&agreement);
            }
            ClientMsg::Query { task, len } => {
                for (m, positions) in models {
                    let q = Query { task: task.clone(), ids: None, len };
                    if m.check_query(&q).is_ok() {
                        assert!(len >= 1 && len <= *positions, "accepted length {len}");
                        if let Task::Generate { n_new } = task {
                            assert!(len.checked_add(n_new).is_some_and(|t| t <= *positions), "accepted n_new {n_new}");
                        }
                    }
                }
            }
            ClientMsg::Output { .. } | ClientMsg::Bye => {}
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_control_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            thread_local!(static MODELS: Vec<(SecureModel<'static>, usize)> = tiny_models());
            let ours = Agreement::new(&Suite::parse("bumblebee").unwrap()).unwrap();
            MODELS.with(|m| serve_bytes(m, &ours, &bytes));
        }

        #[test]
        fn mutated_control_messages_never_panic(
            which in 0usize..5,
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
            cut in any::<usize>(),
            big in prop_oneof![Just(0u64), Just(u64::MAX), Just(1u64 << 53), any::<u64>()],
        ) {
            thread_local!(static MODELS: Vec<(SecureModel<'static>, usize)> = tiny_models());
            let ours = Agreement::new(&Suite::parse("bumblebee").unwrap()).unwrap();
            let mut b = valid_messages()[which].clone();
            // Numbers swapped for extreme ones (lengths, n_new, the version) ...
            let text = String::from_utf8(b.clone()).unwrap().replace(":3", &format!(":{big}")).replace(":2", &format!(":{big}"));
            MODELS.with(|m| serve_bytes(m, &ours, text.as_bytes()));
            // ... bytes overwritten, and the message cut short.
            for (i, v) in edits {
                let n = b.len();
                b[i % n] = v;
            }
            MODELS.with(|m| serve_bytes(m, &ours, &b));
            let n = b.len();
            MODELS.with(|m| serve_bytes(m, &ours, &b[..cut % n]));
        }
    }
}
