//! `nectar bench suites`: the same input end to end under several suites (issue 12 item 7).
//!
//! For each suite the server party runs in a child process (this binary with the hidden
//! `--server-party ADDR`) and the client party here, over loopback TCP through the simulated
//! link of `--net` (its frame clock is the host's wall clock, shared by both processes):
//! session setup, then one query on the model's real weights. Each party resets its peak RSS
//! counter (`/proc/self/clear_refs`) before its session, so `server_peak_rss_bytes` and
//! `client_peak_rss_bytes` are that party's own peak for that suite. `--in-process` runs both
//! parties as threads of this process over an in-memory channel instead (one peak for both). Reported per suite: inference seconds (the client's wall clock, setup apart),
//! bytes each way, rounds, the per-operator profile (with the protocol of each row) and the
//! agreement with the plaintext f32 reference (cosine for embeddings and logits, the fraction
//! of equal tokens for generation). Printed as one side-by-side table, or as JSON lines (one
//! per suite) with `--json`.
//!
//! `--repeat N` runs each suite N times, each a fresh session (and server process), and reports
//! the run of median time — all of its figures are that one run's — with every run's seconds
//! in `runs_seconds`: on a shared VM the time of one run moves by ±5–10 %, the bytes do not.

use crate::demo::{agreement_score, reference};
use crate::private::{default_task, ClientModel, Input, ServerModel};
use crate::report::BenchLine;
use nectar_math::Prg;
use nectar_model::secure::{OpRecord, Output, Profile, Query, SecureEngine, SecureModel, WeightSource};
use nectar_model::Suite;
use nectar_net::{linked_pair, Channel, LinkModel, Role, Stats};
use crate::child_party::{accept_child, finish, listen, reset_peak_rss};
use nectar_net::{Event, Simulated, TcpChannel, Traced};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

pub struct Args<'a> {
    pub dir: PathBuf,
    /// Comma-separated suite specifications.
    pub suites: &'a str,
    pub tokens: usize,
    pub text: Option<&'a str>,
    pub net: &'a str,
    /// Overrides applied to every suite.
    pub ops: &'a [String],
    /// Both parties as threads of this process (no per-party RSS).
    pub in_process: bool,
    /// Bytes of weight blocks the server prepares ahead of their operator
    /// ([`nectar_model::secure::secure_engine::DEFAULT_PREFETCH_BUDGET`]).
    pub memory_budget: usize,
    /// Runs of each suite (each a fresh session, >= 1); the run of median time is reported.
    pub repeat: usize,
    /// Inputs per query (issue 52): `batch` different inputs of `tokens` tokens each in one
    /// [`nectar_model::secure::Task::Batch`] (1: one plain query).
    pub batch: usize,
    /// With `in_process`: record both parties' message traces ([`nectar_net::Traced`]) for
    /// `nectar tune`'s replay.
    pub trace: bool,
}

/// The default input text (cut or repeated to `--tokens`).
const DEFAULT_TEXT: &str = "The weather is lovely today, and the children are playing football in the park \
     while their parents talk about the news of the week.";

/// One party's measurements.
struct Party {
    output: Output,
    setup_seconds: f64,
    setup: Stats,
    seconds: f64,
    traffic: Stats,
    profile: Profile,
    /// This party's own peak RSS during the run (`None`: both parties shared the process).
    peak_rss: Option<u64>,
    /// Its message trace from the channel's creation (session setup included), when traced.
    events: Vec<Event>,
}

