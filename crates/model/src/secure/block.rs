//! The transformer block, written once (DESIGN.md "One block"; issue 12 item 5), generic over
//! the [`Engine`] (secure party or fixed-point twin) and configured by data: norm kind and
//! placement, attention (bidirectional or causal, KV cache, rotary or learned positions,
//! grouped key/value heads), FFN (plain or gated, activation), biases, weight names. BERT,
//! GPT-2, LLaMA and ViT differ only in their embeddings, head and [`BlockConfig`] /
//! [`BlockNames`] mapping. Every operator call goes through the suite
//! ([`crate::secure::operators`]).
//!
//! Post-LN (BERT): `a = LN1(x + O(Attn(x)))`, `x' = LN2(a + FFN(a))`.
//! Pre-LN (GPT-2, ViT, LLaMA with RMSNorm): `x += O(Attn(N1(x)))`, `x += FFN(N2(x))`.
//! The attention's `1/√dh` is folded into the server's `W_q`, `b_q` at encoding.

use crate::secure::layers::{attention, linear, load_dense, load_vec, rope, AttnDims, ColScale, EncDense, Layout, NO_SCALE};
use crate::secure::operators;
use crate::secure::engine::{timed, Engine};
use crate::secure::{SecureError, WeightSource};
use crate::suite::Ffn;
use nectar_math::FixedPoint;

/// Normalisation kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormKind {
    LayerNorm,
    RmsNorm,
}

/// Where the norms sit relative to the residual branches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// After each residual addition (BERT).
    Post,
    /// On the input of each branch (GPT-2, ViT, LLaMA).
    Pre,
}

/// The FFN's activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    Gelu,
    Silu,
}

/// FFN form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FfnKind {
    /// `W2 · act(W1 · a)`.
    Plain,
    /// `W_down · (act(W_gate · a) ⊙ W_up · a)` with `gate|up` as one fused product (LLaMA).
    Gated,
}

/// The public shape and form of every block of a model.
#[derive(Clone, Copy, Debug)]
pub struct BlockConfig {
    pub hidden: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub intermediate: usize,
    pub norm: NormKind,
    pub eps: f64,
    pub placement: Placement,
    /// Causal attention (decoders); bidirectional otherwise.
    pub causal: bool,
    /// Rotary position embeddings on `Q`, `K` with this θ (LLaMA); `None`: positions are in
    /// the embeddings.
    pub rope_theta: Option<f64>,
    pub ffn: FfnKind,
    pub activation: Activation,
    /// Linear layers carry biases.
    pub bias: bool,
    /// Weight layout of the linear layers in the checkpoint.
    pub layout: Layout,
}

impl BlockConfig {
    /// Width of one head.
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }
    fn kv_dim(&self) -> usize {
        self.kv_heads * self.head_dim()
    }
}

/// The checkpoint tensors of one block (base names, without `.weight` / `.bias`).
#[derive(Clone, Debug)]
pub struct BlockNames {
    /// The norm of the attention branch (pre: its input; post: after its residual).
    pub norm1: String,
    /// The norm of the FFN branch.
    pub norm2: String,
    /// `[q, k, v]` as three tensors, or one fused `q|k|v` tensor.
    pub qkv: Vec<String>,
    pub o: String,
    /// `[w1]` (plain) or `[gate, up]` (gated).
    pub ffn_in: Vec<String>,
    pub ffn_out: String,
}

/// Key/value shares of the positions processed so far, per layer (`[len, kv_dim]` each).
#[derive(Clone, Debug)]
pub struct SharedKvCache<V> {
    pub(crate) k: Vec<Option<V>>,
    pub(crate) v: Vec<Option<V>>,
    len: usize,
}

impl<V> SharedKvCache<V> {
    /// An empty cache for `layers` blocks.
    pub fn new(layers: usize) -> Self {
        SharedKvCache {
            k: (0..layers).map(|_| None).collect(),
            v: (0..layers).map(|_| None).collect(),
            len: 0,
        }
    }
    /// Number of cached positions.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub(crate) fn advance(&mut self, n: usize) {
        self.len += n;
    }
}

