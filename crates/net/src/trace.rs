//! Message traces of a run and their replay on a link model (issue 48 item 3, `nectar tune`).
//!
//! [`Traced`] wraps a channel and records, per frame sent or received, its payload size and
//! the computation that preceded it: the wall time between the end of this end's previous
//! channel call and the start of this one (time blocked in a receive is not computation and
//! is not counted). Run both parties unlinked (in one process, [`crate::MemChannel`]) and the
//! two traces hold everything a link adds time to.
//!
//! [`replay`] then plays both traces on a [`LinkModel`] by the rules of [`crate::Simulated`]:
//! each direction a pipe (a frame of `payload + FRAME_HEADER` bytes leaves when the pipe is
//! free and its sender has computed up to it, takes its transfer time, and is readable one
//! one-way latency after its last bit left); a send never blocks; a receive waits for its
//! frame. Frames match in order per direction. So a duplex step
//! ([`crate::Channel::send_while_receiving`]) costs one latency and the larger of its two
//! transfers, a ping-pong exchange two latencies and both transfers, and computation overlaps
//! the other party's waiting, which a sum of per-operator costs (`seconds + flights·L +
//! bytes/B`) cannot tell apart.

use crate::{Channel, Limits, LinkModel, NetError, Stats, FRAME_HEADER};
use std::collections::VecDeque;
use std::time::Instant;

/// One channel call of a trace: a frame sent or received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// Sent (else received).
    pub send: bool,
    /// Payload bytes (the frame header is added by the replay, as the link carries it).
    pub bytes: u64,
    /// Nanoseconds of computation on this end before the call (since its previous call ended).
    pub gap_ns: u64,
}

/// A channel that records its frames ([`Event`]s); counters and behaviour are the inner one's.
pub struct Traced<C: Channel> {
    inner: C,
    events: Vec<Event>,
    /// When this end's previous channel call returned (`None` before the first).
    last: Option<Instant>,
    started: Instant,
}

impl<C: Channel> Traced<C> {
    pub fn new(inner: C) -> Self {
        Traced { inner, events: Vec::new(), last: None, started: Instant::now() }
    }

    /// The events so far, in call order (event `i` is the channel's `i`-th message, sent or
    /// received: `msgs_sent + msgs_recv` of [`Stats`] counts them).
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Computation since the previous call (or since creation).
    fn gap(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.last.unwrap_or(self.started)).as_nanos().min(u64::MAX as u128) as u64
    }

    fn push(&mut self, send: bool, bytes: usize, gap_ns: u64) {
        self.events.push(Event { send, bytes: bytes as u64, gap_ns });
    }
}

impl<C: Channel> Channel for Traced<C> {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        let gap = self.gap(Instant::now());
        let r = self.inner.send(msg);
        self.push(true, msg.len(), gap);
        self.last = Some(Instant::now());
        r
    }

    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        let gap = self.gap(Instant::now());
        let m = self.inner.recv()?;
        self.push(false, m.len(), gap);
        self.last = Some(Instant::now());
        Ok(m)
    }

    /// Recorded as this end's sends, then its receives (the order in which [`replay`] plays a
    /// duplex step: the sends leave at once, the receives wait).
    fn send_while_receiving(&mut self, mine: &[Vec<u8>], count: usize, first: bool) -> Result<Vec<Vec<u8>>, NetError> {
        let gap = self.gap(Instant::now());
        let got = self.inner.send_while_receiving(mine, count, first)?;
        for (i, m) in mine.iter().enumerate() {
            self.push(true, m.len(), if i == 0 { gap } else { 0 });
        }
        for (i, m) in got.iter().enumerate() {
            self.push(false, m.len(), if i == 0 && mine.is_empty() { gap } else { 0 });
        }
        self.last = Some(Instant::now());
        Ok(got)
    }

    fn flush(&mut self) -> Result<(), NetError> {
        self.inner.flush()
    }

    fn stats(&self) -> Stats {
        self.inner.stats()
    }

    fn set_limits(&mut self, limits: Limits) -> Result<(), NetError> {
        self.inner.set_limits(limits)
    }

    fn abort(&mut self, reason: &str) -> Result<(), NetError> {
        self.inner.abort(reason)
    }

    fn cancel_token(&self) -> Option<crate::CancelToken> {
        self.inner.cancel_token()
    }
}

