//! `nectar._nectar`: the native half of the Python package (`python/nectar/`).
//!
//! A thin layer over the `nectar-app` library, so that Python and the `nectar` CLI run the same
//! server, client and session code and speak one wire protocol:
//! [`Server`] wraps `nectar_app::private::serve` (a listener bound at construction, the accept
//! loop on a background thread, stopped through `ServeOptions::stop`); [`client_run`] is
//! `nectar infer` (connect, handshake, session setup, queries, `Bye`); [`local_run`] runs both
//! parties in this process over the simulated link, as `nectar bench suites` does.
//!
//! Every blocking call releases the GIL. Errors are raised as `NectarError` (a
//! `RuntimeError`) carrying the CLI's message. The Python layer turns the plain lists returned
//! here into numpy arrays and the metrics JSON into a dict.

use nectar_app::private::{self, ClientModel, Input, ServeOptions, ServerModel, SessionLimits};
use nectar_app::session::{ClientRun, QueryProgress};
use nectar_app::test_seed;
use nectar_model::config::ModelConfig;
use nectar_model::secure::{Output, Task};
use nectar_model::Suite;
use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::net::{SocketAddr, TcpListener};

/// `memory_budget_mib`'s default: `nectar serve --memory-budget-mib`'s.
const DEFAULT_MEMORY_BUDGET_MIB: usize = nectar_model::secure::secure_engine::DEFAULT_PREFETCH_BUDGET >> 20;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

create_exception!(
    nectar,
    NectarError,
    PyRuntimeError,
    "An error of nectar: a bad argument, a model directory that cannot be served, a server that \
     cannot be reached or that ended the session (its reason follows `server: `). The message \
     is the one the `nectar` CLI prints after `error: `."
);

fn err(e: impl std::fmt::Display) -> PyErr {
    NectarError::new_err(e.to_string())
}

/// A suite specification (`bumblebee`, `rotl`, `bumblebee+gelu=p4`...), refused if it names a
/// protocol that is not implemented yet (as `nectar serve --suite`).
fn suite(spec: &str) -> PyResult<Suite> {
    let s = nectar_app::suites::resolve(Some(spec), None, &[], nectar_app::suites::DEFAULT_SUITE).map_err(err)?;
    s.validate().map_err(err)?;
    Ok(s)
}

/// The simulated link of `net`: `none`, `MBPS/RTT_MS` (round trip) or a preset
/// (`nectar_net::sim::PRESETS`).
fn link(net: &str) -> PyResult<Option<nectar_net::LinkModel>> {
    nectar_net::LinkModel::parse(net).map_err(err)
}

/// A poisoned lock only means another thread panicked while holding it; the state it guards
/// (an `Option` taken once) stays consistent.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A server bound to its address at construction; `start` runs the accept loop on a thread.
/// Frozen (no `&mut self`): any Python thread may read `port` while another waits in `join`.
#[pyclass(module = "nectar._nectar", frozen)]
struct Server {
    model: Arc<ServerModel>,
    suite: Suite,
    opts: ServeOptions,
    stop: Arc<AtomicBool>,
    addr: SocketAddr,
    listener: Mutex<Option<TcpListener>>,
    thread: Mutex<Option<JoinHandle<Result<(), String>>>>,
}

