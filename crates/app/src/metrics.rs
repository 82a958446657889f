//! The server's Prometheus metrics (`/metrics` of `nectar serve --admin`), in the text
//! exposition format of the `prometheus` crate. Every name starts with `nectar_`.

use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder};

/// The metrics of one server.
pub struct Metrics {
    registry: Registry,
    /// Sessions past their handshake, now running.
    pub sessions_active: IntGauge,
    /// Connections accepted whose `Hello` has not arrived yet.
    pub connections_pending: IntGauge,
    /// Sessions admitted (a valid `Hello`, a free slot).
    pub sessions_started: IntCounter,
    /// Sessions that ended with the client's `Bye`.
    pub sessions_finished: IntCounter,
    /// Connections turned away, by reason (`draining`, `session_cap`, `pending_cap`,
    /// `per_peer_cap`).
    pub refused: IntCounterVec,
    /// Admitted sessions that ended otherwise than with `Bye`, by reason.
    pub aborted: IntCounterVec,
    /// Connections that ended before a valid `Hello`, by reason.
    pub handshakes_failed: IntCounterVec,
    pub bytes_sent: IntCounter,
    pub bytes_received: IntCounter,
    /// Flights the server sent (changes of direction, [`nectar_net::Stats::rounds`]).
    pub flights: IntCounter,
    /// Seconds from admission to the end of a session, by suite.
    pub session_seconds: HistogramVec,
    /// Seconds of each query, by suite.
    pub query_seconds: HistogramVec,
    /// Seconds of each operator within one query, by suite, operator and protocol.
    pub operator_seconds: HistogramVec,
    /// The process's resident memory, read at each scrape.
    pub resident_memory: IntGauge,
    /// 1 while draining (after SIGTERM / SIGINT).
    pub draining: IntGauge,
    /// `--max-concurrent-sessions`.
    pub session_cap: IntGauge,
    /// One session's estimated peak memory ([`crate::admission`]; 0 without
    /// `--memory-limit-gib`).
    pub session_memory_estimate: IntGauge,
    /// `--memory-limit-gib` in bytes (0: none).
    pub memory_limit: IntGauge,
    /// The server's resident memory at start plus every admitted session's estimate (the
    /// figure compared with the limit; 0 without `--memory-limit-gib`).
    pub memory_admitted: IntGauge,
    /// Largest message accepted after the handshake, bytes.
    pub max_message: IntGauge,
}

/// Buckets doubling from `start`, `n` of them.
fn doubling(start: f64, n: usize) -> Vec<f64> {
    (0..n).map(|i| start * f64::powi(2.0, i as i32)).collect()
}

impl Metrics {
    pub fn new(session_cap: usize) -> Result<Self, String> {
        let err = |e: prometheus::Error| format!("metrics: {e}");
        let registry = Registry::new();
        macro_rules! reg {
            ($m:expr) => {{
                let m = $m.map_err(err)?;
                registry.register(Box::new(m.clone())).map_err(err)?;
                m
            }};
        }
        let counter = |n: &str, h: &str| IntCounter::new(n, h);
        let by = |n: &str, h: &str, labels: &[&str]| IntCounterVec::new(Opts::new(n, h), labels);
        let hist = |n: &str, h: &str, b: Vec<f64>, labels: &[&str]| HistogramVec::new(HistogramOpts::new(n, h).buckets(b), labels);
        let m = Metrics {
            sessions_active: reg!(IntGauge::new("nectar_sessions_active", "Sessions past their handshake, now running")),
            connections_pending: reg!(IntGauge::new("nectar_connections_pending", "Connections whose Hello has not arrived yet")),
            sessions_started: reg!(counter("nectar_sessions_started_total", "Sessions admitted after a valid Hello")),
            sessions_finished: reg!(counter("nectar_sessions_finished_total", "Sessions ended by the client's Bye")),
            refused: reg!(by("nectar_sessions_refused_total", "Connections refused with server busy, by reason", &["reason"])),
            aborted: reg!(by("nectar_sessions_aborted_total", "Admitted sessions ended by an error, by reason", &["reason"])),
            handshakes_failed: reg!(by("nectar_handshakes_failed_total", "Connections ended before a valid Hello, by reason", &["reason"])),
            bytes_sent: reg!(counter("nectar_bytes_sent_total", "Bytes the server sent, frame headers included")),
            bytes_received: reg!(counter("nectar_bytes_received_total", "Bytes the server received, frame headers included")),
            flights: reg!(counter("nectar_flights_sent_total", "Message flights the server sent (changes of direction)")),
            session_seconds: reg!(hist("nectar_session_seconds", "Seconds from admission to the end of a session", doubling(0.1, 15), &["suite"])),
            query_seconds: reg!(hist("nectar_query_seconds", "Seconds of one query", doubling(0.05, 16), &["suite"])),
            operator_seconds: reg!(hist(
                "nectar_operator_seconds",
                "Seconds of one operator within one query",
                doubling(0.001, 18),
                &["suite", "operator", "protocol"]
            )),
            resident_memory: reg!(IntGauge::new("nectar_resident_memory_bytes", "Resident memory of the server process")),
            draining: reg!(IntGauge::new("nectar_draining", "1 while the server drains (after SIGTERM or SIGINT)")),
            session_cap: reg!(IntGauge::new("nectar_session_cap", "Sessions allowed at once (--max-concurrent-sessions)")),
            session_memory_estimate: reg!(IntGauge::new(
                "nectar_session_memory_estimate_bytes",
                "Estimated peak memory of one session (0 without --memory-limit-gib)"
            )),
            memory_limit: reg!(IntGauge::new("nectar_memory_limit_bytes", "--memory-limit-gib in bytes (0: none)")),
            memory_admitted: reg!(IntGauge::new(
                "nectar_memory_admitted_bytes",
                "Server memory at start plus the estimates of the admitted sessions (0 without --memory-limit-gib)"
            )),
            max_message: reg!(IntGauge::new("nectar_max_message_bytes", "Largest message accepted after the handshake")),
            registry,
        };
        m.session_cap.set(session_cap as i64);
        Ok(m)
    }

    /// Every metric in the Prometheus text format (the resident memory read now).
    pub fn render(&self) -> Result<String, String> {
        if let Some(rss) = crate::memory::resident_bytes() {
            self.resident_memory.set(rss as i64);
        }
        let mut out = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut out).map_err(|e| format!("metrics: {e}"))?;
        String::from_utf8(out).map_err(|e| format!("metrics: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_render_with_their_labels() {
        let m = Metrics::new(8).unwrap();
        m.refused.with_label_values(&["draining"]).inc();
        m.operator_seconds.with_label_values(&["nectar", "gelu", "sq8"]).observe(0.02);
        let t = m.render().unwrap();
        assert!(t.contains("nectar_session_cap 8"), "{t}");
        assert!(t.contains(r#"nectar_sessions_refused_total{reason="draining"} 1"#), "{t}");
        assert!(t.contains(r#"nectar_operator_seconds_bucket{operator="gelu",protocol="sq8",suite="nectar",le="0.032"} 1"#), "{t}");
        assert!(t.contains("# TYPE nectar_resident_memory_bytes gauge"), "{t}");
    }
}
