//! BLB's fused blocks evaluated under CKKS (BLB §4–5): the operators of one
//! [`super::FusedBlock`] computed by the server alone on [`SlotOps`] — real ciphertexts
//! ([`nectar_linear::ckks_matmul::CkksOps`]) or the slot simulator — from the block's
//! MPC → CKKS inputs to its CKKS → MPC outputs. [`super::eval`] is its plaintext twin.
//!
//! Packing (BLB §4.2.1, Fig. 6): every `L × C` tensor is spatial-first (column-major, rows
//! padded with zeros to `L`, a power of two), `s/L` columns per ciphertext; a per-token scalar
//! (`L × 1`: a row sum, the mean, `1/σ`) lives in one ciphertext *replicated in every block*,
//! which is what the row sum's rotate-and-adds leave (Table 3 "w/ fusion") and what a
//! broadcast operator needs. So a block's ciphertexts must be full of real columns:
//! `L·C` a multiple of `s` for every `L × C` tensor (BERT-base: `L = 128`, `s = 16384`: 128
//! columns per ciphertext; the executor refuses other shapes), else the padding columns would
//! pick up the broadcast scalars and corrupt the next row sum.
//!
//! Scales: a ct-pt product lands exactly on `Δ` ([`SlotOps::mul_values_to`]); ct-ct products
//! are rescaled and keep `Δ²/q` (they are always multiplied by a plaintext or converted before
//! anything is added to them in BLB's graphs), so additions meet equal scales. Operands at two
//! levels are added at the lower one.
//!
//! Not built yet (a clear error): `matmul_cc` between fused operators (blocks 2 and 4 of BERT
//! need the multi-head packings of [`nectar_linear::ckks_packing`] produced from the
//! spatial-first outputs of `matmul_cp`), and per-group scalars (`L × H`).

use super::eval::{LayerParams, Tensor};
use super::graph::{LayerGraph, Operand};
use super::ops::{LinearKind, OpKind};
use crate::ModelError;
use nectar_linear::ckks_matmul::{matmul_cp_spatial, SlotOps};
use nectar_linear::ckks_packing::Mat;
use std::collections::HashMap;

/// A tensor under CKKS in the packing of the module doc.
#[derive(Clone, Debug)]
pub struct CtTensor<C> {
    /// Real rows (tokens); the packing pads them to `L`.
    pub rows: usize,
    pub cols: usize,
    /// A per-token scalar (`cols == 1`), replicated in every block of one ciphertext.
    pub scalar: bool,
    pub cts: Vec<C>,
}

fn err(e: impl std::fmt::Display) -> ModelError {
    ModelError::Unsupported(format!("fused CKKS block: {e}"))
}

