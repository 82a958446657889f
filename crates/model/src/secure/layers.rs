//! Building blocks of the secure architectures and of [`crate::secure::block`], generic over
//! [`Engine`]: weight encoding (server side, one tensor at a time), linear layers with one
//! truncation, multi-head attention on shares (batched `Q·K^T` and `P·V`, public masks,
//! grouped-query heads), RoPE as a public rotation, tanh, embedding lookups, row means. The
//! nonlinear operators go through the suite ([`crate::secure::operators`]).
//!
//! Fixed point: values carry `f` fractional bits; weights are encoded at `f` too, so a product
//! has `2f` and is truncated once by `f` after the whole sum (BumbleBee §II-C).

use crate::arch::DenseDecl;
use crate::block::{AttnDims, ColScale, Layout};
use crate::encoded::EncodedKey;
use crate::secure::engine::{timed, truncated_matmul_weight, Engine, WeightRef};
use crate::secure::operators;
use crate::secure::{SecureError, WeightSource};
use nectar_math::FixedPoint;
use nectar_net::Role;
use nectar_nn::backend::{enc, enc_scaled};

/// A server's dense layer, encoded for the engine: `w` is `in × out` row-major, shared (a
/// prefetch of its OLT blocks holds it while the block runs other operators, without a copy).
#[derive(Clone, Debug)]
pub struct EncDense {
    pub w: std::sync::Arc<Vec<u64>>,
    pub b: Option<Vec<u64>>,
}

/// Encodes reals at the format (an error naming `what` when out of range).
pub fn encode(
    fp: FixedPoint,
    xs: impl Iterator<Item = f64>,
    what: &str,
) -> Result<Vec<u64>, SecureError> {
    // Sized up front: collecting `Result`s would grow the vector by doubling (134 MB of
    // capacity for MiniLM's 94 MB word-embedding table).
    let mut out = Vec::with_capacity(xs.size_hint().0);
    for x in xs {
        out.push(fp.encode::<u64>(x).map_err(|e| SecureError::Role(format!("weight {what}: {e}")))?);
    }
    Ok(out)
}

/// Input rows of a weight encoded per parallel task ([`encode_weight`]; LOCAL): `OutIn`
/// tensors are read 16 floats (one cache line) per output column.
const ENCODE_ROWS: usize = 16;

/// A weight tensor `t` (`in × out` for [`Layout::InOut`], `out × in` for [`Layout::OutIn`])
/// encoded as `in × out` with output column `o` scaled by `scale.factor(o)`: the values of
/// [`encode`] on the same reals, computed over blocks of [`ENCODE_ROWS`] input rows in
/// parallel (a decoding step re-encodes every weight of the model on the server).
fn encode_weight(fp: FixedPoint, t: &[f32], in_dim: usize, out_dim: usize, layout: Layout, scale: ColScale, what: &str) -> Result<Vec<u64>, SecureError> {
    use rayon::prelude::*;
    if t.len() != in_dim * out_dim {
        return Err(SecureError::Role(format!("weight {what}: {} values for {in_dim} × {out_dim}", t.len())));
    }
    let err = |e: nectar_math::MathError| SecureError::Role(format!("weight {what}: {e}"));
    let factors: Vec<f64> = (0..out_dim).map(|o| scale.factor(o)).collect();
    let mut out = vec![0u64; in_dim * out_dim];
    out.par_chunks_mut(ENCODE_ROWS * out_dim.max(1)).enumerate().try_for_each(|(blk, rows)| {
        let i0 = blk * ENCODE_ROWS;
        let n = rows.len() / out_dim.max(1);
        match layout {
            Layout::InOut => {
                for (row, src) in rows.chunks_mut(out_dim.max(1)).zip(t[i0 * out_dim..(i0 + n) * out_dim].chunks(out_dim.max(1))) {
                    for ((r, &v), &f) in row.iter_mut().zip(src).zip(&factors) {
                        *r = fp.encode::<u64>(v as f64 * f).map_err(err)?;
                    }
                }
            }
            Layout::OutIn => {
                for (o, &f) in factors.iter().enumerate() {
                    for (b, &v) in t[o * in_dim + i0..o * in_dim + i0 + n].iter().enumerate() {
                        rows[b * out_dim + o] = fp.encode::<u64>(v as f64 * f).map_err(err)?;
                    }
                }
            }
        }
        Ok::<(), SecureError>(())
    })?;
    Ok(out)
}

