//! `nectar bench model`: a whole architecture at its real shapes with deterministic random
//! weights (issue 7), from `nectar_bench::model`.
//!
//! The server party runs in a child process (this binary with the hidden `--server-party
//! ADDR`) connected over loopback TCP, so each party's peak RSS is its own process's; with
//! `--net lan|wan` both ends of that connection go through the simulated link (its frame clock
//! is the host's wall clock, which both processes share, as in `bench suites`).
//! `--in-process` runs both parties as threads of one process instead (over an in-memory
//! channel, through the simulated link if one is named); both parties then report that
//! process's peak RSS (`rss_per_party: false`).

use crate::child_party::{accept_child, finish, listen};
use crate::report::BenchLine;
use nectar_bench::model::{bench_model, bench_party, combine_parties, plain_reference, BenchSpec, ModelBench, PartyBench};
use nectar_model::cosine;
use nectar_model::secure::Output;
use nectar_bench::fixtures::random::RandomArch;
use nectar_model::Suite;
use nectar_net::{Channel, LinkModel, Role, Simulated, TcpChannel};
use std::process::{Command, Stdio};

pub struct Args<'a> {
    pub arch: &'a str,
    pub seq: usize,
    pub layers: Option<usize>,
    pub net: &'a str,
    /// Validated by the caller.
    pub suite: Suite,
    pub seed: u64,
    pub quiet: bool,
    pub in_process: bool,
    /// Compare the client's output with the plaintext model's (`--check-plain`).
    pub check_plain: bool,
    /// BERT: inputs of `seq` tokens in one batched query (`--batch`).
    pub batch: usize,
}


fn spec(a: &Args) -> Result<(RandomArch, BenchSpec), String> {
    let arch = RandomArch::parse(a.arch)
        .ok_or_else(|| format!("unknown --arch '{}' (bert-tiny, bert-base, bert-large, gpt2, vit-base, llama)", a.arch))?;
    let net = LinkModel::parse(a.net).map_err(|e| format!("--net: {e}"))?;
    let mut spec = BenchSpec::new(arch, a.seq);
    spec.layers = a.layers;
    spec.net = net;
    spec.suite = a.suite;
    spec.seed = a.seed;
    spec.progress = !a.quiet;
    spec.batch = a.batch.max(1);
    if spec.batch > 1 && !matches!(arch, RandomArch::BertTiny | RandomArch::BertBase | RandomArch::BertLarge) {
        return Err(format!("--batch: batches embed with an encoder (BERT); {} runs one input per query", arch.name()));
    }
    Ok((arch, spec))
}

