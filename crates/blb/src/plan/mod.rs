//! BLB's FineGrainFusion planner (BLB §4): which
//! linear operators of a transformer layer are fused into one CKKS block, at what depth and
//! parameter set, with how many rotations, and which tensors cross between CKKS and MPC.
//!
//! 1. [`crate::graph`]: the operator graph of one layer at BLB's granularity (Table 2 operators;
//!    LayerNorm, softmax and GeLU decomposed per App. B Alg. 3–5).
//! 2. Placement. Nonlinear operators run in MPC. A linear operator that only adds (`ewadd`,
//!    `sadd`, `sum`) and whose operands are all already in MPC stays there: additions of
//!    additive shares are local, so converting for them would only cost conversions (the
//!    softmax row sum, the sum of the GeLU muxes, `x − max`). Every other linear operator
//!    goes to CKKS.
//! 3. Fusion. Two CKKS operators joined by an edge are fused when no MPC operator lies
//!    between them (same *stage*) and Table 4 allows the pair ([`crate::ops::fuse`]); the maximal
//!    groups are the blocks. Table 4 is read per edge, with the category the consumer has
//!    *for that operand*: a scalar operator is an Expansion of its `(L, 1)` operand but
//!    element-wise on its `(L, D)` operand (the paper states categories per operator only;
//!    without this reading a bias-free projection feeding LayerNorm's `x − μ` would look like
//!    the ✗ cell Transformation→Expansion, although it is the paper's own fusion). A block's
//!    category is Table 4 folded over its operators in graph order (`None` if the fold meets a
//!    ✗ cell: the block then has no single mapping type).
//! 4. Depth. Levels along the longest path (each multiplication, ct-ct or ct-pt, is followed
//!    by a rescale). A block deeper than the deepest Table 6 set (7) is repaired, first by
//!    evaluating a leading ct-ct product of values already in MPC with the MPC protocol
//!    instead (BLB §5.2 takes `Softmax(·)` "already in secret-share form" into `× V_h`), else
//!    by cutting the block where it runs out of levels (a CKKS→MPC→CKKS refresh).
//! 5. Parameters: the smallest Table 6 set covering the depth ([`crate::ops::choose_preset`]);
//!    rotations per operator by the closed forms of [`crate::cost`] at that set's `N/2` slots.
//!
//! A model's stack of layers is planned as three [`crate::graph::Part`]s (first layer, steady state, last
//! layer's tail; the model layer's `secure::blb` runs them).
//!
//! Result for BERT (and GPT-2, ViT): 5 blocks per layer of depths 4, 7, 7, 7, 6 in that
//! order, as BLB Table 6 (the layer starts after the previous GeLU, as BLB Fig. 10's block 1
//! is the FFN output product with the next LayerNorm's head; see [`crate::graph`]).
//! Cross-block values (a residual, `V`, the centred `x − μ`) are converted to MPC at the end
//! of their block and back into the consuming block: blocks use different `N`, so a
//! ciphertext cannot be carried over as is.
//!
//! Where the paper leaves a choice open, and what the planner does:
//! - Fig. 10 (the block membership) is not in the text: the membership above is derived, and
//!   its depths match Table 6 exactly, in order.
//! - `matmul_cc` depth: 4 (§5.1), or 3 when `B` comes from MPC and is pre-rotated while its
//!   shares are repacked (§5.2, `V_h`) — needed for `× V` + `W_O` + LayerNorm head to fit 7.
//! - Constant factors (`1/D`, `2^-6`, GeLU coefficients) cost a level like any `ewmul_cp`
//!   (BLB Alg. 3–5 list them as operators); `1/√dh` is folded into `W_Q`.
//! - Parameter set: among the depth-7 sets BLB chose by MSE (scale); we take the tightest
//!   depth, then the fewest modulus bits ([`crate::ops::choose_preset`]).
//! - Rotations: [`crate::cost`]'s closed forms are our derivation; Table 5 prints only O(·) forms,
//!   and its figures (BERT-large `Q·K^T` 640, `× V` 1056; GPT-2 488) are upper bounds of ours
//!   (448, 640; 220, 156), checked in the tests.
//! - GeLU is BOLT's P4 (Alg. 4) whatever the suite's `gelu` choice, as in BLB §7.1; SiLU
//!   (LLaMA, not in BLB) is BumbleBee's polynomial split the same way.
//! - The plan covers a prompt of `L` tokens; KV-cache decoding steps are not planned.