/// Loads and encodes `name.weight` (and `name.bias` if `bias`), scaled by `scale`, as `in × out`.
/// Returns `None` when this party has no weights (the client).
#[allow(clippy::too_many_arguments)]
pub fn load_dense(
    src: Option<&dyn WeightSource>,
    fp: FixedPoint,
    name: &str,
    in_dim: usize,
    out_dim: usize,
    layout: Layout,
    bias: bool,
    scale: ColScale,
) -> Result<Option<EncDense>, SecureError> {
    load_decl(src, fp, &DenseDecl::new(name, in_dim, out_dim, layout, bias), scale)
}

/// [`load_dense`] of a declared layer (its weight at the declared shape).
pub fn load_decl(
    src: Option<&dyn WeightSource>,
    fp: FixedPoint,
    d: &DenseDecl,
    scale: ColScale,
) -> Result<Option<EncDense>, SecureError> {
    let Some(src) = src else { return Ok(None) };
    let (name, in_dim, out_dim) = (d.name.as_str(), d.in_dim, d.out_dim);
    let encode_now = || -> Result<Vec<u64>, SecureError> {
        let t = src.tensor(&format!("{name}.weight"), &d.shape)?;
        encode_weight(fp, &t, in_dim, out_dim, d.layout, scale, name)
    };
    let w = match src.encoded() {
        None => encode_now()?,
        Some(cache) => {
            let key = EncodedKey::new(name, in_dim, out_dim, d.layout == Layout::OutIn, fp.f(), scale.cols, scale.by);
            match cache.get(&key, fp.l()) {
                Some(w) => w,
                None => {
                    let w = encode_now()?;
                    cache.insert(key, &w, fp.l());
                    w
                }
            }
        }
    };
    let b = if d.bias {
        let t = src.tensor(&format!("{name}.bias"), &[out_dim])?;
        Some(encode(
            fp,
            t.iter().enumerate().map(|(o, &v)| v as f64 * scale.factor(o)),
            name,
        )?)
    } else {
        None
    };
    Ok(Some(EncDense { w: std::sync::Arc::new(w), b }))
}

/// Loads and encodes a vector tensor (`name`, length `n`; LayerNorm γ/β, ...).
pub fn load_vec(
    src: Option<&dyn WeightSource>,
    fp: FixedPoint,
    name: &str,
    n: usize,
) -> Result<Option<Vec<u64>>, SecureError> {
    match src {
        None => Ok(None),
        Some(s) => {
            let t = s.tensor(name, &[n])?;
            Ok(Some(encode(fp, t.iter().map(|&v| v as f64), name)?))
        }
    }
}

/// `x W + b`, `x` `rows × in`, truncated once by `f` (the bias is added after truncation);
/// for heads and embeddings (always [`Engine::matmul_weight`]).
pub fn linear<E: Engine>(
    e: &mut E,
    x: &E::Val,
    rows: usize,
    in_dim: usize,
    out_dim: usize,
    w: Option<&EncDense>,
    has_bias: bool,
) -> Result<E::Val, SecureError> {
    let y = truncated_matmul_weight(e, x, rows, in_dim, out_dim, WeightRef::from_option(w.map(|d| d.w.as_slice())))?;
    bias(e, y, rows, out_dim, w, has_bias)
}

