//! The two-party side of BLB's fused blocks (BLB §6, Alg. 1–2; suite `matmul = blb-fused`):
//! the client's CKKS keys per parameter set and, per block, the MPC → CKKS conversions of its
//! inputs, the server's CKKS evaluation ([`crate::exec::run_block`]) and the
//! CKKS → MPC conversions of its outputs.
//!
//! Keys. The client holds every secret key. The first block of a parameter set (one per ring
//! degree `N`, as deep as its deepest block, [`crate::call::BlockExec::set_depth`])
//! brings its public, relinearisation and conjugation keys (one message, client → server); the
//! first occurrence of each block (part, index) brings the Galois keys of its rotation steps
//! that the set does not have yet, in frames of [`KEYS_PER_FRAME`]. Both parties know the steps
//! from the slot simulator ([`crate::call::BlockExec`]: public shapes, zero weights), so
//! keys flow one way, with no request. Keys are generated once per session and reused by every
//! layer.
//!
//! Parameters ([`executable_params`], with the protocol `matmul = blb-fused`): BLB Table 6's ring degree `N` of the planned set and one
//! 40-bit prime per level of the block's depth above a 60 + 40-bit base the CKKS → MPC
//! conversion keeps, `Δ = 2^40`, a 60-bit special prime, validated for 128-bit security at
//! construction. Table 6's own sets need EVA's waterline rescaling (several products per 60-bit
//! prime), which our evaluator does not do: it rescales after every product.

use crate::call::FusedCall;
use crate::error::BlbError;
use crate::exec::{layouts, run_block, CtTensor, Layout};
use crate::graph::{Operand, Part};
use nectar_he::ckks::{CkksParams, EvalCounts};
use nectar_linear::ckks_convert::{ckks_to_shares_client, ckks_to_shares_server, conversion_level, shares_to_ckks_client_at, shares_to_ckks_server_at, ConvFormat, FieldToRing, Slots};
use nectar_linear::ckks_linear::{conv_format, Side};
use nectar_linear::ckks_matmul::{CkksOps, SlotOps};
use nectar_linear::LinearError;
use nectar_linear::layer::blb_fused::executable_params;
use nectar_math::Prg;
use nectar_mpc::Mpc;
use nectar_net::{Channel, Role};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Instant;

/// Rotation keys per message: one key at `N = 2^15` with ten primes is 47 MB, and a frame
/// must stay under the channel's 1 GiB limit; the client also holds only one chunk at a time.
const KEYS_PER_FRAME: usize = 8;

/// One parameter set's keys.
struct KeySet {
    params: CkksParams,
    side: Side,
    /// Rotation steps the server holds keys for.
    keyed: BTreeSet<i64>,
}

/// Bytes of key material sent so far (client → server), by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyBytes {
    /// Public, relinearisation and conjugation keys.
    pub base: u64,
    /// Rotation (Galois) keys.
    pub galois: u64,
}

/// One run of a fused block ([`FusedCkks::run`]): this party's output shares and what the run
/// cost (the CKKS side is the server's; zero on the client).
#[derive(Clone, Debug, Default)]
pub struct BlockRun {
    /// Shares of `call.outputs`, row-major.
    pub shares: Vec<Vec<u64>>,
    /// Bytes of the MPC → CKKS and the CKKS → MPC conversions (both directions each).
    pub to_ckks_bytes: u64,
    pub to_mpc_bytes: u64,
    /// This party's flights.
    pub rounds: u64,
    pub convert_seconds: f64,
    pub ckks_seconds: f64,
    /// The server's CKKS operations in the block.
    pub counts: EvalCounts,
    /// Levels the block used (the plan's depth; server).
    pub levels_used: usize,
}

/// One party's CKKS state for BLB's fused blocks in a session (module doc).
pub struct FusedCkks {
    fmt: ConvFormat,
    how: FieldToRing,
    sets: HashMap<(usize, u32), KeySet>,
    /// Blocks whose rotation keys have been exchanged.
    seen: HashSet<(Part, usize)>,
    keys: KeyBytes,
}

fn bad(e: BlbError) -> LinearError {
    LinearError::BadParams(e.to_string())
}

impl FusedCkks {
    /// Shares of `(l, f)` ([`conv_format`]: complex slot packing on the wire).
    pub fn new(l: u32, f: u32) -> Self {
        FusedCkks::with_conversion(conv_format(l, f), FieldToRing::Local)
    }

    /// With another conversion format and field → ring step (AGREEMENT; the benches compare
    /// BLB's real slot packing with ours).
    pub fn with_conversion(fmt: ConvFormat, how: FieldToRing) -> Self {
        FusedCkks { fmt, how, sets: HashMap::new(), seen: HashSet::new(), keys: KeyBytes::default() }
    }

