//! Admission by memory (`nectar serve --memory-limit-gib G`, issue 51 item 5) and the largest
//! message accepted after the handshake, both derived from the served model and suite.
//!
//! Where the numbers come from: `scripts/calibrate_admission.py` runs one private query per
//! token length against a fresh `nectar serve` and measures, from outside the server, its
//! resident memory before the session and its peak (`VmHWM`), and — through a frame-counting
//! proxy — the largest message each way. Its JSON lines are committed as
//! `docs/results/admission.jsonl` (page: `docs/results/admission.md`) and embedded here.
//! For a served (architecture, suite) with at least three measured lengths:
//!
//! - a session's **peak** is the measured peak above idle at the model's longest query (`L` =
//!   its positions: a client may send that many), read off the polyline through the measured
//!   lengths (extended past the longest measured with the slope of the last two, never
//!   falling), never below the largest measured value, times [`PEAK_MARGIN`], plus the
//!   weight-prefetch budget above the one calibrated with (`--memory-budget-mib`);
//! - the **message limit** is the same reading of the largest message the server received,
//!   times [`FRAME_MARGIN`], rounded up to a MiB (at least [`MIN_FRAME`]).
//!
//! A model or suite without a calibration gets no derived values: `--memory-limit-gib` then
//! needs `--session-memory-mib` (the operator's own measure), and the message limit stays at
//! [`nectar_net::DEFAULT_MAX_FRAME`] unless `--max-frame-mib` says otherwise.

use crate::metrics::Metrics;
use nectar_model::config::ModelConfig;
use nectar_model::Suite;
use serde::Deserialize;
use std::sync::atomic::{AtomicU64, Ordering};

/// The committed calibration runs (`scripts/calibrate_admission.py`).
pub const CALIBRATION: &str = include_str!("../../../docs/results/admission.jsonl");

/// Factor on the measured peak (LOCAL): measured peaks of equal runs differ by up to 8 %
/// (allocator timing, rayon scheduling; 513 and 556 MB for MiniLM at 8 tokens), and the
/// polyline is extended past the longest measured query when the longest possible one
/// was not run.
pub const PEAK_MARGIN: f64 = 1.25;

/// Factor on the measured largest message (LOCAL): the limit only has to stop absurd frames, and
/// a real session must never meet it.
pub const FRAME_MARGIN: f64 = 2.0;

/// The smallest derived message limit (LOCAL): above every setup message measured.
pub const MIN_FRAME: usize = 16 << 20;

/// One calibration run (one line of `docs/results/admission.jsonl`).
#[derive(Clone, Debug, Deserialize)]
pub struct Point {
    pub arch: Arch,
    pub suite: String,
    pub tokens: usize,
    pub memory_budget_bytes: u64,
    pub server_idle_rss_bytes: u64,
    pub server_peak_rss_bytes: u64,
    pub largest_frame_to_server_bytes: u64,
}

/// The public dimensions a calibration is valid for.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Arch {
    pub model_type: String,
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub positions: usize,
}

impl Arch {
    pub fn of(cfg: &ModelConfig) -> Arch {
        let (layers, hidden, heads, intermediate, _) = cfg.dims();
        Arch { model_type: cfg.model_type().to_string(), layers, hidden, heads, intermediate, positions: longest_query(cfg) }
    }
}

/// The most tokens one query of `cfg` may have (the server's `check_query` bound; ViT: its
/// patches and the class token).
pub fn longest_query(cfg: &ModelConfig) -> usize {
    match cfg {
        ModelConfig::Bert(c) => c.max_position_embeddings,
        ModelConfig::Gpt2(c) => c.n_positions,
        ModelConfig::Llama(c) => c.max_position_embeddings,
        ModelConfig::Vit(c) => (c.image_size / c.patch_size.max(1)).pow(2) + 1,
    }
}

/// The parsed calibration (a malformed line is an error: the file is ours).
pub fn calibration() -> Result<Vec<Point>, String> {
    CALIBRATION
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("docs/results/admission.jsonl line {}: {e}", i + 1)))
        .collect()
}

