//! `nectar`: the command-line interface (see README.md).

mod bench_he;
mod demo;
mod private;
mod session;
mod bench_linear;
mod bench_model;
mod bench_net;
mod bench_nn;
mod bench_ot;
mod report;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

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
        /// Which model: `minilm` (sentence-transformers/all-MiniLM-L6-v2).
        #[arg(default_value = "minilm")]
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
    /// Architecture summary of a model directory.
    Info {
        #[command(flatten)]
        model: ModelArg,
    },
    /// Serve a model to clients (secure inference; one session per connection).
    Serve {
        #[command(flatten)]
        model: ModelArg,
        #[arg(long, default_value = "127.0.0.1:7878")]
        listen: String,
        /// The server also learns each output (default: only the client does).
        #[arg(long)]
        reveal_to_server: bool,
        /// Stop after this many sessions (default: serve forever).
        #[arg(long)]
        max_sessions: Option<usize>,
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
        /// Tokens to generate (GPT-2, LLaMA).
        #[arg(long, default_value_t = 8)]
        tokens: usize,
        /// BERT classifier logits instead of the sentence embedding.
        #[arg(long)]
        classify: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        suite: SuiteArgs,
        texts: Vec<String>,
    },
    /// Server and client on loopback: private outputs next to the plaintext reference.
    Demo {
        #[command(flatten)]
        model: ModelArg,
        /// Tokens to generate (GPT-2, LLaMA).
        #[arg(long, default_value_t = 8)]
        tokens: usize,
        /// ViT: an image to classify (as for `infer --image`); repeatable.
        #[arg(long)]
        image: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        suite: SuiteArgs,
        texts: Vec<String>,
    },
    /// Benchmarks (JSON lines with --json; see README "Benchmarks").
    Bench {
        #[command(subcommand)]
        what: BenchCmd,
    },
}

#[derive(Args)]
struct ModelArg {
    /// A Hugging Face model directory (config.json, model.safetensors, tokenizer.json);
    /// default: the fetched MiniLM.
    #[arg(long)]
    model: Option<PathBuf>,
}

