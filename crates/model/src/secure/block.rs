//! The steps of the transformer block ([`crate::block`]) on an [`Engine`] (a secure party or
//! the fixed-point twin): weights are loaded and encoded by the server one tensor at a time,
//! each step is one profile row, and every nonlinear operator goes through the suite
//! ([`crate::secure::operators`]). The block itself is not here: it is written once, for the
//! f32 reference and the engines alike.

use crate::arch::{ArchOps, DenseDecl, TableDecl};
use crate::block::{
    self, Activation, AttnDims, BlockConfig, BlockNames, BlockOps, ColScale, KvCache, Layout, NormKind, Rows, NO_SCALE,
};
use crate::secure::engine::{timed, Engine, Timing, WeightRef};
use crate::secure::layers::{
    attention, embed_lookup, encode, layer_linear, linear, load_decl, load_dense, load_vec, mean_rows, rope, take_rows, EMBED_KEY,
    EncDense,
};
use crate::config::ScaleShifts;
use crate::ModelError;
use nectar_net::Role;
use nectar_nn::max::argmax_rows_narrow;
use crate::secure::operators;
use crate::secure::{SecureError, WeightSource};
use nectar_math::FixedPoint;

/// An engine and the server's weights (`None` on the client), as the block's arithmetic.
pub struct EngineBlock<'a, E> {
    pub e: &'a mut E,
    pub src: Option<&'a dyn WeightSource>,
    /// The announced next weight operator (label, names) and its weights, loaded and encoded
    /// at the announcement ([`BlockOps::announce_linear`]).
    pub announced: Option<(&'static str, Vec<String>, Option<EncDense>)>,
    /// The RMSNorms whose statistics are taken of `x·2^−k` and the linear operators computed at
    /// `W·2^−k` (public, from the model's config: [`crate::config::LlamaConfig::scale_shifts`]).
    pub scale_shifts: Option<&'a ScaleShifts>,
}

impl<'a, E: Engine> EngineBlock<'a, E> {
    /// The engine and the server's weights, nothing announced.
    pub fn new(e: &'a mut E, src: Option<&'a dyn WeightSource>) -> Self {
        EngineBlock { e, src, announced: None, scale_shifts: None }
    }

    /// With the model's scale shifts.
    pub fn with_scale_shifts(mut self, shifts: &'a ScaleShifts) -> Self {
        self.scale_shifts = Some(shifts);
        self
    }
}

impl<E> EngineBlock<'_, E> {
    /// The scale shift of the linear operator whose first weight is `names[0]`.
    fn linear_shift(&self, names: &[String]) -> Result<u32, SecureError> {
        let k = names.first().and_then(|n| self.scale_shifts.and_then(|m| m.get(n))).copied().unwrap_or(0);
        if k >= 24 {
            return Err(SecureError::Unsupported(format!("a linear operator's scale shift of {k} bits")));
        }
        Ok(k)
    }
}

/// [`load_fused`] at `W·2^−shift` and `b·2^−shift` (rounded; the caller multiplies the product
/// by `2^shift`, [`crate::config::LlamaConfig::scale_shifts`]).
#[allow(clippy::too_many_arguments)]
fn load_shifted(
    fp: FixedPoint,
    src: Option<&dyn WeightSource>,
    names: &[String],
    in_dim: usize,
    outs: &[usize],
    cfg: &BlockConfig,
    scale: ColScale,
    shift: u32,
) -> Result<Option<EncDense>, SecureError> {
    let w = load_fused(fp, src, names, in_dim, outs, cfg, scale)?;
    if shift == 0 {
        return Ok(w);
    }
    let down = |v: u64| (((v as i64) + (1i64 << shift >> 1)) >> shift) as u64;
    Ok(w.map(|d| EncDense { w: std::sync::Arc::new(d.w.iter().map(|&v| down(v)).collect()), b: d.b.map(|b| b.into_iter().map(down).collect()) }))
}