/// [`linear`] for a transformer layer's operators: the suite's `matmul`
/// ([`Engine::layer_matmul`]; `key` names the weight for both parties).
#[allow(clippy::too_many_arguments)]
pub fn layer_linear<E: Engine>(
    e: &mut E,
    x: &E::Val,
    rows: usize,
    in_dim: usize,
    out_dim: usize,
    w: Option<&EncDense>,
    has_bias: bool,
    key: &str,
) -> Result<E::Val, SecureError> {
    let y = e.layer_matmul(x, rows, in_dim, out_dim, WeightRef::from_shared(w.map(|d| &d.w)), key)?;
    bias(e, y, rows, out_dim, w, has_bias)
}

fn bias<E: Engine>(
    e: &mut E,
    y: E::Val,
    rows: usize,
    out_dim: usize,
    w: Option<&EncDense>,
    has_bias: bool,
) -> Result<E::Val, SecureError> {
    if has_bias {
        let b = w.and_then(|d| d.b.as_deref());
        Ok(e.add_bias(&y, rows, out_dim, WeightRef::from_option(b))?)
    } else {
        Ok(y)
    }
}

/// Multi-head attention on shares. `q`: `[n, heads·dh]` already scaled by `1/√dh` (folded into
/// the server's `W_q`); `k`, `v`: `[m, kv_heads·dh]`. `causal`: query `i` sees keys
/// `j ≤ m − n + i`; `key_mask[j] = false` hides key `j` (padding). Both masks are public.
/// Returns `[n, heads·dh]`. Operators recorded by the caller's profile: `matmul.qk`,
/// `softmax`, `matmul.pv`.
///
/// A batch (`segments`, issue 52; `n = m`): input `s` of `n_s` rows attends to its own `n_s`
/// keys. The inputs are sorted by length and cut into groups ([`length_groups`]); in a group
/// every (input, head) pair is one "head" of the batched products, each padded to the group's
/// longest input with zero rows (public positions, local), so that one `Q·K^T`, one softmax
/// and one `P·V` serve the group; the padded keys are masked and the padded query rows
/// dropped, so no input's output depends on another's values.
#[allow(clippy::too_many_arguments)]
pub fn attention<E: Engine>(
    e: &mut E,
    q: &E::Val,
    k: &E::Val,
    v: &E::Val,
    a: AttnDims,
    key_mask: Option<&[bool]>,
    causal: bool,
    segments: Option<&[usize]>,
) -> Result<E::Val, SecureError> {
    let AttnDims {
        n,
        m,
        heads,
        kv_heads,
        dh,
    } = a;
    if kv_heads == 0 || heads % kv_heads != 0 {
        return Err(SecureError::Unsupported(format!(
            "{heads} heads over {kv_heads} key/value heads"
        )));
    }
    // Per input: (first query row, first key row, queries, keys).
    let segs: Vec<Seg> = match segments {
        None => vec![(0, 0, n, m)],
        Some(lens) => {
            if m != n || lens.iter().sum::<usize>() != n {
                return Err(SecureError::Role(format!("a batch of {lens:?} rows over {n} queries and {m} keys")));
            }
            crate::block::segment_starts(lens).into_iter().zip(lens).map(|(o, &l)| (o, o, l, l)).collect()
        }
    };
    let groups = length_groups(&segs, heads);
    if let [_] = groups.as_slice() {
        return padded_attention(e, q, k, v, a, key_mask, causal, &segs);
    }
    let mut outs = Vec::with_capacity(groups.len());
    for grp in &groups {
        let sub: Vec<Seg> = grp.iter().map(|&i| segs[i]).collect();
        outs.push(padded_attention(e, q, k, v, a, key_mask, causal, &sub)?);
    }
    // The groups' rows one after another; back to the inputs' order.
    let d = heads * dh;
    let mut first = vec![0; segs.len()];
    let mut row = 0;
    for &i in groups.iter().flatten() {
        first[i] = row;
        row += segs[i].2;
    }
    let idx: Vec<usize> = segs.iter().enumerate().flat_map(|(i, s)| first[i] * d..(first[i] + s.2) * d).collect();
    let parts: Vec<&E::Val> = outs.iter().collect();
    let all = e.concat(&parts)?;
    Ok(e.gather(&all, &idx)?)
}

