//! The operator graph of one transformer layer at BLB's granularity (BLB §4, App. B):
//! LayerNorm per Alg. 3, softmax per Alg. 5, GeLU per Alg. 4 (BOLT's P4), SiLU per BumbleBee
//! App. D (REFERENCE §3.3), RMSNorm as LayerNorm without the mean.
//!
//! The graph is one layer *in steady state*, cut right after the previous layer's activation
//! (its muxes): the linear tail of one layer fuses with the head of the next, as in BLB
//! Fig. 10, whose block 1 (depth 4) is the FFN output product with the next norm's head. The
//! values the previous layer hands over (its activation pieces, its residual, LLaMA's `up`)
//! are the graph's [`LayerInput`]s, already in MPC; for the first layer they are the
//! embeddings' instead. The `1/√dh` of attention is folded into `W_Q` (as the model's
//! block does).

use crate::ops::{LinearKind, NonlinearKind, OpKind};
use crate::spec::{Activation, LayerSpec};
use serde::{Deserialize, Serialize};

/// A `(L, D)` tensor shape: `rows` tokens (spatial), `cols` values per token (reduce).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    pub rows: usize,
    pub cols: usize,
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}

/// Where an operand comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// [`LayerGraph::inputs`]`[i]`.
    Input(usize),
    /// The output of [`LayerGraph::ops`]`[i]`.
    Op(usize),
}

/// The plaintext operand of a `*_cp` operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Plain {
    /// The server's weights (secret).
    Weight,
    /// A public constant (`1/D`, `2^-6`, a polynomial coefficient, the causal mask...).
    Const,
}

/// One operator of the layer graph.
#[derive(Clone, Debug)]
pub struct Op {
    /// Dotted name (`attn.qk`, `ln1.sum`).
    pub name: String,
    pub kind: OpKind,
    /// Ciphertext / share operands; for scalar operators `[full, scalar]`, for `matmul_cc`
    /// `[A, B]`.
    pub operands: Vec<Operand>,
    /// Shape of the first operand.
    pub input: Shape,
    pub output: Shape,
    pub plain: Option<Plain>,
    /// Heads packed together (`matmul_cc`, multi-head packing of BLB §5.1); 1 otherwise.
    pub heads: usize,
    /// `ewadd_cc` / `sadd_cc` that subtract their second operand (`x − μ`, `x − max`, P4's
    /// `− c3·x³` on the negative side): the same cost as an addition, so the plan does not
    /// tell them apart; the evaluator ([`crate::eval`]) does.
    pub subtract: bool,
}

/// A value handed over from the previous layer.
#[derive(Clone, Debug)]
pub struct LayerInput {
    pub name: String,
    pub shape: Shape,
}

/// The operators of one layer, in a topological order.
#[derive(Clone, Debug)]
pub struct LayerGraph {
    pub inputs: Vec<LayerInput>,
    pub ops: Vec<Op>,
    /// Values handed to the next layer (name, producer).
    pub outputs: Vec<(String, Operand)>,
    /// Real tokens of the `L` rows: rows `keys..L` are padding (copies of a real row, their
    /// outputs dropped), their keys masked out of every softmax ([`Self::build_padded`]).
    pub keys: usize,
}

impl LayerGraph {
    /// Shape of an operand.
    pub fn shape(&self, v: Operand) -> Shape {
        match v {
            Operand::Input(i) => self.inputs[i].shape,
            Operand::Op(i) => self.ops[i].output,
        }
    }

    /// Name of an operand's value.
    pub fn value_name(&self, v: Operand) -> &str {
        match v {
            Operand::Input(i) => &self.inputs[i].name,
            Operand::Op(i) => &self.ops[i].name,
        }
    }

    /// Operators consuming operand `v`, by index.
    pub fn consumers(&self, v: Operand) -> Vec<usize> {
        (0..self.ops.len())
            .filter(|&i| self.ops[i].operands.contains(&v))
            .collect()
    }

    /// The steady-state layer graph of a layer's shape for `tokens` tokens.
    pub fn build(cfg: &LayerSpec, tokens: usize) -> LayerGraph {
        LayerGraph::build_part(cfg, tokens, Part::Steady)
    }

    /// The graph of one [`Part`] of a model's layer stack.
    pub fn build_part(cfg: &LayerSpec, tokens: usize, part: Part) -> LayerGraph {
        LayerGraph::build_padded(cfg, tokens, tokens, part)
    }