use crate::cost;
use crate::error::BlbError;
use crate::graph::{self, LayerGraph, Operand, Shape};
use crate::ops::{self, choose_preset, fuse, Category, CkksPreset, LinearKind, OpKind};
use crate::spec::LayerSpec;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Most tokens a plan packs: one ciphertext of the smallest set (`N = 16384`) must hold a
/// column of `L` values.
pub const MAX_TOKENS: usize = 8192;

/// A Table 6 parameter set as chosen for a block (owned, for JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamSet {
    pub name: String,
    pub depth: u32,
    pub n: usize,
    pub primes: Vec<u32>,
    pub total_bits: u32,
    pub log_scale: u32,
}

impl From<&CkksPreset> for ParamSet {
    fn from(p: &CkksPreset) -> Self {
        ParamSet {
            name: p.name(),
            depth: p.depth,
            n: p.n,
            primes: p.prime_bits.to_vec(),
            total_bits: p.total_bits(),
            log_scale: p.scale_bits,
        }
    }
}

/// One operator of a fused block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedOp {
    pub name: String,
    pub kind: LinearKind,
    pub category: Category,
    pub input: Shape,
    pub output: Shape,
    /// Levels consumed from the block's start up to and including this operator.
    pub level: u32,
    pub rotations: usize,
}

/// A tensor crossing between CKKS and MPC at a block boundary (BLB §6, Alg. 1–2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conversion {
    pub value: String,
    pub shape: Shape,
    /// Ciphertexts at the block's `N` (spatial-first packing).
    pub ciphertexts: usize,
    /// Consumers outside the block (CKKS→MPC) or the producer (MPC→CKKS).
    pub peers: Vec<String>,
}

/// A maximal group of fused linear operators evaluated under one CKKS parameter set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FusedBlock {
    /// 1-based, in execution order.
    pub index: usize,
    /// Table 4 folded over the operators (`None`: no single mapping type).
    pub category: Option<Category>,
    /// Levels on the longest path.
    pub depth: u32,
    /// ct-ct and ct-pt multiplications on that path (each followed by a rescale).
    pub path_ct_ct: u32,
    pub path_ct_pt: u32,
    pub rescales: u32,
    /// Sum of the operators' rotations.
    pub rotations: usize,
    pub params: ParamSet,
    pub ops: Vec<PlannedOp>,
    /// MPC→CKKS conversions before the block.
    pub to_ckks: Vec<Conversion>,
    /// CKKS→MPC conversions after it.
    pub to_mpc: Vec<Conversion>,
}

/// Why an operator runs in MPC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MpcRole {
    /// A nonlinear operator (BLB Table 2).
    Nonlinear,
    /// An addition of operands already in MPC: local to each party.
    Local,
    /// A ct-ct product moved out of a block that would exceed every Table 6 depth.
    Peeled,
}

/// One operator evaluated in MPC.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MpcOp {
    pub name: String,
    pub kind: OpKind,
    pub output: Shape,
    pub role: MpcRole,
}

/// One step of the plan: a fused CKKS block or the MPC operators before the next block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanItem {
    Ckks(FusedBlock),
    Mpc(Vec<MpcOp>),
}

/// The fusion plan of one steady-state layer (repeated `layers` times).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FusionPlan {
    /// HF `model_type`, or the shape name it was built from.
    pub model: String,
    pub tokens: usize,
    pub hidden: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub layers: usize,
    pub items: Vec<PlanItem>,
}

