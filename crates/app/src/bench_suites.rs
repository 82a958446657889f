//! `nectar bench suites`: the same input end to end under several suites (issue 12 item 7).
//!
//! For each suite both parties run in this process (two threads over an in-memory channel
//! through the simulated link of `--net`): session setup, then one query on the model's real
//! weights. Reported per suite: inference seconds (the client's wall clock, setup apart),
//! bytes each way, rounds, the per-operator profile (with the protocol of each row) and the
//! agreement with the plaintext f32 reference (cosine for embeddings and logits, the fraction
//! of equal tokens for generation). Printed as one side-by-side table, or as JSON lines (one
//! per suite) with `--json`.

use crate::demo::{agreement_score, reference};
use crate::private::{default_task, ClientModel, Input, ServerModel};
use crate::report::BenchLine;
use nectar_math::Prg;
use nectar_model::secure::{OpRecord, Output, Profile, Query, SecureEngine, SecureModel, WeightSource};
use nectar_model::Suite;
use nectar_net::{linked_pair, Channel, LinkModel, Role, Stats};
use std::path::PathBuf;
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
) -> Result<Party, String> {
    let t0 = Instant::now();
    let s0 = ch.stats();
    let mut e = SecureEngine::setup(ch, role, suite, Prg::from_entropy()).map_err(|e| e.to_string())?;
    let setup_seconds = t0.elapsed().as_secs_f64();
    let setup = nectar_model::secure::Engine::net_stats(&e) - s0;
    let mut m = SecureModel::new(config, weights).map_err(|e| e.to_string())?;
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
    Ok(Party { output, setup_seconds, setup, seconds, traffic, profile: e.take_profile() })
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

/// One suite's result.
struct Row {
    suite: Suite,
    client: Party,
    server: Party,
    score: Option<f64>,
}

fn top_ops(p: &Profile, k: usize) -> Vec<OpRecord> {
    let mut ops = p.ops.clone();
    ops.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    ops.truncate(k);
    ops
}

pub fn run(a: &Args, json: bool) -> Result<(), String> {
    let link = LinkModel::preset(a.net).ok_or_else(|| format!("unknown --net '{}' (none, lan, wan)", a.net))?;
    // Resolve and validate every suite before any work.
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
    let server = ServerModel::load(&a.dir)?;
    let client = ClientModel::load(&a.dir)?;
    let text = a.text.unwrap_or(DEFAULT_TEXT);
    let Some(Input::Ids(ids)) = crate::private::tokenize(client.tokenizer.as_ref(), &[text.to_string()])?.pop() else {
        return Err("tokenizing the input failed".into());
    };
    let input = Input::Ids(fit_ids(&ids, a.tokens)?);
    let task = default_task(&server.config, 1, false);
    let reference_model = nectar_model::Model::load(&a.dir).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for suite in &suites {
        if !json {
            eprintln!("running suite {} ...", suite.label());
        }
        let (mut c0, mut c1) = linked_pair(link);
        let w: &dyn WeightSource = &server.weights;
        let bar = (!json).then(|| crate::progress::QueryBar::new(&suite.label()));
        let hook = bar.as_ref().map(|b| b.hook());
        let (rs, rc) = std::thread::scope(|s| {
            let h = s.spawn(|| party(&mut *c1, Role::Client, suite, &server.config, None, &input, &task, hook));
            let rs = party(&mut *c0, Role::Server, suite, &server.config, Some(w), &input, &task, None);
            (rs, h.join().unwrap_or_else(|_| Err("the client thread panicked".into())))
        });
        if let Some(b) = &bar {
            b.finish();
        }
        let (srv, cli) = (rs?, rc?);
        if srv.output != Output::Nothing {
            return Err("the server learned an output".into());
        }
        let plain = reference(reference_model.network(), &input, &cli.output)?;
        let score = agreement_score(&cli.output, &plain);
        rows.push(Row { suite: *suite, client: cli, server: srv, score });
    }
    let lines: Vec<BenchLine> = rows.iter().map(|r| line(a, r)).collect();
    if json {
        crate::report::print_lines(&lines, true);
    } else {
        print_table(a, &rows);
    }
    Ok(())
}

fn line(a: &Args, r: &Row) -> BenchLine {
    let mut l = BenchLine::new("suites", &r.suite.label())
        .param("model", a.dir.display().to_string())
        .param("tokens", a.tokens)
        .param("net", a.net)
        .seconds(r.client.seconds);
    l.bytes_sent = r.client.traffic.bytes_sent;
    l.bytes_recv = r.client.traffic.bytes_recv;
    l.bytes_total = r.client.traffic.bytes_sent + r.server.traffic.bytes_sent;
    l.rounds = r.client.traffic.rounds + r.server.traffic.rounds;
    l.extra("protocols", r.suite.json_map())
        .extra("digest", r.suite.digest())
        .extra("bytes_client_to_server", r.client.traffic.bytes_sent)
        .extra("bytes_server_to_client", r.server.traffic.bytes_sent)
        .extra("setup_seconds", r.client.setup_seconds.max(r.server.setup_seconds))
        .extra("setup_bytes", r.client.setup.bytes_sent + r.server.setup.bytes_sent)
        .extra("agreement_vs_plaintext", r.score)
        .extra("top_ops", serde_json::to_value(top_ops(&r.client.profile, 5)).unwrap_or_default())
        .extra("breakdown", r.client.profile.to_json())
}

fn print_table(a: &Args, rows: &[Row]) {
    outln!(
        "nectar bench suites — {} , {} tokens, net {} (both parties in-process; client's view of the profile)",
        a.dir.display(),
        a.tokens,
        a.net
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
    row("seconds", &|r| format!("{:.2}", r.client.seconds));
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
