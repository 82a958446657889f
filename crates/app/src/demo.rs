//! `nectar demo` and the output of `nectar infer`: private outputs next to the plaintext
//! reference, similarity matrix, time, communication and the per-operator breakdown.

use crate::private::{self, ClientModel, Input, ServerModel};
use nectar_model::Suite;
use crate::session::ClientRun;
use nectar_model::secure::Output;
use nectar_model::tokenizer::TextTokenizer;
use nectar_model::Network;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Default demo sentences (paraphrase pairs and an unrelated one).
pub const DEFAULT_TEXTS: [&str; 4] = [
    "The weather is lovely today.",
    "It's so sunny outside!",
    "He drove to the stadium.",
    "A man is playing a guitar.",
];

/// The plaintext reference output for the same input and task.
pub fn reference(net: &Network, input: &Input, out: &Output) -> Result<Output, String> {
    let e = |e: nectar_model::ModelError| e.to_string();
    Ok(match (net, input, out) {
        (Network::Bert(b), Input::Ids(ids), Output::Embedding(_)) => Output::Embedding(b.embed_ids(ids).map_err(e)?),
        (Network::Bert(b), Input::Ids(ids), Output::Logits(_)) => Output::Logits(b.classify_ids(ids).map_err(e)?),
        (Network::Gpt2(g), Input::Ids(ids), Output::Tokens(t)) => Output::Tokens(g.generate(ids, t.len()).map_err(e)?),
        (Network::Llama(g), Input::Ids(ids), Output::Tokens(t)) => Output::Tokens(g.generate(ids, t.len()).map_err(e)?),
        (Network::Vit(v), Input::Pixels(px), Output::Logits(_)) => Output::Logits(v.classify(px).map_err(e)?),
        _ => return Err("no plaintext reference for this model/task".into()),
    })
}

/// How close a private output is to the plaintext one: cosine for vectors, the fraction of
/// equal tokens for generation.
pub fn agreement_score(private: &Output, plain: &Output) -> Option<f64> {
    match (private, plain) {
        (Output::Embedding(a), Output::Embedding(b)) | (Output::Logits(a), Output::Logits(b)) => {
            Some(nectar_model::cosine(a, b) as f64)
        }
        (Output::Tokens(a), Output::Tokens(b)) => {
            Some(a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / a.len().max(1) as f64)
        }
        // A batch: its worst input.
        (Output::Batch(a), Output::Batch(b)) if a.len() == b.len() => {
            a.iter().zip(b).map(|(x, y)| agreement_score(x, y)).try_fold(f64::INFINITY, |m, s| s.map(|s| m.min(s)))
        }
        _ => None,
    }
}

fn output_json(o: &Output) -> serde_json::Value {
    serde_json::to_value(o).unwrap_or(serde_json::Value::Null)
}