/// Concatenates dense layers along the output dimension (`in × Σout`).
fn concat_cols(parts: &[Option<EncDense>], in_dim: usize, outs: &[usize]) -> Option<EncDense> {
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
    Some(EncDense { w: std::sync::Arc::new(w), b })
}

/// A fused product's weight: one tensor of `Σouts` outputs, or one tensor per part
/// concatenated; the first `scale.cols` output columns scaled by `scale.by`.
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
            let mut first_col = 0;
            for (name, &out) in parts.iter().zip(outs) {
                // The part's share of the scaled columns (all of them are in the first part
                // for QKV).
                let cols = scale.cols.saturating_sub(first_col).min(out);
                let s = ColScale { cols, by: scale.by };
                enc.push(load_dense(src, fp, name, in_dim, out, cfg.layout, cfg.bias, s)?);
                first_col += out;
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
/// one `layernorm` / `rmsnorm` operator (an RMSNorm's statistics of `x·2^−shift`).
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
    shift: u32,
) -> Result<E::Val, SecureError> {
    let label = match kind {
        NormKind::LayerNorm => "layernorm",
        NormKind::RmsNorm => "rmsnorm",
    };
    timed(e, label, |e| {
        let fp = e.format();
        let g = load_vec(src, fp, &format!("{prefix}.weight"), cols)?;
        let gw = WeightRef::from_option(g.as_deref());
        match kind {
            NormKind::LayerNorm => {
                let b = load_vec(src, fp, &format!("{prefix}.bias"), cols)?;
                let bv = e.server_input(b.as_deref(), cols)?;
                operators::layernorm(e, x, rows, cols, gw, &bv, eps)
            }
            NormKind::RmsNorm => operators::rmsnorm(e, x, rows, cols, gw, eps, shift),
        }
    })
}

/// Fails unless the engines have a protocol for `act` (checked before any key is generated).
pub fn check_activation(act: Activation) -> Result<(), SecureError> {
    match act {
        Activation::Gelu | Activation::GeluTanh | Activation::Silu => Ok(()),
        Activation::Relu => Err(no_relu()),
    }
}

fn no_relu() -> SecureError {
    SecureError::Unsupported("the secure engines have no ReLU protocol yet (the checkpoint's hidden_act is relu)".into())
}