/// One input's rows of an attention call: (first query row, first key row, queries, keys).
type Seg = (usize, usize, usize, usize);

/// Score entries (`Q·K^T`, softmax and `P·V` together) one more attention call is worth
/// (LOCAL): a call costs about 45 flights (MiniLM profile: the coarse softmax's ~40, the two
/// products'), 22 MB of transfer time at BLB's WAN3 (100 Mbit/s, 40 ms one way), and a padded
/// score entry about 1.3 kB over the three operators (MiniLM, 32 inputs padded to 25 tokens,
/// measured before the heads ran in block-diagonal groups, which make an entry cheaper: the
/// cut is on the eager side).
pub const ATTENTION_CALL_ENTRIES: usize = 16384;

/// The inputs of a batch sorted by length (stable) and cut into contiguous groups, each run as
/// one padded attention call: the cut of least `Σ_groups (ATTENTION_CALL_ENTRIES + heads ·
/// count · n_max · m_max)` (dynamic programming over the sorted lengths; public). One group
/// (every input, in the given order) when no cut pays for its call.
fn length_groups(segs: &[Seg], heads: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..segs.len()).collect();
    order.sort_by_key(|&i| (segs[i].2, segs[i].3));
    let b = order.len();
    // best[j]: least cost of the first j sorted inputs; cut[j]: where its last group starts.
    let mut best = vec![0usize; b + 1];
    let mut cut = vec![0usize; b + 1];
    for j in 1..=b {
        best[j] = usize::MAX;
        for i in 0..j {
            let (nmax, mmax) = order[i..j].iter().fold((0, 0), |(x, y), &t| (x.max(segs[t].2), y.max(segs[t].3)));
            let c = best[i].saturating_add(ATTENTION_CALL_ENTRIES + heads * (j - i) * nmax * mmax);
            if c < best[j] {
                (best[j], cut[j]) = (c, i);
            }
        }
    }
    let mut groups = Vec::new();
    let mut j = b;
    while j > 0 {
        groups.push(order[cut[j]..j].to_vec());
        j = cut[j];
    }
    groups.reverse();
    if groups.len() <= 1 {
        return vec![(0..segs.len()).collect()];
    }
    groups
}

