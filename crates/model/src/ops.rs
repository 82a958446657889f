//! Plaintext f32 kernels shared by the architectures: linear layers, normalisations,
//! activations, softmax attention. Matrix products are parallelised with rayon over output
//! features, so a single-token step (generation with a KV cache) also uses every core.
//!
//! Weight layout follows PyTorch `nn.Linear`: `w` is `[out, in]` row-major and
//! `y = x w^T + b`. GPT-2's `Conv1D` (`[in, out]`) is transposed once at load.

use rayon::prelude::*;

/// Output features per rayon task.
const CHUNK: usize = 16;

/// Dot product with eight independent accumulators (vectorises; order-stable).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// `y[n, out] = x[n, in] · w[out, in]^T + b`.
pub fn linear(
    x: &[f32],
    n: usize,
    w: &[f32],
    b: Option<&[f32]>,
    in_dim: usize,
    out_dim: usize,
) -> Vec<f32> {
    debug_assert_eq!(x.len(), n * in_dim);
    debug_assert_eq!(w.len(), out_dim * in_dim);
    if n == 0 {
        return Vec::new();
    }
    // Computed transposed ([out, n]) so each task owns whole weight rows.
    let mut yt = vec![0f32; out_dim * n];
    yt.par_chunks_mut(n * CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            for (j, row) in chunk.chunks_mut(n).enumerate() {
                let o = c * CHUNK + j;
                let wr = &w[o * in_dim..(o + 1) * in_dim];
                let bias = b.map_or(0.0, |b| b[o]);
                for (i, y) in row.iter_mut().enumerate() {
                    *y = dot(&x[i * in_dim..(i + 1) * in_dim], wr) + bias;
                }
            }
        });
    let mut y = vec![0f32; n * out_dim];
    for o in 0..out_dim {
        for i in 0..n {
            y[i * out_dim + o] = yt[o * n + i];
        }
    }
    y
}

/// Row-wise LayerNorm over the last dimension `d`, statistics in f64.
pub fn layer_norm(x: &mut [f32], d: usize, gamma: &[f32], beta: &[f32], eps: f64) {
    for row in x.chunks_mut(d) {
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / d as f64;
        let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / d as f64;
        let inv = 1.0 / (var + eps).sqrt();
        for (k, v) in row.iter_mut().enumerate() {
            *v = ((*v as f64 - mean) * inv) as f32 * gamma[k] + beta[k];
        }
    }
}

/// `x / sqrt(mean(x^2) + eps) * w`, row-wise, statistics in f64.
pub fn rms_norm(x: &mut [f32], d: usize, w: &[f32], eps: f64) {
    for row in x.chunks_mut(d) {
        let ms = row.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / d as f64;
        let inv = 1.0 / (ms + eps).sqrt();
        for (v, &g) in row.iter_mut().zip(w) {
            *v = (*v as f64 * inv) as f32 * g;
        }
    }
}

/// Rotary position embedding (HF "rotate half": dimension `i` paired with `i + dh/2`,
/// frequency `theta^(-2i/dh)`) of each head of `x` (`[n, heads*dh]`, rows at positions
/// `start..start+n`), in place.
pub fn rope(x: &mut [f32], start: usize, heads: usize, dh: usize, theta: f64) {
    let half = dh / 2;
    for (i, row) in x.chunks_mut(heads * dh).enumerate() {
        let pos = (start + i) as f64;
        for head in row.chunks_mut(dh) {
            for t in 0..half {
                let freq = theta.powf(-2.0 * t as f64 / dh as f64);
                let (sin, cos) = (pos * freq).sin_cos();
                let (a, b) = (head[t] as f64, head[t + half] as f64);
                head[t] = (a * cos - b * sin) as f32;
                head[t + half] = (b * cos + a * sin) as f32;
            }
        }
    }
}

use nectar_math::real::GeluForm;

/// Exact GeLU `x/2 (1 + erf(x / sqrt 2))` (`nectar_math::real::gelu`, in f64).
#[inline]
pub fn gelu(x: f32) -> f32 {
    nectar_math::real::gelu(x as f64, GeluForm::Erf) as f32
}

/// GPT-2's `gelu_new`: `x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
#[inline]
pub fn gelu_tanh(x: f32) -> f32 {
    nectar_math::real::gelu(x as f64, GeluForm::Tanh) as f32
}

/// Applies an activation in place.
pub fn activate(x: &mut [f32], act: crate::config::Activation) {
    use crate::config::Activation::*;
    let f: fn(f32) -> f32 = match act {
        Gelu => gelu,
        GeluTanh => gelu_tanh,
        Relu => |v| v.max(0.0),
        Silu => |v| v / (1.0 + (-v).exp()),
    };
    x.par_iter_mut().with_min_len(4096).for_each(|v| *v = f(*v));
}

/// Sizes of one attention call: `n` queries, `m` keys, `heads` query heads of width `dh`
/// sharing `kv_heads` key/value heads (grouped-query attention; `kv_heads = heads` otherwise).
#[derive(Debug, Clone, Copy)]
pub struct AttnShape {
    pub n: usize,
    pub m: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub dh: usize,
}

