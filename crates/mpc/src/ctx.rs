//! [`Mpc`]: one party's context for the share-level protocols, plus the local helpers and the
//! opening of shares shared by all protocol files.
//!
//! Opening costs one exchange (2 flows: the leading party sends, the other answers), `n·l` bits
//! each way for an arithmetic vector, `n` bits each way for a boolean vector. Exchanges are
//! ordered rather than simultaneous so that large frames never deadlock a blocking TCP
//! transport.
//!
//! **The lead** (issue 48, fewer flights). Most steps here are two ordered messages: an
//! exchange (the first mover sends its share, the second answers with its own), or an additive
//! COT (the receiver sends its choice corrections, the sender its payload). In each, the second
//! mover knows its output when it sends, so the next step can start with *its* message, and
//! that message then travels in the same flight as the one it just sent (a flight is a change
//! of direction, [`nectar_net::Stats`]). [`Mpc`] therefore keeps the party that sent the last
//! message of the previous step, the *lead*, and every two-message step lets the lead move
//! first and passes the lead to the other party: a chain of such steps costs one flight per
//! step instead of two. The lead is AGREEMENT state: both parties start with P0 and update it
//! at the same points (protocols that run on the channel outside this context set it with
//! [`Mpc::set_lead`] when they know who sent last). Which party leads never changes a result's
//! distribution: the COT-based steps are symmetric in their two parties.

use crate::rotl_lut::{PreproCost, RotlPrepro};
use crate::{MpcError, Result};
pub use crate::words::{mask, msb_of, to_signed};
pub(crate) use crate::words::{broadcast, same_len};
use nectar_math::Prg;
use nectar_net::{Channel, Role};
use nectar_ot::bits::{pack_bits, pack_words, unpack_bits, unpack_words};
use nectar_ot::{OtSession, Producer};

/// One party's state: its role, its OT session with the peer and a PRG for protocol randomness
/// (fresh per session; never shared with the OT session's own PRG).
pub struct Mpc {
    role: Role,
    ot: OtSession,
    prg: Prg,
    /// The comparison protocol behind `millionaire` (and so MSB / less-than; AGREEMENT).
    cmp: Comparison,
    /// Preprocessed ROTL lookups per table size `2^h`.
    rotl: Vec<(u32, RotlPrepro)>,
    /// Cumulative cost of preprocessing.
    prepro: PreproCost,
    /// The party that moves first in the next two-message step (module docs).
    lead: Role,
}

/// Which protocol computes `1{x > y}` for the comparisons (AGREEMENT: both parties must choose
/// the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// CrypTFlow2's millionaire from 1-of-16 OT with BumbleBee's batching ([`crate::millionaire`]).
    Millionaire,
    /// ROTL §VI: blocks of `block` bits compared by one ROTL lookup each ([`crate::lut_compare`]).
    RotlLut { block: u32 },
}

impl Mpc {
    /// Wrap an existing OT session. `prg` must be freshly seeded for this session.
    pub fn new(role: Role, ot: OtSession, prg: Prg) -> Self {
        Mpc { role, ot, prg, cmp: Comparison::Millionaire, rotl: Vec::new(), prepro: PreproCost::default(), lead: Role::Server }
    }

    /// Run the OT session setup (base OTs, both directions) with `producer` and return the
    /// context. The OT session gets a fork of `prg`.
    pub fn setup(
        role: Role,
        ch: &mut dyn Channel,
        mut prg: Prg,
        producer: Producer,
    ) -> Result<Self> {
        let ot = OtSession::with_producer(role, ch, prg.fork(), producer)?;
        Ok(Mpc::new(role, ot, prg))
    }

    pub fn role(&self) -> Role {
        self.role
    }

    /// True for P0 (the server).
    pub fn is_server(&self) -> bool {
        self.role == Role::Server
    }

    /// The party that moves first in the next two-message step (module docs).
    pub fn lead(&self) -> Role {
        self.lead
    }

    /// Sets the lead after a protocol run on the channel outside this context, to the party
    /// that sent its last message (AGREEMENT: the peer sets the same role at the same point).
    pub fn set_lead(&mut self, r: Role) {
        self.lead = r;
    }

    /// Whether this party moves first in the next two-message step.
    pub(crate) fn leads(&self) -> bool {
        self.lead == self.role
    }

    /// After a two-message step: its second mover sent last, so it leads the next one.
    pub(crate) fn pass_lead(&mut self) {
        self.lead = self.lead.peer();
    }