impl<E: Engine> EngineBlock<'_, E> {
    /// The FFN branch with LEAF's block (suite `ffn = leaf`, issue 16 item 6; the format is
    /// [`nectar_fhe::LeafFormat::wide`]): `X` truncated to `x_frac = 10` bits and reduced mod
    /// `q' = 2^27` (local), `act(X·W1 + b1)` by [`crate::secure::leaf::ffn1`] (the server evaluates
    /// PCMM and the functional bootstrapping alone; `W1` rounded to `w_frac = 11` bits, `b1` to
    /// `pre_frac = 21`), the shares extended back to `Z_{2^l}` (BumbleBee App. E Alg. 5;
    /// outputs `< 2^25` by the table's construction) and truncated from `out_frac = 20` to `f`
    /// bits, then `·W2` with the suite's linear protocol (LEAF's block ends with the
    /// activation, LEAF §1 / Table 2).
    ///
    /// A gated FFN (LLaMA; ours, LEAF has none): LEAF's block computes `act(X·W_gate)`, the suite's
    /// linear protocol `X·W_up`, their product is the suite's MPC product, then `·W_down`.
    fn leaf_ffn(&mut self, cfg: &BlockConfig, names: &BlockNames, a: &E::Val, n: usize) -> Result<E::Val, SecureError> {
        use crate::block::FfnKind;
        let r: fn(f64) -> f64 = match cfg.activation {
            Activation::Gelu => nectar_fhe::fbs_poly::gelu,
            Activation::GeluTanh => |x| crate::secure::exact::gelu(x, true),
            Activation::Silu => nectar_fhe::fbs_poly::silu,
            Activation::Relu => return Err(no_relu()),
        };
        let (h, ff) = (cfg.hidden, cfg.intermediate);
        let gated = cfg.ffn == FfnKind::Gated;
        if gated && names.ffn_in.len() != 2 {
            return Err(SecureError::Unsupported("LEAF's gated FFN needs the gate and up products as two tensors".into()));
        }
        let src = self.src;
        if self.e.exact("leaf.ffn1") {
            // error attribution (`nectar accuracy`, twin only): the ring product, then r in f64
            let f1 = self.linear("linear.ffn1", cfg, &names.ffn_in[..1], a, n, h, &[ff], NO_SCALE)?;
            let mut y = timed(self.e, "leaf.ffn1", |e| crate::secure::exact::map(e, &f1, r))?;
            if gated {
                let u = self.linear("linear.ffn1", cfg, &names.ffn_in[1..], a, n, h, &[ff], NO_SCALE)?;
                y = self.mul(&y, &u)?;
            }
            return self.linear("linear.ffn2", cfg, std::slice::from_ref(&names.ffn_out), &y, n, ff, &[h], NO_SCALE);
        }
        let y = timed(self.e, "leaf.ffn1", |e| {
            let fmt = nectar_fhe::LeafFormat::wide()?;
            let fp = e.format();
            let (lq, xf, wf, pf) = (fmt.rp.log_q(), fmt.x_frac, fmt.w_frac(), fmt.pre_frac());
            if fp.f() < xf || fmt.out_frac < fp.f() || fp.l() <= lq {
                return Err(SecureError::Unsupported(format!("LEAF's block in the format {fp:?}")));
            }
            // the server's W1 at w_frac bits and b1 at pre_frac bits, mod q'
            let weights = match src {
                None => None,
                Some(_) => {
                    let w_fp = FixedPoint::new(64, wf)?;
                    let w = load_dense(src, w_fp, &names.ffn_in[0], h, ff, cfg.layout, false, NO_SCALE)?
                        .ok_or_else(|| SecureError::Role("the server's W1".into()))?;
                    let w: Vec<i32> = w
                        .w
                        .iter()
                        .map(|&v| i32::try_from(v as i64).map_err(|_| SecureError::Unsupported(format!("a W1 entry beyond 2^31 at {wf} bits"))))
                        .collect::<Result<_, _>>()?;
                    let b = if cfg.bias {
                        load_vec(src, FixedPoint::new(64, pf)?, &format!("{}.bias", names.ffn_in[0]), ff)?
                            .ok_or_else(|| SecureError::Role("the server's b1".into()))?
                    } else {
                        vec![0; ff]
                    };
                    let b: Vec<u32> = b.iter().map(|&v| (v & ((1u64 << lq) - 1)) as u32).collect();
                    Some((w, b))
                }
            };
            let table = fmt.table(r)?;
            let x = e.trunc(a, fp.f() - xf)?;
            let x = e.reduce(&x, lq)?;
            let y = crate::secure::leaf::ffn1(e, &x, (n, h, ff), weights.as_ref().map(|(w, b)| (w.as_slice(), b.as_slice())), &table)?;
            let y = e.extend(&y, lq, fp.l())?;
            Ok(e.trunc(&y, fmt.out_frac - fp.f())?)
        })?;
        let y = if gated {
            let u = self.linear("linear.ffn1", cfg, &names.ffn_in[1..], a, n, h, &[ff], NO_SCALE)?;
            self.mul(&y, &u)?
        } else {
            y
        };
        self.linear("linear.ffn2", cfg, std::slice::from_ref(&names.ffn_out), &y, n, ff, &[h], NO_SCALE)
    }
}

