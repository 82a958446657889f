//! `nectar bench model`: one secure inference of an architecture at its real shapes with
//! deterministic random weights ([`crate::fixtures::random`]), both parties in this
//! process (two threads over an in-memory channel, optionally with a simulated LAN/WAN link),
//! reporting the totals and each party's per-operator breakdown (Table IV style).
//!
//! BERT runs `Task::Embed` on `seq` tokens; GPT-2 and LLaMA run the prompt of `seq` tokens and
//! produce one token (`Task::Generate { n_new: 1 }`: the full forward, the LM head on the last
//! row and the argmax). ViT runs `Task::Classify` on a pseudo-random image of the config's size
//! (ViT-base: 224×224 in 16×16 patches, 196 patches + `[CLS]` = 197 rows) with a 1000-way head;
//! `seq` is ignored for ViT (the image size fixes the rows) and the report's `seq` is the number
//! of rows actually run. The session setup (base OTs, HE keys) is measured separately.

use nectar_math::{FixedPoint, Prg};
use nectar_model::config::ModelConfig;
use nectar_model::secure::engine::Engine;
use nectar_model::secure::profile::{OpRecord, Profile};
use crate::fixtures::random::{random_config, RandomArch, RandomWeights};
use nectar_model::secure::{Output, Query, SecureEngine, SecureError, SecureModel, Task};
use nectar_model::twin::PlainEngine;
use nectar_model::suite::Suite;
use nectar_net::{linked_pair, Channel, LinkModel, Role, Stats};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchSpec {
    pub arch: RandomArch,
    /// Number of input tokens (ignored for ViT: the image size fixes it).
    pub seq: usize,
    /// Run only this many blocks (`None`: all).
    pub layers: Option<usize>,
    /// Simulated link (`None`: in-memory, no delay).
    pub net: Option<LinkModel>,
    /// The protocol of every operator (both parties).
    pub suite: Suite,
    /// Seed of the random weights and token ids.
    pub seed: u64,
    /// Print a line per block on stderr.
    pub progress: bool,
    /// BERT: this many different inputs of `seq` tokens in one batched query (issue 52).
    pub batch: usize,
}

impl BenchSpec {
    /// Defaults: all layers, no link simulation, the `bumblebee` suite, seed 1, progress on.
    pub fn new(arch: RandomArch, seq: usize) -> Self {
        BenchSpec {
            arch,
            seq,
            layers: None,
            net: None,
            suite: Suite::bumblebee(),
            seed: 1,
            progress: true,
            batch: 1,
        }
    }
}

/// One party's measurements.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartyBench {
    pub setup_seconds: f64,
    /// Peak RSS of the process that ran this party (both parties when they share a process).
    pub peak_rss_bytes: u64,
    pub setup_bytes_sent: u64,
    pub seconds: f64,
    pub bytes_sent: u64,
    pub bytes_recv: u64,
    pub rounds: u64,
    pub profile: Vec<OpRecord>,
    /// What this party learned (the client: the model's output; the server: nothing).
    #[serde(default = "nothing")]
    pub output: Output,
}

fn nothing() -> Output {
    Output::Nothing
}

/// The result of [`bench_model`].
#[derive(Clone, Debug, Serialize)]
pub struct ModelBench {
    pub arch: String,
    pub seq: usize,
    pub layers: usize,
    pub suite: Suite,
    /// Inference wall-clock seconds (the client's; setup excluded).
    pub seconds: f64,
    /// Bytes of the inference, both directions (setup excluded).
    pub bytes_total: u64,
    /// Flights of both parties.
    pub rounds: u64,
    /// Bytes of the session setup (base OTs, HE public and Galois keys), both directions.
    pub setup_bytes: u64,
    /// The larger party's peak RSS (see `rss_per_party`).
    pub peak_rss_bytes: u64,
    /// Whether the parties ran in separate processes (each `peak_rss_bytes` is then its own);
    /// otherwise both are the shared process's peak, an upper bound for each.
    pub rss_per_party: bool,
    pub server: PartyBench,
    pub client: PartyBench,
}

/// Peak resident set size of this process (`VmHWM`; 0 where unknown).
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|kb| kb.parse::<u64>().ok())
                    .map(|kb| kb * 1024)
            })
        })
        .unwrap_or(0)
}

