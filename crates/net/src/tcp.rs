//! TCP channel: frames over a socket, buffered writes, bounded reads.
//!
//! A frame header announcing more than the limit, a stream that ends inside a frame, and a
//! peer that does not deliver a whole frame within the frame deadline are typed errors. The
//! deadline covers the whole frame, so a peer trickling one byte at a time cannot hold the
//! connection past it. After an oversized or truncated frame the stream is out of sync, so the
//! connection is shut down. [`refuse`] turns a connection away with an abort frame.

use crate::stats::Counter;
use crate::{Channel, Limits, NetError, Stats, ABORT_MARK, DEFAULT_MAX_FRAME, FRAME_HEADER, MAX_ABORT_REASON};
use std::io::{BufReader, BufWriter, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Default frame deadline (LOCAL): a peer that delivers no whole frame for this long ends the
/// session.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Socket buffer size for reads and writes (LOCAL).
const IO_BUF: usize = 1 << 20;

/// One end of a TCP link.
pub struct TcpChannel {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
    counter: Counter,
    max_frame: usize,
    deadline: Option<Duration>,
    broken: bool,
}

/// Reads from the socket, each read bounded by what is left of one deadline.
struct DeadlineReader<'a> {
    inner: &'a mut BufReader<TcpStream>,
    until: Option<Instant>,
}

impl Read for DeadlineReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(until) = self.until {
            // Only the socket is waited on; bytes already buffered are served at once.
            if self.inner.buffer().is_empty() {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(ErrorKind::TimedOut.into());
                }
                self.inner.get_ref().set_read_timeout(Some(left))?;
            }
        }
        self.inner.read(buf)
    }
}

impl TcpChannel {
    /// Wrap a connected stream (sets `TCP_NODELAY`, the default frame deadline and limit).
    pub fn from_stream(stream: TcpStream) -> Result<Self, NetError> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(DEFAULT_TIMEOUT))?;
        stream.set_write_timeout(Some(DEFAULT_TIMEOUT))?;
        let w = stream.try_clone()?;
        Ok(TcpChannel {
            reader: BufReader::with_capacity(IO_BUF, stream),
            writer: BufWriter::with_capacity(IO_BUF, w),
            counter: Counter::default(),
            max_frame: DEFAULT_MAX_FRAME,
            deadline: Some(DEFAULT_TIMEOUT),
            broken: false,
        })
    }

    /// Connect to a listening peer.
    pub fn connect(addr: impl ToSocketAddrs) -> Result<Self, NetError> {
        Self::from_stream(TcpStream::connect(addr)?)
    }

    /// Listen on `addr` and accept exactly one peer.
    pub fn listen(addr: impl ToSocketAddrs) -> Result<Self, NetError> {
        let l = TcpListener::bind(addr)?;
        let (s, _) = l.accept()?;
        Self::from_stream(s)
    }

    /// Set the largest accepted frame (LOCAL).
    pub fn with_max_frame(mut self, max: usize) -> Self {
        self.max_frame = max;
        self
    }

    /// Set the frame deadline (`None` waits forever): the time one whole frame may take to
    /// arrive, and each write to progress.
    pub fn set_timeout(&mut self, t: Option<Duration>) -> Result<(), NetError> {
        self.reader.get_ref().set_read_timeout(t)?;
        self.writer.get_ref().set_write_timeout(t)?;
        self.deadline = t;
        Ok(())
    }

    fn fail(&mut self, e: NetError) -> NetError {
        // Tell the peer why we hang up when it is the peer's doing (best effort, short wait:
        // a peer that does not read must not hold us here).
        let why = match &e {
            NetError::FrameTooLarge { .. } => Some(format!("over limit: {e}")),
            NetError::Timeout => Some(match self.deadline {
                Some(d) => format!("timeout: no whole message within {} s", d.as_secs_f64()),
                None => "timeout".to_string(),
            }),
            _ => None,
        };
        let streaming = matches!(e, NetError::FrameTooLarge { .. });
        if let Some(why) = why {
            let _ = self.writer.get_ref().set_write_timeout(Some(Duration::from_secs(1)));
            let _ = self.writer.write_all(&abort_frame(&why)).and_then(|_| self.writer.flush());
        }
        if streaming {
            // The peer is still sending the refused frame: closing with its bytes unread would
            // send a reset, and the peer's kernel may then drop the abort frame before the
            // peer reads it. Half-close, and discard what is in flight for a short, bounded
            // while (fixed buffer, constant memory).
            let _ = self.writer.get_ref().shutdown(Shutdown::Write);
            let stream = self.reader.get_ref();
            let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
            let (start, mut seen, mut buf) = (Instant::now(), 0usize, [0u8; 1 << 16]);
            while start.elapsed() < Duration::from_secs(1) && seen < DRAIN_MAX {
                match (&*stream).read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => seen += k,
                }
            }
        }
        self.broken = true;
        let _ = self.reader.get_ref().shutdown(Shutdown::Both);
        e
    }

    fn io_fail(&mut self, e: std::io::Error) -> NetError {
        let e = io_to_net(e);
        self.fail(e)
    }

    /// The rest of an abort frame: its reason, read under the same deadline.
    fn read_abort(&mut self, until: Option<Instant>) -> NetError {
        let mut r = DeadlineReader { inner: &mut self.reader, until };
        let mut h = [0u8; FRAME_HEADER];
        let reason = match r.read_exact(&mut h) {
            Ok(()) => {
                let len = (u32::from_le_bytes(h) as usize).min(MAX_ABORT_REASON);
                let mut b = Vec::with_capacity(len);
                match r.take(len as u64).read_to_end(&mut b) {
                    Ok(_) => String::from_utf8_lossy(&b).into_owned(),
                    Err(_) => String::from("(reason lost)"),
                }
            }
            Err(_) => String::from("(reason lost)"),
        };
        self.fail(NetError::Aborted(reason))
    }
}

