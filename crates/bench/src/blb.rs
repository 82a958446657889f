//! `nectar bench linear --suite blb --op convert`: BLB's CKKS ↔ MPC conversion (§6.3,
//! Alg. 1–2) of a whole tensor at a BLB Table 6 parameter set, both directions measured apart.
//!
//! Both parties run in two threads over an in-memory channel (optionally a simulated link),
//! with a Ferret OT session set up before the measurement. The slot packing on the wire is a
//! parameter ([`SlotPacking`]: BLB's real slots, or our complex packing with half the
//! ciphertexts); the complex one's conjugation key is generated with the client's other keys
//! and, like them, reported apart (`conjugation_key_bytes`, once per parameter set). MPC → CKKS converts `count` shared
//! values to ciphertexts at the top level; the server then drops them to the conversion level
//! and CKKS → MPC converts them back. Bytes and flows are read from the channel counters
//! around each direction; the result is reconstructed and compared with the input.

use nectar_he::ckks::{CkksEvaluator, CkksParams, CkksSecretKey};
use nectar_linear::ckks_convert::{
    ciphertexts_for, ckks_to_shares_client, ckks_to_shares_server, conversion_level, shares_to_ckks_client, shares_to_ckks_server,
    wire_ciphertexts, ConvFormat,
};
pub use nectar_linear::ckks_convert::{FieldToRing, SlotPacking};
use nectar_linear::LinearError;
use nectar_blb::FusionPlan;
use nectar_math::Prg;
use nectar_mpc::Mpc;
use nectar_net::{linked_pair, Channel, LinkModel, Role};
use nectar_ot::Producer;
use std::time::Instant;

/// One direction of one run (one JSON line).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ConvertBench {
    /// `mpc_to_ckks` or `ckks_to_mpc`.
    pub direction: &'static str,
    /// BLB Table 6 block of the parameter set.
    pub block: usize,
    pub n: usize,
    pub count: usize,
    pub ciphertexts: usize,
    /// `real` or `complex` ([`SlotPacking`]).
    pub packing: &'static str,
    /// Ciphertexts that travel (half of `ciphertexts`, rounded up, with complex packing).
    pub wire_ciphertexts: usize,
    /// Number of primes of the ciphertexts that travel.
    pub level: usize,
    /// `local` or `exact` (CKKS → MPC only).
    pub field_to_ring: &'static str,
    pub net: String,
    pub bytes_total: u64,
    pub bytes_server_to_client: u64,
    pub bytes_client_to_server: u64,
    /// Rounds (one-way latencies) as counted by the server's channel.
    pub rounds_server: u64,
    pub seconds: f64,
    /// Max |reconstructed − input| after the round trip (same on both lines).
    pub max_abs_error: f64,
    /// The session's OT bootstrap (base OTs, first COT extension each way), once per session and
    /// not in `bytes_total`.
    pub session_setup_bytes: u64,
    /// Serialized conjugation key (complex packing only; 0 otherwise): client → server once per
    /// parameter set, with the other evaluation keys, not in `bytes_total`.
    pub conjugation_key_bytes: u64,
}

/// Name of a packing in the JSON.
pub fn packing_name(p: SlotPacking) -> &'static str {
    match p {
        SlotPacking::Real => "real",
        SlotPacking::Complex => "complex",
    }
}

/// The server's evaluator for `params` with the keys `fmt`'s packing needs (the conjugation key
/// of complex packing, made from the client's secret key as the client would send it), and the
/// key's serialized size.
fn conversion_evaluator(params: &CkksParams, sk: &CkksSecretKey, fmt: &ConvFormat, prg: &mut Prg) -> Result<(CkksEvaluator, u64), LinearError> {
    let ev = CkksEvaluator::new(params);
    if fmt.packing == SlotPacking::Real {
        return Ok((ev, 0));
    }
    let gk = sk.galois_keys(params, &[], true, prg)?;
    let bytes = gk.serialize(params).len() as u64;
    Ok((ev.with_galois_keys(gk), bytes))
}

fn kind_name(how: FieldToRing) -> &'static str {
    match how {
        FieldToRing::Local => "local",
        FieldToRing::Exact => "exact",
    }
}