/// Appends `new` to the cached shares of one layer; returns the whole cache of that layer.
fn append<E: Engine>(e: &mut E, slot: &mut Option<E::Val>, new: E::Val) -> Result<E::Val, SecureError> {
    let all = match slot.take() {
        None => new,
        Some(old) => e.concat(&[&old, &new])?,
    };
    *slot = Some(all.clone());
    Ok(all)
}

/// Concatenates dense layers along the output dimension (`in × Σout`).
pub(crate) fn concat_cols(parts: &[Option<EncDense>], in_dim: usize, outs: &[usize]) -> Option<EncDense> {
    if parts.iter().any(|p| p.is_none()) {
        return None;
    }
    let parts: Vec<&EncDense> = parts.iter().flatten().collect();
    let total: usize = outs.iter().sum();
    let mut w = Vec::with_capacity(in_dim * total);
    for i in 0..in_dim {
        for (p, &o) in parts.iter().zip(outs) {
            w.extend_from_slice(&p.w[i * o..(i + 1) * o]);
        }
    }
    let b = if parts.iter().all(|p| p.b.is_some()) {
        Some(parts.iter().flat_map(|p| p.b.iter().flatten().copied()).collect())
    } else {
        None
    };
    Some(EncDense { w, b })
}

/// A fused product's weight: one tensor of `Σouts` outputs, or one tensor per part
/// concatenated; the first `scale.cols` output columns scaled by `scale.by`.
#[allow(clippy::too_many_arguments)]
fn load_fused(
    fp: FixedPoint,
    src: Option<&dyn WeightSource>,
    names: &[String],
    in_dim: usize,
    outs: &[usize],
    cfg: &BlockConfig,
    scale: ColScale,
) -> Result<Option<EncDense>, SecureError> {
    let total: usize = outs.iter().sum();
    match names {
        [one] => load_dense(src, fp, one, in_dim, total, cfg.layout, cfg.bias, scale),
        parts if parts.len() == outs.len() => {
            let mut enc = Vec::with_capacity(parts.len());
            for (i, (name, &out)) in parts.iter().zip(outs).enumerate() {
                let s = if i == 0 { scale } else { NO_SCALE };
                enc.push(load_dense(src, fp, name, in_dim, out, cfg.layout, cfg.bias, s)?);
            }
            Ok(concat_cols(&enc, in_dim, outs))
        }
        _ => Err(SecureError::Unsupported(format!(
            "{} weight tensors for a product of {} parts",
            names.len(),
            outs.len()
        ))),
    }
}

/// The checkpoint's norm `{prefix}` (`.weight`, and `.bias` for LayerNorm) on `x`, recorded as
/// one `layernorm` / `rmsnorm` operator.
#[allow(clippy::too_many_arguments)]
pub fn named_norm<E: Engine>(
    e: &mut E,
    src: Option<&dyn WeightSource>,
    kind: NormKind,
    prefix: &str,
    x: &E::Val,
    rows: usize,
    cols: usize,
    eps: f64,
) -> Result<E::Val, SecureError> {
    let label = match kind {
        NormKind::LayerNorm => "layernorm",
        NormKind::RmsNorm => "rmsnorm",
    };
    timed(e, label, |e| {
        let fp = e.format();
        let g = load_vec(src, fp, &format!("{prefix}.weight"), cols)?;
        let gv = e.server_input(g.as_deref(), cols)?;
        match kind {
            NormKind::LayerNorm => {
                let b = load_vec(src, fp, &format!("{prefix}.bias"), cols)?;
                let bv = e.server_input(b.as_deref(), cols)?;
                operators::layernorm(e, x, rows, cols, &gv, &bv, eps)
            }
            NormKind::RmsNorm => operators::rmsnorm(e, x, rows, cols, &gv, eps),
        }
    })
}

