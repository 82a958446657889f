//! A simulated network link: bandwidth and one-way latency imposed on any channel, in-process.
//!
//! Model: each direction is a pipe of `bandwidth` bits/s and `latency` one-way delay. A frame
//! leaves when the pipe is free (frames queue behind each other), takes `bytes*8/bandwidth`
//! to transmit, and becomes readable `latency` after its last bit left. The sender never
//! blocks (like a socket with a large buffer); the receiver sleeps until the frame's arrival
//! time. The arrival time travels in an 8-byte header (wall-clock nanoseconds), so both ends
//! must share a clock: in one process, or two processes on one host. That header is not
//! counted in [`Stats`], which report what the simulated link carries.
//!
//! Links are data ([`LinkModel::parse`]): `MBPS/RTT_MS` (bandwidth in Mbit/s, **round-trip**
//! time in ms; each direction gets half the RTT) or a named preset of [`PRESETS`] — ours (`lan`,
//! `wan`, the settings of the recorded results) and the papers' (`bumblebee-wan`, `blb-wan2`,
//! `blb-wan3`, `rotl-wan`).

use crate::{Channel, Limits, NetError, Stats, FRAME_HEADER};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Two connected in-memory channels (both parties in one process), each through the simulated
/// link `net` when one is given, else raw.
pub fn linked_pair(net: Option<LinkModel>) -> (Box<dyn Channel + Send>, Box<dyn Channel + Send>) {
    let (a, b) = crate::MemChannel::pair();
    let wrap = |c: crate::MemChannel| -> Box<dyn Channel + Send> {
        match net {
            Some(m) => Box::new(Simulated::new(c, m)),
            None => Box::new(c),
        }
    };
    (wrap(a), wrap(b))
}

/// Bandwidth and one-way latency of a simulated link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkModel {
    /// Bits per second.
    pub bandwidth_bps: f64,
    /// One-way latency.
    pub latency: Duration,
}

impl LinkModel {
    /// 1 Gbit/s, 0.5 ms one-way (BumbleBee §VII).
    pub const LAN: LinkModel =
        LinkModel { bandwidth_bps: 1e9, latency: Duration::from_micros(500) };
    /// 400 Mbit/s, 4 ms one-way (BumbleBee §VII).
    pub const WAN: LinkModel = LinkModel { bandwidth_bps: 400e6, latency: Duration::from_millis(4) };

    /// A link of `mbps` Mbit/s and `latency_ms` ms one-way.
    pub fn new(mbps: f64, latency_ms: f64) -> Self {
        LinkModel { bandwidth_bps: mbps * 1e6, latency: Duration::from_secs_f64(latency_ms / 1e3) }
    }

    /// A link of `mbps` Mbit/s and `rtt_ms` ms round trip (`rtt_ms / 2` each way).
    pub fn from_rtt(mbps: f64, rtt_ms: f64) -> Self {
        Self::new(mbps, rtt_ms / 2.0)
    }

    /// The round-trip time (twice the one-way latency).
    pub fn rtt(&self) -> Duration {
        self.latency * 2
    }

    /// A link spec: `none` (no simulation: `None`), a preset name of [`PRESETS`], or
    /// `MBPS/RTT_MS` (e.g. `100/80`: 100 Mbit/s, 80 ms round trip). An error lists the forms.
    pub fn parse(spec: &str) -> Result<Option<LinkModel>, String> {
        let spec = spec.trim();
        if spec == "none" {
            return Ok(None);
        }
        if let Some(p) = PRESETS.iter().find(|p| p.name == spec) {
            return Ok(Some(LinkModel::from_rtt(p.mbps, p.rtt_ms)));
        }
        let bad = || {
            format!(
                "unknown link '{spec}': none, MBPS/RTT_MS (e.g. 100/80: Mbit/s and round-trip ms), or a preset ({})",
                PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
            )
        };
        let (b, r) = spec.split_once('/').ok_or_else(bad)?;
        let (mbps, rtt) = (b.trim().parse::<f64>().map_err(|_| bad())?, r.trim().parse::<f64>().map_err(|_| bad())?);
        if !(mbps.is_finite() && mbps > 0.0 && (0.0..=60_000.0).contains(&rtt)) {
            return Err(format!("link '{spec}': bandwidth must be positive and the round trip in [0, 60000] ms"));
        }
        Ok(Some(LinkModel::from_rtt(mbps, rtt)))
    }

    /// `MBPS/RTT_MS`, the spec [`LinkModel::parse`] reads back.
    pub fn spec(&self) -> String {
        format!("{}/{}", self.bandwidth_bps / 1e6, self.rtt().as_secs_f64() * 1e3)
    }

