//! BLB's fused blocks evaluated under CKKS (BLB §4–5): the operators of one
//! [`crate::plan::FusedBlock`] computed by the server alone on [`SlotOps`] — real ciphertexts
//! ([`nectar_linear::ckks_matmul::CkksOps`]) or the slot simulator — from the block's
//! MPC → CKKS inputs to its CKKS → MPC outputs. [`crate::eval`] is its plaintext twin.
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
//! Scales: every ct-pt product lands exactly on `Δ` ([`SlotOps::mul_values_to`]; a `matmul_cp`
//! by scaling its weight by `Δ/Δ_in`, [`SlotOps::relabel`]); ct-ct products are rescaled and
//! keep `Δ²/q`, and in BLB's graphs they are multiplied by a plaintext or converted before
//! anything is added to them, so additions meet equal scales (else the evaluator refuses the
//! addition). Operands at two levels are added at the lower one.
//!
//! Multi-head operands (BLB §5.1, Fig. 7e, on [`MhLayout`]s): `Q` and `K` of `Q_h·K_h^T` are
//! produced directly in [`Packing::MhSpatialFirst`] by `matmul_cp` with the weight's columns
//! permuted (free on a plaintext weight: output column `(k/c)·(s/L) + h + hs·(k mod c)` is
//! column `k` of head `h`); `K` there is `K^T` in [`Packing::MhReduceFirst`]. Operands that come
//! from MPC are packed by the conversion where their consumer wants them: `P = softmax` as
//! `A_h`, `V` as `B_h` already pre-rotated (§5.2), so `softmax·V_h` skips step 1 (depth 3,
//! [`matmul_cc_prerotated`]). The products leave in [`Packing::MhDiagonal`]; `W_O` reads that
//! packing directly ([`matmul_cp_diag`], App. C.2). Multi-head layouts need `L` = the tokens
//! (no padded keys).
//!
//! Not built (a clear error): per-group scalars (`L × H`, in MPC in BLB's graphs anyway) and
//! a tensor wanted in two packings.

use crate::error::BlbError;
use crate::eval::{plain, Tensor};
use crate::graph::{LayerGraph, Operand};
use crate::ops::{LinearKind, OpKind};
use crate::params::LayerParams;
use nectar_linear::ckks_matmul::{matmul_cc, matmul_cc_prerotated, matmul_cp_diag, matmul_cp_spatial, SlotOps};
use nectar_linear::ckks_packing::{Mat, MhLayout, Packing};
use std::collections::HashMap;

/// Where the entries of an `L × C` tensor live (AGREEMENT: both parties derive it from the
/// plan and the public shapes). Multi-head layouts split the columns into `H` heads of `C/H`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Spatial-first over whole ciphertexts (module doc).
    Spatial,
    /// A per-token scalar (`L × 1`) replicated in every block of one ciphertext.
    Scalar,
    /// Head `h` as `A_h` of [`Packing::MhSpatialFirst`] (also `K` as `K^T` in
    /// [`Packing::MhReduceFirst`]).
    MhA(MhLayout),
    /// Head `h` (`L × d`, zero-padded to `L × L`) as `B_h` of [`Packing::MhReduceFirst`],
    /// pre-rotated ([`MhLayout::prerotated_slot`]).
    MhBPre(MhLayout),
    /// Head `h` as `C_h` of [`Packing::MhDiagonal`].
    MhDiag(MhLayout),
}

impl Layout {
    /// Ciphertexts of a tensor of `cols` columns.
    pub fn cts(&self, cols: usize, l: usize, s: usize) -> usize {
        match self {
            Layout::Spatial => cols * l / s,
            Layout::Scalar => 1,
            Layout::MhA(m) | Layout::MhBPre(m) => m.operand_cts(),
            Layout::MhDiag(m) => m.rho(),
        }
    }

    /// `(ciphertext, slot)` of entry `(r, c)` of a tensor with `cols` columns.
    fn place(&self, r: usize, c: usize, cols: usize, l: usize, s: usize) -> (usize, usize) {
        let head = |m: &MhLayout| (c / (cols / m.heads), c % (cols / m.heads));
        match self {
            Layout::Spatial => ((c * l + r) / s, (c * l + r) % s),
            Layout::Scalar => (0, r),
            Layout::MhA(m) => {
                let (h, k) = head(m);
                Packing::MhSpatialFirst(*m).place(h, r, k)
            }
            Layout::MhBPre(m) => {
                let (h, k) = head(m);
                let (ct, slot) = Packing::MhReduceFirst(*m).place(h, r, k);
                (ct, m.prerotated_slot(slot))
            }
            Layout::MhDiag(m) => {
                let (h, k) = head(m);
                Packing::MhDiagonal(*m).place(h, r, k)
            }
        }
    }