/// The layer-`l` slots of a KV cache and the number of positions before the new rows.
pub struct KvSlot<'a, V> {
    pub k: &'a mut Option<V>,
    pub v: &'a mut Option<V>,
    pub start: usize,
}

/// One transformer block on `n` new rows `x` (`[n, hidden]`); with `kv`, attention runs
/// against the cached keys/values of the earlier positions and appends the new ones.
pub fn block<E: Engine>(
    e: &mut E,
    src: Option<&dyn WeightSource>,
    cfg: &BlockConfig,
    names: &BlockNames,
    x: E::Val,
    n: usize,
    kv: Option<KvSlot<'_, E::Val>>,
) -> Result<E::Val, SecureError> {
    let h = cfg.hidden;
    let norm = |e: &mut E, name: &str, v: &E::Val| named_norm(e, src, cfg.norm, name, v, n, h, cfg.eps);
    match cfg.placement {
        Placement::Post => {
            let o = attention_branch(e, src, cfg, names, &x, &x, n, kv)?;
            let a = norm(e, &names.norm1, &o)?;
            let f = ffn(e, src, cfg, names, &a, &a, n)?;
            norm(e, &names.norm2, &f)
        }
        Placement::Pre => {
            let a = norm(e, &names.norm1, &x)?;
            let x = attention_branch(e, src, cfg, names, &a, &x, n, kv)?;
            let a = norm(e, &names.norm2, &x)?;
            ffn(e, src, cfg, names, &a, &x, n)
        }
    }
}

/// `residual + O(Attn(QKV(a)))`.
#[allow(clippy::too_many_arguments)]
fn attention_branch<E: Engine>(
    e: &mut E,
    src: Option<&dyn WeightSource>,
    cfg: &BlockConfig,
    names: &BlockNames,
    a: &E::Val,
    residual: &E::Val,
    n: usize,
    kv: Option<KvSlot<'_, E::Val>>,
) -> Result<E::Val, SecureError> {
    let (h, dh, kvd) = (cfg.hidden, cfg.head_dim(), cfg.kv_dim());
    let width = h + 2 * kvd;
    let scale = ColScale { cols: h, by: 1.0 / (dh as f64).sqrt() };
    let qkv = timed(e, "linear.qkv", |e| {
        let w = load_fused(e.format(), src, &names.qkv, h, &[h, kvd, kvd], cfg, scale)?;
        linear(e, a, n, h, width, w.as_ref(), cfg.bias)
    })?;
    let cols = |e: &mut E, off: usize, len: usize| -> Result<E::Val, SecureError> {
        let idx: Vec<usize> = (0..n * len).map(|q| (q / len) * width + off + q % len).collect();
        Ok(e.gather(&qkv, &idx)?)
    };
    let (q, k, v) = (cols(e, 0, h)?, cols(e, h, kvd)?, cols(e, h + kvd, kvd)?);
    let start = kv.as_ref().map_or(0, |s| s.start);
    let (q, k) = match cfg.rope_theta {
        None => (q, k),
        Some(theta) => timed(e, "rope", |e| {
            Ok((
                rope(e, &q, n, start, cfg.heads, dh, theta)?,
                rope(e, &k, n, start, cfg.kv_heads, dh, theta)?,
            ))
        })?,
    };
    let (k, v) = match kv {
        None => (k, v),
        Some(slot) => (append(e, slot.k, k)?, append(e, slot.v, v)?),
    };
    let dims = AttnDims { n, m: start + n, heads: cfg.heads, kv_heads: cfg.kv_heads, dh };
    let ctx = attention(e, &q, &k, &v, dims, None, cfg.causal)?;
    timed(e, "linear.o", |e| {
        let w = load_dense(src, e.format(), &names.o, h, h, cfg.layout, cfg.bias, NO_SCALE)?;
        let o = linear(e, &ctx, n, h, h, w.as_ref(), cfg.bias)?;
        Ok(e.add(&o, residual)?)
    })
}