/// An MPC session with its COT pools already filled (base OTs and the first extension in each
/// direction, once per session): the conversions measured after it pay only their own COTs, as
/// they do inside a whole inference, not the session's OT bootstrap. Returns the context and the
/// bootstrap's bytes (both directions), reported apart.
fn warm_mpc(role: Role, ch: &mut dyn Channel, seed: [u8; 16]) -> Result<(Mpc, u64), LinearError> {
    let mut m = Mpc::setup(role, ch, Prg::new(seed), Producer::default())?;
    m.ot().reserve(ch, 1).map_err(nectar_mpc::MpcError::from)?;
    Ok((m, ch.stats().bytes_total()))
}

/// Converts `count` values (uniform in ±8) there and back at BLB block `block`'s parameters.
pub fn bench_convert(block: usize, count: usize, how: FieldToRing, packing: SlotPacking, net: &str) -> Result<Vec<ConvertBench>, LinearError> {
    let params = CkksParams::blb_block(block)?;
    let fmt = ConvFormat { packing, ..ConvFormat::DEFAULT };
    let scale = params.default_scale();
    let level = conversion_level(&params, scale, &fmt, how)?;
    let top = params.max_level();
    let mut prg = Prg::from_entropy();
    let xs: Vec<f64> = (0..count).map(|_| (prg.next_u128() % 16_000_000) as f64 / 1e6 - 8.0).collect();
    let fx: Vec<i64> = xs.iter().map(|&x| (x * (fmt.f as f64).exp2()).round() as i64).collect();
    let xa: Vec<u64> = fx.iter().map(|_| prg.next_u128() as u64).collect();
    let xb: Vec<u64> = fx.iter().zip(&xa).map(|(&v, &a)| (v as u64).wrapping_sub(a)).collect();
    let sk = CkksSecretKey::generate(&params, &mut prg);
    let pk = sk.public_key(&params, &mut prg);
    let (ev, key_bytes) = conversion_evaluator(&params, &sk, &fmt, &mut prg)?;
    let link = LinkModel::parse(net).map_err(LinearError::BadParams)?;
    let (mut cs, mut cc) = linked_pair(link);
    let p2 = params.clone();
    let (seed_s, seed_c) = (prg.gen_block(), prg.gen_block());
    let server = std::thread::spawn(move || -> Result<_, LinearError> {
        let ch: &mut dyn Channel = &mut *cs;
        let (mut m, setup) = warm_mpc(Role::Server, ch, seed_s)?;
        let s0 = ch.stats();
        let t0 = Instant::now();
        let cts = shares_to_ckks_server(ch, &mut m, &ev, &xa, top, scale, &fmt)?;
        let t1 = t0.elapsed().as_secs_f64();
        let s1 = ch.stats();
        let t2 = Instant::now();
        let out = ckks_to_shares_server(ch, &mut m, &ev, &pk, &cts, count, &fmt, how)?;
        let t3 = t2.elapsed().as_secs_f64();
        let s2 = ch.stats();
        Ok((out, setup, [(s0, s1, t1), (s1, s2, t3)]))
    });
    let ch: &mut dyn Channel = &mut *cc;
    let client = (|| -> Result<_, LinearError> {
        let (mut m, _) = warm_mpc(Role::Client, ch, seed_c)?;
        shares_to_ckks_client(ch, &mut m, &p2, &sk, &xb, top, scale, &fmt)?;
        ckks_to_shares_client(ch, &mut m, &p2, &sk, count, scale, &fmt, how)
    })();
    let (out_s, setup_bytes, phases) = server.join().map_err(|_| LinearError::Unsupported("server thread panicked".into()))??;
    let out_c = client?;
    let ulp = (-(fmt.f as f64)).exp2();
    let max_abs_error = (0..count).fold(0f64, |m, i| m.max((out_s[i].wrapping_add(out_c[i]) as i64 as f64 * ulp - xs[i]).abs()));
    let k = ciphertexts_for(&params, count);
    Ok(phases
        .iter()
        .zip([("mpc_to_ckks", top), ("ckks_to_mpc", level)])
        .map(|((a, b, secs), (direction, lvl))| {
            let sent = b.bytes_sent - a.bytes_sent;
            let recv = b.bytes_recv - a.bytes_recv;
            ConvertBench {
                direction,
                block,
                n: params.n(),
                count,
                ciphertexts: k,
                packing: packing_name(packing),
                wire_ciphertexts: wire_ciphertexts(&fmt, k),
                level: lvl,
                field_to_ring: if direction == "ckks_to_mpc" { kind_name(how) } else { "-" },
                net: net.to_string(),
                bytes_total: sent + recv,
                bytes_server_to_client: sent,
                bytes_client_to_server: recv,
                rounds_server: b.rounds - a.rounds,
                seconds: *secs,
                max_abs_error,
                session_setup_bytes: setup_bytes,
                conjugation_key_bytes: key_bytes,
            }
        })
        .collect())
}

