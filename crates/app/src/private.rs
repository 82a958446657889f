//! `nectar serve`, `nectar infer` and `nectar demo`: private inference over TCP.

pub use crate::session::Input;
use crate::admin::Probe;
use crate::admission::{MemoryBudget, Reservation};
use crate::metrics::Metrics;
use crate::rate_limit::RateLimitedLog;
pub use crate::session::SessionLimits;
use crate::session::{
    serve_session, serve_session_with, Agreement, ClientRun, ClientSession, Live, QueryProgress, QueryReport, Served, ServerHooks, SessionError, TokenHook,
};
use crate::test_seed;
use crate::watch::{Cancel, Cancellable, Watcher};
use nectar_model::config::ModelConfig;
use nectar_model::secure::{Output, Task};
use nectar_model::encoded::MAX_BUDGET_BYTES;
use nectar_model::secure::weight_cache::{budget_for, CachingSource};
use nectar_model::Suite;
use nectar_model::tokenizer::TextTokenizer;
use nectar_model::gguf::{GgufFile, GgufLlama};
use nectar_model::weights::{WeightSource, Weights};
use nectar_net::{LinkModel, NetError, Role, TcpChannel};
use std::collections::HashMap;
use std::net::{IpAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How `nectar serve` runs (LOCAL; its flags).
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The server also learns each output.
    pub reveal_to_server: bool,
    /// Stop accepting after this many connections, then return once their sessions end
    /// (`--max-sessions`).
    pub max_sessions: Option<usize>,
    /// Sessions running at once (past their `Hello`); a valid `Hello` beyond them is refused
    /// with a one-line reason (`--max-concurrent-sessions`).
    pub max_concurrent: usize,
    /// Connections accepted whose `Hello` has not arrived yet; more are refused at once
    /// (`--max-pending-connections`). They hold no session slot.
    pub max_pending: usize,
    /// The same, per client address (`--max-pending-per-peer`).
    pub max_pending_per_peer: usize,
    /// Per-session limits (frame sizes, deadlines).
    pub limits: SessionLimits,
    /// No per-session log lines.
    pub quiet: bool,
    /// When set, the server stops accepting (within [`ACCEPT_POLL`]) and returns once the
    /// running sessions end.
    pub stop: Option<Arc<AtomicBool>>,
    /// When set (SIGTERM / SIGINT in `nectar serve`), the server drains: `/readyz` turns 503,
    /// new connections are refused with `server busy: draining`, and it returns once the
    /// running sessions end or after [`ServeOptions::drain_timeout`], cutting those left.
    pub drain: Option<Arc<AtomicBool>>,
    /// `--drain-timeout`.
    pub drain_timeout: Duration,
    /// `--admin`: where `/healthz`, `/readyz` and `/metrics` are served ([`crate::admin`]).
    pub admin: Option<Arc<TcpListener>>,
    /// `--insecure-test-seed`: session `i` draws its randomness from (seed, server, i) instead
    /// of the operating system ([`crate::test_seed`]; NO privacy, tests only).
    pub test_seed: Option<u64>,
    /// `--memory-limit-gib`: sessions are admitted only while their estimated peaks fit
    /// ([`crate::admission`]).
    pub memory: Option<Arc<MemoryBudget>>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            reveal_to_server: false,
            max_sessions: None,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            max_pending: DEFAULT_MAX_PENDING,
            max_pending_per_peer: DEFAULT_MAX_PENDING_PER_PEER,
            limits: SessionLimits::default(),
            quiet: false,
            stop: None,
            drain: None,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            admin: None,
            test_seed: None,
            memory: None,
        }
    }
}

/// Default of `--max-concurrent-sessions` (LOCAL): each session holds its own keys, OT pools
/// and activations (hundreds of MB for BERT-base), so the cap bounds the server's memory.
pub const DEFAULT_MAX_CONCURRENT: usize = 8;

/// Default of `--max-pending-connections` (LOCAL): a connection before its `Hello` costs a
/// thread and a 64 KiB frame at most, so many can wait without starving sessions.
pub const DEFAULT_MAX_PENDING: usize = 256;

/// Default of `--max-pending-per-peer` (LOCAL): one address cannot take all pending places.
pub const DEFAULT_MAX_PENDING_PER_PEER: usize = 32;