    /// One additive COT over `Z_{2^w}` led by the lead (module docs): the lead is the receiver
    /// with `choices`, the other party the sender with `deltas` (each party passes both; only
    /// its side's are used). Returns this party's output: `x_i` for the sender,
    /// `x_i + c_i·Δ_i` for the receiver; passes the lead to the sender.
    pub(crate) fn led_acot(&mut self, ch: &mut dyn Channel, deltas: impl FnOnce() -> Vec<u64>, choices: impl FnOnce() -> Vec<bool>, w: u32) -> Result<LedAcot> {
        let out = if self.leads() {
            LedAcot::Received(self.ot.recv_acot(ch, &choices(), w)?)
        } else {
            LedAcot::Sent(self.ot.send_acot(ch, &deltas(), w)?)
        };
        self.pass_lead();
        Ok(out)
    }

    /// [`Mpc::led_acot`] with graded widths: instance `i` over `Z_{2^{w_i}}`,
    /// `w_i = widths[i % widths.len()]` ([`nectar_ot::acot::send_graded`]).
    pub(crate) fn led_acot_graded(&mut self, ch: &mut dyn Channel, deltas: impl FnOnce() -> Vec<u64>, choices: impl FnOnce() -> Vec<bool>, widths: &[u32]) -> Result<LedAcot> {
        let out = if self.leads() {
            LedAcot::Received(self.ot.recv_acot_graded(ch, &choices(), widths)?)
        } else {
            LedAcot::Sent(self.ot.send_acot_graded(ch, &deltas(), widths)?)
        };
        self.pass_lead();
        Ok(out)
    }

    /// [`Mpc::led_acot`] over `Z_{2^w}`, `w <= 128`.
    pub(crate) fn led_acot_wide(&mut self, ch: &mut dyn Channel, deltas: impl FnOnce() -> Vec<u128>, choices: impl FnOnce() -> Vec<bool>, w: u32) -> Result<LedAcotWide> {
        let out = if self.leads() {
            LedAcotWide::Received(self.ot.recv_acot_wide(ch, &choices(), w)?)
        } else {
            LedAcotWide::Sent(self.ot.send_acot_wide(ch, &deltas(), w)?)
        };
        self.pass_lead();
        Ok(out)
    }

    pub fn ot(&mut self) -> &mut OtSession {
        &mut self.ot
    }

    pub fn prg(&mut self) -> &mut Prg {
        &mut self.prg
    }

    /// The comparison protocol in use.
    pub fn comparison(&self) -> Comparison {
        self.cmp
    }

    /// Selects the comparison protocol (AGREEMENT: the peer selects the same at the same point).
    pub fn set_comparison(&mut self, c: Comparison) -> Result<()> {
        if let Comparison::RotlLut { block } = c {
            crate::lut_compare::check_block(block)?;
        }
        self.cmp = c;
        Ok(())
    }

    /// Cumulative traffic and time of this session's preprocessing so far (ROTL rotations and
    /// the COTs reserved for their online phase); subtract two readings to cost a stretch.
    pub fn prepro_cost(&self) -> PreproCost {
        self.prepro
    }

    /// Adds a stretch of input-independent preprocessing (its traffic `d` and `seconds`) to
    /// [`Mpc::prepro_cost`]: ROTL's rotations here, and steps outside this crate that run once
    /// per session rather than per query (COP's weight transfer, `nectar_linear::cop`).
    pub fn note_prepro(&mut self, d: nectar_net::Stats, seconds: f64) {
        self.prepro.bytes_sent += d.bytes_sent;
        self.prepro.bytes_recv += d.bytes_recv;
        self.prepro.rounds += d.rounds;
        self.prepro.seconds += seconds;
    }

    pub(crate) fn rotl_store(&mut self) -> &mut Vec<(u32, RotlPrepro)> {
        &mut self.rotl
    }

    pub(crate) fn parts(&mut self) -> (&mut OtSession, &mut Prg) {
        (&mut self.ot, &mut self.prg)
    }

    /// Send `mine`, receive the peer's frame; the lead sends first and passes the lead (see
    /// module doc).
    pub(crate) fn exchange(&mut self, ch: &mut dyn Channel, mine: &[u8]) -> Result<Vec<u8>> {
        let theirs = if self.leads() {
            ch.send(mine)?;
            ch.recv()?
        } else {
            let theirs = ch.recv()?;
            ch.send(mine)?;
            ch.flush()?;
            theirs
        };
        self.pass_lead();
        Ok(theirs)
    }

