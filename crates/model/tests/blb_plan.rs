//! BLB's planner (`nectar-blb`) on the model configurations, through the model layer's
//! conversion (`secure::blb_spec`): the BERT-base blocks of BLB Fig. 10 / Table 6, the
//! conversions at their boundaries, the ct-ct matmul rotations against Table 5 / 7, every
//! architecture's parameter sets, and JSON.

use nectar_blb::{FusionPlan, MpcRole, PlanItem, PlannedOp, MAX_TOKENS};
use nectar_model::secure::blb_spec::fusion_plan;
use nectar_bench::fixtures::random::{random_config, RandomArch};

fn plan(arch: RandomArch, tokens: usize) -> FusionPlan {
    let cfg = random_config(arch, None);
    match fusion_plan(&cfg, arch.name(), tokens) {
        Ok(p) => p,
        Err(e) => panic!("{}: {e}", arch.name()),
    }
}

fn op<'a>(p: &'a FusionPlan, name: &str) -> &'a PlannedOp {
    p.blocks()
        .flat_map(|b| &b.ops)
        .find(|o| o.name == name)
        .unwrap_or_else(|| panic!("{name} is in no block"))
}

/// BLB §7.1 / Table 6 / Fig. 10: five fused blocks per BERT layer, depths 4, 7, 7, 7, 6.
#[test]
fn bert_base_has_the_five_blocks_of_blb() {
    let p = plan(RandomArch::BertBase, 128);
    let depths: Vec<u32> = p.blocks().map(|b| b.depth).collect();
    assert_eq!(depths, [4, 7, 7, 7, 6], "{p}");
    let names = |i: usize| -> Vec<String> {
        p.blocks()
            .nth(i)
            .map(|b| b.ops.iter().map(|o| o.name.clone()).collect())
            .unwrap_or_default()
    };
    let has = |i: usize, n: &[&str]| {
        let b = names(i);
        for x in n {
            assert!(b.iter().any(|y| y == x), "block {} lacks {x}: {b:?}", i + 1);
        }
    };
    // 1: FFN output product + residual + the next LayerNorm's head.
    has(
        0,
        &[
            "ffn.down",
            "ffn.residual",
            "ln2.sum",
            "ln2.center",
            "ln2.square",
            "ln2.var",
        ],
    );
    // 2: LayerNorm tail + Q, K, V + Q·K^T.
    has(
        1,
        &[
            "ln2.normalize",
            "ln2.beta",
            "attn.q",
            "attn.k",
            "attn.v",
            "attn.qk",
        ],
    );
    // 3: the exponential's polynomial (Alg. 5 lines 3–4).
    has(
        2,
        &["softmax.exp.div64", "softmax.exp.add1", "softmax.exp.sq6"],
    );
    // 4: softmax·V + W_O + residual + LayerNorm head.
    has(
        3,
        &[
            "attn.pv",
            "attn.o",
            "attn.residual",
            "ln1.square",
            "ln1.var",
        ],
    );
    // 5: LayerNorm tail + FC + GeLU's polynomials (BLB §1's example of a fused block).
    has(
        4,
        &[
            "ln1.normalize",
            "ln1.beta",
            "ffn.up",
            "gelu.x2",
            "gelu.x4",
            "gelu.f0",
            "gelu.f1",
        ],
    );
    assert_eq!(
        p.blocks()
            .map(|b| b.params.name.as_str())
            .collect::<Vec<_>>(),
        ["blb-1", "blb-3", "blb-3", "blb-3", "blb-5"]
    );
    // The additions between nonlinear steps stay in MPC; softmax's normalisation is the
    // product moved to MPC (§5.2: Softmax(·) is in secret-share form before × V).
    let role = |n: &str| p.mpc_ops().find(|o| o.name == n).map(|o| o.role);
    assert_eq!(role("softmax.sum"), Some(MpcRole::Local));
    assert_eq!(role("softmax.sub_max"), Some(MpcRole::Local));
    assert_eq!(role("ffn.act_sum1"), Some(MpcRole::Local));
    assert_eq!(role("softmax.normalize"), Some(MpcRole::Peeled));
    assert_eq!(role("ln1.rsqrt"), Some(MpcRole::Nonlinear));
    // Every block's fused category exists (no ✗ cell met).
    assert!(p.blocks().all(|b| b.category.is_some()), "{p}");
    // Items alternate, from the local sum of the previous GeLU's muxes to this layer's muxes.
    assert_eq!(p.items.len(), 11);
    for (i, item) in p.items.iter().enumerate() {
        assert_eq!(matches!(item, PlanItem::Mpc(_)), i % 2 == 0, "item {i}");
    }
}