    /// The graph of one [`Part`] for `keys` real tokens padded to `tokens` rows (ours: BLB
    /// packs `L` = a power of two filling whole ciphertexts, and pads nothing). Without a
    /// causal mask, the padded keys get their own mask `attn.key_mask` on `Q·K^T` (the causal
    /// mask's value, [`crate::eval::CAUSAL_MASK`], on key columns `keys..L`), so no real query
    /// attends to them; under a causal mask they come after every real query already.
    pub fn build_padded(cfg: &LayerSpec, tokens: usize, keys: usize, part: Part) -> LayerGraph {
        let mut b = Builder {
            cfg,
            l: tokens,
            g: LayerGraph {
                inputs: vec![],
                ops: vec![],
                outputs: vec![],
                keys: keys.min(tokens),
            },
        };
        b.layer(part);
        b.g
    }
}

/// Which stretch of a model's layer stack a graph covers. A stack of `K` layers is
/// `First` (layer 0), `Steady` `K − 1` times (the tail of layer `i − 1` fused with the head of
/// layer `i`), then `Last` (the tail of layer `K − 1`), so every operator of every layer runs
/// exactly once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// From the stack's input `x` (post-norm: the embeddings' normalised output, the first
    /// attention's input; pre-norm: the residual stream) to layer 0's activation pieces.
    First,
    /// From the previous layer's activation pieces to this layer's ([`LayerGraph::build`]).
    Steady,
    /// From the last layer's activation pieces to the stack's output `x` (post-norm: after
    /// its output norm; pre-norm: the residual stream, before the final norm).
    Last,
}

struct Builder<'a> {
    cfg: &'a LayerSpec,
    l: usize,
    g: LayerGraph,
}

/// Activation pieces handed over: the mux outputs to add up.
const GELU_PIECES: [&str; 3] = ["mux_f0", "mux_f1", "mux_x"];
const SILU_PIECES: [&str; 3] = ["mux_pa", "mux_pb", "mux_x"];