impl ModelArg {
    fn dir(&self) -> PathBuf {
        self.model.clone().unwrap_or_else(|| nectar_model::fetch::default_home().join("minilm"))
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
        #[arg(long, value_parser = ["iknp", "ferret"], default_value = "ferret")]
        kind: String,
        #[arg(long, default_value_t = 10_000_000)]
        count: usize,
        #[arg(long)]
        json: bool,
    },
    /// Homomorphic encryption primitives per ring degree.
    He {
        /// Ring degrees (comma-separated).
        #[arg(long, value_delimiter = ',', default_values_t = [4096usize, 8192, 16384])]
        n: Vec<usize>,
        #[arg(long)]
        json: bool,
    },
    /// HE-based linear protocols: OLT, shared matmuls, bOLEe (both parties in-process).
    Linear {
        #[arg(long, value_parser = ["olt", "matmul", "batch_matmul", "bole", "mul", "square"], default_value = "olt")]
        op: String,
        /// k,m,n for the matrix ops.
        #[arg(long, default_value = "128,768,768")]
        shape: Option<String>,
        /// Vector length for bole / mul / square (instead of --shape).
        #[arg(long)]
        size: Option<usize>,
        #[arg(long, value_parser = ["krdy", "krdy_plus", "interleave"], default_value = "interleave")]
        variant: String,
        #[arg(long, value_parser = ["none", "lan", "wan"], default_value = "none")]
        net: String,
        /// Heads of batch_matmul.
        #[arg(long, default_value_t = 12)]
        heads: usize,
        /// Ring width l.
        #[arg(long, default_value_t = 64)]
        l: u32,
        #[arg(long)]
        json: bool,
    },
    /// Nonlinear operators and share-level protocols (both parties in-process).
    Nn {
        #[arg(long, default_value = "less")]
        op: String,
        /// Number of elements.
        #[arg(long, default_value_t = 1 << 16)]
        size: usize,
        /// Row length of row operators (softmax, layernorm, rmsnorm, argmax).
        #[arg(long, default_value_t = 128)]
        cols: usize,
        /// Operators: `+`-separated bole|ot, b13|small|iknp, noreuse, wide.
        #[arg(long, default_value = "bole+b13")]
        variant: String,
        #[arg(long, value_parser = ["none", "lan", "wan"], default_value = "none")]
        net: String,
        /// Ring width l of a share-level op (default: the op's own, usually 64).
        #[arg(long)]
        bits: Option<u32>,
        /// Truncation shift / ignored low bits of a share-level op.
        #[arg(long)]
        shift: Option<u32>,
        #[arg(long)]
        json: bool,
    },
    /// A whole model at its real shapes with random weights (both parties in-process).
    Model {
        #[arg(long, value_parser = ["bert-tiny", "bert-base", "bert-large", "gpt2", "vit-base", "llama", "llama-7b"], default_value = "bert-base")]
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
        #[arg(long, value_parser = ["none", "lan", "wan"], default_value = "none")]
        net: String,
        /// Secret-shared token ids (i_equal one-hot) instead of client-side one-hot.
        #[arg(long)]
        shared_ids: bool,
        /// GeLU/SiLU in the small activation ring.
        #[arg(long)]
        mixed: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// No progress lines / summary on stderr.
        #[arg(long)]
        quiet: bool,
        /// OLT window prices: artifact (fewest bytes, the paper's; default) or lan_commodity.
        #[arg(long, default_value = "artifact")]
        olt_cost: String,
        /// Both parties as threads of this process (one peak RSS for both) instead of the
        /// server in a child process over loopback TCP (the default with `--net none`).
        #[arg(long)]
        in_process: bool,
        /// Internal: run only the server party, connected to this address (the child process).
        #[arg(long, hide = true)]
        server_party: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

/// Protocol choices (AGREEMENT: server and client must pass the same).
#[derive(Args, Clone)]
struct SuiteArgs {
    /// COT producer: ferret_b13 (production), ferret_small (same security, less memory per
    /// refill), iknp.
    #[arg(long, default_value = "ferret_b13")]
    ot: String,
    /// Element-wise products: bole (BumbleBee Π_mul, default) or ot (Gilboa products).
    #[arg(long, default_value = "bole")]
    mul: String,
    /// OLT window prices: artifact (fewest bytes, as the paper) or lan_commodity (several
    /// times faster on a small machine, more bytes).
    #[arg(long, default_value = "artifact")]
    olt_cost: String,
    /// Evaluate GeLU/SiLU in BumbleBee's small activation ring (§V-C).
    #[arg(long)]
    mixed: bool,
    /// The client secret-shares its token ids and the one-hot rows are computed securely
    /// (i_equal) instead of the client inputting one-hot rows directly.
    #[arg(long)]
    shared_ids: bool,
}

impl SuiteArgs {
    fn suite(&self) -> private::Suite {
        use nectar_model::secure::{EmbedMode, SecureOptions};
        private::Suite {
            ot: self.ot.clone(),
            mul: self.mul.clone(),
            olt_cost: self.olt_cost.clone(),
            options: SecureOptions {
                embed: if self.shared_ids { EmbedMode::SharedIds } else { EmbedMode::ClientOneHot },
                mixed_activations: self.mixed,
                max_layers: None,
            },
        }
    }
}

fn main() -> ExitCode {
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
            if name != "minilm" {
                return Err(format!("unknown model '{name}' (available: minilm)"));
            }
            let home = home.unwrap_or_else(nectar_model::fetch::default_home);
            let dir = nectar_model::fetch::fetch_minilm(&home).map_err(|e| e.to_string())?;
            println!("{}", dir.display());
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
        Cmd::Info { model } => {
            let m = nectar_model::Model::load(&model.dir()).map_err(|e| e.to_string())?;
            println!("{}", m.summary());
            Ok(())
        }
        Cmd::Serve { model, listen, reveal_to_server, max_sessions, suite } => {
            let m = std::sync::Arc::new(private::ServerModel::load(&model.dir())?);
            let listener = std::net::TcpListener::bind(&listen).map_err(|e| format!("listen {listen}: {e}"))?;
            eprintln!(
                "serving {} ({}) on {} — suite {}, OT {}{}",
                model.dir().display(),
                m.config.model_type(),
                listener.local_addr().map(|a| a.to_string()).unwrap_or(listen),
                session::SUITE,
                suite.ot,
                if reveal_to_server { ", outputs revealed to the server too" } else { "" }
            );
            private::serve(m, listener, &suite.suite(), reveal_to_server, max_sessions, false)
        }
        Cmd::Infer { connect, model, ids, image, tokens, classify, json, suite, texts } => {
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
            let (run, _) = private::run_client(&connect, &suite.suite(), expected.as_ref(), &inputs, tokens, classify)?;
            demo::print_run(&labels, &run, None, json);
            Ok(())
        }
        Cmd::Demo { model, tokens, image, json, suite, texts } => {
            demo::demo(&model.dir(), &suite.suite(), &texts, &image, tokens, json)
        }
        Cmd::Bench { what } => match what {
            BenchCmd::Net { mb, json } => {
                let lines = bench_net::run(mb).map_err(|e| e.to_string())?;
                report::print_lines(&lines, json);
                Ok(())
            }
            BenchCmd::Ot { kind, count, json } => {
                report::print_lines(&[bench_ot::run(&kind, count)?], json);
                Ok(())
            }
            BenchCmd::He { n, json } => {
                report::print_lines(&bench_he::run(&n)?, json);
                Ok(())
            }
            BenchCmd::Linear { op, shape, size, variant, net, heads, l, json } => {
                let elementwise = matches!(op.as_str(), "bole" | "mul" | "square");
                let shape = match (elementwise, size) {
                    (true, Some(s)) => s.to_string(),
                    (true, None) => (1usize << 20).to_string(),
                    (false, _) => shape.unwrap_or_default(),
                };
                let args = bench_linear::Args { op: &op, shape: &shape, variant: &variant, net: &net, heads, l };
                report::print_lines(&bench_linear::run(&args)?, json);
                Ok(())
            }
            BenchCmd::Nn { op, size, cols, variant, net, bits, shift, json } => {
                let args = bench_nn::Args { op: &op, size, cols, variant: &variant, net: &net, bits, shift };
                report::print_lines(&bench_nn::run(&args)?, json);
                Ok(())
            }
            BenchCmd::Model {
                arch,
                seq,
                layers,
                random_weights: _,
                net,
                shared_ids,
                mixed,
                seed,
                quiet,
                olt_cost,
                in_process,
                server_party,
                json,
            } => {
                let args = bench_model::Args {
                    arch: &arch,
                    seq,
                    layers,
                    net: &net,
                    shared_ids,
                    mixed,
                    seed,
                    quiet,
                    olt_cost: &olt_cost,
                    in_process,
                };
                match server_party {
                    Some(addr) => bench_model::run_server_party(&args, &addr),
                    None => {
                        report::print_lines(&bench_model::run(&args)?, json);
                        Ok(())
                    }
                }
            }
        },
    }
}

/// `nectar embed --plaintext`: norms, leading values and the cosine-similarity matrix.
fn embed_plaintext(dir: &std::path::Path, texts: &[String], json: bool) -> Result<(), String> {
    let m = nectar_model::Model::load(dir).map_err(|e| e.to_string())?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let embs = m.embed(&refs).map_err(|e| e.to_string())?;
    if json {
        for (t, e) in texts.iter().zip(&embs) {
            let o = serde_json::json!({ "text": t, "mode": "plaintext", "dim": e.len(), "embedding": e });
            println!("{o}");
        }
        return Ok(());
    }
    println!("plaintext reference ({})", dir.display());
    for (i, (t, e)) in texts.iter().zip(&embs).enumerate() {
        let norm = e.iter().map(|x| x * x).sum::<f32>().sqrt();
        let head: Vec<String> = e.iter().take(4).map(|x| format!("{x:+.4}")).collect();
        println!("[{i}] norm {norm:.4}  [{} ...]  {t:?}", head.join(", "));
    }
    println!("cosine similarity:");
    for a in &embs {
        let row: Vec<String> = embs.iter().map(|b| format!("{:.4}", nectar_model::cosine(a, b))).collect();
        println!("  {}", row.join("  "));
    }
    Ok(())
}
