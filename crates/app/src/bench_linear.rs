//! `nectar bench linear`: BumbleBee's HE linear protocols (issue 5), from
//! `nectar_bench::linear::bench_linear`, and with `--suite blb` BLB's CKKS kernels (issue 15),
//! from `nectar_bench::blb`. The line is written from the server's side (P0).

use crate::report::BenchLine;
use nectar_bench::linear::{bench_linear, LinearBenchSpec};
use nectar_model::Suite;

pub struct Args<'a> {
    pub op: &'a str,
    pub shape: &'a str,
    /// `kw,mw,nw`: fixed OLT windows instead of the suite's `olt-cost` choice.
    pub windows: Option<&'a str>,
    pub variant: &'a str,
    pub net: &'a str,
    pub heads: usize,
    pub l: u32,
    /// Validated; its `olt-cost` prices the OLT windows (`variant` stays an ablation of the
    /// OLT's compression: krdy, krdy_plus, interleave).
    pub suite: &'a Suite,
}

pub fn run(a: &Args) -> Result<Vec<BenchLine>, String> {
    let mut spec = LinearBenchSpec::parse(a.op, a.shape, a.variant, a.net, a.heads, a.l)
        .and_then(|s| s.with_cost_model(&a.suite.olt_cost.cost_model()))
        .map_err(|e| e.to_string())?;
    if let Some(w) = a.windows {
        spec = spec.with_windows(w).map_err(|e| e.to_string())?;
    }
    if a.suite.olt_ring.narrow() {
        spec = spec.with_narrow_ring();
    }
    let l_used = spec.l;
    let lines = bench_linear(&spec).map_err(|e| e.to_string())?;
    Ok(lines
        .into_iter()
        .map(|r| {
            let mut l = BenchLine::new("linear", &format!("{}/{}", r.op, r.variant))
                .param("shape", r.shape.clone())
                .param("heads", r.heads)
                .param("net", a.net)
                .param("l", l_used)
                .param("suite", a.suite.label())
                .seconds(r.seconds);
            l.bytes_sent = r.bytes_server_to_client;
            l.bytes_recv = r.bytes_client_to_server;
            l.bytes_total = r.bytes_total;
            l.rounds = r.rounds;
            let mut l = l
                .extra("compression", r.compression.clone())
                .extra("server_seconds", r.server_seconds)
                .extra("client_seconds", r.client_seconds)
                .extra("cts_sent", r.cts_sent)
                .extra("cts_returned", r.cts_returned)
                .extra("automorphisms", r.automorphisms);
            if let Some((kw, mw, nw)) = r.windows {
                l = l.extra("windows", vec![kw, mw, nw]);
            }
            if let Some(m) = r.mismatches {
                l = l.extra("mismatches", m);
            }
            if let Some(s) = r.setup {
                l = l.extra("setup_seconds", s.seconds).extra("setup_bytes", s.bytes).extra("setup_cts", s.ciphertexts);
            }
            l
        })
        .collect())
}

/// Arguments of the `--suite blb` kernels.
pub struct BlbArgs<'a> {
    pub op: &'a str,
    pub block: usize,
    pub count: usize,
    pub f2r: &'a str,
    /// Slot packing of the conversions: `complex` (ours, default) or `real` (BLB as printed).
    pub packing: &'a str,
    pub net: &'a str,
    pub model_shape: &'a str,
    pub tokens: usize,
    pub real: bool,
    /// `--op fused`: only this block (1-based).
    pub fused_block: Option<usize>,
}

/// The identifying fields of one fused block's JSON line.
struct BlockHead<'a> {
    model: &'a str,
    tokens: usize,
    params: &'a str,
    n: usize,
    packing: &'static str,
}

/// A `blb_block/*` or `blb_fused/*` line with its parameters, time, bytes and rounds.
fn block_line(variant: &str, h: &BlockHead<'_>, a: &BlbArgs<'_>, suite: &Suite, seconds: f64, bytes: u64, rounds: u64) -> BenchLine {
    let mut l = BenchLine::new("linear", variant)
        .param("model", h.model.to_string())
        .param("tokens", h.tokens)
        .param("params", h.params.to_string())
        .param("n", h.n)
        .param("field_to_ring", a.f2r)
        .param("packing", h.packing)
        .param("net", a.net)
        .param("suite", suite.label())
        .seconds(seconds);
    l.bytes_total = bytes;
    l.rounds = rounds;
    l
}