    /// Time this link needs for `bytes` bytes in `rounds` flights, by the model above.
    pub fn estimate(&self, bytes: u64, rounds: u64) -> Duration {
        Duration::from_secs_f64(bytes as f64 * 8.0 / self.bandwidth_bps)
            + self.latency * rounds as u32
    }
}

/// A named link: bandwidth and round-trip time, and where the setting comes from.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub name: &'static str,
    pub mbps: f64,
    pub rtt_ms: f64,
    pub source: &'static str,
}

/// The named links. Ours first (the settings of the results recorded so far), then the papers'
/// (REFERENCE.md §7): BumbleBee states "ping" times, read here as round trips; BLB and ROTL state
/// RTTs.
pub const PRESETS: [Preset; 6] = [
    Preset { name: "lan", mbps: 1000.0, rtt_ms: 1.0, source: "nectar's LAN: 1 Gbit/s, 0.5 ms each way" },
    Preset { name: "wan", mbps: 400.0, rtt_ms: 8.0, source: "nectar's WAN: 400 Mbit/s, 4 ms each way" },
    Preset { name: "bumblebee-wan", mbps: 400.0, rtt_ms: 4.0, source: "BumbleBee §VII WAN: 400 Mbit/s, 4 ms ping (Linux tc), read as RTT" },
    Preset { name: "blb-wan2", mbps: 100.0, rtt_ms: 4.0, source: "BLB §7.1 WAN2: 100 Mbit/s, 4 ms (RTT, as its LAN)" },
    Preset { name: "blb-wan3", mbps: 100.0, rtt_ms: 80.0, source: "BLB §7.1 WAN3: 100 Mbit/s, 80 ms (RTT, as its LAN)" },
    Preset { name: "rotl-wan", mbps: 100.0, rtt_ms: 50.0, source: "ROTL §VII-B WAN: 100 Mbit/s, 50 ms RTT" },
];

/// Wraps a channel with the link model.
pub struct Simulated<C: Channel> {
    inner: C,
    model: LinkModel,
    /// When this end's outgoing pipe is free again (ns since the epoch).
    pipe_free_ns: u128,
}

fn now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

impl<C: Channel> Simulated<C> {
    pub fn new(inner: C, model: LinkModel) -> Self {
        Simulated { inner, model, pipe_free_ns: 0 }
    }
    pub fn model(&self) -> LinkModel {
        self.model
    }
    pub fn into_inner(self) -> C {
        self.inner
    }
}

impl<C: Channel> Simulated<C> {
    /// `msg` with its arrival time in front: it leaves when this end's pipe is free, takes
    /// its transfer time there, then the one-way latency.
    fn stamp(&mut self, msg: &[u8]) -> Vec<u8> {
        let wire = (msg.len() + FRAME_HEADER) as f64;
        let tx_ns = (wire * 8.0 / self.model.bandwidth_bps * 1e9) as u128;
        let start = self.pipe_free_ns.max(now_ns());
        self.pipe_free_ns = start + tx_ns;
        let arrival = self.pipe_free_ns + self.model.latency.as_nanos();
        let mut framed = Vec::with_capacity(msg.len() + 16);
        framed.extend_from_slice(&(arrival as u64).to_le_bytes());
        framed.extend_from_slice(msg);
        framed
    }

    /// A received frame without its arrival time, once that time has come.
    fn arrive(mut m: Vec<u8>) -> Result<Vec<u8>, NetError> {
        if m.len() < 8 {
            return Err(NetError::Truncated { expected: 8, got: m.len() });
        }
        let arrival = u64::from_le_bytes(m[..8].try_into().expect("8 bytes")) as u128;
        let now = now_ns();
        if arrival > now {
            std::thread::sleep(Duration::from_nanos((arrival - now) as u64));
        }
        m.drain(..8);
        Ok(m)
    }
}

