//! `nectar bench nn`: share-level protocols (`nectar_mpc::bench_mpc`: less, msb, mux, trunc, ...)
//! and whole nonlinear operators on the secure backend (issue 6).

use crate::report::BenchLine;
use nectar_mpc::bench::{bench_mpc, MpcOp};
use nectar_net::LinkModel;

pub struct Args<'a> {
    pub op: &'a str,
    pub size: usize,
    /// Row length of row operators (softmax, layernorm, rmsnorm, argmax).
    pub cols: usize,
    /// Secure operators: `+`-separated `bole|ot`, `b13|small|iknp`, `noreuse`, `wide`.
    pub variant: &'a str,
    pub net: &'a str,
    pub bits: Option<u32>,
    pub shift: Option<u32>,
}

pub fn run(a: &Args) -> Result<Vec<BenchLine>, String> {
    let net = LinkModel::preset(a.net).ok_or_else(|| format!("unknown --net '{}' (none, lan, wan)", a.net))?;
    if nectar_nn::bench::SECURE_OPS.contains(&a.op) {
        return operator(a, net);
    }
    let Some(mut op) = MpcOp::parse(a.op) else {
        return Err(format!(
            "unknown --op '{}': operators {}; share-level protocols: less, less3, less-approx, msb, mux, \
             and, b2a, trunc, trunc-approx, trunc-faithful, extend, extend-exact, mul, square, equal \
             (not available: anything else)",
            a.op,
            nectar_nn::bench::SECURE_OPS.join(", ")
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
        .extra("amortised_bits_per_element", b.amortised_bits_per_element)])
}

/// A whole secure operator (`nectar_nn::bench::bench_secure`).
fn operator(a: &Args, net: Option<LinkModel>) -> Result<Vec<BenchLine>, String> {
    let b = nectar_nn::bench::bench_secure(a.op, a.size, a.cols, a.variant, net).map_err(|e| e.to_string())?;
    let mut l = BenchLine::new("nn", &b.op)
        .param("size", b.elements)
        .param("cols", b.cols)
        .param("variant", b.variant.clone())
        .param("net", b.net.clone())
        .seconds(b.seconds);
    l.bytes_sent = b.bytes_p0;
    l.bytes_recv = b.bytes_p1;
    l.bytes_total = b.bytes_total;
    l.rounds = b.rounds;
    Ok(vec![l
        .extra("bits_per_element", b.bits_per_element)
        .extra("cots_per_element", b.cots_per_element)
        .extra("amortised_bits_per_element", b.amortised_bits_per_element)
        .extra("setup_seconds", b.setup_seconds)
        .extra("setup_bytes", b.setup_bytes)
        .extra("max_lsb_vs_twin", b.max_lsb_vs_twin)])
}
