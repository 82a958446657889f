//! `nectar serve`, `nectar infer` and `nectar demo`: private inference over TCP.

pub use crate::session::Input;
use crate::rate_limit::RateLimitedLog;
pub use crate::session::SessionLimits;
use crate::session::{serve_session, Agreement, ClientRun, ClientSession, QueryProgress, QueryReport, Served};
use crate::test_seed;
use nectar_model::config::ModelConfig;
use nectar_model::secure::{Output, Task};
use nectar_model::Suite;
use nectar_model::tokenizer::TextTokenizer;
use nectar_model::weights::Weights;
use nectar_net::{LinkModel, Role, TcpChannel};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How `nectar serve` runs (LOCAL; its flags).
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The server also learns each output.
    pub reveal_to_server: bool,
    /// Stop accepting after this many sessions, then return once they end (`--max-sessions`).
    pub max_sessions: Option<usize>,
    /// Sessions running at once; further connections are refused with a one-line reason
    /// (`--max-concurrent-sessions`).
    pub max_concurrent: usize,
    /// Per-session limits (frame sizes, deadlines).
    pub limits: SessionLimits,
    /// No per-session log lines.
    pub quiet: bool,
    /// When set, the server stops accepting at its next accepted connection and returns once
    /// the running sessions end; whoever sets it wakes the accept loop with [`wake`].
    pub stop: Option<Arc<AtomicBool>>,
    /// `--insecure-test-seed`: session `i` draws its randomness from (seed, server, i) instead
    /// of the operating system ([`crate::test_seed`]; NO privacy, tests only).
    pub test_seed: Option<u64>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            reveal_to_server: false,
            max_sessions: None,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            limits: SessionLimits::default(),
            quiet: false,
            stop: None,
            test_seed: None,
        }
    }
}

/// Default of `--max-concurrent-sessions` (LOCAL): each session holds its own keys, OT pools
/// and activations (hundreds of MB for BERT-base), so the cap bounds the server's memory.
pub const DEFAULT_MAX_CONCURRENT: usize = 8;

/// Repeated log lines (accept failures, refusals) are reported at most this often.
const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Backoff after a failed `accept` (EMFILE, ENFILE, ENOMEM...): doubled per consecutive
/// failure up to the maximum, so a server out of descriptors does not spin.
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(1));

/// Decrements the running-session count when a session thread ends, however it ends.
struct Running<'a>(&'a AtomicUsize);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The public architecture and the server's open weights file of a model directory.
///
/// The weights are read per session from the open file ([`Weights`]: positioned reads, no
/// copy of the whole file, no memory map), so a file truncated or rewritten underneath fails
/// the sessions that read it with an error instead of killing the process (SIGBUS).
pub struct ServerModel {
    pub config: ModelConfig,
    pub config_json: String,
    pub weights: Weights,
}

impl ServerModel {
    pub fn load(dir: &Path) -> Result<Self, String> {
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
        Ok(ServerModel { config, config_json, weights })
    }
}

