//! `nectar bench linear --suite blb --op convert`: BLB's CKKS ↔ MPC conversion (§6.3,
//! Alg. 1–2) of a whole tensor at a BLB Table 6 parameter set, both directions measured apart.
//!
//! Both parties run in two threads over an in-memory channel (optionally a simulated link),
//! with a Ferret OT session set up before the measurement. MPC → CKKS converts `count` shared
//! values to ciphertexts at the top level; the server then drops them to the conversion level
//! and CKKS → MPC converts them back. Bytes and flows are read from the channel counters
//! around each direction; the result is reconstructed and compared with the input.

use nectar_he::ckks::{CkksEvaluator, CkksParams, CkksSecretKey};
use nectar_linear::ckks_convert::{
    ciphertexts_for, ckks_to_shares_client, ckks_to_shares_server, conversion_level, shares_to_ckks_client, shares_to_ckks_server,
    ConvFormat,
};
pub use nectar_linear::ckks_convert::FieldToRing;
use nectar_linear::LinearError;
use nectar_math::Prg;
use nectar_mpc::Mpc;
use nectar_net::{linked_pair, Channel, LinkModel, Role};
use nectar_ot::Producer;
use std::time::Instant;

/// One direction of one run (one JSON line).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ConvertBench {
    /// `mpc_to_ckks` or `ckks_to_mpc`.
    pub direction: &'static str,
    /// BLB Table 6 block of the parameter set.
    pub block: usize,
    pub n: usize,
    pub count: usize,
    pub ciphertexts: usize,
    /// Number of primes of the ciphertexts that travel.
    pub level: usize,
    /// `local` or `exact` (CKKS → MPC only).
    pub field_to_ring: &'static str,
    pub net: String,
    pub bytes_total: u64,
    pub bytes_server_to_client: u64,
    pub bytes_client_to_server: u64,
    /// Rounds (one-way latencies) as counted by the server's channel.
    pub rounds_server: u64,
    pub seconds: f64,
    /// Max |reconstructed − input| after the round trip (same on both lines).
    pub max_abs_error: f64,
}

fn kind_name(how: FieldToRing) -> &'static str {
    match how {
        FieldToRing::Local => "local",
        FieldToRing::Exact => "exact",
    }
}

/// Converts `count` values (uniform in ±8) there and back at BLB block `block`'s parameters.
pub fn bench_convert(block: usize, count: usize, how: FieldToRing, net: &str) -> Result<Vec<ConvertBench>, LinearError> {
    let params = CkksParams::blb_block(block)?;
    let fmt = ConvFormat::DEFAULT;
    let scale = params.default_scale();
    let level = conversion_level(&params, scale, &fmt, how)?;
    let top = params.max_level();
    let mut prg = Prg::from_entropy();
    let xs: Vec<f64> = (0..count).map(|_| (prg.next_u128() % 16_000_000) as f64 / 1e6 - 8.0).collect();
    let fx: Vec<i64> = xs.iter().map(|&x| (x * (fmt.f as f64).exp2()).round() as i64).collect();
    let xa: Vec<u64> = fx.iter().map(|_| prg.next_u128() as u64).collect();
    let xb: Vec<u64> = fx.iter().zip(&xa).map(|(&v, &a)| (v as u64).wrapping_sub(a)).collect();
    let sk = CkksSecretKey::generate(&params, &mut prg);
    let pk = sk.public_key(&params, &mut prg);
    let link = LinkModel::preset(net).ok_or_else(|| LinearError::BadParams(format!("unknown link '{net}'")))?;
    let (mut cs, mut cc) = linked_pair(link);
    let (p1, p2) = (params.clone(), params.clone());
    let (seed_s, seed_c) = (prg.gen_block(), prg.gen_block());
    let server = std::thread::spawn(move || -> Result<_, LinearError> {
        let ch: &mut dyn Channel = &mut *cs;
        let mut m = Mpc::setup(Role::Server, ch, Prg::new(seed_s), Producer::default())?;
        let ev = CkksEvaluator::new(&p1);
        let s0 = ch.stats();
        let t0 = Instant::now();
        let cts = shares_to_ckks_server(ch, &mut m, &ev, &xa, top, scale, &fmt)?;
        let t1 = t0.elapsed().as_secs_f64();
        let s1 = ch.stats();
        let t2 = Instant::now();
        let out = ckks_to_shares_server(ch, &mut m, &ev, &pk, &cts, count, &fmt, how)?;
        let t3 = t2.elapsed().as_secs_f64();
        let s2 = ch.stats();
        Ok((out, [(s0, s1, t1), (s1, s2, t3)]))
    });
    let ch: &mut dyn Channel = &mut *cc;
    let client = (|| -> Result<_, LinearError> {
        let mut m = Mpc::setup(Role::Client, ch, Prg::new(seed_c), Producer::default())?;
        shares_to_ckks_client(ch, &mut m, &p2, &sk, &xb, top, scale, &fmt)?;
        ckks_to_shares_client(ch, &mut m, &p2, &sk, count, scale, &fmt, how)
    })();
    let (out_s, phases) = server.join().map_err(|_| LinearError::Unsupported("server thread panicked".into()))??;
    let out_c = client?;
    let ulp = (-(fmt.f as f64)).exp2();
    let max_abs_error = (0..count).fold(0f64, |m, i| m.max((out_s[i].wrapping_add(out_c[i]) as i64 as f64 * ulp - xs[i]).abs()));
    let k = ciphertexts_for(&params, count);
    Ok(phases
        .iter()
        .zip([("mpc_to_ckks", top), ("ckks_to_mpc", level)])
        .map(|((a, b, secs), (direction, lvl))| {
            let sent = b.bytes_sent - a.bytes_sent;
            let recv = b.bytes_recv - a.bytes_recv;
            ConvertBench {
                direction,
                block,
                n: params.n(),
                count,
                ciphertexts: k,
                level: lvl,
                field_to_ring: if direction == "ckks_to_mpc" { kind_name(how) } else { "-" },
                net: net.to_string(),
                bytes_total: sent + recv,
                bytes_server_to_client: sent,
                bytes_client_to_server: recv,
                rounds_server: b.rounds - a.rounds,
                seconds: *secs,
                max_abs_error,
            }
        })
        .collect())
}
