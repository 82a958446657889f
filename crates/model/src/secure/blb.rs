//! BLB's transformer layers end to end (BLB §4–6, App. B; suite `matmul = blb-fused`): the
//! layer stack of any BERT / GPT-2 / ViT model run as the fusion planner's items — fused CKKS
//! blocks between CKKS ↔ MPC conversions ([`fused_block`], on the engine's session) and, between them, the MPC
//! operators of BLB App. B on additive shares.
//!
//! The stack of `K` layers is the planner's [`Part`]s: `First` (from the stack's input to layer
//! 0's activation pieces), `Steady` `K − 1` times (layer `i − 1`'s tail fused with layer `i`'s
//! head, BLB Fig. 10) and `Last` (layer `K − 1`'s tail). Each part is planned once
//! ([`plan_graph`]) and its values are handed to the next part by name.
//!
//! MPC operators (BLB App. B; the protocols of the engine's backend, the same code on the
//! fixed-point twin):
//! - `rsqrt`: `1/√(var + ε)` by the suite's rsqrt (`nectar_nn::rsqrt::ALL`) on the LayerNorm's
//!   variances ([`nectar_nn::norm::variance_range`]);
//! - `max`: the row maximum per head by [`nectar_nn::max::max_rows_coarse`] (the tree in
//!   [`cmp_bits`]` + 1` bits, its comparisons on a coarse grid; the maxima extended back to 64);
//! - `rec`: the softmax denominator's reciprocal by [`nectar_nn::reciprocal::reciprocal`]
//!   (domain and ring by [`rec_domain`]: the row maximum contributes `exp(0) = 1`);
//! - `cmp`: `x ≥ t` as the negation of a less-than with the public threshold `t`
//!   ([`nectar_blb::eval`]'s thresholds: `T_exp`, P4's `±2.7`, `0`), on the shares reduced
//!   to [`cmp_bits`] and on [`CMP_LESS`]'s grid ([`TEXP_LESS`]'s for `T_exp`; ours: BLB fixes
//!   neither); the comparisons of one value (GeLU's three) are one batched call;
//! - `mux`: `v·b` for one comparison bit; for a segment `[lo, hi)` the bit is `lo ⊕ hi`, which
//!   equals `lo ∧ ¬hi` because the thresholds increase (`hi ⇒ lo`) and costs no AND protocol;
//! - products moved out of a block (`softmax.normalize`, [`nectar_blb::MpcRole::Peeled`]):
//!   the engine's fixed-point product (softmax's in [`PROD_BITS`] bits);
//! - additions of values already in MPC (`x − max`, the softmax row sum, the activation's
//!   pieces): local.
//!
//! Ring widths (ours; BLB runs its MPC in `Z_{2^43}` at scale 13, REFERENCE §5): values enter
//! and leave the blocks as shares in the engine's `Z_{2^64}`, except those whose only way on
//! is a block (the activation's pieces and their sums, softmax's `P`): they stay in
//! [`piece_bits`] (32), where their muxes cost half. Comparisons, the row maximum, the
//! reciprocal and `P`'s product run in narrower rings of their own ([`cmp_bits`],
//! [`rec_domain`], [`PROD_BITS`]); shares are reduced locally and results extended back.
//!
//! Shapes BLB's executor takes ([`nectar_blb::exec`]): `L` a power of two (the multi-head
//! packings) and every `L × C` tensor filling whole ciphertexts. Any other token count is
//! padded (ours; [`padded_plans`]): to the shortest such `L`, the padded keys masked out of
//! softmax, the padded rows dropped at the end. KV-cache decoding is not planned by BLB (a
//! clear error).

use crate::block::{BlockConfig, BlockNames};
use crate::reference::BlockWeights;
use crate::secure::blb_call::simulate;
use crate::secure::blb_spec::layer_params;
use crate::secure::engine::{timed, Engine};
use crate::secure::SecureError;
use crate::secure::WeightSource;
use nectar_blb::eval::{threshold, Tensor};
use nectar_blb::exec::{layouts, pack, run_block, unpack, CtTensor};
use nectar_blb::{plan_graph, BlockExec, FusedCall, FusedCkks, LayerGraph, LayerParams, LayerSpec, LinearKind, MpcRole, NonlinearKind, OpKind, Operand, Part, PlanItem};
use nectar_linear::ckks_matmul::SlotSim;
use nectar_math::FixedPoint;
use nectar_nn::backend::enc;
use nectar_nn::max::CoarseCompare;
use nectar_nn::reciprocal::RecipParams;
use nectar_nn::poly::{less_than_in_ring, LessMode};
use nectar_nn::NnError;
use std::collections::HashMap;

/// Ring width of the comparisons `x ≥ t` (GeLU's three, softmax's `t ≥ T_exp`) and of those
/// of the row maximum's tree (ours). Every value compared comes out of a block's conversion,
/// which bounds it by `|x| < 2^value_bits` (2^12, [`nectar_linear::ckks_linear::conv_format`]),
/// or is `x − max` of two such values; so `|x − t| < 2^(value_bits + 1)` for the thresholds
/// (`|t| ≤ 13`), and the tree's differences `a − c` of two row elements are as small. The sign
/// of such a value at scale `2^f` is bit `value_bits + f + 1`: the comparisons run in
/// `Z_2^(value_bits + f + 2)` (32 at `f = 18`; at [`CMP_LESS`]'s grid the millionaire covers
/// 17 bits), the tree itself one bit wider (its comparisons take a narrower ring,
/// [`nectar_nn::max::CoarseCompare`]), where its maxima (`|m| < 2^value_bits`) extend back to
/// 64 bits with the extension's offset `2^(bits − 2)`. Before: 37 / 36 bits (`|x| < 2^17`).
pub fn cmp_bits(fp: FixedPoint) -> u32 {
    (nectar_linear::ckks_linear::conv_format(fp.l(), fp.f()).value_bits + fp.f() + 2).min(fp.l() - 2)
}