/// `residual + FFN(a)` by the suite's feed-forward protocol.
fn ffn<E: Engine>(
    e: &mut E,
    src: Option<&dyn WeightSource>,
    cfg: &BlockConfig,
    names: &BlockNames,
    a: &E::Val,
    residual: &E::Val,
    n: usize,
) -> Result<E::Val, SecureError> {
    match e.suite().ffn {
        Ffn::Mpc => ffn_mpc(e, src, cfg, names, a, residual, n),
        other => Err(operators::planned(other)),
    }
}

/// The two-party FFN: linear layers by the suite's matmul, the activation by its protocol.
fn ffn_mpc<E: Engine>(
    e: &mut E,
    src: Option<&dyn WeightSource>,
    cfg: &BlockConfig,
    names: &BlockNames,
    a: &E::Val,
    residual: &E::Val,
    n: usize,
) -> Result<E::Val, SecureError> {
    let (h, ff) = (cfg.hidden, cfg.intermediate);
    let act = |e: &mut E, x: &E::Val| match cfg.activation {
        Activation::Gelu => operators::gelu(e, x),
        Activation::Silu => operators::silu(e, x),
    };
    let hidden = match cfg.ffn {
        FfnKind::Plain => {
            let f1 = timed(e, "linear.ffn1", |e| {
                let w = load_fused(e.format(), src, &names.ffn_in, h, &[ff], cfg, NO_SCALE)?;
                linear(e, a, n, h, ff, w.as_ref(), cfg.bias)
            })?;
            act(e, &f1)?
        }
        FfnKind::Gated => {
            let gu = timed(e, "linear.ffn1", |e| {
                let w = load_fused(e.format(), src, &names.ffn_in, h, &[ff, ff], cfg, NO_SCALE)?;
                linear(e, a, n, h, 2 * ff, w.as_ref(), cfg.bias)
            })?;
            let gi: Vec<usize> = (0..n * ff).map(|q| (q / ff) * 2 * ff + q % ff).collect();
            let ui: Vec<usize> = (0..n * ff).map(|q| (q / ff) * 2 * ff + ff + q % ff).collect();
            let (g, u) = (e.gather(&gu, &gi)?, e.gather(&gu, &ui)?);
            let g = act(e, &g)?;
            operators::mul(e, &g, &u)?
        }
    };
    timed(e, "linear.ffn2", |e| {
        let w = load_dense(src, e.format(), &names.ffn_out, ff, h, cfg.layout, cfg.bias, NO_SCALE)?;
        let y = linear(e, &hidden, n, ff, h, w.as_ref(), cfg.bias)?;
        Ok(e.add(&y, residual)?)
    })
}

/// Runs `layers` blocks on `n` new rows, with the KV cache when given (decoders), reporting
/// progress after each block.
#[allow(clippy::too_many_arguments)]
pub fn run_blocks<E: Engine>(
    e: &mut E,
    src: Option<&dyn WeightSource>,
    cfg: &BlockConfig,
    names: impl Fn(usize) -> BlockNames,
    layers: usize,
    mut x: E::Val,
    n: usize,
    mut cache: Option<&mut SharedKvCache<E::Val>>,
    progress: Option<&super::Progress<'_>>,
) -> Result<E::Val, SecureError> {
    let start = cache.as_ref().map_or(0, |c| c.len());
    for l in 0..layers {
        let kv = match cache.as_deref_mut() {
            None => None,
            Some(c) => {
                let (k, v) = (&mut c.k, &mut c.v);
                match (k.get_mut(l), v.get_mut(l)) {
                    (Some(k), Some(v)) => Some(KvSlot { k, v, start }),
                    _ => return Err(SecureError::Role(format!("KV cache has no layer {l}"))),
                }
            }
        };
        x = block(e, src, cfg, &names(l), x, n, kv)?;
        if let Some(p) = progress {
            p(l + 1, layers);
        }
    }
    if let Some(c) = cache {
        c.advance(n);
    }
    Ok(x)
}