pub fn run(a: &Args) -> Result<Vec<BenchLine>, String> {
    let (arch, spec) = spec(a)?;
    let b = if a.in_process {
        bench_model(&spec).map_err(|e| e.to_string())?
    } else {
        two_processes(a, &spec)?
    };
    let mut l = BenchLine::new("model", arch.name())
        .param("seq", b.seq)
        .param("batch", a.batch.max(1))
        .param("layers", b.layers)
        .param("net", a.net)
        .param("suite", b.suite.label())
        .param("random_weights", true)
        .seconds(b.seconds);
    l.bytes_sent = b.server.bytes_sent;
    l.bytes_recv = b.server.bytes_recv;
    l.bytes_total = b.bytes_total;
    l.rounds = b.rounds;
    l.peak_rss_bytes = b.peak_rss_bytes;
    // BLB's CKKS keys travel at each parameter set's first block, inside the inference; the
    // other suites' keys are in the session setup. Reported apart so both compare.
    let blb_keys: u64 = [&b.server, &b.client]
        .iter()
        .flat_map(|p| p.profile.iter())
        .filter(|r| r.op == "blb.keys")
        .map(|r| r.bytes_sent)
        .sum();
    if blb_keys > 0 {
        l = l.extra("blb_key_bytes", blb_keys).extra("bytes_total_without_blb_keys", b.bytes_total - blb_keys);
    }
    if a.check_plain {
        let plain = plain_reference(&spec).map_err(|e| format!("plaintext reference: {e}"))?;
        // A batch: each input against its own reference; the worst input is reported.
        let pairs: Vec<(&Output, &Output)> = match (&b.client.output, &plain) {
            (Output::Batch(g), Output::Batch(w)) if g.len() == w.len() => g.iter().zip(w).collect(),
            (g, w) => vec![(g, w)],
        };
        let (mut worst_cos, mut worst_err) = (f64::INFINITY, 0f64);
        for (got, want) in pairs {
            match (got, want) {
                (Output::Tokens(got), Output::Tokens(want)) => l = l.extra("tokens_match_plain", got == want),
                (Output::Embedding(got) | Output::Logits(got), Output::Embedding(want) | Output::Logits(want)) => {
                    let err = got.iter().zip(want).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
                    worst_cos = worst_cos.min(cosine(got, want) as f64);
                    worst_err = worst_err.max(err as f64);
                }
                (got, want) => return Err(format!("outputs of different kinds: {got:?} and {want:?}")),
            }
        }
        if worst_cos.is_finite() {
            l = l.extra("cosine_vs_plain", worst_cos).extra("max_abs_error_vs_plain", worst_err);
        }
    }
    let per = a.batch.max(1) as f64;
    // Input-independent work inside the run (ROTL's rotations, COP's weight transfer), as the
    // client's profile recorded it; the rest is the online phase.
    let pre = nectar_model::secure::profile::Profile::from_ops(b.client.profile.clone()).total();
    let l = l
        .extra("seconds_per_input", b.seconds / per)
        .extra("bytes_per_input", b.bytes_total as f64 / per)
        .extra("flights_per_input", b.rounds as f64 / per)
        .extra("protocols", a.suite.json_map())
        .extra("rss_per_party", b.rss_per_party)
        .extra("setup_seconds", b.server.setup_seconds.max(b.client.setup_seconds))
        .extra("setup_bytes", b.setup_bytes)
        .extra("prepro_seconds", pre.prepro_seconds)
        .extra("prepro_bytes", pre.prepro_bytes)
        .extra("online_seconds", (b.seconds - pre.prepro_seconds).max(0.0))
        .extra("online_bytes", b.bytes_total.saturating_sub(pre.prepro_bytes))
        .extra("server", serde_json::to_value(&b.server).unwrap_or_default())
        .extra("client", serde_json::to_value(&b.client).unwrap_or_default());
    if !a.quiet {
        eprintln!("{}", b.summary());
    }
    Ok(vec![l])
}

/// The child's side: the server party, connected to the parent at `addr`; prints its
/// [`PartyBench`] as one JSON line on stdout.
pub fn run_server_party(a: &Args, addr: &str) -> Result<(), String> {
    let (_, mut spec) = spec(a)?;
    spec.progress = false;
    let mut tcp = TcpChannel::connect(addr).map_err(|e| format!("server party: connect {addr}: {e}"))?;
    // The parent watches this process; a long local computation must not time the link out.
    tcp.set_timeout(None).map_err(|e| e.to_string())?;
    let mut ch = through_link(tcp, spec.net);
    let s = bench_party(&spec, Role::Server, &mut *ch).map_err(|e| format!("server party: {e}"))?;
    outln!("{}", serde_json::to_string(&s).map_err(|e| e.to_string())?);
    Ok(())
}

/// `tcp`, through the simulated link `net` when one is given.
fn through_link(tcp: TcpChannel, net: Option<LinkModel>) -> Box<dyn Channel> {
    match net {
        Some(m) => Box::new(Simulated::new(tcp, m)),
        None => Box::new(tcp),
    }
}

/// Runs the server party as a child process and the client party here, over loopback TCP
/// (through the simulated link of `--net` on both ends).
fn two_processes(a: &Args, spec: &BenchSpec) -> Result<ModelBench, String> {
    let (listener, addr) = listen()?;
    let exe = std::env::current_exe().map_err(|e| format!("locating this binary: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(["bench", "model", "--arch", a.arch, "--net", a.net, "--quiet"])
        .args(["--seq", &a.seq.to_string(), "--seed", &a.seed.to_string(), "--batch", &a.batch.max(1).to_string()])
        .args(["--suite", &a.suite.label()])
        .args(["--server-party", &addr]);
    if let Some(l) = a.layers {
        cmd.args(["--layers", &l.to_string()]);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting the server party: {e}"))?;
    let client = (|| -> Result<PartyBench, String> {
        let mut ch = through_link(accept_child(&listener, &mut child)?, spec.net);
        bench_party(spec, Role::Client, &mut *ch).map_err(|e| format!("client party: {e}"))
    })();
    let (client, stdout) = finish(child, client)?;
    let server: PartyBench = serde_json::from_slice(&stdout)
        .map_err(|e| format!("the server party's report is not valid JSON: {e}"))?;
    Ok(combine_parties(spec, server, client))
}
