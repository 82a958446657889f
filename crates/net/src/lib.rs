//! `nectar-net`: one party's end of a two-party link (see `DESIGN.md`, layer `net`).
//!
//! A [`Channel`] sends and receives framed byte messages and counts everything it does in
//! [`Stats`]: bytes (frame headers included, i.e. what a socket carries), messages and rounds.
//! Implementations: [`mem::MemChannel`] (both parties in one process, for tests),
//! [`tcp::TcpChannel`] (real sockets) and [`sim::Simulated`] (imposes a bandwidth and a one-way
//! latency on any channel; links as data, `MBPS/RTT_MS` or a named preset of the papers'
//! settings, [`sim::LinkModel::parse`], [`sim::PRESETS`]).
//!
//! Wire format of a frame (pinned): a 4-byte little-endian payload length, then the payload.
//! Integer slices travel as little-endian words in one frame; the frame length gives the count.
//! A header of [`ABORT_MARK`] is never a data frame: it is followed by one short frame holding
//! the reason the sender ended the session ([`Channel::abort`]), which the receiver reports as
//! [`NetError::Aborted`] wherever it was waiting.

pub mod mem;
pub mod sim;
pub mod stats;
pub mod tcp;
pub mod trace;

pub use mem::MemChannel;
pub use sim::{linked_pair, LinkModel, Simulated};
pub use stats::Stats;
pub use tcp::TcpChannel;
pub use trace::{replay, Event, Traced};

/// Bytes of the frame header (the payload length, `u32` little-endian).
pub const FRAME_HEADER: usize = 4;

/// Default largest accepted payload (LOCAL): 1 GiB. Larger frames are typed errors.
pub const DEFAULT_MAX_FRAME: usize = 1 << 30;

/// Largest frame a server accepts before the handshake completes (LOCAL): the `Hello` is a few
/// KiB of JSON, so an unauthenticated peer can never make the server buffer more than this.
pub const HANDSHAKE_MAX_FRAME: usize = 64 << 10;

/// Frame header value that announces an abort frame instead of data (wire format, pinned).
/// Larger than any accepted payload, so it never collides with a data frame.
pub const ABORT_MARK: u32 = u32::MAX;

/// Longest abort reason sent or accepted, in bytes (longer reasons are cut).
pub const MAX_ABORT_REASON: usize = 1024;

/// Per-connection limits a receiver enforces (LOCAL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted payload; a larger header ends the connection before anything is read.
    pub max_frame: usize,
    /// Time allowed for one whole frame (header and payload) to arrive, and for each write to
    /// progress. A peer that trickles bytes cannot stretch it: the deadline is per frame, not
    /// per read. `None` waits forever.
    pub frame_deadline: Option<std::time::Duration>,
}

/// Which party this end belongs to. P0 is the server (model owner), P1 the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Server,
    Client,
}

impl Role {
    /// 0 for the server, 1 for the client.
    pub fn index(self) -> usize {
        match self {
            Role::Server => 0,
            Role::Client => 1,
        }
    }
    /// The other party.
    pub fn peer(self) -> Role {
        match self {
            Role::Server => Role::Client,
            Role::Client => Role::Server,
        }
    }
}

