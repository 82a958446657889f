//! [`Mpc`]: one party's context for the share-level protocols, plus the local helpers and the
//! opening of shares shared by all protocol files.
//!
//! Opening costs one exchange (2 flows: P0 sends, P1 answers), `n·l` bits each way for an
//! arithmetic vector, `n` bits each way for a boolean vector. Exchanges are ordered (P0 first)
//! rather than simultaneous so that large frames never deadlock a blocking TCP transport.

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
        Mpc { role, ot, prg, cmp: Comparison::Millionaire, rotl: Vec::new(), prepro: PreproCost::default() }
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

    pub(crate) fn note_prepro(&mut self, d: nectar_net::Stats, seconds: f64) {
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

    /// Send `mine`, receive the peer's frame; P0 sends first (see module doc).
    pub(crate) fn exchange(&mut self, ch: &mut dyn Channel, mine: &[u8]) -> Result<Vec<u8>> {
        if self.is_server() {
            ch.send(mine)?;
            Ok(ch.recv()?)
        } else {
            let theirs = ch.recv()?;
            ch.send(mine)?;
            ch.flush()?;
            Ok(theirs)
        }
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

    /// Additive COT in both directions: this party sends with `deltas` and receives with
    /// `choices` (the peer does the converse). Returns (sender outputs, receiver outputs).
    pub(crate) fn acot_both(
        &mut self,
        ch: &mut dyn Channel,
        deltas: &[u64],
        choices: &[bool],
        l: u32,
    ) -> Result<(Vec<u64>, Vec<u64>)> {
        Ok(self.ot.acot_both(ch, deltas, choices, l)?)
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

pub(crate) type RotBoth = (Vec<(u128, u128)>, (Vec<bool>, Vec<u128>));