/// Print a client run (shared by `demo` and `infer`); `plain` holds the references if known,
/// one per input. Every JSON line names the suite and each operator's protocol; one line per
/// input (a batch's inputs each get their own, with the batch's figures and their share,
/// issue 52). Generations carry `generated_ids`, `seconds_per_token`, `bytes_per_token` and
/// `rounds_per_token` (after the first) and, with the tokenizer `tok`, the text as `generated`.
pub fn print_run(texts: &[String], run: &ClientRun, plain: Option<&[Output]>, suite: &Suite, json: bool, tok: Option<&TextTokenizer>) {
    let total_secs: f64 = run.reports.iter().map(|r| r.seconds).sum();
    let sent: u64 = run.reports.iter().map(|r| r.bytes_sent).sum();
    let recv: u64 = run.reports.iter().map(|r| r.bytes_recv).sum();
    let profile = private::total_profile(&run.reports);
    let items = crate::batch::per_input(&run.reports);
    let inputs = items.len().max(1);
    if json {
        for (i, it) in items.iter().enumerate() {
            let r = it.report;
            // Input-independent work inside the query (COP's weight transfer at first use,
            // ROTL's rotations), as its profile recorded it; the rest is online.
            let pre = r.profile.total();
            let mut o = serde_json::json!({
                "text": texts.get(i),
                "task": r.task,
                "tokens": it.tokens,
                "private": output_json(it.output),
                "seconds": r.seconds,
                "bytes_sent": r.bytes_sent,
                "bytes_recv": r.bytes_recv,
                "rounds": r.rounds,
                "batch": it.batch,
                "seconds_per_input": it.seconds(),
                "bytes_per_input": it.bytes(),
                "rounds_per_input": r.rounds as f64 / it.batch as f64,
                "prepro_seconds": pre.prepro_seconds,
                "prepro_bytes": pre.prepro_bytes,
                "online_seconds": (r.seconds - pre.prepro_seconds).max(0.0),
                "online_bytes": (r.bytes_sent + r.bytes_recv).saturating_sub(pre.prepro_bytes),
                "suite": suite.label(),
                "protocols": suite.json_map(),
            });
            // BLB's CKKS keys travel inside the query (at each parameter set's first block; the
            // other suites' keys are in the session setup): reported apart.
            let keys = blb_key_bytes(&r.profile);
            if keys > 0 {
                o["blb_key_bytes"] = serde_json::json!(keys);
            }
            if let Some(p) = plain.and_then(|p| p.get(i)) {
                o["plaintext"] = output_json(p);
                o["agreement"] = serde_json::json!(agreement_score(it.output, p));
            }
            if let Output::Tokens(t) = it.output {
                o["generated_ids"] = serde_json::json!(t);
                o["seconds_per_token"] = serde_json::json!(r.seconds_per_token());
                o["bytes_per_token"] = serde_json::json!(r.bytes_per_token());
                o["rounds_per_token"] = serde_json::json!(r.rounds_per_token());
                o["seconds_to_first_token"] = serde_json::json!(r.token_seconds.first());
                if let Some(text) = tok.and_then(|k| k.decode(t).ok()) {
                    o["generated"] = serde_json::json!(text);
                }
            }
            outln!("{o}");
        }
        let mut t = serde_json::json!({
            "totals": {
                "suite": suite.label(),
                "protocols": suite.json_map(),
                "queries": run.reports.len(),
                "inputs": items.len(),
                "seconds": total_secs,
                "seconds_per_input": total_secs / inputs as f64,
                "inputs_per_minute": if total_secs > 0.0 { 60.0 * items.len() as f64 / total_secs } else { 0.0 },
                "setup_seconds": run.setup_seconds,
                "setup_bytes_total": run.setup_stats.bytes_sent + run.setup_stats.bytes_recv,
                "bytes_sent": sent,
                "bytes_recv": recv,
                "bytes_total": sent + recv,
                "bytes_per_input": (sent + recv) as f64 / inputs as f64,
                "prepro_seconds": profile.total().prepro_seconds,
                "prepro_bytes": profile.total().prepro_bytes,
                "peak_rss_bytes": crate::report::peak_rss_bytes(),
                "breakdown": profile.to_json(),
            }
        });
        let keys = blb_key_bytes(&profile);
        if keys > 0 {
            t["totals"]["blb_key_bytes"] = serde_json::json!(keys);
        }
        outln!("{t}");
        return;
    }
    for (i, it) in items.iter().enumerate() {
        let r = it.report;
        let text = texts.get(i).map(String::as_str).unwrap_or("");
        let head = describe(it.output);
        let cost = if it.batch > 1 {
            format!("{} tokens; batch of {}: {:.2} s, {:.1} MB, {:.2} s and {:.1} MB per input", it.tokens, it.batch, r.seconds, (r.bytes_sent + r.bytes_recv) as f64 / 1e6, it.seconds(), it.bytes() / 1e6)
        } else {
            format!("{} tokens, {:.2} s, {:.1} MB", it.tokens, r.seconds, (r.bytes_sent + r.bytes_recv) as f64 / 1e6)
        };
        match plain.and_then(|p| p.get(i)) {
            Some(p) => {
                let score = agreement_score(it.output, p).unwrap_or(f64::NAN);
                let what = if matches!(it.output, Output::Tokens(_)) { "tokens equal to plaintext" } else { "cosine to plaintext" };
                outln!("[{i}] {what} {score:.5}  {head}  ({cost})  {text:?}");
                if let (Output::Tokens(a), Output::Tokens(b)) = (it.output, p) {
                    outln!("     plaintext tokens {b:?}");
                    if let Some(k) = tok {
                        outln!("     private text {:?}, plaintext text {:?}", k.decode(a).unwrap_or_default(), k.decode(b).unwrap_or_default());
                    }
                    if let Some(spt) = r.seconds_per_token() {
                        outln!("     {spt:.2} s per token after the first ({:.2} s to the first)", r.token_seconds.first().copied().unwrap_or(0.0));
                    }
                }
            }
            None => outln!("[{i}] {head}  ({cost})  {text:?}"),
        }
    }
    let embs: Vec<&Vec<f32>> = items.iter().filter_map(|it| match it.output {
        Output::Embedding(e) => Some(e),
        _ => None,
    }).collect();
    if embs.len() > 1 {
        outln!("cosine similarity of the private embeddings:");
        for a in &embs {
            let row: Vec<String> = embs.iter().map(|b| format!("{:.4}", nectar_model::cosine(a, b))).collect();
            outln!("  {}", row.join("  "));
        }
    }
    outln!(
        "session setup {:.2} s, {:.1} MB; inference {:.2} s, {:.1} MB sent + {:.1} MB received (client view)",
        run.setup_seconds,
        (run.setup_stats.bytes_sent + run.setup_stats.bytes_recv) as f64 / 1e6,
        total_secs,
        sent as f64 / 1e6,
        recv as f64 / 1e6
    );
    if items.len() > run.reports.len() {
        outln!(
            "{} inputs in {} queries: {:.2} s and {:.1} MB per input, {:.1} inputs per minute",
            items.len(),
            run.reports.len(),
            total_secs / inputs as f64,
            (sent + recv) as f64 / 1e6 / inputs as f64,
            60.0 * items.len() as f64 / total_secs.max(1e-9)
        );
    }
    outln!("per-operator breakdown (client view, all queries):\n{}", profile.table());
}