/// One party's state in [`replay`].
struct Player<'a> {
    events: &'a [Event],
    next: usize,
    /// This end's clock, seconds.
    now: f64,
    /// When its outgoing pipe is free again.
    pipe_free: f64,
    /// Its clock at the end of each event played.
    ends: Vec<f64>,
}

/// Both traces played on `link` (see the module docs): party `a`'s clock, in seconds from the
/// start of the traces, at the end of each of its events. An error when the traces do not
/// match (a receive whose frame the peer never sends, or frames left unread).
pub fn replay(a: &[Event], b: &[Event], link: &LinkModel) -> Result<Vec<f64>, String> {
    let (bw, lat) = (link.bandwidth_bps, link.latency.as_secs_f64());
    let mut p = [a, b].map(|events| Player { events, next: 0, now: 0.0, pipe_free: 0.0, ends: Vec::with_capacity(events.len()) });
    // Arrival times of the frames in flight to each party, oldest first.
    let mut inbox: [VecDeque<f64>; 2] = [VecDeque::new(), VecDeque::new()];
    loop {
        let mut moved = false;
        for k in 0..2 {
            while let Some(e) = p[k].events.get(p[k].next).copied() {
                if !e.send && inbox[k].is_empty() {
                    break;
                }
                let me = &mut p[k];
                me.now += e.gap_ns as f64 * 1e-9;
                if e.send {
                    let start = me.pipe_free.max(me.now);
                    me.pipe_free = start + (e.bytes as f64 + FRAME_HEADER as f64) * 8.0 / bw;
                    inbox[1 - k].push_back(me.pipe_free + lat);
                } else if let Some(t) = inbox[k].pop_front() {
                    me.now = me.now.max(t);
                }
                me.ends.push(me.now);
                me.next += 1;
                moved = true;
            }
        }
        let done = p.iter().all(|q| q.next == q.events.len());
        if done {
            if inbox.iter().any(|q| !q.is_empty()) {
                return Err("trace replay: frames sent that the peer's trace never receives".into());
            }
            let [pa, _] = p;
            return Ok(pa.ends);
        }
        if !moved {
            return Err(format!(
                "trace replay: both parties wait for a frame (events {} of {} and {} of {})",
                p[0].next,
                p[0].events.len(),
                p[1].next,
                p[1].events.len()
            ));
        }
    }
}

/// A link of unlimited bandwidth and a one-way latency of one second: a replay of traces
/// [`without_computation`] on it ends at the number of one-way latencies on its critical path.
pub const FLIGHT_COUNTER: LinkModel = LinkModel { bandwidth_bps: f64::INFINITY, latency: std::time::Duration::from_secs(1) };

/// `t` with every computation gap zeroed: what the link alone adds to a replay.
pub fn without_computation(t: &[Event]) -> Vec<Event> {
    t.iter().map(|e| Event { gap_ns: 0, ..*e }).collect()
}