/// The softmax denominator's reciprocal over rows of `keys` scores (ours): the domain
/// `[1, 2^hi)` with `2^hi > keys·e^(1/2)` (each term is at most `e^t ≤ e^(1/2)`: the coarse
/// maximum's slack, and `(1 + t/64)^64 ≤ e^t`; the maximum's own term is `≥ 1`), and the ring
/// `Z_{2^(hi + 2f + 3)}`, the narrowest [`nectar_nn::reciprocal`] takes (its normalisation
/// product `x·2^−e` before truncation). GPT-2 at 64 tokens: `[1, 2^7)` in 46 bits; BERT at 128:
/// `[1, 2^8)` in 47 bits, instead of `[1, 2^13)` in 64. The result, one per row in
/// `(2^−hi, 1]`, is extended back to 64 bits (one COT each).
pub fn rec_domain(keys: usize, f: u32) -> Result<(RecipParams, u32), SecureError> {
    let bound = keys.max(1) as f64 * 0.5f64.exp();
    let hi = bound.log2().floor() as i32 + 1;
    if hi > f as i32 {
        return Err(SecureError::Unsupported(format!("BLB softmax over {keys} keys: row sums up to 2^{hi} exceed the format's f = {f}")));
    }
    Ok((RecipParams { hi, ..nectar_nn::reciprocal::RECIP_SOFTMAX }, hi as u32 + 2 * f + 3))
}

/// Ring width of softmax's product `P = e·r` (ours): `e ≤ e^(1/2)` (the coarse max's slack)
/// and `r ≤ 1`, so the product before truncation is `< 2^(2·18 + 1)` and the truncation's
/// `|x| < 2^(l − 2)` holds in 45 bits, the widest ring bOLEe's 2-prime set serves (2/3 of a
/// 64-bit product); `P` is extended back to 64 bits (one COT per element).
pub const PROD_BITS: u32 = 45;

/// Grid of GeLU's comparisons `x ≥ t`: BumbleBee's approximate less-than (§V-A1) on `2^−4`,
/// the grid of nectar's own P4 GeLU ([`nectar_nn::gelu::P4_BOLT`]; BLB fixes none), so at
/// `f = 18` the millionaire runs on 32 − 1 − 14 = 17 bits ([`cmp_bits`]). A bit may be wrong
/// only for `x` within `2^−4` of `t`, where the pieces it chooses between differ by at most
/// 0.0118 at `±2.7` (P4's own jump there is 0.0112) and 0.0048 at `0`. The twin reproduces the
/// grid exactly; the secure bit differs from the twin's only within one grid step (the lost
/// carry of the local shift).
pub const CMP_LESS: LessMode = nectar_nn::poly::BUMBLEBEE_LESS;

/// Grid of softmax's `t ≥ T_exp` (ours): whole units (`2^0`, 13 millionaire bits instead of
/// 17). A bit may be wrong only for `t` within 1 of `T_exp = −13`, where the entry kept or
/// zeroed is `(1 + t/64)^64 ≤ e^−12 ≈ 6e−6` against a row sum `≥ 1`: the order of the clip's
/// own error (BLB's `T_exp` drops entries up to `e^−13 ≈ 2.3e−6`). The twin uses the same grid.
pub const TEXP_LESS: LessMode = LessMode::Approx { precision: 0 };


/// The session state key of BLB's fused-block keys ([`FusedCkks`], made at the first block:
/// they depend on the model's shapes, which the session setup does not know).
pub const STATE_KEY: &str = "blb-fused";

fn be<E: std::error::Error + Send + Sync + 'static>(e: E) -> NnError {
    NnError::Backend(Box::new(e))
}

/// The session's BLB executor state, made on first use (no message: its keys go at each
/// parameter set's first block).
fn fused_state<'a>(states: &'a mut HashMap<&'static str, nectar_linear::protocol::State>, fp: FixedPoint) -> Result<&'a mut FusedCkks, NnError> {
    states
        .entry(STATE_KEY)
        .or_insert_with(|| Box::new(FusedCkks::new(fp.l(), fp.f())))
        .downcast_mut::<FusedCkks>()
        .ok_or_else(|| NnError::BadArgument(format!("session state '{STATE_KEY}' is not BLB's")))
}

/// The CKKS keys BLB's fused block `call` needs that the server lacks (sent by the client
/// once per session: a parameter set's public, relinearisation and conjugation keys, the
/// block's rotation keys); nothing once they are there. The twin has no keys.
fn fused_keys<E: Engine>(e: &mut E, call: &FusedCall<'_>) -> Result<(), NnError> {
    let fp = e.format();
    match e.session() {
        Some(s) => fused_state(s.states, fp)?.keys(s.ch, s.prg, s.role, call).map_err(be),
        None => Ok(()),
    }
}

/// One of BLB's fused CKKS blocks: shares of `call.inputs` in (each with its ring width, at
/// most the engine's format's), shares of `call.outputs` out (in that format). Secure:
/// conversions with their stochastic rounding (a few units of `2^-f`) and CKKS noise (about
/// `2^-25` relative); twin ([`fused_block_twin`]): the block on the slot simulator.
fn fused_block<E: Engine>(e: &mut E, call: &FusedCall<'_>, inputs: &[(&Vec<u64>, u32)]) -> Result<Vec<Vec<u64>>, NnError> {
    let fp = e.format();
    if let Some(s) = e.session() {
        let fused = fused_state(s.states, fp)?;
        if fused.format() != (fp.l(), fp.f()) {
            return Err(NnError::BadArgument(format!("BLB block on shares of ({}, {}); the session converts {:?}", fp.l(), fp.f(), fused.format())));
        }
        let xs: Vec<(&[u64], u32)> = inputs.iter().map(|&(x, bits)| (x.as_slice(), bits)).collect();
        return Ok(fused.run(s.ch, s.mpc, call, &xs).map_err(be)?.shares);
    }
    let l = fp.l();
    let wide = inputs
        .iter()
        .map(|&(x, bits)| if bits < l { e.extend(x, bits, l) } else { Ok(x.clone()) })
        .collect::<Result<Vec<_>, _>>()?;
    let xs: Vec<&[u64]> = wide.iter().map(|x| x.as_slice()).collect();
    fused_block_twin(fp, call, &xs)
}