fn describe(o: &Output) -> String {
    match o {
        Output::Embedding(e) => {
            let head: Vec<String> = e.iter().take(4).map(|x| format!("{x:+.4}")).collect();
            format!("[{} ...] (dim {})", head.join(", "), e.len())
        }
        Output::Logits(e) => {
            let head: Vec<String> = e.iter().take(4).map(|x| format!("{x:+.4}")).collect();
            let top = e.iter().enumerate().fold((0, f32::NEG_INFINITY), |b, (i, &x)| if x > b.1 { (i, x) } else { b });
            format!("logits [{} ...] (dim {}, argmax {})", head.join(", "), e.len(), top.0)
        }
        Output::Tokens(t) => format!("tokens {t:?}"),
        Output::Nothing => "(nothing)".into(),
        Output::Batch(outs) => format!("a batch of {} outputs", outs.len()),
    }
}

/// Server and client on loopback TCP (with `link`: both parties in this process over the
/// simulated link, [`private::run_local`]), then the comparison with the plaintext reference
/// (`seed`: both parties seeded from it, [`crate::test_seed`]; NO privacy, tests only).
#[allow(clippy::too_many_arguments)]
pub fn demo(
    dir: &Path,
    suite: &Suite,
    texts: &[String],
    images: &[PathBuf],
    tokens: usize,
    batch: usize,
    json: bool,
    seed: Option<u64>,
    link: Option<nectar_net::LinkModel>,
) -> Result<(), String> {
    let server = Arc::new(ServerModel::load(dir)?);
    let mut client = ClientModel::load(dir)?;
    let is_vit = matches!(client.config, Some(nectar_model::config::ModelConfig::Vit(_)));
    let (texts, inputs) = if is_vit || !images.is_empty() {
        if images.is_empty() {
            return Err("this is a ViT model: give the images to classify with --image".into());
        }
        let labels: Vec<String> = images.iter().map(|p| p.display().to_string()).collect();
        (labels, private::read_images(dir, client.config.as_ref(), images)?)
    } else {
        let texts: Vec<String> = if texts.is_empty() { DEFAULT_TEXTS.iter().map(|s| s.to_string()).collect() } else { texts.to_vec() };
        let inputs = private::tokenize(client.tokenizer.as_ref(), &texts)?;
        (texts, inputs)
    };
    // generations stream their tokens (text output, with a tokenizer)
    let generates = matches!(client.config.as_ref().map(|c| private::default_task(c, tokens, false)), Some(nectar_model::secure::Task::Generate { .. }));
    let tok = client.tokenizer.take().map(Arc::new);
    let on_token = match (&tok, generates && !json) {
        (Some(t), true) => Some(crate::chat::print_hook(t.clone())),
        _ => None,
    };
    let run = match link {
        Some(l) => {
            if !json {
                outln!("== nectar demo: private inference (suite {}) on {} ==", suite.label(), dir.display());
                outln!("server and client in this process over a simulated link of {}; {} queries in one session", link_label(&l), texts.len());
            }
            let task = match &client.config {
                Some(cfg) => private::default_task(cfg, tokens, false),
                None => return Err("the model has no config.json".into()),
            };
            let queries = crate::batch::queries(&task, &inputs, batch)?;
            let bar = (!json && on_token.is_none()).then(|| crate::progress::QueryBar::new("demo"));
            let res = private::run_local(&server, suite, Some(l), &queries, bar.as_ref().map(|b| b.hook()), seed, on_token.clone());
            if let Some(b) = &bar {
                b.finish();
            }
            res?.0
        }
        None => demo_tcp(server, &client, suite, &texts, &inputs, (tokens, batch), json, seed, dir, on_token.clone())?,
    };
    if on_token.is_some() {
        outln!();
    }
    let reference_model = nectar_model::Model::load(dir).map_err(|e| e.to_string())?;
    let plain: Vec<Output> = crate::batch::per_input(&run.reports)
        .iter()
        .zip(&inputs)
        .map(|(r, input)| reference(reference_model.network(), input, r.output))
        .collect::<Result<_, _>>()?;
    print_run(&texts, &run, Some(&plain), suite, json, tok.as_deref());
    Ok(())
}