    /// Distinct rotation steps keyed for the set `(n, depth)`.
    pub fn keyed_steps(&self, n: usize, depth: u32) -> usize {
        self.sets.get(&(n, depth)).map_or(0, |s| s.keyed.len())
    }

    /// The `(l, f)` of the shares it converts.
    pub fn format(&self) -> (u32, u32) {
        (self.fmt.l, self.fmt.f)
    }

    /// Key material sent so far.
    pub fn key_bytes(&self) -> KeyBytes {
        self.keys
    }

    /// The set of `(n, depth)`, its keys exchanged on first use.
    fn set(&mut self, ch: &mut dyn Channel, role: Role, n: usize, depth: u32, prg: &mut Prg) -> Result<&mut KeySet, LinearError> {
        if !self.sets.contains_key(&(n, depth)) {
            let params = executable_params(n, depth)?;
            self.fmt.check(params.n())?;
            let (side, bytes) = Side::exchange(ch, role, &params, prg)?;
            self.keys.base += bytes;
            self.sets.insert((n, depth), KeySet { params, side, keyed: BTreeSet::new() });
        }
        self.sets.get_mut(&(n, depth)).ok_or_else(|| LinearError::BadParams("key set".into()))
    }

    /// The keys `call` needs that the server lacks (module doc): the parameter set's on its
    /// first block, the block's rotation keys on its first occurrence; nothing afterwards.
    pub fn keys(&mut self, ch: &mut dyn Channel, prg: &mut Prg, role: Role, call: &FusedCall<'_>) -> Result<(), LinearError> {
        let (n, depth) = (call.block.params.n, call.exec.set_depth);
        if self.seen.contains(&(call.part, call.block.index)) {
            return Ok(());
        }
        let set = self.set(ch, role, n, depth, prg)?;
        let new: Vec<i64> = call.exec.steps.iter().copied().filter(|k| !set.keyed.contains(k)).collect();
        // Each key cut to the highest level any block of the set rotates by it at.
        let top = set.params.max_level();
        let at: Vec<(i64, usize)> = new.iter().map(|&k| (k, call.exec.key_level(k, top))).collect();
        let galois = set.side.send_rotation_keys_at(ch, &set.params, &at, KEYS_PER_FRAME, prg)?;
        ch.flush()?;
        set.keyed.extend(new);
        self.keys.galois += galois;
        self.seen.insert((call.part, call.block.index));
        Ok(())
    }