impl<E: Engine> BlockOps for EngineBlock<'_, E> {
    type Val = E::Val;
    type Error = SecureError;

    fn shape_error(msg: String) -> SecureError {
        SecureError::Role(msg)
    }

    fn norm(&mut self, cfg: &BlockConfig, name: &str, x: &E::Val, rows: usize) -> Result<E::Val, SecureError> {
        let shift = self.scale_shifts.and_then(|m| m.get(name)).copied().unwrap_or(0);
        named_norm(self.e, self.src, cfg.norm, name, x, rows, cfg.hidden, cfg.eps, shift)
    }

    fn linear(
        &mut self,
        label: &'static str,
        cfg: &BlockConfig,
        names: &[String],
        x: &E::Val,
        n: usize,
        in_dim: usize,
        outs: &[usize],
        scale: ColScale,
    ) -> Result<E::Val, SecureError> {
        let src = self.src;
        let total: usize = outs.iter().sum();
        let announced = match self.announced.take() {
            Some((l, ns, w)) if l == label && ns == names => Some(w),
            _ => None,
        };
        let shift = self.linear_shift(names)?;
        timed(self.e, label, |e| {
            let w = match announced {
                Some(w) => w,
                None => load_shifted(e.format(), src, names, in_dim, outs, cfg, scale, shift)?,
            };
            let y = layer_linear(e, x, n, in_dim, total, w.as_ref(), cfg.bias, &names.join("+"))?;
            if shift == 0 {
                return Ok(y);
            }
            Ok(e.mul_const(&y, &[1u64 << shift], 0)?)
        })
    }

    fn announce_linear(
        &mut self,
        label: &'static str,
        cfg: &BlockConfig,
        names: &[String],
        n: usize,
        in_dim: usize,
        outs: &[usize],
        scale: ColScale,
    ) -> Result<(), SecureError> {
        let total: usize = outs.iter().sum();
        let shift = self.linear_shift(names)?;
        let w = load_shifted(self.e.format(), self.src, names, in_dim, outs, cfg, scale, shift)?;
        self.e.prefetch_layer_matmul(n, in_dim, total, w.as_ref().map(|d| &d.w))?;
        self.announced = Some((label, names.to_vec(), w));
        Ok(())
    }

    fn columns(&mut self, x: &E::Val, n: usize, width: usize, off: usize, len: usize) -> Result<E::Val, SecureError> {
        let idx: Vec<usize> = (0..n * len).map(|q| (q / len) * width + off + q % len).collect();
        Ok(self.e.gather(x, &idx)?)
    }

    fn rope(
        &mut self,
        cfg: &BlockConfig,
        q: &E::Val,
        k: &E::Val,
        start: usize,
        n: usize,
        theta: f64,
    ) -> Result<(E::Val, E::Val), SecureError> {
        let dh = cfg.head_dim();
        timed(self.e, "rope", |e| {
            Ok((
                rope(e, q, n, start, cfg.heads, dh, theta)?,
                rope(e, k, n, start, cfg.kv_heads, dh, theta)?,
            ))
        })
    }

    fn concat_rows(&mut self, old: &E::Val, new: &E::Val) -> Result<E::Val, SecureError> {
        Ok(self.e.concat(&[old, new])?)
    }

    fn attention(
        &mut self,
        q: &E::Val,
        k: &E::Val,
        v: &E::Val,
        dims: AttnDims,
        key_mask: Option<&[bool]>,
        causal: bool,
        segments: Option<&[usize]>,
    ) -> Result<E::Val, SecureError> {
        attention(self.e, q, k, v, dims, key_mask, causal, segments)
    }

    fn activation(&mut self, act: Activation, x: &E::Val) -> Result<E::Val, SecureError> {
        match act {
            Activation::Silu => operators::silu(self.e, x),
            Activation::Gelu => operators::gelu(self.e, x, false),
            Activation::GeluTanh => operators::gelu(self.e, x, true),
            Activation::Relu => Err(no_relu()),
        }
    }

    fn mul(&mut self, a: &E::Val, b: &E::Val) -> Result<E::Val, SecureError> {
        operators::mul(self.e, a, b)
    }

    fn add(&mut self, a: &E::Val, b: &E::Val) -> Result<E::Val, SecureError> {
        Ok(self.e.add(a, b)?)
    }

    /// An FFN protocol that evaluates the block itself (`ffn = leaf`) takes the whole FFN.
    fn runs_whole_ffn(&self) -> bool {
        self.e.suite().ffn.whole_block()
    }

    fn whole_ffn(
        &mut self,
        cfg: &BlockConfig,
        names: &BlockNames,
        a: &E::Val,
        n: usize,
    ) -> Option<Result<E::Val, SecureError>> {
        self.runs_whole_ffn().then(|| self.leaf_ffn(cfg, names, a, n))
    }
}

