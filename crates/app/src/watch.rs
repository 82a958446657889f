//! Ends sessions whose client is gone, within [`POLL`] of its leaving.
//!
//! A session notices a closed connection at its next read or write, which may come after
//! seconds of local computation (an HE matmul, a Ferret extension) during which it holds its
//! memory. One watcher thread peeks at every registered socket each [`POLL`]; a socket at end of
//! stream (the peer closed or was killed) or in error is shut down both ways, so a read or
//! write blocked on it returns at once, and its session's cancel flag is set, so that the
//! session's channel ([`Cancellable`]) fails its next call instead of buffering more sends.
//! [`Watcher::cancel_all`] does the same to every session (the end of a drain).

use nectar_net::{Channel, Limits, NetError, Stats};
use std::collections::HashMap;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// How often each socket is checked (LOCAL): a vanished client is noticed within this.
pub const POLL: Duration = Duration::from_millis(200);

/// Why a session was cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cancel {
    /// The peer closed its connection (or it broke).
    PeerGone,
    /// The server cut it ([`Watcher::cancel_all`]).
    Cut,
}

/// A session's cancel flag: 0 running, else a [`Cancel`] code.
#[derive(Debug, Default)]
pub struct Flag(AtomicU8);

impl Flag {
    fn set(&self, c: Cancel) {
        let code = match c {
            Cancel::PeerGone => 1,
            Cancel::Cut => 2,
        };
        let _ = self.0.compare_exchange(0, code, Ordering::SeqCst, Ordering::SeqCst);
    }
    /// Why the session was cancelled, if it was.
    pub fn get(&self) -> Option<Cancel> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            1 => Some(Cancel::PeerGone),
            _ => Some(Cancel::Cut),
        }
    }
}

struct Entry {
    stream: TcpStream,
    flag: Arc<Flag>,
}

type Entries = Mutex<HashMap<usize, Entry>>;

/// The watcher: a registry of sockets and the thread that polls them (it ends with the last
/// [`Watcher`] handle).
#[derive(Clone)]
pub struct Watcher {
    entries: Arc<Entries>,
}

/// A registered socket; unregisters when dropped.
pub struct Watched {
    entries: Arc<Entries>,
    id: usize,
    /// Set when the session should stop.
    pub flag: Arc<Flag>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        lock(&self.entries).remove(&self.id);
    }
}

fn lock(e: &Entries) -> std::sync::MutexGuard<'_, HashMap<usize, Entry>> {
    e.lock().unwrap_or_else(|p| p.into_inner())
}

impl Watcher {
    /// Starts the polling thread.
    pub fn start() -> Result<Self, String> {
        let entries: Arc<Entries> = Arc::default();
        let weak = Arc::downgrade(&entries);
        std::thread::Builder::new()
            .name("peer-watch".into())
            .spawn(move || poll_loop(weak))
            .map_err(|e| format!("cannot start the peer watcher: {e}"))?;
        Ok(Watcher { entries })
    }

    /// Watch `stream` (a clone of it) as session `id`.
    pub fn register(&self, id: usize, stream: &TcpStream) -> Result<Watched, std::io::Error> {
        let flag = Arc::new(Flag::default());
        let entry = Entry { stream: stream.try_clone()?, flag: Arc::clone(&flag) };
        lock(&self.entries).insert(id, entry);
        Ok(Watched { entries: Arc::clone(&self.entries), id, flag })
    }

    /// Cancels every registered session and shuts its socket down.
    pub fn cancel_all(&self) -> usize {
        let g = lock(&self.entries);
        for e in g.values() {
            e.flag.set(Cancel::Cut);
            let _ = e.stream.shutdown(Shutdown::Both);
        }
        g.len()
    }
}

fn poll_loop(entries: Weak<Entries>) {
    while let Some(entries) = entries.upgrade() {
        for e in lock(&entries).values() {
            if e.flag.get().is_none() && peer_gone(&e.stream) {
                e.flag.set(Cancel::PeerGone);
                let _ = e.stream.shutdown(Shutdown::Both);
            }
        }
        drop(entries);
        std::thread::sleep(POLL);
    }
}

/// Whether the peer has closed `s` (end of stream with nothing left to read) or the
/// connection broke. Never consumes data and never blocks.
fn peer_gone(s: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    // SAFETY: a one-byte peek into a local buffer on a socket this process owns.
    let n = unsafe { libc::recv(s.as_raw_fd(), b.as_mut_ptr().cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
    match n {
        0 => true,
        n if n > 0 => false,
        _ => !matches!(std::io::Error::last_os_error().kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted),
    }
}

/// A channel that fails every call once its session is cancelled, and reports its traffic
/// as it goes (to `on_traffic`, the change since its last report).
pub struct Cancellable<C> {
    inner: C,
    flag: Arc<Flag>,
    last: Stats,
    on_traffic: Box<dyn FnMut(Stats) + Send>,
}

impl<C: Channel> Cancellable<C> {
    pub fn new(inner: C, flag: Arc<Flag>, on_traffic: Box<dyn FnMut(Stats) + Send>) -> Self {
        Cancellable { inner, flag, last: Stats::default(), on_traffic }
    }

    fn check(&self) -> Result<(), NetError> {
        match self.flag.get() {
            None => Ok(()),
            Some(_) => Err(NetError::Closed),
        }
    }

    fn report(&mut self) {
        let now = self.inner.stats();
        let d = now - self.last;
        if d != Stats::default() {
            (self.on_traffic)(d);
            self.last = now;
        }
    }

    fn call<R>(&mut self, f: impl FnOnce(&mut C) -> Result<R, NetError>) -> Result<R, NetError> {
        self.check()?;
        let r = f(&mut self.inner);
        self.report();
        r
    }
}

impl<C: Channel> Channel for Cancellable<C> {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        self.call(|c| c.send(msg))
    }
    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        self.call(|c| c.recv())
    }
    fn flush(&mut self) -> Result<(), NetError> {
        self.call(|c| c.flush())
    }
    fn stats(&self) -> Stats {
        self.inner.stats()
    }
    fn set_limits(&mut self, limits: Limits) -> Result<(), NetError> {
        self.inner.set_limits(limits)
    }
    fn abort(&mut self, reason: &str) -> Result<(), NetError> {
        self.call(|c| c.abort(reason))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;
    use std::time::Instant;

    #[test]
    fn a_closed_peer_is_noticed_within_the_poll_and_its_blocked_read_returns() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        let w = Watcher::start().unwrap();
        let watched = w.register(7, &server).unwrap();
        let mut ch = Cancellable::new(nectar_net::TcpChannel::from_stream(server).unwrap(), Arc::clone(&watched.flag), Box::new(|_| {}));
        // Data pending is not the end of the stream.
        (&client).write_all(&[2, 0, 0, 0, b'h', b'i']).unwrap();
        std::thread::sleep(POLL * 2);
        assert_eq!(watched.flag.get(), None);
        assert_eq!(ch.recv().unwrap(), b"hi");
        let t = Instant::now();
        drop(client);
        std::thread::sleep(POLL * 3);
        assert_eq!(watched.flag.get(), Some(Cancel::PeerGone));
        assert!(matches!(ch.send(b"x"), Err(NetError::Closed)));
        assert!(t.elapsed() < Duration::from_secs(1));
        assert_eq!(w.cancel_all(), 1);
        drop(watched);
        assert_eq!(w.cancel_all(), 0);
    }
}
