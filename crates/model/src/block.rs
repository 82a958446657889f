//! The transformer block, written once (DESIGN.md "One block"; issue 12 item 5) and run on
//! every arithmetic the crate has: the f32 reference ([`crate::reference`]), the fixed-point
//! twin and the secure parties (both through [`crate::secure::block::EngineBlock`], every
//! operator by the suite). It is configured by data: norm kind and placement, attention
//! (bidirectional or causal, KV cache, rotary or learned positions, grouped key/value heads,
//! padding mask), FFN (plain or gated, activation), biases, weight layout and names. BERT,
//! GPT-2, LLaMA and ViT differ only in their embeddings, head and the [`BlockConfig`] /
//! [`BlockNames`] mapping of their config (`block_config` / `block_names` in each
//! architecture's module, shared by its reference and its secure form).
//!
//! Post-LN (BERT): `a = N1(x + O(Attn(x)))`, `x' = N2(a + FFN(a))`.
//! Pre-LN (GPT-2, ViT, LLaMA with RMSNorm): `x += O(Attn(N1(x)))`, `x += FFN(N2(x))`.
//! The attention's `1/√dh` is applied to the `Q` columns of the QKV product
//! ([`BlockOps::linear`]'s `scale`; the secure engine folds it into the server's `W_q`).

pub use crate::config::Activation;

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

/// FFN form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FfnKind {
    /// `W2 · act(W1 · a)`.
    Plain,
    /// `W_down · (act(W_gate · a) ⊙ W_up · a)` with `gate|up` as one fused product (LLaMA).
    Gated,
}

/// Weight layout of a checkpoint's linear layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// PyTorch `nn.Linear`: `[out, in]`.
    OutIn,
    /// HF `Conv1D` (GPT-2): `[in, out]`.
    InOut,
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
    /// The activation the checkpoint's config names (the secure engines approximate it by the
    /// suite's protocol).
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
    /// Width of the keys (and values) of all key/value heads.
    pub fn kv_dim(&self) -> usize {
        self.kv_heads * self.head_dim()
    }
    /// Output widths of the fused FFN input product (`[ff]` or `[ff, ff]` for gate|up).
    pub fn ffn_in_outs(&self) -> Vec<usize> {
        match self.ffn {
            FfnKind::Plain => vec![self.intermediate],
            FfnKind::Gated => vec![self.intermediate; 2],
        }
    }
    /// The `1/√dh` applied to the first `hidden` (query) columns of the QKV product.
    pub fn query_scale(&self) -> ColScale {
        ColScale {
            cols: self.hidden,
            by: 1.0 / (self.head_dim() as f64).sqrt(),
        }
    }
}

/// Scales the first `cols` output columns of a product by `by` (e.g. `1/√dh` on `Q`).
#[derive(Clone, Copy, Debug)]
pub struct ColScale {
    pub cols: usize,
    pub by: f64,
}

/// No scaling.
pub const NO_SCALE: ColScale = ColScale { cols: 0, by: 1.0 };