/// The fixed-point twin of a fused block: the block on the slot simulator (the executor's
/// packings and operator order, exact slot arithmetic) from the decoded inputs, outputs
/// re-encoded. Needs the server's weights.
pub fn fused_block_twin(fp: FixedPoint, call: &FusedCall<'_>, inputs: &[&[u64]]) -> Result<Vec<Vec<u64>>, NnError> {
    let bad = |e: nectar_blb::BlbError| NnError::BadArgument(e.to_string());
    let p = call.params.ok_or_else(|| NnError::BadArgument("the fused block's twin needs the weights".into()))?;
    let s = call.block.params.n / 2;
    let l = call.tokens;
    let want = layouts(call.graph, &call.ops, l, s).map_err(bad)?;
    let sim = SlotSim::new(s);
    let lin = |e: nectar_linear::LinearError| NnError::BadArgument(e.to_string());
    let params = nectar_linear::layer::blb_fused::executable_params(call.block.params.n, call.exec.set_depth).map_err(lin)?;
    let top = call.exec.start_level(params.max_level());
    // The level the secure run converts the outputs at: a block deeper than its plan fails
    // here too, not only under CKKS.
    let fmt = nectar_linear::ckks_linear::conv_format(fp.l(), fp.f());
    let floor = nectar_linear::ckks_convert::conversion_level(&params, params.default_scale(), &fmt, nectar_linear::ckks_convert::FieldToRing::Local).map_err(lin)?;
    let mut ins = HashMap::new();
    for (&v, x) in call.inputs.iter().zip(inputs) {
        let (rows, cols) = call.shape(v);
        let t = Tensor::new(rows, cols, fp.decode_vec(x)).map_err(bad)?;
        let lay = want[&v];
        let cts = pack(&t, lay, l, s).map_err(bad)?.into_iter().map(|c| sim.encrypt(c, top)).collect();
        ins.insert(v, CtTensor { rows, cols, layout: lay, cts });
    }
    let res = run_block(&sim, call.graph, p, &call.ops, l, &ins).map_err(bad)?;
    call.outputs
        .iter()
        .map(|i| {
            let t = &res[i];
            if let Some(c) = t.cts.iter().find(|c| c.level < floor) {
                return Err(NnError::BadArgument(format!(
                    "BLB block {}: {} at level {} below the conversion level {floor} (deeper than {} levels)",
                    call.block.index, call.graph.ops[*i].name, c.level, call.exec.depth
                )));
            }
            let v: Vec<Vec<f64>> = t.cts.iter().map(|c| c.v.clone()).collect();
            let out = unpack(&v, t.rows, t.cols, t.layout, l, s).map_err(bad)?;
            out.data.iter().map(|&x| fp.encode(x).map_err(|e| NnError::BadArgument(e.to_string()))).collect()
        })
        .collect()
}

/// A value of the layer on shares: a fixed-point tensor in `Z_{2^bits}` (the engine's ring, or
/// [`piece_bits`] for a value that only travels into a block) or comparison bits.
enum Value<V, B> {
    Val(V, u32),
    Bit(B),
}

/// Ring width of the values whose only way on is a fused block or an addition on the way to
/// one (GeLU's and SiLU's pieces and their sums, softmax's `P`; ours): the conversion already
/// bounds them by `|x| < 2^value_bits` (2^12, [`nectar_linear::ckks_linear::conv_format`]), so
/// `value_bits + f + 2` bits (32 at `f = 18`) hold them with the extension's heuristic offset,
/// and a mux in that ring sends half the bits of one in `Z_{2^64}`. The conversion extends
/// from the narrow ring itself (one COT per value, as from 64 bits).
pub fn piece_bits(fp: FixedPoint) -> u32 {
    (nectar_linear::ckks_linear::conv_format(fp.l(), fp.f()).value_bits + fp.f() + 2).min(fp.l())
}

/// Runs `f` with the engine in `Z_{2^bits}` at the same `f`, and back.
fn in_ring<E: Engine, T>(e: &mut E, bits: u32, f: impl FnOnce(&mut E) -> Result<T, NnError>) -> Result<T, SecureError> {
    let full = e.format();
    let narrow = FixedPoint::new(bits, full.f()).map_err(|err| SecureError::Unsupported(err.to_string()))?;
    e.set_format(narrow);
    let r = f(e);
    e.set_format(full);
    Ok(r?)
}

/// `x ∈ Z_{2^bits}` in the engine's ring (extended when narrower: BumbleBee App. E, correct
/// for `|x| < 2^(bits − 2)`, which every narrow value satisfies).
fn widen<E: Engine>(e: &mut E, x: &E::Val, bits: u32) -> Result<E::Val, SecureError> {
    let l = e.format().l();
    Ok(if bits < l { e.extend(x, bits, l)? } else { x.clone() })
}

/// `x ∈ Z_{2^bits}` in `Z_{2^to}`: reduced (local) or extended.
fn narrow<E: Engine>(e: &mut E, x: &E::Val, bits: u32, to: u32) -> Result<E::Val, SecureError> {
    Ok(match to.cmp(&bits) {
        std::cmp::Ordering::Less => e.reduce(x, to)?,
        std::cmp::Ordering::Equal => x.clone(),
        std::cmp::Ordering::Greater => e.extend(x, bits, to)?,
    })
}

