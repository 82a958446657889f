//! Wire-format pinning: with fixed seeds, the bytes each party sends are a deterministic
//! function of the inputs; their hashes are printed (and pinned below, to be re-pinned whenever
//! this crate's or the HE layer's wire format changes on purpose).

use nectar_he::Params;
use nectar_linear::{bole, olt, HeSession, OltPlan, Shape, Side, Variant, Windows};
use nectar_math::Prg;
use nectar_net::{Channel, MemChannel, NetError, Role, Stats};

/// FNV-1a over every frame sent.
struct Recorder<'a> {
    inner: &'a mut MemChannel,
    hash: u64,
}

impl Channel for Recorder<'_> {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        for &b in (msg.len() as u64).to_le_bytes().iter().chain(msg) {
            self.hash = (self.hash ^ b as u64).wrapping_mul(0x100000001b3);
        }
        self.inner.send(msg)
    }
    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        self.inner.recv()
    }
    fn flush(&mut self) -> Result<(), NetError> {
        self.inner.flush()
    }
    fn stats(&self) -> Stats {
        self.inner.stats()
    }
}

fn olt_hashes() -> (u64, u64) {
    let n = 8192;
    let s = Shape::new(3, 5, 4).unwrap();
    let plan = OltPlan::new(
        s,
        Windows::new(2, 4, 2, n, true).unwrap(),
        n,
        Variant::Interleave,
    )
    .unwrap();
    let q: Vec<u64> = (0..15u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    let v: Vec<u64> = (0..20u64).map(|i| i.wrapping_mul(0xdead_beef)).collect();
    nectar_net::mem::run_pair(
        |ch| {
            let mut r = Recorder {
                inner: ch,
                hash: 0xcbf29ce484222325,
            };
            let mut p = Prg::new([1; 16]);
            let sess =
                HeSession::setup(&mut r, Role::Server, Params::bumblebee_olt(), true, &mut p)
                    .unwrap();
            olt(&mut r, &sess, &plan, Side::Lhs, &[&q], &mut p).unwrap();
            r.hash
        },
        |ch| {
            let mut r = Recorder {
                inner: ch,
                hash: 0xcbf29ce484222325,
            };
            let mut p = Prg::new([2; 16]);
            let sess =
                HeSession::setup(&mut r, Role::Client, Params::bumblebee_olt(), true, &mut p)
                    .unwrap();
            olt(&mut r, &sess, &plan, Side::Rhs, &[&v], &mut p).unwrap();
            r.hash
        },
    )
}

fn bole_hashes() -> (u64, u64) {
    let x: Vec<u64> = (0..100u64).map(|i| i * 77).collect();
    nectar_net::mem::run_pair(
        |ch| {
            let mut r = Recorder {
                inner: ch,
                hash: 0xcbf29ce484222325,
            };
            let mut p = Prg::new([3; 16]);
            let sess = HeSession::setup(
                &mut r,
                Role::Server,
                Params::bumblebee_bole(),
                false,
                &mut p,
            )
            .unwrap();
            bole::bole(&mut r, &sess, Role::Server, &x, 64, &mut p).unwrap();
            r.hash
        },
        |ch| {
            let mut r = Recorder {
                inner: ch,
                hash: 0xcbf29ce484222325,
            };
            let mut p = Prg::new([4; 16]);
            let sess = HeSession::setup(
                &mut r,
                Role::Client,
                Params::bumblebee_bole(),
                false,
                &mut p,
            )
            .unwrap();
            bole::bole(&mut r, &sess, Role::Client, &x, 64, &mut p).unwrap();
            r.hash
        },
    )
}

#[test]
fn transcripts_are_deterministic() {
    let a = olt_hashes();
    assert_eq!(a, olt_hashes());
    let b = bole_hashes();
    assert_eq!(b, bole_hashes());
    println!(
        "olt transcript hashes (server, client): {:#018x} {:#018x}",
        a.0, a.1
    );
    println!(
        "bole transcript hashes (server, client): {:#018x} {:#018x}",
        b.0, b.1
    );
}

/// Pinned hashes (setup + protocol, each direction). A change here means the bytes on the wire
/// changed: this crate's framing, the HE layer's serialization or sampling, or the PRG.
/// bOLEe re-pinned 2026-11-24: parameters {62, 62, 62} and the session-sized noise flood
/// (issue 18, statistical security per session). Re-pinned 2026-11-27: queries and responses
/// travel as frames of `nectar_linear::FRAME_CTS` ciphertexts, and an OLT response as one frame
/// per output ciphertext (issue 17, streamed bOLEe and OLT).
#[test]
fn transcripts_are_pinned() {
    assert_eq!(olt_hashes(), (0x0eeedb29d9cadffa, 0xf07e786852018c26));
    assert_eq!(bole_hashes(), (0xf4715a7891239a1e, 0xa5563ed145193829));
}