/// `y` at `x` on the polyline through `pts` (sorted by `x`; equal `x` keep their largest `y`):
/// interpolated between measured points, extended past the last with the slope of the last two
/// (never falling), held at the first below it. `None` without two distinct `x`.
fn polyline_at(pts: &[(f64, f64)], x: f64) -> Option<f64> {
    let mut p: Vec<(f64, f64)> = pts.to_vec();
    p.sort_by(|a, b| a.0.total_cmp(&b.0));
    p.dedup_by(|b, a| {
        let same = a.0 == b.0;
        if same {
            a.1 = a.1.max(b.1);
        }
        same
    });
    if p.len() < 2 {
        return None;
    }
    if x <= p[0].0 {
        return Some(p[0].1);
    }
    for w in p.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        if x <= x1 {
            return Some(y0 + (y1 - y0) * (x - x0) / (x1 - x0));
        }
    }
    let ((x0, y0), (x1, y1)) = (p[p.len() - 2], p[p.len() - 1]);
    Some(y1 + ((y1 - y0) / (x1 - x0)).max(0.0) * (x - x1))
}

/// What the calibration says about one (architecture, suite).
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    /// Estimated peak of one session above the idle server, bytes.
    pub session_peak: u64,
    /// The message limit after the handshake, bytes.
    pub max_frame: usize,
    /// Runs it rests on, and the longest query it is evaluated at.
    pub runs: usize,
    pub tokens: usize,
    pub measured_tokens: Vec<usize>,
}

/// The derived values for `cfg` under `suite` with a weight-prefetch budget of
/// `memory_budget` bytes, if `points` calibrate them.
pub fn derive(points: &[Point], cfg: &ModelConfig, suite: &Suite, memory_budget: u64) -> Option<Derived> {
    let arch = Arch::of(cfg);
    let label = suite.label();
    let mine: Vec<&Point> = points.iter().filter(|p| p.arch == arch && p.suite == label).collect();
    let mut lengths: Vec<usize> = mine.iter().map(|p| p.tokens).collect();
    lengths.sort_unstable();
    lengths.dedup();
    if lengths.len() < 3 {
        return None;
    }
    let l = arch.positions as f64;
    let peaks: Vec<(f64, f64)> =
        mine.iter().map(|p| (p.tokens as f64, p.server_peak_rss_bytes.saturating_sub(p.server_idle_rss_bytes) as f64)).collect();
    let frames: Vec<(f64, f64)> = mine.iter().map(|p| (p.tokens as f64, p.largest_frame_to_server_bytes as f64)).collect();
    let peak_max = peaks.iter().map(|p| p.1).fold(0.0, f64::max);
    let frame_max = frames.iter().map(|p| p.1).fold(0.0, f64::max);
    let peak = polyline_at(&peaks, l)?.max(peak_max) * PEAK_MARGIN;
    let frame = polyline_at(&frames, l)?.max(frame_max) * FRAME_MARGIN;
    let calibrated_budget = mine.iter().map(|p| p.memory_budget_bytes).max().unwrap_or(0);
    let session_peak = peak as u64 + memory_budget.saturating_sub(calibrated_budget);
    let mib = 1usize << 20;
    let max_frame = ((frame as usize).div_ceil(mib) * mib).clamp(MIN_FRAME, nectar_net::DEFAULT_MAX_FRAME);
    Some(Derived { session_peak, max_frame, runs: mine.len(), tokens: arch.positions, measured_tokens: lengths })
}

/// How a refusal for memory begins (the metric label `memory` is given to those).
pub const MEMORY_BUSY: &str = "server busy: memory";

/// The server's memory budget: sessions are admitted while the idle server plus every admitted
/// session's estimate fits the limit.
#[derive(Debug)]
pub struct MemoryBudget {
    /// `--memory-limit-gib`, bytes.
    pub limit: u64,
    /// The server's resident memory when it started serving (model checked, nothing else).
    pub baseline: u64,
    /// One session's estimated peak, bytes.
    pub per_session: u64,
    /// Where `per_session` comes from (for the log).
    pub source: String,
    admitted: AtomicU64,
}

impl MemoryBudget {
    pub fn new(limit: u64, baseline: u64, per_session: u64, source: String) -> Result<Self, String> {
        let b = MemoryBudget { limit, baseline, per_session: per_session.max(1), source, admitted: AtomicU64::new(0) };
        if baseline + b.per_session > limit {
            return Err(format!(
                "--memory-limit-gib {:.2}: not even one session fits (server {:.2} GiB + one session's estimated peak {:.2} GiB, {})",
                gib(limit),
                gib(baseline),
                gib(b.per_session),
                b.source
            ));
        }
        Ok(b)
    }

    /// Sessions that fit at once.
    pub fn sessions(&self) -> u64 {
        (self.limit - self.baseline) / self.per_session
    }