/// Why a frame could not be read ([`read_frame`]); [`TcpChannel::frame_fail`] ends the
/// connection accordingly.
enum FrameFail {
    Io(std::io::Error),
    TooLarge(usize),
    Truncated { expected: usize, got: usize },
    /// An abort frame's header: its reason follows, to be read by the same deadline.
    Abort(Option<Instant>),
}

/// One frame from `reader`, whole within `deadline`, at most `max_frame` bytes.
fn read_frame(reader: &mut BufReader<TcpStream>, max_frame: usize, deadline: Option<Duration>) -> Result<Vec<u8>, FrameFail> {
    let until = deadline.map(|d| Instant::now() + d);
    let mut h = [0u8; FRAME_HEADER];
    (DeadlineReader { inner: reader, until }).read_exact(&mut h).map_err(FrameFail::Io)?;
    let header = u32::from_le_bytes(h);
    if header == ABORT_MARK {
        return Err(FrameFail::Abort(until));
    }
    let len = header as usize;
    if len > max_frame {
        return Err(FrameFail::TooLarge(len));
    }
    // Grow the buffer as bytes arrive: a lying header cannot make us allocate `len` upfront.
    let mut buf = Vec::with_capacity(len.min(IO_BUF));
    let n = DeadlineReader { inner: reader, until }.take(len as u64).read_to_end(&mut buf).map_err(FrameFail::Io)?;
    if n != len {
        return Err(FrameFail::Truncated { expected: len, got: n });
    }
    Ok(buf)
}

impl TcpChannel {
    fn frame_fail(&mut self, e: FrameFail) -> NetError {
        match e {
            FrameFail::Io(e) => self.io_fail(e),
            FrameFail::TooLarge(len) => {
                let max = self.max_frame;
                self.fail(NetError::FrameTooLarge { len, max })
            }
            FrameFail::Truncated { expected, got } => self.fail(NetError::Truncated { expected, got }),
            FrameFail::Abort(until) => self.read_abort(until),
        }
    }
}