/// What both parties derive from a [`BenchSpec`]: the public configuration and query shape,
/// the client's input (random ids or image) and the server's random weights.
struct Prepared {
    config: ModelConfig,
    layers: usize,
    seq: usize,
    task: Task,
    ids: Vec<u32>,
    pixels: Option<Vec<f32>>,
    weights: RandomWeights,
}

fn prepare(spec: &BenchSpec) -> Prepared {
    let config = random_config(spec.arch, spec.layers);
    let (layers, vocab) = match &config {
        ModelConfig::Bert(c) => (c.num_hidden_layers, c.vocab_size),
        ModelConfig::Gpt2(c) => (c.n_layer, c.vocab_size),
        ModelConfig::Llama(c) => (c.num_hidden_layers, c.vocab_size),
        ModelConfig::Vit(c) => (c.num_hidden_layers, 0),
    };
    let batch = spec.batch.max(1);
    let task = match config {
        ModelConfig::Bert(_) if batch > 1 => Task::Batch { each: Box::new(Task::Embed), lens: vec![spec.seq; batch] },
        ModelConfig::Bert(_) => Task::Embed,
        ModelConfig::Vit(_) => Task::Classify,
        _ => Task::Generate { n_new: 1 },
    };
    let (seq, pixels) = match &config {
        ModelConfig::Vit(c) => (
            nectar_model::vit::num_patches(c) + 1,
            Some(crate::fixtures::tiny::tiny_image(
                c.num_channels,
                c.image_size,
                spec.seed,
            )),
        ),
        _ => (spec.seq * batch, None),
    };
    let mut prg = Prg::new({
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&spec.seed.to_le_bytes());
        k[8] = 0x1d;
        k
    });
    let ids: Vec<u32> = match pixels {
        Some(_) => Vec::new(),
        None => (0..seq)
            .map(|_| (prg.next_u128() % vocab as u128) as u32)
            .collect(),
    };
    let weights = match pixels {
        Some(_) => RandomWeights::new(spec.seed).with_classifier(),
        None => RandomWeights::new(spec.seed),
    };
    Prepared {
        config,
        layers,
        seq,
        task,
        ids,
        pixels,
        weights,
    }
}

impl Prepared {
    /// `role`'s side of the run over `ch` (the server holds the weights, the client the input).
    fn run_party(
        &self,
        ch: &mut dyn Channel,
        role: Role,
        spec: &BenchSpec,
    ) -> Result<PartyBench, SecureError> {
        let server = role == Role::Server;
        let t0 = Instant::now();
        let s0 = ch.stats();
        let mut e = SecureEngine::setup(ch, role, &spec.suite, Prg::from_entropy())?;
        let w = server.then_some(&self.weights as &dyn nectar_model::secure::WeightSource);
        let mut m = SecureModel::new(&self.config, w)?;
        m.preload(&mut e)?;
        let setup_seconds = t0.elapsed().as_secs_f64();
        let setup: Stats = e.net_stats() - s0;
        if spec.progress && !server {
            m = m.with_progress(Box::new(|l, n| eprintln!("  block {l}/{n} done")));
        }
        let q = Query {
            task: self.task.clone(),
            ids: (!server).then(|| self.ids.clone()),
            len: self.seq,
        };
        let s1 = e.net_stats();
        let t1 = Instant::now();
        let out = match (&self.pixels, server) {
            (Some(px), false) => m.run_image(&mut e, Some(px))?,
            _ => m.run(&mut e, &q)?,
        };
        let seconds = t1.elapsed().as_secs_f64();
        let d = e.net_stats() - s1;
        if server && out != Output::Nothing {
            return Err(SecureError::Role("the server learned an output".into()));
        }
        Ok(PartyBench {
            setup_seconds,
            peak_rss_bytes: peak_rss_bytes(),
            setup_bytes_sent: setup.bytes_sent,
            seconds,
            bytes_sent: d.bytes_sent,
            bytes_recv: d.bytes_recv,
            rounds: d.rounds,
            profile: e.profile().ops.clone(),
            output: out,
        })
    }