    /// Why the next session would not fit, if it would not.
    pub fn busy(&self) -> Option<String> {
        let admitted = self.admitted.load(Ordering::SeqCst);
        (self.baseline + admitted + self.per_session > self.limit).then(|| self.refusal(admitted))
    }

    fn refusal(&self, admitted: u64) -> String {
        format!(
            "{MEMORY_BUSY}: {} sessions running, {:.2} GiB estimated each ({:.2} GiB with the server's {:.2} GiB), the next would pass --memory-limit-gib {:.2}; try again later",
            admitted / self.per_session,
            gib(self.per_session),
            gib(self.baseline + admitted),
            gib(self.baseline),
            gib(self.limit)
        )
    }

    /// Sets the gauges of the budget (at start).
    pub fn publish(&self, m: &Metrics) {
        m.session_memory_estimate.set(self.per_session as i64);
        m.memory_limit.set(self.limit as i64);
        m.memory_admitted.set((self.baseline + self.admitted.load(Ordering::SeqCst)) as i64);
    }

    /// One session's share of the budget, or the refusal.
    pub fn reserve<'a>(&'a self, metrics: &'a Metrics) -> Result<Reservation<'a>, String> {
        let per = self.per_session;
        let (base, limit) = (self.baseline, self.limit);
        match self.admitted.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |a| (base + a + per <= limit).then_some(a + per)) {
            Ok(_) => {
                metrics.memory_admitted.add(per as i64);
                Ok(Reservation { budget: self, metrics })
            }
            Err(a) => Err(self.refusal(a)),
        }
    }
}

/// An admitted session's estimate, given back when dropped.
pub struct Reservation<'a> {
    budget: &'a MemoryBudget,
    metrics: &'a Metrics,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.budget.admitted.fetch_sub(self.budget.per_session, Ordering::SeqCst);
        self.metrics.memory_admitted.sub(self.budget.per_session as i64);
    }
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

/// What `nectar serve` derives from its flags, the model and the suite.
pub struct ServePlan {
    /// The message limit after the handshake, bytes.
    pub max_frame: usize,
    /// `--memory-limit-gib` with its estimate, if given.
    pub memory: Option<MemoryBudget>,
    /// One log line on each: where the figures come from.
    pub notes: Vec<String>,
}