impl FusionPlan {
    /// The plan of `layers` layers of shape `spec` for `tokens` tokens (`model`: a name for
    /// the report).
    pub fn for_layer(
        spec: &LayerSpec,
        model: &str,
        layers: usize,
        tokens: usize,
    ) -> Result<FusionPlan, BlbError> {
        if tokens == 0 || tokens > MAX_TOKENS {
            return Err(BlbError::Input(format!(
                "fusion plan: {tokens} tokens (1..={MAX_TOKENS})"
            )));
        }
        if spec.heads == 0 || !spec.hidden.is_multiple_of(spec.heads) {
            return Err(BlbError::Input(format!(
                "fusion plan: hidden {} is not a multiple of {} heads",
                spec.hidden, spec.heads
            )));
        }
        let graph = LayerGraph::build(spec, tokens);
        Ok(FusionPlan {
            model: model.into(),
            tokens,
            hidden: spec.hidden,
            heads: spec.heads,
            intermediate: spec.intermediate,
            layers,
            items: plan_graph(&graph, tokens)?,
        })
    }

    /// The fused blocks, in order.
    pub fn blocks(&self) -> impl Iterator<Item = &FusedBlock> {
        self.items.iter().filter_map(|i| match i {
            PlanItem::Ckks(b) => Some(b),
            PlanItem::Mpc(_) => None,
        })
    }

    /// The MPC operators, in order.
    pub fn mpc_ops(&self) -> impl Iterator<Item = &MpcOp> {
        self.items.iter().flat_map(|i| match i {
            PlanItem::Mpc(v) => v.as_slice(),
            PlanItem::Ckks(_) => &[],
        })
    }

    /// The block whose operators include `name`.
    pub fn block_of(&self, name: &str) -> Option<&FusedBlock> {
        self.blocks().find(|b| b.ops.iter().any(|o| o.name == name))
    }

    /// Rotations of one layer.
    pub fn rotations(&self) -> usize {
        self.blocks().map(|b| b.rotations).sum()
    }

    /// (tensors, ciphertexts) converted MPC→CKKS and CKKS→MPC per layer.
    pub fn conversions(&self) -> ((usize, usize), (usize, usize)) {
        let count = |v: &[Conversion]| (v.len(), v.iter().map(|c| c.ciphertexts).sum::<usize>());
        let (mut i, mut o) = ((0, 0), (0, 0));
        for b in self.blocks() {
            let (a, c) = count(&b.to_ckks);
            i = (i.0 + a, i.1 + c);
            let (a, c) = count(&b.to_mpc);
            o = (o.0 + a, o.1 + c);
        }
        (i, o)
    }

    /// The plan as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Ckks,
    Mpc(MpcRole),
}

/// Placement and stage of every operator (stage: MPC operators on the longest path from the
/// layer's inputs; CKKS operators of one block share a stage).
fn place(g: &LayerGraph, peeled: &[bool], cut: &[bool]) -> (Vec<Place>, Vec<usize>) {
    let n = g.ops.len();
    let mut consumed_by_mpc = vec![false; n];
    for (i, op) in g.ops.iter().enumerate() {
        if matches!(op.kind, OpKind::Nonlinear(_)) || peeled[i] {
            for v in &op.operands {
                if let Operand::Op(j) = v {
                    consumed_by_mpc[*j] = true;
                }
            }
        }
    }
    let mut place = vec![Place::Ckks; n];
    let mut stage = vec![0usize; n];
    for (i, op) in g.ops.iter().enumerate() {
        let in_mpc = |v: &Operand, place: &[Place]| match *v {
            Operand::Input(_) => true,
            Operand::Op(j) => place[j] != Place::Ckks || consumed_by_mpc[j],
        };
        place[i] = match op.kind {
            OpKind::Nonlinear(_) => Place::Mpc(MpcRole::Nonlinear),
            OpKind::Linear(_) if peeled[i] => Place::Mpc(MpcRole::Peeled),
            OpKind::Linear(k)
                if k.is_additive() && op.operands.iter().all(|v| in_mpc(v, &place)) =>
            {
                Place::Mpc(MpcRole::Local)
            }
            OpKind::Linear(_) => Place::Ckks,
        };
        let s = op
            .operands
            .iter()
            .map(|v| match *v {
                Operand::Input(_) => 1,
                Operand::Op(j) => stage[j] + usize::from(place[j] != Place::Ckks),
            })
            .max()
            .unwrap_or(0);
        stage[i] = s + usize::from(cut[i]);
    }
    (place, stage)
}