/// The most bytes a failing connection discards from its peer after sending its abort frame
/// (so that the frame is not lost to a reset), read into a fixed buffer within one second.
const DRAIN_MAX: usize = 8 << 20;

/// The bytes of an abort frame carrying `reason` (cut to [`MAX_ABORT_REASON`] bytes).
fn abort_frame(reason: &str) -> Vec<u8> {
    let mut cut = reason.len().min(MAX_ABORT_REASON);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    let r = &reason.as_bytes()[..cut];
    let mut b = Vec::with_capacity(2 * FRAME_HEADER + r.len());
    b.extend_from_slice(&ABORT_MARK.to_le_bytes());
    b.extend_from_slice(&(r.len() as u32).to_le_bytes());
    b.extend_from_slice(r);
    b
}

/// Longest time [`Channel::abort`] reads what the peer still sends before the socket closes.
pub const ABORT_DRAIN: Duration = Duration::from_secs(2);

/// Turn away a freshly accepted connection: one abort frame carrying `reason`, then close.
/// Never blocks for long (a one-second write timeout on a new, empty socket buffer).
pub fn refuse(stream: TcpStream, reason: &str) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = (&stream).write_all(&abort_frame(reason));
    let _ = stream.shutdown(Shutdown::Write);
}

fn io_to_net(e: std::io::Error) -> NetError {
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => NetError::Timeout,
        ErrorKind::UnexpectedEof
        | ErrorKind::ConnectionReset
        | ErrorKind::ConnectionAborted
        | ErrorKind::BrokenPipe => NetError::Closed,
        _ => NetError::Io(e),
    }
}

