//! Communication counters.

use std::ops::Sub;

/// What one party's end of a channel has done.
///
/// - bytes count the frame headers too (what the link carries);
/// - a **round** is a change of direction: this party starts sending after having received (or
///   at its first send). The sum over both parties is the number of message flights, i.e. how
///   many one-way latencies the protocol pays.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub bytes_sent: u64,
    pub bytes_recv: u64,
    pub msgs_sent: u64,
    pub msgs_recv: u64,
    pub rounds: u64,
}

impl Stats {
    /// Bytes both ways as seen by this party.
    pub fn bytes_total(&self) -> u64 {
        self.bytes_sent + self.bytes_recv
    }
}

impl Sub for Stats {
    type Output = Stats;
    /// The counters accumulated between two snapshots (`later - earlier`).
    fn sub(self, e: Stats) -> Stats {
        Stats {
            bytes_sent: self.bytes_sent - e.bytes_sent,
            bytes_recv: self.bytes_recv - e.bytes_recv,
            msgs_sent: self.msgs_sent - e.msgs_sent,
            msgs_recv: self.msgs_recv - e.msgs_recv,
            rounds: self.rounds - e.rounds,
        }
    }
}

/// The bookkeeping shared by every channel implementation.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counter {
    stats: Stats,
    last_was_send: bool,
}

impl Counter {
    pub(crate) fn on_send(&mut self, wire_bytes: usize) {
        if !self.last_was_send {
            self.stats.rounds += 1;
            self.last_was_send = true;
        }
        self.stats.bytes_sent += wire_bytes as u64;
        self.stats.msgs_sent += 1;
    }

    pub(crate) fn on_recv(&mut self, wire_bytes: usize) {
        self.last_was_send = false;
        self.stats.bytes_recv += wire_bytes as u64;
        self.stats.msgs_recv += 1;
    }

    pub(crate) fn stats(&self) -> Stats {
        self.stats
    }
}
