//! `nectar bench nn`: share-level protocols (`nectar_bench::mpc::bench_mpc`: less, msb, mux,
//! trunc, ...) and whole nonlinear operators on the secure backend, each operator run by the
//! protocol the suite names (`--op gelu` under `--suite bumblebee+gelu=p4`, or `--op gelu=p4`).

use crate::report::BenchLine;
use nectar_bench::mpc::{bench_mpc, MpcOp};
use nectar_model::secure::backend_opts;
use nectar_bench::nn::Kernel;
use nectar_model::suite::{ActRing, Norm, Rsqrt, Softmax, Suite};
use nectar_nn::gelu::GeluForm;
use nectar_net::LinkModel;
use std::path::Path;

pub struct Args<'a> {
    /// An operator, optionally with its protocol (`gelu=p4`), or a share-level protocol.
    pub op: &'a str,
    pub size: usize,
    /// Row length of row operators (softmax, layernorm, rmsnorm, argmax).
    pub cols: usize,
    pub suite: Option<&'a str>,
    pub suite_file: Option<&'a Path>,
    /// Ablations of the bOLEe products.
    pub no_query_reuse: bool,
    pub wide_bole: bool,
    pub net: &'a str,
    pub bits: Option<u32>,
    pub shift: Option<u32>,
    /// Fractional bits of an operator's format (with `bits`: the format `(bits, frac)`).
    pub frac: Option<u32>,
}

/// Whole operators benchmarked through the suite.
const OPERATORS: [&str; 12] =
    ["gelu", "silu", "exp", "tanh", "elu", "softmax", "layernorm", "rmsnorm", "rsqrt", "reciprocal", "argmax", "onehot"];

/// The `nectar_bench::nn` kernel that runs operator `op` under `suite`: a registered kind's
/// protocol is the suite's own handle (`gelu`); the kinds not in the registry yet are one
/// match per operator on the suite's choice, as in `nectar_model::secure::operators`.
fn kernel(op: &str, suite: &Suite) -> Result<String, String> {
    let base = match op {
        "tanh" => match suite.exp.name() {
            "oppe" => "tanh-oppe",
            _ => return Err("--op tanh: BumbleBee's tanh is a composition in the model (exp + reciprocal); \
                             the standalone tanh is East's OPPE (use --suite east or --op exp=oppe)"
                .into()),
        },
        "layernorm" | "rmsnorm" => match (suite.norm, suite.rsqrt) {
            (Norm::Bumblebee, Rsqrt::Newton) => op,
            (Norm::EastEq9, Rsqrt::NewtonDetermine) if op == "layernorm" => "layernorm-east",
            (Norm::EastEq9, Rsqrt::NewtonDetermine) => "rmsnorm-east",
            (Norm::EastEq9, _) => return Err(format!("--op {op}: norm=east-eq9 runs with rsqrt=newton-determine")),
            (Norm::Bumblebee, _) => return Err(format!("--op {op}: norm=bumblebee runs with rsqrt=newton")),
            (Norm::Outer, _) => {
                return Err(format!(
                    "--op {op}: norm=outer forms r ⊗ γ with an OLT against the server's weights, which this \
                     share-level bench does not run; it is measured end to end by `nectar bench suites`"
                ))
            }
        },
        "rsqrt" => match suite.rsqrt {
            Rsqrt::Newton => "rsqrt",
            Rsqrt::NewtonDetermine => "rsqrt-determine",
        },
        "softmax" if suite.softmax == Softmax::Lut => "softmax-lut",
        "softmax" if suite.softmax == Softmax::Coarse => match (suite.exp.name(), suite.reciprocal.name()) {
            ("taylor4", "newton") => "softmax-coarse-taylor4-newton",
            ("taylor2", "newton") => "softmax-coarse-taylor2-newton",
            ("taylor", "newton") => "softmax-coarse-taylor-newton",
            (e, r) => {
                return Err(format!(
                    "--op softmax=coarse: no bench kernel for exp={e} with reciprocal={r} (benched: taylor4, taylor2 or taylor × newton)"
                ))
            }
        },
        "softmax" if suite.softmax == Softmax::Narrow => match (suite.exp.name(), suite.reciprocal.name()) {
            ("taylor4", "newton") => "softmax-narrow-taylor4-newton",
            ("taylor2", "newton") => "softmax-narrow-taylor2-newton",
            ("taylor", "newton") => "softmax-narrow-taylor-newton",
            (e, r) => {
                return Err(format!(
                    "--op softmax=narrow: no bench kernel for exp={e} with reciprocal={r} (benched: taylor4, taylor2 or taylor × newton)"
                ))
            }
        },
        "softmax" => match (suite.exp.name(), suite.reciprocal.name()) {
            ("lut", "lut") => "softmax-lut",
            ("taylor", "newton") => "softmax",
            ("taylor2", "newton") => "softmax-taylor2-newton",
            ("taylor4", "newton") => "softmax-taylor4-newton",
            ("oppe", "newton-determine") => "softmax-oppe-determine",
            ("oppe", "newton") => "softmax-oppe-newton",
            ("taylor", "newton-determine") => "softmax-taylor-determine",
            (e, r) => {
                return Err(format!(
                    "--op softmax: no bench kernel for exp={e} with reciprocal={r} (the model runs it; benched: \
                     taylor/oppe × newton/newton-determine, and lut × lut = softmax=lut)"
                ))
            }
        },
        other => other,
    };
    Ok(base.to_string())
}