impl Builder<'_> {
    fn sh(&self, cols: usize) -> Shape {
        Shape { rows: self.l, cols }
    }

    fn input(&mut self, name: &str, cols: usize) -> Operand {
        let shape = self.sh(cols);
        self.g.inputs.push(LayerInput {
            name: name.into(),
            shape,
        });
        Operand::Input(self.g.inputs.len() - 1)
    }

    fn push(
        &mut self,
        name: &str,
        kind: OpKind,
        operands: &[Operand],
        cols: usize,
        plain: Option<Plain>,
        heads: usize,
    ) -> Operand {
        let input = self.g.shape(operands[0]);
        let output = self.sh(cols);
        self.g.ops.push(Op {
            name: name.into(),
            kind,
            operands: operands.to_vec(),
            input,
            output,
            plain,
            heads,
            subtract: false,
        });
        Operand::Op(self.g.ops.len() - 1)
    }

    /// `a − b` (an `ewadd_cc` that subtracts, or a `sadd_cc` of a broadcast scalar).
    fn sub(&mut self, name: &str, kind: LinearKind, a: Operand, b: Operand) -> Operand {
        let v = self.lin(name, kind, &[a, b], None);
        if let Some(op) = self.g.ops.last_mut() {
            op.subtract = true;
        }
        v
    }

    fn cols(&self, v: Operand) -> usize {
        self.g.shape(v).cols
    }

    fn lin(&mut self, name: &str, k: LinearKind, xs: &[Operand], plain: Option<Plain>) -> Operand {
        let cols = self.cols(xs[0]);
        self.push(name, OpKind::Linear(k), xs, cols, plain, 1)
    }

    fn add(&mut self, name: &str, a: Operand, b: Operand) -> Operand {
        self.lin(name, LinearKind::EwaddCc, &[a, b], None)
    }

    fn mul(&mut self, name: &str, a: Operand, b: Operand) -> Operand {
        self.lin(name, LinearKind::EwmulCc, &[a, b], None)
    }

    fn mul_const(&mut self, name: &str, a: Operand) -> Operand {
        self.lin(name, LinearKind::EwmulCp, &[a], Some(Plain::Const))
    }

    fn add_const(&mut self, name: &str, a: Operand) -> Operand {
        self.lin(name, LinearKind::EwaddCp, &[a], Some(Plain::Const))
    }

    fn nl(&mut self, name: &str, k: NonlinearKind, xs: &[Operand], cols: usize) -> Operand {
        self.push(name, OpKind::Nonlinear(k), xs, cols, None, 1)
    }

    /// `x·W (+ b)`.
    fn dense(&mut self, name: &str, x: Operand, out: usize) -> Operand {
        let y = self.push(
            name,
            OpKind::Linear(LinearKind::MatmulCp),
            &[x],
            out,
            Some(Plain::Weight),
            1,
        );
        if self.cfg.bias {
            self.lin(
                &format!("{name}.bias"),
                LinearKind::EwaddCp,
                &[y],
                Some(Plain::Weight),
            )
        } else {
            y
        }
    }

    /// Sum over groups of `cols / groups` columns.
    fn sum(&mut self, name: &str, x: Operand, groups: usize) -> Operand {
        self.push(name, OpKind::Linear(LinearKind::Sum), &[x], groups, None, 1)
    }

    /// Norm head up to the nonlinear step (BLB Alg. 3 lines 1–6): returns `(centred x, 1/σ)`.
    fn norm_head(&mut self, p: &str, x: Operand) -> (Operand, Operand) {
        // RMSNorm: no mean.
        let centred = if self.cfg.layer_norm {
            let s = self.sum(&format!("{p}.sum"), x, 1);
            let mu = self.mul_const(&format!("{p}.mean"), s);
            self.sub(&format!("{p}.center"), LinearKind::SaddCc, x, mu)
        } else {
            x
        };
        let sq = self.mul(&format!("{p}.square"), centred, centred);
        let s2 = self.sum(&format!("{p}.sum_sq"), sq, 1);
        let var = self.mul_const(&format!("{p}.var"), s2);
        let inv = self.nl(&format!("{p}.rsqrt"), NonlinearKind::Rsqrt, &[var], 1);
        (centred, inv)
    }

    /// Norm tail (Alg. 3 lines 8–10): `(x̄ · 1/σ) ⊙ γ (+ β)`.
    fn norm_tail(&mut self, p: &str, centred: Operand, inv: Operand) -> Operand {
        let n = self.lin(
            &format!("{p}.normalize"),
            LinearKind::SmulCc,
            &[centred, inv],
            None,
        );
        let g = self.lin(
            &format!("{p}.gamma"),
            LinearKind::EwmulCp,
            &[n],
            Some(Plain::Weight),
        );
        // RMSNorm: no β.
        if self.cfg.layer_norm {
            self.lin(&format!("{p}.beta"), LinearKind::EwaddCp, &[g], Some(Plain::Weight))
        } else {
            g
        }
    }

    /// Rotary positions (LLaMA): `q ⊙ cos + (x·W R) ⊙ sin`, the rotate-half `R` folded into a
    /// second plaintext product.
    fn rope(&mut self, p: &str, x: Operand, y: Operand, out: usize) -> Operand {
        let rot = self.dense(&format!("{p}.rot"), x, out);
        let c = self.mul_const(&format!("{p}.cos"), y);
        let s = self.mul_const(&format!("{p}.sin"), rot);
        self.add(&format!("{p}.rope"), c, s)
    }

    /// Multi-head attention up to `W_O` (BLB Eq. (1), §5.2; softmax per Alg. 5). Grouped
    /// key/value heads are expanded in `W_K`, `W_V`'s columns (free on plaintext), so every
    /// `matmul_cc` packs all query heads.
    fn attention(&mut self, x: Operand) -> Operand {
        let (d, h, l) = (self.cfg.hidden, self.cfg.heads, self.l);
        let mut q = self.dense("attn.q", x, d);
        let mut k = self.dense("attn.k", x, d);
        let v = self.dense("attn.v", x, d);
        if self.cfg.rope {
            q = self.rope("attn.q", x, q, d);
            k = self.rope("attn.k", x, k, d);
        }
        let mut s = self.push(
            "attn.qk",
            OpKind::Linear(LinearKind::MatmulCc),
            &[q, k],
            h * l,
            None,
            h,
        );
        if self.cfg.causal {
            s = self.add_const("attn.causal_mask", s);
        } else if self.g.keys < l {
            s = self.add_const("attn.key_mask", s);
        }
        let max = self.nl("softmax.max", NonlinearKind::Max, &[s], h);
        let t = self.sub("softmax.sub_max", LinearKind::SaddCc, s, max);
        let mut e = self.mul_const("softmax.exp.div64", t);
        e = self.add_const("softmax.exp.add1", e);
        for i in 1..=6 {
            e = self.mul(&format!("softmax.exp.sq{i}"), e, e);
        }
        let b = self.nl("softmax.cmp_texp", NonlinearKind::Cmp, &[t], h * l);
        let e = self.nl("softmax.mux", NonlinearKind::Mux, &[e, b], h * l);
        let z = self.sum("softmax.sum", e, h);
        let r = self.nl("softmax.rec", NonlinearKind::Rec, &[z], h);
        let p = self.lin("softmax.normalize", LinearKind::SmulCc, &[e, r], None);
        let c = self.push(
            "attn.pv",
            OpKind::Linear(LinearKind::MatmulCc),
            &[p, v],
            d,
            None,
            h,
        );
        self.dense("attn.o", c, d)
    }

    /// GeLU per BLB Alg. 4 (BOLT P4 on [−2.7, 2.7]): the powers and both polynomials in
    /// CKKS, the three comparisons and muxes in MPC. Returns the mux outputs.
    fn gelu(&mut self, x: Operand) -> Vec<Operand> {
        let x2 = self.mul("gelu.x2", x, x);
        let x3 = self.mul("gelu.x3", x2, x);
        let x4 = self.mul("gelu.x4", x2, x2);
        let a4 = self.mul_const("gelu.c4x4", x4);
        let a3 = self.mul_const("gelu.c3x3", x3);
        let a2 = self.mul_const("gelu.c2x2", x2);
        let ap = self.mul_const("gelu.c1px", x);
        let am = self.mul_const("gelu.c1mx", x);
        let even = self.add("gelu.even", a4, a2);
        let even = self.add_const("gelu.even_c0", even);
        // F0 (x < 0) = c4x⁴ − c3x³ + c2x² + (0.5 − c1)x + c0 (P4 with |x| = −x).
        let f0 = self.sub("gelu.f0_odd3", LinearKind::EwaddCc, even, a3);
        let f0 = self.add("gelu.f0", f0, am);
        let f1 = self.add("gelu.f1_odd3", even, a3);
        let f1 = self.add("gelu.f1", f1, ap);
        let cols = self.cols(x);
        let b0 = self.nl("gelu.cmp_m2.7", NonlinearKind::Cmp, &[x], cols);
        let b1 = self.nl("gelu.cmp_0", NonlinearKind::Cmp, &[x], cols);
        let b2 = self.nl("gelu.cmp_2.7", NonlinearKind::Cmp, &[x], cols);
        let m0 = self.nl("gelu.mux_f0", NonlinearKind::Mux, &[f0, b0, b1], cols);
        let m1 = self.nl("gelu.mux_f1", NonlinearKind::Mux, &[f1, b1, b2], cols);
        let m2 = self.nl("gelu.mux_x", NonlinearKind::Mux, &[x, b2], cols);
        vec![m0, m1, m2]
    }

    /// SiLU per BumbleBee App. D (REFERENCE §3.3): `a2x² + a1x + a0` on (−8, −4],
    /// `b6x⁶ + b4x⁴ + b2x² + b1x + b0` on (−4, 4], `x` above; comparisons and muxes in MPC.
    fn silu(&mut self, x: Operand) -> Vec<Operand> {
        let x2 = self.mul("silu.x2", x, x);
        let x4 = self.mul("silu.x4", x2, x2);
        let x6 = self.mul("silu.x6", x4, x2);
        let a2 = self.mul_const("silu.a2x2", x2);
        let a1 = self.mul_const("silu.a1x", x);
        let pa = self.add("silu.pa_sum", a2, a1);
        let pa = self.add_const("silu.pa", pa);
        let b6 = self.mul_const("silu.b6x6", x6);
        let b4 = self.mul_const("silu.b4x4", x4);
        let b2 = self.mul_const("silu.b2x2", x2);
        let b1 = self.mul_const("silu.b1x", x);
        let pb = self.add("silu.pb_64", b6, b4);
        let pb = self.add("silu.pb_642", pb, b2);
        let pb = self.add("silu.pb_6421", pb, b1);
        let pb = self.add_const("silu.pb", pb);
        let cols = self.cols(x);
        let c0 = self.nl("silu.cmp_m8", NonlinearKind::Cmp, &[x], cols);
        let c1 = self.nl("silu.cmp_m4", NonlinearKind::Cmp, &[x], cols);
        let c2 = self.nl("silu.cmp_4", NonlinearKind::Cmp, &[x], cols);
        let m0 = self.nl("silu.mux_pa", NonlinearKind::Mux, &[pa, c0, c1], cols);
        let m1 = self.nl("silu.mux_pb", NonlinearKind::Mux, &[pb, c1, c2], cols);
        let m2 = self.nl("silu.mux_x", NonlinearKind::Mux, &[x, c2], cols);
        vec![m0, m1, m2]
    }

    fn activation(&mut self, x: Operand) -> Vec<Operand> {
        match self.cfg.activation {
            Activation::Silu => self.silu(x),
            // By BOLT's P4, as BLB App. B.
            Activation::Gelu => self.gelu(x),
        }
    }

    fn pieces(&self) -> [&'static str; 3] {
        match self.cfg.activation {
            Activation::Silu => SILU_PIECES,
            Activation::Gelu => GELU_PIECES,
        }
    }

    /// The FFN's second half: the activation pieces added (⊙ `up` when gated), then `W_2`.
    fn ffn_out(&mut self, pieces: &[Operand], up: Option<Operand>) -> Operand {
        let mut a = pieces[0];
        for (i, &p) in pieces.iter().enumerate().skip(1) {
            a = self.add(&format!("ffn.act_sum{i}"), a, p);
        }
        if let Some(u) = up {
            a = self.mul("ffn.gate_up", a, u);
        }
        self.dense("ffn.down", a, self.cfg.hidden)
    }

    /// The FFN's first half: `W_1` (gated: `W_gate`, `W_up`) and the activation's pieces.
    fn ffn_in(&mut self, x: Operand) -> (Vec<Operand>, Option<Operand>) {
        let ff = self.cfg.intermediate;
        if self.cfg.gated {
            let g = self.dense("ffn.gate", x, ff);
            let u = self.dense("ffn.up", x, ff);
            (self.activation(g), Some(u))
        } else {
            let u = self.dense("ffn.up", x, ff);
            (self.activation(u), None)
        }
    }

    /// The previous layer's tail: its activation pieces (⊙ `up`) through `W_2`, the residual
    /// and (post-norm) the output norm. Returns the next attention's input `x` (post-norm) or
    /// the residual stream (pre-norm).
    fn tail(&mut self) -> Operand {
        let (d, ff) = (self.cfg.hidden, self.cfg.intermediate);
        let names = self.pieces();
        let pieces: Vec<Operand> = names
            .iter()
            .map(|n| self.input(&format!("prev.{n}"), ff))
            .collect();
        let up = if self.cfg.gated { Some(self.input("prev.ffn.up", ff)) } else { None };
        let residual = self.input("prev.residual", d);
        let f = self.ffn_out(&pieces, up);
        if self.cfg.post_norm {
            // BERT: x = N2(a + FFN(a)) of the previous layer, a its N1 output.
            let h = self.add("ffn.residual", f, residual);
            let (c2, i2) = self.norm_head("ln2", h);
            self.norm_tail("ln2", c2, i2)
        } else {
            // Pre-norm: x = r + FFN(N2(r)) of the previous layer, r its residual stream.
            self.add("ffn.residual", f, residual)
        }
    }

    fn layer(&mut self, part: Part) {
        let x = match part {
            Part::First => self.input("x", self.cfg.hidden),
            Part::Steady | Part::Last => self.tail(),
        };
        if part == Part::Last {
            self.g.outputs.push(("x".into(), x));
            return;
        }
        let names = self.pieces();
        let (outs, res_out) = if self.cfg.post_norm {
            let o = self.attention(x);
            let h1 = self.add("attn.residual", o, x);
            let (c1, i1) = self.norm_head("ln1", h1);
            let a = self.norm_tail("ln1", c1, i1);
            (self.ffn_in(a), a)
        } else {
            let (c1, i1) = self.norm_head("ln1", x);
            let n1 = self.norm_tail("ln1", c1, i1);
            let o = self.attention(n1);
            let h = self.add("attn.residual", o, x);
            let (c2, i2) = self.norm_head("ln2", h);
            let n2 = self.norm_tail("ln2", c2, i2);
            (self.ffn_in(n2), h)
        };
        let ((acts, up), res) = (outs, res_out);
        for (n, a) in names.iter().zip(acts) {
            self.g.outputs.push((format!("prev.{n}"), a));
        }
        if let Some(u) = up {
            self.g.outputs.push(("prev.ffn.up".into(), u));
        }
        self.g.outputs.push(("prev.residual".into(), res));
    }
}