/// Default of `--drain-timeout` (LOCAL).
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// How often the accept loop looks at its stop and drain flags when no connection arrives.
pub const ACCEPT_POLL: Duration = Duration::from_millis(100);

/// The refusal a draining server sends.
pub const DRAINING: &str = "server busy: draining";

/// Repeated log lines (accept failures, refusals) are reported at most this often.
const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Backoff after a failed `accept` (EMFILE, ENFILE, ENOMEM...): doubled per consecutive
/// failure up to the maximum, so a server out of descriptors does not spin.
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(1));

/// The public architecture and the server's open weights file of a model directory (or of a
/// LLaMA GGUF file).
///
/// The weights are read from the open file ([`Weights`]: positioned reads, no copy of the
/// whole file, no memory map; a GGUF file's tensors are dequantised as they are read), so a
/// file truncated underneath fails the sessions that read it with an error instead of killing
/// the process (SIGBUS). Each layer weight's encoding is kept after its first use, as 32-bit
/// integers within [`budget_for`] ([`CachingSource`]: a decoding step would otherwise
/// re-read and re-encode every weight of the model); the vectors (norms, biases) are read at
/// each use.
pub struct ServerModel {
    pub config: ModelConfig,
    /// What the `Welcome` carries: `config.json`, or a GGUF file's architecture in its form.
    pub config_json: String,
    pub weights: Box<dyn WeightSource>,
    /// The budget of the weights' encoding cache ([`budget_for`]): memory the server will hold
    /// once its sessions have used every weight.
    pub encoded_cache_bytes: usize,
}

impl ServerModel {
    /// `dir/config.json` and `dir/model.safetensors`, or a GGUF file (`dir` itself, or the one
    /// `*.gguf` of a directory without `config.json`).
    pub fn load(dir: &Path) -> Result<Self, String> {
        if let Some(path) = nectar_model::gguf_path(dir).map_err(|e| e.to_string())? {
            let src = GgufLlama::new(GgufFile::open(&path).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
            let mut config = ModelConfig::Llama(src.config().clone());
            nectar_model::shapes::check_shapes(&config, &src).map_err(|e| e.to_string())?;
            calibrate(&path, &mut config, &src)?;
            let config_json = match &config {
                ModelConfig::Llama(c) => ModelConfig::llama_json(c),
                other => return Err(format!("{}: a GGUF file of a {} model", path.display(), other.model_type())),
            };
            let encoded_cache_bytes = budget_for(&config, &src, MAX_BUDGET_BYTES).map_err(|e| e.to_string())?;
            return Ok(ServerModel { config, config_json, weights: Box::new(CachingSource::new(src, encoded_cache_bytes)), encoded_cache_bytes });
        }
        if !dir.is_dir() {
            return Err(format!("{}: model directory not found", dir.display()));
        }
        let cfg_path = dir.join("config.json");
        let config_json = std::fs::read_to_string(&cfg_path).map_err(|e| format!("{}: {e}", cfg_path.display()))?;
        let config = ModelConfig::from_json_str(&config_json, &cfg_path).map_err(|e| e.to_string())?;
        let weights = Weights::open(&dir.join("model.safetensors")).map_err(|e| e.to_string())?;
        // Every tensor the config implies, checked now (shapes only; nothing is read) rather
        // than found missing or misshapen in a client's query.
        nectar_model::shapes::check_shapes(&config, &weights)
            .map_err(|e| format!("{} does not match the weights: {e}", cfg_path.display()))?;
        let mut config = config;
        let mut config_json = config_json;
        if calibrate(dir, &mut config, &weights)? {
            if let ModelConfig::Llama(c) = &config {
                let mut v: serde_json::Value = serde_json::from_str(&config_json).map_err(|e| format!("{}: {e}", cfg_path.display()))?;
                v["nectar_scale_shifts"] = serde_json::json!(c.scale_shifts);
                config_json = v.to_string();
            }
        }
        let encoded_cache_bytes = budget_for(&config, &weights, MAX_BUDGET_BYTES).map_err(|e| e.to_string())?;
        Ok(ServerModel { config, config_json, weights: Box::new(CachingSource::new(weights, encoded_cache_bytes)), encoded_cache_bytes })
    }
}

/// Largest LLaMA (parameters) the server calibrates: the calibration holds an f32 copy.
const CALIBRATE_MAX_PARAMS: usize = 1 << 30;

/// A LLaMA's RMSNorm statistics shifts from the server's own weights
/// ([`nectar_model::calibrate`]), set in `config`; whether any was set. Other architectures,
/// and LLaMAs too large for an f32 copy (a warning), are left as they are.
fn calibrate(path: &Path, config: &mut ModelConfig, w: &dyn WeightSource) -> Result<bool, String> {
    let ModelConfig::Llama(c) = config else { return Ok(false) };
    let expected = nectar_model::shapes::expected_tensors(&ModelConfig::Llama(c.clone()), w).map_err(|e| e.to_string())?;
    let params: usize = expected.iter().map(|(_, s)| s.iter().product::<usize>()).sum();
    if params > CALIBRATE_MAX_PARAMS {
        eprintln!(
            "warning: {}: {params} parameters: not calibrated for massive activations (an f32 copy would be too large); \
             norms whose inputs exceed the fixed-point format would give wrong outputs",
            path.display()
        );
        return Ok(false);
    }
    let model = nectar_model::Model::load(path).map_err(|e| e.to_string())?;
    let hi = nectar_nn::rsqrt::LAYERNORM_RANGE.newton.hi;
    c.scale_shifts = nectar_model::calibrate::model_scale_shifts(&model, nectar_math::FixedPoint::BUMBLEBEE, hi).map_err(|e| e.to_string())?;
    Ok(!c.scale_shifts.is_empty())
}

/// What the accept loop, the session threads and the admin endpoint share.
struct ServerState {
    metrics: Metrics,
    suite: String,
    cap: usize,
    /// Sessions past their `Hello`.
    active: AtomicUsize,
    /// Connections before their `Hello`, in all and per client address.
    pending: AtomicUsize,
    pending_by_peer: Mutex<HashMap<IpAddr, usize>>,
    draining: AtomicBool,
    refuse_log: Mutex<RateLimitedLog>,
    memory: Option<Arc<MemoryBudget>>,
}

impl ServerState {
    /// Turn `stream` away with `reason`, counted under `kind` (before the frame leaves, so a
    /// client that reads it finds the count), logged at most once per interval.
    fn refuse(&self, stream: TcpStream, peer: &str, reason: &str, kind: &str) {
        self.refused(peer, reason, kind);
        nectar_net::tcp::refuse(stream, reason);
    }