/// Embeddings and heads on the engine: weights loaded and encoded by the server right before
/// their operator; the client's inputs enter as its shares, the server's rows as its own.
impl<E: Engine> ArchOps for EngineBlock<'_, E> {
    fn steps_follow(&mut self, more: bool) {
        self.e.set_steps_follow(more);
    }

    fn step<T>(
        &mut self,
        label: &'static str,
        f: impl FnOnce(&mut Self) -> Result<T, SecureError>,
    ) -> Result<T, SecureError> {
        let start = Timing::enter(self.e);
        let out = f(self);
        start.leave(self.e, label);
        out
    }

    /// The table encoded as `vocab × dim` (the tensor's own order) for one weight product.
    fn lookup(&mut self, t: &DenseDecl, ids: Option<&[u32]>, n: usize) -> Result<E::Val, SecureError> {
        let (vocab, dim) = (t.out_dim, t.in_dim);
        let table = load_dense(self.src, self.e.format(), &t.name, vocab, dim, Layout::InOut, false, NO_SCALE)?;
        embed_lookup(self.e, ids, n, vocab, dim, table.as_ref().map(|t| t.w.as_slice()))
    }

    /// The server sums the parts' rows in f64 and encodes them once (its share; the client's
    /// is zero): local, exact.
    fn server_rows(&mut self, parts: &[(&TableDecl, &[usize])]) -> Result<E::Val, SecureError> {
        let Some(&(first, rows)) = parts.first() else {
            return Err(SecureError::Role("no server rows".into()));
        };
        let d = first.width();
        let values = match self.src {
            None => None,
            Some(s) => {
                let mut sum = vec![0f64; rows.len() * d];
                for &(t, rows) in parts {
                    let table = s.tensor(&t.name, &t.shape)?;
                    for (i, &r) in rows.iter().enumerate() {
                        let row = table.get(r * d..(r + 1) * d).ok_or_else(|| {
                            SecureError::Role(format!("row {r} of {} rows of {}", t.rows(), t.name))
                        })?;
                        for (acc, &v) in sum[i * d..(i + 1) * d].iter_mut().zip(row) {
                            *acc += v as f64;
                        }
                    }
                }
                Some(encode(self.e.format(), sum.into_iter(), &first.name)?)
            }
        };
        Ok(self.e.server_input(values.as_deref(), rows.len() * d)?)
    }

    fn client_values(&mut self, x: Option<&[f32]>, len: usize, what: &str) -> Result<E::Val, SecureError> {
        let client_has = self.e.role() == Role::Client || self.e.is_twin();
        let values = if client_has {
            let Some(x) = x else {
                return Err(SecureError::Role(format!("the client must provide {what}")));
            };
            let fp = self.e.format();
            let enc = x
                .iter()
                .map(|&v| {
                    fp.encode::<u64>(v as f64)
                        .map_err(|err| ModelError::Input(format!("a value {v} of {what} does not fit the format: {err}")))
                })
                .collect::<Result<Vec<u64>, ModelError>>()?;
            Some(enc)
        } else {
            None
        };
        Ok(self.e.client_input(values.as_deref(), len)?)
    }

    fn dense(&mut self, d: &DenseDecl, x: &E::Val, n: usize) -> Result<E::Val, SecureError> {
        let w = load_decl(self.src, self.e.format(), d, NO_SCALE)?;
        linear(self.e, x, n, d.in_dim, d.out_dim, w.as_ref(), d.bias)
    }

    fn take_rows(&mut self, x: &E::Val, r: std::ops::Range<usize>, width: usize) -> Result<E::Val, SecureError> {
        take_rows(self.e, x, r, width)
    }

    /// Every row (the engines run unpadded queries).
    fn mean_rows(&mut self, x: &E::Val, n: usize, width: usize, mask: Option<&[bool]>) -> Result<E::Val, SecureError> {
        if mask.is_some_and(|m| m.iter().any(|&k| !k)) {
            return Err(SecureError::Unsupported("a padding mask in the secure mean pooling".into()));
        }
        mean_rows(self.e, x, n, width)
    }

    fn pick_rows(&mut self, x: &E::Val, rows: &[usize], width: usize) -> Result<E::Val, SecureError> {
        let idx: Vec<usize> = rows.iter().flat_map(|&r| r * width..(r + 1) * width).collect();
        Ok(self.e.gather(x, &idx)?)
    }

    /// One input: [`mean_rows`]. A batch: each input's rows summed (padded with zeros to the
    /// longest, local), then one product by the public `1/n_s` per input and one truncation.
    fn mean_segments(&mut self, x: &E::Val, lens: &[usize], width: usize) -> Result<E::Val, SecureError> {
        let n: usize = lens.iter().sum();
        if let [one] = lens {
            return mean_rows(self.e, x, *one, width);
        }
        let longest = lens.iter().copied().max().unwrap_or(0);
        let zero = self.e.constant(&[0])?;
        let xz = self.e.concat(&[x, &zero])?;
        let mut idx = Vec::with_capacity(lens.len() * width * longest);
        let mut off = 0;
        for &len in lens {
            for c in 0..width {
                idx.extend((0..longest).map(|i| if i < len { (off + i) * width + c } else { n * width }));
            }
            off += len;
        }
        let xt = self.e.gather(&xz, &idx)?;
        let sums = self.e.sum_groups(&xt, longest.max(1))?;
        let sh = self.e.format().f() + 8;
        let mut cs = Vec::with_capacity(lens.len() * width);
        for &len in lens {
            let c = nectar_nn::backend::enc_scaled(self.e, 1.0 / len.max(1) as f64, sh)?;
            cs.extend(std::iter::repeat_n(c, width));
        }
        Ok(self.e.mul_const(&sums, &cs, sh)?)
    }

    fn tanh(&mut self, x: &E::Val) -> Result<E::Val, SecureError> {
        operators::tanh(self.e, x)
    }

    fn argmax(&mut self, x: &E::Val, rows: usize, cols: usize) -> Result<E::Val, SecureError> {
        // Logits differ by far less than the narrow comparisons' 2^19 (`argmax_rows_narrow`).
        Ok(argmax_rows_narrow(self.e, x, rows, cols)?.1)
    }

    fn reveal(&mut self, x: &E::Val) -> Result<Option<Vec<f64>>, SecureError> {
        let opened = self.e.reveal_to(x, Role::Client)?;
        Ok(opened.map(|v| self.e.format().decode_vec(&v)))
    }

    fn reveal_index(&mut self, x: &E::Val) -> Result<Option<Vec<u64>>, SecureError> {
        Ok(self.e.reveal_to(x, Role::Client)?)
    }

    fn client_says(&mut self, go: Option<bool>) -> Result<bool, SecureError> {
        let v = go.map(|g| [g as u64]);
        let x = self.e.client_input(v.as_ref().map(|a| &a[..]), 1)?;
        match self.e.reveal_to(&x, Role::Server)? {
            // the server (and the twin, which holds both)
            Some(o) => Ok(o.first() == Some(&1)),
            None => go.ok_or_else(|| SecureError::Role("the client's decision".into())),
        }
    }

    /// Suite `blb` generates one token per prompt: BLB plans a prompt of `L` tokens, not
    /// KV-cache decoding steps.
    fn check_generation(&self, n_new: usize) -> Result<(), SecureError> {
        if n_new > 1 && self.e.suite().matmul.fused() {
            return Err(SecureError::Unsupported(format!(
                "suite blb generates one token per prompt ({n_new} asked): BLB plans a prompt of L tokens, not KV-cache decoding steps"
            )));
        }
        Ok(())
    }
}