#[allow(clippy::too_many_arguments)]
fn party(
    ch: &mut dyn Channel,
    role: Role,
    suite: &Suite,
    config: &nectar_model::ModelConfig,
    weights: Option<&dyn WeightSource>,
    input: &Input,
    task: &nectar_model::secure::Task,
    progress: Option<crate::session::QueryProgress>,
    memory_budget: usize,
) -> Result<Party, String> {
    let t0 = Instant::now();
    let s0 = ch.stats();
    let mut e = SecureEngine::setup(ch, role, suite, Prg::from_entropy()).map_err(|e| e.to_string())?;
    e.set_prefetch_budget(memory_budget);
    let mut m = SecureModel::new(config, weights).map_err(|e| e.to_string())?;
    m.preload(&mut e).map_err(|e| e.to_string())?;
    let setup_seconds = t0.elapsed().as_secs_f64();
    let setup = nectar_model::secure::Engine::net_stats(&e) - s0;
    if let Some(p) = progress {
        m = m.with_progress(Box::new(move |done, blocks| p(0, 1, done, blocks)));
    }
    let s1 = nectar_model::secure::Engine::net_stats(&e);
    let t1 = Instant::now();
    let output = match (input, role) {
        (Input::Pixels(px), Role::Client) => m.run_image(&mut e, Some(px)),
        (Input::Ids(ids), _) => {
            let ids = (role == Role::Client).then(|| ids.clone());
            m.run(&mut e, &Query { task: task.clone(), ids, len: input.len(config) })
        }
        (Input::Pixels(_), Role::Server) => m.run(&mut e, &Query { task: task.clone(), ids: None, len: input.len(config) }),
    }
    .map_err(|e| format!("{role:?}: {e}"))?;
    let seconds = t1.elapsed().as_secs_f64();
    let traffic = nectar_model::secure::Engine::net_stats(&e) - s1;
    Ok(Party { output, setup_seconds, setup, seconds, traffic, profile: e.take_profile(), peak_rss: None, events: Vec::new() })
}

/// `batch` different inputs of `n` tokens from `ids` ([`fit_ids`]; input `b` starts its inner
/// tokens `3b` further on, so that no two inputs of a batch are equal).
fn batch_inputs(ids: &[u32], n: usize, batch: usize) -> Result<Vec<Input>, String> {
    if batch == 0 {
        return Err("--batch must be at least 1".into());
    }
    (0..batch)
        .map(|b| {
            let mut v = ids.to_vec();
            if v.len() > 2 {
                let inner = v.len() - 2;
                v[1..1 + inner].rotate_left((3 * b) % inner);
            }
            Ok(Input::Ids(fit_ids(&v, n)?))
        })
        .collect()
}

/// The query of the bench's inputs: the model's task on one input, or a batch of them.
fn bench_query(config: &nectar_model::ModelConfig, inputs: &[Input]) -> Result<(nectar_model::secure::Task, Input), String> {
    let task = default_task(config, 1, false);
    let mut q = crate::batch::queries(&task, inputs, inputs.len())?;
    match (q.pop(), q.is_empty()) {
        (Some(one), true) => Ok(one),
        _ => Err("the bench's inputs make one query".into()),
    }
}

/// The input ids cut or repeated to `n` tokens (first and last token kept: `[CLS]`, `[SEP]`).
fn fit_ids(ids: &[u32], n: usize) -> Result<Vec<u32>, String> {
    if ids.len() < 3 || n < 2 {
        return Err(format!("need an input of at least 3 tokens and --tokens >= 2 (got {}, {n})", ids.len()));
    }
    let (first, last, inner) = (ids[0], ids[ids.len() - 1], &ids[1..ids.len() - 1]);
    let mut v = vec![first];
    v.extend(inner.iter().cycle().take(n - 2));
    v.push(last);
    Ok(v)
}

/// One suite's result: its run of median time.
struct Row {
    suite: Suite,
    client: Party,
    server: Party,
    score: Option<f64>,
    /// Every run's inference seconds (the client's wall clock), in the order they ran.
    runs_seconds: Vec<f64>,
}

/// The index of the run of median time among `seconds` (the lower middle of an even count).
fn median_index(seconds: &[f64]) -> Option<usize> {
    let mut order: Vec<usize> = (0..seconds.len()).collect();
    order.sort_by(|&i, &j| seconds[i].total_cmp(&seconds[j]));
    order.get(seconds.len().checked_sub(1)? / 2).copied()
}

fn top_ops(p: &Profile, k: usize) -> Vec<OpRecord> {
    let mut ops = p.ops.clone();
    ops.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    ops.truncate(k);
    ops
}

pub fn run(a: &Args, json: bool) -> Result<(), String> {
    let suites = parse_suites(a)?;
    let rows = measure_rows(a, &suites, json)?;
    let lines: Vec<BenchLine> = rows.iter().map(|r| line(a, r)).collect();
    if json {
        crate::report::print_lines(&lines, true);
    } else {
        print_table(a, &rows);
    }
    Ok(())
}

/// The suites of `--suites` (with `--op` overrides), each validated, before any work.
fn parse_suites(a: &Args) -> Result<Vec<Suite>, String> {
    let suites: Vec<Suite> = a
        .suites
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|spec| {
            let s = crate::suites::resolve(Some(spec), None, a.ops, crate::suites::DEFAULT_SUITE)?;
            s.validate().map_err(|e| format!("suite {spec}: {e}"))?;
            Ok(s)
        })
        .collect::<Result<_, String>>()?;
    if suites.is_empty() {
        return Err("--suites names no suite".into());
    }
    Ok(suites)
}