    fn refused(&self, peer: &str, reason: &str, kind: &str) {
        self.metrics.refused.with_label_values(&[kind]).inc();
        let more = lock(&self.refuse_log).event(Instant::now());
        if let Some(more) = more {
            tracing::warn!(peer, reason = kind, "serve: refused {peer}: {}{more}", reason.trim_start_matches("server busy: "));
        }
    }

    /// Why a new session cannot start now, if it cannot.
    fn busy(&self) -> Option<String> {
        if self.draining.load(Ordering::SeqCst) {
            return Some(DRAINING.into());
        }
        let cap = self.cap;
        if self.active.load(Ordering::SeqCst) >= cap {
            return Some(format!("server busy: {cap} sessions running (--max-concurrent-sessions {cap}); try again later"));
        }
        self.memory.as_ref().and_then(|m| m.busy())
    }
}

impl Probe for ServerState {
    fn ready(&self) -> Result<(), String> {
        match self.busy() {
            None => Ok(()),
            Some(why) => Err(why.trim_start_matches("server busy: ").to_string()),
        }
    }
    fn metrics(&self) -> Result<String, String> {
        self.metrics.render()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A connection's place among those awaiting their `Hello`; released when dropped.
struct Pending<'a> {
    state: &'a ServerState,
    ip: IpAddr,
}

impl<'a> Pending<'a> {
    /// A place for a connection from `ip`, or the refusal (reason, metric label).
    fn take(state: &'a ServerState, ip: IpAddr, max: usize, per_peer: usize) -> Result<Self, (String, &'static str)> {
        let mut by_peer = lock(&state.pending_by_peer);
        let total = state.pending.load(Ordering::SeqCst);
        if total >= max {
            return Err((format!("server busy: {total} connections awaiting their handshake; try again later"), "pending_cap"));
        }
        let mine = by_peer.entry(ip).or_insert(0);
        if *mine >= per_peer {
            return Err((format!("server busy: {mine} connections from {ip} awaiting their handshake; try again later"), "per_peer_cap"));
        }
        *mine += 1;
        state.pending.fetch_add(1, Ordering::SeqCst);
        state.metrics.connections_pending.inc();
        Ok(Pending { state, ip })
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        let mut by_peer = lock(&self.state.pending_by_peer);
        if let Some(n) = by_peer.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                by_peer.remove(&self.ip);
            }
        }
        self.state.pending.fetch_sub(1, Ordering::SeqCst);
        self.state.metrics.connections_pending.dec();
    }
}

