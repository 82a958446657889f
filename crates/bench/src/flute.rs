//! `nectar bench mpc --op flute`: FLUTE+ lookups ([`nectar_mpc::flute`], ROTL §V) on a random
//! public table of `n` entries of `l` bits, both parties in two threads over an in-memory channel
//! (optionally through a simulated LAN/WAN link), `count` lookups of random XOR-shared indices.
//!
//! Measured separately: the preprocessing (one [`Mpc::flute_preprocess`] call for all `count`
//! lookups: the ANDs, the COT extensions that run inside it, the butterfly) and the online phase
//! (one [`Mpc::flute_lookup`] call: the opening of the masked indices and the local XORs).
//! Excluded: the OT session setup (base OTs), the Ferret bootstrap of both directions, and one
//! steady-state extension per direction run just before the measurement, which leaves both pools
//! full (so small runs do not pay or skip an extension depending on what the bootstrap left)
//! and prices a COT (`refill_bits_per_cot`, as in [`crate::mpc`]).
//!
//! Every byte figure comes from the channel counters of the run (both directions, frame headers
//! included); seconds are wall time, the slower party's. `steady_bytes_per_lookup` spreads the
//! measured COT cost evenly: the bytes without the extensions that happened to run inside the
//! call, plus the COTs consumed at `refill_bits_per_cot` (a run that fits in the pools left by
//! the pre-measurement extension shows no extension traffic at all in `prepro_bytes`).

use nectar_math::Prg;
use nectar_mpc::{Mpc, MpcError, Result};
use nectar_net::{linked_pair, Channel, LinkModel, Role, Stats};
use nectar_ot::{Producer, RefillTraffic};
use std::time::Instant;

/// One measurement (JSON-friendly).
#[derive(Clone, Debug, serde::Serialize)]
pub struct FluteBench {
    /// Always `"flute"`.
    pub op: &'static str,
    /// Table entries.
    pub n: usize,
    /// Entry width `l`.
    pub bits: u32,
    /// Lookups.
    pub count: usize,
    pub net: String,
    /// Bytes both directions, preprocessing + online.
    pub bytes_total: u64,
    pub prepro_bytes: u64,
    pub online_bytes: u64,
    pub prepro_seconds: f64,
    pub online_seconds: f64,
    /// `prepro_seconds + online_seconds`.
    pub seconds: f64,
    /// `bytes_total / count`.
    pub bytes_per_lookup: f64,
    pub online_bytes_per_lookup: f64,
    /// `seconds / count`, in µs.
    pub us_per_lookup: f64,
    pub online_us_per_lookup: f64,
    /// Flows (messages) summed over both parties, both phases.
    pub flows: u64,
    pub prepro_flows: u64,
    pub online_flows: u64,
    /// COTs consumed per lookup (both directions, each COT once).
    pub cots_per_lookup: f64,
    /// Bytes of the COT extensions that ran inside the preprocessing (part of `prepro_bytes`).
    pub refill_bytes: u64,
    /// Measured steady-state cost of a COT (module doc), bits.
    pub refill_bits_per_cot: f64,
    /// `(bytes_total − refill_bytes) / count + cots_per_lookup · refill_bits_per_cot / 8`.
    pub steady_bytes_per_lookup: f64,
}

/// Run `count` FLUTE+ lookups in a table of `n` entries of `l` bits with the default producer
/// (Ferret b13); `net = None` is the raw in-memory channel.
pub fn bench_flute(n: usize, l: u32, count: usize, net: Option<LinkModel>) -> Result<FluteBench> {
    bench_flute_with(n, l, count, net, Producer::default())
}

/// [`bench_flute`] with a chosen COT producer.
pub fn bench_flute_with(
    n: usize,
    l: u32,
    count: usize,
    net: Option<LinkModel>,
    producer: Producer,
) -> Result<FluteBench> {
    // Validate here, so that a bad shape fails before any thread starts.
    let table = random_table(n, l)?;
    let (b0, b1) = linked_pair(net);
    // Each thread owns (and drops on return) its end, so a failing party closes the link
    // instead of leaving the other blocked.
    let (r0, r1) = std::thread::scope(|s| {
        let t = &table;
        let h = s.spawn(move || {
            let mut c = b1;
            party(Role::Client, c.as_mut(), t, l, count, producer)
        });
        let mut c = b0;
        let a = party(Role::Server, c.as_mut(), t, l, count, producer);
        drop(c);
        (
            a,
            h.join()
                .unwrap_or_else(|_| Err(MpcError::BadArgument("client thread panicked".into()))),
        )
    });
    let (p0, p1) = (r0?, r1?);
    let per = |x: f64| x / count.max(1) as f64;
    let prepro_bytes = p0.prepro.bytes_sent + p1.prepro.bytes_sent;
    let online_bytes = p0.online.bytes_sent + p1.online.bytes_sent;
    let prepro_flows = p0.prepro.msgs_sent + p1.prepro.msgs_sent;
    let online_flows = p0.online.msgs_sent + p1.online.msgs_sent;
    let prepro_seconds = p0.prepro_seconds.max(p1.prepro_seconds);
    let online_seconds = p0.online_seconds.max(p1.online_seconds);
    let bytes_total = prepro_bytes + online_bytes;
    let seconds = prepro_seconds + online_seconds;
    // One party's two pools hand out every COT of both directions once, and its counters see
    // both directions of every extension.
    let cots_per_lookup = per(p0.cots as f64);
    let refill_bytes = p0.refill_in_call.bytes();
    let refill_bits_per_cot = p0
        .steady
        .bits_per_cot()
        .ok_or_else(|| MpcError::BadArgument("no steady-state extension was measured".into()))?;
    Ok(FluteBench {
        op: "flute",
        n,
        bits: l,
        count,
        net: crate::mpc::net_label(net),
        bytes_total,
        prepro_bytes,
        online_bytes,
        prepro_seconds,
        online_seconds,
        seconds,
        bytes_per_lookup: per(bytes_total as f64),
        online_bytes_per_lookup: per(online_bytes as f64),
        us_per_lookup: per(seconds * 1e6),
        online_us_per_lookup: per(online_seconds * 1e6),
        flows: prepro_flows + online_flows,
        prepro_flows,
        online_flows,
        cots_per_lookup,
        refill_bytes,
        refill_bits_per_cot,
        steady_bytes_per_lookup: per((bytes_total - refill_bytes) as f64)
            + cots_per_lookup * refill_bits_per_cot / 8.0,
    })
}

