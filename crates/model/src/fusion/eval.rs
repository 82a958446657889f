//! The plaintext twin of BLB's layer (BLB App. B; DESIGN.md "every secure operator has a
//! plaintext twin"): evaluates a [`LayerGraph`] in `f64` with the server's weights bound to the
//! operators by name and BLB's approximations — `exp(x) ≈ (1 + x/2^6)^(2^6)` on
//! `[T_EXP, 0]` and 0 below (Alg. 5), GeLU by BOLT's P4 pieces (Alg. 4), `rsqrt` and the
//! reciprocal exact (the MPC protocols' own error is theirs). A fused-block executor computes
//! the same values under CKKS / MPC; this evaluator is what it is checked against, and the
//! tests check it against the model's own layer (the graph's semantics).
//!
//! Binding (the steady-state graph of [`super::graph`] starts after the previous layer's
//! activation): `ffn.down` is the previous layer's FFN output product; post-norm, `ln2` is
//! the previous layer's output norm and `ln1` the current attention norm; pre-norm both norms
//! are the current layer's. `1/√dh` is folded into `attn.q` (weight and bias), and grouped
//! key/value heads are expanded into `attn.k` / `attn.v`'s columns (as the graph assumes).
//! Not bound yet (a clear error): RoPE's `cos` / `sin` and SiLU's coefficients (LLaMA).

use super::graph::{LayerGraph, Op, Operand};
use super::ops::{LinearKind, NonlinearKind, OpKind};
use crate::block::{BlockConfig, BlockNames, FfnKind, Placement};
use crate::reference::{BlockWeights, Dense};
use crate::ModelError;

/// BLB App. B Alg. 5 (REFERENCE §3.4): `exp(x) = 0` below `T_EXP` (after the row maximum).
pub const T_EXP: f64 = -13.0;

/// BOLT's P4 GeLU (BLB App. B Alg. 4; [`nectar_nn::gelu::P4_BOLT`]): `c0..c4` and the range.
const P4_C: [f64; 5] = nectar_nn::gelu::P4_BOLT.c;
const P4_R: f64 = nectar_nn::gelu::P4_BOLT.range;

/// The causal mask's value above the diagonal: below [`T_EXP`] after the row maximum is
/// subtracted, so the comparison zeroes the entry, and no lower than `−64`: exp's
/// `(1 + t/64)^64` runs under CKKS on every entry *before* that comparison, and for `t < −128`
/// it grows past the ciphertext modulus and corrupts every slot of its ciphertext (a mask of
/// `−10^4` reaches `10^140`). So the masked `t = s + mask − max` stays in `[−128, T_EXP)` as
/// long as a row's scores span less than `64 + T_EXP = 51` (a precondition BLB's exp shares:
/// any `t < −128` breaks it).
pub const CAUSAL_MASK: f64 = -64.0;

/// A row-major `rows × cols` tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f64>,
}

impl Tensor {
    pub fn new(rows: usize, cols: usize, data: Vec<f64>) -> Result<Self, ModelError> {
        if data.len() != rows * cols {
            return Err(ModelError::Input(format!("{} values for a {rows}x{cols} tensor", data.len())));
        }
        Ok(Tensor { rows, cols, data })
    }
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Tensor { rows, cols, data: vec![0.0; rows * cols] }
    }
    pub fn at(&self, r: usize, c: usize) -> f64 {
        self.data[r * self.cols + c]
    }
    fn map(&self, f: impl Fn(f64) -> f64) -> Self {
        Tensor { rows: self.rows, cols: self.cols, data: self.data.iter().map(|&v| f(v)).collect() }
    }
}

/// The server's values of one steady-state layer: `prev`'s FFN output product (post-norm:
/// and its output norm), `cur`'s attention, norms and FFN input.
pub struct LayerParams<'a> {
    pub weights: &'a BlockWeights,
    pub cfg: &'a BlockConfig,
    pub prev: &'a BlockNames,
    pub cur: &'a BlockNames,
}