/// Transport errors. Each one ends the session that saw it; none is a panic.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("peer closed the connection")]
    Closed,
    #[error("frame of {len} bytes exceeds the limit of {max} bytes")]
    FrameTooLarge { len: usize, max: usize },
    #[error("truncated frame: expected {expected} bytes, got {got}")]
    Truncated { expected: usize, got: usize },
    #[error("message of {len} bytes is not a whole number of {word}-byte words")]
    Misaligned { len: usize, word: usize },
    #[error("expected {expected} {what}, got {got}")]
    UnexpectedLength { what: &'static str, expected: usize, got: usize },
    #[error("timed out waiting for the peer")]
    Timeout,
    /// The session was cancelled (its peer is gone, or the server cut it) while it computed.
    #[error("session cancelled")]
    Cancelled,
    /// The peer ended the session and said why ([`Channel::abort`]).
    #[error("the peer ended the session: {0}")]
    Aborted(String),
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// A session's cancellation as its long local computations poll it between blocks of work
/// ([`Channel::cancel_token`]): a session whose peer is gone stops computing, not only at its
/// next send.
#[derive(Clone)]
pub struct CancelToken(std::sync::Arc<dyn Fn() -> bool + Send + Sync>);

impl CancelToken {
    /// A token that reads `cancelled` (cheap: it is called once per block of work).
    pub fn new(cancelled: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        CancelToken(std::sync::Arc::new(cancelled))
    }

    /// `Err(NetError::Cancelled)` once the session is cancelled.
    pub fn check(&self) -> Result<(), NetError> {
        match (self.0)() {
            true => Err(NetError::Cancelled),
            false => Ok(()),
        }
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CancelToken")
    }
}

/// [`CancelToken::check`] on an optional token (a channel without cancellation never stops).
pub fn check_cancel(t: &Option<CancelToken>) -> Result<(), NetError> {
    t.as_ref().map_or(Ok(()), CancelToken::check)
}

/// One party's end of a framed, counted two-party link.
///
/// `send` may buffer; `recv` flushes pending sends first, so a protocol never deadlocks waiting
/// for a message that is still in its own buffer.
pub trait Channel: Send {
    /// Send one framed message.
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError>;
    /// Receive one framed message.
    fn recv(&mut self) -> Result<Vec<u8>, NetError>;
    /// Push buffered messages to the peer.
    fn flush(&mut self) -> Result<(), NetError>;
    /// Counters since this channel was created.
    fn stats(&self) -> Stats;

    /// Apply new receive limits from the next frame on (channels without limits ignore them).
    fn set_limits(&mut self, _limits: Limits) -> Result<(), NetError> {
        Ok(())
    }

    /// Tell the peer why this session ends (at most [`MAX_ABORT_REASON`] bytes), then close.
    /// Best effort: channels that cannot carry an abort frame just return.
    fn abort(&mut self, _reason: &str) -> Result<(), NetError> {
        Ok(())
    }

    /// The session's cancellation, for computations that run long between messages (`None`:
    /// this channel is never cancelled; wrappers forward their inner channel's).
    fn cancel_token(&self) -> Option<CancelToken> {
        None
    }

    /// Both parties at once (a *duplex* step, issue 52): sends the frames `mine` and receives
    /// `count` frames of the peer's, which it sends at the same point. Channels whose link
    /// carries both directions together override it so that the two transfers overlap
    /// ([`tcp::TcpChannel`] writes from a second thread, [`mem::MemChannel`] never blocks a
    /// send, [`sim::Simulated`] prices each direction's pipe on its own); wrappers forward it.
    /// This default is ordered and so safe on any transport: the party with `first` sends
    /// everything and then receives, the other receives and then sends (both parties must
    /// pass opposite `first`s, AGREEMENT).
    fn send_while_receiving(&mut self, mine: &[Vec<u8>], count: usize, first: bool) -> Result<Vec<Vec<u8>>, NetError> {
        if first {
            for m in mine {
                self.send(m)?;
            }
            self.flush()?;
        }
        let got = (0..count).map(|_| self.recv()).collect::<Result<Vec<_>, _>>()?;
        if !first {
            for m in mine {
                self.send(m)?;
            }
            self.flush()?;
        }
        Ok(got)
    }

    /// Send `u64` words (little-endian) in one frame.
    fn send_u64s(&mut self, xs: &[u64]) -> Result<(), NetError> {
        let mut b = Vec::with_capacity(xs.len() * 8);
        for x in xs {
            b.extend_from_slice(&x.to_le_bytes());
        }
        self.send(&b)
    }

    /// Receive a frame of `u64` words.
    fn recv_u64s(&mut self) -> Result<Vec<u64>, NetError> {
        let b = self.recv()?;
        if b.len() % 8 != 0 {
            return Err(NetError::Misaligned { len: b.len(), word: 8 });
        }
        Ok(b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
    }

    /// Receive exactly `n` `u64` words.
    fn recv_u64s_exact(&mut self, n: usize) -> Result<Vec<u64>, NetError> {
        let v = self.recv_u64s()?;
        expect_len("u64 words", n, v.len())?;
        Ok(v)
    }

    /// Send `u128` words (little-endian) in one frame.
    fn send_u128s(&mut self, xs: &[u128]) -> Result<(), NetError> {
        let mut b = Vec::with_capacity(xs.len() * 16);
        for x in xs {
            b.extend_from_slice(&x.to_le_bytes());
        }
        self.send(&b)
    }

    /// Receive a frame of `u128` words.
    fn recv_u128s(&mut self) -> Result<Vec<u128>, NetError> {
        let b = self.recv()?;
        if b.len() % 16 != 0 {
            return Err(NetError::Misaligned { len: b.len(), word: 16 });
        }
        Ok(b.chunks_exact(16).map(|c| u128::from_le_bytes(c.try_into().expect("16 bytes"))).collect())
    }

    /// Receive exactly `n` `u128` words.
    fn recv_u128s_exact(&mut self, n: usize) -> Result<Vec<u128>, NetError> {
        let v = self.recv_u128s()?;
        expect_len("u128 words", n, v.len())?;
        Ok(v)
    }

    /// Receive a frame of exactly `n` bytes.
    fn recv_exact(&mut self, n: usize) -> Result<Vec<u8>, NetError> {
        let v = self.recv()?;
        expect_len("bytes", n, v.len())?;
        Ok(v)
    }
}

impl<C: Channel + ?Sized> Channel for Box<C> {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        (**self).send(msg)
    }
    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        (**self).recv()
    }
    fn flush(&mut self) -> Result<(), NetError> {
        (**self).flush()
    }
    fn stats(&self) -> Stats {
        (**self).stats()
    }
    fn set_limits(&mut self, limits: Limits) -> Result<(), NetError> {
        (**self).set_limits(limits)
    }
    fn cancel_token(&self) -> Option<CancelToken> {
        (**self).cancel_token()
    }
    fn abort(&mut self, reason: &str) -> Result<(), NetError> {
        (**self).abort(reason)
    }
    fn send_while_receiving(&mut self, mine: &[Vec<u8>], count: usize, first: bool) -> Result<Vec<Vec<u8>>, NetError> {
        (**self).send_while_receiving(mine, count, first)
    }
}

fn expect_len(what: &'static str, expected: usize, got: usize) -> Result<(), NetError> {
    if expected != got {
        return Err(NetError::UnexpectedLength { what, expected, got });
    }
    Ok(())
}