/// Scores of query `i` of head `h` against every key into `p` (`−∞` for keys it may not see,
/// as in [`attention`]); returns their max.
#[allow(clippy::too_many_arguments)] // one row of `attention`'s loop
fn row_scores(q: &[f32], k: &[f32], shape: AttnShape, key_mask: Option<&[bool]>, causal: bool, h: usize, i: usize, p: &mut [f32]) -> f32 {
    let AttnShape { n, m, heads, kv_heads, dh } = shape;
    let (d, dkv) = (heads * dh, kv_heads * dh);
    let g = h / (heads / kv_heads.max(1));
    let qi = &q[i * d + h * dh..i * d + (h + 1) * dh];
    let last = if causal { m - n + i } else { m - 1 };
    let mut max = f32::NEG_INFINITY;
    for j in 0..m {
        let visible = j <= last && key_mask.is_none_or(|mk| mk[j]);
        p[j] = if visible { dot(qi, &k[j * dkv + g * dh..j * dkv + (g + 1) * dh]) } else { f32::NEG_INFINITY };
        max = max.max(p[j]);
    }
    max
}

/// The inputs of [`attention`]'s exponentials: `score − row max` of every visible key, row by
/// row and head by head (what a distribution-aware exp is fitted to, [`crate::calibrate`]).
pub fn softmax_inputs(q: &[f32], k: &[f32], shape: AttnShape, key_mask: Option<&[bool]>, causal: bool) -> Vec<f32> {
    let mut p = vec![0f32; shape.m];
    let mut out = Vec::new();
    for h in 0..shape.heads {
        for i in 0..shape.n {
            let max = row_scores(q, k, shape, key_mask, causal, h, i, &mut p);
            out.extend(p.iter().filter(|v| v.is_finite()).map(|v| v - max));
        }
    }
    out
}

/// Multi-head dot-product attention; `q` is already scaled by `1/sqrt(dh)` (the block scales
/// the query columns of its QKV product).
///
/// `q` is `[n, heads*dh]` for queries at absolute positions `m-n .. m`; `k`, `v` are
/// `[m, kv_heads*dh]`, query head `h` reading key/value head `h / (heads / kv_heads)`. `key_mask[j] = false` removes key `j` (padding); `causal` lets query `i`
/// see only keys `j <= m - n + i`. Returns `[n, heads*dh]`.
pub fn attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: AttnShape,
    key_mask: Option<&[bool]>,
    causal: bool,
) -> Vec<f32> {
    let AttnShape {
        n,
        m,
        heads,
        kv_heads,
        dh,
    } = shape;
    let d = heads * dh;
    let dkv = kv_heads * dh;
    let group = heads / kv_heads.max(1);
    let per_head: Vec<Vec<f32>> = (0..heads)
        .into_par_iter()
        .map(|h| {
            let mut out = vec![0f32; n * dh];
            let mut p = vec![0f32; m];
            for i in 0..n {
                let max = row_scores(q, k, shape, key_mask, causal, h, i, &mut p);
                if max == f32::NEG_INFINITY {
                    continue; // no visible key: output zero
                }
                let g = h / group;
                let mut sum = 0f32;
                for pj in p.iter_mut() {
                    *pj = (*pj - max).exp();
                    sum += *pj;
                }
                let oi = &mut out[i * dh..(i + 1) * dh];
                for j in 0..m {
                    if p[j] == 0.0 {
                        continue;
                    }
                    let w = p[j] / sum;
                    let vj = &v[j * dkv + g * dh..j * dkv + (g + 1) * dh];
                    for t in 0..dh {
                        oi[t] += w * vj[t];
                    }
                }
            }
            out
        })
        .collect();
    let mut out = vec![0f32; n * d];
    for (h, ph) in per_head.iter().enumerate() {
        for i in 0..n {
            out[i * d + h * dh..i * d + (h + 1) * dh].copy_from_slice(&ph[i * dh..(i + 1) * dh]);
        }
    }
    out
}

/// Adds `b` into `a` element-wise.
pub fn add_assign(a: &mut [f32], b: &[f32]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// Index of the largest value (first on ties).
pub fn argmax(x: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if v > x[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exponentials' inputs are the visible scores minus their row max: a causal query sees
    /// only its prefix, a masked key is left out.
    #[test]
    fn softmax_inputs_are_the_visible_shifted_scores() {
        let shape = AttnShape { n: 2, m: 3, heads: 1, kv_heads: 1, dh: 1 };
        let (q, k) = ([1.0f32, 2.0], [0.5f32, -1.0, 3.0]);
        // query 0 sees key 0 (causal: m − n + 0 = 1 → keys 0, 1; key 1 masked), query 1 keys 0, 2
        let z = softmax_inputs(&q, &k, shape, Some(&[true, false, true]), true);
        assert_eq!(z, vec![0.0, 1.0 - 6.0, 0.0]);
        let all = softmax_inputs(&q, &k, shape, None, false);
        assert_eq!(all, vec![0.5 - 3.0, -1.0 - 3.0, 0.0, 1.0 - 6.0, -2.0 - 6.0, 0.0]);
    }

    #[test]
    fn linear_matches_naive() {
        let (n, i, o) = (3, 5, 37);
        let x: Vec<f32> = (0..n * i).map(|t| (t as f32 * 0.37).sin()).collect();
        let w: Vec<f32> = (0..o * i).map(|t| (t as f32 * 0.11).cos()).collect();
        let b: Vec<f32> = (0..o).map(|t| t as f32 * 0.01).collect();
        let y = linear(&x, n, &w, Some(&b), i, o);
        for r in 0..n {
            for c in 0..o {
                let e: f32 = (0..i).map(|t| x[r * i + t] * w[c * i + t]).sum::<f32>() + b[c];
                assert!((y[r * o + c] - e).abs() < 1e-5);
            }
        }
    }

    #[test]
    fn gelu_values() {
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((gelu(-1.0) + 0.158_655_26).abs() < 1e-6);
        assert!((gelu_tanh(1.0) - 0.841_192).abs() < 1e-6);
    }
}