/// A session slot, held from a valid `Hello` to the end of the session.
struct Slot<'a>(&'a ServerState);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
        self.0.metrics.sessions_active.dec();
    }
}

/// One connection's [`ServerHooks`]: its pending place until the `Hello`, then its slot and
/// its share of the memory budget; each query observed in the metrics.
struct Hooks<'a> {
    state: &'a ServerState,
    pending: Option<Pending<'a>>,
    slot: Option<Slot<'a>>,
    memory: Option<Reservation<'a>>,
    started: Option<Instant>,
}

impl ServerHooks for Hooks<'_> {
    fn admit(&mut self) -> Result<(), String> {
        self.pending = None;
        let st = self.state;
        if st.draining.load(Ordering::SeqCst) {
            return Err(DRAINING.into());
        }
        // The memory first: a session refused for its slot gives its share back on return.
        let memory = st.memory.as_deref().map(|m| m.reserve(&st.metrics)).transpose()?;
        let cap = st.cap;
        if st.active.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |a| (a < cap).then_some(a + 1)).is_err() {
            return Err(format!("server busy: {cap} sessions running (--max-concurrent-sessions {cap}); try again later"));
        }
        st.metrics.sessions_active.inc();
        st.metrics.sessions_started.inc();
        self.slot = Some(Slot(st));
        self.memory = memory;
        self.started = Some(Instant::now());
        Ok(())
    }

    fn query(&mut self, r: &QueryReport) {
        let m = &self.state.metrics;
        let suite = self.state.suite.as_str();
        m.query_seconds.with_label_values(&[suite]).observe(r.seconds);
        for op in &r.profile.ops {
            m.operator_seconds.with_label_values(&[suite, op.op.as_str(), op.protocol.as_str()]).observe(op.seconds);
        }
    }
}

/// The metric label of an error that ended a session.
fn error_kind(e: &SessionError) -> &'static str {
    if let Some(n) = e.net_cause() {
        return match n {
            NetError::Closed => "peer_closed",
            NetError::Timeout => "timeout",
            NetError::Cancelled => "cancelled",
            NetError::FrameTooLarge { .. } => "over_limit",
            NetError::Aborted(_) => "peer_aborted",
            NetError::Truncated { .. } | NetError::Misaligned { .. } | NetError::UnexpectedLength { .. } => "bad_request",
            NetError::Io(_) => "network",
        };
    }
    match e {
        SessionError::Malformed { .. } | SessionError::Unexpected(_) | SessionError::BadRequest(_) => "bad_request",
        SessionError::Mismatch(_) | SessionError::Rejected(_) => "mismatch",
        SessionError::Refused(_) => "refused",
        _ => "internal",
    }
}

/// Waits up to `timeout` for `listener` to have a connection to accept.
fn wait_readable(listener: &TcpListener, timeout: Duration) -> bool {
    let mut p = libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd on a socket this process owns.
    unsafe { libc::poll(&mut p, 1, timeout.as_millis().min(i32::MAX as u128) as i32) > 0 }
}

