//! Per-operator cost breakdown of a run, like BumbleBee Table IV: for each operator (`embed`,
//! `linear.qkv`, `matmul.qk`, `softmax`, `gelu`, `layernorm`, ...) the number of calls, the
//! seconds spent, the bytes sent and received (deltas of the channel counters) and the rounds.
//!
//! Records are taken by [`crate::secure::engine::timed`] around top-level operators only
//! (nested calls are part of their caller's record), so the rows add up to the run's totals.
//! Each row names the protocol that ran (`"gelu"` → `"p4"`), so runs of different suites can
//! be told apart and compared.

use nectar_net::Stats;
use serde::Serialize;

/// Aggregated cost of one operator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct OpRecord {
    pub op: String,
    /// The protocol that computed it (from the suite; `local`, `reveal` for local steps).
    #[serde(default)]
    pub protocol: String,
    pub calls: u64,
    pub seconds: f64,
    pub bytes_sent: u64,
    pub bytes_recv: u64,
    pub rounds: u64,
}

/// The breakdown of a run (operators in order of first use).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Profile {
    pub ops: Vec<OpRecord>,
    #[serde(skip)]
    depth: usize,
}

impl Profile {
    /// A profile holding these records.
    pub fn from_ops(ops: Vec<OpRecord>) -> Self {
        Profile { ops, depth: 0 }
    }

    /// Opens one (possibly nested) recording level.
    pub(crate) fn enter(&mut self) {
        self.depth += 1;
    }

    /// Closes a level; true when it was the outermost one (the call to record).
    pub(crate) fn leave(&mut self) -> bool {
        self.depth = self.depth.saturating_sub(1);
        self.depth == 0
    }

    /// Adds one call's cost to `op`'s record (computed by `protocol`).
    pub fn record(&mut self, op: &str, protocol: &str, seconds: f64, delta: Stats) {
        let r = match self.ops.iter_mut().position(|r| r.op == op) {
            Some(i) => &mut self.ops[i],
            None => {
                self.ops.push(OpRecord {
                    op: op.to_string(),
                    protocol: protocol.to_string(),
                    ..Default::default()
                });
                let i = self.ops.len() - 1;
                &mut self.ops[i]
            }
        };
        r.calls += 1;
        r.seconds += seconds;
        r.bytes_sent += delta.bytes_sent;
        r.bytes_recv += delta.bytes_recv;
        r.rounds += delta.rounds;
    }

    /// The sum over all operators.
    pub fn total(&self) -> OpRecord {
        let mut t = OpRecord {
            op: "total".into(),
            ..Default::default()
        };
        for r in &self.ops {
            t.calls += r.calls;
            t.seconds += r.seconds;
            t.bytes_sent += r.bytes_sent;
            t.bytes_recv += r.bytes_recv;
            t.rounds += r.rounds;
        }
        t
    }

    /// Adds another profile's records (e.g. of a later query of the same session).
    pub fn merge(&mut self, other: &Profile) {
        for r in &other.ops {
            let s = Stats {
                bytes_sent: r.bytes_sent,
                bytes_recv: r.bytes_recv,
                rounds: r.rounds,
                ..Default::default()
            };
            self.record(&r.op, &r.protocol, r.seconds, s);
            if let Some(x) = self.ops.iter_mut().find(|x| x.op == r.op) {
                x.calls += r.calls - 1;
            }
        }
    }

    /// Clears all records.
    pub fn clear(&mut self) {
        self.ops.clear();
    }

    /// A fixed-width table (operator, calls, seconds, MB sent, MB received, rounds) with a
    /// total line.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<16} {:<12} {:>7} {:>10} {:>11} {:>11} {:>8}",
            "operator", "protocol", "calls", "seconds", "MB sent", "MB recv", "rounds"
        );
        let line = |s: &mut String, r: &OpRecord| {
            let _ = writeln!(
                s,
                "{:<16} {:<12} {:>7} {:>10.3} {:>11.3} {:>11.3} {:>8}",
                r.op,
                r.protocol,
                r.calls,
                r.seconds,
                r.bytes_sent as f64 / 1e6,
                r.bytes_recv as f64 / 1e6,
                r.rounds
            );
        };
        for r in &self.ops {
            line(&mut s, r);
        }
        line(&mut s, &self.total());
        s
    }

    /// JSON value `{ "ops": [...], "total": {...} }`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "ops": self.ops, "total": self.total() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_and_totals() {
        let mut p = Profile::default();
        let s = Stats {
            bytes_sent: 10,
            bytes_recv: 20,
            rounds: 1,
            ..Default::default()
        };
        p.record("softmax", "bumblebee", 0.5, s);
        p.record("gelu", "seg4", 0.25, s);
        p.record("softmax", "bumblebee", 0.5, s);
        assert_eq!(p.ops.len(), 2);
        assert_eq!(p.ops[0].calls, 2);
        assert_eq!(p.total().bytes_recv, 60);
        let mut q = Profile::default();
        q.merge(&p);
        assert_eq!(q, p);
        assert!(p.table().contains("softmax"));
        assert!(p.table().contains("seg4"));
        assert_eq!(p.to_json()["ops"][1]["protocol"], "seg4");
        assert_eq!(p.to_json()["total"]["calls"], 3);
    }
}