/// Serve `model` on `listener`: one thread and one session per connection, at most
/// `opts.max_concurrent` at once. With `opts.max_sessions`, stop accepting after that many
/// sessions and return once they end.
pub fn serve(model: Arc<ServerModel>, listener: TcpListener, suite: &Suite, opts: &ServeOptions) -> Result<(), String> {
    let agreement = Agreement::new(suite)?;
    let running = AtomicUsize::new(0);
    let mut next = 0usize;
    let mut accept_log = RateLimitedLog::new(LOG_INTERVAL);
    let mut refuse_log = RateLimitedLog::new(LOG_INTERVAL);
    let mut backoff = Duration::ZERO;
    let cap = opts.max_concurrent.max(1);
    std::thread::scope(|scope| {
        for conn in listener.incoming() {
            if opts.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
                break;
            }
            let stream = match conn {
                Ok(s) => {
                    backoff = Duration::ZERO;
                    s
                }
                Err(e) => {
                    backoff = (backoff * 2).clamp(ACCEPT_BACKOFF.0, ACCEPT_BACKOFF.1);
                    if let Some(more) = accept_log.event(Instant::now()) {
                        eprintln!("serve: accept failed: {e}{more}; retrying with backoff");
                    }
                    std::thread::sleep(backoff);
                    continue;
                }
            };
            if running.load(Ordering::SeqCst) >= cap {
                let peer = stream.peer_addr().map(|a| a.to_string()).unwrap_or_default();
                nectar_net::tcp::refuse(
                    stream,
                    &format!("server busy: {cap} sessions running (--max-concurrent-sessions {cap}); try again later"),
                );
                if let Some(more) = refuse_log.event(Instant::now()) {
                    eprintln!("serve: refused {peer}: {cap} sessions running{more}");
                }
                continue;
            }
            let id = next;
            next += 1;
            running.fetch_add(1, Ordering::SeqCst);
            let guard = Running(&running);
            let model = Arc::clone(&model);
            let agreement = agreement.clone();
            // Builder: a failed thread creation (EAGAIN) is an error to log, not a panic.
            let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
                let _guard = guard;
                let peer = stream.peer_addr().map(|a| a.to_string()).unwrap_or_default();
                let ch = match TcpChannel::from_stream(stream) {
                    Ok(c) => c,
                    Err(e) => return eprintln!("session {id} ({peer}): {e}"),
                };
                let served = Served {
                    config: model.config.clone(),
                    config_json: model.config_json.clone(),
                    weights: &model.weights,
                    agreement,
                    reveal_to_server: opts.reveal_to_server,
                };
                // A panic (a bug) ends this session only, never the server.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    serve_session(Box::new(ch), &served, &opts.limits, id, test_seed::session_prg(opts.test_seed, Role::Server, id as u64))
                }));
                match r {
                    Ok(Ok(reports)) => {
                        if !opts.quiet {
                            for r in &reports {
                                eprintln!(
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
                            eprintln!("session {id} ({peer}): closed after {} queries", reports.len());
                        }
                    }
                    Ok(Err(e)) => eprintln!("session {id} ({peer}): ended with error: {e}"),
                    Err(_) => eprintln!("session {id} ({peer}): ended with error: internal error (panic)"),
                }
                crate::memory::release_freed_memory();
            });
            if let Err(e) = spawned {
                if let Some(more) = accept_log.event(Instant::now()) {
                    eprintln!("serve: cannot start a session thread: {e}{more}");
                }
            }
            if opts.max_sessions.is_some_and(|m| next >= m) {
                break;
            }
        }
    });
    Ok(())
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
) -> Result<(ClientRun, f64), String> {
    let agreement = Agreement::new(suite)?;
    let (c0, c1) = nectar_net::linked_pair(link);
    let served = Served {
        config: model.config.clone(),
        config_json: model.config_json.clone(),
        weights: &model.weights,
        agreement: agreement.clone(),
        reveal_to_server: false,
    };
    let limits = SessionLimits::default();
    let t = Instant::now();
    let (srv, cli) = std::thread::scope(|scope| {
        let h = scope.spawn(|| serve_session(c0, &served, &limits, 0, test_seed::session_prg(seed, Role::Server, 0)));
        let cli = ClientSession::connect(c1, agreement, Some(&model.config), test_seed::session_prg(seed, Role::Client, 0)).and_then(|s| match progress {
            Some(p) => s.with_progress(p).run(queries),
            None => s.run(queries),
        });
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

/// The client's view of a model: its public config and the tokenizer of a local copy.
pub struct ClientModel {
    pub config: Option<ModelConfig>,
    pub tokenizer: Option<TextTokenizer>,
}

impl ClientModel {
    /// Config and tokenizer from `dir` (the client never reads weights). The tokenizer
    /// truncates as the plaintext loader does: `sentence_bert_config.json`'s `max_seq_length`
    /// when present, else the model's positions.
    pub fn load(dir: &Path) -> Result<Self, String> {
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
        Ok(ClientModel { config: Some(config), tokenizer })
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

/// Connect to `addr` and run `inputs` (token ids or images) as one session (`progress`: told
/// after each transformer block, e.g. a [`crate::progress::QueryBar`]; `seed`:
/// [`crate::test_seed`], NO privacy, tests only).
#[allow(clippy::too_many_arguments)]
pub fn run_client(
    addr: &str,
    suite: &Suite,
    expected: Option<&ModelConfig>,
    inputs: &[Input],
    tokens: usize,
    classify: bool,
    progress: Option<QueryProgress>,
    seed: Option<u64>,
) -> Result<(ClientRun, ModelConfig), String> {
    let mut session = connect(addr, suite, expected, seed)?;
    if let Some(p) = progress {
        session = session.with_progress(p);
    }
    if session.reveal_to_server() {
        eprintln!("note: this server also learns each output (its reveal-to-server option is on)");
    }
    let cfg = session.config().clone();
    let task = default_task(&cfg, tokens, classify);
    let queries: Vec<(Task, Input)> = inputs.iter().map(|i| (task.clone(), i.clone())).collect();
    let run = session.run(&queries).map_err(|e| e.to_string())?;
    Ok((run, cfg))
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
