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
    /// Part of the bytes (both directions) and of the seconds spent in input-independent
    /// preprocessing (ROTL rotations and the COTs reserved for their online phase); the rest
    /// is online.
    #[serde(default)]
    pub prepro_bytes: u64,
    #[serde(default)]
    pub prepro_seconds: f64,
    /// Each call's messages on this end's channel, `[first, end)` in the channel's count of
    /// frames sent and received (`msgs_sent + msgs_recv`): where its frames sit in a message
    /// trace ([`nectar_net::Traced`], `nectar tune`). Not serialized.
    #[serde(skip)]
    pub spans: Vec<(u64, u64)>,
}

impl OpRecord {
    /// Bytes both directions.
    pub fn bytes_total(&self) -> u64 {
        self.bytes_sent + self.bytes_recv
    }

    /// Bytes both directions outside preprocessing.
    pub fn online_bytes(&self) -> u64 {
        self.bytes_total().saturating_sub(self.prepro_bytes)
    }
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

    /// Notes where the last call recorded for `op` sits in the channel's messages
    /// ([`OpRecord::spans`]).
    pub fn record_span(&mut self, op: &str, first: u64, end: u64) {
        if let Some(r) = self.ops.iter_mut().find(|r| r.op == op) {
            r.spans.push((first, end));
        }
    }

    /// Adds the preprocessing part of the last call recorded for `op`.
    pub fn record_prepro(&mut self, op: &str, bytes: u64, seconds: f64) {
        if let Some(r) = self.ops.iter_mut().find(|r| r.op == op) {
            r.prepro_bytes += bytes;
            r.prepro_seconds += seconds;
        }
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
            t.prepro_bytes += r.prepro_bytes;
            t.prepro_seconds += r.prepro_seconds;
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
            self.record_prepro(&r.op, r.prepro_bytes, r.prepro_seconds);
            if let Some(x) = self.ops.iter_mut().find(|x| x.op == r.op) {
                x.calls += r.calls - 1;
                x.spans.extend_from_slice(&r.spans);
            }
        }
    }

    /// Clears all records.
    pub fn clear(&mut self) {
        self.ops.clear();
    }

    /// A fixed-width table (operator, calls, seconds, MB sent, MB received, rounds, MB of
    /// preprocessing within them) with a total line.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<16} {:<12} {:>7} {:>10} {:>11} {:>11} {:>8} {:>11}",
            "operator", "protocol", "calls", "seconds", "MB sent", "MB recv", "rounds", "MB prepro"
        );
        let line = |s: &mut String, r: &OpRecord| {
            let _ = writeln!(
                s,
                "{:<16} {:<12} {:>7} {:>10.3} {:>11.3} {:>11.3} {:>8} {:>11.3}",
                r.op,
                r.protocol,
                r.calls,
                r.seconds,
                r.bytes_sent as f64 / 1e6,
                r.bytes_recv as f64 / 1e6,
                r.rounds,
                r.prepro_bytes as f64 / 1e6
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
        p.record_prepro("softmax", 12, 0.125);
        assert_eq!(p.ops.len(), 2);
        assert_eq!((p.ops[0].prepro_bytes, p.ops[0].online_bytes()), (12, 48));
        assert_eq!(p.total().prepro_bytes, 12);
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