/// Serve `model` on `listener`: one thread per connection; a connection holds a session slot
/// (at most `opts.max_concurrent`) only from its valid `Hello` on, and before it counts
/// against `opts.max_pending` and `opts.max_pending_per_peer`. With `opts.max_sessions`, stop
/// accepting after that many connections and return once they end; with `opts.stop` or
/// `opts.drain` set, as documented there.
pub fn serve(model: Arc<ServerModel>, listener: TcpListener, suite: &Suite, opts: &ServeOptions) -> Result<(), String> {
    crate::logging::init(crate::logging::LogFormat::Text);
    let agreement = Agreement::new(suite)?;
    let cap = opts.max_concurrent.max(1);
    let state = Arc::new(ServerState {
        metrics: Metrics::new(cap)?,
        suite: suite.label(),
        cap,
        active: AtomicUsize::new(0),
        pending: AtomicUsize::new(0),
        pending_by_peer: Mutex::new(HashMap::new()),
        draining: AtomicBool::new(false),
        refuse_log: Mutex::new(RateLimitedLog::new(LOG_INTERVAL)),
        memory: opts.memory.clone(),
    });
    state.metrics.max_message.set(opts.limits.max_frame as i64);
    if let Some(m) = &opts.memory {
        m.publish(&state.metrics);
    }
    if let Some(admin) = &opts.admin {
        crate::admin::spawn(Arc::clone(admin), Arc::clone(&state) as Arc<dyn Probe>)?;
    }
    let watcher = Watcher::start()?;
    listener.set_nonblocking(true).map_err(|e| format!("listener: {e}"))?;
    let mut next = 0usize;
    let mut accept_log = RateLimitedLog::new(LOG_INTERVAL);
    let mut backoff = Duration::ZERO;
    let mut drain_since: Option<Instant> = None;
    let state = state.as_ref();
    std::thread::scope(|scope| {
        loop {
            if opts.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
                break;
            }
            if drain_since.is_none() && opts.drain.as_ref().is_some_and(|d| d.load(Ordering::SeqCst)) {
                drain_since = Some(Instant::now());
                state.draining.store(true, Ordering::SeqCst);
                state.metrics.draining.set(1);
                tracing::info!(
                    "serve: draining: {} sessions running; new connections are refused; exiting when they end or after {} s",
                    state.active.load(Ordering::SeqCst),
                    opts.drain_timeout.as_secs_f64()
                );
            }
            if let Some(t0) = drain_since {
                if state.active.load(Ordering::SeqCst) == 0 {
                    // Connections still before their Hello would only be refused: cut them.
                    watcher.cancel_all();
                    tracing::info!("serve: drained in {:.1} s", t0.elapsed().as_secs_f64());
                    break;
                }
                if t0.elapsed() >= opts.drain_timeout {
                    let n = state.active.load(Ordering::SeqCst);
                    watcher.cancel_all();
                    tracing::warn!("serve: drain timeout after {} s: cutting {n} sessions", opts.drain_timeout.as_secs_f64());
                    break;
                }
            }
            if !wait_readable(&listener, ACCEPT_POLL) {
                continue;
            }
            let (stream, peer) = match listener.accept() {
                Ok(s) => {
                    backoff = Duration::ZERO;
                    s
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => {
                    backoff = (backoff * 2).clamp(ACCEPT_BACKOFF.0, ACCEPT_BACKOFF.1);
                    if let Some(more) = accept_log.event(Instant::now()) {
                        tracing::warn!("serve: accept failed: {e}{more}; retrying with backoff");
                    }
                    std::thread::sleep(backoff);
                    continue;
                }
            };
            // A stopping server's wake-up connection (or any that raced it) goes unserved.
            if opts.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
                break;
            }
            let peer_text = peer.to_string();
            if state.draining.load(Ordering::SeqCst) {
                state.refuse(stream, &peer_text, DRAINING, "draining");
                continue;
            }
            let pending = match Pending::take(state, peer.ip(), opts.max_pending.max(1), opts.max_pending_per_peer.max(1)) {
                Ok(p) => p,
                Err((reason, kind)) => {
                    state.refuse(stream, &peer_text, &reason, kind);
                    continue;
                }
            };
            let id = next;
            next += 1;
            let model = Arc::clone(&model);
            let agreement = agreement.clone();
            let watcher = &watcher;
            // Builder: a failed thread creation (EAGAIN) is an error to log, not a panic.
            let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
                let span = tracing::info_span!("session", id, peer = %peer);
                let _in_span = span.enter();
                let hooks = Hooks { state, pending: Some(pending), slot: None, memory: None, started: None };
                run_connection(stream, &peer_text, id, &model, agreement, opts, watcher, hooks);
            });
            if let Err(e) = spawned {
                if let Some(more) = accept_log.event(Instant::now()) {
                    tracing::warn!("serve: cannot start a session thread: {e}{more}");
                }
            }
            if opts.max_sessions.is_some_and(|m| next >= m) {
                break;
            }
        }
    });
    Ok(())
}