/// The communication of one fused block of a [`FusionPlan`] (one JSON line): inside a block the
/// server evaluates CKKS alone, so the block's traffic is exactly its conversions — each
/// MPC → CKKS input and each CKKS → MPC output at the planned shape, run here for real at the
/// block's Table 6 parameter set. The CKKS evaluation itself (server-local) is not timed here.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BlockBench {
    pub model: String,
    pub tokens: usize,
    pub block: usize,
    pub params: String,
    pub n: usize,
    /// The field → ring actually used: `exact` needs the base prime alone to hold the
    /// coefficients; where it cannot (e.g. Table 6 set 5, Δ = 2^46 over a 60-bit base prime) the
    /// block falls back to `local`.
    pub field_to_ring_used: &'static str,
    /// `real` or `complex` ([`SlotPacking`]).
    pub packing: &'static str,
    pub to_ckks_tensors: usize,
    pub to_ckks_ciphertexts: usize,
    /// Ciphertexts that travel for the `to_ckks` tensors (fewer with complex packing).
    pub to_ckks_wire_ciphertexts: usize,
    pub to_ckks_bytes: u64,
    pub to_mpc_tensors: usize,
    pub to_mpc_ciphertexts: usize,
    pub to_mpc_wire_ciphertexts: usize,
    pub to_mpc_bytes: u64,
    pub bytes_total: u64,
    /// Rounds as counted by the server's channel.
    pub rounds_server: u64,
    pub seconds: f64,
    /// Max |reconstructed − input| over every converted value.
    pub max_abs_error: f64,
    /// The session's OT bootstrap (base OTs, first COT extension each way), paid once before
    /// the first block and not in any block's bytes.
    pub session_setup_bytes: u64,
    /// Serialized conjugation key of the block's parameter set (complex packing; 0 otherwise),
    /// sent once per set with the other evaluation keys, not in any block's bytes.
    pub conjugation_key_bytes: u64,
}

fn shared_random(count: usize, fmt: &ConvFormat, prg: &mut Prg) -> (Vec<f64>, Vec<u64>, Vec<u64>) {
    let xs: Vec<f64> = (0..count).map(|_| (prg.next_u128() % 16_000_000) as f64 / 1e6 - 8.0).collect();
    let a: Vec<u64> = xs.iter().map(|_| prg.next_u128() as u64).collect();
    let b = xs.iter().zip(&a).map(|(&x, &r)| ((x * (fmt.f as f64).exp2()).round() as i64 as u64).wrapping_sub(r)).collect();
    (xs, a, b)
}