fn linear(op: &graph::Op) -> Option<LinearKind> {
    match op.kind {
        OpKind::Linear(k) => Some(k),
        OpKind::Nonlinear(_) => None,
    }
}

/// Block id of every CKKS operator (union-find over fusable edges); blocks numbered by their
/// first operator.
fn group(g: &LayerGraph, place: &[Place], stage: &[usize]) -> Vec<Option<usize>> {
    let n = g.ops.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    for (i, op) in g.ops.iter().enumerate() {
        let Some(k) = linear(op).filter(|_| place[i] == Place::Ckks) else {
            continue;
        };
        for (pos, v) in op.operands.iter().enumerate() {
            let Operand::Op(j) = *v else { continue };
            let Some(kj) = linear(&g.ops[j]) else {
                continue;
            };
            if place[j] == Place::Ckks
                && stage[j] == stage[i]
                && fuse(kj.category(), k.operand_category(pos)).is_some()
            {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut ids = vec![None; n];
    let mut next = 0;
    let mut of_root = std::collections::HashMap::new();
    for i in 0..n {
        if place[i] != Place::Ckks {
            continue;
        }
        let r = root(&mut parent, i);
        let id = *of_root.entry(r).or_insert_with(|| {
            next += 1;
            next - 1
        });
        ids[i] = Some(id);
    }
    ids
}

/// Per operator: (level, ct-ct on the path, ct-pt on the path, predecessor on the path).
type Levels = Vec<(u32, u32, u32, Option<usize>)>;

fn in_block(blk: &[Option<usize>], v: Operand, b: Option<usize>) -> Option<usize> {
    match v {
        Operand::Op(j) if b.is_some() && blk[j] == b => Some(j),
        _ => None,
    }
}

fn levels(g: &LayerGraph, blk: &[Option<usize>]) -> Levels {
    let mut lv: Levels = vec![(0, 0, 0, None); g.ops.len()];
    for (i, op) in g.ops.iter().enumerate() {
        let Some(k) = linear(op).filter(|_| blk[i].is_some()) else {
            continue;
        };
        let mut best = (0, 0, 0, None);
        for v in &op.operands {
            if let Some(j) = in_block(blk, *v, blk[i]) {
                if lv[j].0 >= best.0 {
                    best = (lv[j].0, lv[j].1, lv[j].2, Some(j));
                }
            }
        }
        let b_from_mpc = op
            .operands
            .get(1)
            .is_some_and(|v| in_block(blk, *v, blk[i]).is_none());
        let (cc, cp) = k.mults(b_from_mpc);
        lv[i] = (best.0 + cc + cp, best.1 + cc, best.2 + cp, best.3);
    }
    lv
}

/// The plan of any layer graph (the steady-state layer, or any [`crate::graph::Part`] of a stack): places,
/// groups and, while a block is deeper than every Table 6 set, peels or cuts (module docs,
/// step 4); returns the fused blocks and the MPC operators between them, in execution order.
pub fn plan_graph(g: &LayerGraph, tokens: usize) -> Result<Vec<PlanItem>, BlbError> {
    let n = g.ops.len();
    let max_depth = ops::max_preset_depth();
    let (mut peeled, mut cut) = (vec![false; n], vec![false; n]);
    // A product by a per-group scalar (`L × H`, H > 1: softmax's `1/Σ` per head) is peeled
    // from the start: the executor packs per-token scalars only (`crate::exec` module doc).
    // BERT's and GPT-2's blocks peel it anyway for depth; LLaMA's would keep it.
    for (i, op) in g.ops.iter().enumerate() {
        let per_group = op.operands.get(1).is_some_and(|&v| g.shape(v).cols > 1);
        peeled[i] = op.kind == OpKind::Linear(LinearKind::SmulCc) && per_group;
    }
    for _ in 0..=n {
        let (place, stage) = place(g, &peeled, &cut);
        let blk = group(g, &place, &stage);
        let lv = levels(g, &blk);
        let deepest = (0..n)
            .filter(|&i| blk[i].is_some())
            .max_by_key(|&i| (lv[i].0, std::cmp::Reverse(i)));
        match deepest {
            Some(d) if lv[d].0 > max_depth => {
                let mut path = vec![d];
                while let Some(p) = lv[*path.last().unwrap_or(&d)].3 {
                    path.push(p);
                }
                let start = path.last().copied().unwrap_or(d);
                let op = &g.ops[start];
                // Only a product of values already in secret-share form (from MPC, the
                // previous layer or another block); never a chain of products moved one by one.
                let from_nonlinear = |v: &Operand| match *v {
                    Operand::Input(_) => true,
                    Operand::Op(j) => match place[j] {
                        Place::Ckks => blk[j] != blk[start],
                        Place::Mpc(role) => role != MpcRole::Peeled,
                    },
                };
                let peelable = matches!(
                    op.kind,
                    OpKind::Linear(LinearKind::EwmulCc | LinearKind::SmulCc)
                ) && op.operands.iter().all(from_nonlinear);
                if peelable {
                    peeled[start] = true;
                } else if let Some(&c) = path.iter().rev().find(|&&i| lv[i].0 > max_depth) {
                    cut[c] = true;
                }
            }
            _ => return assemble(g, tokens, &place, &stage, &blk, &lv),
        }
    }
    Err(BlbError::Unsupported(
        "fusion plan: no block fits a BLB Table 6 parameter set".into(),
    ))
}

fn assemble(
    g: &LayerGraph,
    tokens: usize,
    place: &[Place],
    stage: &[usize],
    blk: &[Option<usize>],
    lv: &Levels,
) -> Result<Vec<PlanItem>, BlbError> {
    let n = g.ops.len();
    let nblocks = blk.iter().flatten().max().map_or(0, |m| m + 1);
    // Schedule: CKKS blocks of stage k, then the MPC operators of stage k.
    // (stage, 0 = block / 1 = MPC, first operator, block id or operator, is block)
    let mut order: Vec<(usize, usize, usize, usize, bool)> = Vec::new();
    for b in 0..nblocks {
        if let Some(first) = (0..n).find(|&i| blk[i] == Some(b)) {
            order.push((stage[first], 0, first, b, true));
        }
    }
    for i in (0..n).filter(|&i| place[i] != Place::Ckks) {
        order.push((stage[i], 1, i, i, false));
    }
    order.sort_unstable();
    let block_index: Vec<usize> = {
        let mut v = vec![0; nblocks];
        for (k, &(_, _, _, id, _)) in order.iter().filter(|o| o.4).enumerate() {
            v[id] = k + 1;
        }
        v
    };
    let next_layer: Vec<Operand> = g.outputs.iter().map(|(_, v)| *v).collect();
    let mut items: Vec<PlanItem> = Vec::new();
    let mut index = 0;
    for (_, _, _, id, is_block) in order {
        if !is_block {
            let op = &g.ops[id];
            let Place::Mpc(role) = place[id] else {
                continue;
            };
            let m = MpcOp {
                name: op.name.clone(),
                kind: op.kind,
                output: op.output,
                role,
            };
            match items.last_mut() {
                Some(PlanItem::Mpc(v)) => v.push(m),
                _ => items.push(PlanItem::Mpc(vec![m])),
            }
            continue;
        }
        index += 1;
        let members: Vec<usize> = (0..n).filter(|&i| blk[i] == Some(id)).collect();
        let deepest = members
            .iter()
            .copied()
            .max_by_key(|&i| (lv[i].0, std::cmp::Reverse(i)))
            .unwrap_or(members[0]);
        let depth = lv[deepest].0;
        let preset = choose_preset(depth).ok_or_else(|| {
            BlbError::Unsupported(format!(
                "fusion plan: depth {depth} exceeds every BLB Table 6 set"
            ))
        })?;
        let slots = preset.slots();
        let mut planned = Vec::new();
        let mut category: Option<Category> = None;
        let mut first = true;
        for &i in &members {
            let op = &g.ops[i];
            let Some(k) = linear(op) else { continue };
            let rotations = rotations(g, blk, i, k, tokens, slots);
            category = if first {
                Some(k.category())
            } else {
                category.and_then(|c| fuse(c, k.category()))
            };
            first = false;
            planned.push(PlannedOp {
                name: op.name.clone(),
                kind: k,
                category: k.category(),
                input: op.input,
                output: op.output,
                level: lv[i].0,
                rotations,
            });
        }
        let conv = |v: Operand, peers: Vec<String>| {
            let shape = g.shape(v);
            Conversion {
                value: g.value_name(v).to_string(),
                shape,
                ciphertexts: cost::ciphertexts(shape.rows, shape.cols, slots),
                peers,
            }
        };
        let mut to_ckks: Vec<Conversion> = Vec::new();
        let mut seen = Vec::new();
        for &i in &members {
            for v in &g.ops[i].operands {
                if in_block(blk, *v, Some(id)).is_none() && !seen.contains(v) {
                    seen.push(*v);
                    let from = match *v {
                        Operand::Input(_) => "previous layer".to_string(),
                        Operand::Op(j) => match place[j] {
                            Place::Ckks => {
                                format!("block {}", blk[j].map_or(0, |b| block_index[b]))
                            }
                            Place::Mpc(_) => format!("MPC {}", g.ops[j].name),
                        },
                    };
                    to_ckks.push(conv(*v, vec![from]));
                }
            }
        }
        let mut to_mpc = Vec::new();
        for &i in &members {
            let v = Operand::Op(i);
            let mut peers: Vec<String> = g
                .consumers(v)
                .into_iter()
                .filter(|&c| blk[c] != Some(id))
                .map(|c| g.ops[c].name.clone())
                .collect();
            if next_layer.contains(&v) {
                peers.push("next layer".into());
            }
            if !peers.is_empty() {
                to_mpc.push(conv(v, peers));
            }
        }
        let rotations = planned.iter().map(|o| o.rotations).sum();
        items.push(PlanItem::Ckks(FusedBlock {
            index,
            category,
            depth,
            path_ct_ct: lv[deepest].1,
            path_ct_pt: lv[deepest].2,
            rescales: lv[deepest].1 + lv[deepest].2,
            rotations,
            params: preset.into(),
            ops: planned,
            to_ckks,
            to_mpc,
        }));
    }
    Ok(items)
}

/// Whether block operator `j`'s `(L, 1)` value is already replicated across its row's `D`
/// slots: an unmasked sum is (Fig. 6), and element-wise operators on replicated (or MPC)
/// operands keep it so.
fn replicated(g: &LayerGraph, blk: &[Option<usize>], j: usize) -> bool {
    match linear(&g.ops[j]) {
        Some(LinearKind::Sum) => true,
        Some(
            LinearKind::EwaddCc | LinearKind::EwaddCp | LinearKind::EwmulCc | LinearKind::EwmulCp,
        ) => g.ops[j]
            .operands
            .iter()
            .all(|v| in_block(blk, *v, blk[j]).is_none_or(|k| replicated(g, blk, k))),
        _ => false,
    }
}

/// Rotations of operator `i` of a block at `slots` slots ([`cost`]).
fn rotations(
    g: &LayerGraph,
    blk: &[Option<usize>],
    i: usize,
    k: LinearKind,
    l: usize,
    slots: usize,
) -> usize {
    let op = &g.ops[i];
    // A scalar operand needs a broadcast only when it is a ciphertext of this block that is not
    // an (unmasked, already replicated) sum; from MPC it is encoded replicated for free.
    let broadcast = |scalar: Operand| match in_block(blk, scalar, blk[i]) {
        Some(j) if !replicated(g, blk, j) => {
            let s = g.shape(scalar);
            cost::broadcast_rotations(l, op.output.cols / s.cols.max(1), slots)
        }
        _ => 0,
    };
    match k {
        LinearKind::Sum => cost::sum_rotations(l, op.input.cols / op.output.cols.max(1), slots),
        LinearKind::SaddCc | LinearKind::SmulCc => op.operands.get(1).map_or(0, |&s| broadcast(s)),
        LinearKind::SaddCp | LinearKind::SmulCp => broadcast(op.operands[0]),
        LinearKind::MatmulCp => cost::matmul_cp_rotations(l, op.input.cols, op.output.cols, slots),
        LinearKind::MatmulCc => {
            let b_from_mpc = op
                .operands
                .get(1)
                .is_some_and(|v| in_block(blk, *v, blk[i]).is_none());
            cost::matmul_cc_rotations(
                l,
                op.input.cols / op.heads.max(1),
                op.heads,
                slots,
                b_from_mpc,
            )
        }
        LinearKind::EwaddCc | LinearKind::EwaddCp | LinearKind::EwmulCc | LinearKind::EwmulCp => 0,
    }
}

impl fmt::Display for FusionPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nb = self.blocks().count();
        let lin: usize = self.blocks().map(|b| b.ops.len()).sum();
        let count = |r: MpcRole| self.mpc_ops().filter(|o| o.role == r).count();
        writeln!(
            f,
            "BLB fusion plan (BLB §4-6): {} — {} tokens, hidden {}, {} heads, FFN {}; one layer in steady state (x{} layers)",
            self.model, self.tokens, self.hidden, self.heads, self.intermediate, self.layers
        )?;
        writeln!(
            f,
            "per layer: {nb} CKKS blocks with {lin} fused linear ops; MPC: {} nonlinear, {} local additions, {} moved products",
            count(MpcRole::Nonlinear),
            count(MpcRole::Local),
            count(MpcRole::Peeled)
        )?;
        writeln!(
            f,
            "decomposition: LayerNorm / softmax / GeLU per BLB App. B Alg. 3 / 5 / 4 (GeLU = BOLT P4); \
             c = Table 4 category (I/E/R/T); level = levels used up to the op; rot = rotations"
        )?;
        for item in &self.items {
            match item {
                PlanItem::Mpc(ops) => {
                    let names: Vec<String> = ops
                        .iter()
                        .map(|o| match o.role {
                            MpcRole::Nonlinear => format!("{} [{}]", o.name, o.kind.name()),
                            MpcRole::Local => format!("{} [{}, local]", o.name, o.kind.name()),
                            MpcRole::Peeled => {
                                format!("{} [{}, MPC product]", o.name, o.kind.name())
                            }
                        })
                        .collect();
                    writeln!(f, "\n  MPC: {}", names.join(", "))?;
                }
                PlanItem::Ckks(b) => {
                    let cat = b.category.map_or("mixed".to_string(), |c| c.to_string());
                    writeln!(
                        f,
                        "\nblock {} [{cat}]  depth {} (ct-ct {}, ct-pt {}, rescales {})  {} N={} {} bits {:?} scale 2^{}  rotations {}",
                        b.index, b.depth, b.path_ct_ct, b.path_ct_pt, b.rescales, b.params.name, b.params.n, b.params.total_bits, b.params.primes, b.params.log_scale, b.rotations
                    )?;
                    for c in &b.to_ckks {
                        writeln!(
                            f,
                            "  MPC->CKKS  {:<24} {:>9}  {:>3} ct  from {}",
                            c.value,
                            c.shape.to_string(),
                            c.ciphertexts,
                            c.peers.join(", ")
                        )?;
                    }
                    writeln!(
                        f,
                        "  {:<28} {:<10} c {:>9} -> {:<9} {:>5} {:>6}",
                        "op", "kind", "in", "out", "level", "rot"
                    )?;
                    for o in &b.ops {
                        writeln!(
                            f,
                            "  {:<28} {:<10} {} {:>9} -> {:<9} {:>5} {:>6}",
                            o.name,
                            o.kind.name(),
                            o.category.tag(),
                            o.input.to_string(),
                            o.output.to_string(),
                            o.level,
                            o.rotations
                        )?;
                    }
                    for c in &b.to_mpc {
                        writeln!(
                            f,
                            "  CKKS->MPC  {:<24} {:>9}  {:>3} ct  to {}",
                            c.value,
                            c.shape.to_string(),
                            c.ciphertexts,
                            c.peers.join(", ")
                        )?;
                    }
                }
            }
        }
        let ((ti, ci), (to, co)) = self.conversions();
        write!(
            f,
            "\nper layer: {nb} blocks, depths [{}], {} rotations; MPC->CKKS {ti} tensors ({ci} ct), CKKS->MPC {to} tensors ({co} ct)",
            self.blocks().map(|b| b.depth.to_string()).collect::<Vec<_>>().join(", "),
            self.rotations()
        )
    }
}

#[cfg(test)]
mod tests;
