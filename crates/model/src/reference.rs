//! The f32 reference arithmetic of the transformer block ([`crate::block`]): the checkpoint's
//! block tensors loaded once (shape-checked; linear layers kept as `[out, in]`), and each step
//! by the kernels of [`crate::ops`] at full precision — exact activations, norm statistics in
//! f64, softmax with the row maximum. This is what the fixed-point twin and the secure
//! protocols are measured against; it shares only the block's *structure* with them, none of
//! their arithmetic.

use std::collections::HashMap;

use crate::arch::{block_decls, ArchOps, Decl, DenseDecl, TableDecl};
use crate::block::{Activation, AttnDims, BlockConfig, BlockNames, BlockOps, ColScale, Layout, NormKind};
use crate::ops::{activate, add_assign, argmax, attention, layer_norm, linear, rms_norm, rope, softmax_inputs, AttnShape};
use crate::weights::WeightSource;
use crate::ModelError;

/// A dense layer: `w` is `[out, in]` (PyTorch `nn.Linear` order), `y = x w^T + b`.
#[derive(Debug, Clone)]
pub struct Dense {
    pub w: Vec<f32>,
    pub b: Option<Vec<f32>>,
    pub in_dim: usize,
    pub out_dim: usize,
}

impl Dense {
    /// Loads the declared layer: its weight at the declared shape (transposed to `[out, in]`
    /// if stored `[in, out]`) and its bias.
    pub fn load<W: WeightSource + ?Sized>(w: &W, d: &DenseDecl) -> Result<Self, ModelError> {
        let (name, in_dim, out_dim) = (&d.name, d.in_dim, d.out_dim);
        let t = w.tensor(&format!("{name}.weight"), &d.shape)?;
        let wt = match d.layout {
            Layout::OutIn => t,
            Layout::InOut => {
                let mut wt = vec![0f32; in_dim * out_dim];
                for i in 0..in_dim {
                    for o in 0..out_dim {
                        wt[o * in_dim + i] = t[i * out_dim + o];
                    }
                }
                wt
            }
        };
        let b = if d.bias {
            Some(w.tensor(&format!("{name}.bias"), &[out_dim])?)
        } else {
            None
        };
        Ok(Dense { w: wt, b, in_dim, out_dim })
    }

    /// `x [n, in] -> [n, out]`.
    pub fn apply(&self, x: &[f32], n: usize) -> Vec<f32> {
        linear(x, n, &self.w, self.b.as_deref(), self.in_dim, self.out_dim)
    }
}

/// A norm's parameters: `γ` and, for LayerNorm, `β`.
#[derive(Debug, Clone)]
pub struct Norm {
    pub g: Vec<f32>,
    pub b: Option<Vec<f32>>,
}

impl Norm {
    /// Loads `{name}.weight` (and `{name}.bias` for LayerNorm) of width `d`.
    pub fn load<W: WeightSource + ?Sized>(w: &W, name: &str, d: usize, kind: NormKind) -> Result<Self, ModelError> {
        Ok(Norm {
            g: w.tensor(&format!("{name}.weight"), &[d])?,
            b: match kind {
                NormKind::LayerNorm => Some(w.tensor(&format!("{name}.bias"), &[d])?),
                NormKind::RmsNorm => None,
            },
        })
    }

    /// Normalises the rows (width `γ.len()`) of `x` in place.
    pub fn apply(&self, x: &mut [f32], eps: f64) {
        let d = self.g.len();
        match &self.b {
            Some(b) => layer_norm(x, d, &self.g, b, eps),
            None => rms_norm(x, d, &self.g, eps),
        }
    }
}

/// The tensors of all blocks of a model (and of its embeddings and heads,
/// [`BlockWeights::load_decls`]), by checkpoint name, loaded and checked once.
#[derive(Debug, Clone, Default)]
pub struct BlockWeights {
    dense: HashMap<String, Dense>,
    norms: HashMap<String, Norm>,
    tables: HashMap<String, Vec<f32>>,
}

impl BlockWeights {
    /// Loads every tensor the blocks `0..layers` name, at the shapes `cfg` implies.
    pub fn load<W: WeightSource + ?Sized>(
        w: &W,
        cfg: &BlockConfig,
        names: impl Fn(usize) -> BlockNames,
        layers: usize,
    ) -> Result<Self, ModelError> {
        let mut out = BlockWeights::default();
        out.load_decls(w, &block_decls(cfg, names, layers)?)?;
        Ok(out)
    }