/// The public table: the same on both sides (fixed seed), entries below `2^l`.
fn random_table(n: usize, l: u32) -> Result<Vec<u64>> {
    let m = nectar_mpc::ctx::mask(l)?;
    let mut p = Prg::new([0x7e; 16]);
    let t: Vec<u64> = (0..n).map(|_| p.next_u128() as u64 & m).collect();
    nectar_mpc::flute::check_table(&t, l)?;
    Ok(t)
}

/// One party's measurement.
struct PartyOut {
    prepro: Stats,
    online: Stats,
    prepro_seconds: f64,
    online_seconds: f64,
    /// COTs this party's pools handed out during the preprocessing.
    cots: u64,
    /// Extensions run inside the preprocessing.
    refill_in_call: RefillTraffic,
    /// The steady-state extensions run before it.
    steady: RefillTraffic,
}

fn party(
    role: Role,
    ch: &mut dyn Channel,
    table: &[u64],
    l: u32,
    count: usize,
    producer: Producer,
) -> Result<PartyOut> {
    let log_n = table.len().trailing_zeros();
    let mut prg = Prg::from_entropy();
    let mut mpc = Mpc::setup(role, ch, prg.fork(), producer)?;
    // Full pools, and the measured price of a COT (outside the measurement).
    let steady = crate::mpc::warm_up(&mut mpc, ch)?;
    // This party's XOR shares of random indices.
    let x: Vec<bool> = (0..count * log_n as usize)
        .map(|_| prg.next_bit())
        .collect();
    let consumed = |mpc: &mut Mpc| {
        let (a, b) = mpc.ot().pools();
        a.consumed() + b.consumed()
    };

    ch.flush()?;
    let s0 = ch.stats();
    let k0 = consumed(&mut mpc);
    let r0 = mpc.ot().refill_traffic();
    let t = Instant::now();
    let mut pre = mpc.flute_preprocess(ch, count, log_n)?;
    ch.flush()?;
    let prepro_seconds = t.elapsed().as_secs_f64();
    let s1 = ch.stats();
    let cots = consumed(&mut mpc) - k0;
    let refill_in_call = mpc.ot().refill_traffic().since(&r0);

    let t = Instant::now();
    let y = mpc.flute_lookup(ch, &mut pre, &x, table, l)?;
    ch.flush()?;
    let online_seconds = t.elapsed().as_secs_f64();
    let s2 = ch.stats();
    drop(y);
    Ok(PartyOut {
        prepro: s1 - s0,
        online: s2 - s1,
        prepro_seconds,
        online_seconds,
        cots,
        refill_in_call,
        steady,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_ot::FerretParams;

    #[test]
    fn flute_bench_consistent() {
        let small = Producer::Ferret(FerretParams::small());
        for (n, l, count) in [(256usize, 64u32, 64usize), (256, 64, 1000), (16, 8, 1000)] {
            let r = bench_flute_with(n, l, count, None, small).unwrap();
            println!("{}", serde_json::to_string(&r).unwrap());
            let k = n.trailing_zeros() as u64;
            assert_eq!(r.op, "flute");
            assert_eq!((r.n, r.bits, r.count), (n, l, count));
            assert_eq!(r.prepro_bytes + r.online_bytes, r.bytes_total);
            assert!((r.seconds - r.prepro_seconds - r.online_seconds).abs() < 1e-9);
            assert_eq!(r.prepro_flows + r.online_flows, r.flows);
            // Online: one exchange of log n bits per lookup each way (plus frame headers).
            assert_eq!(r.online_flows, 2);
            let payload = 2 * (count as u64 * k).div_ceil(8);
            assert!(r.online_bytes >= payload && r.online_bytes <= payload + 64);
            // Preprocessing: n − log n − 1 ANDs per lookup, 2 COTs and 4 bits each, in
            // ⌈log2 log n⌉ exchanges.
            let ands = (n as u64 - k - 1) * count as u64;
            assert_eq!(r.cots_per_lookup, 2.0 * ands as f64 / count as f64);
            assert!(r.prepro_bytes >= 4 * ands / 8);
            let rounds = 64 - (k - 1).leading_zeros() as u64;
            if r.refill_bytes == 0 {
                assert_eq!(r.prepro_flows, 2 * rounds);
            }
            assert!((r.bytes_per_lookup * count as f64 - r.bytes_total as f64).abs() < 1e-6);
            assert!(r.steady_bytes_per_lookup > 0.0);
        }
        assert!(bench_flute_with(3, 8, 1, None, small).is_err());
        assert!(bench_flute_with(4, 65, 1, None, small).is_err());
    }
}