/// `MBPS Mbit/s, RTT ms round trip`.
fn link_label(l: &nectar_net::LinkModel) -> String {
    format!("{} Mbit/s, {} ms round trip", l.bandwidth_bps / 1e6, l.rtt().as_secs_f64() * 1e3)
}

/// The demo's session over loopback TCP: the server on a second thread, the client here.
#[allow(clippy::too_many_arguments)]
fn demo_tcp(
    server: Arc<ServerModel>,
    client: &ClientModel,
    suite: &Suite,
    texts: &[String],
    inputs: &[Input],
    (tokens, batch): (usize, usize),
    json: bool,
    seed: Option<u64>,
    dir: &Path,
    on_token: Option<crate::session::TokenHook>,
) -> Result<ClientRun, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?.to_string();
    if !json {
        outln!("== nectar demo: private inference (suite {}) on {} ==", suite.label(), dir.display());
        outln!("server and client on {addr}; {} queries in one session", texts.len());
    }
    let s2 = *suite;
    let srv = std::thread::spawn(move || private::serve(server, listener, &s2, &private::ServeOptions { max_sessions: Some(1), quiet: true, test_seed: seed, ..Default::default() }));
    let bar = (!json && on_token.is_none()).then(|| crate::progress::QueryBar::new("demo"));
    let res = crate::retry::run_client(&addr, suite, client.config.as_ref(), inputs, tokens, false, batch, bar.as_ref().map(|b| b.hook()), seed, on_token, 0);
    if let Some(b) = &bar {
        b.finish();
    }
    let srv_res = srv.join().map_err(|_| "server thread panicked".to_string())?;
    let (run, _cfg) = res?;
    srv_res?;
    Ok(run)
}

/// Bytes of BLB's CKKS keys in a profile (its `blb.keys` rows, both directions).
pub(crate) fn blb_key_bytes(p: &nectar_model::secure::Profile) -> u64 {
    p.ops.iter().filter(|r| r.op == "blb.keys").map(|r| r.bytes_sent + r.bytes_recv).sum()
}
