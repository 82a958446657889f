//! [`OtSession`]: one party's OT state for one peer — the entry point of the upper layers.
//!
//! A session owns two [`CotPool`]s, one per direction: `send` (this party is COT sender and
//! holds `Δ`) and `recv` (the peer is sender). Each direction has its own base OTs, IKNP and
//! Ferret instance (as SCI's "straight"/"reversed" IKNP pair), so either party can be the OT
//! sender of any call without OT reversal. [`OtSession::new`] runs both directions' base OTs
//! (3 flows, ~8 KiB); the Ferret bootstrap and extensions run lazily inside the first call that
//! needs COTs in that direction, so a direction that is never used costs nothing more.
//!
//! **Pairing rule:** every `send_*` call of one party must be matched by the same-named
//! `recv_*` call of the peer, with the same size arguments, in the same order across all calls.
//! Sizes that disagree surface as typed errors ([`OtError::BadMessage`]), never as hangs on
//! in-memory channels or panics.

use crate::crhash::Crh;
use crate::pool::{CotPool, Producer};
use crate::{acot, chosen, half_tree, one_of_n, pprf, rot, OtError};
use nectar_math::Prg;
use nectar_net::{Channel, Role};

/// One party's OT session (see module doc).
pub struct OtSession {
    role: Role,
    prg: Prg,
    crh: Crh,
    send: CotPool,
    recv: CotPool,
}

impl OtSession {
    /// A session with the default producer (Ferret b13). `prg` must be freshly seeded for this
    /// session (e.g. forked from [`Prg::from_entropy`]).
    pub fn new<C: Channel + ?Sized>(role: Role, ch: &mut C, prg: Prg) -> Result<Self, OtError> {
        Self::with_producer(role, ch, prg, Producer::default())
    }

    /// A session whose pools are refilled by `producer` (AGREEMENT: same on both sides).
    pub fn with_producer<C: Channel + ?Sized>(role: Role, ch: &mut C, mut prg: Prg, producer: Producer) -> Result<Self, OtError> {
        // Direction "server sends COTs" first, then "client sends COTs": 3 flows in all.
        let (send, recv) = match role {
            Role::Server => {
                let s = CotPool::sender(ch, producer, &mut prg)?;
                let r = CotPool::receiver(ch, producer, &mut prg)?;
                (s, r)
            }
            Role::Client => {
                let r = CotPool::receiver(ch, producer, &mut prg)?;
                let s = CotPool::sender(ch, producer, &mut prg)?;
                (s, r)
            }
        };
        ch.flush()?;
        Ok(OtSession { role, prg, crh: Crh::new(), send, recv })
    }

    pub fn role(&self) -> Role {
        self.role
    }

    /// This party's `Δ` for the COTs it sends (`lsb = 1`).
    pub fn delta(&self) -> u128 {
        self.send.delta().unwrap_or(0)
    }

    /// The pool where this party is sender / receiver (statistics).
    pub fn pools(&self) -> (&CotPool, &CotPool) {
        (&self.send, &self.recv)
    }

    /// Runs one extension in each direction now, replacing the buffered COTs
    /// ([`CotPool::refill`]; AGREEMENT: the peer calls it at the same point; the direction
    /// "server sends COTs" first). For measurements: after the bootstrap, this makes the
    /// steady-state cost of an extension measurable ([`Self::steady_traffic`]).
    pub fn refill<C: Channel + ?Sized>(&mut self, ch: &mut C) -> Result<(), OtError> {
        match self.role {
            Role::Server => {
                self.send.refill(ch)?;
                self.recv.refill(ch)?;
            }
            Role::Client => {
                self.recv.refill(ch)?;
                self.send.refill(ch)?;
            }
        }
        ch.flush()?;
        Ok(())
    }

    /// Makes sure each direction's pool holds at least `n` COTs, extending now if not
    /// ([`CotPool::reserve`]; AGREEMENT: the peer calls it at the same point with the same `n`;
    /// the direction "server sends COTs" first).
    pub fn reserve<C: Channel + ?Sized>(&mut self, ch: &mut C, n: usize) -> Result<(), OtError> {
        match self.role {
            Role::Server => {
                self.send.reserve(ch, n)?;
                self.recv.reserve(ch, n)?;
            }
            Role::Client => {
                self.recv.reserve(ch, n)?;
                self.send.reserve(ch, n)?;
            }
        }
        ch.flush()?;
        Ok(())
    }

    /// Traffic of every extension so far, both directions (one party's channel counters see
    /// all of it: see [`crate::RefillTraffic`]).
    pub fn refill_traffic(&self) -> crate::RefillTraffic {
        self.send.all_refills().plus(&self.recv.all_refills())
    }

    /// Traffic of the extensions after each direction's first (the steady state), both
    /// directions.
    pub fn steady_traffic(&self) -> crate::RefillTraffic {
        self.send.steady_refills().plus(&self.recv.steady_refills())
    }