impl Channel for TcpChannel {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        if self.broken {
            return Err(NetError::Closed);
        }
        if msg.len() > self.max_frame || msg.len() >= ABORT_MARK as usize {
            return Err(NetError::FrameTooLarge { len: msg.len(), max: self.max_frame });
        }
        let r = self
            .writer
            .write_all(&(msg.len() as u32).to_le_bytes())
            .and_then(|_| self.writer.write_all(msg));
        if let Err(e) = r {
            return Err(self.io_fail(e));
        }
        self.counter.on_send(msg.len() + FRAME_HEADER);
        Ok(())
    }

    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        if self.broken {
            return Err(NetError::Closed);
        }
        self.flush()?;
        match read_frame(&mut self.reader, self.max_frame, self.deadline) {
            Ok(buf) => {
                self.counter.on_recv(buf.len() + FRAME_HEADER);
                Ok(buf)
            }
            Err(e) => Err(self.frame_fail(e)),
        }
    }

    /// Writes `mine` from a second thread (on a clone of the socket, under the same write
    /// deadline) while this one reads the peer's `count` frames, so that two large messages
    /// crossing never wait on each other's full socket buffers and the link carries both at
    /// once. A failure on either side ends the connection as [`Channel::recv`]'s do, once the
    /// writer has stopped (so that an abort frame never interleaves with its bytes).
    fn send_while_receiving(&mut self, mine: &[Vec<u8>], count: usize, _first: bool) -> Result<Vec<Vec<u8>>, NetError> {
        if self.broken {
            return Err(NetError::Closed);
        }
        if let Some(m) = mine.iter().find(|m| m.len() > self.max_frame || m.len() >= ABORT_MARK as usize) {
            return Err(NetError::FrameTooLarge { len: m.len(), max: self.max_frame });
        }
        self.flush()?;
        let stream = match self.writer.get_ref().try_clone() {
            Ok(s) => s,
            Err(e) => return Err(self.io_fail(e)),
        };
        let (max_frame, deadline) = (self.max_frame, self.deadline);
        let reader = &mut self.reader;
        let (wrote, read) = std::thread::scope(|s| {
            let w = s.spawn(move || -> std::io::Result<()> {
                let mut out = BufWriter::with_capacity(IO_BUF, stream);
                for m in mine {
                    out.write_all(&(m.len() as u32).to_le_bytes())?;
                    out.write_all(m)?;
                }
                out.flush()
            });
            let mut got = Vec::with_capacity(count);
            let mut err = None;
            for _ in 0..count {
                match read_frame(reader, max_frame, deadline) {
                    Ok(b) => got.push(b),
                    Err(e) => {
                        err = Some(e);
                        break;
                    }
                }
            }
            let wrote = w.join().unwrap_or_else(|_| Err(std::io::Error::other("writer thread panicked")));
            (wrote, err.map_or(Ok(got), Err))
        });
        let got = match (read, wrote) {
            (Err(e), _) => return Err(self.frame_fail(e)),
            (Ok(_), Err(e)) => return Err(self.io_fail(e)),
            (Ok(got), Ok(())) => got,
        };
        for m in mine {
            self.counter.on_send(m.len() + FRAME_HEADER);
        }
        for b in &got {
            self.counter.on_recv(b.len() + FRAME_HEADER);
        }
        Ok(got)
    }

    fn flush(&mut self) -> Result<(), NetError> {
        if let Err(e) = self.writer.flush() {
            return Err(self.io_fail(e));
        }
        Ok(())
    }

    fn stats(&self) -> Stats {
        self.counter.stats()
    }

    fn set_limits(&mut self, limits: Limits) -> Result<(), NetError> {
        self.max_frame = limits.max_frame.min(ABORT_MARK as usize - 1);
        self.set_timeout(limits.frame_deadline)
    }

    fn abort(&mut self, reason: &str) -> Result<(), NetError> {
        if self.broken {
            return Err(NetError::Closed);
        }
        let r = self.writer.write_all(&abort_frame(reason)).and_then(|_| self.writer.flush());
        self.broken = true;
        let _ = self.writer.get_ref().shutdown(Shutdown::Write);
        // Read and drop what the peer is still sending (for at most ABORT_DRAIN): closing a
        // socket with unread data resets the connection, and the peer's kernel may then drop
        // the abort frame before the peer reads it (a client that had begun its query's first
        // flight when the server refused the query).
        let until = Instant::now() + ABORT_DRAIN;
        let mut sink = vec![0u8; 1 << 16];
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || self.reader.get_ref().set_read_timeout(Some(left)).is_err() {
                break;
            }
            match self.reader.read(&mut sink) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        r.map_err(io_to_net)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_messages_cross_without_waiting_on_each_other() {
        // 3 × 16 MB each way at once: far more than two socket buffers, so a plain
        // send-then-receive on both sides would block; with the writer thread both arrive.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mine: Vec<Vec<u8>> = (0..3u8).map(|k| vec![k; 16 << 20]).collect();
        let theirs: Vec<Vec<u8>> = (0..3u8).map(|k| vec![k + 100; 16 << 20]).collect();
        let t2 = theirs.clone();
        let h = std::thread::spawn(move || {
            let mut c = TcpChannel::connect(addr).unwrap();
            let got = c.send_while_receiving(&t2, 3, false).unwrap();
            (got, c.stats())
        });
        let (s, _) = l.accept().unwrap();
        let mut srv = TcpChannel::from_stream(s).unwrap();
        let got = srv.send_while_receiving(&mine, 3, true).unwrap();
        let (peer_got, peer_stats) = h.join().unwrap();
        assert!(got == theirs && peer_got == mine);
        let st = srv.stats();
        assert_eq!((st.msgs_sent, st.msgs_recv, st.bytes_sent), (3, 3, 3 * ((16 << 20) + 4)));
        assert_eq!(peer_stats.bytes_recv, st.bytes_sent);
        // the channel goes on as usual afterwards
        srv.send(b"after").unwrap();
        srv.flush().unwrap();
    }

    use std::net::TcpListener;

    fn pair() -> (TcpChannel, TcpChannel) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || TcpChannel::connect(addr).unwrap());
        let (s, _) = l.accept().unwrap();
        (TcpChannel::from_stream(s).unwrap(), h.join().unwrap())
    }

    #[test]
    fn round_trip_over_loopback() {
        let (mut a, mut b) = pair();
        let big: Vec<u64> = (0..300_000).collect();
        let h = std::thread::spawn(move || {
            let v = b.recv_u64s().unwrap();
            b.send(&[9; 3]).unwrap();
            b.flush().unwrap();
            (v, b.stats())
        });
        a.send_u64s(&big).unwrap();
        assert_eq!(a.recv().unwrap(), vec![9; 3]);
        let (v, sb) = h.join().unwrap();
        assert_eq!(v, big);
        assert_eq!(a.stats().bytes_sent, 8 * 300_000 + 4);
        assert_eq!(sb.bytes_recv, a.stats().bytes_sent);
        assert_eq!(sb.bytes_sent, 7);
    }

    #[test]
    fn oversized_frame_closes_connection() {
        let (a, mut b) = pair();
        let mut a = a.with_max_frame(16);
        b.send(&[0u8; 17]).unwrap();
        b.flush().unwrap();
        assert!(matches!(a.recv(), Err(NetError::FrameTooLarge { len: 17, max: 16 })));
        assert!(matches!(a.recv(), Err(NetError::Closed)));
        // The peer learns why the connection goes away.
        match b.recv() {
            Err(NetError::Aborted(r)) => assert!(r.contains("over limit: frame of 17 bytes"), "{r}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn truncated_frame_and_closed_peer() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(&100u32.to_le_bytes()).unwrap();
            s.write_all(&[1, 2, 3]).unwrap();
        });
        let (s, _) = l.accept().unwrap();
        let mut a = TcpChannel::from_stream(s).unwrap();
        h.join().unwrap();
        assert!(matches!(a.recv(), Err(NetError::Truncated { expected: 100, got: 3 })));

        let (mut c, d) = pair();
        drop(d);
        assert!(matches!(c.recv(), Err(NetError::Closed)));
    }

    #[test]
    fn abort_frame_reaches_the_peer_as_a_typed_error() {
        let (mut a, mut b) = pair();
        b.send(&[1, 2, 3]).unwrap();
        b.abort("bad request: n_new 1000000000000 exceeds the context window").unwrap();
        assert_eq!(a.recv().unwrap(), vec![1, 2, 3]);
        match a.recv() {
            Err(NetError::Aborted(r)) => assert!(r.starts_with("bad request: n_new"), "{r}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(a.recv(), Err(NetError::Closed)));
        // A data frame can never be as long as the abort mark.
        assert!(abort_frame(&"é".repeat(MAX_ABORT_REASON)).len() <= 2 * FRAME_HEADER + MAX_ABORT_REASON);
    }

    #[test]
    fn trickling_peer_misses_the_frame_deadline() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            // One byte every 50 ms: each read succeeds, the frame never completes in time.
            for b in 100u32.to_le_bytes().iter().chain([7u8; 20].iter()) {
                if s.write_all(&[*b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let (s, _) = l.accept().unwrap();
        let mut a = TcpChannel::from_stream(s).unwrap();
        a.set_limits(Limits { max_frame: 1000, frame_deadline: Some(Duration::from_millis(300)) }).unwrap();
        let t = Instant::now();
        assert!(matches!(a.recv(), Err(NetError::Timeout)));
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(290) && took < Duration::from_millis(900), "{took:?}");
        h.join().unwrap();
    }

    #[test]
    fn timeout_is_typed() {
        let (mut a, _b) = pair();
        a.set_timeout(Some(Duration::from_millis(20))).unwrap();
        assert!(matches!(a.recv(), Err(NetError::Timeout)));
    }
}