/// One output column group of a product: `y[:, j] = x·W[j]^T + b[j]`, times `scale`.
pub(crate) struct Columns<'a> {
    pub(crate) dense: &'a Dense,
    /// Row of `dense.w` of each output column.
    pub(crate) rows: Vec<usize>,
    pub(crate) scale: f64,
}

impl LayerParams<'_> {
    fn norm_names(&self, prefix: &str) -> Result<&str, ModelError> {
        Ok(match (prefix, self.cfg.placement) {
            ("ln1", _) => &self.cur.norm1,
            ("ln2", Placement::Post) => &self.prev.norm2,
            ("ln2", Placement::Pre) => &self.cur.norm2,
            _ => return Err(ModelError::Unsupported(format!("norm {prefix}"))),
        })
    }

    /// The tensor holding output part `part` of a product whose parts have widths `outs`
    /// (one fused tensor or one per part), and the rows of that part.
    fn part<'b>(&'b self, names: &[String], outs: &[usize], part: usize) -> Result<(&'b Dense, Vec<usize>), ModelError> {
        let start: usize = outs[..part].iter().sum();
        match names {
            [one] => Ok((self.weights.dense(one)?, (start..start + outs[part]).collect())),
            many => Ok((self.weights.dense(&many[part])?, (0..outs[part]).collect())),
        }
    }

    /// The output columns of the `matmul_cp` named `name`.
    pub(crate) fn columns(&self, name: &str) -> Result<Columns<'_>, ModelError> {
        let cfg = self.cfg;
        let (d, dh, kvd) = (cfg.hidden, cfg.head_dim(), cfg.kv_dim());
        let qkv = [d, kvd, kvd];
        // Grouped key/value heads expanded to one column block per query head.
        let expand = |rows: Vec<usize>| -> Vec<usize> {
            let group = cfg.heads / cfg.kv_heads.max(1);
            (0..d).map(|j| rows[(j / dh / group) * dh + j % dh]).collect()
        };
        let (dense, rows, scale) = match name {
            "attn.q" => {
                let (w, r) = self.part(&self.cur.qkv, &qkv, 0)?;
                (w, r, cfg.query_scale().by)
            }
            "attn.k" | "attn.v" => {
                let (w, r) = self.part(&self.cur.qkv, &qkv, if name == "attn.k" { 1 } else { 2 })?;
                (w, expand(r), 1.0)
            }
            "attn.o" => (self.weights.dense(&self.cur.o)?, (0..d).collect(), 1.0),
            "ffn.down" => (self.weights.dense(&self.prev.ffn_out)?, (0..d).collect(), 1.0),
            "ffn.up" | "ffn.gate" => {
                let outs = cfg.ffn_in_outs();
                let part = match (cfg.ffn, name) {
                    (FfnKind::Plain, _) | (FfnKind::Gated, "ffn.gate") => 0,
                    (FfnKind::Gated, _) => 1,
                };
                let (w, r) = self.part(&self.cur.ffn_in, &outs, part)?;
                (w, r, 1.0)
            }
            _ => return Err(ModelError::Unsupported(format!("the BLB evaluator has no weight for {name}"))),
        };
        Ok(Columns { dense, rows, scale })
    }

    /// The plaintext operand of the `*_cp` operator `op` over a `rows × cols` tensor: one
    /// value per column (weights) or per entry (the causal mask).
    pub(crate) fn plain(&self, op: &Op, rows: usize, cols: usize) -> Result<Tensor, ModelError> {
        let per_col = |v: Vec<f64>| Tensor::new(1, v.len(), v);
        let constant = |c: f64| per_col(vec![c; cols]);
        let name = op.name.as_str();
        if let Some(base) = name.strip_suffix(".bias") {
            let c = self.columns(base)?;
            let b = c.dense.b.as_ref().ok_or_else(|| ModelError::Unsupported(format!("{base} has no bias")))?;
            return per_col(c.rows.iter().map(|&r| b[r] as f64 * c.scale).collect());
        }
        let (prefix, what) = name.split_once('.').unwrap_or((name, ""));
        match (prefix, what) {
            ("ln1" | "ln2", "gamma" | "beta") => {
                let norm = self.weights.norm(self.norm_names(prefix)?)?;
                let v = if what == "gamma" { Some(&norm.g) } else { norm.b.as_ref() };
                let v = v.ok_or_else(|| ModelError::Unsupported(format!("{name}: the norm has no β")))?;
                per_col(v.iter().map(|&x| x as f64).collect())
            }
            ("ln1" | "ln2", "mean" | "var") => constant(1.0 / self.cfg.hidden as f64),
            ("softmax", "exp.div64") => constant(1.0 / 64.0),
            ("softmax", "exp.add1") => constant(1.0),
            ("gelu", "c4x4") => constant(P4_C[4]),
            ("gelu", "c3x3") => constant(P4_C[3]),
            ("gelu", "c2x2") => constant(P4_C[2]),
            ("gelu", "c1px") => constant(0.5 + P4_C[1]),
            ("gelu", "c1mx") => constant(0.5 - P4_C[1]),
            ("gelu", "even_c0") => constant(P4_C[0]),
            ("attn", "causal_mask") => {
                // Per head block of `rows` key columns: key j > query i is masked.
                let mut t = Tensor::zeros(rows, cols);
                for i in 0..rows {
                    for c in 0..cols {
                        if c % rows > i {
                            t.data[i * cols + c] = CAUSAL_MASK;
                        }
                    }
                }
                Ok(t)
            }
            _ => Err(ModelError::Unsupported(format!("the BLB evaluator has no value for {name}"))),
        }
    }
}