/// One suite's run as `nectar tune` reads it: the client's wall-clock seconds, flights and
/// bytes of both parties, the agreement with plaintext, and both parties' per-operator profiles
/// (the server's only when both parties ran in this process).
pub struct Measured {
    pub suite: Suite,
    pub seconds: f64,
    pub flights: u64,
    pub bytes: u64,
    pub score: Option<f64>,
    pub client: Profile,
    pub server: Option<Profile>,
    /// Both parties' message traces (with `Args::trace`; else empty).
    pub client_events: Vec<Event>,
    pub server_events: Vec<Event>,
    /// The bench line `nectar bench suites --json` prints for this run.
    pub line: serde_json::Value,
}

/// Runs each of `suites` as `nectar bench suites` does (`a.suites` is not read) and returns the
/// measurements.
pub fn measure(a: &Args, suites: &[Suite]) -> Result<Vec<Measured>, String> {
    let rows = measure_rows(a, suites, true)?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let line = serde_json::to_value(line(a, &r)).unwrap_or_default();
            Measured {
                suite: r.suite,
                seconds: r.client.seconds,
                flights: r.client.traffic.rounds + r.server.traffic.rounds,
                bytes: r.client.traffic.bytes_sent + r.server.traffic.bytes_sent,
                score: r.score,
                server: a.in_process.then(|| r.server.profile.clone()),
                client: r.client.profile,
                client_events: r.client.events,
                server_events: r.server.events,
                line,
            }
        })
        .collect())
}

fn measure_rows(a: &Args, suites: &[Suite], json: bool) -> Result<Vec<Row>, String> {
    let link = LinkModel::parse(a.net).map_err(|e| format!("--net: {e}"))?;
    if a.repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    let server = ServerModel::load(&a.dir)?;
    let client = ClientModel::load(&a.dir)?;
    let text = a.text.unwrap_or(DEFAULT_TEXT);
    let Some(Input::Ids(ids)) = crate::private::tokenize(client.tokenizer.as_ref(), &[text.to_string()])?.pop() else {
        return Err("tokenizing the input failed".into());
    };
    let inputs = batch_inputs(&ids, a.tokens, a.batch)?;
    let (task, input) = bench_query(&server.config, &inputs)?;
    // The plaintext reference of every output kind this task gives, computed before the runs
    // (and its model dropped), so that it is not in the client party's peak RSS.
    let plain = {
        let reference_model = nectar_model::Model::load(&a.dir).map_err(|e| e.to_string())?;
        let kind = match default_task(&server.config, 1, false) {
            nectar_model::secure::Task::Classify => Output::Logits(Vec::new()),
            nectar_model::secure::Task::Generate { n_new } | nectar_model::secure::Task::Chat { n_new, .. } => Output::Tokens(vec![0; n_new]),
            _ => Output::Embedding(Vec::new()),
        };
        let refs: Vec<Output> = inputs.iter().map(|i| reference(reference_model.network(), i, &kind)).collect::<Result<_, _>>()?;
        match <[Output; 1]>::try_from(refs) {
            Ok([one]) => one,
            Err(all) => Output::Batch(all),
        }
    };
    let mut rows = Vec::new();
    for suite in suites {
        let mut runs = Vec::with_capacity(a.repeat);
        for k in 0..a.repeat {
            if !json {
                eprintln!("running suite {} (run {} of {}) ...", suite.label(), k + 1, a.repeat);
            }
            runs.push(run_once(a, suite, link, &server, &input, &task, json)?);
        }
        let runs_seconds: Vec<f64> = runs.iter().map(|(_, c)| c.seconds).collect();
        let mid = median_index(&runs_seconds).ok_or("no run")?;
        let (srv, cli) = runs.swap_remove(mid);
        let score = agreement_score(&cli.output, &plain);
        rows.push(Row { suite: *suite, client: cli, server: srv, score, runs_seconds });
    }
    Ok(rows)
}