/// [`attention`] of the inputs `segs` as one call, each padded to the longest. Returns their
/// rows `[Σ n_s, heads·dh]` in the order of `segs`.
#[allow(clippy::too_many_arguments)]
fn padded_attention<E: Engine>(
    e: &mut E,
    q: &E::Val,
    k: &E::Val,
    v: &E::Val,
    a: AttnDims,
    key_mask: Option<&[bool]>,
    causal: bool,
    segs: &[Seg],
) -> Result<E::Val, SecureError> {
    let AttnDims { n, m, heads, kv_heads, dh } = a;
    let (np, mp) = segs.iter().fold((0, 0), |(a, b), s| (a.max(s.2), b.max(s.3)));
    let g = segs.len() * heads;
    let (d, dkv, group) = (heads * dh, kv_heads * dh, heads / kv_heads);
    // Padding reads a zero appended after the last element (no padding: nothing appended).
    let padded = segs.iter().any(|s| s.2 != np || s.3 != mp);
    let (q, k, v) = if padded {
        let z = e.constant(&[0])?;
        (e.concat(&[q, &z])?, e.concat(&[k, &z])?, e.concat(&[v, &z])?)
    } else {
        (q.clone(), k.clone(), v.clone())
    };
    let (zq, zk) = (n * d, m * dkv);
    // Q as [G, np, dh] (G = inputs × heads); K^T as [Gkv, dh, mp], V as [Gkv, mp, dh] (Gkv =
    // inputs × kv_heads). Query head h reads kv head h/group, so the `group` query heads of
    // one kv head are consecutive in G: Q read as [Gkv, group·np, dh] multiplies each kv
    // head's K^T once (grouped-query attention, Ainslie et al. 2023) instead of a copy per
    // query head, and the products' rows [Gkv, group·np, ·] are the [G, np, ·] rows in the
    // same order. Same ring values; `group` times fewer key/value entries in the products.
    let gkv = segs.len() * kv_heads;
    let qi: Vec<usize> = (0..g * np * dh)
        .map(|p| {
            let (gh, i, t) = (p / (np * dh), (p / dh) % np, p % dh);
            let ((q0, _, ns, _), h) = (segs[gh / heads], gh % heads);
            if i < ns { (q0 + i) * d + h * dh + t } else { zq }
        })
        .collect();
    let key = |gk: usize, j: usize, t: usize| {
        let ((_, k0, _, ms), kh) = (segs[gk / kv_heads], gk % kv_heads);
        if j < ms { (k0 + j) * dkv + kh * dh + t } else { zk }
    };
    let kti: Vec<usize> = (0..gkv * dh * mp).map(|p| key(p / (dh * mp), p % mp, (p / mp) % dh)).collect();
    let vi: Vec<usize> = (0..gkv * mp * dh).map(|p| key(p / (mp * dh), (p / dh) % mp, p % dh)).collect();
    let qh = e.gather(&q, &qi)?;
    let kt = e.gather(&k, &kti)?;
    let vh = e.gather(&v, &vi)?;
    let scores = timed(e, "matmul.qk", |e| {
        Ok(e.attention_matmul(&qh, &kt, gkv, group * np, dh, mp)?)
    })?;
    let hide: Vec<bool> = (0..g * np * mp)
        .map(|p| {
            let (gh, i, j) = (p / (np * mp), (p / mp) % np, p % mp);
            let (_, k0, ns, ms) = segs[gh / heads];
            j >= ms || (causal && j + ns > ms + i) || key_mask.is_some_and(|km| !km[k0 + j])
        })
        .collect();
    let any = hide.iter().any(|&h| h);
    let probs = operators::softmax(e, &scores, g * np, mp, any.then_some(&hide[..]))?;
    let ctx = timed(e, "matmul.pv", |e| {
        Ok(e.attention_matmul(&probs, &vh, gkv, group * np, mp, dh)?)
    })?;
    // [G, np, dh] -> [n, H·dh], the padded query rows dropped.
    let mut back = Vec::with_capacity(segs.iter().map(|s| s.2).sum::<usize>() * d);
    for (s, &(_, _, ns, _)) in segs.iter().enumerate() {
        for i in 0..ns {
            back.extend((0..d).map(|c| ((s * heads + c / dh) * np + i) * dh + c % dh));
        }
    }
    Ok(e.gather(&ctx, &back)?)
}

/// Rotary position embedding (HF "rotate half") of `x` (`[n, heads·dh]`, rows at positions
/// `start..`): a public rotation, applied locally to each share (two products by public
/// constants), followed by one truncation.
pub fn rope<E: Engine>(
    e: &mut E,
    x: &E::Val,
    n: usize,
    start: usize,
    heads: usize,
    dh: usize,
    theta: f64,
) -> Result<E::Val, SecureError> {
    let half = dh / 2;
    let f = e.format().f();
    let d = heads * dh;
    let mut cos = Vec::with_capacity(n * d);
    let mut sin = Vec::with_capacity(n * d);
    let mut partner = Vec::with_capacity(n * d);
    for i in 0..n {
        let pos = (start + i) as f64;
        for h in 0..heads {
            for t in 0..dh {
                let tt = t % half;
                let freq = theta.powf(-2.0 * tt as f64 / dh as f64);
                let (s, c) = (pos * freq).sin_cos();
                cos.push(enc(e, c)?);
                sin.push(enc(e, if t < half { -s } else { s })?);
                partner.push(i * d + h * dh + if t < half { t + half } else { t - half });
            }
        }
    }
    let a = e.mul_const(x, &cos, 0)?;
    let p = e.gather(x, &partner)?;
    let b = e.mul_const(&p, &sin, 0)?;
    let s = e.add(&a, &b)?;
    Ok(e.trunc(&s, f)?)
}