/// `v` broadcast from a per-column `1 × cols` tensor (or taken entry-wise).
fn plain_at(p: &Tensor, r: usize, c: usize) -> f64 {
    if p.rows == 1 {
        p.data[c]
    } else {
        p.at(r, c)
    }
}

fn same_shape(a: &Tensor, b: &Tensor, name: &str) -> Result<(), ModelError> {
    if (a.rows, a.cols) != (b.rows, b.cols) {
        return Err(ModelError::Input(format!("{name}: {}x{} with {}x{}", a.rows, a.cols, b.rows, b.cols)));
    }
    Ok(())
}

/// `x` with the `rows × groups` scalar `s` applied per group of `cols/groups` columns.
fn per_group(x: &Tensor, s: &Tensor, f: impl Fn(f64, f64) -> f64) -> Result<Tensor, ModelError> {
    if s.rows != x.rows || s.cols == 0 || x.cols % s.cols != 0 {
        return Err(ModelError::Input(format!("scalar {}x{} over {}x{}", s.rows, s.cols, x.rows, x.cols)));
    }
    let w = x.cols / s.cols;
    let mut out = x.clone();
    for r in 0..x.rows {
        for c in 0..x.cols {
            out.data[r * x.cols + c] = f(x.at(r, c), s.at(r, c / w));
        }
    }
    Ok(out)
}

/// `rows × groups`: `f` folded over each group of `cols/groups` columns.
fn reduce(x: &Tensor, groups: usize, init: f64, f: impl Fn(f64, f64) -> f64) -> Result<Tensor, ModelError> {
    if groups == 0 || x.cols % groups != 0 {
        return Err(ModelError::Input(format!("{} columns in {groups} groups", x.cols)));
    }
    let w = x.cols / groups;
    let mut out = Tensor::zeros(x.rows, groups);
    for r in 0..x.rows {
        for g in 0..groups {
            out.data[r * groups + g] = (0..w).fold(init, |a, k| f(a, x.at(r, g * w + k)));
        }
    }
    Ok(out)
}