    fn combine(
        &self,
        spec: &BenchSpec,
        server: PartyBench,
        client: PartyBench,
        rss_per_party: bool,
    ) -> ModelBench {
        ModelBench {
            arch: spec.arch.name().into(),
            seq: self.seq / spec.batch.max(1),
            layers: self.layers,
            suite: spec.suite,
            seconds: client.seconds,
            bytes_total: server.bytes_sent + client.bytes_sent,
            rounds: server.rounds + client.rounds,
            setup_bytes: server.setup_bytes_sent + client.setup_bytes_sent,
            peak_rss_bytes: server.peak_rss_bytes.max(client.peak_rss_bytes),
            rss_per_party,
            server,
            client,
        }
    }
}

/// The plaintext model's output on the [`BenchSpec`]'s weights and input: the fixed-point
/// twin of the BumbleBee layer code with every nonlinear operator exact
/// ([`PlainEngine::with_exact`]), so what is left is the `(64, 18)` format's rounding.
pub fn plain_reference(spec: &BenchSpec) -> Result<Output, SecureError> {
    let p = prepare(spec);
    let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, &Suite::bumblebee())?.with_exact(&nectar_model::secure::exact::EXACT_OPS)?;
    let m = SecureModel::new(&p.config, Some(&p.weights as &dyn nectar_model::secure::WeightSource))?;
    let q = Query { task: p.task.clone(), ids: Some(p.ids.clone()), len: p.seq };
    match &p.pixels {
        Some(px) => m.run_image(&mut e, Some(px)),
        None => m.run(&mut e, &q),
    }
}

/// One party of the [`BenchSpec`]'s inference over `ch`, for runs with the two parties in
/// separate processes (its `peak_rss_bytes` is then this party's own).
pub fn bench_party(
    spec: &BenchSpec,
    role: Role,
    ch: &mut dyn Channel,
) -> Result<PartyBench, SecureError> {
    prepare(spec).run_party(ch, role, spec)
}

/// Combines the two parties' [`bench_party`] results, each measured in its own process.
pub fn combine_parties(spec: &BenchSpec, server: PartyBench, client: PartyBench) -> ModelBench {
    // Cheap: the random weights are generated lazily, tensor by tensor.
    prepare(spec).combine(spec, server, client, true)
}

/// Runs one secure inference per [`BenchSpec`] (see module docs), both parties in this
/// process (so each party's `peak_rss_bytes` is the process's, an upper bound).
pub fn bench_model(spec: &BenchSpec) -> Result<ModelBench, SecureError> {
    let p = prepare(spec);
    let (mut c0, mut c1) = linked_pair(spec.net);
    let (rs, rc) = std::thread::scope(|s| {
        let h = s.spawn(|| p.run_party(&mut *c1, Role::Client, spec));
        let rs = p.run_party(&mut *c0, Role::Server, spec);
        let rc = h
            .join()
            .unwrap_or_else(|_| Err(SecureError::Role("the client thread panicked".into())));
        (rs, rc)
    });
    let (mut server, mut client) = (rs?, rc?);
    let rss = peak_rss_bytes();
    server.peak_rss_bytes = rss;
    client.peak_rss_bytes = rss;
    Ok(p.combine(spec, server, client, false))
}

impl ModelBench {
    /// A human-readable summary with the client's breakdown.
    pub fn summary(&self) -> String {
        let p = Profile::from_ops(self.client.profile.clone());
        format!(
            "{} seq {} ({} layers, suite {}): {:.2} s, {:.3} GB total, {} rounds; setup {:.1} MB; peak RSS {}\nclient breakdown:\n{}",
            self.arch,
            self.seq,
            self.layers,
            self.suite,
            self.seconds,
            self.bytes_total as f64 / 1e9,
            self.rounds,
            self.setup_bytes as f64 / 1e6,
            if self.rss_per_party {
                format!(
                    "server {:.2} GiB, client {:.2} GiB",
                    gib(self.server.peak_rss_bytes),
                    gib(self.client.peak_rss_bytes)
                )
            } else {
                format!("{:.2} GiB (both parties in one process)", gib(self.peak_rss_bytes))
            },
            p.table()
        )
    }
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}