/// Runs the layer stack `0..layers` of `cfg` under BLB (module doc) from the stack's input `x`
/// (`n × hidden` shares) to its output.
#[allow(clippy::too_many_arguments)]
pub fn run_layers<E: Engine>(
    e: &mut E,
    src: Option<&dyn WeightSource>,
    cfg: &BlockConfig,
    names: impl Fn(usize) -> BlockNames,
    layers: usize,
    x: E::Val,
    n: usize,
    progress: Option<&super::Progress<'_>>,
) -> Result<E::Val, SecureError> {
    if layers == 0 {
        return Ok(x);
    }
    if e.format().l() != 64 {
        return Err(SecureError::Unsupported(format!("suite blb: shares of {} bits (the conversions take 64)", e.format().l())));
    }
    let weights = match src {
        Some(w) => Some(BlockWeights::load(w, cfg, &names, layers)?),
        None => None,
    };
    // `n` real tokens run as `rows` (padded_plans); rows `n..rows` are copies of row 0 (local:
    // the positions are public), so every per-token operator sees values of a real token's
    // size (a zero row's variance would leave rsqrt's domain); their outputs are dropped.
    let (keys, (n, plans)) = (n, padded_plans(cfg, n, layers)?);
    let d = cfg.hidden;
    let x = if n > keys {
        let idx: Vec<usize> = (0..n).flat_map(|r| if r < keys { r * d..(r + 1) * d } else { 0..d }).collect();
        e.gather(&x, &idx)?
    } else {
        x
    };
    let l = e.format().l();
    let mut carry: HashMap<String, Value<E::Val, E::Bit>> = HashMap::from([("x".to_string(), Value::Val(x, l))]);
    for step in 0..=layers {
        let part = match step {
            0 => Part::First,
            s if s == layers => Part::Last,
            _ => Part::Steady,
        };
        let plan = &plans[&part];
        let (prev, cur) = (names(step.saturating_sub(1)), names(step.min(layers - 1)));
        let params = weights.as_ref().map(|w| layer_params(w, cfg, &prev, &cur)).transpose()?;
        let inputs = plan
            .graph
            .inputs
            .iter()
            .map(|i| carry.remove(&i.name).ok_or_else(|| SecureError::Unsupported(format!("BLB: {:?} has no input {}", part, i.name))))
            .collect::<Result<Vec<_>, _>>()?;
        carry = run_part(e, plan, part, n, params.as_ref(), inputs, cfg.eps)?;
        if let Some(p) = progress {
            p(step.min(layers), layers);
        }
    }
    let y = match carry.remove("x") {
        Some(Value::Val(x, bits)) => widen(e, &x, bits)?,
        _ => return Err(SecureError::Unsupported("BLB: the last part has no output x".into())),
    };
    if keys < n {
        return Ok(e.gather(&y, &(0..keys * d).collect::<Vec<_>>())?);
    }
    Ok(y)
}

/// The part plans of `layers` layers for `keys` real tokens, and the rows they run at (ours;
/// BLB pads nothing): the shortest power of two `L ≥ keys` at which every block's tensors fit
/// their packings ([`FusedCall::check`]: each `L × C` tensor fills whole ciphertexts of its
/// block's ring), trying up to [`MAX_PAD`]× the next power of two and BLB's
/// [`nectar_blb::MAX_TOKENS`]. Padded keys are masked ([`LayerGraph::build_padded`]). Both
/// parties derive the same from the public shapes.
fn padded_plans(cfg: &BlockConfig, keys: usize, layers: usize) -> Result<(usize, HashMap<Part, PartPlan>), SecureError> {
    if keys == 0 {
        return Err(SecureError::Unsupported("suite blb: an input of no tokens".into()));
    }
    let first = keys.next_power_of_two();
    let mut refusal = None;
    let mut l = first;
    while l <= first * MAX_PAD && l <= nectar_blb::MAX_TOKENS {
        match packed_parts(cfg, l, keys, layers)? {
            Ok(parts) => return Ok((l, simulate_parts(cfg, l, parts)?)),
            Err(e) => refusal = refusal.or(Some(e)),
        }
        l *= 2;
    }
    Err(match refusal {
        Some(e) => SecureError::Unsupported(format!("{e} (and at every padded length up to {})", (l / 2).max(first))),
        None => SecureError::Unsupported(format!("suite blb: {keys} tokens exceed the {} a plan packs", nectar_blb::MAX_TOKENS)),
    })
}

/// The Galois keys a session of `layers` layers of `cfg` at `tokens` tokens sends (both
/// parties derive them from the plan): per parameter set `(N, depth)`, each rotation step with
/// the levels below the set's top its key is cut at ([`BlockExec::key_drops`]), and the rows
/// the input is padded to.
pub fn galois_key_plan(cfg: &BlockConfig, tokens: usize, layers: usize) -> Result<(usize, std::collections::BTreeMap<(usize, u32), std::collections::BTreeMap<i64, u32>>), SecureError> {
    let (l, plans) = padded_plans(cfg, tokens, layers)?;
    let mut sets: std::collections::BTreeMap<(usize, u32), std::collections::BTreeMap<i64, u32>> = Default::default();
    for plan in plans.values() {
        for b in plan.items.iter().filter_map(|i| match i {
            PlanItem::Ckks(b) => Some(b),
            PlanItem::Mpc(_) => None,
        }) {
            if let Some(x) = plan.execs.get(&b.index) {
                sets.entry((b.params.n, x.set_depth)).or_default().extend(x.key_drops.iter().copied());
            }
        }
    }
    Ok((l, sets))
}

