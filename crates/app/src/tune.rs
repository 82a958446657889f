//! `nectar tune --net LINK --model DIR --tokens N` (issue 48 item 3): the suite with the lowest
//! predicted time on a link, chosen per operator from measured costs.
//!
//! 1. **Calibration** (once per model, token count and candidate list; stored as JSON under
//!    `tune/` of nectar's cache, reused until `--recalibrate`): each candidate suite runs one
//!    inference on this machine with both parties in this process and no simulated link, so
//!    that every operator row of the profile has its computation seconds, its bytes (both
//!    directions) and its flights (both parties' rounds).
//!    The run is traced ([`nectar_net::Traced`]): every frame's size and the computation before
//!    it on its party, and where each operator's calls sit among the client's frames.
//! 2. **Prediction**: both parties' traces are replayed on the link ([`nectar_net::replay`]:
//!    each direction a pipe of bandwidth `B`, each frame readable one one-way latency `L` after
//!    it left, as [`nectar_net::Simulated`] runs them), and a row costs the client's replayed
//!    clock over its calls (a row without messages: its measured seconds). A duplex step thus
//!    pays one latency and the larger of its two transfers, and one party's computation overlaps
//!    the other's waiting, where the sum `seconds + flights·L + bytes·8/B` this tuner used before
//!    counted both parties' sends and computation one after the other (it over-predicted the
//!    duplex default at `blb-wan3` by 23 %: 82.7 s predicted, 63.3 s measured). The
//!    operators are grouped by the suite fields that decide them ([`GROUPS`]: a LayerNorm by
//!    `norm` and `rsqrt`, a softmax by `softmax`, `exp` and `reciprocal`, …); for each group the
//!    candidate whose rows cost least is taken, the rows no group covers (embedding, pooling)
//!    come from the base suite. Every candidate keeps the base's session-wide fields (`ot`,
//!    `compare`, `mul`, `act-ring`, …) so that one group's choice does not change another's
//!    costs.
//! 3. **Check**: the composed suite runs once over the simulated link (server party in a child
//!    process, as `bench suites`), and its measured seconds are printed next to the prediction.
//!    The suite string is stored for the link, and `--suite tuned:LINK` resolves to it.

use crate::bench_suites::{measure, Args as SuitesArgs, Measured};
use crate::tuned::{store_tuned, tune_dir, write_json};
use nectar_model::secure::Profile;
use nectar_model::Suite;
use nectar_net::trace::{critical_flights, without_computation, FLIGHT_COUNTER};
use nectar_net::{replay, Event, LinkModel};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A group of suite fields chosen together, and the profile rows they decide.
pub struct Group {
    pub name: &'static str,
    pub fields: &'static [&'static str],
    pub covers: fn(&str) -> bool,
}

/// The operator groups of the choice (AGREEMENT only in that both parties run the suite the
/// tuner prints).
pub const GROUPS: &[Group] = &[
    Group { name: "norm", fields: &["norm", "rsqrt"], covers: |op| op == "layernorm" || op == "rmsnorm" },
    Group { name: "softmax", fields: &["softmax", "exp", "reciprocal"], covers: |op| op == "softmax" },
    Group { name: "gelu", fields: &["gelu"], covers: |op| op == "gelu" },
    Group { name: "silu", fields: &["silu"], covers: |op| op == "silu" },
    Group {
        name: "linear",
        fields: &["matmul", "matmul-shared", "olt-ring", "olt-cost"],
        covers: |op| op.starts_with("linear") || op.starts_with("matmul"),
    },
];

/// The base suite and the default candidates: the presets' choices for the grouped fields, on
/// the base's session-wide fields (BumbleBee's and East's approximations, ROTL's lookup tables,
/// P4 GeLU, Nimbus's fitted GeLU and exp, the grid row max with fewer rounds, and the grid row
/// max with the reciprocal and rsqrt that take no Newton step, `pwl`). BLB's CKKS
/// matmuls are left out by default (minutes per calibration run on 2 cores); `--candidates` adds
/// any suite.
pub const BASE: &str = "nectar";
pub const CANDIDATES: &[&str] = &[
    "nectar",
    "nectar+norm=bumblebee+softmax=bumblebee+exp=taylor+gelu=seg4+olt-ring=full+olt-cost=artifact",
    "nectar+norm=east-eq9+rsqrt=newton-determine+softmax=bumblebee+exp=oppe+reciprocal=newton-determine+gelu=oppe+silu=oppe",
    "nectar+softmax=lut+exp=lut+reciprocal=lut+gelu=lut+silu=lut",
    "nectar+gelu=p4",
    "nectar+gelu=nimbus+exp=nimbus",
    "nectar+softmax=grid",
    "nectar+softmax=grid+reciprocal=pwl+rsqrt=pwl",
];