    /// Loads declared tensors (the blocks', an architecture's embeddings and heads).
    pub fn load_decls<W: WeightSource + ?Sized>(&mut self, w: &W, decls: &[Decl]) -> Result<(), ModelError> {
        for d in decls {
            match d {
                Decl::Dense(d) => {
                    self.dense.insert(d.name.clone(), Dense::load(w, d)?);
                }
                Decl::Table(t) => {
                    self.tables.insert(t.name.clone(), w.tensor(&t.name, &t.shape)?);
                }
                Decl::Norm(n) => {
                    self.norms.insert(n.name.clone(), Norm::load(w, &n.name, n.dim, n.kind)?);
                }
            }
        }
        Ok(())
    }

    fn table(&self, t: &TableDecl) -> Result<&[f32], ModelError> {
        self.tables
            .get(&t.name)
            .map(|v| v.as_slice())
            .ok_or_else(|| ModelError::Input(format!("tensor {} was not loaded", t.name)))
    }

    /// The loaded dense layer `name`.
    pub fn dense(&self, name: &str) -> Result<&Dense, ModelError> {
        self.dense
            .get(name)
            .ok_or_else(|| ModelError::Input(format!("block tensor {name} was not loaded")))
    }

    /// The loaded norm `name`.
    pub fn norm(&self, name: &str) -> Result<&Norm, ModelError> {
        self.norms
            .get(name)
            .ok_or_else(|| ModelError::Input(format!("block norm {name} was not loaded")))
    }
}

/// The block's steps in f32 over loaded [`BlockWeights`].
pub struct F32Block<'a> {
    pub weights: &'a BlockWeights,
    /// Told each norm's input rows and each linear operator's output rows, with the norm's
    /// name or the operator's first weight name (e.g. [`crate::calibrate`]).
    pub observe: Option<Observer<'a>>,
}

/// What [`F32Block::observe`] calls: the site, the norm's or operator's name, the values.
pub type Observer<'a> = &'a dyn Fn(Site, &str, &[f32]);

/// Where [`F32Block::observe`] looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    NormInput,
    LinearOutput,
    /// An activation's inputs, named by the activation (`gelu`, `gelu_tanh`, `silu`, `relu`).
    ActivationInput,
    /// The softmax exponentials' inputs `score − row max` of the visible keys, named `softmax`.
    SoftmaxInput,
}

impl<'a> F32Block<'a> {
    /// The steps over `weights`, observing nothing.
    pub fn new(weights: &'a BlockWeights) -> Self {
        F32Block { weights, observe: None }
    }
}