/// How far [`padded_plans`] pads: at most this many times the next power of two (a layer of
/// 384 columns fills a ciphertext of `N = 32768` from 128 rows on, so MiniLM runs one token
/// at 128; the tiny test models' 16 columns need 1024).
pub const MAX_PAD: usize = 128;

/// A part's graph and plan.
type PartItems = (Part, LayerGraph, Vec<PlanItem>);

/// Every part's graph and plan at `l` rows of which `keys` are real; `Ok(Err(_))` when a
/// block's tensors do not fit their packings at this `l`.
fn packed_parts(cfg: &BlockConfig, l: usize, keys: usize, layers: usize) -> Result<Result<Vec<PartItems>, nectar_blb::BlbError>, SecureError> {
    let mut parts = Vec::new();
    for part in [Part::First, Part::Steady, Part::Last] {
        if part == Part::Steady && layers < 2 {
            continue;
        }
        let g = LayerGraph::build_padded(&LayerSpec::from(cfg), l, keys, part);
        let items = plan_graph(&g, l)?;
        for b in items.iter().filter_map(|i| match i {
            PlanItem::Ckks(b) => Some(b),
            PlanItem::Mpc(_) => None,
        }) {
            if let Err(e) = FusedCall::new(&g, part, b, l, None)?.check() {
                return Ok(Err(e));
            }
        }
        parts.push((part, g, items));
    }
    Ok(Ok(parts))
}

/// The parts' plans with every block simulated ([`simulate`]: levels and rotation steps) and
/// one parameter set per ring degree (the deepest of its blocks).
fn simulate_parts(cfg: &BlockConfig, l: usize, parts: Vec<PartItems>) -> Result<HashMap<Part, PartPlan>, SecureError> {
    let mut plans = Vec::new();
    for (part, g, items) in parts {
        let mut execs = HashMap::new();
        for b in items.iter().filter_map(|i| match i {
            PlanItem::Ckks(b) => Some(b),
            PlanItem::Mpc(_) => None,
        }) {
            let call = FusedCall::new(&g, part, b, l, None)?;
            execs.insert(b.index, (b.params.n, simulate(cfg, &call)?));
        }
        plans.push((part, g, items, execs));
    }
    let mut deepest: HashMap<usize, u32> = HashMap::new();
    for (.., execs) in &plans {
        for (n, x) in execs.values() {
            let d = deepest.entry(*n).or_insert(0);
            *d = (*d).max(x.depth);
        }
    }
    // Each Galois key at the highest level any block of its set rotates at (the fewest levels
    // below the set's top).
    let mut drops: HashMap<(usize, i64), u32> = HashMap::new();
    for (.., execs) in &plans {
        for (n, x) in execs.values() {
            let x = BlockExec { set_depth: deepest[n], ..x.clone() };
            for (k, d) in x.set_relative_drops() {
                let e = drops.entry((*n, k)).or_insert(d);
                *e = (*e).min(d);
            }
        }
    }
    plans
        .into_iter()
        .map(|(part, g, items, execs)| {
            let execs = execs
                .into_iter()
                .map(|(i, (n, x))| {
                    let key_drops = x.steps.iter().map(|&k| (k, drops.get(&(n, k)).copied().unwrap_or(0))).collect();
                    (i, BlockExec { set_depth: deepest[&n], key_drops, ..x })
                })
                .collect();
            Ok((part, PartPlan::new(g, items, execs)?))
        })
        .collect()
}

/// One part's plan as [`run_part`] runs it: the planner's items, each block's simulated
/// execution, and what the MPC operators need of the plan, derived once per part (not per
/// layer).
struct PartPlan {
    graph: LayerGraph,
    items: Vec<PlanItem>,
    execs: HashMap<usize, BlockExec>,
    /// Per item: for [`PlanItem::Mpc`], its operators' indices into `graph.ops` (in order).
    mpc_ops: Vec<Vec<usize>>,
    /// Per operator: every consumer in this part is a block or an addition (or there is none:
    /// handed to the next part, whose additions feed a block), so its value may stay in
    /// [`piece_bits`].
    to_block: Vec<bool>,
}

impl PartPlan {
    fn new(graph: LayerGraph, items: Vec<PlanItem>, execs: HashMap<usize, BlockExec>) -> Result<Self, SecureError> {
        let index = |name: &str| {
            graph.ops.iter().position(|o| o.name == name).ok_or_else(|| SecureError::Unsupported(format!("BLB plan: no operator {name}")))
        };
        let mut in_ckks = vec![false; graph.ops.len()];
        let mut mpc_ops = Vec::with_capacity(items.len());
        for item in &items {
            match item {
                PlanItem::Ckks(b) => {
                    for o in &b.ops {
                        in_ckks[index(&o.name)?] = true;
                    }
                    mpc_ops.push(Vec::new());
                }
                PlanItem::Mpc(ops) => mpc_ops.push(ops.iter().map(|m| index(&m.name)).collect::<Result<_, _>>()?),
            }
        }
        let to_block = (0..graph.ops.len())
            .map(|i| {
                graph.ops.iter().enumerate().all(|(j, o)| {
                    !o.operands.contains(&Operand::Op(i)) || in_ckks[j] || o.kind == OpKind::Linear(LinearKind::EwaddCc)
                })
            })
            .collect();
        Ok(PartPlan { graph, items, execs, mpc_ops, to_block })
    }
}