    /// Exchange bit vectors of equal length `mine.len()`.
    pub(crate) fn exchange_bits(
        &mut self,
        ch: &mut dyn Channel,
        mine: &[bool],
        what: &'static str,
    ) -> Result<Vec<bool>> {
        let got = self.exchange(ch, &pack_bits(mine))?;
        if got.len() != mine.len().div_ceil(8) {
            return Err(MpcError::BadMessage {
                what,
                expected: mine.len().div_ceil(8),
                got: got.len(),
            });
        }
        Ok(unpack_bits(&got, mine.len())?)
    }

    /// `n` random OTs in both directions: (pairs sent, (choices, messages) received).
    pub(crate) fn rot_both(&mut self, ch: &mut dyn Channel, n: usize) -> Result<RotBoth> {
        if self.is_server() {
            let s = self.ot.send_rot(ch, n)?;
            let r = self.ot.recv_rot(ch, n)?;
            Ok((s, r))
        } else {
            let r = self.ot.recv_rot(ch, n)?;
            let s = self.ot.send_rot(ch, n)?;
            Ok((s, r))
        }
    }

    /// Open an arithmetic vector in `Z_{2^l}` to both parties.
    pub fn reveal(&mut self, ch: &mut dyn Channel, x: &[u64], l: u32) -> Result<Vec<u64>> {
        let m = mask(l)?;
        let words: Vec<u128> = x.iter().map(|&v| (v & m) as u128).collect();
        let got = self.exchange(ch, &pack_words(&words, l as usize))?;
        let need = (x.len() * l as usize).div_ceil(8);
        if got.len() != need {
            return Err(MpcError::BadMessage {
                what: "opened shares",
                expected: need,
                got: got.len(),
            });
        }
        let theirs = unpack_words(&got, x.len(), l as usize)?;
        Ok(x.iter()
            .zip(theirs)
            .map(|(&a, b)| a.wrapping_add(b as u64) & m)
            .collect())
    }

    /// Open a boolean vector to both parties.
    pub fn reveal_bits(&mut self, ch: &mut dyn Channel, b: &[bool]) -> Result<Vec<bool>> {
        let theirs = self.exchange_bits(ch, b, "opened bits")?;
        Ok(b.iter().zip(theirs).map(|(a, c)| a ^ c).collect())
    }

    /// Shares of a public vector: P0 holds `c`, P1 zeros.
    pub fn constant(&self, c: &[u64], l: u32) -> Result<Vec<u64>> {
        let m = mask(l)?;
        Ok(if self.is_server() {
            c.iter().map(|v| v & m).collect()
        } else {
            vec![0; c.len()]
        })
    }

    /// Shares of a public bit vector: P0 holds `c`, P1 zeros.
    pub fn constant_bits(&self, c: &[bool]) -> Vec<bool> {
        if self.is_server() {
            c.to_vec()
        } else {
            vec![false; c.len()]
        }
    }

    /// `x + c` for public `c` (one value broadcast, or one per element); P0 adds. Local.
    pub fn add_public(&self, x: &[u64], c: &[u64], l: u32) -> Result<Vec<u64>> {
        let m = mask(l)?;
        let c = broadcast(c, x.len(), "public addend")?;
        Ok(if self.is_server() {
            x.iter()
                .zip(c)
                .map(|(&a, b)| a.wrapping_add(b) & m)
                .collect()
        } else {
            x.iter().map(|&a| a & m).collect()
        })
    }

    /// `a ⊕ b` on XOR shares. Local.
    pub fn xor(&self, a: &[bool], b: &[bool]) -> Result<Vec<bool>> {
        same_len("xor", a.len(), b.len())?;
        Ok(a.iter().zip(b).map(|(x, y)| x ^ y).collect())
    }

    /// `¬a`: P0 flips its share. Local.
    pub fn not(&self, a: &[bool]) -> Vec<bool> {
        if self.is_server() {
            a.iter().map(|x| !x).collect()
        } else {
            a.to_vec()
        }
    }
}

/// This party's output of a [`Mpc::led_acot`].
pub(crate) enum LedAcot {
    /// Sender: `x_i`.
    Sent(Vec<u64>),
    /// Receiver: `x_i + c_i·Δ_i`.
    Received(Vec<u64>),
}

/// This party's output of a [`Mpc::led_acot_wide`].
pub(crate) enum LedAcotWide {
    Sent(Vec<u128>),
    Received(Vec<u128>),
}

pub(crate) type RotBoth = (Vec<(u128, u128)>, (Vec<bool>, Vec<u128>));