/// The message limit and memory budget of a server of `cfg` under `suite`: `max_frame_mib`
/// (`--max-frame-mib`) overrides the derived limit; `session_memory_mib`
/// (`--session-memory-mib`) the calibrated estimate; `memory_limit_gib` turns admission by
/// memory on. `reserved` is memory the server will hold beyond what is resident now (its
/// weights' encoding cache, which fills with the first sessions).
pub fn plan(
    cfg: &ModelConfig,
    suite: &Suite,
    memory_budget: u64,
    max_frame_mib: Option<usize>,
    memory_limit_gib: Option<f64>,
    session_memory_mib: Option<u64>,
    reserved: u64,
) -> Result<ServePlan, String> {
    let derived = derive(&calibration()?, cfg, suite, memory_budget);
    let mut notes = Vec::new();
    let label = suite.label();
    let max_frame = match (max_frame_mib, &derived) {
        (Some(m), _) => m.clamp(1, 4095) << 20,
        (None, Some(d)) => {
            notes.push(format!(
                "message limit {} MiB: {FRAME_MARGIN}× the largest message measured for this model and suite at up to {} tokens, read at {} tokens (docs/results/admission.md)",
                d.max_frame >> 20,
                d.measured_tokens.last().copied().unwrap_or(0),
                d.tokens
            ));
            d.max_frame
        }
        (None, None) => {
            notes.push(format!(
                "message limit {} MiB (no calibration for this model and suite {label}: see scripts/calibrate_admission.py)",
                nectar_net::DEFAULT_MAX_FRAME >> 20
            ));
            nectar_net::DEFAULT_MAX_FRAME
        }
    };
    let memory = match memory_limit_gib {
        None => None,
        Some(g) if !(g.is_finite() && g > 0.0) => return Err(format!("--memory-limit-gib {g}: must be a positive number")),
        Some(g) => {
            let (per, source) = match (session_memory_mib, &derived) {
                (Some(m), _) => (m << 20, "--session-memory-mib".to_string()),
                (None, Some(d)) => (
                    d.session_peak,
                    format!(
                        "measured for this model and suite at {:?} tokens, read at {} tokens, ×{PEAK_MARGIN} (docs/results/admission.md)",
                        d.measured_tokens, d.tokens
                    ),
                ),
                (None, None) => {
                    return Err(format!(
                        "--memory-limit-gib: no calibrated session estimate for this model and suite {label}; \
                         measure one (scripts/calibrate_admission.py) and pass --session-memory-mib"
                    ))
                }
            };
            let baseline = crate::memory::resident_bytes().unwrap_or(0) + reserved;
            let b = MemoryBudget::new((g * (1u64 << 30) as f64) as u64, baseline, per, source)?;
            notes.push(format!(
                "memory limit {:.2} GiB: one session estimated at {:.2} GiB ({}), server {:.2} GiB (its weights' encodings included): {} sessions at once",
                g,
                gib(b.per_session),
                b.source,
                gib(b.baseline),
                b.sessions()
            ));
            Some(b)
        }
    };
    Ok(ServePlan { max_frame, memory, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_polyline_interpolates_and_extends_without_falling() {
        let pts = [(32.0, 6.0), (8.0, 5.0), (128.0, 9.0), (256.0, 10.0), (256.0, 11.0)];
        assert_eq!(polyline_at(&pts, 4.0), Some(5.0));
        assert_eq!(polyline_at(&pts, 80.0), Some(7.5));
        assert_eq!(polyline_at(&pts, 256.0), Some(11.0));
        assert_eq!(polyline_at(&pts, 512.0), Some(11.0 + 2.0 / 128.0 * 256.0));
        assert_eq!(polyline_at(&[(8.0, 9.0), (16.0, 5.0)], 32.0), Some(5.0));
        assert_eq!(polyline_at(&pts[..1], 512.0), None);
    }

    #[test]
    fn the_committed_calibration_parses_and_derives_minilm() {
        let points = calibration().unwrap();
        assert!(!points.is_empty());
        let p = &points[0];
        let cfg = nectar_model::config::ModelConfig::from_json_str(
            &format!(
                r#"{{"model_type":"bert","vocab_size":30522,"hidden_size":{},"num_hidden_layers":{},"num_attention_heads":{},"intermediate_size":{},"max_position_embeddings":{},"type_vocab_size":2,"layer_norm_eps":1e-12,"hidden_act":"gelu"}}"#,
                p.arch.hidden, p.arch.layers, p.arch.heads, p.arch.intermediate, p.arch.positions
            ),
            std::path::Path::new("config.json"),
        )
        .unwrap();
        let suite = Suite::parse(&p.suite).unwrap();
        let d = derive(&points, &cfg, &suite, p.memory_budget_bytes).expect("calibrated");
        let measured_peak = points.iter().map(|q| q.server_peak_rss_bytes - q.server_idle_rss_bytes).max().unwrap();
        let measured_frame = points.iter().map(|q| q.largest_frame_to_server_bytes).max().unwrap() as usize;
        assert!(d.session_peak as f64 >= measured_peak as f64 * PEAK_MARGIN, "{d:?}");
        assert!(d.max_frame >= 2 * measured_frame && d.max_frame < nectar_net::DEFAULT_MAX_FRAME, "{d:?}");
        // A larger prefetch budget adds to the estimate; another suite is not calibrated.
        let more = derive(&points, &cfg, &suite, p.memory_budget_bytes + (100 << 20)).unwrap();
        assert_eq!(more.session_peak, d.session_peak + (100 << 20));
        assert!(derive(&points, &cfg, &Suite::parse("east").unwrap(), 0).is_none());
    }

    #[test]
    fn the_budget_admits_while_the_sum_fits() {
        let m = Metrics::new(8).unwrap();
        let b = MemoryBudget::new(10 << 30, 1 << 30, 3 << 30, "test".into()).unwrap();
        b.publish(&m);
        assert_eq!(b.sessions(), 3);
        let r1 = b.reserve(&m).unwrap();
        let _r2 = b.reserve(&m).unwrap();
        let r3 = b.reserve(&m).unwrap();
        assert!(b.busy().is_some());
        let e = b.reserve(&m).err().unwrap();
        assert!(e.starts_with("server busy: memory: 3 sessions running, 3.00 GiB estimated each"), "{e}");
        assert!(m.render().unwrap().contains("nectar_memory_admitted_bytes 10737418240"));
        drop(r1);
        assert!(b.busy().is_none());
        drop(r3);
        assert!(b.reserve(&m).is_ok());
        assert!(MemoryBudget::new(2 << 30, 1 << 30, 3 << 30, "test".into()).is_err());
    }
}