    /// Checks that a `rows × cols` tensor fits this layout with `l`-slot blocks over `s`.
    pub fn check(&self, rows: usize, cols: usize, l: usize, s: usize) -> Result<(), BlbError> {
        if !l.is_power_of_two() || l > s || rows > l || cols == 0 {
            return Err(err(format!("{rows}x{cols} in blocks of L = {l} over {s} slots")));
        }
        match self {
            Layout::Spatial if !(cols * l).is_multiple_of(s) => Err(err(format!(
                "{cols} columns of {l} rows do not fill whole ciphertexts of {s} slots (module doc: the broadcast scalars would spill into padding)"
            ))),
            Layout::Scalar if cols != 1 => Err(err(format!("a {rows}x{cols} tensor is not a per-token scalar"))),
            Layout::MhA(m) | Layout::MhBPre(m) | Layout::MhDiag(m) => {
                let w = cols / m.heads.max(1);
                let fits = match self {
                    Layout::MhA(_) => w == m.reduce,
                    Layout::MhBPre(_) => m.reduce == m.l && w <= m.l,
                    _ => w <= m.l,
                };
                if rows != m.l || m.l != l || m.slots != s || !cols.is_multiple_of(m.heads) || !fits {
                    Err(err(format!("{rows}x{cols} does not fit the multi-head layout {m:?} (rows must be L = the tokens)")))
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }
}

/// A tensor under CKKS in a [`Layout`].
#[derive(Clone, Debug)]
pub struct CtTensor<C> {
    /// Real rows (tokens); spatial packings pad them to `L`.
    pub rows: usize,
    pub cols: usize,
    pub layout: Layout,
    pub cts: Vec<C>,
}

fn err(e: impl std::fmt::Display) -> BlbError {
    BlbError::Unsupported(format!("fused CKKS block: {e}"))
}

impl Layout {
    /// `ct·s + slot` of entry `(r, c)` of a `rows × cols` tensor (a scalar: block 0); where a
    /// CKKS → MPC conversion leaves its share.
    pub fn slot(&self, r: usize, c: usize, cols: usize, l: usize, s: usize) -> usize {
        let (ct, slot) = self.place(r, c, cols, l, s);
        ct * s + slot
    }

    /// Every `(row, column, ct·s + slot)` a `rows × cols` tensor occupies (a scalar once per
    /// block); what an MPC → CKKS conversion scatters the shares to.
    pub fn positions(&self, rows: usize, cols: usize, l: usize, s: usize) -> Result<Vec<(usize, usize, usize)>, BlbError> {
        self.check(rows, cols, l, s)?;
        let blocks = if *self == Layout::Scalar { s / l } else { 1 };
        let mut out = Vec::with_capacity(rows * cols * blocks);
        for r in 0..rows {
            for c in 0..cols {
                let (ct, slot) = self.place(r, c, cols, l, s);
                out.extend((0..blocks).map(|b| (r, c, ct * s + slot + b * l)));
            }
        }
        Ok(out)
    }
}

/// The slot vectors of `t` in `layout` (`l`-slot blocks over `s` slots; unused slots zero).
pub fn pack(t: &Tensor, layout: Layout, l: usize, s: usize) -> Result<Vec<Vec<f64>>, BlbError> {
    let mut out = vec![vec![0.0; s]; layout.cts(t.cols, l, s)];
    for (r, c, p) in layout.positions(t.rows, t.cols, l, s)? {
        out[p / s][p % s] = t.at(r, c);
    }
    Ok(out)
}

/// The inverse of [`pack`] (a scalar is read from block 0).
pub fn unpack(v: &[Vec<f64>], rows: usize, cols: usize, layout: Layout, l: usize, s: usize) -> Result<Tensor, BlbError> {
    layout.check(rows, cols, l, s)?;
    let mut t = Tensor::zeros(rows, cols);
    for r in 0..rows {
        for c in 0..cols {
            let (ct, slot) = layout.place(r, c, cols, l, s);
            t.data[r * cols + c] = *v.get(ct).and_then(|x| x.get(slot)).ok_or_else(|| err("too few slots to unpack"))?;
        }
    }
    Ok(t)
}

/// The multi-head layout of the `matmul_cc` operator `i` (`Q·K^T`: reduce `d`; `P·V`:
/// reduce `L`).
fn cc_layout(g: &LayerGraph, i: usize, l: usize, s: usize) -> Result<MhLayout, BlbError> {
    let op = &g.ops[i];
    let (a, b) = (g.shape(op.operands[0]), g.shape(op.operands[1]));
    let reduce = if a.cols == b.cols { a.cols / op.heads.max(1) } else { l };
    MhLayout::new(l, op.heads, reduce, s, None).map_err(err)
}

/// The layout each value read or computed by `block` is wanted in: multi-head where a
/// `matmul_cc` (through element-wise operators) consumes it, a scalar for `L × 1` values,
/// spatial-first otherwise.
pub fn layouts(g: &LayerGraph, block: &[usize], l: usize, s: usize) -> Result<HashMap<Operand, Layout>, BlbError> {
    let mut want: HashMap<Operand, Layout> = HashMap::new();
    let set = |v: Operand, lay: Layout, want: &mut HashMap<Operand, Layout>| -> Result<(), BlbError> {
        match want.get(&v) {
            Some(old) if *old != lay => Err(err(format!("{} is wanted in two packings ({old:?}, {lay:?})", g.value_name(v)))),
            _ => {
                want.insert(v, lay);
                Ok(())
            }
        }
    };
    // A `matmul_cc` leaves its product in the diagonal packing; an element-wise operator on it
    // whose output no operator of the block constrains (GPT-2's causal mask, converted out
    // next) keeps that packing.
    for &i in block {
        if matches!(g.ops[i].kind, OpKind::Linear(LinearKind::MatmulCc)) {
            want.insert(Operand::Op(i), Layout::MhDiag(cc_layout(g, i, l, s)?));
        }
    }
    for &i in block.iter().rev() {
        let op = &g.ops[i];
        let me = Operand::Op(i);
        match op.kind {
            OpKind::Linear(LinearKind::MatmulCc) => {
                let lay = cc_layout(g, i, l, s)?;
                let qk = g.shape(op.operands[0]).cols == g.shape(op.operands[1]).cols;
                let from_mpc = !matches!(op.operands[1], Operand::Op(j) if block.contains(&j));
                set(op.operands[0], Layout::MhA(lay), &mut want)?;
                set(op.operands[1], if qk || !from_mpc { Layout::MhA(lay) } else { Layout::MhBPre(lay) }, &mut want)?;
                set(me, Layout::MhDiag(lay), &mut want)?;
            }
            OpKind::Linear(LinearKind::EwaddCp | LinearKind::EwmulCp | LinearKind::EwaddCc | LinearKind::EwmulCc) => {
                let diag = op.operands.iter().find_map(|v| want.get(v).copied().filter(|w| matches!(w, Layout::MhDiag(_))));
                let lay = *want.entry(me).or_insert(diag.unwrap_or(if op.output.cols == 1 { Layout::Scalar } else { Layout::Spatial }));
                for &v in &op.operands {
                    set(v, lay, &mut want)?;
                }
            }
            OpKind::Linear(LinearKind::MatmulCp) => {
                want.entry(me).or_insert(Layout::Spatial);
                // `W_O` after `P·V` reads the diagonal packing; every other input is spatial.
                let src = op.operands[0];
                let diag = matches!(src, Operand::Op(j) if block.contains(&j) && matches!(g.ops[j].kind, OpKind::Linear(LinearKind::MatmulCc)));
                if !diag {
                    set(src, Layout::Spatial, &mut want)?;
                }
            }
            _ => {
                want.entry(me).or_insert(if op.output.cols == 1 { Layout::Scalar } else { Layout::Spatial });
                for &v in &op.operands {
                    let lay = if g.shape(v).cols == 1 { Layout::Scalar } else { Layout::Spatial };
                    set(v, lay, &mut want)?;
                }
            }
        }
    }
    Ok(want)
}

/// A ciphertext-by-ciphertext step of an element-wise or scalar operator.
type CtOp<'f, C> = dyn Fn(&C, &C) -> Result<C, nectar_linear::LinearError> + 'f;

/// Runs the graph operators `block` (indices into [`LayerGraph::ops`], in graph order) under
/// CKKS with `l`-slot blocks; `inputs` holds every operand the block reads from outside it
/// (graph inputs or earlier operators, as converted from MPC) in the layouts of [`layouts`].
/// Returns the value of every operator of the block.
pub fn run_block<O: SlotOps>(
    ops: &O,
    g: &LayerGraph,
    p: &LayerParams<'_>,
    block: &[usize],
    l: usize,
    inputs: &HashMap<Operand, CtTensor<O::Ct>>,
) -> Result<HashMap<usize, CtTensor<O::Ct>>, BlbError> {
    let s = ops.slots();
    let want = layouts(g, block, l, s)?;
    let mut vals: HashMap<usize, CtTensor<O::Ct>> = HashMap::new();
    let lin = |e: nectar_linear::LinearError| err(e);
    for &i in block {
        let op = g.ops.get(i).ok_or_else(|| err(format!("no operator {i}")))?;
        let arg = |k: usize| -> Result<&CtTensor<O::Ct>, BlbError> {
            let v = *op.operands.get(k).ok_or_else(|| err(format!("{}: operand {k} missing", op.name)))?;
            let t = match v {
                Operand::Op(j) if vals.contains_key(&j) => &vals[&j],
                _ => inputs.get(&v).ok_or_else(|| err(format!("{}: operand {} is neither in the block nor an input", op.name, g.value_name(v))))?,
            };
            if want.get(&v).is_some_and(|w| *w != t.layout) {
                return Err(err(format!("{}: operand {} is in {:?}, wanted {:?}", op.name, g.value_name(v), t.layout, want[&v])));
            }
            t.layout.check(t.rows, t.cols, l, s)?;
            if t.cts.len() != t.layout.cts(t.cols, l, s) {
                return Err(err(format!("{}: {} ciphertexts for {}", op.name, t.cts.len(), g.value_name(v))));
            }
            Ok(t)
        };
        let x = arg(0)?;
        let (rows, cols) = (op.output.rows, op.output.cols);
        let out_layout = want.get(&Operand::Op(i)).copied().unwrap_or(Layout::Spatial);
        let per_ct = |f: &CtOp<'_, O::Ct>, b: &CtTensor<O::Ct>| -> Result<Vec<O::Ct>, BlbError> {
            let scalar = b.layout == Layout::Scalar && x.layout != Layout::Scalar;
            if scalar && x.layout != Layout::Spatial {
                return Err(err(format!("{}: a per-token scalar over a {:?} tensor", op.name, x.layout)));
            }
            if !scalar && b.layout != x.layout {
                return Err(err(format!("{}: operands in {:?} and {:?}", op.name, x.layout, b.layout)));
            }
            x.cts
                .iter()
                .enumerate()
                .map(|(k, c)| f(c, if scalar { &b.cts[0] } else { &b.cts[k] }).map_err(lin))
                .collect()
        };
        let product = |a: &O::Ct, b: &O::Ct| ops.rescale(&ops.relin(&ops.mul(a, b)?)?);
        let (cts, layout) = match op.kind {
            OpKind::Linear(LinearKind::MatmulCp) => {
                let c = p.columns(&op.name)?;
                let (din, dw) = (c.weight.in_dim, c.weight.w);
                // The kernels encode the weight at the rescale prime's scale, which keeps the
                // input's scale; an input off Δ (after a ct-ct product: Δ²/q) is brought back
                // by scaling the weight by Δ/Δ_in and reading the result at Δ.
                let target = ops.scale();
                let ratio = target / ops.scale_of(&x.cts[0]);
                let w_at = |ci: usize, co: usize| dw[c.rows[co] * din + ci] as f64 * c.scale * ratio;
                let (cts, layout) = match (x.layout, out_layout) {
                    (Layout::MhDiag(m), Layout::Spatial) => {
                        let w = Mat::from_fn(din, c.rows.len(), w_at);
                        (matmul_cp_diag(ops, &m, &x.cts, &w).map_err(lin)?, Layout::Spatial)
                    }
                    (Layout::Spatial, Layout::Spatial) => {
                        let w = Mat::from_fn(din, c.rows.len(), w_at);
                        (matmul_cp_spatial(ops, &x.cts, l, &w).map_err(lin)?, Layout::Spatial)
                    }
                    (Layout::Spatial, Layout::MhA(m)) => {
                        // Output column (k/c)·nb + h + hs·(k mod c) is column k of head h.
                        let (nb, d) = (s / l, cols / m.heads);
                        let mut src = vec![None; m.operand_cts() * nb];
                        for h in 0..m.heads {
                            for k in 0..d {
                                src[(k / m.c) * nb + h + m.hs * (k % m.c)] = Some(h * d + k);
                            }
                        }
                        let w = Mat::from_fn(din, src.len(), |ci, co| src[co].map_or(0.0, |o| w_at(ci, o)));
                        (matmul_cp_spatial(ops, &x.cts, l, &w).map_err(lin)?, out_layout)
                    }
                    (a, b) => return Err(err(format!("{}: matmul_cp from {a:?} to {b:?}", op.name))),
                };
                let cts = cts.iter().map(|ct| ops.relabel(ct, target)).collect::<Result<Vec<_>, _>>().map_err(lin)?;
                (cts, layout)
            }
            OpKind::Linear(k @ (LinearKind::EwaddCp | LinearKind::EwmulCp)) => {
                let pl = plain(p, op, rows, cols, g.keys)?;
                let full = if pl.rows == 1 { Tensor::new(rows, cols, (0..rows * cols).map(|i| pl.data[i % cols]).collect())? } else { pl };
                let slots = pack(&full, x.layout, l, s)?;
                let cts = x
                    .cts
                    .iter()
                    .zip(&slots)
                    .map(|(c, v)| if k == LinearKind::EwaddCp { ops.add_values(c, v) } else { ops.mul_values_to(c, v, ops.scale()) })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(lin)?;
                (cts, x.layout)
            }
            OpKind::Linear(LinearKind::EwaddCc | LinearKind::SaddCc) => {
                let f: &CtOp<'_, O::Ct> =
                    if op.subtract { &|a: &O::Ct, b: &O::Ct| ops.sub(a, b) } else { &|a: &O::Ct, b: &O::Ct| ops.add(a, b) };
                (per_ct(f, arg(1)?)?, x.layout)
            }
            OpKind::Linear(LinearKind::EwmulCc | LinearKind::SmulCc) => (per_ct(&product, arg(1)?)?, x.layout),
            OpKind::Linear(LinearKind::Sum) if cols == 1 && x.layout == Layout::Spatial => {
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
                (vec![m], Layout::Scalar)
            }
            OpKind::Linear(LinearKind::MatmulCc) => {
                let b = arg(1)?;
                match (x.layout, b.layout) {
                    (Layout::MhA(m), Layout::MhA(n)) if m == n => (matmul_cc(ops, &m, &x.cts, &b.cts).map_err(lin)?, Layout::MhDiag(m)),
                    (Layout::MhA(m), Layout::MhBPre(n)) if m == n => (matmul_cc_prerotated(ops, &m, &x.cts, &b.cts).map_err(lin)?, Layout::MhDiag(m)),
                    (a, b) => return Err(err(format!("{}: matmul_cc of {a:?} and {b:?}", op.name))),
                }
            }
            _ => return Err(err(format!("{} ({:?}) is not built yet (module doc)", op.name, op.kind))),
        };
        vals.insert(i, CtTensor { rows, cols, layout, cts });
    }
    Ok(vals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_ciphertexts_are_refused() {
        let t = Tensor::zeros(8, 12);
        assert!(pack(&t, Layout::Spatial, 8, 64).is_err(), "12 columns of 8 rows do not fill 64-slot ciphertexts");
        assert!(pack(&Tensor::zeros(8, 16), Layout::Spatial, 8, 64).is_ok());
        assert!(pack(&Tensor::zeros(9, 16), Layout::Spatial, 8, 64).is_err());
        let m = MhLayout::new(8, 4, 4, 64, None).unwrap();
        assert!(pack(&Tensor::zeros(7, 16), Layout::MhA(m), 8, 64).is_err(), "multi-head layouts need rows = L");
        let v = pack(&Tensor::new(2, 1, vec![3.0, 4.0]).unwrap(), Layout::Scalar, 4, 16).unwrap();
        assert_eq!(v, vec![vec![3.0, 4.0, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0]]);
    }
}