pub fn run(a: &Args) -> Result<Vec<BenchLine>, String> {
    let net = LinkModel::preset(a.net).ok_or_else(|| format!("unknown --net '{}' (none, lan, wan)", a.net))?;
    let (name, proto) = match a.op.split_once('=') {
        Some((n, p)) => (n.trim(), Some(p.trim())),
        None => (a.op, None),
    };
    if OPERATORS.contains(&name) {
        let mut suite = crate::suites::resolve(a.suite, a.suite_file, &[], crate::suites::BENCH_SUITE)?;
        if let Some(p) = proto {
            suite.set(name, p).map_err(|e| e.to_string())?;
        }
        suite.validate().map_err(|e| e.to_string())?;
        return operator(a, name, &suite, net);
    }
    if proto.is_some() {
        return Err(format!("--op {}: only operators take a protocol ({})", a.op, OPERATORS.join(", ")));
    }
    let Some(mut op) = MpcOp::parse(a.op) else {
        return Err(format!(
            "unknown --op '{}': operators {}; share-level protocols: less, less3, less-approx, msb, mux, \
             and, b2a, trunc, trunc-approx, trunc-faithful, extend, extend-exact, mul, square, equal \
             (not available: anything else)",
            a.op,
            OPERATORS.join(", ")
        ));
    };
    if let Some(l) = a.bits {
        op = op.with_l(l);
    }
    if let Some(s) = a.shift {
        op = op.with_shift(s);
    }
    let b = bench_mpc(op, a.size, net).map_err(|e| e.to_string())?;
    let mut l = BenchLine::new("nn", a.op)
        .param("size", b.size)
        .param("l", op.l)
        .param("shift", op.shift)
        .param("thresholds", op.thresholds)
        .param("net", b.net.clone())
        .seconds(b.seconds);
    l.bytes_sent = b.bytes_p0;
    l.bytes_recv = b.bytes_p1;
    l.bytes_total = b.bytes;
    l.rounds = b.flows;
    Ok(vec![l
        .extra("bits_per_element", b.bits_per_element)
        .extra("cots_per_element", b.cots_per_element)
        .extra("refill_bytes", b.refill_bytes)
        .extra("refill_bits_per_cot", b.refill_bits_per_cot)
        .extra("steady_bits_per_element", b.steady_bits_per_element)])
}

/// A whole secure operator (`nectar_bench::nn::bench_secure`) by the suite's protocol.
fn operator(a: &Args, name: &str, suite: &Suite, net: Option<LinkModel>) -> Result<Vec<BenchLine>, String> {
    let named;
    let kernel = match name {
        // Benches take the erf form (BERT's); the tanh form costs the same.
        "gelu" => Kernel::Gelu { p: suite.gelu, form: GeluForm::Erf, ring: suite.act_ring },
        "silu" => Kernel::Silu { p: suite.silu, ring: suite.act_ring },
        // The model runs exp in the full ring (or softmax's); under `act-ring=mixed` the bench
        // measures BumbleBee's exponential in the activation ring (§V-C), a kernel of its own.
        "exp" if suite.act_ring == ActRing::Mixed => {
            if suite.exp.name() != "taylor" {
                return Err(format!("--op exp={}: no mixed-ring kernel (BumbleBee's exp=taylor has one; the model runs exp in the full ring)", suite.exp));
            }
            Kernel::Named("exp-mixed")
        }
        "exp" => Kernel::Exp { p: suite.exp },
        "reciprocal" => Kernel::Reciprocal { p: suite.reciprocal },
        _ => {
            named = kernel(name, suite)?;
            Kernel::Named(&named)
        }
    };
    let mut opts = backend_opts(suite).with_reuse_queries(!a.no_query_reuse).with_bole_narrow(!a.wide_bole);
    if a.bits.is_some() || a.frac.is_some() {
        let (l, f) = (a.bits.unwrap_or(64), a.frac.unwrap_or(18));
        let fp = nectar_math::FixedPoint::new(l, f).map_err(|e| format!("--bits {l} --frac {f}: {e}"))?;
        opts = opts.with_format(fp);
    }
    let b = nectar_bench::nn::bench_secure(kernel, a.size, a.cols, opts, net).map_err(|e| e.to_string())?;
    let mut l = BenchLine::new("nn", name)
        .param("size", b.elements)
        .param("cols", b.cols)
        .param("protocol", suite.protocol_for(name))
        .param("kernel", kernel.label())
        .param("suite", suite.label())
        .param("variant", b.variant.clone())
        .param("net", b.net.clone())
        .param("l", opts.format.l())
        .param("f", opts.format.f())
        .seconds(b.seconds);
    l.bytes_sent = b.bytes_p0;
    l.bytes_recv = b.bytes_p1;
    l.bytes_total = b.bytes_total;
    l.rounds = b.rounds;
    Ok(vec![l
        .extra("bits_per_element", b.bits_per_element)
        .extra("cots_per_element", b.cots_per_element)
        .extra("refill_bytes", b.refill_bytes)
        .extra("refill_bits_per_cot", b.refill_bits_per_cot)
        .extra("steady_bits_per_element", b.steady_bits_per_element)
        .extra("setup_seconds", b.setup_seconds)
        .extra("setup_bytes", b.setup_bytes)
        .extra("max_lsb_vs_twin", b.max_lsb_vs_twin)
        .extra("tol_lsb", b.tol_lsb)
        .extra("prepro_bytes", b.prepro_bytes)
        .extra("prepro_seconds", b.prepro_seconds)
        .extra("online_bytes", b.online_bytes)
        .extra("online_seconds", b.online_seconds)])
}
