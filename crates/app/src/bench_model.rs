//! `nectar bench model`: a whole architecture at its real shapes with deterministic random
//! weights, both parties in one process (issue 7), from `nectar_model::secure::bench`.

use crate::report::BenchLine;
use nectar_model::secure::bench::{bench_model, BenchSpec};
use nectar_model::secure::{EmbedMode, RandomArch};
use nectar_net::LinkModel;

pub struct Args<'a> {
    pub arch: &'a str,
    pub seq: usize,
    pub layers: Option<usize>,
    pub net: &'a str,
    pub shared_ids: bool,
    pub mixed: bool,
    pub seed: u64,
    pub quiet: bool,
}

pub fn run(a: &Args) -> Result<Vec<BenchLine>, String> {
    let arch = RandomArch::parse(a.arch)
        .ok_or_else(|| format!("unknown --arch '{}' (bert-base, bert-large, gpt2, vit-base, llama)", a.arch))?;
    let net = LinkModel::preset(a.net).ok_or_else(|| format!("unknown --net '{}' (none, lan, wan)", a.net))?;
    let mut spec = BenchSpec::new(arch, a.seq);
    spec.layers = a.layers;
    spec.net = net;
    spec.embed = if a.shared_ids { EmbedMode::SharedIds } else { EmbedMode::ClientOneHot };
    spec.mixed_activations = a.mixed;
    spec.seed = a.seed;
    spec.progress = !a.quiet;
    let b = bench_model(&spec).map_err(|e| e.to_string())?;
    let mut l = BenchLine::new("model", arch.name())
        .param("seq", b.seq)
        .param("layers", b.layers)
        .param("net", a.net)
        .param("embed", format!("{:?}", b.embed))
        .param("mixed_activations", a.mixed)
        .param("random_weights", true)
        .seconds(b.seconds);
    l.bytes_sent = b.server.bytes_sent;
    l.bytes_recv = b.server.bytes_recv;
    l.bytes_total = b.bytes_total;
    l.rounds = b.rounds;
    l.peak_rss_bytes = b.peak_rss_bytes;
    let l = l
        .extra("setup_seconds", b.server.setup_seconds.max(b.client.setup_seconds))
        .extra("setup_bytes", b.setup_bytes)
        .extra("server", serde_json::to_value(&b.server).unwrap_or_default())
        .extra("client", serde_json::to_value(&b.client).unwrap_or_default());
    if !a.quiet {
        eprintln!("{}", b.summary());
    }
    Ok(vec![l])
}