impl BlockOps for F32Block<'_> {
    type Val = Vec<f32>;
    type Error = ModelError;

    fn shape_error(msg: String) -> ModelError {
        ModelError::Input(msg)
    }

    fn norm(&mut self, cfg: &BlockConfig, name: &str, x: &Vec<f32>, _rows: usize) -> Result<Vec<f32>, ModelError> {
        if let Some(f) = self.observe {
            f(Site::NormInput, name, x);
        }
        let norm = self.weights.norm(name)?;
        let mut y = x.clone();
        norm.apply(&mut y, cfg.eps);
        Ok(y)
    }

    fn linear(
        &mut self,
        _label: &'static str,
        _cfg: &BlockConfig,
        names: &[String],
        x: &Vec<f32>,
        n: usize,
        _in_dim: usize,
        outs: &[usize],
        scale: ColScale,
    ) -> Result<Vec<f32>, ModelError> {
        let total: usize = outs.iter().sum();
        let mut y = if let [one] = names {
            self.weights.dense(one)?.apply(x, n)
        } else {
            let parts: Vec<Vec<f32>> = names
                .iter()
                .map(|name| Ok(self.weights.dense(name)?.apply(x, n)))
                .collect::<Result<_, ModelError>>()?;
            let mut y = Vec::with_capacity(n * total);
            for i in 0..n {
                for (p, &o) in parts.iter().zip(outs) {
                    y.extend_from_slice(&p[i * o..(i + 1) * o]);
                }
            }
            y
        };
        if scale.cols > 0 {
            for row in y.chunks_mut(total) {
                for v in &mut row[..scale.cols] {
                    *v = (*v as f64 * scale.by) as f32;
                }
            }
        }
        if let (Some(f), Some(first)) = (self.observe, names.first()) {
            f(Site::LinearOutput, first, &y);
        }
        Ok(y)
    }

    fn columns(&mut self, x: &Vec<f32>, n: usize, width: usize, off: usize, len: usize) -> Result<Vec<f32>, ModelError> {
        let mut y = Vec::with_capacity(n * len);
        for row in x.chunks(width).take(n) {
            y.extend_from_slice(&row[off..off + len]);
        }
        Ok(y)
    }

    fn rope(
        &mut self,
        cfg: &BlockConfig,
        q: &Vec<f32>,
        k: &Vec<f32>,
        start: usize,
        _n: usize,
        theta: f64,
    ) -> Result<(Vec<f32>, Vec<f32>), ModelError> {
        let dh = cfg.head_dim();
        let (mut q, mut k) = (q.clone(), k.clone());
        rope(&mut q, start, cfg.heads, dh, theta);
        rope(&mut k, start, cfg.kv_heads, dh, theta);
        Ok((q, k))
    }

    fn concat_rows(&mut self, old: &Vec<f32>, new: &Vec<f32>) -> Result<Vec<f32>, ModelError> {
        Ok([old.as_slice(), new.as_slice()].concat())
    }

    fn attention(
        &mut self,
        q: &Vec<f32>,
        k: &Vec<f32>,
        v: &Vec<f32>,
        d: AttnDims,
        key_mask: Option<&[bool]>,
        causal: bool,
        segments: Option<&[usize]>,
    ) -> Result<Vec<f32>, ModelError> {
        if d.kv_heads == 0 || d.heads % d.kv_heads != 0 {
            return Err(ModelError::Unsupported(format!(
                "{} heads over {} key/value heads",
                d.heads, d.kv_heads
            )));
        }
        let Some(segs) = segments else {
            let shape = AttnShape { n: d.n, m: d.m, heads: d.heads, kv_heads: d.kv_heads, dh: d.dh };
            if let Some(f) = self.observe {
                f(Site::SoftmaxInput, "softmax", &softmax_inputs(q, k, shape, key_mask, causal));
            }
            return Ok(attention(q, k, v, shape, key_mask, causal));
        };
        // A batch: each input's rows attend to its own keys only.
        let (dq, dkv) = (d.heads * d.dh, d.kv_heads * d.dh);
        let mut out = Vec::with_capacity(q.len());
        let mut off = 0;
        for &len in segs {
            let shape = AttnShape { n: len, m: len, heads: d.heads, kv_heads: d.kv_heads, dh: d.dh };
            let mask = key_mask.map(|km| &km[off..off + len]);
            let rows = |x: &[f32], w: usize| x[off * w..(off + len) * w].to_vec();
            out.extend(attention(&rows(q, dq), &rows(k, dkv), &rows(v, dkv), shape, mask, causal));
            off += len;
        }
        Ok(out)
    }

    fn activation(&mut self, act: Activation, x: &Vec<f32>) -> Result<Vec<f32>, ModelError> {
        if let Some(f) = self.observe {
            f(Site::ActivationInput, act.name(), x);
        }
        let mut y = x.clone();
        activate(&mut y, act);
        Ok(y)
    }

    fn mul(&mut self, a: &Vec<f32>, b: &Vec<f32>) -> Result<Vec<f32>, ModelError> {
        Ok(a.iter().zip(b).map(|(x, y)| x * y).collect())
    }

    fn add(&mut self, a: &Vec<f32>, b: &Vec<f32>) -> Result<Vec<f32>, ModelError> {
        let mut y = a.clone();
        add_assign(&mut y, b);
        Ok(y)
    }
}

