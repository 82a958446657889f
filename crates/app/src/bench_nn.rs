//! `nectar bench nn`: share-level protocols (`nectar_bench::mpc::bench_mpc`: less, msb, mux,
//! trunc, ...) and whole nonlinear operators on the secure backend, each operator run by the
//! protocol the suite names (`--op gelu` under `--suite bumblebee+gelu=p4`, or `--op gelu=p4`).

use crate::report::BenchLine;
use nectar_bench::mpc::{bench_mpc, MpcOp};
use nectar_bench::nn::{Fixed, Kernel};
use nectar_model::suite::{ActRing, Suite};
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

/// The `nectar_bench::nn` kernel that runs operator `op` under `suite`: the suite's own
/// protocol for the operator (with the exponential, reciprocal and rsqrt it composes).
fn kernel(op: &str, suite: &Suite) -> Result<Kernel, String> {
    let s = suite;
    Ok(match op {
        // Benches take the erf form (BERT's); the tanh form costs the same.
        "gelu" => Kernel::Gelu { p: s.gelu, form: GeluForm::Erf, ring: s.act_ring },
        "silu" => Kernel::Silu { p: s.silu, ring: s.act_ring },
        // The model runs exp in the full ring (or softmax's); under `act-ring=mixed` the bench
        // measures BumbleBee's exponential in the activation ring (§V-C), a kernel of its own.
        "exp" if s.act_ring == ActRing::Mixed => {
            if s.exp.name() != "taylor" {
                return Err(format!("--op exp={}: no mixed-ring kernel (BumbleBee's exp=taylor has one; the model runs exp in the full ring)", s.exp));
            }
            Kernel::Fixed(Fixed::ExpMixed)
        }
        "exp" => Kernel::Exp { p: s.exp },
        "tanh" => match s.exp.tanh_tolerance(nectar_math::FixedPoint::BUMBLEBEE) {
            Ok(_) => Kernel::Tanh { p: s.exp },
            Err(_) => {
                return Err(format!(
                    "--op tanh: exp={} has no tanh of its own; the model composes tanh from the exponential and a \
                     reciprocal (East's OPPE has one: --op exp=oppe)",
                    s.exp
                ))
            }
        },
        "reciprocal" => Kernel::Reciprocal { p: s.reciprocal },
        "rsqrt" => Kernel::Rsqrt { p: s.rsqrt },
        "softmax" => Kernel::Softmax { p: s.softmax, exp: s.exp, recip: s.reciprocal },
        "layernorm" | "rmsnorm" if s.norm.needs_weights() => {
            return Err(format!(
                "--op {op}: norm={} multiplies by γ as the server's weight (an OLT), which this share-level bench \
                 does not run; it is measured end to end by `nectar bench suites`",
                s.norm
            ))
        }
        "layernorm" | "rmsnorm" => Kernel::Norm { p: s.norm, rsqrt: s.rsqrt, layer: op == "layernorm" },
        "elu" => Kernel::Fixed(Fixed::Elu),
        "argmax" => Kernel::Fixed(Fixed::Argmax),
        "onehot" => Kernel::Fixed(Fixed::Onehot),
        other => return Err(format!("--op {other}: not an operator ({})", OPERATORS.join(", "))),
    })
}

pub fn run(a: &Args) -> Result<Vec<BenchLine>, String> {
    let net = LinkModel::parse(a.net).map_err(|e| format!("--net: {e}"))?;
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
    let kernel = kernel(name, suite)?;
    let mut opts = suite.backend_opts().with_reuse_queries(!a.no_query_reuse).with_bole_narrow(!a.wide_bole);
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