/// `Q_h·K_h^T` (`a`, `b` both `L × D`: output `L × H·M`) or `P_h·V_h` (`a` `L × H·M`, `b`
/// `M × D`: output `L × D`), head by head.
fn matmul_heads(a: &Tensor, b: &Tensor, heads: usize) -> Result<Tensor, ModelError> {
    if heads == 0 || b.cols % heads != 0 {
        return Err(ModelError::Input(format!("{} columns over {heads} heads", b.cols)));
    }
    let dh = b.cols / heads;
    if a.cols == b.cols {
        let m = b.rows;
        let mut out = Tensor::zeros(a.rows, heads * m);
        for i in 0..a.rows {
            for h in 0..heads {
                for j in 0..m {
                    out.data[i * heads * m + h * m + j] = (0..dh).map(|t| a.at(i, h * dh + t) * b.at(j, h * dh + t)).sum();
                }
            }
        }
        Ok(out)
    } else if a.cols == heads * b.rows {
        let m = b.rows;
        let mut out = Tensor::zeros(a.rows, b.cols);
        for i in 0..a.rows {
            for h in 0..heads {
                for t in 0..dh {
                    out.data[i * b.cols + h * dh + t] = (0..m).map(|j| a.at(i, h * m + j) * b.at(j, h * dh + t)).sum();
                }
            }
        }
        Ok(out)
    } else {
        Err(ModelError::Input(format!("matmul_cc of {}x{} and {}x{}", a.rows, a.cols, b.rows, b.cols)))
    }
}

/// The comparison `x ≥ threshold` of the `cmp` operator `name` (1 or 0).
pub(crate) fn threshold(name: &str) -> Result<f64, ModelError> {
    Ok(match name {
        "softmax.cmp_texp" => T_EXP,
        "gelu.cmp_m2.7" => -P4_R,
        "gelu.cmp_0" => 0.0,
        "gelu.cmp_2.7" => P4_R,
        _ => return Err(ModelError::Unsupported(format!("the BLB evaluator has no threshold for {name}"))),
    })
}

/// Evaluates the layer graph `g` on its [`LayerGraph::inputs`] (in order) and returns its
/// [`LayerGraph::outputs`] (name, value).
pub fn eval_layer(g: &LayerGraph, p: &LayerParams<'_>, inputs: &[Tensor]) -> Result<Vec<(String, Tensor)>, ModelError> {
    let vals = eval_values(g, p, inputs)?;
    g.outputs
        .iter()
        .map(|(name, v)| {
            let t = match v {
                Operand::Input(i) => inputs[*i].clone(),
                Operand::Op(i) => vals[*i].clone(),
            };
            Ok((name.clone(), t))
        })
        .collect()
}