/// One profile row of a calibration run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub op: String,
    pub protocol: String,
    /// Computation (and in-process copying) seconds, no link.
    pub seconds: f64,
    /// Bytes both directions.
    pub bytes: u64,
    /// Flights: both parties' rounds.
    pub flights: u64,
    /// Its calls' places among the client's frames ([`nectar_model::secure::profile::OpRecord::spans`]).
    #[serde(default)]
    pub spans: Vec<(u64, u64)>,
}

/// One candidate's calibration run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Calibrated {
    /// The candidate as given (what `Suite::parse` reads back).
    pub spec: String,
    /// Its protocols, field → protocol.
    pub protocols: serde_json::Value,
    pub rows: Vec<Row>,
    pub seconds: f64,
    /// Both parties' message traces from the channel's creation.
    #[serde(default)]
    pub client_events: Vec<Event>,
    #[serde(default)]
    pub server_events: Vec<Event>,
}

/// The stored calibration.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    pub version: u32,
    /// What it was measured on: the model directory, tokens, candidates and this binary's
    /// version (a calibration is reused only when all match).
    pub model: String,
    pub tokens: usize,
    pub candidates: Vec<String>,
    pub nectar_version: String,
    pub nproc: usize,
    pub runs: Vec<Calibrated>,
}

/// Version 2: with message traces (version 1's additive costs cannot be replayed).
const VERSION: u32 = 2;

/// Rows of one party pair: the client's profile rows with the server's rounds added by index
/// (both parties record the same operators in the same order).
fn rows_of(client: &Profile, server: &Profile) -> Result<Vec<Row>, String> {
    if client.ops.len() != server.ops.len() {
        return Err(format!("profiles of {} and {} rows", client.ops.len(), server.ops.len()));
    }
    client
        .ops
        .iter()
        .zip(&server.ops)
        .map(|(c, s)| {
            if c.op != s.op {
                return Err(format!("profile rows {} and {} differ", c.op, s.op));
            }
            Ok(Row {
                op: c.op.clone(),
                protocol: c.protocol.clone(),
                seconds: c.seconds,
                bytes: c.bytes_sent + c.bytes_recv,
                flights: c.rounds + s.rounds,
                spans: c.spans.clone(),
            })
        })
        .collect()
}

/// Predicted seconds of each row of `c` on `link`: the client's clock over the row's calls
/// when both traces are replayed there; a row without messages costs its measured seconds.
pub fn row_costs(c: &Calibrated, link: &LinkModel) -> Result<Vec<f64>, String> {
    let ends = replay_of(c, link, false)?;
    over_spans(c, &ends, |r| r.seconds)
}

/// What the link alone costs each row of `c`: per row the seconds of its calls when both traces
/// are replayed on `link` without their computation, and the one-way latencies on its critical
/// path (the same replay at unlimited bandwidth and a latency of one second). The floor a row
/// keeps on that link however fast this machine computes.
pub fn link_costs(c: &Calibrated, link: &LinkModel) -> Result<Vec<(f64, u64)>, String> {
    let secs = over_spans(c, &replay_of(c, link, true)?, |_| 0.0)?;
    let flights = over_spans(c, &replay_of(c, &FLIGHT_COUNTER, true)?, |_| 0.0)?;
    Ok(secs.into_iter().zip(flights).map(|(s, f)| (s, f.round() as u64)).collect())
}

/// The client's replayed clock after each of its events (`bare`: the computation left out).
fn replay_of(c: &Calibrated, link: &LinkModel, bare: bool) -> Result<Vec<f64>, String> {
    if c.client_events.is_empty() || c.server_events.is_empty() {
        return Err(format!("the calibration of {} holds no message traces (--recalibrate)", c.spec));
    }
    let r = if bare {
        replay(&without_computation(&c.client_events), &without_computation(&c.server_events), link)
    } else {
        replay(&c.client_events, &c.server_events, link)
    };
    r.map_err(|e| format!("{}: {e}", c.spec))
}

