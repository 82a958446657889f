//! `nectar bench nn --op {less,mux,trunc,...}`: both parties in two threads over an in-memory
//! channel (optionally through a simulated LAN/WAN link), one protocol call on `size` elements
//! of random shares.
//!
//! Reported: wall seconds of the call (both parties concurrently), bytes both directions (frame
//! headers included), flows summed over both parties, and bits per element. The OT session
//! setup (base OTs) and the Ferret bootstrap of both directions are excluded (run before the
//! measurement); pool refills during the call are included.
//!
//! Every byte figure comes from the channel counters of the run. The COT production cost is
//! measured, not assumed: before the call, each direction runs one steady-state extension
//! ([`nectar_ot::OtSession::refill`]) whose traffic, read from the channel counters around it
//! ([`nectar_ot::RefillTraffic`]), divided by the COTs it produced, is `refill_bits_per_cot`.
//! `steady_bits_per_element` then spreads that measured cost evenly over the call's COTs: the
//! call's bytes without the extensions that happened to run inside it, plus
//! `cots_per_element · refill_bits_per_cot`.

use nectar_math::Prg;
use nectar_mpc::{Mpc, MpcError, Result};
use nectar_net::{linked_pair, Channel, LinkModel, Role};
use nectar_ot::Producer;
use std::time::Instant;

/// Which protocol to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum OpKind {
    /// `1{x < t}`, `thresholds` public thresholds (batched), `shift` low bits ignored.
    Less,
    Msb,
    Mux,
    And,
    B2a,
    /// Heuristic (known-MSB) truncation by `shift`.
    Trunc,
    /// Cheetah approximate truncation (millionaire wrap).
    TruncApprox,
    TruncFaithful,
    /// Heuristic extension `Z_{2^l} → Z_{2^(l+shift)}`.
    Extend,
    ExtendExact,
    Mul,
    Square,
    /// Equality with `thresholds` public constants.
    Equal,
}

/// One benchmark configuration (JSON-friendly).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MpcOp {
    pub kind: OpKind,
    /// Ring width.
    pub l: u32,
    /// Truncation shift, ignored low bits (less), or extension amount (extend).
    pub shift: u32,
    /// Number of public thresholds / constants (less, equal).
    pub thresholds: usize,
}

impl MpcOp {
    /// Names of the CLI (`--op`): `less`, `less3` (3 batched thresholds, as Seg4GeLU),
    /// `less-approx` (3 thresholds, 14 low bits ignored: BumbleBee's 50-bit MSB), `msb`, `mux`,
    /// `and`, `b2a`, `trunc`, `trunc-approx`, `trunc-faithful`, `extend` (32 → 64),
    /// `extend-exact`, `mul`, `square`, `equal`. Defaults: `l = 64`, shift 18 (f of BumbleBee).
    pub fn parse(name: &str) -> Option<MpcOp> {
        let op = |kind, shift, thresholds| {
            Some(MpcOp {
                kind,
                l: 64,
                shift,
                thresholds,
            })
        };
        match name {
            "less" => op(OpKind::Less, 0, 1),
            "less3" => op(OpKind::Less, 0, 3),
            "less-approx" => op(OpKind::Less, 14, 3),
            "msb" => op(OpKind::Msb, 0, 1),
            "mux" => op(OpKind::Mux, 0, 1),
            "and" => op(OpKind::And, 0, 1),
            "b2a" => op(OpKind::B2a, 0, 1),
            "trunc" => op(OpKind::Trunc, 18, 1),
            "trunc-approx" => op(OpKind::TruncApprox, 18, 1),
            "trunc-faithful" => op(OpKind::TruncFaithful, 18, 1),
            "extend" => Some(MpcOp {
                kind: OpKind::Extend,
                l: 32,
                shift: 32,
                thresholds: 1,
            }),
            "extend-exact" => Some(MpcOp {
                kind: OpKind::ExtendExact,
                l: 32,
                shift: 32,
                thresholds: 1,
            }),
            "mul" => op(OpKind::Mul, 0, 1),
            "square" => op(OpKind::Square, 0, 1),
            "equal" => Some(MpcOp {
                kind: OpKind::Equal,
                l: 16,
                shift: 0,
                thresholds: 1,
            }),
            _ => None,
        }
    }

