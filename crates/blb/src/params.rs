//! The server's values of one steady-state layer as the evaluator ([`crate::eval`]) and the
//! executor ([`crate::exec`]) read them, bound to the graph's operators by name. The model
//! layer fills them from its checkpoint (weight layout, fused `q|k|v` tensors, grouped heads,
//! the `1/√dh` folded into `W_Q`).

use crate::error::BlbError;

/// A product's weight: `out × in_dim` row-major (`[out, in]`), and its bias per output row.
#[derive(Clone, Copy, Debug)]
pub struct Weight<'a> {
    pub w: &'a [f32],
    pub b: Option<&'a [f32]>,
    pub in_dim: usize,
}

/// The output columns of one `matmul_cp`: column `j` is `(x·W[rows[j]]^T + b[rows[j]])·scale`.
#[derive(Clone, Debug)]
pub struct Columns<'a> {
    pub weight: Weight<'a>,
    /// Row of the weight of each output column.
    pub rows: Vec<usize>,
    pub scale: f64,
}

/// A norm's `γ` and (LayerNorm) `β`.
#[derive(Clone, Copy, Debug)]
pub struct NormParams<'a> {
    pub gamma: &'a [f32],
    pub beta: Option<&'a [f32]>,
}

/// The server's values of one steady-state layer (the graph of [`crate::graph`] starts after
/// the previous layer's activation): `ffn.down` is the previous layer's FFN output product;
/// post-norm, `ln2` is the previous layer's output norm and `ln1` the current attention norm;
/// pre-norm both norms are the current layer's.
#[derive(Clone, Debug)]
pub struct LayerParams<'a> {
    /// `D`: the norms' `1/D`.
    pub hidden: usize,
    /// The norms' `ε` (the evaluator's `rsqrt`).
    pub eps: f64,
    /// The `matmul_cp` operators' columns by graph name (`attn.q`, `attn.k`, `attn.v`,
    /// `attn.o`, `ffn.down`, `ffn.up`, gated: `ffn.gate`).
    pub products: Vec<(&'static str, Columns<'a>)>,
    /// The norms by graph prefix (`ln1`, `ln2`).
    pub norms: Vec<(&'static str, NormParams<'a>)>,
    /// Rotary positions (LLaMA): the `cos` / `sin` constants of `attn.q` and `attn.k`.
    pub rope: Option<RopeParams>,
}

/// Rotary positions as HF's "rotate half" (dimension `t` of a head paired with `t + dh/2`,
/// frequency `theta^(−2t/dh)`), row `r` at position `r` (a prompt from position 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RopeParams {
    pub theta: f64,
    pub head_dim: usize,
}

impl RopeParams {
    /// `(cos, sin)` of column `c` at position `r`, the sign of the rotate-half folded into
    /// `sin` (`−` on a head's first half: `(x·W R)` takes the partner column unsigned).
    pub fn at(&self, r: usize, c: usize) -> (f64, f64) {
        let (dh, half) = (self.head_dim, self.head_dim / 2);
        let t = c % dh % half.max(1);
        let freq = self.theta.powf(-2.0 * t as f64 / dh as f64);
        let (sin, cos) = (r as f64 * freq).sin_cos();
        (cos, if c % dh < half { -sin } else { sin })
    }

    /// The column of the same head a rotate-half column `c` reads (`t ↔ t + dh/2`).
    pub fn partner(&self, c: usize) -> usize {
        let (dh, half) = (self.head_dim, self.head_dim / 2);
        c - c % dh + (c % dh + half) % dh
    }
}

impl LayerParams<'_> {
    /// The output columns of the `matmul_cp` named `name`.
    pub fn columns(&self, name: &str) -> Result<&Columns<'_>, BlbError> {
        by_name(&self.products, name).ok_or_else(|| BlbError::Unsupported(format!("the BLB evaluator has no weight for {name}")))
    }

    /// The norm of the graph's prefix `ln1` / `ln2`.
    pub fn norm(&self, prefix: &str) -> Result<&NormParams<'_>, BlbError> {
        by_name(&self.norms, prefix).ok_or_else(|| BlbError::Unsupported(format!("norm {prefix}")))
    }
}

fn by_name<'s, T>(list: &'s [(&'static str, T)], name: &str) -> Option<&'s T> {
    list.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
}
