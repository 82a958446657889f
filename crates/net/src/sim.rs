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
//! Presets (BumbleBee §VII "Network"): LAN = 1 Gbit/s with 0.5 ms, WAN = 400 Mbit/s with 4 ms.

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

    /// `"lan"`, `"wan"` or `"none"` (no simulation: `None`).
    pub fn preset(name: &str) -> Option<Option<LinkModel>> {
        match name {
            "lan" => Some(Some(Self::LAN)),
            "wan" => Some(Some(Self::WAN)),
            "none" => Some(None),
            _ => None,
        }
    }

    /// Time this link needs for `bytes` bytes in `rounds` flights, by the model above.
    pub fn estimate(&self, bytes: u64, rounds: u64) -> Duration {
        Duration::from_secs_f64(bytes as f64 * 8.0 / self.bandwidth_bps)
            + self.latency * rounds as u32
    }
}

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

impl<C: Channel> Channel for Simulated<C> {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        let wire = (msg.len() + FRAME_HEADER) as f64;
        let tx_ns = (wire * 8.0 / self.model.bandwidth_bps * 1e9) as u128;
        let start = self.pipe_free_ns.max(now_ns());
        self.pipe_free_ns = start + tx_ns;
        let arrival = self.pipe_free_ns + self.model.latency.as_nanos();
        let mut framed = Vec::with_capacity(msg.len() + 16);
        framed.extend_from_slice(&(arrival as u64).to_le_bytes());
        framed.extend_from_slice(msg);
        self.inner.send(&framed)
    }

    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        let mut m = self.inner.recv()?;
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

    fn flush(&mut self) -> Result<(), NetError> {
        self.inner.flush()
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
}