    /// The same operation in `Z_{2^l}` (e.g. 32 for BumbleBee's small ring; trunc shift 12).
    pub fn with_l(mut self, l: u32) -> Self {
        self.l = l;
        self
    }

    pub fn with_shift(mut self, s: u32) -> Self {
        self.shift = s;
        self
    }
}

/// One measurement (JSON-friendly).
#[derive(Clone, Debug, serde::Serialize)]
pub struct MpcBench {
    pub op: MpcOp,
    pub size: usize,
    pub net: String,
    pub seconds: f64,
    /// Bytes both directions.
    pub bytes: u64,
    pub bytes_p0: u64,
    pub bytes_p1: u64,
    /// Flows (messages) summed over both parties.
    pub flows: u64,
    pub bits_per_element: f64,
    /// COTs consumed per element (both directions, each COT counted once).
    pub cots_per_element: f64,
    /// Bytes of the COT extensions that ran inside the call (both directions; part of `bytes`).
    pub refill_bytes: u64,
    /// Measured steady-state cost of a COT: the traffic of one extension per direction run
    /// before the call, in bits, over the COTs it produced (module doc).
    pub refill_bits_per_cot: f64,
    /// `(bytes − refill_bytes) · 8 / size + cots_per_element · refill_bits_per_cot`: the call's
    /// cost with COT production spread evenly at its measured steady-state rate.
    pub steady_bits_per_element: f64,
}

/// Run `op` on `size` elements; `net = None` is the raw in-memory channel.
pub fn bench_mpc(op: MpcOp, size: usize, net: Option<LinkModel>) -> Result<MpcBench> {
    let (b0, b1) = linked_pair(net);
    // Each thread owns (and drops on return) its end, so a failing party closes the link
    // instead of leaving the other blocked.
    let (r0, r1) = std::thread::scope(|s| {
        let h = s.spawn(move || {
            let mut c = b1;
            party(Role::Client, c.as_mut(), op, size)
        });
        let mut c = b0;
        let a = party(Role::Server, c.as_mut(), op, size);
        drop(c);
        (
            a,
            h.join()
                .unwrap_or_else(|_| Err(MpcError::BadArgument("client thread panicked".into()))),
        )
    });
    let (p0, p1) = (r0?, r1?);
    let (t0, s0, k0) = (p0.seconds, p0.stats, p0.cots);
    let (t1, s1) = (p1.seconds, p1.stats);
    let bytes = s0.bytes_sent + s1.bytes_sent;
    let bits_per_element = bytes as f64 * 8.0 / size.max(1) as f64;
    // One party's two pools hand out every COT of both directions once (the peer's pools
    // count the same COTs), and its counters see both directions of every extension.
    let cots_per_element = k0 as f64 / size.max(1) as f64;
    let refill_bytes = p0.refill_in_call.bytes();
    let refill_bits_per_cot = p0.steady.bits_per_cot().ok_or_else(|| {
        MpcError::BadArgument("no steady-state extension was measured".into())
    })?;
    Ok(MpcBench {
        op,
        size,
        net: net_label(net),
        seconds: t0.max(t1),
        bytes,
        bytes_p0: s0.bytes_sent,
        bytes_p1: s1.bytes_sent,
        flows: s0.msgs_sent + s1.msgs_sent,
        bits_per_element,
        cots_per_element,
        refill_bytes,
        refill_bits_per_cot,
        steady_bits_per_element: (bytes - refill_bytes) as f64 * 8.0 / size.max(1) as f64
            + cots_per_element * refill_bits_per_cot,
    })
}

/// How a bench line names the link: `none` or its bandwidth, round trip and one-way latency.
pub(crate) fn net_label(net: Option<LinkModel>) -> String {
    match net {
        None => "none".into(),
        Some(m) => format!("{:.0} Mbit/s, {:?} RTT ({:?} one-way)", m.bandwidth_bps / 1e6, m.rtt(), m.latency),
    }
}