/// One-way latencies on the critical path of the two traces: [`replay`] with no computation,
/// unlimited bandwidth and a latency of one (a duplex step counts once, where
/// [`Stats::rounds`] of both parties count it twice).
pub fn critical_flights(a: &[Event], b: &[Event]) -> Result<u64, String> {
    let (sa, sb) = (without_computation(a), without_computation(b));
    let ends_a = replay(&sa, &sb, &FLIGHT_COUNTER)?;
    let ends_b = replay(&sb, &sa, &FLIGHT_COUNTER)?;
    let last = |v: &[f64]| v.last().copied().unwrap_or(0.0);
    Ok(last(&ends_a).max(last(&ends_b)).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemChannel;
    use std::time::Duration;

    fn ev(send: bool, bytes: u64, gap_ms: u64) -> Event {
        Event { send, bytes, gap_ns: gap_ms * 1_000_000 }
    }

    const LINK: LinkModel = LinkModel { bandwidth_bps: 8e6, latency: Duration::from_millis(10) };

    /// Seconds of `payload` bytes on [`LINK`] (1 MB/s), header included.
    fn tx(payload: u64) -> f64 {
        (payload + FRAME_HEADER as u64) as f64 / 1e6
    }

    #[test]
    fn ping_pong_pays_two_latencies_and_both_transfers() -> Result<(), String> {
        // a computes 5 ms, sends 996 B; b computes 2 ms after it arrives, answers 1996 B.
        let a = [ev(true, 996, 5), ev(false, 1996, 0)];
        let b = [ev(false, 996, 0), ev(true, 1996, 2)];
        let ends = replay(&a, &b, &LINK)?;
        let want = 0.005 + tx(996) + 0.010 + 0.002 + tx(1996) + 0.010;
        assert!((ends[1] - want).abs() < 1e-12, "{ends:?} vs {want}");
        assert_eq!(ends[0], 0.005);
        Ok(())
    }

    #[test]
    fn a_duplex_step_pays_one_latency_and_the_larger_transfer() -> Result<(), String> {
        let a = [ev(true, 9996, 0), ev(false, 4996, 0)];
        let b = [ev(true, 4996, 0), ev(false, 9996, 0)];
        let ends = replay(&a, &b, &LINK)?;
        assert!((ends[1] - (tx(4996) + 0.010)).abs() < 1e-12, "{ends:?}");
        let ends_b = replay(&b, &a, &LINK)?;
        assert!((ends_b[1] - (tx(9996) + 0.010)).abs() < 1e-12, "{ends_b:?}");
        assert_eq!(critical_flights(&a, &b)?, 1);
        // the same frames ping-pong: two flights
        let b2 = [ev(false, 9996, 0), ev(true, 4996, 0)];
        assert_eq!(critical_flights(&a, &b2)?, 2);
        Ok(())
    }

    #[test]
    fn frames_queue_on_their_pipe() -> Result<(), String> {
        // two frames back to back: the second leaves when the first has left
        let a = [ev(true, 996, 0), ev(true, 996, 0), ev(false, 0, 0)];
        let b = [ev(false, 996, 0), ev(false, 996, 0), ev(true, 0, 0)];
        let ends_b = replay(&b, &a, &LINK)?;
        assert!((ends_b[1] - (2.0 * tx(996) + 0.010)).abs() < 1e-12, "{ends_b:?}");
        let ends_a = replay(&a, &b, &LINK)?;
        assert!((ends_a[2] - (2.0 * tx(996) + 0.020 + tx(0))).abs() < 1e-12, "{ends_a:?}");
        Ok(())
    }

    #[test]
    fn mismatched_traces_are_errors() {
        let a = [ev(false, 1, 0)];
        let b = [ev(false, 1, 0)];
        assert!(replay(&a, &b, &LINK).unwrap_err().contains("wait"));
        let c = [ev(true, 1, 0)];
        assert!(replay(&c, &[], &LINK).unwrap_err().contains("never receives"));
    }

    #[test]
    fn traced_records_what_crosses_and_replays_like_the_run() -> Result<(), NetError> {
        let (a, b) = MemChannel::pair();
        let (mut a, mut b) = (Traced::new(a), Traced::new(b));
        let h = std::thread::spawn(move || -> Result<Traced<MemChannel>, NetError> {
            let x = b.recv()?;
            std::thread::sleep(Duration::from_millis(20));
            b.send(&x)?;
            let got = b.send_while_receiving(&[vec![1; 30]], 1, false)?;
            assert_eq!(got, vec![vec![2; 40]]);
            Ok(b)
        });
        a.send(&[7; 10])?;
        assert_eq!(a.recv()?, vec![7; 10]);
        let got = a.send_while_receiving(&[vec![2; 40]], 1, true)?;
        assert_eq!(got, vec![vec![1; 30]]);
        let b = h.join().map_err(|_| NetError::Closed)??;
        let sizes = |t: &[Event]| t.iter().map(|e| (e.send, e.bytes)).collect::<Vec<_>>();
        assert_eq!(sizes(a.events()), vec![(true, 10), (false, 10), (true, 40), (false, 30)]);
        assert_eq!(sizes(b.events()), vec![(false, 10), (true, 10), (true, 30), (false, 40)]);
        // b's 20 ms of computation is in its send's gap, not in a's receive
        assert!(b.events()[1].gap_ns >= 20_000_000, "{:?}", b.events());
        assert!(a.events()[1].gap_ns < 20_000_000, "{:?}", a.events());
        let s = a.stats();
        assert_eq!((s.msgs_sent + s.msgs_recv) as usize, a.events().len());
        let ends = replay(a.events(), b.events(), &LINK).map_err(|_| NetError::Closed)?;
        // b's duplex frame left right after its answer: a's last receive is two latencies in
        assert!(ends[3] >= 0.020 + 2.0 * 0.010 && ends[3] < 0.020 + 3.0 * 0.010, "{ends:?}");
        assert_eq!(critical_flights(a.events(), b.events()).map_err(|_| NetError::Closed)?, 3);
        Ok(())
    }
}