/// `--suite blb`: BLB's CKKS kernels. `convert` (§6.3, Alg. 1–2) and `blocks` (every fused
/// block's conversions, Table 10); the fused matmuls of §5 are a clear error until they land.
pub fn run_blb(a: &BlbArgs, suite: &Suite) -> Result<Vec<BenchLine>, String> {
    let how = match a.f2r {
        "exact" => nectar_bench::blb::FieldToRing::Exact,
        _ => nectar_bench::blb::FieldToRing::Local,
    };
    let packing = match a.packing {
        "real" => nectar_bench::blb::SlotPacking::Real,
        "complex" => nectar_bench::blb::SlotPacking::Complex,
        p => return Err(format!("--packing {p}: real or complex")),
    };
    if a.op == "blocks" {
        let plan = crate::plan::build(&crate::plan::Source::Shape(a.model_shape), "blb", a.tokens)?;
        let lines = nectar_bench::blb::bench_plan_blocks(&plan, how, packing, a.net).map_err(|e| e.to_string())?;
        return Ok(lines
            .into_iter()
            .map(|r| {
                let head = BlockHead { model: &r.model, tokens: r.tokens, params: &r.params, n: r.n, packing: r.packing };
                block_line(&format!("blb_block/{}", r.block), &head, a, suite, r.seconds, r.bytes_total, r.rounds_server)
                    .extra("field_to_ring_used", r.field_to_ring_used)
                    .extra("to_ckks_tensors", r.to_ckks_tensors)
                    .extra("to_ckks_ciphertexts", r.to_ckks_ciphertexts)
                    .extra("to_ckks_wire_ciphertexts", r.to_ckks_wire_ciphertexts)
                    .extra("to_ckks_bytes", r.to_ckks_bytes)
                    .extra("to_mpc_tensors", r.to_mpc_tensors)
                    .extra("to_mpc_ciphertexts", r.to_mpc_ciphertexts)
                    .extra("to_mpc_wire_ciphertexts", r.to_mpc_wire_ciphertexts)
                    .extra("to_mpc_bytes", r.to_mpc_bytes)
                    .extra("max_abs_error", r.max_abs_error)
                    .extra("session_setup_bytes", r.session_setup_bytes)
                    .extra("conjugation_key_bytes", r.conjugation_key_bytes)
            })
            .collect());
    }
    if a.op == "fused" {
        let arch = nectar_bench::fixtures::random::RandomArch::parse(a.model_shape).ok_or_else(|| format!("--model-shape {}: bert-base, bert-large or gpt2", a.model_shape))?;
        let lines = nectar_bench::blb::bench_fused_blocks(arch, a.tokens, a.fused_block, how, packing, a.net).map_err(|e| e.to_string())?;
        return Ok(lines
            .into_iter()
            .map(|r| {
                let head = BlockHead { model: &r.model, tokens: r.tokens, params: &r.params, n: r.n, packing: r.packing };
                block_line(&format!("blb_fused/{}", r.block), &head, a, suite, r.convert_seconds + r.ckks_seconds, r.bytes_total, r.rounds_server)
                    .extra("field_to_ring_used", r.field_to_ring_used)
                    .extra("depth", r.depth)
                    .extra("levels_used", r.levels_used)
                    .extra("to_ckks_ciphertexts", r.to_ckks_ciphertexts)
                    .extra("to_ckks_bytes", r.to_ckks_bytes)
                    .extra("to_mpc_ciphertexts", r.to_mpc_ciphertexts)
                    .extra("to_mpc_bytes", r.to_mpc_bytes)
                    .extra("convert_seconds", r.convert_seconds)
                    .extra("ckks_seconds", r.ckks_seconds)
                    .extra("rotations", r.rotations)
                    .extra("key_switches", r.key_switches)
                    .extra("ct_ct_mults", r.ct_ct_mults)
                    .extra("ct_pt_mults", r.ct_pt_mults)
                    .extra("rotation_steps", r.rotation_steps)
                    .extra("galois_key_bytes", r.galois_key_bytes)
                    .extra("max_abs_error", r.max_abs_error)
                    .extra("max_abs_value", r.max_abs_value)
                    .extra("session_setup_bytes", r.session_setup_bytes)
            })
            .collect());
    }
    if matches!(a.op, "qk" | "sv" | "attn_out" | "ffn1" | "ffn2") {
        let lines = nectar_bench::blb::bench_matmul(a.op, a.model_shape, a.tokens, a.real.then_some(a.block)).map_err(|e| e.to_string())?;
        return Ok(lines
            .into_iter()
            .map(|r| {
                let mut l = BenchLine::new("linear", &format!("blb_{}/{}", r.op, r.kind))
                    .param("model_shape", r.model_shape.clone())
                    .param("tokens", r.tokens)
                    .param("slots", r.slots)
                    .param("suite", suite.label())
                    .seconds(r.seconds);
                if let Some(p) = &r.params {
                    l = l.param("params", p.clone());
                }
                l.extra("rotations", r.rotations)
                    .extra("key_switches", r.key_switches)
                    .extra("ct_ct_mults", r.ct_ct_mults)
                    .extra("ct_pt_mults", r.ct_pt_mults)
                    .extra("rescales", r.rescales)
                    .extra("depth", r.depth)
                    .extra("rotation_steps", r.rotation_steps)
                    .extra("encode_seconds", r.encode_seconds)
                    .extra("max_abs_error", r.max_abs_error)
            })
            .collect());
    }
    if a.op != "convert" {
        return Err(format!("--suite blb: --op {} is not a BLB kernel (convert, blocks, fused, qk, sv, attn_out, ffn1, ffn2)", a.op));
    }
    let lines = nectar_bench::blb::bench_convert(a.block, a.count, how, packing, a.net).map_err(|e| e.to_string())?;
    Ok(lines
        .into_iter()
        .map(|r| {
            let mut l = BenchLine::new("linear", &format!("convert/{}", r.direction))
                .param("block", r.block)
                .param("n", r.n)
                .param("count", r.count)
                .param("field_to_ring", r.field_to_ring)
                .param("packing", r.packing)
                .param("net", r.net.clone())
                .param("suite", suite.label())
                .seconds(r.seconds);
            l.bytes_sent = r.bytes_server_to_client;
            l.bytes_recv = r.bytes_client_to_server;
            l.bytes_total = r.bytes_total;
            l.rounds = r.rounds_server;
            l.extra("ciphertexts", r.ciphertexts)
                .extra("wire_ciphertexts", r.wire_ciphertexts)
                .extra("level", r.level)
                .extra("max_abs_error", r.max_abs_error)
                .extra("session_setup_bytes", r.session_setup_bytes)
                .extra("conjugation_key_bytes", r.conjugation_key_bytes)
        })
        .collect())
}