/// Before a measurement, outside it: the Ferret bootstrap of both directions (one random OT
/// each way, the server sending first: the order of `Mpc`'s two-way calls), then one
/// steady-state extension per direction, whose traffic (returned) prices a COT and which
/// leaves both pools full.
pub(crate) fn warm_up(mpc: &mut Mpc, ch: &mut dyn Channel) -> Result<nectar_ot::RefillTraffic> {
    if mpc.is_server() {
        mpc.ot().send_rot(ch, 1)?;
        mpc.ot().recv_rot(ch, 1)?;
    } else {
        mpc.ot().recv_rot(ch, 1)?;
        mpc.ot().send_rot(ch, 1)?;
    }
    mpc.ot().refill(ch)?;
    Ok(mpc.ot().steady_traffic())
}

/// One party's measurement.
struct PartyOut {
    seconds: f64,
    stats: nectar_net::Stats,
    /// COTs this party's pools handed out during the call.
    cots: u64,
    /// Extensions run inside the call.
    refill_in_call: nectar_ot::RefillTraffic,
    /// The steady-state extensions run before the call.
    steady: nectar_ot::RefillTraffic,
}

fn party(role: Role, ch: &mut dyn Channel, op: MpcOp, n: usize) -> Result<PartyOut> {
    let mut prg = Prg::from_entropy();
    let mut mpc = Mpc::setup(role, ch, prg.fork(), Producer::default())?;
    let steady = warm_up(&mut mpc, ch)?;
    let l = op.l;
    let m = nectar_mpc::ctx::mask(l)?;
    let x: Vec<u64> = (0..n).map(|_| prg.next_u128() as u64 & m).collect();
    let y: Vec<u64> = (0..n).map(|_| prg.next_u128() as u64 & m).collect();
    let b: Vec<bool> = (0..n).map(|_| prg.next_bit()).collect();
    let ts: Vec<u64> = (0..op.thresholds as u64).map(|j| (j * 12345) & m).collect();
    ch.flush()?;
    let s0 = ch.stats();
    let consumed = |mpc: &mut Mpc| {
        let (a, b) = mpc.ot().pools();
        a.consumed() + b.consumed()
    };
    let k0 = consumed(&mut mpc);
    let r0 = mpc.ot().refill_traffic();
    let t = Instant::now();
    match op.kind {
        OpKind::Less => drop(mpc.less_than_const(ch, &x, &ts, l, op.shift)?),
        OpKind::Msb => drop(mpc.msb(ch, &x, l)?),
        OpKind::Mux => drop(mpc.mux(ch, &b, &x, l)?),
        OpKind::And => drop(mpc.and(ch, &b, &b)?),
        OpKind::B2a => drop(mpc.b2a(ch, &b, l)?),
        OpKind::Trunc => drop(mpc.trunc(ch, &x, l, op.shift)?),
        OpKind::TruncApprox => drop(mpc.trunc_approx(ch, &x, l, op.shift)?),
        OpKind::TruncFaithful => drop(mpc.trunc_faithful(ch, &x, l, op.shift)?),
        OpKind::Extend => drop(mpc.extend(ch, &x, l, l + op.shift)?),
        OpKind::ExtendExact => drop(mpc.extend_exact(ch, &x, l, l + op.shift)?),
        OpKind::Mul => drop(mpc.mul(ch, &x, &y, l)?),
        OpKind::Square => drop(mpc.square(ch, &x, l)?),
        OpKind::Equal => drop(mpc.equal_const(ch, &x, &ts, l)?),
    }
    ch.flush()?;
    let seconds = t.elapsed().as_secs_f64();
    Ok(PartyOut {
        seconds,
        stats: ch.stats() - s0,
        cots: consumed(&mut mpc) - k0,
        refill_in_call: mpc.ot().refill_traffic().since(&r0),
        steady,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names() {
        for name in [
            "less",
            "less3",
            "less-approx",
            "msb",
            "mux",
            "and",
            "b2a",
            "trunc",
            "trunc-approx",
            "trunc-faithful",
            "extend",
            "extend-exact",
            "mul",
            "square",
            "equal",
        ] {
            assert!(MpcOp::parse(name).is_some(), "{name}");
        }
        assert!(MpcOp::parse("gelu").is_none());
        let op = MpcOp::parse("trunc").map(|o| o.with_l(32).with_shift(12));
        assert_eq!(
            op,
            Some(MpcOp {
                kind: OpKind::Trunc,
                l: 32,
                shift: 12,
                thresholds: 1
            })
        );
    }
}