/// Per row of `c`, the clock `ends` summed over its calls' spans; `idle` prices a row without
/// messages.
fn over_spans(c: &Calibrated, ends: &[f64], idle: impl Fn(&Row) -> f64) -> Result<Vec<f64>, String> {
    c.rows
        .iter()
        .map(|r| {
            if r.spans.iter().all(|&(a, b)| a == b) {
                return Ok(idle(r));
            }
            r.spans
                .iter()
                .map(|&(a, b)| {
                    let (a, b) = (a as usize, b as usize);
                    if a > b || b > ends.len() {
                        return Err(format!("{}: row {} spans frames {a}..{b} of a trace of {}", c.spec, r.op, ends.len()));
                    }
                    Ok(match (a, b) {
                        _ if a == b => 0.0,
                        (0, _) => ends[b - 1],
                        _ => ends[b - 1] - ends[a - 1],
                    })
                })
                .sum()
        })
        .collect()
}

/// The composed suite and its prediction.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The suite string (`BASE+field=protocol…`).
    pub spec: String,
    pub predicted: f64,
    /// Per group: (group, the chosen settings `field=protocol …`, its predicted seconds).
    pub picks: Vec<(&'static str, String, f64)>,
}

/// The field → protocol map of a calibrated run.
fn field(c: &Calibrated, f: &str) -> Option<String> {
    c.protocols.get(f).and_then(|v| v.as_str()).map(str::to_string)
}