/// One accepted connection, from its handshake to the end of its session, on its own thread.
#[allow(clippy::too_many_arguments)]
fn run_connection(
    stream: TcpStream,
    peer: &str,
    id: usize,
    model: &ServerModel,
    agreement: Agreement,
    opts: &ServeOptions,
    watcher: &Watcher,
    mut hooks: Hooks,
) {
    let state = hooks.state;
    let failed = |kind: &str| state.metrics.handshakes_failed.with_label_values(&[kind]).inc();
    // The listener is non-blocking; its connections must not be.
    let watched = match stream.set_nonblocking(false).and_then(|_| watcher.register(id, &stream)) {
        Ok(w) => w,
        Err(e) => {
            failed("network");
            return tracing::warn!("session {id} ({peer}): {e}");
        }
    };
    let ch = match TcpChannel::from_stream(stream) {
        Ok(c) => c,
        Err(e) => {
            failed("network");
            return tracing::warn!("session {id} ({peer}): {e}");
        }
    };
    let m = &state.metrics;
    let (sent, recv, flights) = (m.bytes_sent.clone(), m.bytes_received.clone(), m.flights.clone());
    let ch = Cancellable::new(
        ch,
        Arc::clone(&watched.flag),
        Box::new(move |d| {
            sent.inc_by(d.bytes_sent);
            recv.inc_by(d.bytes_recv);
            flights.inc_by(d.rounds);
        }),
    );
    let served = Served {
        config: model.config.clone(),
        config_json: model.config_json.clone(),
        weights: model.weights.as_ref(),
        agreement,
        reveal_to_server: opts.reveal_to_server,
    };
    // A panic (a bug) ends this session only, never the server.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let prg = test_seed::session_prg(opts.test_seed, Role::Server, id as u64);
        serve_session_with(Box::new(ch), &served, &opts.limits, id, prg, &mut hooks)
    }));
    let admitted = hooks.started;
    if let Some(t) = admitted {
        m.session_seconds.with_label_values(&[state.suite.as_str()]).observe(t.elapsed().as_secs_f64());
    }
    let cancelled = watched.flag.get();
    drop(watched);
    match r {
        Ok(Ok(reports)) => {
            m.sessions_finished.inc();
            if !opts.quiet {
                for r in &reports {
                    tracing::info!(
                        task = ?r.task,
                        tokens = r.len,
                        seconds = r.seconds,
                        bytes_sent = r.bytes_sent,
                        bytes_recv = r.bytes_recv,
                        rounds = r.rounds,
                        "session {id} ({peer}): {:?} of {} tokens in {:.2} s, {:.1} MB sent, {:.1} MB received{}",
                        r.task,
                        r.len,
                        r.seconds,
                        r.bytes_sent as f64 / 1e6,
                        r.bytes_recv as f64 / 1e6,
                        match &r.output {
                            Output::Nothing => String::new(),
                            o => format!(", output {o:?}"),
                        }
                    );
                }
                tracing::info!(queries = reports.len(), "session {id} ({peer}): closed after {} queries", reports.len());
            }
        }
        Ok(Err(SessionError::Refused(reason))) => {
            let kind = match reason.as_str() {
                DRAINING => "draining",
                r if r.starts_with(crate::admission::MEMORY_BUSY) => "memory",
                _ => "session_cap",
            };
            state.refused(peer, &reason, kind);
        }
        Ok(Err(e)) => {
            // A client that said why it left is counted as such.
            let (kind, note) = match (cancelled, error_kind(&e)) {
                (_, "peer_aborted") => ("peer_aborted", ""),
                (Some(Cancel::PeerGone), _) => ("peer_gone", " (the client left; its session stopped)"),
                (Some(Cancel::Cut), _) => ("drain_timeout", " (cut at the end of the drain)"),
                (None, kind) => (kind, ""),
            };
            match admitted {
                Some(_) => m.aborted.with_label_values(&[kind]).inc(),
                None => failed(kind),
            }
            tracing::warn!(reason = kind, "session {id} ({peer}): ended with error: {e}{note}");
        }
        Err(_) => {
            match admitted {
                Some(_) => m.aborted.with_label_values(&["panic"]).inc(),
                None => failed("panic"),
            }
            tracing::error!(reason = "panic", "session {id} ({peer}): ended with error: internal error (panic)");
        }
    }
    drop(hooks);
    crate::memory::release_freed_memory();
}

