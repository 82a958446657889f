//! `nectar bench ot`: both parties over an in-memory channel in two threads (one thread per
//! party), generating `count` random COTs in the direction server → client.
//!
//! Reported: COTs per second (wall time of the extension phase, both parties concurrently),
//! bits per COT (bytes both directions, frame headers included, amortised over `count`,
//! including IKNP and Ferret bootstrapping, excluding the one-time base OTs, which are reported
//! separately), bytes, rounds (flows summed over both parties) and the steady-state bits per
//! COT: the traffic of the extensions after the first (the bootstrap), measured by the channel
//! counters around each of them ([`nectar_ot::RefillTraffic`]), divided by the COTs they
//! produced. A run too short to need an extension after the first has no steady figure
//! (`null`): Ferret b13's first extension yields 10 018 496 COTs.

use nectar_math::Prg;
use nectar_net::{mem::run_pair, Channel};
use nectar_ot::ferret::FerretParams;
use nectar_ot::pool::{CotPool, Producer};
use nectar_ot::OtError;
use std::time::Instant;

/// Which extension to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OtKind {
    Iknp,
    /// Ferret with the given parameter set (`FerretParams::b13()`, `b11()`, ...).
    Ferret(FerretParams),
}

/// One measurement (JSON-friendly).
#[derive(Clone, Debug, serde::Serialize)]
pub struct OtBench {
    pub kind: String,
    pub params: String,
    pub count: usize,
    pub cots_per_second: f64,
    pub bits_per_cot: f64,
    /// Measured: bits per COT of the extensions after the first (`None` if there were none).
    pub steady_bits_per_cot: Option<f64>,
    /// Measured: bits per COT of the first extension (bootstrap included).
    pub first_refill_bits_per_cot: Option<f64>,
    pub seconds: f64,
    pub bytes: u64,
    /// Bytes sent by the COT sender (P0 in the bench).
    pub bytes_sender: u64,
    /// Bytes sent by the COT receiver (P1 in the bench).
    pub bytes_receiver: u64,
    pub rounds: u64,
    pub base_ot_seconds: f64,
    pub base_ot_bytes: u64,
    pub refills: u64,
}

/// COTs taken per call in the bench (LOCAL: bounds memory).
const TAKE: usize = 1 << 20;

/// Measure `count` COTs of `kind`.
pub fn bench_ot(kind: OtKind, count: usize) -> Result<OtBench, OtError> {
    match kind {
        OtKind::Iknp => bench_producer(Producer::Iknp, count),
        OtKind::Ferret(params) => bench_producer(Producer::Ferret(params), count),
    }
}

/// Measure `count` COTs with an explicit producer.
pub fn bench_producer(producer: Producer, count: usize) -> Result<OtBench, OtError> {
    type PartyOut = (f64, f64, nectar_net::Stats, nectar_net::Stats, u64, u128, nectar_ot::RefillTraffic, nectar_ot::RefillTraffic);
    let run = |sender: bool, ch: &mut dyn Channel| -> Result<PartyOut, OtError> {
        let mut prg = Prg::from_entropy();
        let t0 = Instant::now();
        let mut pool = if sender { CotPool::sender(ch, producer, &mut prg)? } else { CotPool::receiver(ch, producer, &mut prg)? };
        let base_s = t0.elapsed().as_secs_f64();
        let s0 = ch.stats();
        let t1 = Instant::now();
        let mut left = count;
        let mut check = 0u128;
        while left > 0 {
            let m = left.min(TAKE);
            let (_, v) = pool.take(ch, m)?;
            check ^= v[0];
            left -= m;
        }
        ch.flush()?;
        let secs = t1.elapsed().as_secs_f64();
        Ok((base_s, secs, s0, ch.stats() - s0, pool.refills(), check, pool.first_refill(), pool.steady_refills()))
    };
    let (a, b) = run_pair(|c| run(true, c), |c| run(false, c));
    let (a, b) = (a?, b?);
    let seconds = a.1.max(b.1);
    let bytes = a.3.bytes_sent + b.3.bytes_sent;
    let (kind, params) = match producer {
        Producer::Iknp => ("iknp".to_string(), "kappa=128".to_string()),
        Producer::Ferret(p) => ("ferret".to_string(), p.name.to_string()),
    };
    // One party's counters see both directions of every extension (RefillTraffic).
    let (first, steady) = (a.6, a.7);
    Ok(OtBench {
        kind,
        params,
        count,
        cots_per_second: count as f64 / seconds,
        bits_per_cot: 8.0 * bytes as f64 / count as f64,
        steady_bits_per_cot: steady.bits_per_cot(),
        first_refill_bits_per_cot: first.bits_per_cot(),
        seconds,
        bytes,
        bytes_sender: a.3.bytes_sent,
        bytes_receiver: b.3.bytes_sent,
        rounds: a.3.rounds + b.3.rounds,
        base_ot_seconds: a.0.max(b.0),
        base_ot_bytes: a.2.bytes_sent + b.2.bytes_sent,
        refills: a.4,
    })
}