/// The value of every operator of `g` (in [`LayerGraph::ops`] order) on `inputs`.
pub fn eval_values(g: &LayerGraph, p: &LayerParams<'_>, inputs: &[Tensor]) -> Result<Vec<Tensor>, ModelError> {
    if inputs.len() != g.inputs.len() {
        return Err(ModelError::Input(format!("{} inputs for a graph of {}", inputs.len(), g.inputs.len())));
    }
    for (t, i) in inputs.iter().zip(&g.inputs) {
        if (t.rows, t.cols) != (i.shape.rows, i.shape.cols) {
            return Err(ModelError::Input(format!("input {}: {}x{} for {}", i.name, t.rows, t.cols, i.shape)));
        }
    }
    let mut vals: Vec<Tensor> = Vec::with_capacity(g.ops.len());
    for op in &g.ops {
        let arg = |k: usize| -> Result<&Tensor, ModelError> {
            match op.operands.get(k) {
                Some(Operand::Input(i)) => Ok(&inputs[*i]),
                Some(Operand::Op(i)) => vals.get(*i).ok_or_else(|| ModelError::Input(format!("{}: operand not computed", op.name))),
                None => Err(ModelError::Input(format!("{}: operand {k} missing", op.name))),
            }
        };
        let x = arg(0)?;
        let sign = if op.subtract { -1.0 } else { 1.0 };
        let y = match op.kind {
            OpKind::Linear(LinearKind::MatmulCp) => {
                let c = p.columns(&op.name)?;
                let (d, n) = (c.dense, c.rows.len());
                if d.in_dim != x.cols {
                    return Err(ModelError::Input(format!("{}: {} inputs for a {}-input weight", op.name, x.cols, d.in_dim)));
                }
                let mut out = Tensor::zeros(x.rows, n);
                for r in 0..x.rows {
                    let xr = &x.data[r * x.cols..(r + 1) * x.cols];
                    for (j, &wr) in c.rows.iter().enumerate() {
                        let w = &d.w[wr * d.in_dim..(wr + 1) * d.in_dim];
                        out.data[r * n + j] = c.scale * xr.iter().zip(w).map(|(&a, &b)| a * b as f64).sum::<f64>();
                    }
                }
                out
            }
            OpKind::Linear(k @ (LinearKind::EwaddCp | LinearKind::EwmulCp)) => {
                let pl = p.plain(op, x.rows, x.cols)?;
                let mut out = x.clone();
                for r in 0..x.rows {
                    for c in 0..x.cols {
                        let (v, w) = (&mut out.data[r * x.cols + c], plain_at(&pl, r, c));
                        *v = if k == LinearKind::EwaddCp { *v + w } else { *v * w };
                    }
                }
                out
            }
            OpKind::Linear(LinearKind::EwaddCc) => {
                let b = arg(1)?;
                same_shape(x, b, &op.name)?;
                Tensor { rows: x.rows, cols: x.cols, data: x.data.iter().zip(&b.data).map(|(&u, &v)| u + sign * v).collect() }
            }
            OpKind::Linear(LinearKind::EwmulCc) => {
                let b = arg(1)?;
                same_shape(x, b, &op.name)?;
                Tensor { rows: x.rows, cols: x.cols, data: x.data.iter().zip(&b.data).map(|(&u, &v)| u * v).collect() }
            }
            OpKind::Linear(LinearKind::SaddCc) => per_group(x, arg(1)?, |u, s| u + sign * s)?,
            OpKind::Linear(LinearKind::SmulCc) => per_group(x, arg(1)?, |u, s| u * s)?,
            OpKind::Linear(LinearKind::Sum) => reduce(x, op.output.cols, 0.0, |a, v| a + v)?,
            OpKind::Linear(LinearKind::MatmulCc) => matmul_heads(x, arg(1)?, op.heads)?,
            OpKind::Linear(k @ (LinearKind::SaddCp | LinearKind::SmulCp)) => {
                return Err(ModelError::Unsupported(format!("{}: {} is not in the layer graphs", op.name, k.name())))
            }
            OpKind::Nonlinear(NonlinearKind::Rsqrt) => x.map(|v| 1.0 / (v + p.cfg.eps).sqrt()),
            OpKind::Nonlinear(NonlinearKind::Rec) => x.map(|v| 1.0 / v),
            OpKind::Nonlinear(NonlinearKind::Max) => reduce(x, op.output.cols, f64::NEG_INFINITY, f64::max)?,
            OpKind::Nonlinear(NonlinearKind::Cmp) => {
                let t = threshold(&op.name)?;
                x.map(|v| if v >= t { 1.0 } else { 0.0 })
            }
            OpKind::Nonlinear(NonlinearKind::Mux) => {
                // `[v, lo]`: v where lo; `[v, lo, hi]`: v where lo and not hi (one segment).
                let lo = arg(1)?;
                same_shape(x, lo, &op.name)?;
                let hi = if op.operands.len() > 2 { Some(arg(2)?) } else { None };
                let mut out = x.clone();
                for (i, o) in out.data.iter_mut().enumerate() {
                    let on = lo.data[i] * hi.map_or(1.0, |h| 1.0 - h.data[i]);
                    *o *= on;
                }
                out
            }
        };
        if (y.rows, y.cols) != (op.output.rows, op.output.cols) {
            return Err(ModelError::Input(format!("{}: computed {}x{}, planned {}", op.name, y.rows, y.cols, op.output)));
        }
        vals.push(y);
    }
    Ok(vals)
}

