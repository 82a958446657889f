//! [`CotPool`]: one direction's store of random COTs (crate LSB convention: sender `q` with
//! `lsb = 0` and global `Δ`, receiver `t = q ⊕ b·Δ`, `b = lsb(t)`), refilled on demand by a
//! [`Producer`] — Ferret extensions (default) or plain IKNP (baseline).
//!
//! Both parties' pools of one direction hand out COTs in the same order and refill at the same
//! moment (both know how many were consumed), so a refill's messages slot in deterministically
//! before the message of the call that triggered it. Every COT is handed out once; its global
//! index (returned by [`CotPool::take`]) is the tweak base of the hash that consumes it, so no
//! pad is ever derived twice from the same input.

use crate::ferret::{FerretParams, FerretReceiver, FerretSender};
use crate::iknp::{IknpReceiver, IknpSender};
use crate::OtError;
use nectar_math::Prg;
use nectar_net::Channel;

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

/// One direction's random COTs, as seen by one party.
pub struct CotPool {
    engine: Engine,
    buf: Vec<u128>,
    pos: usize,
    used: u64,
    refills: u64,
    /// The first extension (for Ferret, the IKNP + `*_pre` bootstrap included).
    first: RefillTraffic,
    /// Every later extension (the steady state).
    steady: RefillTraffic,
    prg: Prg,
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
        CotPool { engine, buf: Vec::new(), pos: 0, used: 0, refills: 0, first: RefillTraffic::default(), steady: RefillTraffic::default(), prg }
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
        self.buf.len() - self.pos
    }

    /// Hand out the next `n` COTs: `(global index of the first, blocks)`. Refills (one or more
    /// extensions, talking to the peer) when the buffer runs short.
    pub fn take<C: Channel + ?Sized>(&mut self, ch: &mut C, n: usize) -> Result<(u64, Vec<u128>), OtError> {
        self.reserve(ch, n)?;
        let first = self.used;
        let out = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n;
        self.used += n as u64;
        Ok((first, out))
    }

    /// Makes sure at least `n` COTs are buffered, running extensions now if not (AGREEMENT:
    /// the peer's pool of this direction calls it at the same point with the same `n`). For
    /// preprocessing: the COTs a later online phase consumes are produced ahead of it.
    pub fn reserve<C: Channel + ?Sized>(&mut self, ch: &mut C, n: usize) -> Result<(), OtError> {
        if self.available() < n {
            // Keep only the unused COTs, in an allocation of their own size: the old buffer
            // (one extension's worth) is freed before the next extension allocates its own.
            self.buf = self.buf[self.pos..].to_vec();
            self.pos = 0;
            while self.buf.len() < n {
                let need = n - self.buf.len();
                self.extend_once(ch, need)?;
            }
        }
        Ok(())
    }

    /// Runs one extension now; its COTs replace the buffered ones (AGREEMENT: the peer's pool
    /// of this direction calls it at the same point, so both drop the same COTs, none of which
    /// was handed out; global indices keep counting from [`Self::consumed`]). For measurements:
    /// after the first extension this measures a steady-state one ([`Self::steady_refills`])
    /// without consuming a whole buffer first, and without holding two buffers.
    pub fn refill<C: Channel + ?Sized>(&mut self, ch: &mut C) -> Result<(), OtError> {
        self.buf = Vec::new();
        self.pos = 0;
        self.extend_once(ch, 1)
    }

    /// One extension (IKNP: at least `need` COTs), appended to the buffer; its traffic is
    /// recorded from the channel counters around it.
    fn extend_once<C: Channel + ?Sized>(&mut self, ch: &mut C, need: usize) -> Result<(), OtError> {
        let s0 = ch.stats();
        let fresh = match &mut self.engine {
            Engine::IknpS(s) => s.extend(ch, need.max(IKNP_REFILL))?,
            Engine::IknpR(r) => r.extend(ch, need.max(IKNP_REFILL), &mut self.prg)?,
            Engine::FerS(s) => s.extend(ch, &mut self.prg)?,
            Engine::FerR(r) => r.extend(ch, &mut self.prg)?,
        };
        let d = ch.stats() - s0;
        let t = if self.refills == 0 { &mut self.first } else { &mut self.steady };
        t.extensions += 1;
        t.cots += fresh.len() as u64;
        t.bytes_sent += d.bytes_sent;
        t.bytes_recv += d.bytes_recv;
        self.refills += 1;
        self.buf = append_exact(std::mem::take(&mut self.buf), fresh);
        Ok(())
    }
}

/// `old ++ fresh` without `Vec`'s capacity doubling (one extension is 160 MB for b13): in
/// `fresh`'s allocation when it has room in front of its spare capacity for `old`, else in an
/// allocation of exactly the sum.
fn append_exact(old: Vec<u128>, mut fresh: Vec<u128>) -> Vec<u128> {
    if old.is_empty() {
        return fresh;
    }
    if fresh.capacity() - fresh.len() >= old.len() {
        fresh.splice(..0, old);
        return fresh;
    }
    let mut v = Vec::with_capacity(old.len() + fresh.len());
    v.extend_from_slice(&old);
    drop(old);
    v.extend_from_slice(&fresh);
    v
}

#[cfg(test)]
mod tests {
    use super::append_exact;

    #[test]
    fn append_exact_keeps_order_without_doubling() {
        // Room in front of `fresh`'s spare capacity: its allocation is reused.
        let mut fresh: Vec<u128> = Vec::with_capacity(10);
        fresh.extend(5..9);
        let v = append_exact(vec![1, 2, 3], fresh);
        assert_eq!(v, vec![1, 2, 3, 5, 6, 7, 8]);
        assert_eq!(v.capacity(), 10);
        // No room: exactly the sum, not a doubled capacity.
        let v = append_exact((0..50).collect(), (50..60).collect());
        assert_eq!(v, (0..60).collect::<Vec<u128>>());
        assert_eq!(v.capacity(), 60);
        assert_eq!(append_exact(Vec::new(), vec![7]), vec![7]);
    }
}
