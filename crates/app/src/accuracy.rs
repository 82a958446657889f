//! `nectar accuracy`: how far a suite's private outputs are from plaintext, and which operator
//! the distance comes from (issue 17 item 1).
//!
//! For every sentence of `--sentences` (one per line) on a BERT-family model:
//!
//! - **float vs twin** (approximation error): the f32 reference against the fixed-point twin
//!   ([`PlainEngine`]) running the suite's approximations;
//! - **per operator**: the twin with only that operator approximated (every other one of
//!   [`EXACT_OPS`] evaluated exactly in f64) — the operator's own share of the error — and the
//!   twin with none approximated, the floor set by the fixed-point format `(l, f)` of the
//!   linear layers and the residual stream;
//! - **twin vs secure** (protocol error, with `--secure`): both parties in this process, one
//!   session for all sentences, no simulated link.
//!
//! Reported as cosine (min and mean over the sentences) and max abs error of the output vector
//! (embedding entries, or classifier logits with `--classify`). JSON lines with `--json`: one
//! per sentence, then one summary line.

use crate::demo::reference;
use crate::private::{ClientModel, Input, ServerModel};
use nectar_math::{FixedPoint, Prg};
use nectar_model::secure::exact::EXACT_OPS;
use nectar_model::secure::{Output, Query, SecureEngine, SecureModel, Task, WeightSource};
use nectar_model::twin::PlainEngine;
use nectar_model::config::ModelConfig;
use nectar_model::Suite;
use nectar_net::{mem::run_pair, Channel, Role};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Instant;

pub struct Args {
    pub dir: PathBuf,
    pub sentences: PathBuf,
    pub suite: Suite,
    /// Also run the two-party protocol on every sentence.
    pub secure: bool,
    /// Classifier logits instead of the sentence embedding.
    pub classify: bool,
}

/// Distance of one output vector from the f32 reference.
#[derive(Clone, Copy, Debug)]
struct Dist {
    cosine: f64,
    max_abs: f64,
}

fn dist(got: &[f32], want: &[f32]) -> Dist {
    let max_abs = got.iter().zip(want).map(|(a, b)| (a - b).abs() as f64).fold(0.0, f64::max);
    Dist { cosine: nectar_model::cosine(got, want) as f64, max_abs }
}

fn vector(o: Output) -> Result<Vec<f32>, String> {
    match o {
        Output::Embedding(v) | Output::Logits(v) => Ok(v),
        other => Err(format!("expected an output vector, got {other:?}")),
    }
}

/// Running min / mean / max of one column over the sentences.
#[derive(Default, Clone, Copy)]
struct Col {
    n: usize,
    min_cos: f64,
    sum_cos: f64,
    max_abs: f64,
}

impl Col {
    fn add(&mut self, d: Dist) {
        if self.n == 0 {
            self.min_cos = d.cosine;
        }
        self.n += 1;
        self.min_cos = self.min_cos.min(d.cosine);
        self.sum_cos += d.cosine;
        self.max_abs = self.max_abs.max(d.max_abs);
    }
    fn json(&self) -> Value {
        json!({ "min_cosine": self.min_cos, "mean_cosine": self.sum_cos / self.n.max(1) as f64, "max_abs_error": self.max_abs })
    }
}

/// The twin's output on `ids` with the operators `exact` evaluated exactly.
fn twin(cfg: &ModelConfig, w: &dyn WeightSource, suite: &Suite, q: &Query, exact: &[&str]) -> Result<(Vec<f32>, Vec<String>), String> {
    let m = SecureModel::new(cfg, Some(w)).map_err(|e| e.to_string())?;
    let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, suite).and_then(|e| e.with_exact(exact)).map_err(|e| e.to_string())?;
    let out = vector(m.run(&mut e, q).map_err(|e| e.to_string())?)?;
    let ops = e.profile().ops.iter().map(|r| r.op.clone()).collect();
    Ok((out, ops))
}