/// BOLT's P4 pieces of `u` as the graph's activation inputs (`prev.mux_f0`, `prev.mux_f1`,
/// `prev.mux_x`): `F0(u)` on `[−r, 0)`, `F1(u)` on `[0, r)`, `u` from `r`; their sum is P4's
/// GeLU. For the first layer's inputs and for tests.
pub fn p4_pieces(u: &Tensor) -> [Tensor; 3] {
    let [c0, c1, c2, c3, c4] = P4_C;
    let f = |x: f64, s: f64| c4 * x.powi(4) + s * c3 * x.powi(3) + c2 * x * x + (0.5 + s * c1) * x + c0;
    [
        u.map(|x| if (-P4_R..0.0).contains(&x) { f(x, -1.0) } else { 0.0 }),
        u.map(|x| if (0.0..P4_R).contains(&x) { f(x, 1.0) } else { 0.0 }),
        u.map(|x| if x >= P4_R { x } else { 0.0 }),
    ]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::{Activation, ModelConfig};
    use crate::fusion::graph::LayerGraph;
    use crate::weights::Weights;
    use nectar_math::Prg;

    /// `x·W^T + b` (rows of `x`), `scale` applied to the result.
    fn dense(d: &Dense, x: &Tensor) -> Tensor {
        let mut out = Tensor::zeros(x.rows, d.out_dim);
        for r in 0..x.rows {
            for j in 0..d.out_dim {
                let w = &d.w[j * d.in_dim..(j + 1) * d.in_dim];
                let b = d.b.as_ref().map_or(0.0, |b| b[j] as f64);
                out.data[r * d.out_dim + j] = b + (0..d.in_dim).map(|k| x.at(r, k) * w[k] as f64).sum::<f64>();
            }
        }
        out
    }

    fn cols(x: &Tensor, start: usize, n: usize) -> Tensor {
        let mut out = Tensor::zeros(x.rows, n);
        for r in 0..x.rows {
            for c in 0..n {
                out.data[r * n + c] = x.at(r, start + c);
            }
        }
        out
    }

    fn add(a: &Tensor, b: &Tensor) -> Tensor {
        Tensor { rows: a.rows, cols: a.cols, data: a.data.iter().zip(&b.data).map(|(x, y)| x + y).collect() }
    }

    fn norm(w: &BlockWeights, name: &str, x: &Tensor, eps: f64) -> Tensor {
        let n = w.norm(name).unwrap();
        let d = x.cols;
        let mut out = x.clone();
        for r in 0..x.rows {
            let row = &x.data[r * d..(r + 1) * d];
            let mean = row.iter().sum::<f64>() / d as f64;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / d as f64;
            for c in 0..d {
                out.data[r * d + c] = (row[c] - mean) / (var + eps).sqrt() * n.g[c] as f64 + n.b.as_ref().map_or(0.0, |b| b[c] as f64);
            }
        }
        out
    }

    /// `W_O·Attn(QKV(a))`: BLB's approximations (`approx`) or the exact softmax.
    fn attention(w: &BlockWeights, cfg: &BlockConfig, nm: &BlockNames, a: &Tensor, approx: bool) -> Tensor {
        let (d, h) = (cfg.hidden, cfg.heads);
        let dh = d / h;
        let qkv: Vec<Tensor> = match &nm.qkv[..] {
            [one] => {
                let t = dense(w.dense(one).unwrap(), a);
                (0..3).map(|i| cols(&t, i * d, d)).collect()
            }
            many => many.iter().map(|n| dense(w.dense(n).unwrap(), a)).collect()
        };
        let l = a.rows;
        let mut ctx = Tensor::zeros(l, d);
        for hh in 0..h {
            for i in 0..l {
                let s: Vec<f64> = (0..l)
                    .map(|j| {
                        let dot: f64 = (0..dh).map(|t| qkv[0].at(i, hh * dh + t) * qkv[1].at(j, hh * dh + t)).sum::<f64>() / (dh as f64).sqrt();
                        if cfg.causal && j > i { dot + CAUSAL_MASK } else { dot }
                    })
                    .collect();
                let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = s
                    .iter()
                    .enumerate()
                    .map(|(j, &v)| {
                        let t = v - m;
                        if approx {
                            if t >= T_EXP { (1.0 + t / 64.0).powi(64) } else { 0.0 }
                        } else if cfg.causal && j > i {
                            0.0
                        } else {
                            t.exp()
                        }
                    })
                    .collect();
                let z: f64 = e.iter().sum();
                for t in 0..dh {
                    ctx.data[i * d + hh * dh + t] = (0..l).map(|j| e[j] / z * qkv[2].at(j, hh * dh + t)).sum();
                }
            }
        }
        dense(w.dense(&nm.o).unwrap(), &ctx)
    }

    /// The activation of `u`: P4's pieces summed (`approx`) or the model's own.
    fn act(u: &Tensor, kind: Activation, approx: bool) -> Tensor {
        if approx {
            let [a, b, c] = p4_pieces(u);
            return add(&add(&a, &b), &c);
        }
        let mut v: Vec<f32> = u.data.iter().map(|&x| x as f32).collect();
        crate::ops::activate(&mut v, kind);
        Tensor { rows: u.rows, cols: u.cols, data: v.into_iter().map(|x| x as f64).collect() }
    }

    /// One layer from its input `x` (post-norm: the previous layer's output; pre-norm: the
    /// residual stream): returns (the norm output / stream value the graph hands over, the
    /// FFN pre-activation `u`).
    fn layer_head(w: &BlockWeights, cfg: &BlockConfig, nm: &BlockNames, x: &Tensor, approx: bool) -> (Tensor, Tensor) {
        match cfg.placement {
            Placement::Post => {
                let a = norm(w, &nm.norm1, &add(&attention(w, cfg, nm, x, approx), x), cfg.eps);
                let u = dense(w.dense(&nm.ffn_in[0]).unwrap(), &a);
                (a, u)
            }
            Placement::Pre => {
                let h = add(x, &attention(w, cfg, nm, &norm(w, &nm.norm1, x, cfg.eps), approx));
                let u = dense(w.dense(&nm.ffn_in[0]).unwrap(), &norm(w, &nm.norm2, &h, cfg.eps));
                (h, u)
            }
        }
    }

    /// The layer's tail: the FFN output and the next layer's input.
    fn layer_tail(w: &BlockWeights, cfg: &BlockConfig, nm: &BlockNames, res: &Tensor, u: &Tensor, approx: bool) -> Tensor {
        let f = add(&dense(w.dense(&nm.ffn_out).unwrap(), &act(u, cfg.activation, approx)), res);
        match cfg.placement {
            Placement::Post => norm(w, &nm.norm2, &f, cfg.eps),
            Placement::Pre => f,
        }
    }

    fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
        assert_eq!((a.rows, a.cols), (b.rows, b.cols));
        a.data.iter().zip(&b.data).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
    }

    /// Runs the steady-state graph of layer 0 → 1 of a tiny model and checks it against the
    /// layers computed directly: with BLB's approximations the same values up to rounding (the
    /// graph's semantics: every operator, weight binding and sign), and against the exact
    /// model within the approximations' error.
    fn check(kind: &str, tokens: usize) {
        let dir = tempfile::tempdir().unwrap();
        let (cfg, names): (BlockConfig, fn(usize) -> BlockNames) = match kind {
            "bert" => {
                crate::tiny::write_tiny_bert(dir.path(), 5).unwrap();
                let ModelConfig::Bert(c) = ModelConfig::from_file(&dir.path().join("config.json")).unwrap() else { panic!() };
                (crate::bert::block_config(&c), crate::bert::block_names)
            }
            _ => {
                crate::tiny::write_tiny_gpt2(dir.path(), 6).unwrap();
                let ModelConfig::Gpt2(c) = ModelConfig::from_file(&dir.path().join("config.json")).unwrap() else { panic!() };
                (crate::gpt2::block_config(&c), crate::gpt2::block_names)
            }
        };
        let weights = Weights::open(&dir.path().join("model.safetensors")).unwrap();
        let bw = BlockWeights::load(&weights, &cfg, names, 2).unwrap();
        let (n0, n1) = (names(0), names(1));
        let mut prg = Prg::new([3; 16]);
        let x0 = Tensor::new(tokens, cfg.hidden, (0..tokens * cfg.hidden).map(|_| (prg.next_u128() % 2001) as f64 / 1000.0 - 1.0).collect()).unwrap();
        let g = LayerGraph::build(&cfg, tokens);
        let params = LayerParams { weights: &bw, cfg: &cfg, prev: &n0, cur: &n1 };
        let mut errs = Vec::new();
        for approx in [true, false] {
            let (res0, u0) = layer_head(&bw, &cfg, &n0, &x0, approx);
            let x1 = layer_tail(&bw, &cfg, &n0, &res0, &u0, approx);
            let (res1, u1) = layer_head(&bw, &cfg, &n1, &x1, approx);
            let mut inputs: Vec<Tensor> = p4_pieces(&u0).into();
            inputs.push(res0);
            let out = eval_layer(&g, &params, &inputs).unwrap();
            let get = |n: &str| &out.iter().find(|(k, _)| k == n).unwrap_or_else(|| panic!("output {n}")).1;
            let act1 = add(&add(get("prev.mux_f0"), get("prev.mux_f1")), get("prev.mux_x"));
            let (e_res, e_act) = (max_diff(get("prev.residual"), &res1), max_diff(&act1, &act(&u1, cfg.activation, approx)));
            eprintln!("{kind} ({tokens} tokens) graph vs {} layer: residual {e_res:.2e}, activation {e_act:.2e}", if approx { "BLB-approximated" } else { "exact" });
            errs.push((e_res, e_act));
        }
        // Same arithmetic in another order: f64 rounding only.
        assert!(errs[0].0 < 1e-9 && errs[0].1 < 1e-9, "{kind}: graph semantics differ from the layer: {:?}", errs[0]);
        // Exact model: P4's error (≤ 0.02 on [−2.7, 2.7]) and the exp's (4.3e−3) through one layer.
        assert!(errs[1].0 < 0.1 && errs[1].1 < 0.1, "{kind}: approximation error {:?}", errs[1]);
    }

    #[test]
    fn bert_layer_graph_evaluates_to_the_layer() {
        check("bert", 7);
    }

    #[test]
    fn gpt2_layer_graph_evaluates_to_the_layer() {
        check("gpt2", 9);
    }

    /// Tiny BERT's block configuration and its two layers' weights (the directory lives as long
    /// as the fixture).
    pub(crate) struct TinyBert {
        pub(crate) _dir: tempfile::TempDir,
        pub(crate) cfg: BlockConfig,
        pub(crate) bw: BlockWeights,
    }

    pub(crate) fn tiny_bert() -> TinyBert {
        let dir = tempfile::tempdir().unwrap();
        crate::tiny::write_tiny_bert(dir.path(), 5).unwrap();
        let ModelConfig::Bert(c) = ModelConfig::from_file(&dir.path().join("config.json")).unwrap() else { panic!() };
        let cfg = crate::bert::block_config(&c);
        let weights = Weights::open(&dir.path().join("model.safetensors")).unwrap();
        let bw = BlockWeights::load(&weights, &cfg, crate::bert::block_names, 2).unwrap();
        TinyBert { _dir: dir, cfg, bw }
    }

    #[test]
    fn wrong_inputs_and_unbound_values_are_errors() {
        let TinyBert { cfg, bw, .. } = tiny_bert();
        let (n0, n1) = (crate::bert::block_names(0), crate::bert::block_names(1));
        let params = LayerParams { weights: &bw, cfg: &cfg, prev: &n0, cur: &n1 };
        let g = LayerGraph::build(&cfg, 4);
        assert!(eval_layer(&g, &params, &[]).is_err());
        let bad: Vec<Tensor> = g.inputs.iter().map(|i| Tensor::zeros(i.shape.rows + 1, i.shape.cols)).collect();
        assert!(eval_layer(&g, &params, &bad).is_err());
        // RoPE / SiLU values are not bound yet: LLaMA's graph is refused by name.
        let mut llama = cfg.clone();
        llama.activation = Activation::Silu;
        let gl = LayerGraph::build(&llama, 4);
        let zeros: Vec<Tensor> = gl.inputs.iter().map(|i| Tensor::zeros(i.shape.rows, i.shape.cols)).collect();
        let e = eval_layer(&gl, &LayerParams { cfg: &llama, ..params }, &zeros).unwrap_err();
        assert!(e.to_string().contains("silu"), "{e}");
    }
}
