//! `nectar bench nn`: share-level protocols (`nectar_mpc::bench_mpc`: less, msb, mux, trunc, ...)
//! and whole nonlinear operators on the secure backend (issue 6).

use crate::report::BenchLine;
use nectar_mpc::bench::{bench_mpc, MpcOp};
use nectar_net::LinkModel;

pub struct Args<'a> {
    pub op: &'a str,
    pub size: usize,
    pub net: &'a str,
    pub bits: Option<u32>,
    pub shift: Option<u32>,
}

pub fn run(a: &Args) -> Result<Vec<BenchLine>, String> {
    let net = LinkModel::preset(a.net).ok_or_else(|| format!("unknown --net '{}' (none, lan, wan)", a.net))?;
    let Some(mut op) = MpcOp::parse(a.op) else {
        return Err(format!(
            "`nectar bench nn --op {}` is not available yet: the secure operator benches (gelu, softmax, ...) \
             come with the secure backend; share-level ops: less, less3, less-approx, msb, mux, and, b2a, \
             trunc, trunc-approx, trunc-faithful, extend, extend-exact, mul, square, equal",
            a.op
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
