//! `nectar bench mpc --op lut`: ROTL lookups (ROTL §IV, Fig. 14 setting), and
//! `nectar bench mpc --op msb --compare rotl-lut --block B`: the comparison from LUTs (§VI),
//! both split into preprocessing and online.
//!
//! Both parties run in two threads over an in-memory channel (optionally a simulated link).
//! The OT session setup and the Ferret bootstrap of both directions run before the measurement,
//! then one steady-state extension per direction whose traffic prices a COT
//! (`refill_bits_per_cot`, measured from the channel counters as in [`crate::mpc`]).
//!
//! Phases: **preprocessing** = [`Mpc::rotl_preprocess`] for all `count` lookups (the rotations
//! and the COTs the online MUXes will use; for `msb`, the lookups of every block); **online** =
//! the lookups themselves (and the AND tree for `msb`). Every byte figure is read from the
//! channel counters around each phase. Because the pools were just refilled, the COTs both
//! phases consume were produced by an extension outside the measurement; the `*_steady_*`
//! figures add them back at the measured steady-state rate, each COT to the phase that
//! consumes it (`*_cots`): that is the cost of the phase when COT production is paid as it goes.

use nectar_math::Prg;
use nectar_mpc::lut_compare::check_block;
use nectar_mpc::{Comparison, Mpc, MpcError, Result};
use nectar_net::{linked_pair, Channel, LinkModel, Role};
use nectar_ot::Producer;
use std::time::Instant;

/// What to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum LutOp {
    /// A table of `n` random `bits`-bit entries, index shared mod `n`.
    Lut { n: usize },
    /// MSB of `bits`-bit shares by the comparison from LUTs with `block`-bit blocks.
    Msb { block: u32 },
}

/// One measurement (one JSON line).
#[derive(Clone, Debug, serde::Serialize)]
pub struct LutBench {
    pub op: &'static str,
    pub protocol: &'static str,
    /// Table entries (lut) or 2^(block + 1) (msb).
    pub n: usize,
    pub bits: u32,
    /// Block size of the comparison (msb), 0 for lut.
    pub block: u32,
    pub count: usize,
    pub net: String,
    /// Measured bytes, both directions.
    pub bytes_total: u64,
    pub prepro_bytes: u64,
    pub online_bytes: u64,
    /// Wall seconds (both parties concurrently).
    pub seconds: f64,
    pub prepro_seconds: f64,
    pub online_seconds: f64,
    /// Flows (messages), both parties.
    pub prepro_flows: u64,
    pub online_flows: u64,
    /// COTs consumed per phase (each COT once).
    pub prepro_cots: u64,
    pub online_cots: u64,
    /// Bytes of COT extensions inside each phase (part of the measured bytes).
    pub prepro_refill_bytes: u64,
    pub online_refill_bytes: u64,
    pub refill_bits_per_cot: f64,
    /// Per lookup (or comparison), COT production at the steady rate (module doc).
    pub steady_bytes_per_lookup: f64,
    pub steady_prepro_bytes_per_lookup: f64,
    pub steady_online_bytes_per_lookup: f64,
    pub us_per_lookup: f64,
    pub prepro_us_per_lookup: f64,
    pub online_us_per_lookup: f64,
}

struct Phase {
    stats: nectar_net::Stats,
    seconds: f64,
    cots: u64,
    refill: u64,
}

struct PartyOut {
    pre: Phase,
    on: Phase,
    steady: nectar_ot::RefillTraffic,
}

/// Runs `op` on `count` elements with `bits`-bit outputs (lut) or inputs (msb).
pub fn bench_lut(op: LutOp, bits: u32, count: usize, net: Option<LinkModel>) -> Result<LutBench> {
    nectar_mpc::ctx::mask(bits)?;
    let n = match op {
        LutOp::Lut { n } => {
            if !n.is_power_of_two() || !(2..=1 << nectar_mpc::rotate::MAX_LOG_N).contains(&n) {
                return Err(MpcError::BadArgument(format!("--n {n}: a power of two in 2..=4096")));
            }
            n
        }
        LutOp::Msb { block } => {
            check_block(block)?;
            if bits < 2 {
                return Err(MpcError::BadArgument("msb needs --bits >= 2".into()));
            }
            1 << (block + 1)
        }
    };
    if count == 0 {
        return Err(MpcError::BadArgument("--count must be positive".into()));
    }
    let (b0, b1) = linked_pair(net);
    let (r0, r1) = std::thread::scope(|s| {
        let h = s.spawn(move || {
            let mut c = b1;
            party(Role::Client, c.as_mut(), op, bits, count)
        });
        let mut c = b0;
        let a = party(Role::Server, c.as_mut(), op, bits, count);
        drop(c);
        (a, h.join().unwrap_or_else(|_| Err(MpcError::BadArgument("client thread panicked".into()))))
    });
    let (p0, p1) = (r0?, r1?);
    let rate = p0.steady.bits_per_cot().ok_or_else(|| MpcError::BadArgument("no steady-state extension was measured".into()))?;
    let bytes = |a: &Phase, b: &Phase| a.stats.bytes_sent + b.stats.bytes_sent;
    let (pre_b, on_b) = (bytes(&p0.pre, &p1.pre), bytes(&p0.on, &p1.on));
    let pre_s = p0.pre.seconds.max(p1.pre.seconds);
    let on_s = p0.on.seconds.max(p1.on.seconds);
    let steady = |b: u64, ph: &Phase| ((b - ph.refill) as f64 + ph.cots as f64 * rate / 8.0) / count as f64;
    let (sp, so) = (steady(pre_b, &p0.pre), steady(on_b, &p0.on));
    Ok(LutBench {
        op: match op {
            LutOp::Lut { .. } => "lut",
            LutOp::Msb { .. } => "msb",
        },
        protocol: match op {
            LutOp::Lut { .. } => "rotl",
            LutOp::Msb { .. } => "rotl-lut",
        },
        n,
        bits,
        block: match op {
            LutOp::Lut { .. } => 0,
            LutOp::Msb { block } => block,
        },
        count,
        net: crate::mpc::net_label(net),
        bytes_total: pre_b + on_b,
        prepro_bytes: pre_b,
        online_bytes: on_b,
        seconds: pre_s + on_s,
        prepro_seconds: pre_s,
        online_seconds: on_s,
        prepro_flows: p0.pre.stats.msgs_sent + p1.pre.stats.msgs_sent,
        online_flows: p0.on.stats.msgs_sent + p1.on.stats.msgs_sent,
        prepro_cots: p0.pre.cots,
        online_cots: p0.on.cots,
        prepro_refill_bytes: p0.pre.refill,
        online_refill_bytes: p0.on.refill,
        refill_bits_per_cot: rate,
        steady_bytes_per_lookup: sp + so,
        steady_prepro_bytes_per_lookup: sp,
        steady_online_bytes_per_lookup: so,
        us_per_lookup: (pre_s + on_s) * 1e6 / count as f64,
        prepro_us_per_lookup: pre_s * 1e6 / count as f64,
        online_us_per_lookup: on_s * 1e6 / count as f64,
    })
}

