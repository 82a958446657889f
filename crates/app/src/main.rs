//! `nectar`: the command-line interface (see README.md).

use nectar_app::{
    accuracy, bench_he, bench_linear, bench_model, bench_mpc, bench_net, bench_nn, bench_ot, bench_suites, demo, fit, html_report, outln,
    params, plan, private, progress, report, suites, tune,
};

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc instead of glibc malloc: a session frees extension-sized buffers (160 MB of COTs)
/// and many ciphertext-sized ones from rayon threads; glibc keeps them in per-thread arenas, so
/// a server's resident memory stayed ~75 % above its live heap (measured with heaptrack:
/// 608 MB peak heap, 1.07 GB peak RSS, MiniLM 22 tokens; 883 MB with mimalloc).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "nectar", version, about = "Private transformer inference between two parties")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Download a model into the cache ($NECTAR_HOME, default ~/.cache/nectar/models).
    FetchModel {
        /// Which model: `minilm` (sentence-transformers/all-MiniLM-L6-v2) or `smollm2`
        /// (SmolLM2-135M-Instruct, a Q4_1 GGUF file).
        #[arg(default_value = "minilm", value_parser = ["minilm", "smollm2"])]
        name: String,
        /// Cache directory (overrides $NECTAR_HOME).
        #[arg(long)]
        home: Option<PathBuf>,
    },
    /// Sentence embeddings of TEXTs (BERT-family models).
    Embed {
        /// Run the plaintext reference (the secure path is `nectar demo` / `nectar infer`).
        #[arg(long)]
        plaintext: bool,
        #[command(flatten)]
        model: ModelArg,
        /// One JSON object per text with the full vector.
        #[arg(long)]
        json: bool,
        #[arg(required = true)]
        texts: Vec<String>,
    },
    /// Greedy continuation of a PROMPT by a causal LM (GPT-2, LLaMA; plaintext, f32, KV cache),
    /// up to `--tokens` new tokens or a GGUF file's end-of-sequence token.
    Generate {
        /// Run the plaintext reference (private generation is `nectar demo --tokens N`).
        #[arg(long)]
        plaintext: bool,
        #[command(flatten)]
        model: ModelArg,
        /// New tokens.
        #[arg(long, default_value_t = 16)]
        tokens: usize,
        /// Wrap the prompt as one user message in the model's chat template (GGUF instruct models).
        #[arg(long)]
        chat: bool,
        /// One JSON object: prompt, generated text and ids.
        #[arg(long)]
        json: bool,
        prompt: String,
    },
    /// Architecture summary of a model directory or GGUF file (with its quantisation).
    Info {
        #[command(flatten)]
        model: ModelArg,
    },
    /// Serve a model to clients (secure inference; one session per connection).
    ///
    /// At start every tensor the config implies is checked against the weights' shapes. Each
    /// session reads the weights from the open file (not copied, not memory-mapped): a file
    /// truncated or rewritten while serving fails the sessions that read it with a clear error,
    /// never the server. Rename a new file into place to replace a model.
    /// Limits against hostile clients: see README.md, "nectar serve: limits and failure modes".
    Serve {
        #[command(flatten)]
        model: ModelArg,
        #[arg(long, default_value = "127.0.0.1:7878")]
        listen: String,
        /// The server also learns each output (default: only the client does).
        #[arg(long)]
        reveal_to_server: bool,
        /// Stop after this many sessions in total (default: serve forever).
        #[arg(long)]
        max_sessions: Option<usize>,
        /// Sessions running at once (from a valid Hello on); a Hello beyond them is refused
        /// with a one-line reason (each session holds its own keys and activations: this
        /// bounds memory).
        #[arg(long, default_value_t = private::DEFAULT_MAX_CONCURRENT)]
        max_concurrent_sessions: usize,
        /// Connections awaiting their Hello at once (they hold no session slot); more are
        /// refused with a one-line reason.
        #[arg(long, default_value_t = private::DEFAULT_MAX_PENDING)]
        max_pending_connections: usize,
        /// Connections awaiting their Hello from one client address.
        #[arg(long, default_value_t = private::DEFAULT_MAX_PENDING_PER_PEER)]
        max_pending_per_peer: usize,
        /// Seconds a new connection has to complete its handshake (its Hello; only frames up
        /// to 64 KiB are accepted before it).
        #[arg(long, default_value_t = 5)]
        handshake_timeout: u64,
        /// Serve /healthz, /readyz and /metrics (Prometheus) on this address (e.g.
        /// 127.0.0.1:9100; off by default; never the protocol port).
        #[arg(long, value_name = "ADDR")]
        admin: Option<String>,
        /// Log lines as text (each event's message) or JSON (one object per event, with its
        /// session span).
        #[arg(long, value_enum, default_value = "text")]
        log_format: nectar_app::logging::LogFormat,
        /// Seconds the running sessions have to finish after SIGTERM or SIGINT (new
        /// connections are refused meanwhile); a second signal exits at once.
        #[arg(long, default_value_t = 60)]
        drain_timeout: u64,
        /// Seconds a session may go without delivering a whole message before it is closed
        /// (a client trickling bytes does not count as progress).
        #[arg(long, default_value_t = 600)]
        idle_timeout: u64,
        /// Largest message after the handshake, in MiB (a larger one ends that session;
        /// default: derived from the model and suite where calibrated, else 1024; see
        /// docs/results/admission.md).
        #[arg(long)]
        max_frame_mib: Option<usize>,
        /// Admit a session only while the server's memory at start plus each running session's
        /// estimated peak fits in this many GiB (/readyz is not ready when the next would not).
        #[arg(long, value_name = "GIB")]
        memory_limit_gib: Option<f64>,
        /// One session's peak in MiB for --memory-limit-gib, instead of the calibrated estimate
        /// (needed for a model or suite without one).
        #[arg(long, value_name = "MIB")]
        session_memory_mib: Option<u64>,
        /// MiB of weight blocks each session prepares ahead of their operator on an idle core
        /// (0: none; each session's memory grows by up to this much).
        #[arg(long, default_value_t = nectar_model::secure::secure_engine::DEFAULT_PREFETCH_BUDGET >> 20)]
        memory_budget_mib: usize,
        /// Most tokens (all inputs together) of one batched query; a larger batch is refused
        /// in one line. Default: the model's positions, the longest query a session's memory
        /// estimate (--memory-limit-gib) is calibrated for; raise it together with
        /// --session-memory-mib.
        #[arg(long, value_name = "TOKENS")]
        max_batch_tokens: Option<usize>,
        /// TESTS ONLY, NO PRIVACY: derive this party's randomness from this public seed
        /// instead of the operating system, so two runs with equal seeds are bit-for-bit equal.
        #[arg(long, value_name = "SEED")]
        insecure_test_seed: Option<u64>,
        #[command(flatten)]
        suite: SuiteArgs,
    },
    /// Run a private inference against a server (the client side).
    Infer {
        #[arg(long, default_value = "127.0.0.1:7878")]
        connect: String,
        /// Local copy of the model's config.json / tokenizer.json (weights are not read).
        #[command(flatten)]
        model: ModelArg,
        /// Token ids instead of texts (comma-separated; repeat for several queries).
        #[arg(long)]
        ids: Vec<String>,
        /// ViT: an image to classify (binary PPM at the model's size, normalised with its
        /// preprocessor_config.json, or pre-normalised pixels as .json / raw f32); repeatable.
        #[arg(long)]
        image: Vec<PathBuf>,
        /// Tokens to generate (GPT-2, LLaMA); the prompt is continued as given (no chat
        /// template: `nectar chat` applies it).
        #[arg(long, alias = "generate", default_value_t = 8)]
        tokens: usize,
        /// Print each generated token as it is opened (with a tokenizer).
        #[arg(long)]
        stream: bool,
        /// BERT classifier logits instead of the sentence embedding.
        #[arg(long)]
        classify: bool,
        /// Run the inputs in batches of N (BERT): one forward pass per batch, so a batch pays
        /// the protocol's flights once; 1 runs one query per input.
        #[arg(long, default_value_t = 1, value_name = "N")]
        batch: usize,
        #[arg(long)]
        json: bool,
        /// After a failure another attempt may cure (no connection, server busy or draining,
        /// connection broken), run the queries again on a new connection, up to N more times.
        #[arg(long, default_value_t = 0, value_name = "N")]
        retries: usize,
        /// TESTS ONLY, NO PRIVACY: derive this party's randomness from this public seed
        /// instead of the operating system, so two runs with equal seeds are bit-for-bit equal.
        #[arg(long, value_name = "SEED")]
        insecure_test_seed: Option<u64>,
        /// Do not keep the server's encrypted weights on disk (`matmul = nimbus-cop`,
        /// `embed = nimbus-cop`): by default they are cached in `cop/` of nectar's cache, so that
        /// a returning client skips their transfer while the server keeps its key.
        #[arg(long)]
        no_weight_cache: bool,
        #[command(flatten)]
        suite: SuiteArgs,
        texts: Vec<String>,
    },
    /// A conversation with an instruct model (GGUF with a chat template) served by `nectar
    /// serve`: each line read is a user turn, the answer streamed as its tokens are opened; the
    /// session keeps the KV cache across turns. `/reset` starts a new conversation, end of
    /// input (Ctrl-D) ends. The server learns each turn's and each answer's length, no token.
    Chat {
        #[arg(long, default_value = "127.0.0.1:7878")]
        connect: String,
        /// The client's local copy of the model (a GGUF file: its tokenizer and template).
        #[command(flatten)]
        model: ModelArg,
        /// Most tokens per answer (it ends earlier at the model's end-of-sequence token).
        #[arg(long, default_value_t = 128)]
        max_new_tokens: usize,
        /// A system message opening the conversation (default: the template's).
        #[arg(long)]
        system: Option<String>,
        /// TESTS ONLY, NO PRIVACY: as for `infer`.
        #[arg(long, value_name = "SEED")]
        insecure_test_seed: Option<u64>,
        /// As for `infer`.
        #[arg(long)]
        no_weight_cache: bool,
        #[command(flatten)]
        suite: SuiteArgs,
    },
    /// Server and client on loopback: private outputs next to the plaintext reference.
    Demo {
        #[command(flatten)]
        model: ModelArg,
        /// Tokens to generate (GPT-2, LLaMA; streamed as they are opened); the prompt is
        /// continued as given.
        #[arg(long, alias = "generate", default_value_t = 8)]
        tokens: usize,
        /// ViT: an image to classify (as for `infer --image`); repeatable.
        #[arg(long)]
        image: Vec<PathBuf>,
        /// Run the inputs in batches of N (BERT; as for `infer --batch`).
        #[arg(long, default_value_t = 1, value_name = "N")]
        batch: usize,
        #[arg(long)]
        json: bool,
        /// TESTS ONLY, NO PRIVACY: derive both parties' randomness from this public seed
        /// instead of the operating system, so two runs with equal seeds are bit-for-bit equal.
        #[arg(long, value_name = "SEED")]
        insecure_test_seed: Option<u64>,
        /// Both parties in this process over a simulated link instead of loopback TCP (see
        /// the benches' --net).
        #[arg(long, value_parser = parse_net)]
        net: Option<String>,
        #[command(flatten)]
        suite: SuiteArgs,
        texts: Vec<String>,
    },
    /// Accuracy of a suite against the f32 reference on a file of sentences (one per line):
    /// float vs twin end to end and per operator (each approximated alone, the others exact),
    /// the fixed-point format's floor, and with --secure twin vs the two-party protocol.
    Accuracy {
        #[command(flatten)]
        model: ModelArg,
        /// Sentences, one per line (e.g. crates/model/tests/data/sentences50.txt).
        #[arg(long)]
        sentences: PathBuf,
        /// Also run the two-party protocol on every sentence (both parties in this process).
        #[arg(long)]
        secure: bool,
        /// Compare classifier logits (BERT with a classification head) instead of embeddings.
        #[arg(long)]
        classify: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        suite: SuiteArgs,
    },
    /// The protocol suites: each preset, each operator's choices, and which are implemented.
    Suites {
        /// One JSON object per preset and per operator.
        #[arg(long)]
        json: bool,
        /// The suites × operators table in Markdown (as in README.md).
        #[arg(long)]
        markdown: bool,
    },
    /// Fit an approximation: an OPPE table (East §4.1; `--lo`, `--hi`, `--m`, `--d`) with the
    /// max / mean error in f64 and in the fixed-point twin, or with `--model` Nimbus's
    /// distribution-aware quartic (§4) fitted to the inputs the model feeds the function on
    /// calibration texts, with its error over those inputs and over the worst case.
    Fit {
        /// gelu, gelu_tanh, exp, tanh or silu.
        #[arg(long)]
        func: String,
        /// OPPE: the fitted interval [lo, hi] (0 left of lo; the function's tail right of hi).
        #[arg(long, allow_hyphen_values = true, required_unless_present = "model")]
        lo: Option<f64>,
        #[arg(long, allow_hyphen_values = true, required_unless_present = "model")]
        hi: Option<f64>,
        /// OPPE: pieces, tails included.
        #[arg(long, default_value_t = 8)]
        m: usize,
        /// OPPE: polynomial degree.
        #[arg(long, default_value_t = 3)]
        d: usize,
        /// The range the error is reported on, `LO,HI` (default: OPPE [lo, hi]; with --model
        /// [-8, 8] for an activation, [-16, 0] for exp).
        #[arg(long, allow_hyphen_values = true)]
        domain: Option<String>,
        /// Exact comparisons instead of BumbleBee's approximate less-than.
        #[arg(long)]
        exact_compare: bool,
        /// OPPE: evenly spaced points of the domain for the error figures.
        #[arg(long, default_value_t = 20001)]
        samples: usize,
        /// Distribution-aware fit (Nimbus §4) to this model's activation inputs (a Hugging Face
        /// directory or GGUF file with a tokenizer).
        #[arg(long)]
        model: Option<PathBuf>,
        /// With --model: texts to run, one per line (default: the built-in calibration texts).
        #[arg(long, requires = "model")]
        texts: Option<PathBuf>,
        /// With --model, gelu / silu: the threshold r of the |x| form (ReLU beyond).
        #[arg(long, default_value_t = 3.0, requires = "model")]
        range: f64,
        /// With --model, exp: the clip T (e^x := 0 below).
        #[arg(long, allow_hyphen_values = true, default_value_t = -8.0, requires = "model")]
        clip: f64,
        /// With --model, exp: squarings after the quartic base.
        #[arg(long, default_value_t = 2, requires = "model")]
        squarings: u32,
        /// With --model: weight of the uniform floor over the fitted range, relative to the
        /// samples' (bounds the worst case where the texts put few inputs).
        #[arg(long, default_value_t = 0.02, requires = "model")]
        floor: f64,
        /// Write the table as JSON to this file.
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Security of a suite (or of every preset): HE parameters against the 128-bit bound and
    /// the statistical security per session of every statistically hiding step.
    Params {
        /// A suite (preset or PRESET+OP=PROTO...); default: every preset.
        #[arg(long)]
        suite: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// The BLB fusion plan of one layer (BLB §4-6): fused CKKS blocks with their depth, BLB
    /// Table 6 parameter set and rotations, the MPC operators between them and the CKKS<->MPC
    /// conversions, for one layer in steady state (`--suite blb` runs it).
    Plan {
        /// A Hugging Face model directory (only config.json is read); default: the fetched MiniLM.
        #[arg(long, conflicts_with = "model_shape")]
        model: Option<PathBuf>,
        /// A model shape instead of a directory (as `nectar bench model --arch`).
        #[arg(long, value_parser = ["bert-tiny", "bert-base", "bert-large", "gpt2", "vit-base", "llama", "llama-7b", "llama-small", "vit-small"])]
        model_shape: Option<String>,
        /// The suite; only blb (matmul=blb-fused) has a fusion plan.
        #[arg(long, default_value = "blb")]
        suite: String,
        /// Input tokens (the spatial dimension L).
        #[arg(long, default_value_t = 128)]
        tokens: usize,
        /// The plan as one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// A self-contained HTML page (inline SVG bar charts, nothing fetched) of the per-operator
    /// time and bytes of each run in FILE (`nectar bench suites --json` lines).
    Report {
        /// JSON lines with a per-operator breakdown (e.g. docs/results/suites.jsonl).
        file: PathBuf,
        /// Where to write the page.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Where to write the chart of seconds per suite and simulated link alone (an SVG file,
        /// e.g. for docs/results/wan.md); the lines must name two links or more (`params.net`).
        #[arg(long)]
        links_svg: Option<PathBuf>,
    },
    /// The suite with the lowest predicted time on a link, per operator group, from a
    /// calibration run of each candidate on this machine (stored in tune/ of the model cache);
    /// runs it once over the link and prints measured next to predicted. `--suite tuned:LINK`
    /// then uses it.
    Tune {
        /// The link: a preset (lan, bumblebee-wan, blb-wan2, blb-wan3, rotl-wan, wan) or
        /// MBPS/RTT_MS (Mbit/s and round-trip ms, e.g. 100/80).
        #[arg(long)]
        net: String,
        /// A Hugging Face model directory (default: the fetched MiniLM).
        #[arg(long)]
        model: Option<PathBuf>,
        /// Input tokens (the default sentence cut or repeated).
        #[arg(long, default_value_t = 32)]
        tokens: usize,
        /// Candidate suites, comma-separated (default: nectar with the presets' choices per
        /// operator group on nectar's session-wide fields); the first is the base, the others
        /// may differ from it only in the grouped fields (norm, rsqrt, softmax, exp,
        /// reciprocal, gelu, silu, matmul, matmul-shared, olt-ring, olt-cost).
        #[arg(long)]
        candidates: Option<String>,
        /// Measure the calibration again even if a matching one is stored.
        #[arg(long)]
        recalibrate: bool,
        /// Print the choice and its prediction only (no run over the link).
        #[arg(long)]
        no_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// Benchmarks (JSON lines with --json; see README "Benchmarks").
    Bench {
        #[command(subcommand)]
        what: BenchCmd,
    },
}

#[derive(Args)]
struct ModelArg {
    /// A Hugging Face model directory (config.json, model.safetensors, tokenizer.json) or a
    /// LLaMA GGUF file (or a directory holding one); default: the fetched MiniLM.
    #[arg(long)]
    model: Option<PathBuf>,
}

impl ModelArg {
    fn dir(&self) -> PathBuf {
        self.model.clone().unwrap_or_else(|| nectar_model::home::default_home().join("minilm"))
    }
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Transport: raw and simulated-link throughput and latency.
    Net {
        /// Megabytes to transfer per variant.
        #[arg(long, default_value_t = 100)]
        mb: usize,
        #[arg(long)]
        json: bool,
    },
    /// Oblivious transfer: COT/s and bits per COT (both parties in-process).
    Ot {
        #[arg(long, default_value_t = 10_000_000)]
        count: usize,
        #[arg(long)]
        json: bool,
        /// The COT extension is the suite's `ot` (`--op ot=iknp`).
        #[command(flatten)]
        suite: SuiteArgs,
    },
    /// Homomorphic encryption primitives per ring degree.
    He {
        /// Ring degrees (comma-separated; the `seal-default` sets only).
        #[arg(long, value_delimiter = ',', default_values_t = [4096usize, 8192, 16384])]
        n: Vec<usize>,
        /// `seal-default`: per-operation timings at SEAL's default BFV moduli (and the OLT
        /// preset at N = 8192); `kernels`: BFV ct × ct + relinearisation at LEAF's set
        /// (N = 32768) and CKKS ct × ct / relinearisation / rescale / rotation at BLB's two
        /// executable sets (`--n` ignored), as `scripts/seal_bench/seal_bench kernels` measures SEAL.
        #[arg(long, value_parser = ["seal-default", "kernels"], default_value = "seal-default")]
        set: String,
        #[arg(long)]
        json: bool,
    },
    /// LEAF's BFV machinery at N = 32768 (LEAF §3.3): `mul` (ct × ct + relinearisation),
    /// `poly` (the degree-65536 GELU functional-bootstrapping polynomial on one ciphertext,
    /// minutes), `gelu` (LEAF Table 1: 32 RLWE ciphertexts through packing, polynomial, S2C
    /// and the switches, per-stage times; minutes, ~6 GB) or `ffn` (LEAF Table 2: BERT-base
    /// `X·W1` by PCMM then GELU, `--tokens` tokens; 12 BFV ciphertexts at 128 tokens, ~40 min).
    Fhe {
        #[arg(long, value_parser = ["mul", "poly", "gelu", "ffn"], default_value = "mul")]
        op: String,
        /// Sequence length of `ffn` (at most 1024).
        #[arg(long, default_value_t = 128)]
        tokens: usize,
        /// Worker threads (0: all cores).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Products averaged by `mul`.
        #[arg(long, default_value_t = 3)]
        reps: usize,
        #[arg(long)]
        json: bool,
    },
    /// HE-based linear protocols: OLT, shared matmuls, bOLEe (both parties in-process).
    Linear {
        /// The kernel; with `--suite blb`: `convert` (BLB's CKKS <-> MPC conversion, §6.3) or
        /// `blocks` (the conversions of every fused block of `nectar plan`, i.e. each block's
        /// communication, BLB Table 10), `fused` (every fused block of one layer run for real:
        /// conversions of the twin's values, the block under CKKS, outputs checked).
        /// The fused matmuls of BLB §5 (`--suite blb`): `qk`, `sv`, `attn_out`, `ffn1`, `ffn2`,
        /// counted on the slot simulator (whose counts equal the CKKS evaluator's, tested);
        /// `--real` also runs them on CKKS at `--block`'s parameters.
        #[arg(long, value_parser = ["olt", "matmul", "batch_matmul", "bole", "mul", "square", "cop", "convert", "blocks", "fused", "qk", "sv", "attn_out", "ffn1", "ffn2"], default_value = "olt")]
        op: String,
        /// With a fused matmul op: run it on real CKKS too (keys, encryption, timing).
        #[arg(long)]
        real: bool,
        /// With `--op fused`: only this block (1-based; default all).
        #[arg(long)]
        fused_block: Option<usize>,
        /// Model shape of `--op blocks` and the fused matmuls (as `nectar plan --model-shape`;
        /// the matmuls take bert-base, bert-large, gpt2).
        #[arg(long, default_value = "bert-base")]
        model_shape: String,
        /// Tokens of `--op blocks`.
        #[arg(long, default_value_t = 128)]
        tokens: usize,
        /// BLB Table 6 parameter set (1..=5) of `--op convert`.
        #[arg(long, default_value_t = 1)]
        block: usize,
        /// Values converted by `--op convert` (default 128×768, one BERT-base activation).
        #[arg(long, default_value_t = 98_304)]
        count: usize,
        /// Field -> ring of `--op convert`: `local` (40-bit slack, one more prime) or `exact`
        /// (BLB App. C.3, millionaire + B2A).
        #[arg(long, value_parser = ["local", "exact"], default_value = "local")]
        f2r: String,
        /// Slot packing of the blb conversions (`--op convert|blocks`): `complex` (ours: two
        /// ciphertexts' values per ciphertext on the wire) or `real` (BLB as printed).
        #[arg(long, value_parser = ["complex", "real"], default_value = "complex")]
        packing: String,
        /// k,m,n for the matrix ops.
        #[arg(long, default_value = "128,768,768")]
        shape: Option<String>,
        /// Vector length for bole / mul / square (instead of --shape).
        #[arg(long)]
        size: Option<usize>,
        /// Fixed OLT partition windows `kw,mw,nw` instead of the suite's `olt-cost` choice (the
        /// measurements `CostModel::balanced`'s prices are fitted on).
        #[arg(long)]
        windows: Option<String>,
        #[arg(long, value_parser = ["krdy", "krdy_plus", "interleave"], default_value = "interleave")]
        variant: String,
        #[arg(long, help = NET_HELP, value_parser = parse_net, default_value = "none")]
        net: String,
        /// Heads of batch_matmul.
        #[arg(long, default_value_t = 12)]
        heads: usize,
        /// Ring width l.
        #[arg(long, default_value_t = 64)]
        l: u32,
        #[arg(long)]
        json: bool,
        /// The protocol suite (preset or PRESET+OP=PROTO..., e.g. `bumblebee+mul=ot`; default
        /// bumblebee, the paper's); `--op` names the kernel here.
        #[arg(long)]
        suite: Option<String>,
        /// A TOML suite file (`preset = "..."`, `[ops]`), instead of --suite.
        #[arg(long)]
        suite_file: Option<PathBuf>,
    },
    /// Nonlinear operators and share-level protocols (both parties in-process).
    Nn {
        /// The operator (gelu, silu, exp, softmax, layernorm, rmsnorm, rsqrt, reciprocal,
        /// argmax, onehot, elu) run by the suite's protocol — `gelu=p4` also overrides it —
        /// or a share-level protocol (less, msb, mux, trunc, ...).
        #[arg(long, default_value = "less")]
        op: String,
        /// Number of elements.
        #[arg(long, default_value_t = 1 << 16)]
        size: usize,
        /// Row length of row operators (softmax, layernorm, rmsnorm, argmax).
        #[arg(long, default_value_t = 128)]
        cols: usize,
        /// Ablation: no bOLEe query reuse (§V-A3).
        #[arg(long)]
        no_query_reuse: bool,
        /// Ablation: the 3-prime bOLEe key set also for rings l <= 32.
        #[arg(long)]
        wide_bole: bool,
        #[arg(long, help = NET_HELP, value_parser = parse_net, default_value = "none")]
        net: String,
        /// The protocol suite (preset or PRESET+OP=PROTO...; default bumblebee, the paper's).
        #[arg(long)]
        suite: Option<String>,
        /// A TOML suite file (`preset = "..."`, `[ops]`), instead of --suite.
        #[arg(long)]
        suite_file: Option<PathBuf>,
        /// Ring width l of a share-level op (default: the op's own, usually 64).
        #[arg(long)]
        bits: Option<u32>,
        /// Truncation shift / ignored low bits of a share-level op.
        #[arg(long)]
        shift: Option<u32>,
        /// Fractional bits of an operator's fixed-point format (with --bits: `(bits, frac)`;
        /// default (64, 18); ROTL Table VI: --bits 37 --frac 12).
        #[arg(long)]
        frac: Option<u32>,
        #[arg(long)]
        json: bool,
    },
    /// Lookup tables (ROTL, FLUTE+) and the comparison from LUTs, preprocessing and online
    /// measured apart (both parties in-process).
    Mpc {
        /// lut (ROTL), flute (FLUTE+, boolean inputs) or msb (comparison from ROTL lookups).
        #[arg(long, value_parser = ["lut", "flute", "msb"], default_value = "lut")]
        op: String,
        /// Table entries (a power of two; lut, flute).
        #[arg(long, default_value_t = 256)]
        n: usize,
        /// Entry width (lut, flute) or ring width of the MSB input (msb).
        #[arg(long, default_value_t = 64)]
        bits: u32,
        /// Number of lookups (comparisons).
        #[arg(long, default_value_t = 100_000)]
        count: usize,
        /// Block size l' of the comparison from LUTs (msb).
        #[arg(long, default_value_t = nectar_mpc::lut_compare::DEFAULT_BLOCK)]
        block: u32,
        #[arg(long, help = NET_HELP, value_parser = parse_net, default_value = "none")]
        net: String,
        #[arg(long)]
        json: bool,
    },
    /// A whole model at its real shapes with random weights (the server party in a child
    /// process over loopback TCP, or both in-process with --in-process).
    Model {
        #[arg(long, value_parser = ["bert-tiny", "bert-base", "bert-large", "gpt2", "vit-base", "llama", "llama-7b", "llama-small", "vit-small"], default_value = "bert-base")]
        arch: String,
        /// Input tokens.
        #[arg(long, default_value_t = 128)]
        seq: usize,
        /// Run only this many blocks.
        #[arg(long)]
        layers: Option<usize>,
        /// Deterministic random weights at the real shapes (the only mode: no download).
        #[arg(long, default_value_t = true)]
        random_weights: bool,
        #[arg(long, help = NET_HELP, value_parser = parse_net, default_value = "none")]
        net: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// No progress lines / summary on stderr.
        #[arg(long)]
        quiet: bool,
        #[command(flatten)]
        suite: SuiteArgs,
        /// Both parties as threads of this process (one peak RSS for both) instead of the
        /// server in a child process over loopback TCP (through the simulated link of --net).
        #[arg(long)]
        in_process: bool,
        /// Also run the plaintext model (the fixed-point twin with every nonlinear operator
        /// exact, the BumbleBee layer code) on the same weights and input, and report the
        /// client's output against it (`cosine_vs_plain`, or `tokens_match_plain`).
        #[arg(long)]
        check_plain: bool,
        /// BERT: N different inputs of --seq tokens in one batched query (per-input figures
        /// beside the batch's).
        #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
        batch: u32,
        /// Internal: run only the server party, connected to this address (the child process).
        #[arg(long, hide = true)]
        server_party: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// The same input end to end under several suites (both parties in-process over the
    /// simulated link): one side-by-side table, or JSON lines.
    Suites {
        #[command(flatten)]
        model: ModelArg,
        /// Suites to compare, comma-separated (`nectar,bumblebee+gelu=p4`).
        #[arg(long, default_value = "nectar,bumblebee")]
        suites: String,
        /// Tokens of the input (the default sentence is cut or repeated to this length).
        #[arg(long, default_value_t = 32)]
        tokens: usize,
        /// The input text (tokenized, then cut or repeated to --tokens).
        #[arg(long)]
        text: Option<String>,
        #[arg(long, help = NET_HELP, value_parser = parse_net, default_value = "lan")]
        net: String,
        /// Extra overrides applied to every suite (e.g. `ot=iknp`).
        #[arg(long)]
        op: Vec<String>,
        /// Both parties as threads of this process (default: the server party in a child
        /// process over loopback TCP, so each party's peak RSS is its own).
        #[arg(long)]
        in_process: bool,
        /// MiB of the server's weight blocks prepared ahead of their operator on an idle core
        /// (0: none; the server's peak RSS grows by up to this much).
        #[arg(long, default_value_t = nectar_model::secure::secure_engine::DEFAULT_PREFETCH_BUDGET >> 20)]
        memory_budget_mib: usize,
        /// Runs of each suite (each a fresh session): the reported run is the one of median
        /// time, with every run's seconds beside it (`runs_seconds`); odd counts name a true
        /// median.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=25))]
        repeat: u32,
        /// N different inputs of --tokens tokens in one batched query (BERT): per-batch and
        /// per-input figures (seconds, bytes, flights, inputs per minute).
        #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
        batch: u32,
        /// Internal: run only the server party of the one suite in --suites, connected to this
        /// address (the child process).
        #[arg(long, hide = true)]
        server_party: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

/// The protocol suite (AGREEMENT: server and client must resolve the same; the handshake
/// compares its digest and names the first differing operator).
#[derive(Args, Clone)]
struct SuiteArgs {
    /// A preset (nectar, bumblebee, rotl, east, blb, leaf, nimbus; see `nectar suites`), optionally with
    /// `+OP=PROTO` overrides (`bumblebee+gelu=p4`), or `tuned:LINK` (the suite `nectar tune
    /// --net LINK` chose last on this machine); default: nectar.
    #[arg(long)]
    suite: Option<String>,
    /// Override operators: `OP=PROTO[,OP=PROTO...]` (e.g. `gelu=p4`, `ot=iknp`,
    /// `olt-cost=lan_commodity`, `act-ring=mixed`, `embed=shared-ids`); repeatable.
    #[arg(long = "op")]
    ops: Vec<String>,
    /// A TOML suite file (`preset = "bumblebee"` and an `[ops]` table); --op applies on top.
    #[arg(long)]
    suite_file: Option<PathBuf>,
}

impl SuiteArgs {
    /// The resolved suite, refused if it names a protocol that is not implemented yet.
    fn suite(&self) -> Result<nectar_model::Suite, String> {
        let s = suites::resolve(self.suite.as_deref(), self.suite_file.as_deref(), &self.ops, suites::DEFAULT_SUITE)?;
        s.validate().map_err(|e| e.to_string())?;
        Ok(s)
    }
}

/// The help of every `--net` (`nectar_net::sim::PRESETS`; a test keeps the presets listed).
const NET_HELP: &str = "The simulated link: none, MBPS/RTT_MS (Mbit/s and round-trip ms, e.g. 100/80) or a preset: \
lan (1000/1), wan (400/8), bumblebee-wan (400/4), blb-wan2 (100/4), blb-wan3 (100/80), rotl-wan (100/50)";

/// `--net`: a link spec `nectar_net::LinkModel::parse` accepts (checked when the arguments are
/// parsed; the commands parse it again into the link).
fn parse_net(s: &str) -> Result<String, String> {
    nectar_net::LinkModel::parse(s).map(|_| s.to_string())
}

fn main() -> ExitCode {
    nectar_app::memory::keep_freed_memory_briefly();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.cmd {
        Cmd::FetchModel { name, home } => {
            let home = home.unwrap_or_else(nectar_model::home::default_home);
            let dir = match name.as_str() {
                "smollm2" => nectar_app::fetch::fetch_smollm2(&home),
                _ => nectar_app::fetch::fetch_minilm(&home),
            }
            .map_err(|e| e.to_string())?;
            outln!("{}", dir.display());
            Ok(())
        }
        Cmd::Embed { plaintext, model, json, texts } => {
            if !plaintext {
                return Err("`nectar embed` computes the plaintext reference: pass --plaintext. Private \
                            embeddings: `nectar demo`, or `nectar serve` + `nectar infer`"
                    .into());
            }
            embed_plaintext(&model.dir(), &texts, json)
        }
        Cmd::Generate { plaintext, model, tokens, chat, json, prompt } => {
            if !plaintext {
                return Err("`nectar generate` computes the plaintext reference: pass --plaintext. Private \
                            generation: `nectar demo --tokens N`, or `nectar serve` + `nectar infer --tokens N`"
                    .into());
            }
            generate_plaintext(&model.dir(), &prompt, tokens, chat, json)
        }
        Cmd::Info { model } => {
            let m = nectar_model::Model::load(&model.dir()).map_err(|e| e.to_string())?;
            outln!("{}", m.summary());
            Ok(())
        }
        Cmd::Serve {
            model,
            listen,
            reveal_to_server,
            max_sessions,
            max_concurrent_sessions,
            max_pending_connections,
            max_pending_per_peer,
            handshake_timeout,
            admin,
            log_format,
            drain_timeout,
            idle_timeout,
            max_frame_mib,
            memory_limit_gib,
            session_memory_mib,
            memory_budget_mib,
            max_batch_tokens,
            insecure_test_seed,
            suite,
        } => {
            nectar_app::logging::init(log_format);
            nectar_app::test_seed::warn(insecure_test_seed);
            let secs = |name: &str, s: u64| match s {
                0 => Err(format!("--{name} must be at least 1 second")),
                s => Ok(std::time::Duration::from_secs(s)),
            };
            let drain = drain_on_signals()?;
            let admin = match &admin {
                Some(a) => {
                    let l = std::net::TcpListener::bind(a).map_err(|e| format!("--admin {a}: {e}"))?;
                    Some(std::sync::Arc::new(l))
                }
                None => None,
            };
            let mut opts = private::ServeOptions {
                reveal_to_server,
                max_sessions,
                max_concurrent: max_concurrent_sessions.max(1),
                max_pending: max_pending_connections.max(1),
                max_pending_per_peer: max_pending_per_peer.max(1),
                drain: Some(drain),
                drain_timeout: std::time::Duration::from_secs(drain_timeout),
                admin: admin.clone(),
                limits: private::SessionLimits {
                    handshake: secs("handshake-timeout", handshake_timeout)?,
                    idle: secs("idle-timeout", idle_timeout)?,
                    max_frame: nectar_net::DEFAULT_MAX_FRAME,
                    memory_budget: memory_budget_mib << 20,
                    max_batch_tokens,
                },
                quiet: false,
                stop: None,
                test_seed: insecure_test_seed,
                memory: None,
            };
            let suite = suite.suite()?;
            let m = std::sync::Arc::new(private::ServerModel::load(&model.dir())?);
            let plan = nectar_app::admission::plan(
                &m.config,
                &suite,
                (memory_budget_mib << 20) as u64,
                max_frame_mib,
                memory_limit_gib,
                session_memory_mib,
                m.encoded_cache_bytes as u64,
            )?;
            opts.limits.max_frame = plan.max_frame;
            opts.memory = plan.memory.map(std::sync::Arc::new);
            let listener = std::net::TcpListener::bind(&listen).map_err(|e| format!("listen {listen}: {e}"))?;
            let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or(listen);
            let admin_addr = admin.as_ref().and_then(|l| l.local_addr().ok()).map(|a| a.to_string());
            tracing::info!(
                addr,
                admin = admin_addr.as_deref().unwrap_or(""),
                "serving {} ({}) on {addr} — suite {}{}{}",
                model.dir().display(),
                m.config.model_type(),
                suite.label(),
                if reveal_to_server { ", outputs revealed to the server too" } else { "" },
                admin_addr.as_ref().map(|a| format!("; admin on http://{a}")).unwrap_or_default()
            );
            for note in &plan.notes {
                tracing::info!("serve: {note}");
            }
            private::serve(m, listener, &suite, &opts)
        }
        Cmd::Chat { connect, model, max_new_tokens, system, insecure_test_seed, no_weight_cache, suite } => {
            nectar_app::test_seed::warn(insecure_test_seed);
            weight_cache(no_weight_cache);
            let cm = private::ClientModel::load(&model.dir())?;
            nectar_app::chat::chat(&connect, &suite.suite()?, &cm, max_new_tokens, system.as_deref(), insecure_test_seed)
        }
        Cmd::Infer { connect, model, ids, image, tokens, stream, classify, batch, json, retries, insecure_test_seed, no_weight_cache, suite, texts } => {
            nectar_app::test_seed::warn(insecure_test_seed);
            weight_cache(no_weight_cache);
            let suite = suite.suite()?;
            let (inputs, labels, expected) = if !image.is_empty() {
                let cm = private::ClientModel::load(&model.dir())?;
                let inputs = private::read_images(&model.dir(), cm.config.as_ref(), &image)?;
                (inputs, image.iter().map(|p| p.display().to_string()).collect(), cm.config)
            } else if !ids.is_empty() {
                let inputs = ids
                    .iter()
                    .map(|s| private::parse_ids(s).map(private::Input::Ids))
                    .collect::<Result<Vec<_>, _>>()?;
                let expected = model.model.as_ref().map(|d| private::ClientModel::load(d)).transpose()?.and_then(|m| m.config);
                (inputs, ids.clone(), expected)
            } else {
                if texts.is_empty() {
                    return Err("give TEXTs, --ids or --image".into());
                }
                let cm = private::ClientModel::load(&model.dir())?;
                (private::tokenize(cm.tokenizer.as_ref(), &texts)?, texts.clone(), cm.config)
            };
            // the tokenizer decodes generated tokens (streaming, `generated` in the JSON)
            let tok = match model.model.as_ref().or(image.is_empty().then_some(&model.dir())) {
                Some(d) => private::ClientModel::load(d).ok().and_then(|m| m.tokenizer).map(std::sync::Arc::new),
                None => None,
            };
            let on_token = match (&tok, stream && !json) {
                (Some(t), true) => Some(nectar_app::chat::print_hook(t.clone())),
                (None, true) => return Err("--stream needs the model's tokenizer (--model)".into()),
                _ => None,
            };
            let bar = (!json && on_token.is_none()).then(|| progress::QueryBar::new("infer"));
            let res = nectar_app::retry::run_client(
                &connect,
                &suite,
                expected.as_ref(),
                &inputs,
                tokens,
                classify,
                batch,
                bar.as_ref().map(|b| b.hook()),
                insecure_test_seed,
                on_token.clone(),
                retries,
            );
            if let Some(b) = &bar {
                b.finish();
            }
            let (run, _) = res?;
            if on_token.is_some() {
                outln!();
            }
            demo::print_run(&labels, &run, None, &suite, json, tok.as_deref());
            Ok(())
        }
        Cmd::Demo { model, tokens, image, batch, json, insecure_test_seed, net, suite, texts } => {
            nectar_app::test_seed::warn(insecure_test_seed);
            let link = match net.as_deref() {
                Some(n) => nectar_net::LinkModel::parse(n)?,
                None => None,
            };
            demo::demo(&model.dir(), &suite.suite()?, &texts, &image, tokens, batch, json, insecure_test_seed, link)
        }
        Cmd::Accuracy { model, sentences, secure, classify, json, suite } => {
            let a = accuracy::Args { dir: model.dir(), sentences, suite: suite.suite()?, secure, classify };
            accuracy::run(&a, json)
        }
        Cmd::Fit { func, lo, hi, m, d, domain, exact_compare, samples, model, texts, range, clip, squarings, floor, out, json } => match model {
            Some(model) => {
                let a = fit::DistArgs { func: &func, model: &model, texts: texts.as_deref(), range, clip, squarings, floor, domain: domain.as_deref(), exact_compare };
                fit::run_dist(&a, out.as_deref(), json)
            }
            None => {
                let (Some(lo), Some(hi)) = (lo, hi) else {
                    return Err("nectar fit: an OPPE table needs --lo and --hi (or --model for a distribution fit)".into());
                };
                let a = fit::Args { func: &func, lo, hi, m, d, domain: domain.as_deref(), exact_compare, samples };
                fit::run(&a, out.as_deref(), json)
            }
        },
        Cmd::Params { suite, json } => {
            let s = match suite {
                Some(spec) => Some(suites::resolve(Some(&spec), None, &[], suites::DEFAULT_SUITE)?),
                None => None,
            };
            params::run(s.as_ref(), json)
        }
        Cmd::Plan { model, model_shape, suite, tokens, json } => {
            let dir = model.unwrap_or_else(|| nectar_model::home::default_home().join("minilm"));
            let source = match &model_shape {
                Some(s) => plan::Source::Shape(s),
                None => plan::Source::Dir(&dir),
            };
            plan::run(&source, &suite, tokens, json)
        }
        Cmd::Tune { net, model, tokens, candidates, recalibrate, no_run, json } => {
            let dir = model.unwrap_or_else(|| nectar_model::home::minilm_dir(&nectar_model::home::default_home()));
            let candidates = match candidates {
                Some(c) => c.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
                None => tune::CANDIDATES.iter().map(|s| s.to_string()).collect(),
            };
            tune::run(&tune::Args { dir, net, tokens, candidates, recalibrate, no_run, json })
        }
        Cmd::Report { file, html, links_svg } => html_report::run(&file, html.as_deref(), links_svg.as_deref()),
        Cmd::Suites { json, markdown } => {
            suites::print(json, markdown);
            Ok(())
        }
        Cmd::Bench { what } => match what {
            BenchCmd::Net { mb, json } => {
                let lines = bench_net::run(mb).map_err(|e| e.to_string())?;
                report::print_lines(&lines, json);
                Ok(())
            }
            BenchCmd::Ot { count, json, suite } => {
                report::print_lines(&[bench_ot::run(&suite.suite()?, count)?], json);
                Ok(())
            }
            BenchCmd::Fhe { op, reps, tokens, threads, json } => {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| e.to_string())?;
                let r = pool.install(|| nectar_bench::fhe::bench_fhe(&op, reps, tokens)).map_err(|e| e.to_string())?;
                let l = report::BenchLine::new("fhe", r.op)
                    .param("n", r.n)
                    .param("q_bits", r.q_bits)
                    .param("plain", r.plain)
                    .param("threads", r.threads)
                    .seconds(r.seconds)
                    .extra("ms_per_slot", r.ms_per_slot)
                    .extra("products", r.products)
                    .extra("mismatches", r.mismatches)
                    .extra("budget_bits", r.budget_bits);
                let l = match (r.stages, r.keygen_seconds, r.mean_abs_error) {
                    (Some(st), Some(kg), mae) => {
                        let l = l
                            .extra("keygen_seconds", kg)
                            .extra("stages", serde_json::to_value(st).map_err(|e| e.to_string())?);
                        let l = match mae {
                            Some(v) => l.extra("mean_abs_error", v),
                            None => l,
                        };
                        match (r.pcmm_seconds, r.shape, r.bytes_in_out) {
                            (Some(ps), Some((tk, h, f)), Some((bi, bo))) => l
                                .extra("pcmm_seconds", ps)
                                .extra("ciphertext_bytes_in", bi)
                                .extra("ciphertext_bytes_out", bo)
                                .param("tokens", tk)
                                .param("hidden", h)
                                .param("ffn", f),
                            _ => l,
                        }
                    }
                    _ => l,
                };
                report::print_lines(&[l], json);
                Ok(())
            }
            BenchCmd::He { n, set, json } => {
                report::print_lines(&bench_he::run(&n, &set)?, json);
                Ok(())
            }
            BenchCmd::Linear { op, shape, size, windows, variant, net, heads, l, json, suite, suite_file, block, count, f2r, packing, model_shape, tokens, real, fused_block } => {
                let suite = suites::resolve(suite.as_deref(), suite_file.as_deref(), &[], suites::BENCH_SUITE)?;
                // BLB's CKKS matmuls (per operator, with their own keys, or fused) have their own
                // benches; the other stateful matmuls (`olt-ahead`, `nimbus-cop`) are benched by
                // their kernels (`--op matmul`, `--op cop`) like any OLT.
                if suite.matmul.fused() || suite.matmul.name() == "ckks" || matches!(op.as_str(), "convert" | "blocks" | "qk" | "sv" | "attn_out" | "ffn1" | "ffn2") {
                    let blb = bench_linear::BlbArgs { op: &op, block, count, f2r: &f2r, packing: &packing, net: &net, model_shape: &model_shape, tokens, real, fused_block };
                    report::print_lines(&bench_linear::run_blb(&blb, &suite)?, json);
                    return Ok(());
                }
                suite.validate().map_err(|e| e.to_string())?;
                let elementwise = matches!(op.as_str(), "bole" | "mul" | "square");
                let shape = match (elementwise, size) {
                    (true, Some(s)) => s.to_string(),
                    (true, None) => (1usize << 20).to_string(),
                    (false, _) => shape.unwrap_or_default(),
                };
                let args = bench_linear::Args { op: &op, shape: &shape, windows: windows.as_deref(), variant: &variant, net: &net, heads, l, suite: &suite };
                report::print_lines(&bench_linear::run(&args)?, json);
                Ok(())
            }
            BenchCmd::Nn { op, size, cols, no_query_reuse, wide_bole, net, suite, suite_file, bits, shift, frac, json } => {
                let args = bench_nn::Args {
                    op: &op,
                    size,
                    cols,
                    suite: suite.as_deref(),
                    suite_file: suite_file.as_deref(),
                    no_query_reuse,
                    wide_bole,
                    net: &net,
                    bits,
                    shift,
                    frac,
                };
                report::print_lines(&bench_nn::run(&args)?, json);
                Ok(())
            }
            BenchCmd::Mpc { op, n, bits, count, block, net, json } => {
                let args = bench_mpc::Args { op: &op, n, bits, count, block, net: &net };
                report::print_lines(&[bench_mpc::run(&args)?], json);
                Ok(())
            }
            BenchCmd::Model {
                arch,
                seq,
                layers,
                random_weights: _,
                net,
                seed,
                quiet,
                suite,
                in_process,
                check_plain,
                batch,
                server_party,
                json,
            } => {
                let args = bench_model::Args {
                    arch: &arch,
                    seq,
                    layers,
                    net: &net,
                    suite: suite.suite()?,
                    seed,
                    quiet,
                    in_process,
                    check_plain,
                    batch: batch as usize,
                };
                match server_party {
                    Some(addr) => bench_model::run_server_party(&args, &addr),
                    None => {
                        report::print_lines(&bench_model::run(&args)?, json);
                        Ok(())
                    }
                }
            }
            BenchCmd::Suites { model, suites, tokens, text, net, op, in_process, memory_budget_mib, repeat, batch, server_party, json } => {
                let args = bench_suites::Args {
                    dir: model.dir(),
                    suites: &suites,
                    tokens,
                    text: text.as_deref(),
                    net: &net,
                    ops: &op,
                    in_process,
                    memory_budget: memory_budget_mib << 20,
                    repeat: repeat as usize,
                    batch: batch as usize,
                    trace: false,
                };
                match server_party {
                    Some(addr) => bench_suites::run_server_party(&args, &addr),
                    None => bench_suites::run(&args, json),
                }
            }
        },
    }
}

/// `nectar generate --plaintext`: the prompt (through the chat template with `chat`), then the
/// greedy continuation, up to the end-of-sequence token of a GGUF file.
fn generate_plaintext(dir: &std::path::Path, prompt: &str, n_new: usize, chat: bool, json: bool) -> Result<(), String> {
    let m = nectar_model::Model::load(dir).map_err(|e| e.to_string())?;
    let text = if chat {
        let msg = nectar_model::chat_template::Message::new("user", prompt);
        m.apply_chat_template(&[msg]).map_err(|e| e.to_string())?
    } else {
        prompt.to_string()
    };
    let tok = m.tokenizer().ok_or_else(|| format!("{}: no tokenizer", dir.display()))?;
    let ids = tok.encode(&text).map_err(|e| e.to_string())?.ids;
    let mut new = m.generate_ids(&ids, n_new).map_err(|e| e.to_string())?;
    // An instruct model ends its answer with the end-of-sequence token: the text stops there.
    if let Some(at) = m.gguf().and_then(|g| g.eos_id).and_then(|eos| new.iter().position(|&t| t == eos)) {
        new.truncate(at + 1);
    }
    let generated = tok.decode(&new).map_err(|e| e.to_string())?;
    if json {
        let o = serde_json::json!({ "prompt": text, "mode": "plaintext", "prompt_ids": ids, "generated": generated, "generated_ids": new });
        outln!("{o}");
    } else {
        outln!("{text}{generated}");
    }
    Ok(())
}

/// `nectar embed --plaintext`: norms, leading values and the cosine-similarity matrix.
fn embed_plaintext(dir: &std::path::Path, texts: &[String], json: bool) -> Result<(), String> {
    let m = nectar_model::Model::load(dir).map_err(|e| e.to_string())?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let embs = m.embed(&refs).map_err(|e| e.to_string())?;
    if json {
        for (t, e) in texts.iter().zip(&embs) {
            let o = serde_json::json!({ "text": t, "mode": "plaintext", "dim": e.len(), "embedding": e });
            outln!("{o}");
        }
        return Ok(());
    }
    outln!("plaintext reference ({})", dir.display());
    for (i, (t, e)) in texts.iter().zip(&embs).enumerate() {
        let norm = e.iter().map(|x| x * x).sum::<f32>().sqrt();
        let head: Vec<String> = e.iter().take(4).map(|x| format!("{x:+.4}")).collect();
        outln!("[{i}] norm {norm:.4}  [{} ...]  {t:?}", head.join(", "));
    }
    outln!("cosine similarity:");
    for a in &embs {
        let row: Vec<String> = embs.iter().map(|b| format!("{:.4}", nectar_model::cosine(a, b))).collect();
        outln!("  {}", row.join("  "));
    }
    Ok(())
}

/// The flag `nectar serve` drains on: set by the first SIGTERM or SIGINT; a second one ends
/// the process at once with status 128 + its number.
fn drain_on_signals() -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>, String> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [SIGTERM, SIGINT] {
        // The conditional exit first: it fires only once the flag is already set.
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, std::sync::Arc::clone(&flag))
            .and_then(|_| signal_hook::flag::register(sig, std::sync::Arc::clone(&flag)))
            .map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
    }
    Ok(flag)
}

/// The client's cache of a server's encrypted weights (`nectar_linear::cop_cache`): `cop/` in
/// nectar's cache unless `off`.
fn weight_cache(off: bool) {
    let dir = (!off).then(|| nectar_model::home::default_home().join("cop"));
    nectar_linear::cop_cache::set_client_cache_dir(dir);
}

#[cfg(test)]
mod tests {
    /// `--net`'s help names every preset with its bandwidth and round trip.
    #[test]
    fn net_help_lists_every_preset() {
        for p in nectar_net::sim::PRESETS {
            let entry = format!("{} ({}/{})", p.name, p.mbps, p.rtt_ms);
            assert!(super::NET_HELP.contains(&entry), "{entry} missing from {}", super::NET_HELP);
        }
    }
}