/// Every nonlinear operator's CKKS operand leaves its block by a CKKS→MPC conversion, and
/// every block input enters by an MPC→CKKS conversion.
#[test]
fn conversions_at_every_boundary() {
    let p = plan(RandomArch::BertBase, 128);
    let outs: Vec<&str> = p
        .blocks()
        .flat_map(|b| b.to_mpc.iter().map(|c| c.value.as_str()))
        .collect();
    for v in [
        "attn.qk",
        "ln1.var",
        "ln2.var",
        "softmax.exp.sq6",
        "gelu.f0",
        "gelu.f1",
        "ffn.up.bias",
        "attn.v.bias",
        "ln1.center",
        "ln2.center",
        "ln1.beta",
        "ln2.beta",
    ] {
        assert!(outs.contains(&v), "{v} not converted to MPC: {outs:?}");
    }
    let b1 = p
        .blocks()
        .next()
        .map(|b| {
            b.to_ckks
                .iter()
                .map(|c| c.value.clone())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    assert_eq!(b1, ["ffn.act_sum2", "prev.residual"]);
    let b2 = p
        .blocks()
        .nth(1)
        .map(|b| {
            b.to_ckks
                .iter()
                .map(|c| c.value.clone())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    assert_eq!(b2, ["ln2.center", "ln2.rsqrt"]);
    let from: Vec<String> = p
        .blocks()
        .nth(1)
        .map(|b| b.to_ckks.iter().flat_map(|c| c.peers.clone()).collect())
        .unwrap_or_default();
    assert_eq!(from, ["block 1", "MPC ln2.rsqrt"]);
    let ((ti, _), (to, _)) = p.conversions();
    assert!(ti >= 5 && to >= 5);
}

/// BLB Table 5 / 7: BERT-large, 128 tokens: Q_h K_h^T 640 and Softmax×V_h 1056 rotations;
/// GPT-2 base, 64 tokens: 488 each. Our closed form must not exceed them, and stays within
/// 4x below (the same order: the paper's exact step accounting is not given).
#[test]
fn ct_ct_matmul_rotations_within_table5_and_7() {
    let large = plan(RandomArch::BertLarge, 128);
    let (qk, pv) = (
        op(&large, "attn.qk").rotations,
        op(&large, "attn.pv").rotations,
    );
    assert_eq!(large.block_of("attn.qk").map(|b| b.params.n), Some(32768));
    assert_eq!((qk, pv), (448, 640));
    assert!(qk <= 640 && 4 * qk >= 640, "{qk}");
    assert!(pv <= 1056 && 4 * pv >= 1056, "{pv}");
    let gpt2 = plan(RandomArch::Gpt2, 64);
    let (qk, pv) = (
        op(&gpt2, "attn.qk").rotations,
        op(&gpt2, "attn.pv").rotations,
    );
    assert!(qk <= 488 && 4 * qk >= 488, "{qk}");
    assert!(pv <= 488 && 4 * pv >= 488, "{pv}");
}

/// Sum and broadcast: `log2` of the reduce width per ciphertext (Table 3); the sums feeding a
/// scalar operator need no broadcast.
#[test]
fn sum_rotations_follow_table3() {
    let p = plan(RandomArch::BertBase, 128);
    // Block 1 runs at N = 16384: 64 columns per ciphertext.
    assert_eq!(op(&p, "ln2.sum").rotations, 6);
    assert_eq!(op(&p, "ln1.sum").rotations, 7);
    assert_eq!(op(&p, "ln2.center").rotations, 0);
    let p = plan(RandomArch::BertBase, 8);
    assert_eq!(op(&p, "ln2.sum").rotations, 10);
}

#[test]
fn every_arch_fits_its_presets() {
    for arch in [
        RandomArch::BertTiny,
        RandomArch::BertBase,
        RandomArch::BertLarge,
        RandomArch::Gpt2,
        RandomArch::VitBase,
        RandomArch::Llama7b,
    ] {
        for tokens in [1, 16, 64, 128, 512] {
            let p = plan(arch, tokens);
            assert!(p.blocks().count() >= 5, "{}: {p}", arch.name());
            for b in p.blocks() {
                assert!(
                    b.depth <= b.params.depth,
                    "{} block {}: depth {} > {}",
                    arch.name(),
                    b.index,
                    b.depth,
                    b.params.depth
                );
                assert_eq!(b.depth, b.path_ct_ct + b.path_ct_pt);
                assert!(b.ops.iter().all(|o| o.level <= b.depth));
            }
        }
    }
}

#[test]
fn gpt2_and_llama_shapes() {
    let g = plan(RandomArch::Gpt2, 64);
    assert_eq!(
        g.blocks().map(|b| b.depth).collect::<Vec<_>>(),
        [4, 7, 7, 7, 6]
    );
    assert!(g
        .block_of("attn.causal_mask")
        .is_some_and(|b| b.ops.iter().any(|o| o.name == "attn.qk")));
    let l = plan(RandomArch::Llama7b, 32);
    // RMSNorm has no mean; RoPE adds a level in the Q·K^T block, which therefore starts
    // after the normalisation product (moved to MPC).
    assert!(l
        .blocks()
        .all(|b| !b.ops.iter().any(|o| o.name == "ln1.sum")));
    assert!(l
        .block_of("attn.q.rope")
        .is_some_and(|b| b.ops.iter().any(|o| o.name == "attn.qk") && b.depth <= 7));
    assert!(l
        .block_of("ffn.gate_up")
        .is_some_and(|b| b.ops.iter().any(|o| o.name == "ffn.down")));
}

#[test]
fn json_round_trip() {
    let p = plan(RandomArch::BertBase, 128);
    let back: FusionPlan = serde_json::from_str(&p.to_json()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, p);
    let text = p.to_string();
    assert!(text.contains("block 5") && text.contains("blb-1"), "{text}");
}

#[test]
fn token_counts_are_checked() {
    let cfg = random_config(RandomArch::BertBase, None);
    assert!(fusion_plan(&cfg, "bert-base", 0).is_err());
    assert!(fusion_plan(&cfg, "bert-base", MAX_TOKENS + 1).is_err());
}
