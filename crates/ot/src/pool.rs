//! [`CotPool`]: one direction's store of random COTs (crate LSB convention: sender `q` with
//! `lsb = 0` and global `Δ`, receiver `t = q ⊕ b·Δ`, `b = lsb(t)`), refilled on demand by a
//! [`Producer`] — Ferret extensions (default) or plain IKNP (baseline).
//!
//! Both parties' pools of one direction hand out COTs in the same order and refill at the same
//! moment (both know how many were consumed), so a refill's messages slot in deterministically
//! before the message of the call that triggered it. Every COT is handed out once; its global
//! index (returned by [`CotPool::take`]) is the tweak base of the hash that consumes it, so no
//! pad is ever derived twice from the same input.
//!
//! **Extensions ahead** (issue 49). A Ferret extension is one message (the SPCOT trees' level
//! keys, sender → receiver) and then local work on both sides: the receiver's trees and both
//! parties' LPN encoding, about 0.1–0.2 s of computation per party for b11's 10 M COTs, which
//! used to stall the protocol whenever a pool ran dry. Once a pool's buffer holds less than
//! half an extension, the next call that takes from it begins the next extension: the message
//! is exchanged there (both parties decide at the same call, from the same counts) and the
//! local work runs on the process's background thread ([`background`], lowest priority) while
//! the buffered COTs are handed out; the pool joins it when they run out. The COTs, their
//! order and every message are the same as one extension after another; only the point where
//! the message travels moves. A direction then holds two extension-sized buffers instead of
//! one (b11: 2 × 163 MB).

use crate::ferret::{Extension, FerretParams, FerretReceiver, FerretSender, Local};
use crate::iknp::{IknpReceiver, IknpSender};
use crate::OtError;
use nectar_math::Prg;
use nectar_net::Channel;
use std::sync::mpsc;
use std::sync::OnceLock;

/// IKNP refill granularity (LOCAL; both parties compute the same refill size from it).
pub const IKNP_REFILL: usize = 1 << 16;

/// What refills a pool (AGREEMENT: both parties must choose the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Producer {
    /// IKNP extension, 128 bits of communication per COT.
    Iknp,
    /// Ferret silent COT with the given parameter set.
    Ferret(FerretParams),
}

impl Default for Producer {
    fn default() -> Self {
        Producer::Ferret(FerretParams::b13())
    }
}

enum Engine {
    IknpS(IknpSender),
    IknpR(IknpReceiver),
    FerS(FerretSender),
    FerR(FerretReceiver),
}

/// The channel traffic of a pool's extensions, measured by this party's channel counters
/// around each extension (refill). Both parties run an extension at the same point of the
/// message order, so what this party sends and receives while its side runs is exactly that
/// extension's traffic, both directions (frame headers included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefillTraffic {
    /// Extensions counted.
    pub extensions: u64,
    /// COTs they added to the pool (the usable ones; the reserve kept for the next extension
    /// is not counted).
    pub cots: u64,
    /// Bytes this party sent / received while they ran.
    pub bytes_sent: u64,
    pub bytes_recv: u64,
}

impl RefillTraffic {
    /// Bytes both directions.
    pub fn bytes(&self) -> u64 {
        self.bytes_sent + self.bytes_recv
    }

    /// Measured bits per COT, `8 · bytes / cots` (`None` before any extension).
    pub fn bits_per_cot(&self) -> Option<f64> {
        (self.cots > 0).then(|| 8.0 * self.bytes() as f64 / self.cots as f64)
    }

    /// What was added since the snapshot `e` (`self − e`).
    pub fn since(&self, e: &RefillTraffic) -> RefillTraffic {
        RefillTraffic {
            extensions: self.extensions - e.extensions,
            cots: self.cots - e.cots,
            bytes_sent: self.bytes_sent - e.bytes_sent,
            bytes_recv: self.bytes_recv - e.bytes_recv,
        }
    }