impl<C: Channel> Channel for Simulated<C> {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        let framed = self.stamp(msg);
        self.inner.send(&framed)
    }

    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        let m = self.inner.recv()?;
        Self::arrive(m)
    }

    /// Each direction is its own pipe: this end's frames are priced on its pipe as they leave,
    /// the peer's arrive by theirs, so the two transfers overlap.
    fn send_while_receiving(&mut self, mine: &[Vec<u8>], count: usize, first: bool) -> Result<Vec<Vec<u8>>, NetError> {
        let stamped: Vec<Vec<u8>> = mine.iter().map(|m| self.stamp(m)).collect();
        let got = self.inner.send_while_receiving(&stamped, count, first)?;
        got.into_iter().map(Self::arrive).collect()
    }

    fn flush(&mut self) -> Result<(), NetError> {
        self.inner.flush()
    }

    fn cancel_token(&self) -> Option<crate::CancelToken> {
        self.inner.cancel_token()
    }

    fn stats(&self) -> Stats {
        // The inner channel counted one 8-byte timestamp per message; remove them.
        let mut s = self.inner.stats();
        s.bytes_sent -= 8 * s.msgs_sent;
        s.bytes_recv -= 8 * s.msgs_recv;
        s
    }

    fn set_limits(&mut self, limits: Limits) -> Result<(), NetError> {
        // Each inner frame carries an 8-byte arrival time in front of the payload.
        self.inner.set_limits(Limits { max_frame: limits.max_frame.saturating_add(8), ..limits })
    }

    fn abort(&mut self, reason: &str) -> Result<(), NetError> {
        self.inner.abort(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::MemChannel;
    use std::time::Instant;

    #[test]
    fn latency_per_flight_and_stats_unchanged() {
        let (a, b) = MemChannel::pair();
        let m = LinkModel::new(1e6, 20.0);
        let (mut a, mut b) = (Simulated::new(a, m), Simulated::new(b, m));
        let t = Instant::now();
        let h = std::thread::spawn(move || {
            let x = b.recv().unwrap();
            b.send(&x).unwrap();
            b.stats()
        });
        a.send(&[1, 2, 3]).unwrap();
        assert_eq!(a.recv().unwrap(), vec![1, 2, 3]);
        let el = t.elapsed();
        let sb = h.join().unwrap();
        assert!(el >= Duration::from_millis(40) && el < Duration::from_millis(200), "{el:?}");
        assert_eq!(a.stats().bytes_sent, 7);
        assert_eq!(sb.bytes_recv, 7);
        assert_eq!(a.stats().rounds, 1);
    }

    #[test]
    fn bandwidth_shapes_a_transfer() {
        // 2 MB at 160 Mbit/s: 100 ms (the 100 MB figure is `nectar bench net`).
        let (a, b) = MemChannel::pair();
        let m = LinkModel::new(160.0, 0.0);
        let (mut a, mut b) = (Simulated::new(a, m), Simulated::new(b, m));
        let chunk = vec![0u8; 1 << 16];
        let t = Instant::now();
        let h = std::thread::spawn(move || {
            for _ in 0..32 {
                b.recv().unwrap();
            }
        });
        for _ in 0..32 {
            a.send(&chunk).unwrap();
        }
        h.join().unwrap();
        let s = t.elapsed().as_secs_f64();
        assert!((0.09..0.2).contains(&s), "{s}");
    }

    #[test]
    fn a_duplex_step_carries_both_directions_at_once() {
        // 4 MB each way at 160 Mbit/s and 10 ms one way: 210 ms of transfer per direction,
        // overlapped (≈ 220 ms), where one direction after the other takes ≈ 440 ms.
        let (a, b) = MemChannel::pair();
        let m = LinkModel::new(160.0, 20.0);
        let (mut a, mut b) = (Simulated::new(a, m), Simulated::new(b, m));
        let frames = vec![vec![7u8; 2 << 20], vec![9u8; 2 << 20]];
        let t = Instant::now();
        let f2 = frames.clone();
        let h = std::thread::spawn(move || b.send_while_receiving(&f2, 2, false).unwrap());
        let got = a.send_while_receiving(&frames, 2, true).unwrap();
        let theirs = h.join().unwrap();
        let s = t.elapsed().as_secs_f64();
        assert_eq!((got, theirs), (frames.clone(), frames));
        assert!((0.2..0.35).contains(&s), "{s}");
    }

    #[test]
    fn link_specs() {
        assert_eq!(LinkModel::parse("none").expect("none parses"), None);
        assert_eq!(LinkModel::parse("lan").expect("lan parses"), Some(LinkModel::LAN));
        assert_eq!(LinkModel::parse("wan").expect("wan parses"), Some(LinkModel::WAN));
        let w3 = LinkModel::parse("blb-wan3").expect("blb-wan3 parses").expect("a link");
        assert_eq!((w3.bandwidth_bps, w3.latency, w3.rtt()), (100e6, Duration::from_millis(40), Duration::from_millis(80)));
        let m = LinkModel::parse(" 250/12.5 ").expect("a spec parses").expect("a link");
        assert_eq!((m.bandwidth_bps, m.rtt()), (250e6, Duration::from_micros(12_500)));
        assert_eq!(LinkModel::parse(&m.spec()).expect("spec() parses back"), Some(m));
        for bad in ["moon", "100", "100/", "/80", "0/80", "-5/10", "100/-1", "inf/3", "NaN/4", "100/1e9"] {
            let e = LinkModel::parse(bad).unwrap_err();
            assert!(e.contains(bad.trim()) || e.contains("bandwidth"), "{bad}: {e}");
        }
        // every preset parses, names are distinct
        for p in PRESETS {
            assert!(LinkModel::parse(p.name).expect("every preset parses").is_some());
            assert_eq!(PRESETS.iter().filter(|q| q.name == p.name).count(), 1);
        }
    }
}
