//! In-memory channel pair: both parties in one process (tests, benchmarks, `simulate`).

use crate::stats::Counter;
use crate::{Channel, NetError, Stats, DEFAULT_MAX_FRAME, FRAME_HEADER};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

/// One end of an in-memory link. Frames are moved, not copied through a socket.
pub struct MemChannel {
    tx: Sender<Vec<u8>>,
    rx: Receiver<Vec<u8>>,
    counter: Counter,
    max_frame: usize,
    timeout: Option<Duration>,
}

impl MemChannel {
    /// A connected pair `(server end, client end)`.
    pub fn pair() -> (MemChannel, MemChannel) {
        let (t0, r1) = channel();
        let (t1, r0) = channel();
        let mk = |tx, rx| MemChannel {
            tx,
            rx,
            counter: Counter::default(),
            max_frame: DEFAULT_MAX_FRAME,
            timeout: None,
        };
        (mk(t0, r0), mk(t1, r1))
    }

    /// Set the largest accepted frame (LOCAL).
    pub fn with_max_frame(mut self, max: usize) -> Self {
        self.max_frame = max;
        self
    }

    /// Give up waiting for the peer after `t` (default: wait until the peer's end is dropped).
    pub fn with_timeout(mut self, t: Duration) -> Self {
        self.timeout = Some(t);
        self
    }
}

impl Channel for MemChannel {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        if msg.len() > self.max_frame {
            return Err(NetError::FrameTooLarge { len: msg.len(), max: self.max_frame });
        }
        self.tx.send(msg.to_vec()).map_err(|_| NetError::Closed)?;
        self.counter.on_send(msg.len() + FRAME_HEADER);
        Ok(())
    }

    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        let m = match self.timeout {
            None => self.rx.recv().map_err(|_| NetError::Closed)?,
            Some(t) => self.rx.recv_timeout(t).map_err(|e| match e {
                RecvTimeoutError::Timeout => NetError::Timeout,
                RecvTimeoutError::Disconnected => NetError::Closed,
            })?,
        };
        if m.len() > self.max_frame {
            return Err(NetError::FrameTooLarge { len: m.len(), max: self.max_frame });
        }
        self.counter.on_recv(m.len() + FRAME_HEADER);
        Ok(m)
    }

    fn flush(&mut self) -> Result<(), NetError> {
        Ok(())
    }

    fn stats(&self) -> Stats {
        self.counter.stats()
    }

    /// A send never waits for the peer here (an unbounded queue), so both parties send first.
    fn send_while_receiving(&mut self, mine: &[Vec<u8>], count: usize, _first: bool) -> Result<Vec<Vec<u8>>, NetError> {
        for m in mine {
            self.send(m)?;
        }
        (0..count).map(|_| self.recv()).collect()
    }
}

/// Run a two-party computation in two threads over an in-memory pair:
/// `f0` as the server (P0), `f1` as the client (P1). Panics in either party propagate.
pub fn run_pair<A, B, FA, FB>(f0: FA, f1: FB) -> (A, B)
where
    A: Send,
    B: Send,
    FA: FnOnce(&mut MemChannel) -> A + Send,
    FB: FnOnce(&mut MemChannel) -> B + Send,
{
    let (mut c0, mut c1) = MemChannel::pair();
    std::thread::scope(|s| {
        let h = s.spawn(move || f1(&mut c1));
        let a = f0(&mut c0);
        let b = match h.join() {
            Ok(b) => b,
            Err(p) => std::panic::resume_unwind(p),
        };
        (a, b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_exact_stats() {
        let (a, b) = run_pair(
            |c| {
                c.send(b"hello").unwrap();
                c.send_u64s(&[1, 2, u64::MAX]).unwrap();
                let r = c.recv_u128s_exact(2).unwrap();
                assert_eq!(r, vec![7, u128::MAX]);
                c.send(&[]).unwrap();
                c.stats()
            },
            |c| {
                assert_eq!(c.recv().unwrap(), b"hello");
                assert_eq!(c.recv_u64s().unwrap(), vec![1, 2, u64::MAX]);
                c.send_u128s(&[7, u128::MAX]).unwrap();
                assert!(c.recv().unwrap().is_empty());
                c.stats()
            },
        );
        assert_eq!(a.bytes_sent, (5 + 4) + (24 + 4) + 4);
        assert_eq!(a.bytes_recv, 32 + 4);
        assert_eq!((a.msgs_sent, a.msgs_recv, a.rounds), (3, 1, 2));
        assert_eq!(b.bytes_sent, a.bytes_recv);
        assert_eq!(b.bytes_recv, a.bytes_sent);
        assert_eq!((b.msgs_sent, b.msgs_recv, b.rounds), (1, 3, 1));
    }

    #[test]
    fn typed_errors() {
        let (mut a, b) = MemChannel::pair();
        let mut a2 = MemChannel::pair().0.with_max_frame(4);
        assert!(matches!(a2.send(&[0; 5]), Err(NetError::FrameTooLarge { len: 5, max: 4 })));
        a.send(&[1, 2, 3]).unwrap();
        let mut b = b.with_timeout(Duration::from_millis(10));
        assert!(matches!(b.recv_u64s(), Err(NetError::Misaligned { len: 3, word: 8 })));
        assert!(matches!(b.recv(), Err(NetError::Timeout)));
        a.send_u64s(&[1]).unwrap();
        assert!(matches!(b.recv_u64s_exact(2), Err(NetError::UnexpectedLength { .. })));
        drop(a);
        assert!(matches!(b.recv(), Err(NetError::Closed)));
        assert!(matches!(b.send(&[1]), Err(NetError::Closed)));
    }
}
