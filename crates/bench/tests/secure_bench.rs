//! Measurements of whole-model secure inference at real shapes with random weights (ignored by
//! default: minutes each). Run e.g.
//! `NECTAR_BENCH="bert-base 128 1" cargo test -p nectar-bench --test secure_bench -- --ignored --nocapture`
//! (architecture, tokens, layers; `all` for every layer). Prints the summary and one JSON line.

use nectar_bench::model::{bench_model, BenchSpec};
use nectar_bench::fixtures::random::RandomArch;
use nectar_model::suite::{ActRing, Embed};

#[test]
#[ignore]
fn bench_from_env() {
    let spec = std::env::var("NECTAR_BENCH").unwrap_or_else(|_| "bert-base 16 1".into());
    let parts: Vec<&str> = spec.split_whitespace().collect();
    let arch =
        RandomArch::parse(parts.first().copied().unwrap_or("bert-base")).expect("architecture");
    let seq = parts.get(1).and_then(|s| s.parse().ok()).unwrap_or(16);
    let mut b = BenchSpec::new(arch, seq);
    b.layers = match parts.get(2).copied() {
        Some("all") => None,
        Some(l) => Some(l.parse().expect("layers")),
        None => Some(1),
    };
    if parts.get(3) == Some(&"shared-ids") {
        b.suite.embed = Embed::new(&nectar_nn::embed::shared_ids::SharedIds);
    }
    if parts.get(3) == Some(&"mixed") || parts.get(4) == Some(&"mixed") {
        b.suite.act_ring = ActRing::Mixed;
    }
    let r = bench_model(&b).expect("bench");
    eprintln!("{}", r.summary());
    println!("{}", serde_json::to_string(&r).expect("json"));
}