/// One run of `suite` (a fresh session): (server party, client party).
fn run_once(
    a: &Args,
    suite: &Suite,
    link: Option<LinkModel>,
    server: &ServerModel,
    input: &Input,
    task: &nectar_model::secure::Task,
    json: bool,
) -> Result<(Party, Party), String> {
    let bar = (!json).then(|| crate::progress::QueryBar::new(&suite.label()));
    let hook = bar.as_ref().map(|b| b.hook());
    let (srv, cli) = if a.in_process {
        let (c0, c1) = linked_pair(link);
        let (mut c0, mut c1) = (Traced::new(c0), Traced::new(c1));
        let w: &dyn WeightSource = server.weights.as_ref();
        let (rs, rc) = std::thread::scope(|s| {
            let h = s.spawn(|| party(&mut c1, Role::Client, suite, &server.config, None, input, task, hook, a.memory_budget));
            let rs = party(&mut c0, Role::Server, suite, &server.config, Some(w), input, task, None, a.memory_budget);
            (rs, h.join().unwrap_or_else(|_| Err("the client thread panicked".into())))
        });
        let (mut rs, mut rc) = (rs?, rc?);
        if a.trace {
            (rs.events, rc.events) = (c0.events().to_vec(), c1.events().to_vec());
        }
        (rs, rc)
    } else {
        if a.trace {
            return Err("message traces are recorded with both parties in this process only".into());
        }
        two_processes(a, suite, link, &server.config, input, task, hook)?
    };
    if let Some(b) = &bar {
        b.finish();
    }
    if srv.output != Output::Nothing {
        return Err("the server learned an output".into());
    }
    Ok((srv, cli))
}

/// The input of the server party: only its length is used (the ids are the client's).
fn server_input(n: usize) -> Input {
    Input::Ids(vec![0; n])
}

/// The child's side (`--server-party ADDR`): the server party of the one suite in `a.suites`,
/// connected to the client at `addr` through the simulated link; prints one JSON line with its
/// counters and its own peak RSS.
pub fn run_server_party(a: &Args, addr: &str) -> Result<(), String> {
    let link = LinkModel::parse(a.net).map_err(|e| format!("--net: {e}"))?;
    let suite = crate::suites::resolve(Some(a.suites), None, a.ops, crate::suites::DEFAULT_SUITE)?;
    suite.validate().map_err(|e| e.to_string())?;
    let server = ServerModel::load(&a.dir)?;
    let (task, input) = bench_query(&server.config, &vec![server_input(a.tokens); a.batch.max(1)])?;
    let mut tcp = TcpChannel::connect(addr).map_err(|e| format!("server party: connect {addr}: {e}"))?;
    tcp.set_timeout(None).map_err(|e| e.to_string())?;
    let mut ch: Box<dyn Channel> = match link {
        Some(m) => Box::new(Simulated::new(tcp, m)),
        None => Box::new(tcp),
    };
    reset_peak_rss();
    let w: &dyn WeightSource = server.weights.as_ref();
    let p = party(&mut *ch, Role::Server, &suite, &server.config, Some(w), &input, &task, None, a.memory_budget)?;
    let stats = |s: &Stats| serde_json::json!([s.bytes_sent, s.bytes_recv, s.msgs_sent, s.msgs_recv, s.rounds]);
    let o = serde_json::json!({
        "learned_nothing": p.output == Output::Nothing,
        "setup_seconds": p.setup_seconds,
        "setup": stats(&p.setup),
        "seconds": p.seconds,
        "traffic": stats(&p.traffic),
        "peak_rss_bytes": crate::report::peak_rss_bytes(),
    });
    outln!("{o}");
    Ok(())
}