    /// Runs one fused block whose keys are in place ([`FusedCkks::keys`]; module doc):
    /// `inputs` are this party's shares of `call.inputs` (row-major `rows × cols` each), each
    /// with the width of its ring (at most the session's, and wide enough for the conversion:
    /// `f + 2 < bits`); returns its shares of `call.outputs` in the session's ring.
    pub fn run(&self, ch: &mut dyn Channel, mpc: &mut Mpc, call: &FusedCall<'_>, inputs: &[(&[u64], u32)]) -> Result<BlockRun, LinearError> {
        let (n, depth) = (call.block.params.n, call.exec.set_depth);
        if !self.seen.contains(&(call.part, call.block.index)) {
            return Err(LinearError::BadParams(format!("BLB block {} ran before its keys were exchanged", call.block.index)));
        }
        let fmt = self.fmt;
        let set = self.sets.get(&(n, depth)).ok_or_else(|| LinearError::BadParams("BLB: no keys for this parameter set".into()))?;
        let params = &set.params;
        let (l, s) = (call.tokens, params.slots());
        let top = call.exec.start_level(params.max_level());
        let scale = params.default_scale();
        let want = layouts(call.graph, &call.ops, l, s).map_err(bad)?;
        if inputs.len() != call.inputs.len() {
            return Err(LinearError::BadShape(format!("{} inputs for a block reading {}", inputs.len(), call.inputs.len())));
        }
        let how = if conversion_level(params, scale, &fmt, self.how).is_ok() { self.how } else { FieldToRing::Local };
        let mut run = BlockRun::default();
        let st0 = ch.stats();
        let t0 = Instant::now();
        // MPC → CKKS: each input's shares scattered to the slots its layout puts them in.
        let mut ins = HashMap::new();
        for (&v, &(x, bits)) in call.inputs.iter().zip(inputs) {
            // The input's own ring: the extension to 128 bits starts from it.
            let in_fmt = ConvFormat { l: bits, ..fmt };
            if bits > fmt.l {
                return Err(LinearError::BadParams(format!("BLB block input in Z_2^{bits}, wider than the session's Z_2^{}", fmt.l)));
            }
            in_fmt.check(params.n())?;
            let (rows, cols) = call.shape(v);
            if x.len() != rows * cols {
                return Err(LinearError::BadShape(format!("{} shares for a {rows}x{cols} input", x.len())));
            }
            let lay = want[&v];
            let pos = lay.positions(rows, cols, l, s).map_err(bad)?;
            let at: Vec<usize> = pos.iter().map(|p| p.2).collect();
            let xs: Vec<u64> = pos.iter().map(|p| x[p.0 * cols + p.1]).collect();
            let slots = Slots::scattered(&at, lay.cts(cols, l, s) * s);
            match &set.side {
                Side::Server { ev, .. } => {
                    let cts = shares_to_ckks_server_at(ch, mpc, ev, &xs, slots, top, scale, &in_fmt)?;
                    ins.insert(v, CtTensor { rows, cols, layout: lay, cts });
                }
                Side::Client { sk } => shares_to_ckks_client_at(ch, mpc, params, sk, &xs, slots, top, scale, &in_fmt)?,
            }
        }
        // The block (server), then CKKS → MPC of each output; the server sends the outputs'
        // scales (public: fixed by the primes and the plan) in the same flight.
        let outs: Vec<(usize, Layout, usize, usize)> = call
            .outputs
            .iter()
            .map(|&i| {
                let (rows, cols) = call.shape(Operand::Op(i));
                (i, want.get(&Operand::Op(i)).copied().unwrap_or(Layout::Spatial), rows, cols)
            })
            .collect();
        let count = |lay: Layout, rows: usize, cols: usize| if lay == Layout::Scalar { rows } else { lay.cts(cols, l, s) * s };
        let mut shares = Vec::with_capacity(outs.len());
        let mut convert_seconds = t0.elapsed().as_secs_f64();
        let st1 = ch.stats();
        let mut st2 = st1;
        match &set.side {
            Side::Server { ev, pk } => {
                let p = call.params.ok_or_else(|| LinearError::BadParams("the server must provide the weights".into()))?;
                let ops = CkksOps::new(ev);
                let c0 = ops.counts();
                let t1 = Instant::now();
                let res = run_block(&ops, call.graph, p, &call.ops, l, &ins).map_err(bad)?;
                run.ckks_seconds = t1.elapsed().as_secs_f64();
                run.counts = ops.counts() - c0;
                run.levels_used = top - res.values().flat_map(|t| t.cts.iter().map(|c| c.level())).min().unwrap_or(top);
                st2 = ch.stats();
                let t2 = Instant::now();
                let mut scales = Vec::with_capacity(8 * outs.len());
                for o in &outs {
                    let t = res.get(&o.0).ok_or_else(|| LinearError::BadParams("a block output was not computed".into()))?;
                    let c = t.cts.first().ok_or_else(|| LinearError::BadShape("an empty block output".into()))?;
                    scales.extend_from_slice(&c.scale().to_le_bytes());
                }
                ch.send(&scales)?;
                for &(i, lay, rows, cols) in &outs {
                    let t = &res[&i];
                    let cts = if lay == Layout::Scalar { &t.cts[..1] } else { &t.cts[..] };
                    shares.push(ckks_to_shares_server(ch, mpc, ev, pk, cts, count(lay, rows, cols), &fmt, how)?);
                }
                convert_seconds += t2.elapsed().as_secs_f64();
            }
            Side::Client { sk } => {
                let t2 = Instant::now();
                let msg = ch.recv()?;
                if msg.len() != 8 * outs.len() {
                    return Err(LinearError::Malformed(format!("{} bytes of output scales", msg.len())));
                }
                for (&(_, lay, rows, cols), b) in outs.iter().zip(msg.chunks_exact(8)) {
                    let sc = f64::from_le_bytes(b.try_into().map_err(|_| LinearError::Malformed("scale".into()))?);
                    // A chain of rescales by primes near 2^40 stays near Δ (public bookkeeping);
                    // anything else is refused before it sizes a conversion.
                    if !(sc.is_finite() && (sc.log2() - scale.log2()).abs() < 4.0) {
                        return Err(LinearError::Malformed(format!("output scale {sc}")));
                    }
                    shares.push(ckks_to_shares_client(ch, mpc, params, sk, count(lay, rows, cols), sc, &fmt, how)?);
                }
                convert_seconds += t2.elapsed().as_secs_f64();
            }
        }
        let st3 = ch.stats();
        run.to_ckks_bytes = st1.bytes_total() - st0.bytes_total();
        run.to_mpc_bytes = st3.bytes_total() - st2.bytes_total();
        run.rounds = st3.rounds - st0.rounds;
        run.convert_seconds = convert_seconds;
        // Each output's entries, from the slots its layout put them in.
        run.shares = outs
            .iter()
            .zip(shares)
            .map(|(&(_, lay, rows, cols), sh)| {
                (0..rows * cols)
                    .map(|k| {
                        let at = lay.slot(k / cols, k % cols, cols, l, s);
                        sh.get(at).copied().ok_or_else(|| LinearError::BadShape("an output slot outside the conversion".into()))
                    })
                    .collect()
            })
            .collect::<Result<_, _>>()?;
        Ok(run)
    }
}
