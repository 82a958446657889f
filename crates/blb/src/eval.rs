//! The plaintext twin of BLB's layer (BLB App. B; DESIGN.md "every secure operator has a
//! plaintext twin"): evaluates a [`LayerGraph`] in `f64` with the server's weights bound to the
//! operators by name and BLB's approximations — `exp(x) ≈ (1 + x/2^6)^(2^6)` on
//! `[T_EXP, 0]` and 0 below (Alg. 5), GeLU by BOLT's P4 pieces (Alg. 4), `rsqrt` and the
//! reciprocal exact (the MPC protocols' own error is theirs). A fused-block executor computes
//! the same values under CKKS / MPC; this evaluator is what it is checked against, and the
//! model layer's tests check it against its own layer (the graph's semantics).
//!
//! The server's values come bound to the operators by name ([`LayerParams`], filled by the
//! model layer: `1/√dh` folded into `attn.q`'s weight and bias, grouped key/value heads
//! expanded into `attn.k` / `attn.v`'s columns, as the graph assumes).
//! LLaMA's: RoPE's `cos` / `sin` per position and column ([`crate::params::RopeParams`]) and
//! BumbleBee's SiLU segments.

use crate::error::BlbError;
use crate::graph::{LayerGraph, Op, Operand};
use crate::ops::{LinearKind, NonlinearKind, OpKind};
use crate::params::LayerParams;

/// BLB App. B Alg. 5 (REFERENCE §3.4): `exp(x) = 0` below `T_EXP` (after the row maximum).
pub const T_EXP: f64 = -13.0;

/// BOLT's P4 GeLU (BLB App. B Alg. 4; [`nectar_nn::gelu::P4_BOLT`]): `c0..c4` and the range.
const P4_C: [f64; 5] = nectar_nn::gelu::P4_BOLT.c;
const P4_R: f64 = nectar_nn::gelu::P4_BOLT.range;

/// BumbleBee's SiLU segments (App. D; the graph's SiLU; [`nectar_nn::silu::seg4`]).
const SILU: nectar_nn::silu::seg4::SiluParams = nectar_nn::silu::seg4::SILU_BUMBLEBEE;