/// One part: its plan's items in order; returns the graph's outputs by name.
fn run_part<E: Engine>(
    e: &mut E,
    plan: &PartPlan,
    part: Part,
    n: usize,
    params: Option<&LayerParams<'_>>,
    inputs: Vec<Value<E::Val, E::Bit>>,
    eps: f64,
) -> Result<HashMap<String, Value<E::Val, E::Bit>>, SecureError> {
    let (g, execs) = (&plan.graph, &plan.execs);
    let mut vals: HashMap<Operand, Value<E::Val, E::Bit>> = inputs.into_iter().enumerate().map(|(i, v)| (Operand::Input(i), v)).collect();
    for (item, idx) in plan.items.iter().zip(&plan.mpc_ops) {
        match item {
            PlanItem::Ckks(b) => {
                let mut call = FusedCall::new(g, part, b, n, params)?;
                call.exec = execs.get(&b.index).cloned().ok_or_else(|| SecureError::Unsupported(format!("BLB block {} was not simulated", b.index)))?;
                let ins = call
                    .inputs
                    .iter()
                    .map(|v| match vals.get(v) {
                        Some(Value::Val(x, bits)) => Ok((x, *bits)),
                        _ => Err(SecureError::Unsupported(format!("BLB block {}: input {} is not a value in MPC", b.index, g.value_name(*v)))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let name = match part {
                    Part::Steady => format!("blb.block{}", b.index),
                    Part::First => format!("blb.first.block{}", b.index),
                    Part::Last => format!("blb.last.block{}", b.index),
                };
                timed(e, "blb.keys", |e| Ok(fused_keys(e, &call)?))?;
                let outs = timed(e, &name, |e| Ok(fused_block(e, &call, &ins)?))?;
                if outs.len() != call.outputs.len() {
                    return Err(SecureError::Unsupported(format!("BLB block {}: {} outputs for {}", b.index, outs.len(), call.outputs.len())));
                }
                let l = e.format().l();
                for (&i, y) in call.outputs.iter().zip(outs) {
                    vals.insert(Operand::Op(i), Value::Val(y, l));
                }
            }
            PlanItem::Mpc(ops) => {
                for (m, &i) in ops.iter().zip(idx) {
                    if vals.contains_key(&Operand::Op(i)) {
                        continue; // a comparison already made in its batch
                    }
                    if g.ops[i].kind == OpKind::Nonlinear(NonlinearKind::Cmp) {
                        // Every comparison of this stretch on the same value, in one call.
                        let x = g.ops[i].operands.first();
                        let batch: Vec<usize> = idx
                            .iter()
                            .copied()
                            .filter(|&j| g.ops[j].kind == OpKind::Nonlinear(NonlinearKind::Cmp) && g.ops[j].operands.first() == x)
                            .collect();
                        let row = match batch.len() {
                            1 => format!("blb-mpc.{}", m.name),
                            _ => format!("blb-mpc.{}.cmp", m.name.split('.').next().unwrap_or(&m.name)),
                        };
                        let bits = timed(e, &row, |e| compare(e, g, &batch, &vals))?;
                        for (j, b) in batch.into_iter().zip(bits) {
                            vals.insert(Operand::Op(j), Value::Bit(b));
                        }
                        continue;
                    }
                    let to_block = plan.to_block[i];
                    let y = timed(e, &format!("blb-mpc.{}", m.name), |e| mpc_op(e, g, i, m.role, &vals, eps, n, to_block))?;
                    vals.insert(Operand::Op(i), y);
                }
            }
        }
    }
    g.outputs
        .iter()
        .map(|(name, v)| match vals.remove(v) {
            Some(x @ Value::Val(..)) => Ok((name.clone(), x)),
            _ => Err(SecureError::Unsupported(format!("BLB: output {name} was not computed in MPC"))),
        })
        .collect()
}

/// The comparisons `x ≥ t` of `batch` (`cmp` operators on the same `x`, thresholds by
/// [`threshold`]) as one batched less-than (BumbleBee §V-A2: the millionaire's OTs serve every
/// threshold), in `Z_{2^cmp_bits}` on [`CMP_LESS`]'s grid ([`TEXP_LESS`]'s for `T_exp`); each
/// bit negated locally.
fn compare<E: Engine>(
    e: &mut E,
    g: &LayerGraph,
    batch: &[usize],
    vals: &HashMap<Operand, Value<E::Val, E::Bit>>,
) -> Result<Vec<E::Bit>, SecureError> {
    let first = batch.first().map(|&j| &g.ops[j]).ok_or_else(|| SecureError::Unsupported("BLB: an empty comparison batch".into()))?;
    let x = match first.operands.first().and_then(|v| vals.get(v)) {
        Some(Value::Val(x, bits)) => widen(e, x, *bits)?,
        _ => return Err(SecureError::Unsupported(format!("BLB {}: operand 0 not in MPC", first.name))),
    };
    let ts = batch.iter().map(|&j| threshold(&g.ops[j].name)).collect::<Result<Vec<_>, _>>()?;
    let less = if batch.iter().all(|&j| g.ops[j].name == "softmax.cmp_texp") { TEXP_LESS } else { CMP_LESS };
    let lt = less_than_in_ring(e, &x, cmp_bits(e.format()), &ts, less)?;
    if lt.len() != batch.len() {
        return Err(SecureError::Unsupported(format!("less-than returned {} bit vectors for {} thresholds", lt.len(), batch.len())));
    }
    Ok(lt.iter().map(|b| e.not(b)).collect::<Result<Vec<_>, _>>()?)
}

/// Indices broadcasting a `rows × groups` scalar over a `rows × cols` tensor.
fn broadcast_index(rows: usize, cols: usize, groups: usize) -> Vec<usize> {
    let w = cols / groups.max(1);
    (0..rows * cols).map(|p| (p / cols) * groups + (p % cols) / w).collect()
}

/// One MPC operator of the plan (module doc) on the engine's backend; `to_block`: its value
/// only travels into a block (mux and `P` outputs then stay in [`piece_bits`]).
fn mpc_op<E: Engine>(
    e: &mut E,
    g: &LayerGraph,
    i: usize,
    role: MpcRole,
    vals: &HashMap<Operand, Value<E::Val, E::Bit>>,
    eps: f64,
    keys: usize,
    to_block: bool,
) -> Result<Value<E::Val, E::Bit>, SecureError> {
    let op = &g.ops[i];
    let l = e.format().l();
    let pieces = piece_bits(e.format());
    let missing = |k: usize| SecureError::Unsupported(format!("BLB {}: operand {k} not in MPC", op.name));
    let val = |k: usize| -> Result<(&E::Val, u32), SecureError> {
        match op.operands.get(k).and_then(|v| vals.get(v)) {
            Some(Value::Val(x, bits)) => Ok((x, *bits)),
            _ => Err(missing(k)),
        }
    };
    let bit = |k: usize| -> Result<&E::Bit, SecureError> {
        match op.operands.get(k).and_then(|v| vals.get(v)) {
            Some(Value::Bit(b)) => Ok(b),
            _ => Err(missing(k)),
        }
    };
    // Operand `k` in the engine's ring.
    let full = |e: &mut E, k: usize| -> Result<E::Val, SecureError> {
        let (x, bits) = val(k)?;
        widen(e, x, bits)
    };
    let (rows, cols) = (op.input.rows, op.input.cols);
    let groups = op.operands.get(1).map_or(1, |&v| g.shape(v).cols);
    let (out, bits) = match (op.kind, role) {
        (OpKind::Linear(LinearKind::EwaddCc), _) => {
            // In the narrow ring when both operands are (the activation's pieces).
            let ((a, wa), (b, wb)) = (val(0)?, val(1)?);
            if wa < l && wa == wb {
                let y = in_ring(e, wa, |e| if op.subtract { e.sub(a, b) } else { e.add(a, b) })?;
                (y, wa)
            } else {
                let (a, b) = (widen(e, a, wa)?, widen(e, b, wb)?);
                (if op.subtract { e.sub(&a, &b)? } else { e.add(&a, &b)? }, l)
            }
        }
        (OpKind::Linear(LinearKind::SaddCc), _) => {
            let (a, b) = (full(e, 0)?, full(e, 1)?);
            let s = e.gather(&b, &broadcast_index(rows, cols, groups))?;
            (if op.subtract { e.sub(&a, &s)? } else { e.add(&a, &s)? }, l)
        }
        (OpKind::Linear(LinearKind::Sum), _) => {
            let a = full(e, 0)?;
            (e.sum_groups(&a, cols / op.output.cols.max(1))?, l)
        }
        (OpKind::Linear(LinearKind::SmulCc), MpcRole::Peeled) if op.name == "softmax.normalize" => {
            // `P = e·r` in `Z_{2^PROD_BITS}`, then narrowed to the pieces' ring for a block or
            // extended back.
            let (x, r) = (full(e, 0)?, full(e, 1)?);
            let (x, r) = (e.reduce(&x, PROD_BITS)?, e.reduce(&r, PROD_BITS)?);
            let r = e.gather(&r, &broadcast_index(rows, cols, groups))?;
            let p = in_ring(e, PROD_BITS, |e| e.mul(&x, &r))?;
            if to_block {
                (narrow(e, &p, PROD_BITS, pieces)?, pieces)
            } else {
                (widen(e, &p, PROD_BITS)?, l)
            }
        }
        (OpKind::Linear(LinearKind::SmulCc), MpcRole::Peeled) => {
            let (a, b) = (full(e, 0)?, full(e, 1)?);
            let s = e.gather(&b, &broadcast_index(rows, cols, groups))?;
            (e.mul(&a, &s)?, l)
        }
        (OpKind::Linear(LinearKind::EwmulCc), MpcRole::Peeled) => {
            let (a, b) = (full(e, 0)?, full(e, 1)?);
            (e.mul(&a, &b)?, l)
        }
        (OpKind::Nonlinear(NonlinearKind::Rsqrt), _) => {
            let c = enc(e, eps)?;
            let a = full(e, 0)?;
            let v = e.add_const(&a, &[c])?;
            let (rsqrt, r) = (e.suite().rsqrt, nectar_nn::norm::variance_range(eps, e.format()));
            (rsqrt.eval(e, &v, &r)?, l)
        }
        (OpKind::Nonlinear(NonlinearKind::Rec), _) => {
            // In the ring of `rec_domain` (the shares reduced locally), the result extended back.
            let (p, bits) = rec_domain(keys, e.format().f())?;
            let a = full(e, 0)?;
            let y = narrow(e, &a, l, bits)?;
            let r = in_ring(e, bits, |e| nectar_nn::reciprocal::reciprocal(e, &y, &p))?;
            (widen(e, &r, bits)?, l)
        }
        (OpKind::Nonlinear(NonlinearKind::Max), _) => {
            // The tree in `Z_{2^(cmp_bits + 1)}`, its comparisons on the coarse grid of
            // `CoarseCompare::for_rows` (an element within ⌈log2 width⌉·2^−p ≤ 1/2 below the
            // row's maximum: softmax is shift-invariant and `(1 + t/64)^64` is accurate for
            // such small `t > 0`), the maxima extended back (correct for |max| < 2^(cmp_bits − 1 − f)).
            let per = op.output.cols;
            let a = full(e, 0)?;
            let tree = cmp_bits(e.format()) + 1;
            let y = e.reduce(&a, tree)?;
            let width = cols / per.max(1);
            let m = in_ring(e, tree, |e| nectar_nn::max::max_rows_coarse(e, &y, rows * per, width, CoarseCompare::for_rows(tree - 1, width)))?;
            (widen(e, &m, tree)?, l)
        }
        (OpKind::Nonlinear(NonlinearKind::Mux), _) => {
            let on = match op.operands.len() {
                2 => bit(1)?.clone(),
                _ => e.xor(bit(1)?, bit(2)?)?,
            };
            let (v, bits) = val(0)?;
            if to_block {
                let v = narrow(e, v, bits, pieces)?;
                (in_ring(e, pieces, |e| e.mux(&on, &v))?, pieces)
            } else {
                let v = widen(e, v, bits)?;
                (e.mux(&on, &v)?, l)
            }
        }
        (kind, role) => return Err(SecureError::Unsupported(format!("BLB {}: {kind:?} in MPC ({role:?})", op.name))),
    };
    Ok(Value::Val(out, bits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_nn::backend::decode;
    use nectar_nn::{Backend, PlainBackend};

    #[test]
    fn rec_domain_follows_the_row_length() {
        let (p, bits) = rec_domain(64, 18).unwrap();
        assert_eq!((p.lo, p.hi, p.iters, bits), (0, 7, 3, 46));
        let (p, bits) = rec_domain(128, 18).unwrap();
        assert_eq!((p.hi, bits), (8, 47));
        assert!(rec_domain(1 << 20, 18).is_err(), "row sums beyond 2^f are refused");
        // The twin's reciprocal in that ring over the whole domain, up to keys·e^(1/2).
        for keys in [64usize, 128] {
            let (p, bits) = rec_domain(keys, 18).unwrap();
            let mut b = PlainBackend::new(FixedPoint::new(bits, 18).unwrap()).unwrap();
            let top = keys as f64 * 0.5f64.exp();
            let xs: Vec<f64> = (0..=200).map(|i| 1.0 + (top - 1.0) * i as f64 / 200.0).collect();
            let enc: Vec<u64> = xs.iter().map(|&x| nectar_nn::backend::enc(&b, x).unwrap()).collect();
            let v = b.constant(&enc).unwrap();
            let r = nectar_nn::reciprocal::reciprocal(&mut b, &v, &p).unwrap();
            for (x, y) in xs.iter().zip(decode(&b, &r)) {
                assert!((y - 1.0 / x).abs() < 1e-4 / x + 4.0 * 2f64.powi(-18), "keys {keys}: 1/{x} = {y}");
            }
        }
    }

    #[test]
    fn comparisons_hold_over_the_conversions_bound() {
        // GeLU's input anywhere in (−2^12, 2^12) (the conversion's bound) and softmax's
        // `x − max` in (−2^13, 1/2]: every `x ≥ t` right in `Z_2^cmp_bits` (outside one grid
        // step of `t`; the twin has no carry to lose).
        let fp = FixedPoint::BUMBLEBEE;
        assert_eq!(cmp_bits(fp), 32);
        let mut b = PlainBackend::new(fp).unwrap();
        let gelu = vec![-4095.9, -2.8, -2.6, -0.2, 0.2, 2.6, 2.8, 4095.9];
        let texp = vec![-8191.5, -4095.9, -14.2, -13.5, -12.5, -0.2, 0.0, 0.4];
        for (less, ts, xs) in [(CMP_LESS, vec![-2.7, 0.0, 2.7], gelu), (TEXP_LESS, vec![nectar_blb::eval::T_EXP], texp)] {
            let x: Vec<u64> = xs.iter().map(|&v| nectar_nn::backend::enc(&b, v).unwrap()).collect();
            let v = b.constant(&x).unwrap();
            let lt = less_than_in_ring(&mut b, &v, cmp_bits(fp), &ts, less).unwrap();
            for (t, bits) in ts.iter().zip(&lt) {
                for (x, &below) in xs.iter().zip(bits) {
                    assert_eq!(below, x < t, "{x} < {t}");
                }
            }
        }
        // The row maximum's tree, one bit wider, on rows spanning the whole bound.
        let row = [-4095.9, 4095.9, -4000.0, 17.0, 4095.0, -1.0, 0.0, 3.5];
        let x: Vec<u64> = row.iter().chain(row.iter().rev()).map(|&v| nectar_nn::backend::enc(&b, -v).unwrap()).chain(row.iter().map(|&v| nectar_nn::backend::enc(&b, v).unwrap())).collect();
        let v = b.constant(&x).unwrap();
        let tree = cmp_bits(fp) + 1;
        let y = b.reduce(&v, tree).unwrap();
        b.set_format(FixedPoint::new(tree, fp.f()).unwrap());
        let cmp = CoarseCompare::for_rows(tree - 1, 8);
        let m = nectar_nn::max::max_rows_coarse(&mut b, &y, 3, 8, cmp).unwrap();
        let m = b.extend(&m, tree, 64).unwrap();
        b.set_format(fp);
        for (got, want) in decode(&b, &m).into_iter().zip([4095.9, 4095.9, 4095.9]) {
            let ulp = 2f64.powi(-18);
            assert!(got <= want + ulp && got >= want - cmp.slack(8) - ulp, "max {got} for {want}");
        }
    }

    #[test]
    fn pieces_fit_the_conversions_bound() {
        // |x| < 2^value_bits (the conversion's bound) in Z_2^(value_bits + f + 2): the
        // extension's heuristic range |x| < 2^(bits − 2) at scale 2^f.
        let fp = FixedPoint::BUMBLEBEE;
        let bits = piece_bits(fp);
        assert_eq!(bits, 32);
        let fmt = nectar_linear::ckks_linear::conv_format(fp.l(), fp.f());
        assert!(fmt.value_bits + fp.f() <= bits - 2);
        let mut b = PlainBackend::new(fp).unwrap();
        let x: Vec<u64> = [-4095.5f64, -1.0, 0.0, 2.7, 4095.5].iter().map(|&v| nectar_nn::backend::enc(&b, v).unwrap()).collect();
        let v = b.constant(&x).unwrap();
        let n = b.reduce(&v, bits).unwrap();
        assert_eq!(b.extend(&n, bits, 64).unwrap(), v);
    }
}