impl ColScale {
    /// The factor of output column `col`.
    pub fn factor(&self, col: usize) -> f64 {
        if col < self.cols {
            self.by
        } else {
            1.0
        }
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

/// Sizes of one attention call: `n` queries at positions `m − n .. m`, `m` keys, `heads`
/// query heads of width `dh` over `kv_heads` key/value heads (query head `h` reads key/value
/// head `h / (heads / kv_heads)`).
#[derive(Clone, Copy, Debug)]
pub struct AttnDims {
    pub n: usize,
    pub m: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub dh: usize,
}

/// Keys and values of the positions processed so far, per layer (`[len, kv_dim]` each), in
/// the arithmetic's value type (f32 rows or shares).
#[derive(Clone, Debug)]
pub struct KvCache<V> {
    k: Vec<Option<V>>,
    v: Vec<Option<V>>,
    len: usize,
}

impl<V> KvCache<V> {
    /// An empty cache for `layers` blocks.
    pub fn new(layers: usize) -> Self {
        KvCache {
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
    /// Number of layers the cache holds.
    pub fn layers(&self) -> usize {
        self.k.len()
    }
}

/// The new rows a block runs on.
#[derive(Clone, Copy, Debug)]
pub struct Rows<'a> {
    /// Number of new rows (positions).
    pub n: usize,
    /// Public padding mask over all keys (`false`: key hidden); `None`: every key visible.
    pub key_mask: Option<&'a [bool]>,
    /// A batch (issue 52): the rows are these inputs' rows one after another (lengths, public,
    /// summing to `n`), and attention runs per input — no input sees another's keys. `None`:
    /// one input. A batch has no KV cache.
    pub segments: Option<&'a [usize]>,
}

impl<'a> Rows<'a> {
    /// `n` rows of one input, every key visible.
    pub fn new(n: usize) -> Self {
        Rows { n, key_mask: None, segments: None }
    }

    /// The rows of a batch of inputs of lengths `lens` (one input: as [`Rows::new`]).
    pub fn batch(lens: &'a [usize]) -> Self {
        Rows { n: lens.iter().sum(), key_mask: None, segments: (lens.len() > 1).then_some(lens) }
    }
}

/// The first row of each input of a batch of inputs of lengths `lens` (rows one after another).
pub fn segment_starts(lens: &[usize]) -> Vec<usize> {
    lens.iter()
        .scan(0, |o, &l| {
            *o += l;
            Some(*o - l)
        })
        .collect()
}

/// The steps of a block on one arithmetic. Each method is one named operator of the block;
/// weights are addressed by their checkpoint names (the implementation loads, encodes and
/// checks them).
pub trait BlockOps {
    /// A tensor (row-major) in this arithmetic.
    type Val: Clone;
    type Error;

    /// An error about the block's shapes or inputs (not about the arithmetic).
    fn shape_error(msg: String) -> Self::Error;

    /// Norm `cfg.norm` of `x` (`[rows, hidden]`) with the checkpoint's `{name}.weight` (and
    /// `.bias` for LayerNorm).
    fn norm(&mut self, cfg: &BlockConfig, name: &str, x: &Self::Val, rows: usize)
        -> Result<Self::Val, Self::Error>;

    /// `x · [W_1 | … | W_k] (+ [b_1 | … | b_k])` for `x` of `[n, in_dim]`: `names` is one fused
    /// tensor of `Σ outs` outputs or one tensor per part; the first `scale.cols` output columns
    /// are multiplied by `scale.by`. `label` names the operator (`linear.qkv`, ...).
    #[allow(clippy::too_many_arguments)]
    fn linear(
        &mut self,
        label: &'static str,
        cfg: &BlockConfig,
        names: &[String],
        x: &Self::Val,
        n: usize,
        in_dim: usize,
        outs: &[usize],
        scale: ColScale,
    ) -> Result<Self::Val, Self::Error>;

    /// Announces the [`BlockOps::linear`] that comes after the next operators (same
    /// arguments but `x`), so that an arithmetic can prepare its weights meanwhile (the secure
    /// server transforms them on an idle core). Default: nothing.
    #[allow(clippy::too_many_arguments)]
    fn announce_linear(
        &mut self,
        _label: &'static str,
        _cfg: &BlockConfig,
        _names: &[String],
        _n: usize,
        _in_dim: usize,
        _outs: &[usize],
        _scale: ColScale,
    ) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Columns `off .. off + len` of `x` (`[n, width]`): `[n, len]`.
    fn columns(&mut self, x: &Self::Val, n: usize, width: usize, off: usize, len: usize)
        -> Result<Self::Val, Self::Error>;

    /// Rotary embedding of `q` (`[n, heads·dh]`) and `k` (`[n, kv_heads·dh]`), rows at
    /// positions `start ..`, with θ = `theta`.
    fn rope(
        &mut self,
        cfg: &BlockConfig,
        q: &Self::Val,
        k: &Self::Val,
        start: usize,
        n: usize,
        theta: f64,
    ) -> Result<(Self::Val, Self::Val), Self::Error>;

    /// `old` followed by `new` (rows).
    fn concat_rows(&mut self, old: &Self::Val, new: &Self::Val) -> Result<Self::Val, Self::Error>;

    /// Multi-head attention; `q` already scaled by `1/√dh`. `causal`: query `i` sees keys
    /// `j ≤ m − n + i`; `key_mask[j] = false` hides key `j`. `segments`: a batch of inputs
    /// of these lengths (`n = m = Σ`), each attending only to its own keys. Returns
    /// `[n, heads·dh]`.
    #[allow(clippy::too_many_arguments)]
    fn attention(
        &mut self,
        q: &Self::Val,
        k: &Self::Val,
        v: &Self::Val,
        dims: AttnDims,
        key_mask: Option<&[bool]>,
        causal: bool,
        segments: Option<&[usize]>,
    ) -> Result<Self::Val, Self::Error>;

    /// The FFN's activation, element-wise.
    fn activation(&mut self, act: Activation, x: &Self::Val) -> Result<Self::Val, Self::Error>;

    /// Element-wise product.
    fn mul(&mut self, a: &Self::Val, b: &Self::Val) -> Result<Self::Val, Self::Error>;

    /// Element-wise sum.
    fn add(&mut self, a: &Self::Val, b: &Self::Val) -> Result<Self::Val, Self::Error>;

    /// Whether [`BlockOps::whole_ffn`] takes the FFN (its first linear layer is then not
    /// announced as a layer matmul).
    fn runs_whole_ffn(&self) -> bool {
        false
    }

    /// A protocol that evaluates the whole FFN branch `FFN(a)` at once (LEAF's non-interactive
    /// block) when this arithmetic's suite names one; `None`: the block runs its own
    /// decomposed FFN.
    fn whole_ffn(
        &mut self,
        _cfg: &BlockConfig,
        _names: &BlockNames,
        _a: &Self::Val,
        _n: usize,
    ) -> Option<Result<Self::Val, Self::Error>> {
        None
    }
}

/// Appends `new` to one layer's cache slot; returns the whole cache of that layer.
fn append<O: BlockOps>(o: &mut O, slot: &mut Option<O::Val>, new: O::Val) -> Result<O::Val, O::Error> {
    let all = match slot.take() {
        None => new,
        Some(old) => o.concat_rows(&old, &new)?,
    };
    *slot = Some(all.clone());
    Ok(all)
}

/// The layer-`l` slots of a KV cache and the number of positions before the new rows.
pub struct KvSlot<'a, V> {
    pub k: &'a mut Option<V>,
    pub v: &'a mut Option<V>,
    pub start: usize,
}

/// One transformer block on the new rows `x` (`[rows.n, hidden]`); with `kv`, attention runs
/// against the cached keys/values of the earlier positions and appends the new ones. Each
/// weight operator is announced ([`BlockOps::announce_linear`]) one operator ahead: `O` after
/// `QKV`, `FFN1` after `O`, `FFN2` after `FFN1`, and the next block's `QKV` (`next`, its
/// names) after `FFN2`.
pub fn block<O: BlockOps>(
    o: &mut O,
    cfg: &BlockConfig,
    names: &BlockNames,
    x: O::Val,
    rows: Rows<'_>,
    kv: Option<KvSlot<'_, O::Val>>,
    next: Option<&BlockNames>,
) -> Result<O::Val, O::Error> {
    let n = rows.n;
    match cfg.placement {
        Placement::Post => {
            let r = attention_branch(o, cfg, names, &x, rows, kv)?;
            announce_ffn1(o, cfg, names, n)?;
            let r = o.add(&r, &x)?;
            let a = o.norm(cfg, &names.norm1, &r, n)?;
            let f = ffn(o, cfg, names, &a, n)?;
            announce_qkv(o, cfg, next, n)?;
            let f = o.add(&f, &a)?;
            o.norm(cfg, &names.norm2, &f, n)
        }
        Placement::Pre => {
            let a = o.norm(cfg, &names.norm1, &x, n)?;
            let r = attention_branch(o, cfg, names, &a, rows, kv)?;
            announce_ffn1(o, cfg, names, n)?;
            let x = o.add(&r, &x)?;
            let a = o.norm(cfg, &names.norm2, &x, n)?;
            let f = ffn(o, cfg, names, &a, n)?;
            announce_qkv(o, cfg, next, n)?;
            o.add(&f, &x)
        }
    }
}

/// The `QKV` operator's output widths: `[hidden, kv_dim, kv_dim]`.
fn qkv_outs(cfg: &BlockConfig) -> [usize; 3] {
    [cfg.hidden, cfg.kv_dim(), cfg.kv_dim()]
}

fn announce_qkv<O: BlockOps>(o: &mut O, cfg: &BlockConfig, next: Option<&BlockNames>, n: usize) -> Result<(), O::Error> {
    match next {
        Some(nx) => o.announce_linear("linear.qkv", cfg, &nx.qkv, n, cfg.hidden, &qkv_outs(cfg), cfg.query_scale()),
        None => Ok(()),
    }
}

fn announce_ffn1<O: BlockOps>(o: &mut O, cfg: &BlockConfig, names: &BlockNames, n: usize) -> Result<(), O::Error> {
    if o.runs_whole_ffn() {
        return Ok(());
    }
    o.announce_linear("linear.ffn1", cfg, &names.ffn_in, n, cfg.hidden, &cfg.ffn_in_outs(), NO_SCALE)
}

/// `O(Attn(QKV(a)))`.
fn attention_branch<O: BlockOps>(
    o: &mut O,
    cfg: &BlockConfig,
    names: &BlockNames,
    a: &O::Val,
    rows: Rows<'_>,
    kv: Option<KvSlot<'_, O::Val>>,
) -> Result<O::Val, O::Error> {
    let (n, h, kvd) = (rows.n, cfg.hidden, cfg.kv_dim());
    let width = h + 2 * kvd;
    let qkv = o.linear("linear.qkv", cfg, &names.qkv, a, n, h, &qkv_outs(cfg), cfg.query_scale())?;
    o.announce_linear("linear.o", cfg, std::slice::from_ref(&names.o), n, h, &[h], NO_SCALE)?;
    let q = o.columns(&qkv, n, width, 0, h)?;
    let k = o.columns(&qkv, n, width, h, kvd)?;
    let v = o.columns(&qkv, n, width, h + kvd, kvd)?;
    let start = kv.as_ref().map_or(0, |s| s.start);
    let (q, k) = match cfg.rope_theta {
        None => (q, k),
        Some(theta) => o.rope(cfg, &q, &k, start, n, theta)?,
    };
    let (k, v) = match kv {
        None => (k, v),
        Some(slot) => (append(o, slot.k, k)?, append(o, slot.v, v)?),
    };
    let m = start + n;
    if rows.key_mask.is_some_and(|km| km.len() != m) {
        return Err(O::shape_error(format!("a key mask over {m} positions is needed")));
    }
    if let Some(segs) = rows.segments {
        if m != n || segs.iter().sum::<usize>() != n || segs.contains(&0) {
            return Err(O::shape_error(format!("a batch of {segs:?} rows over {n} new rows and {m} keys (a batch has no KV cache)")));
        }
    }
    let dims = AttnDims { n, m, heads: cfg.heads, kv_heads: cfg.kv_heads, dh: cfg.head_dim() };
    let ctx = o.attention(&q, &k, &v, dims, rows.key_mask, cfg.causal, rows.segments)?;
    o.linear("linear.o", cfg, std::slice::from_ref(&names.o), &ctx, n, h, &[h], NO_SCALE)
}

/// `FFN(a)`: the arithmetic's whole-block protocol if its suite names one, else
/// `W2 · act(W1 · a)` (plain) or `W_down · (act(W_gate · a) ⊙ W_up · a)` (gated).
fn ffn<O: BlockOps>(
    o: &mut O,
    cfg: &BlockConfig,
    names: &BlockNames,
    a: &O::Val,
    n: usize,
) -> Result<O::Val, O::Error> {
    if let Some(whole) = o.whole_ffn(cfg, names, a, n) {
        return whole;
    }
    let (h, ff) = (cfg.hidden, cfg.intermediate);
    let outs = cfg.ffn_in_outs();
    let f1 = o.linear("linear.ffn1", cfg, &names.ffn_in, a, n, h, &outs, NO_SCALE)?;
    o.announce_linear("linear.ffn2", cfg, std::slice::from_ref(&names.ffn_out), n, ff, &[h], NO_SCALE)?;
    let hidden = match cfg.ffn {
        FfnKind::Plain => o.activation(cfg.activation, &f1)?,
        FfnKind::Gated => {
            let g = o.columns(&f1, n, 2 * ff, 0, ff)?;
            let u = o.columns(&f1, n, 2 * ff, ff, ff)?;
            let g = o.activation(cfg.activation, &g)?;
            o.mul(&g, &u)?
        }
    };
    o.linear("linear.ffn2", cfg, std::slice::from_ref(&names.ffn_out), &hidden, n, ff, &[h], NO_SCALE)
}

/// Runs `layers` blocks on the new rows, with the KV cache when given (decoders), calling
/// `progress(done, layers)` after each block.
#[allow(clippy::too_many_arguments)]
pub fn run_blocks<O: BlockOps>(
    o: &mut O,
    cfg: &BlockConfig,
    names: impl Fn(usize) -> BlockNames,
    layers: usize,
    mut x: O::Val,
    rows: Rows<'_>,
    mut cache: Option<&mut KvCache<O::Val>>,
    progress: Option<&dyn Fn(usize, usize)>,
) -> Result<O::Val, O::Error> {
    let start = cache.as_ref().map_or(0, |c| c.len());
    for l in 0..layers {
        let kv = match cache.as_deref_mut() {
            None => None,
            Some(c) => match (c.k.get_mut(l), c.v.get_mut(l)) {
                (Some(k), Some(v)) => Some(KvSlot { k, v, start }),
                _ => return Err(O::shape_error(format!("the KV cache has no layer {l}"))),
            },
        };
        let next = (l + 1 < layers).then(|| names(l + 1));
        x = block(o, cfg, &names(l), x, rows, kv, next.as_ref())?;
        if let Some(p) = progress {
            p(l + 1, layers);
        }
    }
    if let Some(c) = cache {
        c.len += rows.n;
    }
    Ok(x)
}
