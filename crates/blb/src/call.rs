//! What one of BLB's fused blocks is, as both parties run it ([`FusedCall`]), and what it
//! needs of the CKKS parameters ([`BlockExec`], simulated from the public shapes).

use crate::error::BlbError;
use crate::exec::{layouts, run_block, CtTensor, Layout};
use crate::graph::{LayerGraph, Operand, Part};
use crate::params::LayerParams;
use crate::plan::FusedBlock;
use nectar_linear::ckks_matmul::SlotSim;
use std::collections::HashMap;

/// What a fused block needs of the CKKS parameters, measured on the slot simulator from the
/// public shapes alone (zero weights; both parties derive the same): the levels it uses and
/// its rotation steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockExec {
    /// Levels the executor uses: the plan's depth, or one more where a multi-head product
    /// needs it (GPT-2's `P·V` at 64 tokens takes 4 levels where the planner counts 3).
    pub depth: u32,
    /// Depth of the parameter set the block runs in: the deepest block of the stack with the
    /// same ring degree, so that all of them share one set of keys (a block of smaller depth
    /// enters `set_depth − depth` levels below the top: no extra bytes).
    pub set_depth: u32,
    /// Rotation steps (the Galois keys the client sends).
    pub steps: Vec<i64>,
    /// Per rotation step, how many levels below the parameter set's top its highest use
    /// is, over every block of the set that rotates by it ([`BlockExec::simulate`] measures
    /// the block's own, from its inputs' level; the model's stack takes the minimum over the
    /// set): the client sends each Galois key cut to that level (ours: fewer digits and
    /// primes, `CkksGaloisKeys::serialize_at_levels`).
    pub key_drops: Vec<(i64, u32)>,
}

impl BlockExec {
    /// The level (primes) its inputs are converted at in the set's parameters `top`.
    pub fn start_level(&self, top: usize) -> usize {
        top.saturating_sub((self.set_depth - self.depth.min(self.set_depth)) as usize)
    }

    /// The level (primes) rotation step `k`'s Galois key must serve in the set's parameters
    /// `top` (the top when the step is not in [`Self::key_drops`]).
    pub fn key_level(&self, k: i64, top: usize) -> usize {
        let drop = self.key_drops.iter().find(|&&(s, _)| s == k).map_or(0, |&(_, d)| d as usize);
        top.saturating_sub(drop).max(1)
    }

    /// [`Self::key_drops`] of a block of the set (`set_depth`, already set) made relative to
    /// the set's top: the block's inputs start `set_depth − depth` levels below it.
    pub fn set_relative_drops(&self) -> Vec<(i64, u32)> {
        let below = self.set_depth - self.depth.min(self.set_depth);
        self.key_drops.iter().map(|&(k, d)| (k, d + below)).collect()
    }

    /// Runs the block on the slot simulator with zero inputs and `zeros`, the server's
    /// values at the layer's shapes (zero: both parties make the same).
    pub fn simulate(call: &FusedCall<'_>, zeros: &LayerParams<'_>) -> Result<BlockExec, BlbError> {
        const START: usize = 64;
        let bad = |e: BlbError| BlbError::Unsupported(format!("suite blb at {} tokens: {e}", call.tokens));
        let (l, s) = (call.tokens, call.block.params.n / 2);
        let want = layouts(call.graph, &call.ops, l, s).map_err(bad)?;
        let sim = SlotSim::new(s);
        let mut ins = HashMap::new();
        for &v in &call.inputs {
            let (rows, cols) = call.shape(v);
            let lay = want[&v];
            let cts = (0..lay.cts(cols, l, s)).map(|_| sim.encrypt(vec![0.0; s], START)).collect();
            ins.insert(v, CtTensor { rows, cols, layout: lay, cts });
        }
        let res = run_block(&sim, call.graph, zeros, &call.ops, l, &ins).map_err(bad)?;
        let lowest = res.values().flat_map(|t| t.cts.iter().map(|c| c.level)).min().unwrap_or(START);
        let depth = call.block.depth.max((START - lowest) as u32);
        let key_drops = sim.rotation_levels().into_iter().map(|(k, level)| (k, (START - level.min(START)) as u32)).collect();
        Ok(BlockExec { depth, set_depth: depth, steps: sim.rotation_steps(), key_drops })
    }
}

/// One fused block of one layer as the engine runs it (public: plan and shapes; the weights on
/// the server and the twin only).
pub struct FusedCall<'a> {
    pub graph: &'a LayerGraph,
    /// The stretch of the stack the graph covers (with `block.index`, names the block).
    pub part: Part,
    pub block: &'a FusedBlock,
    /// The block's operators (indices into `graph.ops`, graph order).
    pub ops: Vec<usize>,
    /// The operands read from MPC, in the order the engine receives their shares.
    pub inputs: Vec<Operand>,
    /// The operators converted back to MPC, in the order the engine returns their shares.
    pub outputs: Vec<usize>,
    /// `L`: the tokens.
    pub tokens: usize,
    /// The server's weights of this layer (`None` on the client).
    pub params: Option<&'a LayerParams<'a>>,
    /// Levels and rotation steps ([`BlockExec::simulate`]; until then, the plan's depth and
    /// no steps).
    pub exec: BlockExec,
}

impl<'a> FusedCall<'a> {
    /// The call of `block` of `graph` (both parties derive the same from the plan).
    pub fn new(graph: &'a LayerGraph, part: Part, block: &'a FusedBlock, tokens: usize, params: Option<&'a LayerParams<'a>>) -> Result<Self, BlbError> {
        let index = |name: &str| {
            graph
                .ops
                .iter()
                .position(|o| o.name == name)
                .ok_or_else(|| BlbError::Unsupported(format!("BLB plan: no operator {name} in the graph")))
        };
        let ops: Vec<usize> = block.ops.iter().map(|o| index(&o.name)).collect::<Result<_, _>>()?;
        let mut inputs = Vec::new();
        for &i in &ops {
            for &v in &graph.ops[i].operands {
                let inside = matches!(v, Operand::Op(j) if ops.contains(&j));
                if !inside && !inputs.contains(&v) {
                    inputs.push(v);
                }
            }
        }
        let outputs = block.to_mpc.iter().map(|c| index(&c.value)).collect::<Result<_, _>>()?;
        let exec = BlockExec { depth: block.depth, set_depth: block.depth, steps: Vec::new(), key_drops: Vec::new() };
        Ok(FusedCall { graph, part, block, ops, inputs, outputs, tokens, params, exec })
    }

    /// Checks that every tensor the block reads, computes or writes fits the packing it is
    /// wanted in (both parties, before anything is sent): what depends on `L` alone, so a
    /// block that passes runs at this `L`.
    pub fn check(&self) -> Result<(), BlbError> {
        let bad = |e: BlbError| BlbError::Unsupported(format!("suite blb at {} tokens: {e}", self.tokens));
        let s = self.block.params.n / 2;
        let want = layouts(self.graph, &self.ops, self.tokens, s).map_err(bad)?;
        let computed = self.ops.iter().map(|&i| Operand::Op(i));
        for v in self.inputs.iter().copied().chain(computed) {
            let (rows, cols) = self.shape(v);
            let lay = want.get(&v).copied().unwrap_or(Layout::Spatial);
            lay.check(rows, cols, self.tokens, s).map_err(|e| bad(BlbError::Unsupported(format!("{}: {e}", self.graph.value_name(v)))))?;
        }
        Ok(())
    }

    /// `(rows, cols)` of an operand.
    pub fn shape(&self, v: Operand) -> (usize, usize) {
        let s = self.graph.shape(v);
        (s.rows, s.cols)
    }
}