    /// Both together (e.g. the two directions of a session, as seen by one party).
    pub fn plus(&self, o: &RefillTraffic) -> RefillTraffic {
        RefillTraffic {
            extensions: self.extensions + o.extensions,
            cots: self.cots + o.cots,
            bytes_sent: self.bytes_sent + o.bytes_sent,
            bytes_recv: self.bytes_recv + o.bytes_recv,
        }
    }
}

/// One direction's random COTs, as seen by one party. The buffered COTs are `front[fpos..]`
/// (a small vector: what was left when the last extension ran, and the bootstrap's leftovers)
/// followed by `buf[pos..]` (the last extension's output, in the allocation it was written
/// into). When the pool runs short, the drained `buf` allocation is handed to the next
/// extension to write into, so a session keeps one extension-sized buffer per direction and
/// does not fault in a fresh one per extension.
pub struct CotPool {
    engine: Engine,
    front: Vec<u128>,
    fpos: usize,
    buf: Vec<u128>,
    pos: usize,
    used: u64,
    refills: u64,
    /// The first extension (for Ferret, the IKNP + `*_pre` bootstrap included).
    first: RefillTraffic,
    /// Every later extension (the steady state).
    steady: RefillTraffic,
    prg: Prg,
    /// The next Ferret extension, begun ahead: its local work on the background thread.
    pending: Option<mpsc::Receiver<Finished>>,
    /// A drained buffer's allocation, for the next extension begun ahead.
    spare: Vec<u128>,
}

/// A finished extension's local work: the next reserve and the usable COTs (`Err` if the
/// background thread panicked).
type Finished = Result<(Vec<u128>, Extension), String>;

/// The process's thread for extensions' local work ([`CotPool`] module docs): one rayon
/// thread, so the work's parallel loops run on it one after another instead of queueing on
/// the global pool ahead of the protocol's own, at the lowest scheduling priority (Linux), so
/// it takes the cores when the protocol waits for its peer.
fn background() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "cot-extend".into())
            .start_handler(|_| lower_priority())
            .build()
            .expect("a thread for COT extensions")
    })
}

/// Nice 19 for the calling thread (Linux: `setpriority` on the thread's own id); elsewhere
/// nothing. A failure leaves the priority as it was.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on the calling thread; no memory is passed.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 19);
    }
}

impl CotPool {
    /// This party is the COT sender (holds `Δ`). Runs the base OTs (2 flows).
    pub fn sender<C: Channel + ?Sized>(ch: &mut C, producer: Producer, prg: &mut Prg) -> Result<Self, OtError> {
        let mut own = prg.fork();
        let engine = match producer {
            Producer::Iknp => Engine::IknpS(IknpSender::setup(ch, &mut own)?),
            Producer::Ferret(p) => Engine::FerS(FerretSender::setup(ch, p, &mut own)?),
        };
        Ok(Self::with(engine, own))
    }

    /// This party is the COT receiver. Runs the base OTs (2 flows).
    pub fn receiver<C: Channel + ?Sized>(ch: &mut C, producer: Producer, prg: &mut Prg) -> Result<Self, OtError> {
        let mut own = prg.fork();
        let engine = match producer {
            Producer::Iknp => Engine::IknpR(IknpReceiver::setup(ch, &mut own)?),
            Producer::Ferret(p) => Engine::FerR(FerretReceiver::setup(ch, p, &mut own)?),
        };
        Ok(Self::with(engine, own))
    }

    fn with(engine: Engine, prg: Prg) -> Self {
        CotPool { engine, front: Vec::new(), fpos: 0, buf: Vec::new(), pos: 0, used: 0, refills: 0, first: RefillTraffic::default(), steady: RefillTraffic::default(), prg, pending: None, spare: Vec::new() }
    }

    /// Whether this party is the sender of this direction.
    pub fn is_sender(&self) -> bool {
        matches!(self.engine, Engine::IknpS(_) | Engine::FerS(_))
    }

    /// The sender's `Δ` (`None` on the receiver side).
    pub fn delta(&self) -> Option<u128> {
        match &self.engine {
            Engine::IknpS(s) => Some(s.delta()),
            Engine::FerS(s) => Some(s.delta()),
            _ => None,
        }
    }