/// Runs the server party of `suite` as a child process and the client party here, over
/// loopback TCP through the simulated link.
#[allow(clippy::too_many_arguments)]
fn two_processes(
    a: &Args,
    suite: &Suite,
    link: Option<LinkModel>,
    config: &nectar_model::ModelConfig,
    input: &Input,
    task: &nectar_model::secure::Task,
    progress: Option<crate::session::QueryProgress>,
) -> Result<(Party, Party), String> {
    let (listener, addr) = listen()?;
    let exe = std::env::current_exe().map_err(|e| format!("locating this binary: {e}"))?;
    let mut child = Command::new(exe)
        .args(["bench", "suites", "--model"])
        .arg(&a.dir)
        .args(["--suites", &suite.label(), "--net", a.net])
        .args(["--tokens", &(input.len(config) / a.batch.max(1)).to_string(), "--batch", &a.batch.max(1).to_string()])
        .args(["--memory-budget-mib", &(a.memory_budget >> 20).to_string()])
        .args(["--server-party", &addr])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting the server party: {e}"))?;
    let client = (|| -> Result<Party, String> {
        let tcp = accept_child(&listener, &mut child)?;
        let mut ch: Box<dyn Channel> = match link {
            Some(m) => Box::new(Simulated::new(tcp, m)),
            None => Box::new(tcp),
        };
        reset_peak_rss();
        let mut p = party(&mut *ch, Role::Client, suite, config, None, input, task, progress, a.memory_budget)?;
        p.peak_rss = Some(crate::report::peak_rss_bytes());
        Ok(p)
    })();
    let (client, stdout) = finish(child, client)?;
    let text = String::from_utf8_lossy(&stdout);
    let v: serde_json::Value = text
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| format!("the server party printed no result: {text:?}"))?;
    let stats = |k: &str| -> Result<Stats, String> {
        let n = |i: usize| v[k][i].as_u64().ok_or_else(|| format!("server party result: bad '{k}'"));
        Ok(Stats { bytes_sent: n(0)?, bytes_recv: n(1)?, msgs_sent: n(2)?, msgs_recv: n(3)?, rounds: n(4)? })
    };
    let secs = |k: &str| v[k].as_f64().ok_or_else(|| format!("server party result: bad '{k}'"));
    if v["learned_nothing"].as_bool() != Some(true) {
        return Err("the server learned an output".into());
    }
    let server = Party {
        output: Output::Nothing,
        setup_seconds: secs("setup_seconds")?,
        setup: stats("setup")?,
        seconds: secs("seconds")?,
        traffic: stats("traffic")?,
        profile: Profile::default(),
        peak_rss: v["peak_rss_bytes"].as_u64(),
        events: Vec::new(),
    };
    Ok((server, client))
}

fn line(a: &Args, r: &Row) -> BenchLine {
    let mut l = BenchLine::new("suites", &r.suite.label())
        .param("model", a.dir.display().to_string())
        .param("tokens", a.tokens)
        .param("net", a.net)
        .param("repeat", a.repeat)
        .param("batch", a.batch)
        .seconds(r.client.seconds);
    let per = a.batch.max(1) as f64;
    // Input-independent work inside the query (ROTL's rotations, COP's weight transfer at first
    // use), as the client's profile recorded it; the rest is the online phase.
    let pre = r.client.profile.total();
    l.bytes_sent = r.client.traffic.bytes_sent;
    l.bytes_recv = r.client.traffic.bytes_recv;
    let total = r.client.traffic.bytes_sent + r.server.traffic.bytes_sent;
    l.bytes_total = total;
    l.rounds = r.client.traffic.rounds + r.server.traffic.rounds;
    // With the parties in two processes, the line's peak is the larger of this run's two
    // per-party peaks; the process's own high-water mark when this line is printed would be
    // that of whichever suite ran last since its counter was reset.
    if let (Some(sp), Some(cp)) = (r.server.peak_rss, r.client.peak_rss) {
        l.peak_rss_bytes = sp.max(cp);
    }
    l.extra("protocols", r.suite.json_map())
        .extra("digest", r.suite.digest())
        .extra("bytes_client_to_server", r.client.traffic.bytes_sent)
        .extra("bytes_server_to_client", r.server.traffic.bytes_sent)
        .extra("setup_seconds", r.client.setup_seconds.max(r.server.setup_seconds))
        .extra("setup_bytes", r.client.setup.bytes_sent + r.server.setup.bytes_sent)
        .extra("prepro_seconds", pre.prepro_seconds)
        .extra("prepro_bytes", pre.prepro_bytes)
        .extra("online_seconds", (r.client.seconds - pre.prepro_seconds).max(0.0))
        .extra("online_bytes", total.saturating_sub(pre.prepro_bytes))
        .extra("runs_seconds", r.runs_seconds.clone())
        .extra("inputs", a.batch.max(1))
        .extra("seconds_per_input", r.client.seconds / per)
        .extra("bytes_per_input", (r.client.traffic.bytes_sent + r.server.traffic.bytes_sent) as f64 / per)
        .extra("flights_per_input", (r.client.traffic.rounds + r.server.traffic.rounds) as f64 / per)
        .extra("inputs_per_minute", 60.0 * per / r.client.seconds.max(1e-9))
        .extra("agreement_vs_plaintext", r.score)
        // BLB's CKKS keys travel inside the query, the other suites' in the setup: apart.
        .extra("blb_key_bytes", crate::demo::blb_key_bytes(&r.client.profile))
        .extra("rss_per_party", r.client.peak_rss.is_some())
        .extra("server_peak_rss_bytes", r.server.peak_rss)
        .extra("client_peak_rss_bytes", r.client.peak_rss)
        .extra("top_ops", serde_json::to_value(top_ops(&r.client.profile, 5)).unwrap_or_default())
        .extra("breakdown", r.client.profile.to_json())
}

