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
        let until = self.deadline.map(|d| Instant::now() + d);
        let mut h = [0u8; FRAME_HEADER];
        if let Err(e) = (DeadlineReader { inner: &mut self.reader, until }).read_exact(&mut h) {
            return Err(self.io_fail(e));
        }
        let header = u32::from_le_bytes(h);
        if header == ABORT_MARK {
            return Err(self.read_abort(until));
        }
        let len = header as usize;
        if len > self.max_frame {
            return Err(self.fail(NetError::FrameTooLarge { len, max: self.max_frame }));
        }
        // Grow the buffer as bytes arrive: a lying header cannot make us allocate `len` upfront.
        let mut buf = Vec::with_capacity(len.min(IO_BUF));
        let r = DeadlineReader { inner: &mut self.reader, until }.take(len as u64).read_to_end(&mut buf);
        match r {
            Ok(n) if n == len => {}
            Ok(n) => return Err(self.fail(NetError::Truncated { expected: len, got: n })),
            Err(e) => return Err(self.io_fail(e)),
        }
        self.counter.on_recv(len + FRAME_HEADER);
        Ok(buf)
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