    /// COTs handed out so far.
    pub fn consumed(&self) -> u64 {
        self.used
    }

    /// Extensions run so far.
    pub fn refills(&self) -> u64 {
        self.refills
    }

    /// Traffic of the first extension (bootstrap included; see [`RefillTraffic`]).
    pub fn first_refill(&self) -> RefillTraffic {
        self.first
    }

    /// Traffic of every extension after the first: the steady-state cost.
    pub fn steady_refills(&self) -> RefillTraffic {
        self.steady
    }

    /// Traffic of every extension so far.
    pub fn all_refills(&self) -> RefillTraffic {
        self.first.plus(&self.steady)
    }

    /// COTs buffered right now.
    pub fn available(&self) -> usize {
        (self.front.len() - self.fpos) + (self.buf.len() - self.pos)
    }

    /// Hand out the next `n` COTs: `(global index of the first, blocks)`. Refills (one or more
    /// extensions, talking to the peer) when the buffer runs short.
    pub fn take<C: Channel + ?Sized>(&mut self, ch: &mut C, n: usize) -> Result<(u64, Vec<u128>), OtError> {
        self.reserve(ch, n)?;
        let first = self.used;
        let mut out = Vec::with_capacity(n);
        let f = n.min(self.front.len() - self.fpos);
        out.extend_from_slice(&self.front[self.fpos..self.fpos + f]);
        self.fpos += f;
        if self.fpos == self.front.len() && !self.front.is_empty() {
            self.front = Vec::new();
            self.fpos = 0;
        }
        let b = n - f;
        out.extend_from_slice(&self.buf[self.pos..self.pos + b]);
        self.pos += b;
        self.used += n as u64;
        Ok((first, out))
    }

    /// Makes sure at least `n` COTs are buffered, running extensions now if not (AGREEMENT:
    /// the peer's pool of this direction calls it at the same point with the same `n`). For
    /// preprocessing: the COTs a later online phase consumes are produced ahead of it. Then,
    /// when fewer than half an extension would be left after `n`, begins the next one ahead
    /// (module docs).
    pub fn reserve<C: Channel + ?Sized>(&mut self, ch: &mut C, n: usize) -> Result<(), OtError> {
        while self.available() < n {
            // Keep only the unused COTs, in a vector of their own size; the drained buffer's
            // allocation receives the next extension.
            let recycled = self.keep_unused();
            match self.pending.take() {
                Some(rx) => {
                    if self.spare.capacity() < recycled.capacity() {
                        self.spare = recycled;
                    }
                    self.join(rx)?;
                }
                None => {
                    let need = n - self.available();
                    self.extend_once(ch, need, recycled)?;
                }
            }
        }
        self.begin_ahead(ch, n)
    }

