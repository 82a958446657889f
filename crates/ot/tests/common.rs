#![allow(dead_code)]
//! Shared helpers of the two-party tests.

use nectar_net::{Channel, MemChannel, NetError, Stats};
use std::time::Duration;

/// Run both parties in two threads, each owning (and dropping on return) its channel end, so a
/// party that stops early is seen by the other as a closed channel, never a hang.
pub fn run_owned<A: Send, B: Send>(
    f0: impl FnOnce(MemChannel) -> A + Send,
    f1: impl FnOnce(MemChannel) -> B + Send,
) -> (A, B) {
    let (c0, c1) = MemChannel::pair();
    let (c0, c1) = (c0.with_timeout(Duration::from_secs(60)), c1.with_timeout(Duration::from_secs(60)));
    std::thread::scope(|s| {
        let h0 = s.spawn(move || f0(c0));
        let h1 = s.spawn(move || f1(c1));
        (h0.join().expect("party 0 panicked"), h1.join().expect("party 1 panicked"))
    })
}

/// What a misbehaving peer does to its `at`-th sent message (0-based).
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    Truncate,
    Extend,
    Disconnect,
}

/// A channel that corrupts one outgoing message.
pub struct Faulty {
    pub inner: Option<MemChannel>,
    pub sent: usize,
    pub at: usize,
    pub fault: Fault,
}

impl Channel for Faulty {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        let i = self.sent;
        self.sent += 1;
        let inner = self.inner.as_mut().ok_or(NetError::Closed)?;
        if i != self.at {
            return inner.send(msg);
        }
        match self.fault {
            Fault::Truncate => inner.send(&msg[..msg.len().saturating_sub(3)]),
            Fault::Extend => {
                let mut m = msg.to_vec();
                m.extend_from_slice(&[0u8; 16]);
                inner.send(&m)
            }
            Fault::Disconnect => {
                self.inner = None;
                Err(NetError::Closed)
            }
        }
    }
    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        self.inner.as_mut().ok_or(NetError::Closed)?.recv()
    }
    fn flush(&mut self) -> Result<(), NetError> {
        Ok(())
    }
    fn stats(&self) -> Stats {
        self.inner.as_ref().map(|c| c.stats()).unwrap_or_default()
    }
}

/// A channel that hashes every byte it sends (transcript pinning).
pub struct Recording<'a> {
    pub inner: &'a mut dyn Channel,
    pub hash: sha2::Sha256,
}

impl Channel for Recording<'_> {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        use sha2::Digest;
        self.hash.update((msg.len() as u64).to_le_bytes());
        self.hash.update(msg);
        self.inner.send(msg)
    }
    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        self.inner.recv()
    }
    fn flush(&mut self) -> Result<(), NetError> {
        self.inner.flush()
    }
    fn stats(&self) -> Stats {
        self.inner.stats()
    }
}