/// The name both parties give the token-embedding table ([`Engine::embed_matmul`]'s `key`).
pub const EMBED_KEY: &str = "embed.tokens";

/// Embedding rows of the client's tokens: `one_hot(ids) × table` (`vocab × dim`, the server's,
/// already encoded as `in × out`) — by the suite's [`crate::suite::Embed`] protocol. `ids` is `Some` on the client (and the
/// twin). One-hot entries are ring integers, so the product needs no truncation.
pub fn embed_lookup<E: Engine>(
    e: &mut E,
    ids: Option<&[u32]>,
    n: usize,
    vocab: usize,
    dim: usize,
    table: Option<&[u64]>,
) -> Result<E::Val, SecureError> {
    let oh = one_hot_rows(e, ids, n, vocab)?;
    Ok(e.embed_matmul(&oh, n, vocab, dim, WeightRef::from_option(table), EMBED_KEY)?)
}

/// One-hot rows `n × vocab` of the client's ids (as shares).
pub fn one_hot_rows<E: Engine>(
    e: &mut E,
    ids: Option<&[u32]>,
    n: usize,
    vocab: usize,
) -> Result<E::Val, SecureError> {
    let p = e.suite().embed;
    let client_has = e.role() == Role::Client || e.is_twin();
    if client_has && ids.is_none() {
        return Err(SecureError::Role(
            "the client must provide its token ids".into(),
        ));
    }
    let input = match ids {
        Some(ids) if client_has => Some(p.client_values(ids, vocab)?),
        _ => None,
    };
    let shared = e.client_input(input.as_deref(), p.input_len(n, vocab))?;
    Ok(p.one_hot_rows(e, &shared, n, vocab)?)
}

/// Mean of the `n` rows of `x` (`n × d`): one local sum and one truncation.
pub fn mean_rows<E: Engine>(
    e: &mut E,
    x: &E::Val,
    n: usize,
    d: usize,
) -> Result<E::Val, SecureError> {
    let t: Vec<usize> = (0..d * n).map(|p| (p % n) * d + p / n).collect();
    let xt = e.gather(x, &t)?;
    let s = e.sum_groups(&xt, n)?;
    let sh = e.format().f() + 8;
    let c = enc_scaled(e, 1.0 / n as f64, sh)?;
    Ok(e.mul_const(&s, &[c], sh)?)
}

/// Rows `r` of a row-major `rows × d` value.
pub fn take_rows<E: Engine>(
    e: &mut E,
    x: &E::Val,
    r: std::ops::Range<usize>,
    d: usize,
) -> Result<E::Val, SecureError> {
    Ok(e.gather(x, &(r.start * d..r.end * d).collect::<Vec<_>>())?)
}

/// Decodes a revealed vector (signed, current format).
pub fn decode<E: Engine>(e: &E, v: &[u64]) -> Vec<f64> {
    e.format().decode_vec(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(lens: &[usize]) -> Vec<Seg> {
        crate::block::segment_starts(lens).into_iter().zip(lens).map(|(o, &l)| (o, o, l, l)).collect()
    }

    /// Inputs of one length, or of lengths too close for a cut to pay for its call, stay one
    /// group in the given order; far-apart lengths are cut, each group sorted by length.
    #[test]
    fn batches_are_cut_by_length_where_padding_costs_more_than_a_call() {
        assert_eq!(length_groups(&segs(&[16; 32]), 12), vec![(0..32).collect::<Vec<_>>()]);
        assert_eq!(length_groups(&segs(&[9, 8, 10]), 12), vec![vec![0, 1, 2]]);
        let lens = [25, 8, 24, 9, 8, 25, 9, 8, 24, 8, 9, 25];
        let g = length_groups(&segs(&lens), 12);
        assert_eq!(g, vec![vec![1, 4, 7, 9, 3, 6, 10], vec![2, 8, 0, 5, 11]]);
        // Every input in exactly one group.
        let mut all: Vec<usize> = g.concat();
        all.sort();
        assert_eq!(all, (0..lens.len()).collect::<Vec<_>>());
    }
}