/// The slot vectors of `t` (`t.rows <= l`) in the packing of the module doc: spatial-first
/// over `s` slots, or, for a `rows × 1` tensor with `scalar`, one vector with the column in
/// every block of `l` slots.
pub fn pack(t: &Tensor, l: usize, s: usize, scalar: bool) -> Result<Vec<Vec<f64>>, ModelError> {
    check_shape(t.rows, t.cols, l, s, scalar)?;
    if scalar {
        return Ok(vec![(0..s).map(|p| if p % l < t.rows { t.at(p % l, 0) } else { 0.0 }).collect()]);
    }
    Ok((0..t.cols * l / s)
        .map(|k| {
            (0..s)
                .map(|q| {
                    let pos = k * s + q;
                    let (c, r) = (pos / l, pos % l);
                    if r < t.rows {
                        t.at(r, c)
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect())
}

/// The inverse of [`pack`] (a scalar is read from block 0).
pub fn unpack(v: &[Vec<f64>], rows: usize, cols: usize, l: usize, s: usize, scalar: bool) -> Result<Tensor, ModelError> {
    check_shape(rows, cols, l, s, scalar)?;
    let mut t = Tensor::zeros(rows, cols);
    for r in 0..rows {
        for c in 0..cols {
            let pos = if scalar { r } else { c * l + r };
            t.data[r * cols + c] = *v.get(pos / s).and_then(|ct| ct.get(pos % s)).ok_or_else(|| err("too few slots to unpack"))?;
        }
    }
    Ok(t)
}

fn check_shape(rows: usize, cols: usize, l: usize, s: usize, scalar: bool) -> Result<(), ModelError> {
    if !l.is_power_of_two() || l > s || rows > l || cols == 0 {
        return Err(err(format!("{rows}x{cols} in blocks of L = {l} over {s} slots")));
    }
    if scalar {
        return if cols == 1 { Ok(()) } else { Err(err(format!("a {rows}x{cols} tensor is not a per-token scalar"))) };
    }
    if !(cols * l).is_multiple_of(s) {
        return Err(err(format!(
            "{cols} columns of {l} rows do not fill whole ciphertexts of {s} slots (module doc: the broadcast scalars would spill into padding)"
        )));
    }
    Ok(())
}

/// The slot vectors of a plaintext operand (one value per column, or `rows × cols`
/// entries) laid out like the ciphertexts of a `rows × cols` tensor (a per-token scalar with
/// `scalar`).
fn plain_slots(pl: &Tensor, rows: usize, cols: usize, l: usize, s: usize, scalar: bool) -> Result<Vec<Vec<f64>>, ModelError> {
    let full = if pl.rows == 1 {
        Tensor::new(rows, cols, (0..rows * cols).map(|i| pl.data[i % cols]).collect())?
    } else {
        pl.clone()
    };
    pack(&full, l, s, scalar)
}

/// Runs the graph operators `block` (indices into [`LayerGraph::ops`], in graph order) under
/// CKKS with `l`-row packing; `inputs` holds every operand the block reads from outside it
/// (graph inputs or earlier operators, as converted from MPC). Returns the value of every
/// operator of the block.
pub fn run_block<O: SlotOps>(
    ops: &O,
    g: &LayerGraph,
    p: &LayerParams<'_>,
    block: &[usize],
    l: usize,
    inputs: &HashMap<Operand, CtTensor<O::Ct>>,
) -> Result<HashMap<usize, CtTensor<O::Ct>>, ModelError> {
    let s = ops.slots();
    let mut vals: HashMap<usize, CtTensor<O::Ct>> = HashMap::new();
    let lin = |e: nectar_linear::LinearError| err(e);
    for &i in block {
        let op = g.ops.get(i).ok_or_else(|| err(format!("no operator {i}")))?;
        let arg = |k: usize| -> Result<&CtTensor<O::Ct>, ModelError> {
            let v = *op.operands.get(k).ok_or_else(|| err(format!("{}: operand {k} missing", op.name)))?;
            match v {
                Operand::Op(j) if vals.contains_key(&j) => Ok(&vals[&j]),
                _ => inputs.get(&v).ok_or_else(|| err(format!("{}: operand {} is neither in the block nor an input", op.name, g.value_name(v)))),
            }
        };
        let x = arg(0)?;
        let (rows, cols) = (op.output.rows, op.output.cols);
        let full = |t: &CtTensor<O::Ct>| -> Result<(), ModelError> {
            if t.scalar {
                return Err(err(format!("{}: a per-token scalar where a tensor is needed", op.name)));
            }
            check_shape(t.rows, t.cols, l, s, false)
        };
        let per_ct = |f: &dyn Fn(&O::Ct, &O::Ct) -> Result<O::Ct, nectar_linear::LinearError>, b: &CtTensor<O::Ct>| -> Result<Vec<O::Ct>, ModelError> {
            x.cts
                .iter()
                .enumerate()
                .map(|(k, c)| f(c, if b.scalar { &b.cts[0] } else { &b.cts[k] }).map_err(lin))
                .collect()
        };
        let product = |a: &O::Ct, b: &O::Ct| ops.rescale(&ops.relin(&ops.mul(a, b)?)?);
        let (cts, scalar) = match op.kind {
            OpKind::Linear(LinearKind::MatmulCp) => {
                full(x)?;
                let c = p.columns(&op.name)?;
                let w = Mat::from_fn(c.dense.in_dim, c.rows.len(), |ci, co| c.dense.w[c.rows[co] * c.dense.in_dim + ci] as f64 * c.scale);
                (matmul_cp_spatial(ops, &x.cts, l, &w).map_err(lin)?, false)
            }
            OpKind::Linear(k @ (LinearKind::EwaddCp | LinearKind::EwmulCp)) => {
                if !x.scalar {
                    full(x)?;
                }
                let slots = plain_slots(&p.plain(op, rows, cols)?, rows, cols, l, s, x.scalar)?;
                let cts = x
                    .cts
                    .iter()
                    .zip(&slots)
                    .map(|(c, v)| if k == LinearKind::EwaddCp { ops.add_values(c, v) } else { ops.mul_values_to(c, v, ops.scale()) })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(lin)?;
                (cts, x.scalar)
            }
            OpKind::Linear(LinearKind::EwaddCc) | OpKind::Linear(LinearKind::SaddCc) => {
                let b = arg(1)?;
                full(x)?;
                if matches!(op.kind, OpKind::Linear(LinearKind::EwaddCc)) {
                    full(b)?;
                } else if !b.scalar {
                    return Err(err(format!("{}: the scalar operand is not a per-token scalar", op.name)));
                }
                let f: &dyn Fn(&O::Ct, &O::Ct) -> Result<O::Ct, nectar_linear::LinearError> =
                    if op.subtract { &|a: &O::Ct, b: &O::Ct| ops.sub(a, b) } else { &|a: &O::Ct, b: &O::Ct| ops.add(a, b) };
                (per_ct(f, b)?, false)
            }
            OpKind::Linear(LinearKind::EwmulCc) => {
                let b = arg(1)?;
                full(x)?;
                full(b)?;
                (per_ct(&product, b)?, false)
            }
            OpKind::Linear(LinearKind::SmulCc) => {
                let b = arg(1)?;
                full(x)?;
                if !b.scalar {
                    return Err(err(format!("{}: the scalar operand is not a per-token scalar", op.name)));
                }
                (per_ct(&product, b)?, false)
            }
            OpKind::Linear(LinearKind::Sum) if cols == 1 => {
                full(x)?;
                // Add the ciphertexts, then rotate-and-add over the s/L blocks: the row sum in
                // every block (Table 3 "w/ fusion").
                let mut m = x.cts[0].clone();
                for c in &x.cts[1..] {
                    m = ops.add(&m, c).map_err(lin)?;
                }
                let mut stride = l;
                while stride < s {
                    m = ops.add(&m, &ops.rotate(&m, stride as i64).map_err(lin)?).map_err(lin)?;
                    stride *= 2;
                }
                (vec![m], true)
            }
            _ => return Err(err(format!("{} ({:?}) is not built yet (module doc)", op.name, op.kind))),
        };
        vals.insert(i, CtTensor { rows, cols, scalar, cts });
    }
    Ok(vals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::BlockConfig;
    use crate::config::ModelConfig;
    use crate::fusion::eval::{eval_values, p4_pieces, LayerParams};
    use crate::fusion::FusionPlan;
    use crate::reference::BlockWeights;
    use crate::weights::Weights;
    use nectar_linear::ckks_matmul::SlotSim;
    use nectar_math::Prg;

    struct Tiny {
        _dir: tempfile::TempDir,
        cfg: BlockConfig,
        bw: BlockWeights,
    }

    fn tiny_bert() -> Tiny {
        let dir = tempfile::tempdir().unwrap();
        crate::tiny::write_tiny_bert(dir.path(), 5).unwrap();
        let ModelConfig::Bert(c) = ModelConfig::from_file(&dir.path().join("config.json")).unwrap() else { panic!() };
        let cfg = crate::bert::block_config(&c);
        let weights = Weights::open(&dir.path().join("model.safetensors")).unwrap();
        let bw = BlockWeights::load(&weights, &cfg, crate::bert::block_names, 2).unwrap();
        Tiny { _dir: dir, cfg, bw }
    }

    /// The layer's inputs (P4 pieces of a random pre-activation, a random residual) and the
    /// twin's value of every operator.
    fn twin(t: &Tiny, g: &LayerGraph, tokens: usize) -> (Vec<Tensor>, Vec<Tensor>) {
        let (n0, n1) = (crate::bert::block_names(0), crate::bert::block_names(1));
        let p = LayerParams { weights: &t.bw, cfg: &t.cfg, prev: &n0, cur: &n1 };
        let mut prg = Prg::new([4; 16]);
        let mut rand = |cols: usize, r: f64| Tensor::new(tokens, cols, (0..tokens * cols).map(|_| ((prg.next_u128() % 2001) as f64 / 1000.0 - 1.0) * r).collect()).unwrap();
        let u = rand(t.cfg.intermediate, 3.0);
        let mut inputs: Vec<Tensor> = p4_pieces(&u).into();
        inputs.push(rand(t.cfg.hidden, 1.0));
        let vals = eval_values(g, &p, &inputs).unwrap();
        (inputs, vals)
    }

    fn value<'a>(g: &LayerGraph, inputs: &'a [Tensor], vals: &'a [Tensor], v: Operand) -> &'a Tensor {
        let _ = g;
        match v {
            Operand::Input(i) => &inputs[i],
            Operand::Op(i) => &vals[i],
        }
    }

    /// Every fused block of tiny BERT's plan on the slot simulator, its inputs taken from the
    /// twin: each operator's value equals the twin's (up to f64 rounding; the simulator adds no
    /// noise), and the blocks with `matmul_cc` are refused with a clear error.
    #[test]
    fn fused_blocks_on_the_simulator_equal_the_twin() {
        let t = tiny_bert();
        let (tokens, l, s) = (8, 8, 64);
        let g = LayerGraph::build(&t.cfg, tokens);
        let (inputs, vals) = twin(&t, &g, tokens);
        let (n0, n1) = (crate::bert::block_names(0), crate::bert::block_names(1));
        let p = LayerParams { weights: &t.bw, cfg: &t.cfg, prev: &n0, cur: &n1 };
        let plan = FusionPlan::for_block(&t.cfg, "tiny", 2, tokens).unwrap();
        let mut ran = 0;
        for b in plan.blocks() {
            let idx: Vec<usize> = b.ops.iter().map(|o| g.ops.iter().position(|x| x.name == o.name).unwrap()).collect();
            let sim = SlotSim::new(s);
            let mut ins = HashMap::new();
            for &i in &idx {
                for &v in &g.ops[i].operands {
                    if matches!(v, Operand::Op(j) if idx.contains(&j)) || ins.contains_key(&v) {
                        continue;
                    }
                    let val = value(&g, &inputs, &vals, v);
                    let scalar = val.cols == 1;
                    let cts = pack(val, l, s, scalar).unwrap().into_iter().map(|c| sim.encrypt(c, 12)).collect();
                    ins.insert(v, CtTensor { rows: val.rows, cols: val.cols, scalar, cts });
                }
            }
            let res = run_block(&sim, &g, &p, &idx, l, &ins);
            if b.ops.iter().any(|o| o.kind == LinearKind::MatmulCc) {
                let e = res.unwrap_err().to_string();
                assert!(e.contains("not built yet"), "block {}: {e}", b.index);
                continue;
            }
            let out = res.unwrap();
            for &i in &idx {
                let ct = &out[&i];
                let got = unpack(&ct.cts.iter().map(|c| c.v.clone()).collect::<Vec<_>>(), ct.rows, ct.cols, l, s, ct.scalar).unwrap();
                let want = &vals[i];
                let err = got.data.iter().zip(&want.data).fold(0f64, |m, (a, b)| m.max((a - b).abs()));
                let mag = want.data.iter().fold(1f64, |m, v| m.max(v.abs()));
                assert!(err <= 1e-9 * mag, "block {} op {}: error {err} (magnitude {mag})", b.index, g.ops[i].name);
            }
            // The levels the plan counts are the levels used.
            let used = 12 - out.values().flat_map(|t| t.cts.iter().map(|c| c.level)).min().unwrap();
            assert_eq!(used as u32, b.depth, "block {} depth", b.index);
            ran += 1;
        }
        assert_eq!(ran, 3, "blocks 1, 3 and 5 run");
    }

    /// Block 1 of tiny BERT (FFN output product, bias, residual, LayerNorm head: depth 4, row
    /// sums by rotations) on real CKKS: `N = 2^13`, `Δ = 2^30` (data primes 45 + 4·30, special
    /// 45: 210 of 218 bits), 512 tokens so that 16 and 40 columns fill whole ciphertexts. Every
    /// operator decrypts to the twin's value within CKKS noise (fresh and key-switch errors
    /// about `2^-20` relative at this `Δ`), at the plan's depth; the simulator's operation counts
    /// equal the evaluator's.
    #[test]
    fn fused_block_1_on_ckks_equals_the_twin() {
        use nectar_he::ckks::{CkksEvaluator, CkksParams, CkksParamsLiteral, CkksSecretKey};
        use nectar_linear::ckks_matmul::CkksOps;
        let t = tiny_bert();
        let (tokens, l) = (512, 512);
        let params = CkksParams::new(CkksParamsLiteral::from_bit_sizes(1 << 13, &[45, 30, 30, 30, 30], Some(45), 30).unwrap()).unwrap();
        let s = params.slots();
        let g = LayerGraph::build(&t.cfg, tokens);
        let (inputs, vals) = twin(&t, &g, tokens);
        let (n0, n1) = (crate::bert::block_names(0), crate::bert::block_names(1));
        let p = LayerParams { weights: &t.bw, cfg: &t.cfg, prev: &n0, cur: &n1 };
        let plan = FusionPlan::for_block(&t.cfg, "tiny", 2, tokens).unwrap();
        let b = plan.blocks().next().unwrap();
        assert_eq!(b.depth, 4);
        let idx: Vec<usize> = b.ops.iter().map(|o| g.ops.iter().position(|x| x.name == o.name).unwrap()).collect();
        let top = params.max_level();
        // The inputs, packed; first on the simulator for the rotation steps (Galois keys).
        let mut packed = HashMap::new();
        for &i in &idx {
            for &v in &g.ops[i].operands {
                if !matches!(v, Operand::Op(j) if idx.contains(&j)) {
                    let val = value(&g, &inputs, &vals, v);
                    packed.insert(v, (val.rows, val.cols, pack(val, l, s, false).unwrap()));
                }
            }
        }
        let sim = SlotSim::new(s);
        let sim_in = packed.iter().map(|(&v, (r, c, cts))| (v, CtTensor { rows: *r, cols: *c, scalar: false, cts: cts.iter().map(|x| sim.encrypt(x.clone(), top)).collect() })).collect();
        run_block(&sim, &g, &p, &idx, l, &sim_in).unwrap();
        let mut prg = Prg::new([6; 16]);
        let sk = CkksSecretKey::generate(&params, &mut prg);
        let ev = CkksEvaluator::new(&params)
            .with_relin_key(sk.relin_key(&params, &mut prg).unwrap())
            .with_galois_keys(sk.galois_keys(&params, &sim.rotation_steps(), false, &mut prg).unwrap());
        let ops = CkksOps::new(&ev);
        let enc = |x: &[f64], prg: &mut Prg| sk.encrypt(&params, &params.encode_real(x, top, params.default_scale()).unwrap(), prg).unwrap();
        let ck_in = packed.iter().map(|(&v, (r, c, cts))| (v, CtTensor { rows: *r, cols: *c, scalar: false, cts: cts.iter().map(|x| enc(x, &mut prg)).collect() })).collect();
        let before = ops.counts();
        let out = run_block(&ops, &g, &p, &idx, l, &ck_in).unwrap();
        let used = ops.counts() - before;
        let sc = sim.counts();
        assert_eq!((used.rotations, used.ct_ct_mults, used.ct_pt_mults, used.rescales), (sc.rotations, sc.ct_ct_mults, sc.ct_pt_mults, sc.rescales));
        for &i in &idx {
            let ct = &out[&i];
            let dec: Vec<Vec<f64>> = ct.cts.iter().map(|c| sk.decrypt_decode(&params, c).unwrap().iter().map(|z| z.re).collect()).collect();
            let got = unpack(&dec, ct.rows, ct.cols, l, s, ct.scalar).unwrap();
            let want = &vals[i];
            let err = got.data.iter().zip(&want.data).fold(0f64, |m, (a, b)| m.max((a - b).abs()));
            let mag = want.data.iter().fold(1f64, |m, v| m.max(v.abs()));
            eprintln!("block 1 on CKKS: {:<16} max error {err:.2e} (magnitude {mag:.1}), level {}", g.ops[i].name, ct.cts[0].level());
            assert!(err <= 1e-3 * mag, "{}: error {err}", g.ops[i].name);
        }
        let lowest = out.values().flat_map(|t| t.cts.iter().map(|c| c.level())).min().unwrap();
        assert_eq!(top - lowest, 4, "the plan's depth");
    }

    #[test]
    fn partial_ciphertexts_are_refused() {
        let t = Tensor::zeros(8, 12);
        assert!(pack(&t, 8, 64, false).is_err(), "12 columns of 8 rows do not fill 64-slot ciphertexts");
        assert!(pack(&Tensor::zeros(8, 16), 8, 64, false).is_ok());
        assert!(pack(&Tensor::zeros(9, 16), 8, 64, false).is_err());
        let v = pack(&Tensor::new(2, 1, vec![3.0, 4.0]).unwrap(), 4, 16, true).unwrap();
        assert_eq!(v, vec![vec![3.0, 4.0, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0]]);
    }
}