fn party(role: Role, ch: &mut dyn Channel, op: LutOp, bits: u32, count: usize) -> Result<PartyOut> {
    let mut prg = Prg::from_entropy();
    let mut mpc = Mpc::setup(role, ch, prg.fork(), Producer::default())?;
    let steady = crate::mpc::warm_up(&mut mpc, ch)?;
    let m = nectar_mpc::ctx::mask(bits)?;
    let consumed = |mpc: &mut Mpc| {
        let (a, b) = mpc.ot().pools();
        a.consumed() + b.consumed()
    };
    let phase = |mpc: &mut Mpc, ch: &mut dyn Channel, f: &mut dyn FnMut(&mut Mpc, &mut dyn Channel) -> Result<()>| -> Result<Phase> {
        ch.flush()?;
        let (s0, k0, r0, t) = (ch.stats(), consumed(mpc), mpc.ot().refill_traffic(), Instant::now());
        f(mpc, ch)?;
        ch.flush()?;
        Ok(Phase { seconds: t.elapsed().as_secs_f64(), stats: ch.stats() - s0, cots: consumed(mpc) - k0, refill: mpc.ot().refill_traffic().since(&r0).bytes() })
    };
    match op {
        LutOp::Lut { n } => {
            let h = n.trailing_zeros();
            // the same public table on both sides (fixed seed), random index shares mod n
            let mut tp = Prg::new([7; 16]);
            let table: Vec<u64> = (0..n).map(|_| tp.next_u128() as u64 & m).collect();
            let x: Vec<u64> = (0..count).map(|_| prg.next_u128() as u64 & (n as u64 - 1)).collect();
            let muxes = usize::from(bits > 1);
            let pre = phase(&mut mpc, ch, &mut |mpc, ch| mpc.rotl_preprocess(ch, h, count, muxes))?;
            let on = phase(&mut mpc, ch, &mut |mpc, ch| mpc.rotl_lut(ch, &x, h, &[&table], bits).map(drop))?;
            Ok(PartyOut { pre, on, steady })
        }
        LutOp::Msb { block } => {
            mpc.set_comparison(Comparison::RotlLut { block })?;
            let x: Vec<u64> = (0..count).map(|_| prg.next_u128() as u64 & m).collect();
            let blocks = (bits - 1).div_ceil(block) as usize;
            let pre = phase(&mut mpc, ch, &mut |mpc, ch| mpc.rotl_preprocess(ch, block + 1, count * blocks, 0))?;
            let on = phase(&mut mpc, ch, &mut |mpc, ch| mpc.msb(ch, &x, bits).map(drop))?;
            Ok(PartyOut { pre, on, steady })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_add_up_and_online_is_small() {
        let b = bench_lut(LutOp::Lut { n: 256 }, 64, 200, None).unwrap();
        assert_eq!(b.bytes_total, b.prepro_bytes + b.online_bytes);
        // the rotation (8 blocks + 256 bits per lookup) is all preprocessing
        assert!(b.prepro_bytes >= 200 * (128 + 32));
        assert!(b.online_bytes < 200 * 30, "{b:?}");
        assert_eq!(b.online_refill_bytes, 0);
        let c = bench_lut(LutOp::Msb { block: 4 }, 37, 100, None).unwrap();
        assert_eq!(c.n, 32);
        assert!(c.prepro_bytes > c.online_bytes, "{c:?}");
        assert!(bench_lut(LutOp::Lut { n: 100 }, 64, 10, None).is_err());
        assert!(bench_lut(LutOp::Msb { block: 0 }, 64, 10, None).is_err());
    }
}