    /// Random COT, this party sender: `q_i` (`lsb = 0`); the peer's `recv_rcot` gets
    /// `(b_i, q_i ⊕ b_i·Δ)`. No communication beyond refills.
    pub fn send_rcot<C: Channel + ?Sized>(&mut self, ch: &mut C, n: usize) -> Result<Vec<u128>, OtError> {
        rot::rcot_send(&mut self.send, ch, n)
    }

    /// Random COT, this party receiver: random choice bits and `t_i = q_i ⊕ b_i·Δ`.
    pub fn recv_rcot<C: Channel + ?Sized>(&mut self, ch: &mut C, n: usize) -> Result<(Vec<bool>, Vec<u128>), OtError> {
        rot::rcot_recv(&mut self.recv, ch, n)
    }

    /// Chosen-choice COT, this party sender: `r_i`; the peer gets `r_i ⊕ c_i·Δ`.
    pub fn send_cot<C: Channel + ?Sized>(&mut self, ch: &mut C, n: usize) -> Result<Vec<u128>, OtError> {
        rot::cot_send(&mut self.send, ch, n)
    }

    /// Chosen-choice COT, this party receiver with choices `c`.
    pub fn recv_cot<C: Channel + ?Sized>(&mut self, ch: &mut C, c: &[bool]) -> Result<Vec<u128>, OtError> {
        rot::cot_recv(&mut self.recv, ch, c)
    }

    /// Random OT, this party sender: `(m_0, m_1)` pairs.
    pub fn send_rot<C: Channel + ?Sized>(&mut self, ch: &mut C, n: usize) -> Result<Vec<(u128, u128)>, OtError> {
        rot::rot_send(&mut self.send, &self.crh, ch, n)
    }

    /// Random OT, this party receiver: `(b_i, m_{b_i})`.
    pub fn recv_rot<C: Channel + ?Sized>(&mut self, ch: &mut C, n: usize) -> Result<(Vec<bool>, Vec<u128>), OtError> {
        rot::rot_recv(&mut self.recv, &self.crh, ch, n)
    }

    /// Chosen-message 1-of-2 OT on `k`-bit messages, this party sender.
    pub fn send_ot<C: Channel + ?Sized>(&mut self, ch: &mut C, msgs: &[(u128, u128)], k: usize) -> Result<(), OtError> {
        chosen::send(&mut self.send, &self.crh, ch, msgs, k)
    }

    /// Chosen-message 1-of-2 OT, this party receiver with choices `c`.
    pub fn recv_ot<C: Channel + ?Sized>(&mut self, ch: &mut C, c: &[bool], k: usize) -> Result<Vec<u128>, OtError> {
        chosen::recv(&mut self.recv, &self.crh, ch, c, k)
    }

    /// Additive COT over `Z_{2^l}`, this party sender with `Δ_i`: returns `x_i`.
    pub fn send_acot<C: Channel + ?Sized>(&mut self, ch: &mut C, deltas: &[u64], l: u32) -> Result<Vec<u64>, OtError> {
        acot::send(&mut self.send, &self.crh, ch, deltas, l)
    }

    /// Additive COT, this party receiver with choices `c`: returns `x_i + c_i·Δ_i mod 2^l`.
    pub fn recv_acot<C: Channel + ?Sized>(&mut self, ch: &mut C, c: &[bool], l: u32) -> Result<Vec<u64>, OtError> {
        acot::recv(&mut self.recv, &self.crh, ch, c, l)
    }

    /// Additive COTs with graded widths ([`acot::send_graded`]), this party sender: instance
    /// `i` over `Z_{2^{w_i}}`, `w_i = widths[i % widths.len()]`; returns `x_i`.
    pub fn send_acot_graded<C: Channel + ?Sized>(&mut self, ch: &mut C, deltas: &[u64], widths: &[u32]) -> Result<Vec<u64>, OtError> {
        acot::send_graded(&mut self.send, &self.crh, ch, deltas, widths)
    }

    /// Additive COTs with graded widths, this party receiver: `x_i + c_i·Δ_i mod 2^{w_i}`.
    pub fn recv_acot_graded<C: Channel + ?Sized>(&mut self, ch: &mut C, c: &[bool], widths: &[u32]) -> Result<Vec<u64>, OtError> {
        acot::recv_graded(&mut self.recv, &self.crh, ch, c, widths)
    }

    /// One additive COT in each direction at once ([`acot::both`]): this party sends with
    /// `deltas` and receives with choices `c`; 2 flights. Returns (sent `x_i`, received).
    /// The peer calls it at the same point with its own operands.
    pub fn acot_both<C: Channel + ?Sized>(&mut self, ch: &mut C, deltas: &[u64], c: &[bool], l: u32) -> Result<(Vec<u64>, Vec<u64>), OtError> {
        let send_first = self.role == Role::Server;
        acot::both(&mut self.send, &mut self.recv, &self.crh, ch, deltas, c, l, send_first)
    }