fn print_table(a: &Args, rows: &[Row]) {
    outln!(
        "nectar bench suites — {} , {} tokens{}, net {} ({}; client's view of the profile)",
        a.dir.display(),
        a.tokens,
        if a.batch > 1 { format!(" × a batch of {}", a.batch) } else { String::new() },
        a.net,
        if a.in_process { "both parties in-process" } else { "server party in a child process, loopback TCP" }
    );
    let w = 26;
    let mut head = format!("{:<22}", "");
    for r in rows {
        head.push_str(&format!(" {:>w$}", r.suite.label()));
    }
    outln!("{head}");
    let row = |name: &str, f: &dyn Fn(&Row) -> String| {
        let mut s = format!("{name:<22}");
        for r in rows {
            s.push_str(&format!(" {:>w$}", f(r)));
        }
        outln!("{s}");
    };
    row(if a.repeat > 1 { "seconds (median run)" } else { "seconds" }, &|r| format!("{:.2}", r.client.seconds));
    if a.repeat > 1 {
        row("runs: min - max s", &|r| {
            let lo = r.runs_seconds.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = r.runs_seconds.iter().copied().fold(0.0, f64::max);
            format!("{lo:.2} - {hi:.2}")
        });
    }
    if a.batch > 1 {
        let per = a.batch as f64;
        row("s per input", &|r| format!("{:.2}", r.client.seconds / per));
        row("MB per input", &|r| format!("{:.1}", (r.client.traffic.bytes_sent + r.server.traffic.bytes_sent) as f64 / 1e6 / per));
        row("inputs per minute", &|r| format!("{:.1}", 60.0 * per / r.client.seconds.max(1e-9)));
    }
    row("MB client->server", &|r| format!("{:.1}", r.client.traffic.bytes_sent as f64 / 1e6));
    row("MB server->client", &|r| format!("{:.1}", r.server.traffic.bytes_sent as f64 / 1e6));
    row("rounds", &|r| format!("{}", r.client.traffic.rounds + r.server.traffic.rounds));
    row("setup s / MB", &|r| {
        format!(
            "{:.1} / {:.1}",
            r.client.setup_seconds.max(r.server.setup_seconds),
            (r.client.setup.bytes_sent + r.server.setup.bytes_sent) as f64 / 1e6
        )
    });
    row("vs plaintext", &|r| r.score.map_or("-".into(), |s| format!("{s:.5}")));
    let gb = |b: Option<u64>| b.map_or("-".into(), |b| format!("{:.2}", b as f64 / 1e9));
    row("peak RSS GB srv / cli", &|r| format!("{} / {}", gb(r.server.peak_rss), gb(r.client.peak_rss)));
    // Operators that differ between the suites, then the top costs of each.
    let base = rows[0].suite.entries();
    for (i, e) in base.iter().enumerate() {
        if rows.iter().any(|r| r.suite.entries()[i].protocol != e.protocol) {
            row(&format!("op {}", e.operator), &|r| r.suite.entries()[i].protocol.to_string());
        }
    }
    for k in 0..5 {
        row(&format!("top op {}", k + 1), &|r| {
            top_ops(&r.client.profile, 5)
                .get(k)
                .map_or(String::new(), |o| format!("{}[{}] {:.2}s {:.0}MB", o.op, o.protocol, o.seconds, (o.bytes_sent + o.bytes_recv) as f64 / 1e6))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::median_index;

    /// The reported run is the one of median time: the middle of an odd count, the lower
    /// middle of an even one, whatever order the runs came in; no run, no index.
    #[test]
    fn median_run_is_picked_by_time() {
        assert_eq!(median_index(&[13.1]), Some(0));
        assert_eq!(median_index(&[14.4, 12.0, 13.1]), Some(2));
        assert_eq!(median_index(&[12.5, 11.7, 13.2, 11.8, 12.2]), Some(4));
        assert_eq!(median_index(&[12.0, 11.0, 14.0, 13.0]), Some(0));
        assert_eq!(median_index(&[]), None);
    }
}
