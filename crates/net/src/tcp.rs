//! TCP channel: frames over a socket, buffered writes, bounded reads.
//!
//! A frame header announcing more than the limit, a stream that ends inside a frame, and a
//! peer that goes silent past the read timeout are typed errors. After an oversized or
//! truncated frame the stream is out of sync, so the connection is shut down.

use crate::stats::Counter;
use crate::{Channel, NetError, Stats, DEFAULT_MAX_FRAME, FRAME_HEADER};
use std::io::{BufReader, BufWriter, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Default read timeout (LOCAL): a peer silent this long ends the session.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Socket buffer size for reads and writes (LOCAL).
const IO_BUF: usize = 1 << 20;

/// One end of a TCP link.
pub struct TcpChannel {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
    counter: Counter,
    max_frame: usize,
    broken: bool,
}

impl TcpChannel {
    /// Wrap a connected stream (sets `TCP_NODELAY` and the default read timeout).
    pub fn from_stream(stream: TcpStream) -> Result<Self, NetError> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(DEFAULT_TIMEOUT))?;
        let w = stream.try_clone()?;
        Ok(TcpChannel {
            reader: BufReader::with_capacity(IO_BUF, stream),
            writer: BufWriter::with_capacity(IO_BUF, w),
            counter: Counter::default(),
            max_frame: DEFAULT_MAX_FRAME,
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

    /// Set the read timeout (`None` waits forever).
    pub fn set_timeout(&mut self, t: Option<Duration>) -> Result<(), NetError> {
        self.reader.get_ref().set_read_timeout(t)?;
        Ok(())
    }

    fn fail(&mut self, e: NetError) -> NetError {
        self.broken = true;
        let _ = self.reader.get_ref().shutdown(Shutdown::Both);
        e
    }
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
        if msg.len() > self.max_frame || msg.len() > u32::MAX as usize {
            return Err(NetError::FrameTooLarge { len: msg.len(), max: self.max_frame });
        }
        let r = self
            .writer
            .write_all(&(msg.len() as u32).to_le_bytes())
            .and_then(|_| self.writer.write_all(msg));
        if let Err(e) = r {
            let e = io_to_net(e);
            return Err(self.fail(e));
        }
        self.counter.on_send(msg.len() + FRAME_HEADER);
        Ok(())
    }

    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        if self.broken {
            return Err(NetError::Closed);
        }
        self.flush()?;
        let mut h = [0u8; FRAME_HEADER];
        if let Err(e) = self.reader.read_exact(&mut h) {
            let e = io_to_net(e);
            return Err(self.fail(e));
        }
        let len = u32::from_le_bytes(h) as usize;
        if len > self.max_frame {
            return Err(self.fail(NetError::FrameTooLarge { len, max: self.max_frame }));
        }
        // Grow the buffer as bytes arrive: a lying header cannot make us allocate `len` upfront.
        let mut buf = Vec::with_capacity(len.min(IO_BUF));
        match (&mut self.reader).take(len as u64).read_to_end(&mut buf) {
            Ok(n) if n == len => {}
            Ok(n) => return Err(self.fail(NetError::Truncated { expected: len, got: n })),
            Err(e) => {
                let e = io_to_net(e);
                return Err(self.fail(e));
            }
        }
        self.counter.on_recv(len + FRAME_HEADER);
        Ok(buf)
    }

    fn flush(&mut self) -> Result<(), NetError> {
        if let Err(e) = self.writer.flush() {
            let e = io_to_net(e);
            return Err(self.fail(e));
        }
        Ok(())
    }

    fn stats(&self) -> Stats {
        self.counter.stats()
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
        // The peer sees the connection go away.
        let r = b.recv();
        assert!(r.is_err());
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
    fn timeout_is_typed() {
        let (mut a, _b) = pair();
        a.set_timeout(Some(Duration::from_millis(20))).unwrap();
        assert!(matches!(a.recv(), Err(NetError::Timeout)));
    }
}