/// Runs `layers` blocks of [`crate::block`] on the new rows of inputs of lengths `lens` (one
/// input, or a batch: [`Rows::batch`]) on the engine, with the KV cache when given (decoders),
/// reporting progress after each block.
#[allow(clippy::too_many_arguments)]
pub fn run_blocks<E: Engine>(
    e: &mut E,
    src: Option<&dyn WeightSource>,
    cfg: &BlockConfig,
    names: impl Fn(usize) -> BlockNames,
    layers: usize,
    x: E::Val,
    lens: &[usize],
    cache: Option<&mut KvCache<E::Val>>,
    progress: Option<&super::Progress<'_>>,
    scale_shifts: Option<&ScaleShifts>,
) -> Result<E::Val, SecureError> {
    if lens.len() > 1 && cache.is_some() {
        return Err(SecureError::Unsupported("a batch of inputs with a KV cache".into()));
    }
    if e.suite().matmul.fused() {
        if scale_shifts.is_some_and(|m| m.values().any(|&k| k > 0)) {
            return Err(SecureError::Unsupported("suite blb: RMSNorm statistics shifts (a model with massive activations)".into()));
        }
        // A prompt runs without filling the cache (generation under blb stops after the
        // prompt's token, `EngineBlock::check_generation`); a decoding step is refused.
        if cache.as_ref().is_some_and(|c| !c.is_empty()) {
            return Err(SecureError::Unsupported("suite blb: KV-cache decoding (BLB plans a prompt of L tokens)".into()));
        }
        if let [one] = lens {
            return super::blb::run_layers(e, src, cfg, names, layers, x, *one, progress);
        }
        // BLB's layer plans one sequence per packing (its multi-head packings put a sequence's
        // tokens in a ciphertext's slots): the inputs of a batch run one by one, and the
        // profile says so in its row `batch.blb-per-input`.
        let mut outs = Vec::with_capacity(lens.len());
        for (&off, &len) in block::segment_starts(lens).iter().zip(lens) {
            let xi = take_rows(e, &x, off..off + len, cfg.hidden)?;
            outs.push(super::blb::run_layers(e, src, cfg, &names, layers, xi, len, progress)?);
        }
        e.profile_mut().record("batch.blb-per-input", "blb: one input at a time", 0.0, Default::default());
        let parts: Vec<&E::Val> = outs.iter().collect();
        return Ok(e.concat(&parts)?);
    }
    let mut ops = EngineBlock { scale_shifts, ..EngineBlock::new(e, src) };
    let report = progress.map(|p| move |done: usize, all: usize| p(done, all));
    let rows = Rows::batch(lens);
    block::run_blocks(
        &mut ops,
        cfg,
        names,
        layers,
        x,
        rows,
        cache,
        report.as_ref().map(|r| r as &dyn Fn(usize, usize)),
    )
}

/// The session setup's share of [`ArchOps::lookup`] on the token table `t`
/// ([`Engine::preload_embed`]): only where the suite's `embed` runs a lookup protocol (the
/// server's table is not loaded otherwise).
pub(crate) fn preload_lookup<E: Engine>(e: &mut E, src: Option<&dyn WeightSource>, t: &DenseDecl) -> Result<(), SecureError> {
    if e.suite().embed.lookup().is_none() {
        return Ok(());
    }
    let (vocab, dim) = (t.out_dim, t.in_dim);
    let table = load_dense(src, e.format(), &t.name, vocab, dim, Layout::InOut, false, NO_SCALE)?;
    e.preload_embed(vocab, dim, WeightRef::from_option(table.as_ref().map(|t| t.w.as_slice())), EMBED_KEY)?;
    Ok(())
}