/// Per group the setting with the lowest predicted time on `link`; candidates with the same
/// setting of a group are one option, costed by the mean of their runs (less noise); ties go
/// to the earlier setting, the base's first. The rows no group covers come from the base run
/// (`runs[0]`).
pub fn choose(cal: &Calibration, link: &LinkModel) -> Result<Choice, String> {
    let base = cal.runs.first().ok_or("the calibration holds no run")?;
    let costs: Vec<Vec<f64>> = cal.runs.iter().map(|c| row_costs(c, link)).collect::<Result<_, _>>()?;
    // Seconds of the rows of run `i` that `keep` selects.
    let sum = |i: usize, keep: &dyn Fn(&str) -> bool| -> f64 {
        cal.runs[i].rows.iter().zip(&costs[i]).filter(|(r, _)| keep(&r.op)).map(|(_, s)| s).sum()
    };
    let mut spec = cal.candidates.first().cloned().unwrap_or_else(|| BASE.to_string());
    let mut predicted = sum(0, &|op| !GROUPS.iter().any(|g| (g.covers)(op)));
    let mut picks = Vec::new();
    for g in GROUPS {
        if !base.rows.iter().any(|r| (g.covers)(&r.op)) {
            continue;
        }
        // settings of this group, in order of first appearance: (values, costs)
        let mut options: Vec<(Vec<Option<String>>, Vec<f64>)> = Vec::new();
        for (i, c) in cal.runs.iter().enumerate() {
            let key: Vec<Option<String>> = g.fields.iter().map(|f| field(c, f)).collect();
            let cost = sum(i, &|op| (g.covers)(op));
            match options.iter_mut().find(|(k, _)| *k == key) {
                Some((_, costs)) => costs.push(cost),
                None => options.push((key, vec![cost])),
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let (key, secs) = options
            .iter()
            .map(|(k, v)| (k, mean(v)))
            .fold((None, f64::INFINITY), |acc, (k, s)| if s < acc.1 { (Some(k), s) } else { acc });
        let key = key.ok_or("no candidate covers a group")?;
        predicted += secs;
        let mut words = Vec::new();
        for (f, want) in g.fields.iter().zip(key) {
            let Some(want) = want else { continue };
            words.push(format!("{f}={want}"));
            if field(base, f).as_deref() != Some(want.as_str()) {
                spec.push_str(&format!("+{f}={want}"));
            }
        }
        picks.push((g.name, words.join(" "), secs));
    }
    Ok(Choice { spec, predicted, picks })
}

/// The calibration file of a model directory and token count.
fn calibration_path(dir: &Path, tokens: usize) -> PathBuf {
    let name: String = dir
        .file_name()
        .map(|n| n.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect())
        .unwrap_or_else(|| "model".into());
    let digest = fnv64(&dir.display().to_string());
    tune_dir().join(format!("calibration-{name}-{digest:016x}-{tokens}.json"))
}

/// A stable 64-bit FNV-1a hash of `s` (names the calibration of a model path).
fn fnv64(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}


/// Command-line arguments of `nectar tune`.
pub struct Args {
    pub dir: PathBuf,
    pub net: String,
    pub tokens: usize,
    /// Candidate suites (default [`CANDIDATES`]); the first is the base.
    pub candidates: Vec<String>,
    pub recalibrate: bool,
    /// Skip the check run over the link.
    pub no_run: bool,
    pub json: bool,
}

fn suites_args<'a>(a: &'a Args, net: &'a str, in_process: bool) -> SuitesArgs<'a> {
    SuitesArgs {
        dir: a.dir.clone(),
        suites: "",
        tokens: a.tokens,
        text: None,
        net,
        ops: &[],
        in_process,
        memory_budget: nectar_model::secure::secure_engine::DEFAULT_PREFETCH_BUDGET,
        repeat: 1,
        batch: 1,
        trace: in_process,
    }
}

/// Loads the stored calibration if it matches, else measures and stores it.
fn calibration(a: &Args) -> Result<Calibration, String> {
    let path = calibration_path(&a.dir, a.tokens);
    let nproc = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    if !a.recalibrate {
        if let Some(c) = std::fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str::<Calibration>(&t).ok()) {
            if c.version == VERSION
                && c.model == a.dir.display().to_string()
                && c.tokens == a.tokens
                && c.candidates == a.candidates
                && c.nectar_version == env!("CARGO_PKG_VERSION")
                && c.nproc == nproc
            {
                eprintln!("calibration: {} (reused; --recalibrate to measure again)", path.display());
                return Ok(c);
            }
        }
    }
    let suites: Vec<Suite> = a
        .candidates
        .iter()
        .map(|spec| {
            let s = crate::suites::resolve(Some(spec), None, &[], BASE)?;
            s.validate().map_err(|e| format!("candidate {spec}: {e}"))?;
            Ok(s)
        })
        .collect::<Result<_, String>>()?;
    // Every candidate must keep the base's fields outside the groups (its session-wide ones):
    // the choice composes groups measured under different candidates.
    let (base_map, grouped): (serde_json::Value, Vec<&str>) = (suites[0].json_map(), GROUPS.iter().flat_map(|g| g.fields.iter().copied()).collect());
    for (s, spec) in suites.iter().zip(&a.candidates).skip(1) {
        let m = s.json_map();
        if let (Some(mo), Some(bo)) = (m.as_object(), base_map.as_object()) {
            if let Some((f, v)) = mo.iter().find(|(f, v)| !grouped.contains(&f.as_str()) && bo.get(*f) != Some(*v)) {
                return Err(format!(
                    "candidate {spec} changes {f} ({v} vs the base's {}): candidates may differ from the first only in {}",
                    bo.get(f).cloned().unwrap_or_default(),
                    grouped.join(", ")
                ));
            }
        }
    }
    eprintln!("calibration: {} candidate suites, one inference each, no link, both parties in this process ...", suites.len());
    let runs: Vec<Measured> = measure(&suites_args(a, "none", true), &suites)?;
    let runs = runs
        .iter()
        .zip(&a.candidates)
        .map(|(m, spec)| {
            let server = m.server.as_ref().ok_or("calibration without the server's profile")?;
            Ok(Calibrated {
                spec: spec.clone(),
                protocols: m.suite.json_map(),
                rows: rows_of(&m.client, server)?,
                seconds: m.seconds,
                client_events: m.client_events.clone(),
                server_events: m.server_events.clone(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let c = Calibration {
        version: VERSION,
        model: a.dir.display().to_string(),
        tokens: a.tokens,
        candidates: a.candidates.clone(),
        nectar_version: env!("CARGO_PKG_VERSION").to_string(),
        nproc,
        runs,
    };
    write_json(&path, &c)?;
    eprintln!("calibration: stored in {}", path.display());
    Ok(c)
}

/// `nectar tune`.
pub fn run(a: &Args) -> Result<(), String> {
    let link = LinkModel::parse(&a.net)
        .map_err(|e| format!("--net: {e}"))?
        .ok_or("--net none: tuning needs a link (a preset or MBPS/RTT_MS)")?;
    if a.candidates.is_empty() {
        return Err("--candidates names no suite".into());
    }
    let cal = calibration(a)?;
    let choice = choose(&cal, &link)?;
    let suite = crate::suites::resolve(Some(&choice.spec), None, &[], BASE)?;
    suite.validate().map_err(|e| format!("tuned suite {}: {e}", choice.spec))?;
    let base = &cal.runs[0];
    let base_costs = row_costs(base, &link)?;
    let base_pred: f64 = base_costs.iter().sum();
    // every candidate's messages alone on this link (per row), and its critical flights: the
    // floor no choice among them goes under; the base's rows are the first
    let links = cal.runs.iter().map(|c| link_costs(c, &link)).collect::<Result<Vec<_>, String>>()?;
    let floors = cal
        .runs
        .iter()
        .zip(&links)
        .map(|(c, l)| Ok((c.spec.as_str(), l.iter().map(|(s, _)| s).sum::<f64>(), critical_flights(&c.client_events, &c.server_events)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let (base_link, (_, base_link_seconds, base_flights)) = (&links[0], floors[0]);
    let measured = if a.no_run {
        None
    } else {
        eprintln!("running {} once over {} ...", choice.spec, a.net);
        let m = measure(&suites_args(a, &a.net, false), &[suite])?;
        m.into_iter().next()
    };
    store_tuned(&a.net, &choice.spec, choice.predicted, measured.as_ref().map(|m| m.seconds), &a.dir, a.tokens)?;
    if a.json {
        let o = serde_json::json!({
            "bench": "tune",
            "net": a.net,
            "link": link.spec(),
            "model": a.dir.display().to_string(),
            "tokens": a.tokens,
            "suite": choice.spec,
            "predicted_seconds": choice.predicted,
            "base_predicted_seconds": base_pred,
            "base_critical_flights": base_flights,
            "base_link_seconds": base_link_seconds,
            "base_rows": base.rows.iter().zip(&base_costs).zip(base_link).map(|((r, p), (l, f))| serde_json::json!({
                "op": r.op, "protocol": r.protocol, "calls": r.spans.len(), "compute_seconds": r.seconds,
                "predicted_seconds": p, "link_seconds": l, "critical_flights": f,
            })).collect::<Vec<_>>(),
            "candidates_link": floors.iter().map(|(spec, s, f)| serde_json::json!({ "suite": spec, "link_seconds": s, "critical_flights": f })).collect::<Vec<_>>(),
            "prediction": "replay of the calibration's message traces",
            "picks": choice.picks.iter().map(|(g, set, s)| serde_json::json!({ "group": g, "protocols": set, "predicted_seconds": s })).collect::<Vec<_>>(),
            "measured_seconds": measured.as_ref().map(|m| m.seconds),
            "measured_flights": measured.as_ref().map(|m| m.flights),
            "measured_bytes": measured.as_ref().map(|m| m.bytes),
            "agreement_vs_plaintext": measured.as_ref().and_then(|m| m.score),
            "line": measured.as_ref().map(|m| m.line.clone()),
        });
        crate::outln!("{o}");
        return Ok(());
    }
    crate::outln!("link {} ({}; one-way latency {:.1} ms)", a.net, link.spec(), link.latency.as_secs_f64() * 1e3);
    for (g, set, s) in &choice.picks {
        crate::outln!("  {g:<8} {s:>8.2} s  {set}");
    }
    crate::outln!("suite      {}", choice.spec);
    crate::outln!("predicted  {:.2} s (the base {BASE} alone: {:.2} s, {base_flights} one-way latencies on its critical path)", choice.predicted, base_pred);
    crate::outln!("floor      {base_link_seconds:.2} s: the base's messages on this link with no computation");
    if let Some(m) = &measured {
        let err = (m.seconds - choice.predicted) / choice.predicted * 100.0;
        crate::outln!(
            "measured   {:.2} s ({err:+.1} % vs predicted), {} flights, {:.1} MB, agreement {}",
            m.seconds,
            m.flights,
            m.bytes as f64 / 1e6,
            m.score.map_or("-".into(), |s| format!("{s:.6}"))
        );
    }
    crate::outln!("use it: --suite tuned:{}", a.net);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A calibrated run from rows `(op, round trips, bytes per frame, computation ms per frame)`:
    /// each round trip the client's frame and the server's answer, each after its computation.
    fn run_of(spec: &str, protocols: serde_json::Value, rows: &[(&str, u64, u64, u64)]) -> Calibrated {
        let (mut c, mut s, mut out) = (Vec::new(), Vec::new(), Vec::new());
        for &(op, trips, bytes, ms) in rows {
            let first = c.len() as u64;
            for _ in 0..trips {
                c.push(Event { send: true, bytes, gap_ns: ms * 1_000_000 });
                s.push(Event { send: false, bytes, gap_ns: 0 });
                s.push(Event { send: true, bytes, gap_ns: ms * 1_000_000 });
                c.push(Event { send: false, bytes, gap_ns: 0 });
            }
            let spans = vec![(first, c.len() as u64)];
            out.push(Row { op: op.into(), protocol: String::new(), seconds: 0.0, bytes: 2 * trips * bytes, flights: 2 * trips, spans });
        }
        Calibrated { spec: spec.into(), protocols, rows: out, seconds: 0.0, client_events: c, server_events: s }
    }

    /// Seconds of `n` round trips of `bytes`-byte frames after `ms` of computation each.
    fn trips(n: u64, bytes: u64, ms: u64, link: &LinkModel) -> f64 {
        let tx = (bytes + nectar_net::FRAME_HEADER as u64) as f64 * 8.0 / link.bandwidth_bps;
        n as f64 * 2.0 * (ms as f64 / 1e3 + tx + link.latency.as_secs_f64())
    }

    /// The choice follows the link: on a fast link the cheaper computation wins, on a slow one
    /// the fewer flights; unchanged fields are not repeated in the suite string; the
    /// prediction is the replayed traces' time.
    #[test]
    fn choice_follows_the_link() -> Result<(), String> {
        let base = run_of(
            "nectar",
            serde_json::json!({ "softmax": "coarse", "exp": "taylor4", "reciprocal": "newton", "gelu": "sq8" }),
            &[("embed", 1, 1000, 1), ("softmax", 200, 25_000, 2), ("gelu", 50, 100_000, 20)],
        );
        // fewer flights, more computation and bytes
        let lut = run_of(
            "nectar+softmax=lut+exp=lut+reciprocal=lut",
            serde_json::json!({ "softmax": "lut", "exp": "lut", "reciprocal": "lut", "gelu": "sq8" }),
            &[("embed", 1, 1000, 1), ("softmax", 50, 500_000, 30), ("gelu", 50, 100_000, 20)],
        );
        let cal = Calibration {
            version: VERSION,
            model: "m".into(),
            tokens: 8,
            candidates: vec![base.spec.clone(), lut.spec.clone()],
            nectar_version: "0".into(),
            nproc: 2,
            runs: vec![base, lut],
        };
        let lan = LinkModel::new(1000.0, 0.5);
        let fast = choose(&cal, &lan)?;
        assert_eq!(fast.spec, "nectar");
        let want = trips(1, 1000, 1, &lan) + trips(200, 25_000, 2, &lan) + trips(50, 100_000, 20, &lan);
        assert!((fast.predicted - want).abs() < 1e-9, "{} vs {want}", fast.predicted);
        let wan3 = LinkModel::from_rtt(100.0, 80.0);
        let slow = choose(&cal, &wan3)?;
        assert_eq!(slow.spec, "nectar+softmax=lut+exp=lut+reciprocal=lut");
        let want = trips(1, 1000, 1, &wan3) + trips(50, 500_000, 30, &wan3) + trips(50, 100_000, 20, &wan3);
        assert!((slow.predicted - want).abs() < 1e-9, "{} vs {want}", slow.predicted);
        // the link alone: each row's round trips without their computation
        let floor = link_costs(&cal.runs[0], &wan3)?;
        let want = [trips(1, 1000, 0, &wan3), trips(200, 25_000, 0, &wan3), trips(50, 100_000, 0, &wan3)];
        for ((s, f), (w, n)) in floor.iter().zip(want.iter().zip([2, 400, 100])) {
            assert!((s - w).abs() < 1e-9 && *f == n, "{s} s, {f} flights vs {w} s, {n}");
        }
        // a calibration without traces is refused, not priced at zero
        let mut bare = cal.clone();
        bare.runs[1].client_events.clear();
        assert!(choose(&bare, &wan3).unwrap_err().contains("no message traces"));
        Ok(())
    }
}
