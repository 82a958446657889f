//! The model's values as BLB's inputs (`nectar-blb`): a block configuration as the layer shape
//! the planner reads ([`LayerSpec`]), a layer's loaded weights as the values the evaluator and
//! the executor read by operator name ([`layer_params`]), and the plan of a model
//! configuration ([`fusion_plan`]).

use crate::block::{BlockConfig, BlockNames, FfnKind, NormKind, Placement};
use crate::config::{Activation, ModelConfig};
use crate::reference::{BlockWeights, Dense, Norm};
use crate::ModelError;
use nectar_blb::params::{Columns, NormParams, RopeParams, Weight};
use nectar_blb::{spec, FusionPlan, LayerParams, LayerSpec};

impl From<&BlockConfig> for LayerSpec {
    fn from(c: &BlockConfig) -> Self {
        LayerSpec {
            hidden: c.hidden,
            heads: c.heads,
            intermediate: c.intermediate,
            layer_norm: c.norm == NormKind::LayerNorm,
            post_norm: c.placement == Placement::Post,
            causal: c.causal,
            rope: c.rope_theta.is_some(),
            gated: c.ffn == FfnKind::Gated,
            activation: match c.activation {
                Activation::Silu => spec::Activation::Silu,
                // GeLU (exact or tanh form) by BOLT's P4, as BLB App. B; ReLU is P4's outer
                // branches only, but no supported checkpoint uses it, so it is planned as GeLU.
                Activation::Gelu | Activation::GeluTanh | Activation::Relu => spec::Activation::Gelu,
            },
            bias: c.bias,
        }
    }
}

/// The block configuration of any supported architecture.
pub fn block_config(config: &ModelConfig) -> BlockConfig {
    match config {
        ModelConfig::Bert(c) => crate::bert::block_config(c),
        ModelConfig::Gpt2(c) => crate::gpt2::block_config(c),
        ModelConfig::Llama(c) => crate::llama::block_config(c),
        ModelConfig::Vit(c) => crate::vit::block_config(c),
    }
}

/// The plan of `config`'s layers for `tokens` tokens (`model`: a name for the report).
pub fn fusion_plan(config: &ModelConfig, model: &str, tokens: usize) -> Result<FusionPlan, ModelError> {
    let (layers, ..) = config.dims();
    Ok(FusionPlan::for_layer(&LayerSpec::from(&block_config(config)), model, layers, tokens)?)
}

fn weight(d: &Dense) -> Weight<'_> {
    Weight { w: &d.w, b: d.b.as_deref(), in_dim: d.in_dim }
}

fn norm(n: &Norm) -> NormParams<'_> {
    NormParams { gamma: &n.g, beta: n.b.as_deref() }
}

/// The server's values of one steady-state layer (`nectar_blb::params`): `prev`'s FFN output
/// product (post-norm: and its output norm), `cur`'s attention, norms and FFN input. `1/√dh`
/// is folded into `attn.q` (weight and bias), grouped key/value heads are expanded into
/// `attn.k` / `attn.v`'s columns (as BLB's graph assumes), and with rotary positions
/// `attn.q.rot` / `attn.k.rot` are the same columns in rotate-half order.
pub fn layer_params<'a>(
    weights: &'a BlockWeights,
    cfg: &BlockConfig,
    prev: &BlockNames,
    cur: &BlockNames,
) -> Result<LayerParams<'a>, ModelError> {
    let (d, dh, kvd) = (cfg.hidden, cfg.head_dim(), cfg.kv_dim());
    let qkv = [d, kvd, kvd];
    // The tensor holding output part `part` of a product whose parts have widths `outs` (one
    // fused tensor or one per part), and the rows of that part.
    let part = |names: &[String], outs: &[usize], part: usize| -> Result<(&'a Dense, Vec<usize>), ModelError> {
        let start: usize = outs[..part].iter().sum();
        match names {
            [one] => Ok((weights.dense(one)?, (start..start + outs[part]).collect())),
            many => Ok((weights.dense(&many[part])?, (0..outs[part]).collect())),
        }
    };
    // Grouped key/value heads expanded to one column block per query head.
    let expand = |rows: Vec<usize>| -> Vec<usize> {
        let group = cfg.heads / cfg.kv_heads.max(1);
        (0..d).map(|j| rows[(j / dh / group) * dh + j % dh]).collect()
    };
    let cols = |(dense, rows): (&'a Dense, Vec<usize>), scale: f64| Columns { weight: weight(dense), rows, scale };
    let (q, k, v) = (part(&cur.qkv, &qkv, 0)?, part(&cur.qkv, &qkv, 1)?, part(&cur.qkv, &qkv, 2)?);
    let k = (k.0, expand(k.1));
    let rope = cfg.rope_theta.map(|theta| RopeParams { theta, head_dim: dh });
    let mut products = Vec::new();
    if let Some(r) = rope {
        // `x·W R`: each column reads its rotate-half partner's weight row (the sign is in
        // `sin`, `RopeParams::at`).
        let rotated = |(dense, rows): &(&'a Dense, Vec<usize>)| (*dense, (0..rows.len()).map(|c| rows[r.partner(c)]).collect::<Vec<_>>());
        products.push(("attn.q.rot", cols(rotated(&q), cfg.query_scale().by)));
        products.push(("attn.k.rot", cols(rotated(&k), 1.0)));
    }
    products.extend([
        ("attn.q", cols(q, cfg.query_scale().by)),
        ("attn.k", cols(k, 1.0)),
        ("attn.v", cols((v.0, expand(v.1)), 1.0)),
        ("attn.o", cols((weights.dense(&cur.o)?, (0..d).collect()), 1.0)),
        ("ffn.down", cols((weights.dense(&prev.ffn_out)?, (0..d).collect()), 1.0)),
    ]);
    let outs = cfg.ffn_in_outs();
    match cfg.ffn {
        FfnKind::Plain => products.push(("ffn.up", cols(part(&cur.ffn_in, &outs, 0)?, 1.0))),
        FfnKind::Gated => {
            products.push(("ffn.gate", cols(part(&cur.ffn_in, &outs, 0)?, 1.0)));
            products.push(("ffn.up", cols(part(&cur.ffn_in, &outs, 1)?, 1.0)));
        }
    }
    let ln2 = match cfg.placement {
        Placement::Post => &prev.norm2,
        Placement::Pre => &cur.norm2,
    };
    Ok(LayerParams {
        hidden: d,
        eps: cfg.eps,
        products,
        norms: vec![("ln1", norm(weights.norm(&cur.norm1)?)), ("ln2", norm(weights.norm(ln2)?))],
        rope,
    })
}
