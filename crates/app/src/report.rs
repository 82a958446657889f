//! The benchmark output convention (issue 2, item 6).
//!
//! `nectar bench ... --json` prints one JSON object per line with at least `bench`, `variant`,
//! `params` (object), `seconds`, `bytes_sent` / `bytes_recv` (this party), `bytes_total` (both
//! parties), `rounds`, and `peak_rss_bytes`; benches add their own fields under `extra` keys
//! flattened into the object. Without `--json` the same lines are printed as a table.

use serde::Serialize;
use serde_json::{Map, Value};

/// One benchmark measurement.
#[derive(Clone, Debug, Serialize)]
pub struct BenchLine {
    pub bench: String,
    pub variant: String,
    pub params: Map<String, Value>,
    pub seconds: f64,
    pub bytes_sent: u64,
    pub bytes_recv: u64,
    pub bytes_total: u64,
    pub rounds: u64,
    /// Peak resident set size of this process (both parties when they share it).
    pub peak_rss_bytes: u64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl BenchLine {
    pub fn new(bench: &str, variant: &str) -> Self {
        BenchLine {
            bench: bench.into(),
            variant: variant.into(),
            params: Map::new(),
            seconds: 0.0,
            bytes_sent: 0,
            bytes_recv: 0,
            bytes_total: 0,
            rounds: 0,
            peak_rss_bytes: 0,
            extra: Map::new(),
        }
    }

    pub fn param(mut self, k: &str, v: impl Into<Value>) -> Self {
        self.params.insert(k.into(), v.into());
        self
    }

    pub fn extra(mut self, k: &str, v: impl Into<Value>) -> Self {
        self.extra.insert(k.into(), v.into());
        self
    }

    /// Fill the traffic fields from one party's stats (`rounds` = flights of both parties).
    pub fn traffic(mut self, mine: nectar_net::Stats, peer: nectar_net::Stats) -> Self {
        self.bytes_sent = mine.bytes_sent;
        self.bytes_recv = mine.bytes_recv;
        self.bytes_total = mine.bytes_sent + peer.bytes_sent;
        self.rounds = mine.rounds + peer.rounds;
        self
    }

    pub fn seconds(mut self, s: f64) -> Self {
        self.seconds = s;
        self.peak_rss_bytes = peak_rss_bytes();
        self
    }
}

/// Peak resident set size of this process (`VmHWM` on Linux; 0 where unknown).
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()).map(|kb| kb * 1024)
            })
        })
        .unwrap_or(0)
}

/// Print lines as JSON (one object per line) or as a table for people.
pub fn print_lines(lines: &[BenchLine], json: bool) {
    if json {
        for l in lines {
            match serde_json::to_string(l) {
                Ok(s) => outln!("{s}"),
                Err(e) => eprintln!("error: cannot serialise bench line: {e}"),
            }
        }
        return;
    }
    outln!(
        "{:<10} {:<22} {:>10} {:>14} {:>8} {:>10}  {}",
        "bench", "variant", "seconds", "MB total", "rounds", "RSS MB", "params / results"
    );
    for l in lines {
        let mut rest: Vec<String> = l.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        rest.extend(l.extra.iter().map(|(k, v)| format!("{k}={}", fmt_val(v))));
        outln!(
            "{:<10} {:<22} {:>10.4} {:>14.3} {:>8} {:>10.1}  {}",
            l.bench,
            l.variant,
            l.seconds,
            l.bytes_total as f64 / 1e6,
            l.rounds,
            l.peak_rss_bytes as f64 / 1e6,
            rest.join(" ")
        );
    }
}

fn fmt_val(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if v.is_f64() => format!("{x:.4}"),
        _ => v.to_string(),
    }
}