    /// Begins the next Ferret extension ahead when fewer than half an extension's COTs would be
    /// left after taking `n` (none pending, after the first extension; both parties decide from
    /// the same counts).
    fn begin_ahead<C: Channel + ?Sized>(&mut self, ch: &mut C, n: usize) -> Result<(), OtError> {
        let usable = match &self.engine {
            Engine::FerS(s) => s.params().usable(),
            Engine::FerR(r) => r.params().usable(),
            _ => return Ok(()),
        };
        if self.pending.is_some() || self.refills == 0 || self.available() - n >= usable / 2 {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.spare);
        let s0 = ch.stats();
        let local: Local = match &mut self.engine {
            Engine::FerS(s) => s.begin(ch, &mut self.prg, buf)?,
            Engine::FerR(r) => r.begin(ch, &mut self.prg, buf)?,
            _ => return Ok(()),
        };
        let d = ch.stats() - s0;
        self.count_extension(d);
        let (tx, rx) = mpsc::channel();
        background().spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| local.run()));
            let _ = tx.send(r.map_err(|_| "a COT extension's local work panicked".to_string()));
        });
        self.pending = Some(rx);
        Ok(())
    }

    /// Waits for the extension begun ahead and puts its COTs after the buffered ones (which
    /// must all be in `front`, [`Self::keep_unused`]).
    fn join(&mut self, rx: mpsc::Receiver<Finished>) -> Result<(), OtError> {
        let (next, ext) = rx
            .recv()
            .map_err(|_| OtError::BadArgument("a COT extension's background work ended without a result".into()))?
            .map_err(OtError::BadArgument)?;
        match &mut self.engine {
            Engine::FerS(s) => s.done(next),
            Engine::FerR(r) => r.done(next),
            _ => return Err(OtError::BadArgument("an extension begun ahead outside Ferret".into())),
        }
        self.install(ext);
        Ok(())
    }

    /// Counts one extension's traffic `d` (measured around its messages).
    fn count_extension(&mut self, d: nectar_net::Stats) {
        let t = if self.refills == 0 { &mut self.first } else { &mut self.steady };
        t.extensions += 1;
        t.bytes_sent += d.bytes_sent;
        t.bytes_recv += d.bytes_recv;
        self.refills += 1;
    }

    /// Puts an extension's usable COTs after the buffered ones (all in `front`,
    /// [`Self::keep_unused`]): the bootstrap's leftovers at the end of `front`, then its buffer.
    fn install(&mut self, ext: Extension) {
        let t = if self.refills <= 1 { &mut self.first } else { &mut self.steady };
        t.cots += ext.len() as u64;
        self.front.extend_from_slice(&ext.extra);
        self.buf = ext.out;
        self.pos = ext.start;
    }

    /// Moves the unused COTs into `front` and returns `buf`'s allocation.
    fn keep_unused(&mut self) -> Vec<u128> {
        let mut left = Vec::with_capacity(self.available());
        left.extend_from_slice(&self.front[self.fpos..]);
        left.extend_from_slice(&self.buf[self.pos..]);
        self.front = left;
        self.fpos = 0;
        self.pos = 0;
        std::mem::take(&mut self.buf)
    }

    /// Runs one extension now; its COTs replace the buffered ones (AGREEMENT: the peer's pool
    /// of this direction calls it at the same point, so both drop the same COTs, none of which
    /// was handed out; global indices keep counting from [`Self::consumed`]). An extension
    /// begun ahead is that extension (its message has travelled already). For measurements:
    /// after the first extension this measures a steady-state one ([`Self::steady_refills`])
    /// without consuming a whole buffer first, and without holding two buffers.
    pub fn refill<C: Channel + ?Sized>(&mut self, ch: &mut C) -> Result<(), OtError> {
        self.front = Vec::new();
        self.fpos = 0;
        self.pos = 0;
        let recycled = std::mem::take(&mut self.buf);
        match self.pending.take() {
            Some(rx) => {
                self.spare = recycled;
                self.join(rx)
            }
            None => self.extend_once(ch, 1, recycled),
        }
    }

    /// One extension (IKNP: at least `need` COTs; Ferret: into `recycled`'s allocation) after
    /// the buffered COTs, which must all be in `front` ([`Self::keep_unused`]); its traffic is
    /// recorded from the channel counters around it.
    fn extend_once<C: Channel + ?Sized>(&mut self, ch: &mut C, need: usize, recycled: Vec<u128>) -> Result<(), OtError> {
        debug_assert!(self.buf.is_empty() && self.pos == 0 && self.fpos == 0);
        let s0 = ch.stats();
        let ext = match &mut self.engine {
            Engine::IknpS(s) => Extension { extra: Vec::new(), out: s.extend(ch, need.max(IKNP_REFILL))?, start: 0 },
            Engine::IknpR(r) => Extension { extra: Vec::new(), out: r.extend(ch, need.max(IKNP_REFILL), &mut self.prg)?, start: 0 },
            Engine::FerS(s) => s.extend(ch, &mut self.prg, recycled)?,
            Engine::FerR(r) => r.extend(ch, &mut self.prg, recycled)?,
        };
        let d = ch.stats() - s0;
        self.count_extension(d);
        self.install(ext);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_net::mem::run_pair;

    /// Takes of the given sizes from a fresh pair of pools (insecure tiny Ferret): the sender's
    /// Δ and, per party, the COTs in the order handed out with their global indices checked.
    fn takes(sizes: Vec<usize>) -> (u128, Vec<u128>, Vec<u128>) {
        let p = Producer::Ferret(FerretParams::insecure_tiny());
        let run = |c: &mut nectar_net::mem::MemChannel, sender: bool, sizes: Vec<usize>| {
            let mut prg = Prg::new([if sender { 5 } else { 6 }; 16]);
            let mut pool = if sender { CotPool::sender(c, p, &mut prg) } else { CotPool::receiver(c, p, &mut prg) }.unwrap();
            let mut all = Vec::new();
            for n in sizes {
                let (first, v) = pool.take(c, n).unwrap();
                assert_eq!(first, all.len() as u64);
                assert_eq!(v.len(), n);
                all.extend(v);
            }
            (pool.delta(), all)
        };
        let sz = sizes.clone();
        let ((delta, s), (_, r)) = run_pair(move |c| run(c, true, sizes), move |c| run(c, false, sz));
        (delta.unwrap(), s, r)
    }

    /// The next extension begins (its message exchanged, its local work in the background) at
    /// the call after which fewer than half an extension would be left, on both sides, and is
    /// joined when the buffer runs out, without a synchronous extension; the COTs keep the COT
    /// relation across the join.
    #[test]
    fn the_next_extension_begins_below_half() {
        let params = FerretParams::insecure_tiny_half_tree();
        let half = params.usable() / 2;
        let run = move |c: &mut nectar_net::mem::MemChannel, sender: bool| {
            let p = Producer::Ferret(params);
            let mut prg = Prg::new([if sender { 8 } else { 9 }; 16]);
            let mut pool = if sender { CotPool::sender(c, p, &mut prg) } else { CotPool::receiver(c, p, &mut prg) }.unwrap();
            let mut all = pool.take(c, 1).unwrap().1;
            let mut counts = vec![pool.refills()];
            // down to exactly half: nothing begins
            let a = pool.available();
            all.extend(pool.take(c, a - half).unwrap().1);
            counts.push(pool.refills());
            // one more: the next extension begins, the buffered COTs stay
            all.extend(pool.take(c, 1).unwrap().1);
            counts.push(pool.refills());
            assert!(pool.pending.is_some() && pool.available() == half - 1);
            // past the buffer: the begun extension is joined, none runs synchronously
            all.extend(pool.take(c, half + 5).unwrap().1);
            counts.push(pool.refills());
            assert!(pool.pending.is_none());
            (pool.delta(), all, counts)
        };
        let ((delta, s, cs), (_, r, cr)) = run_pair(move |c| run(c, true), move |c| run(c, false));
        assert_eq!(cs, vec![1, 1, 2, 2]);
        assert_eq!(cr, cs);
        let delta = delta.unwrap();
        assert_eq!(s.len(), r.len());
        for (q, t) in s.iter().zip(&r) {
            assert_eq!(q & 1, 0);
            assert_eq!(*t, q ^ if t & 1 == 1 { delta } else { 0 });
        }
    }

    /// The pool hands out one fixed sequence of COTs whatever the take sizes (both parties
    /// must agree on it): takes inside one extension, across extension boundaries (the
    /// leftovers, then the new COTs in the recycled buffer) and larger than one extension.
    #[test]
    fn take_order_is_independent_of_sizes() {
        let usable = FerretParams::insecure_tiny().usable();
        let mixed = vec![7, usable - 10, 2 * usable + 5, 300, usable];
        let total: usize = mixed.iter().sum();
        let (delta, s, r) = takes(mixed);
        for other in [vec![total], vec![997; total / 997]] {
            let (d, s2, r2) = takes(other);
            assert_eq!(d, delta);
            assert_eq!(s2[..], s[..s2.len()]);
            assert_eq!(r2[..], r[..r2.len()]);
        }
        for (q, t) in s.iter().zip(&r) {
            assert_eq!(q & 1, 0);
            assert_eq!(*t, q ^ if t & 1 == 1 { delta } else { 0 });
        }
        // No COT is handed out twice.
        let mut seen = s.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), s.len());
    }
}