/// Runs the conversions of every fused block of `plan` (one layer) with `how` for CKKS → MPC.
pub fn bench_plan_blocks(plan: &FusionPlan, how: FieldToRing, packing: SlotPacking, net: &str) -> Result<Vec<BlockBench>, LinearError> {
    let fmt = ConvFormat { packing, ..ConvFormat::DEFAULT };
    let link = LinkModel::parse(net).map_err(LinearError::BadParams)?;
    let mut prg = Prg::from_entropy();
    struct Job {
        block: usize,
        params: CkksParams,
        how: FieldToRing,
        name: String,
        to_ckks: Vec<usize>,
        to_mpc: Vec<usize>,
    }
    let mut jobs = Vec::new();
    for b in plan.blocks() {
        let set: usize = b.params.name.trim_start_matches("blb-").parse().map_err(|_| LinearError::BadParams(format!("parameter set {}", b.params.name)))?;
        let params = CkksParams::blb_block(set)?;
        let how = if conversion_level(&params, params.default_scale(), &fmt, how).is_ok() { how } else { FieldToRing::Local };
        jobs.push(Job {
            block: b.index,
            params,
            how,
            name: b.params.name.clone(),
            to_ckks: b.to_ckks.iter().map(|c| c.shape.rows * c.shape.cols).collect(),
            to_mpc: b.to_mpc.iter().map(|c| c.shape.rows * c.shape.cols).collect(),
        });
    }
    // Inputs of every conversion, shared up front (the client's key per parameter set).
    type Data = (Vec<f64>, Vec<u64>, Vec<u64>);
    let mut inputs: Vec<(Vec<Data>, Vec<Vec<f64>>)> = Vec::new();
    for j in &jobs {
        let ins = j.to_ckks.iter().map(|&c| shared_random(c, &fmt, &mut prg)).collect();
        let outs = j.to_mpc.iter().map(|&c| shared_random(c, &fmt, &mut prg).0).collect();
        inputs.push((ins, outs));
    }
    let mut keys: Vec<(CkksSecretKey, nectar_he::ckks::CkksPublicKey)> = Vec::new();
    let mut server_jobs: Vec<(CkksEvaluator, nectar_he::ckks::CkksPublicKey, FieldToRing)> = Vec::new();
    let mut key_bytes = Vec::new();
    for j in &jobs {
        let sk = CkksSecretKey::generate(&j.params, &mut prg);
        let pk = sk.public_key(&j.params, &mut prg);
        let (ev, kb) = conversion_evaluator(&j.params, &sk, &fmt, &mut prg)?;
        server_jobs.push((ev, pk.clone(), j.how));
        key_bytes.push(kb);
        keys.push((sk, pk));
    }
    let (mut cs, mut cc) = linked_pair(link);
    let (seed_s, seed_c, seed_e) = (prg.gen_block(), prg.gen_block(), prg.gen_block());
    let server_inputs: Vec<(Vec<Vec<u64>>, Vec<Vec<f64>>)> = inputs.iter().map(|(i, o)| (i.iter().map(|d| d.1.clone()).collect(), o.clone())).collect();
    let server = std::thread::spawn(move || -> Result<_, LinearError> {
        let ch: &mut dyn Channel = &mut *cs;
        let (mut m, setup) = warm_mpc(Role::Server, ch, seed_s)?;
        let mut enc_prg = Prg::new(seed_e);
        let mut out = Vec::new();
        for ((ev, pk, how), (ins, outs)) in server_jobs.iter().zip(&server_inputs) {
            let params = ev.params();
            let scale = params.default_scale();
            let s0 = ch.stats();
            let t0 = Instant::now();
            for x in ins {
                shares_to_ckks_server(ch, &mut m, ev, x, params.max_level(), scale, &fmt)?;
            }
            let s1 = ch.stats();
            let mut shares = Vec::new();
            for vals in outs {
                // The block's output, as the server holds it: ciphertexts under the client's key.
                let cts = vals
                    .chunks(params.slots())
                    .map(|c| pk.encrypt(params, &params.encode_real(c, params.max_level(), scale)?, &mut enc_prg))
                    .collect::<Result<Vec<_>, _>>()?;
                shares.push(ckks_to_shares_server(ch, &mut m, ev, pk, &cts, vals.len(), &fmt, *how)?);
            }
            let s2 = ch.stats();
            out.push((s0, s1, s2, t0.elapsed().as_secs_f64(), shares));
        }
        Ok((out, setup))
    });
    let ch: &mut dyn Channel = &mut *cc;
    let client = (|| -> Result<_, LinearError> {
        let (mut m, _) = warm_mpc(Role::Client, ch, seed_c)?;
        let mut out = Vec::new();
        for ((j, (sk, _)), (ins, outs)) in jobs.iter().zip(&keys).zip(&inputs) {
            let scale = j.params.default_scale();
            for d in ins {
                shares_to_ckks_client(ch, &mut m, &j.params, sk, &d.2, j.params.max_level(), scale, &fmt)?;
            }
            let mut shares = Vec::new();
            for vals in outs {
                shares.push(ckks_to_shares_client(ch, &mut m, &j.params, sk, vals.len(), scale, &fmt, j.how)?);
            }
            out.push(shares);
        }
        Ok(out)
    })();
    let (srv, setup_bytes) = server.join().map_err(|_| LinearError::Unsupported("server thread panicked".into()))??;
    let cli = client?;
    let ulp = (-(fmt.f as f64)).exp2();
    let mut lines = Vec::new();
    for ((((j, (s0, s1, s2, secs, sh)), ch_sh), (_, outs)), kb) in jobs.iter().zip(srv).zip(cli).zip(&inputs).zip(key_bytes) {
        let mut max_abs_error = 0f64;
        for ((a, b), vals) in sh.iter().zip(&ch_sh).zip(outs) {
            for i in 0..vals.len() {
                max_abs_error = max_abs_error.max((a[i].wrapping_add(b[i]) as i64 as f64 * ulp - vals[i]).abs());
            }
        }
        let cts = |v: &[usize]| v.iter().map(|&c| ciphertexts_for(&j.params, c)).sum();
        let wire = |v: &[usize]| v.iter().map(|&c| wire_ciphertexts(&fmt, ciphertexts_for(&j.params, c))).sum();
        let to_ckks_bytes = s1.bytes_total() - s0.bytes_total();
        let to_mpc_bytes = s2.bytes_total() - s1.bytes_total();
        lines.push(BlockBench {
            model: plan.model.clone(),
            tokens: plan.tokens,
            block: j.block,
            params: j.name.clone(),
            n: j.params.n(),
            field_to_ring_used: kind_name(j.how),
            packing: packing_name(packing),
            to_ckks_tensors: j.to_ckks.len(),
            to_ckks_ciphertexts: cts(&j.to_ckks),
            to_ckks_wire_ciphertexts: wire(&j.to_ckks),
            to_ckks_bytes,
            to_mpc_tensors: j.to_mpc.len(),
            to_mpc_ciphertexts: cts(&j.to_mpc),
            to_mpc_wire_ciphertexts: wire(&j.to_mpc),
            to_mpc_bytes,
            bytes_total: to_ckks_bytes + to_mpc_bytes,
            rounds_server: s2.rounds - s0.rounds,
            seconds: secs,
            max_abs_error,
            session_setup_bytes: setup_bytes,
            conjugation_key_bytes: kb,
        });
    }
    Ok(lines)
}