#[pymethods]
impl Server {
    /// Load (memory-map and check) the model in `model_dir`, resolve the suite and bind
    /// `host:port` (port 0: any free port). Limits as the flags of `nectar serve`.
    #[new]
    #[pyo3(signature = (model_dir, suite="nectar", host="127.0.0.1", port=0, *, reveal_to_server=false,
        max_sessions=None, max_concurrent_sessions=private::DEFAULT_MAX_CONCURRENT, handshake_timeout=5,
        idle_timeout=600, max_frame_mib=1024, memory_budget_mib=DEFAULT_MEMORY_BUDGET_MIB, max_batch_tokens=None, quiet=true, insecure_test_seed=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        model_dir: PathBuf,
        suite: &str,
        host: &str,
        port: u16,
        reveal_to_server: bool,
        max_sessions: Option<usize>,
        max_concurrent_sessions: usize,
        handshake_timeout: u64,
        idle_timeout: u64,
        max_frame_mib: usize,
        memory_budget_mib: usize,
        max_batch_tokens: Option<usize>,
        quiet: bool,
        insecure_test_seed: Option<u64>,
    ) -> PyResult<Self> {
        let suite = self::suite(suite)?;
        test_seed::warn(insecure_test_seed);
        let secs = |name: &str, s: u64| match s {
            0 => Err(err(format!("{name} must be at least 1 second"))),
            s => Ok(Duration::from_secs(s)),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let opts = ServeOptions {
            reveal_to_server,
            max_sessions,
            max_concurrent: max_concurrent_sessions.max(1),
            limits: SessionLimits {
                handshake: secs("handshake_timeout", handshake_timeout)?,
                idle: secs("idle_timeout", idle_timeout)?,
                max_frame: max_frame_mib.clamp(1, 4095) << 20,
                memory_budget: memory_budget_mib.min(1 << 20) << 20,
                max_batch_tokens,
            },
            quiet,
            stop: Some(Arc::clone(&stop)),
            test_seed: insecure_test_seed,
            ..ServeOptions::default()
        };
        let listen = format!("{host}:{port}");
        let (model, listener) = py.allow_threads(|| -> Result<_, String> {
            let model = ServerModel::load(&model_dir)?;
            let listener = TcpListener::bind(&listen).map_err(|e| format!("listen {listen}: {e}"))?;
            Ok((model, listener))
        })
        .map_err(err)?;
        let addr = listener.local_addr().map_err(err)?;
        Ok(Server {
            model: Arc::new(model),
            suite,
            opts,
            stop,
            addr,
            listener: Mutex::new(Some(listener)),
            thread: Mutex::new(None),
        })
    }

    /// The bound port.
    #[getter]
    fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The bound address, `host:port`.
    #[getter]
    fn address(&self) -> String {
        self.addr.to_string()
    }

    /// The architecture served (`bert`, `gpt2`, `llama`, `vit`).
    #[getter]
    fn model_type(&self) -> String {
        self.model.config.model_type().to_string()
    }

    /// The resolved suite's label.
    #[getter]
    fn suite(&self) -> String {
        self.suite.label()
    }

    /// Start accepting on a background thread (once).
    fn start(&self) -> PyResult<()> {
        let listener = lock(&self.listener).take().ok_or_else(|| err("this server was already started"))?;
        let (model, suite, opts) = (Arc::clone(&self.model), self.suite, self.opts.clone());
        let h = std::thread::Builder::new()
            .name(format!("nectar-serve-{}", self.addr.port()))
            .spawn(move || private::serve(model, listener, &suite, &opts))
            .map_err(|e| err(format!("cannot start the server thread: {e}")))?;
        *lock(&self.thread) = Some(h);
        Ok(())
    }

    /// Stop accepting (sessions already running go on to their end); `join` waits for them.
    fn stop_accepting(&self, py: Python<'_>) -> PyResult<()> {
        // A server never started stays unstartable.
        lock(&self.listener).take();
        if self.stop.swap(true, Ordering::SeqCst) || lock(&self.thread).as_ref().is_none_or(|t| t.is_finished()) {
            return Ok(());
        }
        let addr = self.addr;
        py.allow_threads(|| private::wake(addr)).map_err(err)
    }

    /// Wait up to `timeout` seconds (forever: `None`) for the server thread to end; true when
    /// it has (or was never started). Raises the server's error, if it ended with one.
    #[pyo3(signature = (timeout=None))]
    fn join(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let deadline = timeout.map(|t| Instant::now() + Duration::from_secs_f64(t.max(0.0)));
        // Short sleeps without the GIL, so other Python threads (and signals, between calls
        // from Python) go on.
        let done = py.allow_threads(|| loop {
            if lock(&self.thread).as_ref().is_none_or(|h| h.is_finished()) {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        });
        if !done {
            return Ok(false);
        }
        let handle = lock(&self.thread).take();
        match handle.map(JoinHandle::join) {
            Some(Ok(Err(e))) => Err(err(e)),
            Some(Err(_)) => Err(err("the server thread panicked")),
            _ => Ok(true),
        }
    }

    /// Whether the accept loop is running.
    #[getter]
    fn running(&self) -> bool {
        lock(&self.thread).as_ref().is_some_and(|t| !t.is_finished())
    }
}

/// One client input: a text (tokenized with the model directory's tokenizer) or token ids.
#[derive(FromPyObject)]
enum Item {
    #[pyo3(transparent, annotation = "str")]
    Text(String),
    #[pyo3(transparent, annotation = "list[int]")]
    Ids(Vec<u32>),
}

/// One query's output, as plain values: (kind, floats, tokens, text). `kind` is `embedding`
/// or `logits` (the floats) or `tokens` (the generated ids, with their decoded text when the
/// prompt was text).
type PyOutput = (&'static str, Vec<f32>, Vec<u32>, Option<String>);

/// The task named by `task` for a model of `cfg`.
fn task(task: &str, cfg: &ModelConfig, max_new_tokens: usize) -> Result<Task, String> {
    let kind = cfg.model_type();
    match (task, cfg) {
        ("auto", _) => Ok(private::default_task(cfg, max_new_tokens, false)),
        ("embed", ModelConfig::Bert(_)) => Ok(Task::Embed),
        ("classify", ModelConfig::Bert(_) | ModelConfig::Vit(_)) => Ok(Task::Classify),
        ("generate", ModelConfig::Gpt2(_) | ModelConfig::Llama(_)) => Ok(Task::Generate { n_new: max_new_tokens }),
        ("embed", _) => Err(format!("sentence embeddings need a BERT-family model; the server serves {kind}")),
        ("classify", _) => Err(format!(
            "classification needs a BERT classifier or a ViT; the server serves {kind} (use generate())"
        )),
        ("generate", _) => Err(format!("generation needs a GPT-2 or LLaMA model; the server serves {kind}")),
        (t, _) => Err(format!("unknown task '{t}' (auto, embed, classify, generate)")),
    }
}

/// Where texts are tokenized: `model_dir`, else the fetched MiniLM (as `nectar infer`).
fn client_dir(model_dir: Option<&Path>) -> PathBuf {
    model_dir.map(Path::to_path_buf).unwrap_or_else(|| nectar_model::home::default_home().join("minilm"))
}

/// The client's inputs: texts tokenized with the model directory's tokenizer, ids as given,
/// images as normalised pixels. Returns the inputs, the local copy of the architecture (the
/// handshake compares it with the server's) and the tokenizer (to decode generated text).
fn client_inputs(model_dir: Option<&Path>, items: Vec<Item>, images: Vec<Vec<f32>>) -> Result<(Vec<Input>, Option<ClientModel>), String> {
    let has_text = items.iter().any(|i| matches!(i, Item::Text(_)));
    let local = match model_dir {
        Some(d) => Some(ClientModel::load(d)?),
        None if has_text => Some(ClientModel::load(&client_dir(None))?),
        None => None,
    };
    let mut inputs = Vec::with_capacity(items.len() + images.len());
    for item in items {
        inputs.push(match item {
            Item::Ids(ids) => Input::Ids(ids),
            Item::Text(t) => {
                let tok = local.as_ref().and_then(|m| m.tokenizer.as_ref());
                let mut v = private::tokenize(tok, std::slice::from_ref(&t))?;
                v.pop().ok_or("tokenizing the input failed")?
            }
        });
    }
    if !images.is_empty() {
        if let Some(ModelConfig::Vit(c)) = local.as_ref().and_then(|m| m.config.as_ref()) {
            for px in &images {
                nectar_model::vit::check_pixels(c, px).map_err(|e| e.to_string())?;
            }
        }
        inputs.extend(images.into_iter().map(Input::Pixels));
    }
    if inputs.is_empty() {
        return Err("no input given".into());
    }
    Ok((inputs, local))
}

/// Plain values of each input's output (a batch's one by one); generated ids of a text prompt
/// decoded with the tokenizer.
fn outputs(run: &ClientRun, prompts_were_text: &[bool], local: Option<&ClientModel>) -> Result<Vec<PyOutput>, String> {
    nectar_app::batch::per_input(&run.reports)
        .iter()
        .enumerate()
        .map(|(i, r)| match r.output {
            Output::Embedding(v) => Ok(("embedding", v.clone(), Vec::new(), None)),
            Output::Logits(v) => Ok(("logits", v.clone(), Vec::new(), None)),
            Output::Tokens(t) => {
                let tok = local.and_then(|m| m.tokenizer.as_ref()).filter(|_| prompts_were_text.get(i) == Some(&true));
                let text = tok.map(|k| k.decode(t).map_err(|e| e.to_string())).transpose()?;
                Ok(("tokens", Vec::new(), t.clone(), text))
            }
            Output::Nothing | Output::Batch(_) => Err("the session returned no output to the client".into()),
        })
        .collect()
}

/// Progress reports to a Python callable `f(query, queries, block, blocks)`. Its first
/// exception is kept (the run goes on) and raised when the run returns.
struct Callback {
    f: Py<PyAny>,
    error: Arc<Mutex<Option<PyErr>>>,
}

impl Callback {
    fn hook(&self) -> QueryProgress {
        let f = Python::with_gil(|py| self.f.clone_ref(py));
        let error = Arc::clone(&self.error);
        Arc::new(move |q, n, b, blocks| {
            Python::with_gil(|py| {
                if let Err(e) = f.call1(py, (q, n, b, blocks)) {
                    let mut g = error.lock().unwrap_or_else(|p| p.into_inner());
                    g.get_or_insert(e);
                }
            })
        })
    }

    fn raise(&self) -> PyResult<()> {
        match self.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn callback(progress: Option<Py<PyAny>>) -> Option<Callback> {
    progress.map(|f| Callback { f, error: Arc::new(Mutex::new(None)) })
}

/// Client side against `address` (`host:port`): one session (handshake, setup, every input
/// as one query of `task`, or in batches of `batch_size` inputs, `Bye`). Returns the outputs
/// (one per input) and the metrics as JSON.
#[pyfunction]
#[pyo3(signature = (address, suite, model_dir, task, items, images, max_new_tokens=8, progress=None, insecure_test_seed=None, batch_size=1, weight_cache=true))]
#[allow(clippy::too_many_arguments)]
fn client_run(
    py: Python<'_>,
    address: String,
    suite: &str,
    model_dir: Option<PathBuf>,
    task: String,
    items: Vec<Item>,
    images: Vec<Vec<f32>>,
    max_new_tokens: usize,
    progress: Option<Py<PyAny>>,
    insecure_test_seed: Option<u64>,
    batch_size: usize,
    weight_cache: bool,
) -> PyResult<(Vec<PyOutput>, String)> {
    let suite = self::suite(suite)?;
    test_seed::warn(insecure_test_seed);
    // The client's cache of a COP server's encrypted weights (`nectar infer`'s default).
    nectar_linear::cop_cache::set_client_cache_dir(weight_cache.then(|| nectar_model::home::default_home().join("cop")));
    let cb = callback(progress);
    let hook = cb.as_ref().map(Callback::hook);
    let texts: Vec<bool> = items.iter().map(|i| matches!(i, Item::Text(_))).collect();
    let r = py.allow_threads(move || -> Result<_, String> {
        let t = Instant::now();
        let (inputs, local) = client_inputs(model_dir.as_deref(), items, images)?;
        let expected = local.as_ref().and_then(|m| m.config.as_ref());
        let session = private::connect(&address, &suite, expected, insecure_test_seed)?;
        let reveal = session.reveal_to_server();
        let task = self::task(&task, session.config(), max_new_tokens)?;
        let queries = nectar_app::batch::queries(&task, &inputs, batch_size)?;
        let session = match hook {
            Some(h) => session.with_progress(h),
            None => session,
        };
        let run = session.run(&queries).map_err(|e| e.to_string())?;
        let metrics = run.metrics(&suite, t.elapsed().as_secs_f64(), reveal);
        Ok((outputs(&run, &texts, local.as_ref())?, metrics.to_string()))
    });
    if let Some(cb) = &cb {
        cb.raise()?;
    }
    r.map_err(err)
}

/// Both parties in this process over the simulated link `net`: the server with the weights
/// of `model_dir`, the client with its tokenizer; every input one query of `task` (or in
/// batches of `batch_size` inputs).
#[pyfunction]
#[pyo3(signature = (model_dir, suite, net, task, items, images, max_new_tokens=8, progress=None, insecure_test_seed=None, batch_size=1))]
#[allow(clippy::too_many_arguments)]
fn local_run(
    py: Python<'_>,
    model_dir: PathBuf,
    suite: &str,
    net: &str,
    task: String,
    items: Vec<Item>,
    images: Vec<Vec<f32>>,
    max_new_tokens: usize,
    progress: Option<Py<PyAny>>,
    insecure_test_seed: Option<u64>,
    batch_size: usize,
) -> PyResult<(Vec<PyOutput>, String)> {
    let suite = self::suite(suite)?;
    test_seed::warn(insecure_test_seed);
    let link = link(net)?;
    let cb = callback(progress);
    let hook = cb.as_ref().map(Callback::hook);
    let texts: Vec<bool> = items.iter().map(|i| matches!(i, Item::Text(_))).collect();
    let r = py.allow_threads(move || -> Result<_, String> {
        let server = ServerModel::load(&model_dir)?;
        let (inputs, local) = client_inputs(Some(&model_dir), items, images)?;
        let task = self::task(&task, &server.config, max_new_tokens)?;
        let queries = nectar_app::batch::queries(&task, &inputs, batch_size)?;
        let (run, seconds) = private::run_local(&server, &suite, link, &queries, hook, insecure_test_seed, None)?;
        let metrics = run.metrics(&suite, seconds, false);
        Ok((outputs(&run, &texts, local.as_ref())?, metrics.to_string()))
    });
    if let Some(cb) = &cb {
        cb.raise()?;
    }
    r.map_err(err)
}

/// A ViT input from an 8-bit RGB image (`height x width x 3`, row-major bytes): scaled and
/// normalised as HF's image processor does, with the mean / std of `model_dir`'s
/// `preprocessor_config.json` (default 0.5 / 0.5), as `[C, H, W]` floats.
#[pyfunction]
fn image_pixels(model_dir: PathBuf, rgb: Vec<u8>, height: usize, width: usize) -> PyResult<Vec<f32>> {
    let cm = ClientModel::load(&model_dir).map_err(err)?;
    let Some(ModelConfig::Vit(c)) = cm.config.as_ref() else {
        return Err(err("an image needs a ViT model directory"));
    };
    let ch = c.num_channels;
    if rgb.len() != height * width * ch {
        return Err(err(format!("image of {} bytes is not {height} x {width} x {ch}", rgb.len())));
    }
    let norm = nectar_model::vit::Normalize::from_dir(&model_dir, ch).map_err(err)?;
    let mut px = vec![0f32; rgb.len()];
    for y in 0..height {
        for x in 0..width {
            for k in 0..ch {
                let v = rgb[(y * width + x) * ch + k] as f32 / 255.0;
                px[(k * height + y) * width + x] = (v - norm.mean[k]) / norm.std[k];
            }
        }
    }
    nectar_model::vit::check_pixels(c, &px).map_err(err)?;
    Ok(px)
}

/// The plaintext f32 reference embedding of each text (`nectar embed --plaintext`).
#[pyfunction]
fn embed_plaintext(py: Python<'_>, model_dir: PathBuf, texts: Vec<String>) -> PyResult<Vec<Vec<f32>>> {
    py.allow_threads(move || -> Result<_, String> {
        let m = nectar_model::Model::load(&model_dir).map_err(|e| e.to_string())?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        m.embed(&refs).map_err(|e| e.to_string())
    })
    .map_err(err)
}

/// Writes a deterministic tiny checkpoint (`bert` with a 3-way classifier, `gpt2`, `llama`,
/// `vit`; random weights in the real HF format, no tokenizer) into `dir`, for tests and
/// examples.
#[pyfunction]
fn write_tiny_model(kind: &str, dir: PathBuf, seed: u64) -> PyResult<()> {
    std::fs::create_dir_all(&dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    let t = nectar_bench::fixtures::tiny::write_tiny_bert;
    let w: fn(&Path, u64) -> Result<(), nectar_model::ModelError> = match kind {
        "bert" => t,
        "gpt2" => nectar_bench::fixtures::tiny::write_tiny_gpt2,
        "llama" => nectar_bench::fixtures::tiny::write_tiny_llama,
        "vit" => nectar_bench::fixtures::tiny::write_tiny_vit,
        k => return Err(err(format!("unknown tiny model '{k}' (bert, gpt2, llama, vit)"))),
    };
    w(&dir, seed).map_err(err)
}

/// The directory `nectar fetch-model minilm` fetches into.
#[pyfunction]
fn default_model_dir() -> String {
    client_dir(None).display().to_string()
}

/// What a [`TokenStream`]'s session thread sends: a token with its new text, the end (the
/// metrics as JSON), or the error that ended the session.
enum StreamMsg {
    Token(u32, String),
    Done(String),
    Failed(String),
}

/// The tokens of one private generation as they are opened: an iterator of `(id, text)` (the
/// text the token adds, decoded with the client's tokenizer; empty while a character is
/// incomplete). The session runs on its own thread; `metrics` is set once it ended.
#[pyclass]
struct TokenStream {
    rx: Mutex<std::sync::mpsc::Receiver<StreamMsg>>,
    metrics: Mutex<Option<String>>,
}

#[pymethods]
impl TokenStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<(u32, String)>> {
        let msg = py.allow_threads(|| lock(&self.rx).recv());
        match msg {
            Ok(StreamMsg::Token(t, s)) => Ok(Some((t, s))),
            Ok(StreamMsg::Done(m)) => {
                *lock(&self.metrics) = Some(m);
                Ok(None)
            }
            Ok(StreamMsg::Failed(e)) => Err(err(e)),
            // the thread ended after its last message
            Err(_) => Ok(None),
        }
    }

    /// The session's metrics (JSON) once the stream ended, else `None`.
    #[getter]
    fn metrics(&self) -> Option<String> {
        lock(&self.metrics).clone()
    }
}

/// Private generation against `address`, streamed ([`TokenStream`]): `prompt` continued as
/// given (`chat = None`: `max_new_tokens` greedy tokens), or `chat` messages `(role, content)`
/// rendered with the model's chat template and answered until its end-of-sequence token (at
/// most `max_new_tokens`; the server learns where the answer ended).
#[pyfunction]
#[pyo3(signature = (address, suite, model_dir, prompt, chat=None, max_new_tokens=8, insecure_test_seed=None))]
#[allow(clippy::too_many_arguments)]
fn client_stream(
    address: String,
    suite: &str,
    model_dir: Option<PathBuf>,
    prompt: Option<Item>,
    chat: Option<Vec<(String, String)>>,
    max_new_tokens: usize,
    insecure_test_seed: Option<u64>,
) -> PyResult<TokenStream> {
    let suite = self::suite(suite)?;
    test_seed::warn(insecure_test_seed);
    if max_new_tokens < 1 {
        return Err(err("max_new_tokens must be at least 1"));
    }
    // the local copy: the tokenizer (texts, decoding) and template; ids alone need none
    let needs_local = chat.is_some() || matches!(prompt, Some(Item::Text(_)));
    let local = match &model_dir {
        Some(d) => Some(ClientModel::load(d).map_err(err)?),
        None if needs_local => Some(ClientModel::load(&client_dir(None)).map_err(err)?),
        None => None,
    };
    let tok = || local.as_ref().and_then(|m| m.tokenizer.as_ref()).ok_or_else(|| err("the model has no tokenizer"));
    let (ids, task, eos) = match (prompt, chat) {
        (Some(Item::Ids(ids)), None) => (ids, Task::Generate { n_new: max_new_tokens }, None),
        (Some(Item::Text(t)), None) => (tok()?.encode(&t).map_err(err)?.ids, Task::Generate { n_new: max_new_tokens }, None),
        (None, Some(messages)) => {
            let local = local.as_ref().ok_or_else(|| err("chat needs the model's local copy"))?;
            let template = local.chat_template.as_deref().ok_or_else(|| err("the model has no chat template"))?;
            let template = nectar_model::chat_template::ChatTemplate::parse(template).map_err(err)?;
            let msgs: Vec<nectar_model::chat_template::Message> =
                messages.iter().map(|(r, c)| nectar_model::chat_template::Message::new(r, c)).collect();
            let text = template.render(&msgs, true);
            let eos = local.eos_id.ok_or_else(|| err("the model names no end-of-sequence token"))?;
            (tok()?.encode(&text).map_err(err)?.ids, Task::Chat { n_new: max_new_tokens, reset: true }, Some(eos))
        }
        _ => return Err(err("give a prompt or chat messages, not both")),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let t = Instant::now();
        let run = || -> Result<String, String> {
            let tok = local.as_ref().and_then(|m| m.tokenizer.as_ref());
            let session = private::connect(&address, &suite, local.as_ref().and_then(|m| m.config.as_ref()), insecure_test_seed)?;
            let reveal = session.reveal_to_server();
            let (mut got, mut printed) = (Vec::new(), 0);
            let ((), run) = session
                .run_live(|live| {
                    let mut on_token = |id: u32| {
                        if Some(id) == eos {
                            return false;
                        }
                        got.push(id);
                        let piece = tok.and_then(|k| nectar_app::chat::fresh_text(k, &got, printed)).unwrap_or_default();
                        printed += piece.len();
                        // a closed stream (the Python side dropped it) stops the answer
                        tx.send(StreamMsg::Token(id, piece)).is_ok()
                    };
                    live.query(task, &Input::Ids(ids), Some(&mut on_token))?;
                    Ok(())
                })
                .map_err(|e| e.to_string())?;
            Ok(run.metrics(&suite, t.elapsed().as_secs_f64(), reveal).to_string())
        };
        let _ = tx.send(match run() {
            Ok(m) => StreamMsg::Done(m),
            Err(e) => StreamMsg::Failed(e),
        });
    });
    Ok(TokenStream { rx: Mutex::new(rx), metrics: Mutex::new(None) })
}

/// The native module.
#[pymodule]
fn _nectar(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NectarError", m.py().get_type::<NectarError>())?;
    m.add_class::<Server>()?;
    m.add_class::<TokenStream>()?;
    m.add_function(wrap_pyfunction!(client_run, m)?)?;
    m.add_function(wrap_pyfunction!(client_stream, m)?)?;
    m.add_function(wrap_pyfunction!(local_run, m)?)?;
    m.add_function(wrap_pyfunction!(image_pixels, m)?)?;
    m.add_function(wrap_pyfunction!(embed_plaintext, m)?)?;
    m.add_function(wrap_pyfunction!(write_tiny_model, m)?)?;
    m.add_function(wrap_pyfunction!(default_model_dir, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