/// Both parties in this process, one session, every query in turn: the client's outputs.
fn secure_all(cfg: &ModelConfig, w: &dyn WeightSource, suite: &Suite, queries: &[Query]) -> Result<Vec<Vec<f32>>, String> {
    let (srv, cli) = run_pair(
        |ch| -> Result<(), String> {
            let ch: &mut dyn Channel = ch;
            let mut e = SecureEngine::setup(ch, Role::Server, suite, Prg::from_entropy()).map_err(|e| e.to_string())?;
            let m = SecureModel::new(cfg, Some(w)).map_err(|e| e.to_string())?;
            for q in queries {
                let q = Query { ids: None, ..q.clone() };
                m.run(&mut e, &q).map_err(|e| format!("server: {e}"))?;
            }
            Ok(())
        },
        |ch| -> Result<Vec<Vec<f32>>, String> {
            let ch: &mut dyn Channel = ch;
            let mut e = SecureEngine::setup(ch, Role::Client, suite, Prg::from_entropy()).map_err(|e| e.to_string())?;
            let m = SecureModel::new(cfg, None).map_err(|e| e.to_string())?;
            let mut outs = Vec::with_capacity(queries.len());
            for (i, q) in queries.iter().enumerate() {
                let t0 = Instant::now();
                outs.push(vector(m.run(&mut e, q).map_err(|e| format!("client: {e}"))?)?);
                eprintln!("  secure {}/{}: {} tokens, {:.1} s", i + 1, queries.len(), q.len, t0.elapsed().as_secs_f64());
            }
            Ok(outs)
        },
    );
    srv?;
    cli
}