/// The causal mask's value above the diagonal (and the padded keys' mask's): below [`T_EXP`] after the row maximum is
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
    pub fn new(rows: usize, cols: usize, data: Vec<f64>) -> Result<Self, BlbError> {
        if data.len() != rows * cols {
            return Err(BlbError::Input(format!("{} values for a {rows}x{cols} tensor", data.len())));
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

/// The plaintext operand of the `*_cp` operator `op` over a `rows × cols` tensor: one value
/// per column (weights) or per entry (the causal and padded-key masks; `keys`: the real
/// tokens, [`LayerGraph::keys`]).
pub(crate) fn plain(p: &LayerParams<'_>, op: &Op, rows: usize, cols: usize, keys: usize) -> Result<Tensor, BlbError> {
    let per_col = |v: Vec<f64>| Tensor::new(1, v.len(), v);
    let constant = |c: f64| per_col(vec![c; cols]);
    let name = op.name.as_str();
    if let Some(base) = name.strip_suffix(".bias") {
        let c = p.columns(base)?;
        let b = c.weight.b.ok_or_else(|| BlbError::Unsupported(format!("{base} has no bias")))?;
        return per_col(c.rows.iter().map(|&r| b[r] as f64 * c.scale).collect());
    }
    let (prefix, what) = name.split_once('.').unwrap_or((name, ""));
    match (prefix, what) {
        ("ln1" | "ln2", "gamma" | "beta") => {
            let norm = p.norm(prefix)?;
            let v = if what == "gamma" { Some(norm.gamma) } else { norm.beta };
            let v = v.ok_or_else(|| BlbError::Unsupported(format!("{name}: the norm has no β")))?;
            per_col(v.iter().map(|&x| x as f64).collect())
        }
        ("ln1" | "ln2", "mean" | "var") => constant(1.0 / p.hidden as f64),
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
        ("attn", "q.cos" | "k.cos" | "q.sin" | "k.sin") => {
            let rope = p.rope.ok_or_else(|| BlbError::Unsupported(format!("{name}: the layer has no rotary positions")))?;
            let sin = what.ends_with("sin");
            let mut t = Tensor::zeros(rows, cols);
            for r in 0..rows {
                for c in 0..cols {
                    let (cs, sn) = rope.at(r, c);
                    t.data[r * cols + c] = if sin { sn } else { cs };
                }
            }
            Ok(t)
        }
        ("silu", "a2x2") => constant(SILU.a[2]),
        ("silu", "a1x") => constant(SILU.a[1]),
        ("silu", "pa") => constant(SILU.a[0]),
        ("silu", "b6x6") => constant(SILU.b[4]),
        ("silu", "b4x4") => constant(SILU.b[3]),
        ("silu", "b2x2") => constant(SILU.b[2]),
        ("silu", "b1x") => constant(SILU.b[1]),
        ("silu", "pb") => constant(SILU.b[0]),
        ("attn", "key_mask") => {
            // Per head block of `rows` key columns: the padded keys `keys..rows` are masked.
            let mut t = Tensor::zeros(rows, cols);
            for i in 0..rows {
                for c in 0..cols {
                    if c % rows >= keys {
                        t.data[i * cols + c] = CAUSAL_MASK;
                    }
                }
            }
            Ok(t)
        }
        _ => Err(BlbError::Unsupported(format!("the BLB evaluator has no value for {name}"))),
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

fn same_shape(a: &Tensor, b: &Tensor, name: &str) -> Result<(), BlbError> {
    if (a.rows, a.cols) != (b.rows, b.cols) {
        return Err(BlbError::Input(format!("{name}: {}x{} with {}x{}", a.rows, a.cols, b.rows, b.cols)));
    }
    Ok(())
}

/// `x` with the `rows × groups` scalar `s` applied per group of `cols/groups` columns.
fn per_group(x: &Tensor, s: &Tensor, f: impl Fn(f64, f64) -> f64) -> Result<Tensor, BlbError> {
    if s.rows != x.rows || s.cols == 0 || !x.cols.is_multiple_of(s.cols) {
        return Err(BlbError::Input(format!("scalar {}x{} over {}x{}", s.rows, s.cols, x.rows, x.cols)));
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
fn reduce(x: &Tensor, groups: usize, init: f64, f: impl Fn(f64, f64) -> f64) -> Result<Tensor, BlbError> {
    if groups == 0 || !x.cols.is_multiple_of(groups) {
        return Err(BlbError::Input(format!("{} columns in {groups} groups", x.cols)));
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
fn matmul_heads(a: &Tensor, b: &Tensor, heads: usize) -> Result<Tensor, BlbError> {
    if heads == 0 || !b.cols.is_multiple_of(heads) {
        return Err(BlbError::Input(format!("{} columns over {heads} heads", b.cols)));
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
        Err(BlbError::Input(format!("matmul_cc of {}x{} and {}x{}", a.rows, a.cols, b.rows, b.cols)))
    }
}

/// The comparison `x ≥ threshold` of the `cmp` operator `name` (1 or 0).
pub fn threshold(name: &str) -> Result<f64, BlbError> {
    Ok(match name {
        "softmax.cmp_texp" => T_EXP,
        "gelu.cmp_m2.7" => -P4_R,
        "gelu.cmp_0" => 0.0,
        "gelu.cmp_2.7" => P4_R,
        "silu.cmp_m8" => SILU.t[0],
        "silu.cmp_m4" => SILU.t[1],
        "silu.cmp_4" => SILU.t[2],
        _ => return Err(BlbError::Unsupported(format!("the BLB evaluator has no threshold for {name}"))),
    })
}

/// Evaluates the layer graph `g` on its [`LayerGraph::inputs`] (in order) and returns its
/// [`LayerGraph::outputs`] (name, value).
pub fn eval_layer(g: &LayerGraph, p: &LayerParams<'_>, inputs: &[Tensor]) -> Result<Vec<(String, Tensor)>, BlbError> {
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
pub fn eval_values(g: &LayerGraph, p: &LayerParams<'_>, inputs: &[Tensor]) -> Result<Vec<Tensor>, BlbError> {
    if inputs.len() != g.inputs.len() {
        return Err(BlbError::Input(format!("{} inputs for a graph of {}", inputs.len(), g.inputs.len())));
    }
    for (t, i) in inputs.iter().zip(&g.inputs) {
        if (t.rows, t.cols) != (i.shape.rows, i.shape.cols) {
            return Err(BlbError::Input(format!("input {}: {}x{} for {}", i.name, t.rows, t.cols, i.shape)));
        }
    }
    let mut vals: Vec<Tensor> = Vec::with_capacity(g.ops.len());
    for op in &g.ops {
        let arg = |k: usize| -> Result<&Tensor, BlbError> {
            match op.operands.get(k) {
                Some(Operand::Input(i)) => Ok(&inputs[*i]),
                Some(Operand::Op(i)) => vals.get(*i).ok_or_else(|| BlbError::Input(format!("{}: operand not computed", op.name))),
                None => Err(BlbError::Input(format!("{}: operand {k} missing", op.name))),
            }
        };
        let x = arg(0)?;
        let sign = if op.subtract { -1.0 } else { 1.0 };
        let y = match op.kind {
            OpKind::Linear(LinearKind::MatmulCp) => {
                let c = p.columns(&op.name)?;
                let (d, n) = (c.weight, c.rows.len());
                if d.in_dim != x.cols {
                    return Err(BlbError::Input(format!("{}: {} inputs for a {}-input weight", op.name, x.cols, d.in_dim)));
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
                let pl = plain(p, op, x.rows, x.cols, g.keys)?;
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
                return Err(BlbError::Unsupported(format!("{}: {} is not in the layer graphs", op.name, k.name())))
            }
            OpKind::Nonlinear(NonlinearKind::Rsqrt) => x.map(|v| 1.0 / (v + p.eps).sqrt()),
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
            return Err(BlbError::Input(format!("{}: computed {}x{}, planned {}", op.name, y.rows, y.cols, op.output)));
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