/// One fused-matmul measurement (one JSON line): the op counted on the slot simulator
/// (`kind = "simulated"`, whose counts equal the CKKS evaluator's — tested at small rings) or
/// run on CKKS (`kind = "ckks"`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct MatmulBench {
    pub op: String,
    pub kind: &'static str,
    pub model_shape: String,
    pub tokens: usize,
    pub slots: usize,
    /// Table 6 set of a `ckks` run.
    pub params: Option<String>,
    pub rotations: u64,
    pub key_switches: u64,
    pub ct_ct_mults: u64,
    pub ct_pt_mults: u64,
    pub rescales: u64,
    pub depth: usize,
    /// Distinct rotation steps (Galois keys).
    pub rotation_steps: usize,
    pub seconds: f64,
    /// Of which plaintext encoding (ckks runs).
    pub encode_seconds: f64,
    pub max_abs_error: f64,
}

/// BLB §5's fused matmul `op` (`qk`, `sv`, `attn_out`, `ffn1`, `ffn2`) at `model_shape`
/// (`bert-base`, `bert-large`, `gpt2`) with `tokens` tokens; with `real_block`, also on CKKS
/// at that Table 6 parameter set.
pub fn bench_matmul(op: &str, model_shape: &str, tokens: usize, real_block: Option<usize>) -> Result<Vec<MatmulBench>, LinearError> {
    use nectar_linear::ckks_matmul::{plan_counts, run_ckks, BlbOp, ModelShape};
    let bop = match op {
        "qk" => BlbOp::Qk,
        "sv" => BlbOp::Sv,
        "attn_out" => BlbOp::AttnOut,
        "ffn1" => BlbOp::Ffn1,
        "ffn2" => BlbOp::Ffn2,
        _ => return Err(LinearError::BadParams(format!("fused matmul '{op}' (qk, sv, attn_out, ffn1, ffn2)"))),
    };
    let mut shape = match model_shape {
        "bert-large" => ModelShape::BERT_LARGE,
        "gpt2" => ModelShape::GPT2_BASE,
        "bert-base" => ModelShape::BERT_BASE,
        s => return Err(LinearError::BadParams(format!("model shape '{s}' (bert-base, bert-large, gpt2)"))),
    };
    shape.tokens = tokens;
    let t0 = Instant::now();
    let plan = plan_counts(bop, &shape)?;
    let sim_seconds = t0.elapsed().as_secs_f64();
    let line = |kind, params: Option<String>, c: &nectar_he::ckks::EvalCounts, seconds, encode_seconds, max_abs_error| MatmulBench {
        op: op.to_string(),
        kind,
        model_shape: model_shape.to_string(),
        tokens,
        slots: shape.slots,
        params,
        rotations: c.rotations,
        key_switches: c.key_switches,
        ct_ct_mults: c.ct_ct_mults,
        ct_pt_mults: c.ct_pt_mults,
        rescales: c.rescales,
        depth: plan.depth,
        rotation_steps: plan.rotation_steps.len(),
        seconds,
        encode_seconds,
        max_abs_error,
    };
    let mut out = vec![line("simulated", None, &plan.counts, sim_seconds, 0.0, plan.max_abs_err)];
    if let Some(b) = real_block {
        let params = CkksParams::blb_block(b)?;
        let r = run_ckks(bop, &shape, &params, Prg::from_entropy().gen_block())?;
        out.push(line("ckks", Some(format!("blb-{b}")), &r.counts, r.seconds, r.encode_seconds, r.max_abs_err));
    }
    Ok(out)
}