pub fn run(a: &Args, json_out: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(&a.sentences).map_err(|e| format!("{}: {e}", a.sentences.display()))?;
    let sentences: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if sentences.is_empty() {
        return Err(format!("{}: no sentences (one per line)", a.sentences.display()));
    }
    let server = ServerModel::load(&a.dir)?;
    let ModelConfig::Bert(_) = server.config else {
        return Err("nectar accuracy compares output vectors of BERT-family models (embeddings, or logits with \
                    --classify); generation is compared token by token by `nectar demo`"
            .into());
    };
    let client = ClientModel::load(&a.dir)?;
    let reference_model = nectar_model::Model::load(&a.dir).map_err(|e| e.to_string())?;
    let task = if a.classify { Task::Classify } else { Task::Embed };
    let w: &dyn WeightSource = server.weights.as_ref();
    let inputs = crate::private::tokenize(client.tokenizer.as_ref(), &sentences.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
    let queries: Vec<Query> = inputs
        .iter()
        .map(|i| match i {
            Input::Ids(ids) => Ok(Query { task: task.clone(), ids: Some(ids.clone()), len: ids.len() }),
            Input::Pixels(_) => Err("text models only".to_string()),
        })
        .collect::<Result<_, _>>()?;
    let kind = if a.classify { Output::Logits(Vec::new()) } else { Output::Embedding(Vec::new()) };

    let t0 = Instant::now();
    let secure = if a.secure {
        eprintln!("secure run: {} sentences, one session ({})", queries.len(), a.suite.label());
        Some(secure_all(&server.config, w, &a.suite, &queries)?)
    } else {
        None
    };
    let secure_seconds = t0.elapsed().as_secs_f64();

    let (mut all, mut floor, mut sec_plain, mut sec_twin) = (Col::default(), Col::default(), Col::default(), Col::default());
    let mut only: Vec<(String, Col)> = Vec::new();
    let mut lines = Vec::new();
    for (i, (s, (input, q))) in sentences.iter().zip(inputs.iter().zip(&queries)).enumerate() {
        let plain = vector(reference(reference_model.network(), input, &kind)?)?;
        let (tw, ops) = twin(&server.config, w, &a.suite, q, &[])?;
        // The attributable operators this model runs, in order of first use.
        let mut present: Vec<&str> = Vec::new();
        for op in EXACT_OPS {
            if ops.iter().any(|o| o == op) {
                present.push(op);
            }
        }
        let d_all = dist(&tw, &plain);
        all.add(d_all);
        let (fl, _) = twin(&server.config, w, &a.suite, q, &present)?;
        let d_floor = dist(&fl, &plain);
        floor.add(d_floor);
        let mut per_op = serde_json::Map::new();
        for op in &present {
            let others: Vec<&str> = present.iter().copied().filter(|o| o != op).collect();
            let (v, _) = twin(&server.config, w, &a.suite, q, &others)?;
            let d = dist(&v, &plain);
            match only.iter_mut().find(|(n, _)| n == op) {
                Some((_, c)) => c.add(d),
                None => {
                    let mut c = Col::default();
                    c.add(d);
                    only.push((op.to_string(), c));
                }
            }
            per_op.insert(op.to_string(), json!({ "cosine": d.cosine, "max_abs_error": d.max_abs }));
        }
        let mut line = json!({
            "bench": "accuracy",
            "suite": a.suite.label(),
            "sentence": i,
            "text": s,
            "tokens": q.len,
            "twin": { "cosine": d_all.cosine, "max_abs_error": d_all.max_abs },
            "format_only": { "cosine": d_floor.cosine, "max_abs_error": d_floor.max_abs },
            "only": per_op,
        });
        if let Some(sec) = &secure {
            let (dp, dt) = (dist(&sec[i], &plain), dist(&sec[i], &tw));
            sec_plain.add(dp);
            sec_twin.add(dt);
            line["secure"] = json!({ "cosine": dp.cosine, "max_abs_error": dp.max_abs });
            line["secure_vs_twin"] = json!({ "cosine": dt.cosine, "max_abs_error": dt.max_abs });
        }
        if json_out {
            crate::outln!("{line}");
        } else {
            eprintln!("[{i:2}] {:3} tokens  twin {:.7}{}  {s:.60}", q.len, d_all.cosine,
                line.get("secure").map(|v| format!("  secure {:.7}", v["cosine"].as_f64().unwrap_or(f64::NAN))).unwrap_or_default());
        }
        lines.push(line);
    }
    let mut summary = json!({
        "bench": "accuracy-summary",
        "suite": a.suite.label(),
        "model": a.dir.display().to_string(),
        "sentences": sentences.len(),
        "max_tokens": queries.iter().map(|q| q.len).max().unwrap_or(0),
        "output": if a.classify { "logits" } else { "embedding" },
        "format": { "l": FixedPoint::BUMBLEBEE.l(), "f": FixedPoint::BUMBLEBEE.f() },
        "twin": all.json(),
        "format_only": floor.json(),
        "only": only.iter().map(|(n, c)| (n.clone(), c.json())).collect::<serde_json::Map<_, _>>(),
    });
    if secure.is_some() {
        summary["secure"] = sec_plain.json();
        summary["secure_vs_twin"] = sec_twin.json();
        summary["secure_seconds"] = json!(secure_seconds);
    }
    if json_out {
        crate::outln!("{summary}");
        return Ok(());
    }
    crate::outln!(
        "accuracy of suite {} on {} sentences (up to {} tokens), {} vs the f32 reference",
        a.suite.label(),
        sentences.len(),
        summary["max_tokens"],
        summary["output"].as_str().unwrap_or("")
    );
    crate::outln!("{:<40} {:>12} {:>12} {:>12}", "", "min cosine", "mean cosine", "max |err|");
    let row = |name: &str, c: &Col| {
        crate::outln!("{:<40} {:>12.7} {:>12.7} {:>12.2e}", name, c.min_cos, c.sum_cos / c.n.max(1) as f64, c.max_abs);
    };
    row("twin (all approximations)", &all);
    for (n, c) in &only {
        row(&format!("twin, only {n} approximated"), c);
    }
    row("twin, none approximated (format only)", &floor);
    if secure.is_some() {
        row("secure vs f32", &sec_plain);
        row("secure vs twin (protocol error)", &sec_twin);
    }
    Ok(())
}