/// Wakes a server blocked in `accept` on `addr` (after its [`ServeOptions::stop`] flag was set)
/// by connecting once; the connection is closed unserved.
pub fn wake(addr: std::net::SocketAddr) -> Result<(), String> {
    // A wildcard address is woken on loopback.
    let ip = match addr.ip() {
        std::net::IpAddr::V4(v) if v.is_unspecified() => std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        std::net::IpAddr::V6(v) if v.is_unspecified() => std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    let to = std::net::SocketAddr::new(ip, addr.port());
    std::net::TcpStream::connect_timeout(&to, Duration::from_secs(5)).map(drop).map_err(|e| format!("waking the server on {to}: {e}"))
}

/// Both parties in this process, over an in-memory channel through the simulated link `link`
/// (`None`: no link delay): the server's session ([`serve_session`], as `nectar serve` runs
/// it) on a second thread, the client's ([`ClientSession`]) on this one. Returns what the
/// client measured, with its wall-clock seconds from handshake to `Bye`. `seed`: both parties
/// seeded from it ([`crate::test_seed`]; NO privacy, tests only).
pub fn run_local(
    model: &ServerModel,
    suite: &Suite,
    link: Option<LinkModel>,
    queries: &[(Task, Input)],
    progress: Option<QueryProgress>,
    seed: Option<u64>,
    on_token: Option<TokenHook>,
) -> Result<(ClientRun, f64), String> {
    run_local_with(model, suite, link, seed, |s| {
        let s = match progress {
            Some(p) => s.with_progress(p),
            None => s,
        };
        match on_token {
            Some(h) => s.with_token_hook(h).run(queries),
            None => s.run(queries),
        }
    })
}

/// [`run_local`] with the client's session driven by `f` one query at a time
/// ([`ClientSession::run_live`]: a conversation).
pub fn run_local_live<T>(
    model: &ServerModel,
    suite: &Suite,
    link: Option<LinkModel>,
    seed: Option<u64>,
    f: impl FnOnce(&mut Live<'_, '_>) -> Result<T, SessionError>,
) -> Result<(T, ClientRun, f64), String> {
    let mut value = None;
    let (run, seconds) = run_local_with(model, suite, link, seed, |s| {
        let (v, run) = s.run_live(f)?;
        value = Some(v);
        Ok(run)
    })?;
    let value = value.ok_or("the client session ended without a value")?;
    Ok((value, run, seconds))
}

/// Both parties of [`run_local`]; `client` runs the client's session after its handshake.
fn run_local_with(
    model: &ServerModel,
    suite: &Suite,
    link: Option<LinkModel>,
    seed: Option<u64>,
    client: impl FnOnce(ClientSession) -> Result<ClientRun, SessionError>,
) -> Result<(ClientRun, f64), String> {
    let agreement = Agreement::new(suite)?;
    let (c0, c1) = nectar_net::linked_pair(link);
    let served = Served {
        config: model.config.clone(),
        config_json: model.config_json.clone(),
        weights: model.weights.as_ref(),
        agreement: agreement.clone(),
        reveal_to_server: false,
    };
    let limits = SessionLimits::default();
    let t = Instant::now();
    let (srv, cli) = std::thread::scope(|scope| {
        let h = scope.spawn(|| serve_session(c0, &served, &limits, 0, test_seed::session_prg(seed, Role::Server, 0)));
        let cli = ClientSession::connect(c1, agreement, Some(&model.config), test_seed::session_prg(seed, Role::Client, 0)).and_then(client);
        (h.join(), cli)
    });
    let seconds = t.elapsed().as_secs_f64();
    // The client's error says more (the server's reason travels to it in an abort frame).
    let run = cli.map_err(|e| e.to_string())?;
    match srv {
        Ok(Ok(_)) => Ok((run, seconds)),
        Ok(Err(e)) => Err(format!("server: {e}")),
        Err(_) => Err("server: internal error (panic)".into()),
    }
}

/// The client's view of a model: its public config and the tokenizer of a local copy (of a
/// GGUF file also its chat template and end-of-sequence token).
pub struct ClientModel {
    pub config: Option<ModelConfig>,
    pub tokenizer: Option<TextTokenizer>,
    /// GGUF `tokenizer.chat_template`.
    pub chat_template: Option<String>,
    /// GGUF `tokenizer.ggml.eos_token_id`: generation stops after it.
    pub eos_id: Option<u32>,
}

impl ClientModel {
    /// Config and tokenizer from `dir` (the client never reads weights). The tokenizer
    /// truncates as the plaintext loader does: `sentence_bert_config.json`'s `max_seq_length`
    /// when present, else the model's positions.
    pub fn load(dir: &Path) -> Result<Self, String> {
        if let Some(path) = nectar_model::gguf_path(dir).map_err(|e| e.to_string())? {
            // A GGUF file: its metadata (architecture, vocabulary, merges); no tensor is read.
            let src = GgufLlama::new(GgufFile::open(&path).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
            let c = src.config().clone();
            let tokenizer = nectar_model::gguf::vocab::tokenizer(src.file(), c.max_position_embeddings).map_err(|e| e.to_string())?;
            let chat = src.file().get("tokenizer.chat_template").and_then(|v| v.as_str()).map(str::to_string);
            let eos = nectar_model::gguf::vocab::eos_id(src.file());
            return Ok(ClientModel { config: Some(ModelConfig::Llama(c)), tokenizer: Some(tokenizer), chat_template: chat, eos_id: eos });
        }
        let config = ModelConfig::from_file(&dir.join("config.json")).map_err(|e| e.to_string())?;
        let positions = match &config {
            ModelConfig::Bert(c) => c.max_position_embeddings,
            ModelConfig::Gpt2(c) => c.n_positions,
            ModelConfig::Llama(c) => c.max_position_embeddings,
            ModelConfig::Vit(_) => 0,
        };
        let st: Option<usize> = std::fs::read_to_string(dir.join("sentence_bert_config.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("max_seq_length").and_then(|m| m.as_u64()))
            .map(|m| m as usize);
        let max_len = st.unwrap_or(positions).min(positions);
        let tok_path = dir.join("tokenizer.json");
        let tokenizer = if tok_path.exists() {
            Some(TextTokenizer::from_file(&tok_path, max_len).map_err(|e| e.to_string())?)
        } else {
            None
        };
        Ok(ClientModel { config: Some(config), tokenizer, chat_template: None, eos_id: None })
    }
}

/// The task a model's architecture answers by default.
pub fn default_task(cfg: &ModelConfig, tokens: usize, classify: bool) -> Task {
    match cfg {
        ModelConfig::Bert(_) if classify => Task::Classify,
        ModelConfig::Bert(_) => Task::Embed,
        ModelConfig::Vit(_) => Task::Classify,
        _ => Task::Generate { n_new: tokens },
    }
}

/// Connect to `addr` and complete the handshake (`expected`: the client's own copy of the
/// architecture, compared with the server's; `seed`: [`crate::test_seed`], NO privacy, tests
/// only).
pub fn connect(addr: &str, suite: &Suite, expected: Option<&ModelConfig>, seed: Option<u64>) -> Result<ClientSession, String> {
    let agreement = Agreement::new(suite)?;
    let ch = TcpChannel::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    ClientSession::connect(Box::new(ch), agreement, expected, test_seed::session_prg(seed, Role::Client, 0)).map_err(|e| e.to_string())
}

/// Token ids of each text.
pub fn tokenize(tok: Option<&TextTokenizer>, texts: &[String]) -> Result<Vec<Input>, String> {
    let tok = tok.ok_or("this model directory has no tokenizer.json: pass --ids instead")?;
    texts.iter().map(|t| tok.encode(t).map(|e| Input::Ids(e.ids)).map_err(|e| e.to_string())).collect()
}

/// Pixels of each image for the ViT in `dir` (see `nectar_model::vit::read_image`).
pub fn read_images(dir: &Path, cfg: Option<&ModelConfig>, images: &[PathBuf]) -> Result<Vec<Input>, String> {
    let Some(ModelConfig::Vit(c)) = cfg else {
        return Err("--image needs a ViT model directory".into());
    };
    images
        .iter()
        .map(|p| nectar_model::vit::read_image(dir, c, p).map(Input::Pixels).map_err(|e| e.to_string()))
        .collect()
}

/// `--ids 101,2023,102` (one sequence per flag).
pub fn parse_ids(s: &str) -> Result<Vec<u32>, String> {
    s.split(',').map(|x| x.trim().parse::<u32>().map_err(|e| format!("--ids {s:?}: {e}"))).collect()
}

/// Sum of a run's per-query profiles.
pub fn total_profile(reports: &[QueryReport]) -> nectar_model::secure::Profile {
    let mut p = nectar_model::secure::Profile::default();
    for r in reports {
        p.merge(&r.profile);
    }
    p
}