/// One fused block of one layer run for real (one JSON line of `--op fused`): its MPC → CKKS
/// inputs converted from shares of the twin's values, the block evaluated by the server under
/// CKKS ([`nectar_blb::exec`]), its CKKS → MPC outputs converted back, and the
/// reconstructed outputs compared with the twin ([`nectar_blb::eval`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct FusedRunBench {
    pub model: String,
    pub tokens: usize,
    pub block: usize,
    pub params: String,
    pub n: usize,
    pub packing: &'static str,
    pub field_to_ring_used: &'static str,
    pub depth: u32,
    /// Levels the run used (the plan's depth, checked).
    pub levels_used: usize,
    pub to_ckks_ciphertexts: usize,
    pub to_ckks_bytes: u64,
    pub to_mpc_ciphertexts: usize,
    pub to_mpc_bytes: u64,
    pub bytes_total: u64,
    pub rounds_server: u64,
    /// Both conversions' wall time.
    pub convert_seconds: f64,
    /// The server's CKKS evaluation of the block (server-local).
    pub ckks_seconds: f64,
    pub rotations: u64,
    pub key_switches: u64,
    pub ct_ct_mults: u64,
    pub ct_pt_mults: u64,
    /// Distinct rotation steps (Galois keys the client sends once per parameter set).
    pub rotation_steps: usize,
    /// Every key the client sends for the block ([`nectar_blb::fused_ckks`]: public,
    /// relinearisation, conjugation and rotation keys): once per parameter set in a session,
    /// not in `bytes_total`.
    pub galois_key_bytes: u64,
    /// Max |reconstructed − twin| over the block's outputs, and the outputs' largest magnitude.
    pub max_abs_error: f64,
    pub max_abs_value: f64,
    pub session_setup_bytes: u64,
}

