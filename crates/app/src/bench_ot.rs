//! `nectar bench ot`: COT throughput and communication (issue 3), from
//! `nectar_bench::ot::bench_producer`.

use crate::report::BenchLine;
use nectar_bench::ot::bench_producer;
use nectar_model::suite::Suite;

/// The COT extension of `suite` (its `ot` operator: the producer a session of that suite uses).
pub fn run(suite: &Suite, count: usize) -> Result<BenchLine, String> {
    let b = bench_producer(suite.backend_opts().producer, count).map_err(|e| e.to_string())?;
    let mut l = BenchLine::new("ot", &b.kind)
        .param("count", b.count)
        .param("set", b.params.clone())
        .param("suite", suite.label())
        .seconds(b.seconds);
    // The bench line is written from the COT sender's side (P0).
    l.bytes_sent = b.bytes_sender;
    l.bytes_recv = b.bytes_receiver;
    l.bytes_total = b.bytes;
    l.rounds = b.rounds;
    Ok(l.extra("cots_per_second", b.cots_per_second)
        .extra("bits_per_cot", b.bits_per_cot)
        .extra("steady_bits_per_cot", b.steady_bits_per_cot)
        .extra("first_refill_bits_per_cot", b.first_refill_bits_per_cot)
        .extra("base_ot_seconds", b.base_ot_seconds)
        .extra("base_ot_bytes", b.base_ot_bytes)
        .extra("refills", b.refills))
}
