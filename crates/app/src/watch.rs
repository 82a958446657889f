//! Ends sessions whose client is gone, within [`POLL`] of its leaving.
//!
//! A session notices a closed connection at its next read, which may come after seconds of
//! local computation and buffered sends (an HE matmul, a Ferret extension) during which it
//! holds its memory; and a client killed after sending ahead leaves messages the session
//! would still read and answer. One watcher thread polls every registered socket each
//! [`POLL`] for the peer's end of stream or a reset (`POLLRDHUP`, `POLLHUP`, `POLLERR`: with
//! data still unread too) and sets that session's cancel flag; its channel ([`Cancellable`])
//! then fails the session's next send. [`Watcher::cancel_all`] cuts every session (the end of
//! a drain): flag set, socket shut down both ways, so a blocked read or write returns at once.

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
    let mut fds: Vec<libc::pollfd> = Vec::new();
    while let Some(entries) = entries.upgrade() {
        let g = lock(&entries);
        let live: Vec<&Entry> = g.values().filter(|e| e.flag.get().is_none()).collect();
        fds.clear();
        fds.extend(live.iter().map(|e| libc::pollfd { fd: e.stream.as_raw_fd(), events: libc::POLLRDHUP, revents: 0 }));
        // SAFETY: valid pollfds of sockets the entries own (kept alive by the lock); no wait.
        let ready = !fds.is_empty() && unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) } > 0;
        if ready {
            for (e, p) in live.iter().zip(&fds) {
                // POLLRDHUP: the peer closed its sending half, which a client of this protocol
                // never does while it still wants an answer (even when its last messages are
                // still unread here). POLLHUP / POLLERR: the connection is reset or gone.
                if p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
                    e.flag.set(Cancel::PeerGone);
                }
            }
        }
        drop(g);
        drop(entries);
        std::thread::sleep(POLL);
    }
}

/// A channel that stops its session once cancelled, and reports its traffic as it goes (to
/// `on_traffic`, the change since its last report).
///
/// Once the peer is gone every send and flush fails at once; receives go on while messages
/// the peer sent before leaving are still buffered (so a `Bye` sent just before closing is
/// still read), and then end at its end of stream. Once cut ([`Watcher::cancel_all`]), every
/// call fails.
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

    fn check(&self, receiving: bool) -> Result<(), NetError> {
        match self.flag.get() {
            None => Ok(()),
            Some(Cancel::PeerGone) if receiving => Ok(()),
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

    fn call<R>(&mut self, receiving: bool, f: impl FnOnce(&mut C) -> Result<R, NetError>) -> Result<R, NetError> {
        self.check(receiving)?;
        let r = f(&mut self.inner);
        self.report();
        r
    }
}

impl<C: Channel> Channel for Cancellable<C> {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        self.call(false, |c| c.send(msg))
    }
    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        self.call(true, |c| c.recv())
    }
    fn flush(&mut self) -> Result<(), NetError> {
        self.call(false, |c| c.flush())
    }
    fn stats(&self) -> Stats {
        self.inner.stats()
    }
    /// Cancelled once the peer is gone or the server cut the session (a kernel under way stops
    /// at its next block of work).
    fn cancel_token(&self) -> Option<nectar_net::CancelToken> {
        let flag = Arc::clone(&self.flag);
        Some(nectar_net::CancelToken::new(move || flag.get().is_some()))
    }
    fn set_limits(&mut self, limits: Limits) -> Result<(), NetError> {
        self.inner.set_limits(limits)
    }
    fn abort(&mut self, reason: &str) -> Result<(), NetError> {
        self.call(false, |c| c.abort(reason))
    }
    fn send_while_receiving(&mut self, mine: &[Vec<u8>], count: usize, first: bool) -> Result<Vec<Vec<u8>>, NetError> {
        self.call(false, |c| c.send_while_receiving(mine, count, first))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;
    use std::time::Instant;

    #[test]
    fn a_peer_that_leaves_is_noticed_within_the_poll_and_its_last_message_still_read() {
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
        // A peer that leaves with a message still unread here: noticed at once, its message
        // still delivered, sends refused.
        (&client).write_all(&[3, 0, 0, 0, b'b', b'y', b'e']).unwrap();
        let t = Instant::now();
        drop(client);
        while watched.flag.get().is_none() && t.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(watched.flag.get(), Some(Cancel::PeerGone));
        assert!(t.elapsed() <= POLL + Duration::from_millis(100), "{:?}", t.elapsed());
        assert!(matches!(ch.send(b"x"), Err(NetError::Closed)));
        assert_eq!(ch.recv().unwrap(), b"bye");
        assert!(matches!(ch.recv(), Err(NetError::Closed)));
        assert_eq!(w.cancel_all(), 1);
        drop(watched);
        assert_eq!(w.cancel_all(), 0);
    }
}