/// Runs every fused block of layer 0 → 1 of `arch` (random weights of the real shapes) for real;
/// `only` restricts to one block.
pub fn bench_fused_blocks(
    arch: crate::fixtures::random::RandomArch,
    tokens: usize,
    only: Option<usize>,
    how: FieldToRing,
    packing: SlotPacking,
    net: &str,
) -> Result<Vec<FusedRunBench>, LinearError> {
    use nectar_model::config::ModelConfig;
    use nectar_blb::eval::{eval_values, p4_pieces, Tensor};
    use nectar_blb::exec::layouts;
    use nectar_blb::{FusedCall, FusedCkks, LayerGraph, LayerSpec, Operand, Part};
    use nectar_linear::layer::blb_fused::executable_params;
    use nectar_model::reference::BlockWeights;
    use nectar_model::secure::blb_call::simulate;
    use nectar_model::secure::blb_spec::{block_config, layer_params};
    let me = |e: nectar_model::ModelError| LinearError::BadParams(e.to_string());
    let be = |e: nectar_blb::BlbError| LinearError::BadParams(e.to_string());
    let se = |e: nectar_model::secure::SecureError| LinearError::BadParams(e.to_string());
    let config = crate::fixtures::random::random_config(arch, Some(2));
    let names: fn(usize) -> nectar_model::block::BlockNames = match &config {
        ModelConfig::Bert(_) => nectar_model::bert::block_names,
        ModelConfig::Gpt2(_) => nectar_model::gpt2::block_names,
        _ => return Err(LinearError::Unsupported(format!("--op fused: {} (bert-base, bert-large, gpt2)", arch.name()))),
    };
    let cfg = block_config(&config);
    if !tokens.is_power_of_two() {
        return Err(LinearError::BadShape(format!("--op fused: {tokens} tokens (a power of two: the multi-head packings have no padded keys)")));
    }
    let rw = crate::fixtures::random::RandomWeights::new(7);
    let bw = BlockWeights::load(&rw, &cfg, names, 2).map_err(me)?;
    let (n0, n1) = (names(0), names(1));
    let p = layer_params(&bw, &cfg, &n0, &n1).map_err(me)?;
    let spec = LayerSpec::from(&cfg);
    let g = LayerGraph::build(&spec, tokens);
    let plan = FusionPlan::for_layer(&spec, arch.name(), 2, tokens).map_err(be)?;
    let fmt = ConvFormat { packing, ..ConvFormat::DEFAULT };
    let mut prg = Prg::from_entropy();
    // The twin: a random pre-activation (±3) as the previous activation's pieces, a random
    // residual (±1), and every operator's value.
    let mut rand = |cols: usize, r: f64| Tensor::new(tokens, cols, (0..tokens * cols).map(|_| ((prg.next_u128() % 2_000_001) as f64 / 1e6 - 1.0) * r).collect());
    let u = rand(cfg.intermediate, 3.0).map_err(be)?;
    let mut inputs: Vec<Tensor> = p4_pieces(&u).into();
    inputs.push(rand(cfg.hidden, 1.0).map_err(be)?);
    let vals = eval_values(&g, &p, &inputs).map_err(be)?;
    let value = |v: Operand| match v {
        Operand::Input(i) => &inputs[i],
        Operand::Op(i) => &vals[i],
    };
    let link = LinkModel::parse(net).map_err(LinearError::BadParams)?;
    let ulp = (-(fmt.f as f64)).exp2();
    let mut lines = Vec::new();
    for b in plan.blocks().filter(|b| only.is_none_or(|o| o == b.index)) {
        let (l, s) = (tokens, b.params.n / 2);
        // The call both parties derive from the plan (the server's with the weights).
        let mut call_s = FusedCall::new(&g, Part::Steady, b, tokens, Some(&p)).map_err(be)?;
        let mut call_c = FusedCall::new(&g, Part::Steady, b, tokens, None).map_err(be)?;
        let exec = simulate(&cfg, &call_c).map_err(se)?;
        (call_s.exec, call_c.exec) = (exec.clone(), exec);
        let want = layouts(&g, &call_s.ops, l, s).map_err(be)?;
        // Shares of the twin's values of every input (row-major).
        let (mut srv_in, mut cli_in) = (Vec::new(), Vec::new());
        for &v in &call_s.inputs {
            let t = value(v);
            let a: Vec<u64> = t.data.iter().map(|_| prg.next_u128() as u64).collect();
            let c: Vec<u64> = t.data.iter().zip(&a).map(|(&x, &r)| ((x / ulp).round() as i64 as u64).wrapping_sub(r)).collect();
            srv_in.push(a);
            cli_in.push(c);
        }
        let (mut cs, mut cc) = linked_pair(link);
        let (seed_s, seed_c) = (prg.gen_block(), prg.gen_block());
        let (key_seed_s, key_seed_c) = (prg.gen_block(), prg.gen_block());
        let (srv, cli) = std::thread::scope(|sc| -> Result<_, LinearError> {
            let (call_s, srv_in) = (&call_s, &srv_in);
            let server = sc.spawn(move || -> Result<_, LinearError> {
                let ch: &mut dyn Channel = &mut *cs;
                let (mut m, setup) = warm_mpc(Role::Server, ch, seed_s)?;
                let mut prg = Prg::new(key_seed_s);
                let mut fc = FusedCkks::with_conversion(fmt, how);
                fc.keys(ch, &mut prg, Role::Server, call_s)?;
                let xs: Vec<(&[u64], u32)> = srv_in.iter().map(|x| (x.as_slice(), fmt.l)).collect();
                let run = fc.run(ch, &mut m, call_s, &xs)?;
                Ok((run, setup, fc.key_bytes(), fc.keyed_steps(b.params.n, call_s.exec.set_depth)))
            });
            let ch: &mut dyn Channel = &mut *cc;
            let client = (|| -> Result<_, LinearError> {
                let (mut m, _) = warm_mpc(Role::Client, ch, seed_c)?;
                let mut prg = Prg::new(key_seed_c);
                let mut fc = FusedCkks::with_conversion(fmt, how);
                fc.keys(ch, &mut prg, Role::Client, &call_c)?;
                let xs: Vec<(&[u64], u32)> = cli_in.iter().map(|x| (x.as_slice(), fmt.l)).collect();
                fc.run(ch, &mut m, &call_c, &xs)
            })();
            let srv = server.join().map_err(|_| LinearError::Unsupported("server thread panicked".into()))??;
            Ok((srv, client?))
        })?;
        let params = executable_params(b.params.n, call_s.exec.depth)?;
        let (run, setup, keys, rotation_steps) = srv;
        // Reconstruct every output and compare it with the twin.
        let (mut max_abs_error, mut max_abs_value) = (0f64, 0f64);
        for ((&i, a), c) in call_s.outputs.iter().zip(&run.shares).zip(&cli.shares) {
            for ((x, y), want) in a.iter().zip(c).zip(&vals[i].data) {
                let got = x.wrapping_add(*y) as i64 as f64 * ulp;
                max_abs_error = max_abs_error.max((got - want).abs());
                max_abs_value = max_abs_value.max(want.abs());
            }
        }
        let cts = |v: Operand| {
            let (_, cols) = call_s.shape(v);
            want.get(&v).map_or(0, |lay| lay.cts(cols, l, s))
        };
        let used_how = if conversion_level(&params, params.default_scale(), &fmt, how).is_ok() { how } else { FieldToRing::Local };
        lines.push(FusedRunBench {
            model: arch.name().into(),
            tokens,
            block: b.index,
            params: format!("N={} {}x40+60+40 bits", params.n(), call_s.exec.depth),
            n: params.n(),
            packing: packing_name(packing),
            field_to_ring_used: kind_name(used_how),
            depth: b.depth,
            levels_used: run.levels_used,
            to_ckks_ciphertexts: call_s.inputs.iter().map(|&v| cts(v)).sum(),
            to_ckks_bytes: run.to_ckks_bytes,
            to_mpc_ciphertexts: call_s.outputs.iter().map(|&i| cts(Operand::Op(i))).sum(),
            to_mpc_bytes: run.to_mpc_bytes,
            bytes_total: run.to_ckks_bytes + run.to_mpc_bytes,
            rounds_server: run.rounds,
            convert_seconds: run.convert_seconds,
            ckks_seconds: run.ckks_seconds,
            rotations: run.counts.rotations,
            key_switches: run.counts.key_switches,
            ct_ct_mults: run.counts.ct_ct_mults,
            ct_pt_mults: run.counts.ct_pt_mults,
            rotation_steps,
            galois_key_bytes: keys.galois + keys.base,
            max_abs_error,
            max_abs_value,
            session_setup_bytes: setup,
        });
    }
    Ok(lines)
}