impl ArchOps for F32Block<'_> {
    fn step<T>(
        &mut self,
        _label: &'static str,
        f: impl FnOnce(&mut Self) -> Result<T, ModelError>,
    ) -> Result<T, ModelError> {
        f(self)
    }

    fn lookup(&mut self, t: &DenseDecl, ids: Option<&[u32]>, n: usize) -> Result<Vec<f32>, ModelError> {
        let ids = ids.ok_or_else(|| ModelError::Input("no token ids".into()))?;
        let table = self.weights.dense(&t.name)?;
        let d = table.in_dim;
        let mut x = Vec::with_capacity(n * d);
        for &id in ids.iter().take(n) {
            let row = table
                .w
                .get(id as usize * d..(id as usize + 1) * d)
                .ok_or_else(|| ModelError::Input(format!("token id {id} >= vocab_size {}", table.out_dim)))?;
            x.extend_from_slice(row);
        }
        Ok(x)
    }

    fn server_rows(&mut self, parts: &[(&TableDecl, &[usize])]) -> Result<Vec<f32>, ModelError> {
        let mut x: Vec<f32> = Vec::new();
        for (i, &(t, rows)) in parts.iter().enumerate() {
            let (table, d) = (self.weights.table(t)?, t.width());
            let mut part = Vec::with_capacity(rows.len() * d);
            for &r in rows {
                let row = table
                    .get(r * d..(r + 1) * d)
                    .ok_or_else(|| ModelError::Input(format!("row {r} of {} rows of {}", t.rows(), t.name)))?;
                part.extend_from_slice(row);
            }
            if i == 0 {
                x = part;
            } else {
                add_assign(&mut x, &part);
            }
        }
        Ok(x)
    }

    fn client_values(&mut self, x: Option<&[f32]>, len: usize, what: &str) -> Result<Vec<f32>, ModelError> {
        match x {
            Some(v) if v.len() == len => Ok(v.to_vec()),
            _ => Err(ModelError::Input(format!("{len} values of {what} are needed"))),
        }
    }

    fn dense(&mut self, d: &DenseDecl, x: &Vec<f32>, n: usize) -> Result<Vec<f32>, ModelError> {
        Ok(self.weights.dense(&d.name)?.apply(x, n))
    }

    fn take_rows(&mut self, x: &Vec<f32>, r: std::ops::Range<usize>, width: usize) -> Result<Vec<f32>, ModelError> {
        x.get(r.start * width..r.end * width)
            .map(|v| v.to_vec())
            .ok_or_else(|| ModelError::Input(format!("rows {r:?} of a value of {} rows", x.len() / width.max(1))))
    }

    /// Statistics in f64; the count is clamped as sentence-transformers clamps it.
    fn mean_rows(&mut self, x: &Vec<f32>, _n: usize, width: usize, mask: Option<&[bool]>) -> Result<Vec<f32>, ModelError> {
        let mut sum = vec![0f64; width];
        let mut count = 0f64;
        for (i, row) in x.chunks(width).enumerate() {
            if mask.is_none_or(|m| m.get(i).copied().unwrap_or(false)) {
                count += 1.0;
                for (s, &v) in sum.iter_mut().zip(row) {
                    *s += v as f64;
                }
            }
        }
        let count = count.max(1e-9);
        Ok(sum.iter().map(|s| (s / count) as f32).collect())
    }

    fn pick_rows(&mut self, x: &Vec<f32>, rows: &[usize], width: usize) -> Result<Vec<f32>, ModelError> {
        let mut y = Vec::with_capacity(rows.len() * width);
        for &r in rows {
            y.extend_from_slice(&self.take_rows(x, r..r + 1, width)?);
        }
        Ok(y)
    }

    fn mean_segments(&mut self, x: &Vec<f32>, lens: &[usize], width: usize) -> Result<Vec<f32>, ModelError> {
        let mut y = Vec::with_capacity(lens.len() * width);
        let mut off = 0;
        for &len in lens {
            let rows = self.take_rows(x, off..off + len, width)?;
            y.extend(self.mean_rows(&rows, len, width, None)?);
            off += len;
        }
        Ok(y)
    }

    fn tanh(&mut self, x: &Vec<f32>) -> Result<Vec<f32>, ModelError> {
        Ok(x.iter().map(|v| v.tanh()).collect())
    }

    fn argmax(&mut self, x: &Vec<f32>, _rows: usize, cols: usize) -> Result<Vec<f32>, ModelError> {
        Ok(x.chunks(cols.max(1)).map(|row| argmax(row) as f32).collect())
    }

    fn reveal(&mut self, x: &Vec<f32>) -> Result<Option<Vec<f64>>, ModelError> {
        Ok(Some(x.iter().map(|&v| v as f64).collect()))
    }

    fn reveal_index(&mut self, x: &Vec<f32>) -> Result<Option<Vec<u64>>, ModelError> {
        Ok(Some(x.iter().map(|&v| v as u64).collect()))
    }

    fn client_says(&mut self, go: Option<bool>) -> Result<bool, ModelError> {
        go.ok_or_else(|| ModelError::Input("the reference holds the client's decisions".into()))
    }
}