    /// Additive COT over `Z_{2^l}`, `l <= 128`, this party sender with `Δ_i`: returns `x_i`.
    pub fn send_acot_wide<C: Channel + ?Sized>(&mut self, ch: &mut C, deltas: &[u128], l: u32) -> Result<Vec<u128>, OtError> {
        acot::send_wide(&mut self.send, &self.crh, ch, deltas, l)
    }

    /// Additive COT over `Z_{2^l}`, `l <= 128`, this party receiver: `x_i + c_i·Δ_i mod 2^l`.
    pub fn recv_acot_wide<C: Channel + ?Sized>(&mut self, ch: &mut C, c: &[bool], l: u32) -> Result<Vec<u128>, OtError> {
        acot::recv_wide(&mut self.recv, &self.crh, ch, c, l)
    }

    /// 1-of-N OT on `k`-bit messages, this party sender (`msgs[i·N + j]`).
    pub fn send_ot1n<C: Channel + ?Sized>(&mut self, ch: &mut C, msgs: &[u128], n: usize, k: usize) -> Result<(), OtError> {
        one_of_n::send(&mut self.send, &self.crh, ch, msgs, n, k)
    }

    /// 1-of-N OT, this party receiver with indices `choices`.
    pub fn recv_ot1n<C: Channel + ?Sized>(&mut self, ch: &mut C, choices: &[u8], n: usize, k: usize) -> Result<Vec<u128>, OtError> {
        one_of_n::recv(&mut self.recv, &self.crh, ch, choices, n, k)
    }

    /// Several 1-of-N OT calls `(msgs, N, k)` in one round trip, this party sender
    /// ([`one_of_n::send_many`]).
    pub fn send_ot1n_many<C: Channel + ?Sized>(&mut self, ch: &mut C, groups: &[(&[u128], usize, usize)]) -> Result<(), OtError> {
        one_of_n::send_many(&mut self.send, &self.crh, ch, groups)
    }

    /// [`one_of_n::send_prepare`]: the first half of [`OtSession::send_ot1n_many`] for groups
    /// of shape `(instances, N, k)`, this party sender.
    pub fn send_ot1n_prepare<C: Channel + ?Sized>(&mut self, ch: &mut C, shapes: &[(usize, usize, usize)]) -> Result<one_of_n::SendPrepared, OtError> {
        one_of_n::send_prepare(&mut self.send, ch, shapes)
    }

    /// [`one_of_n::send_payload`]: group `i`'s payload after [`OtSession::send_ot1n_prepare`].
    pub fn send_ot1n_payload<C: Channel + ?Sized>(&mut self, ch: &mut C, prep: &mut one_of_n::SendPrepared, i: usize, msgs: &[u128]) -> Result<(), OtError> {
        one_of_n::send_payload(prep, &self.crh, ch, i, msgs)
    }

    /// Several 1-of-N OT calls `(choices, N, k)` in one round trip, this party receiver.
    pub fn recv_ot1n_many<C: Channel + ?Sized>(&mut self, ch: &mut C, groups: &[(&[u8], usize, usize)]) -> Result<Vec<Vec<u128>>, OtError> {
        one_of_n::recv_many(&mut self.recv, &self.crh, ch, groups)
    }

    /// Punctured PRF, this party sender: `trees` full GGM trees of depth `h`.
    pub fn send_pprf<C: Channel + ?Sized>(&mut self, ch: &mut C, trees: usize, h: usize) -> Result<Vec<Vec<u128>>, OtError> {
        pprf::send(&mut self.send, &self.crh, ch, trees, h, &mut self.prg)
    }

    /// Punctured PRF, this party receiver: leaves with `alphas[j]` punctured (zero).
    pub fn recv_pprf<C: Channel + ?Sized>(&mut self, ch: &mut C, alphas: &[usize], h: usize) -> Result<Vec<Vec<u128>>, OtError> {
        pprf::recv(&mut self.recv, &self.crh, ch, alphas, h)
    }

    /// Random-point punctured PRF on half-trees ([`half_tree`]), this party sender: per tree
    /// the `2^h · width` output blocks of every leaf (leaf-major).
    pub fn send_pprf_random<C: Channel + ?Sized>(&mut self, ch: &mut C, trees: usize, h: usize, width: usize) -> Result<Vec<Vec<u128>>, OtError> {
        half_tree::send(&mut self.send, &self.crh, ch, trees, h, width, &mut self.prg)
    }

    /// Random-point punctured PRF, this party receiver: per tree the random punctured point and
    /// the output blocks of every other leaf (zeros at the punctured leaf).
    pub fn recv_pprf_random<C: Channel + ?Sized>(&mut self, ch: &mut C, trees: usize, h: usize, width: usize) -> Result<Vec<(usize, Vec<u128>)>, OtError> {
        half_tree::recv(&mut self.recv, &self.crh, ch, trees, h, width)
    }
}
