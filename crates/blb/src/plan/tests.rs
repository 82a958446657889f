//! Planner tests on shapes alone: Table 2 / Table 4 / Table 6 as data, BERT-base's blocks
//! (BLB Table 6's depths), and hand-made chains that must be peeled, cut or split. The plans of
//! real model configurations are tested through the model layer's conversion
//! (`nectar-model`'s `tests/blb_plan.rs`).

use super::*;
use crate::ops::{BLB_TABLE6, LinearKind};
use crate::spec::Activation;

#[test]
fn classification_of_every_linear_kind() {
    use Category::*;
    use LinearKind::*;
    let want = [
        (EwaddCc, Identity),
        (EwaddCp, Identity),
        (EwmulCc, Identity),
        (EwmulCp, Identity),
        (SaddCc, Expansion),
        (SaddCp, Expansion),
        (SmulCc, Expansion),
        (SmulCp, Expansion),
        (Sum, Reduction),
        (MatmulCc, Transformation),
        (MatmulCp, Transformation),
    ];
    assert_eq!(want.len(), LinearKind::ALL.len());
    for (k, c) in want {
        assert_eq!(k.category(), c, "{}", k.name());
    }
    // A scalar op is element-wise on its full operand and an Expansion of its scalar.
    assert_eq!(SaddCc.operand_category(0), Identity);
    assert_eq!(SaddCc.operand_category(1), Expansion);
    assert_eq!(SmulCc.operand_category(0), Identity);
    assert_eq!(SmulCp.operand_category(0), Expansion);
    assert_eq!(MatmulCc.operand_category(1), Transformation);
    // Only the additions are share-local.
    let additive: Vec<_> = LinearKind::ALL
        .iter()
        .filter(|k| k.is_additive())
        .map(|k| k.name())
        .collect();
    assert_eq!(
        additive,
        ["ewadd_cc", "ewadd_cp", "sadd_cc", "sadd_cp", "sum"]
    );
    assert_eq!(MatmulCc.mults(false), (1, 3));
    assert_eq!(MatmulCc.mults(true), (1, 2));
}

#[test]
fn table4_every_cell() {
    use Category::*;
    let cells = [
        (Identity, Identity, Some(Identity)),
        (Identity, Expansion, Some(Expansion)),
        (Identity, Reduction, Some(Reduction)),
        (Identity, Transformation, Some(Transformation)),
        (Expansion, Identity, Some(Expansion)),
        (Expansion, Expansion, None),
        (Expansion, Reduction, Some(Identity)),
        (Expansion, Transformation, Some(Expansion)),
        (Reduction, Identity, Some(Reduction)),
        (Reduction, Expansion, Some(Identity)),
        (Reduction, Reduction, None),
        (Reduction, Transformation, None),
        (Transformation, Identity, Some(Transformation)),
        (Transformation, Expansion, None),
        (Transformation, Reduction, Some(Reduction)),
        (Transformation, Transformation, Some(Transformation)),
    ];
    assert_eq!(cells.len(), 16);
    for (a, b, c) in cells {
        assert_eq!(fuse(a, b), c, "{a} then {b}");
    }
}

#[test]
fn table6_presets_and_choice() {
    assert_eq!(
        BLB_TABLE6.map(|p| p.total_bits()),
        [300, 455, 400, 420, 452]
    );
    assert_eq!(BLB_TABLE6.map(|p| p.depth), [4, 7, 7, 7, 6]);
    assert_eq!(choose_preset(0).map(|p| p.name()), Some("blb-1".to_string()));
    assert_eq!(choose_preset(4).map(|p| p.name()), Some("blb-1".to_string()));
    assert_eq!(choose_preset(5).map(|p| p.name()), Some("blb-5".to_string()));
    assert_eq!(choose_preset(6).map(|p| p.name()), Some("blb-5".to_string()));
    assert_eq!(choose_preset(7).map(|p| p.name()), Some("blb-3".to_string()));
    assert_eq!(choose_preset(8), None);
}

fn chain(ops: &[(&str, LinearKind)], cols: usize) -> LayerGraph {
    let shape = Shape { rows: 4, cols };
    let mut g = LayerGraph {
        inputs: vec![graph::LayerInput {
            name: "x".into(),
            shape,
        }],
        ops: vec![],
        outputs: vec![],
        keys: 4,
    };
    let mut prev = Operand::Input(0);
    for (name, k) in ops {
        let input = g.shape(prev);
        let out = if *k == LinearKind::Sum {
            Shape { rows: 4, cols: 1 }
        } else {
            input
        };
        let operands = if *k == LinearKind::EwmulCc {
            vec![prev, prev]
        } else {
            vec![prev]
        };
        g.ops.push(graph::Op {
            name: (*name).into(),
            kind: OpKind::Linear(*k),
            operands,
            input,
            output: out,
            plain: None,
            heads: 1,
            subtract: false,
        });
        prev = Operand::Op(g.ops.len() - 1);
    }
    g.outputs.push(("y".into(), prev));
    g
}

fn blocks_of(items: &[PlanItem]) -> Vec<(Vec<String>, u32)> {
    items
        .iter()
        .filter_map(|i| match i {
            PlanItem::Ckks(b) => Some((b.ops.iter().map(|o| o.name.clone()).collect(), b.depth)),
            PlanItem::Mpc(_) => None,
        })
        .collect()
}

/// A chain deeper than every Table 6 set: its first product (of an MPC input) moves to MPC,
/// then the rest is cut where it runs out of levels (a CKKS→MPC→CKKS refresh).
#[test]
fn too_deep_chains_are_peeled_then_cut() {
    let names: Vec<String> = (0..10).map(|i| format!("sq{i}")).collect();
    let ops: Vec<(&str, LinearKind)> = names
        .iter()
        .map(|n| (n.as_str(), LinearKind::EwmulCc))
        .collect();
    let items = plan_graph(&chain(&ops, 8), 4).unwrap_or_else(|e| panic!("{e}"));
    let blocks = blocks_of(&items);
    assert_eq!(blocks.iter().map(|b| b.1).collect::<Vec<_>>(), [7, 2]);
    assert_eq!(blocks[0].0.first().map(String::as_str), Some("sq1"));
    assert_eq!(blocks[1].0, ["sq8", "sq9"]);
    let PlanItem::Mpc(first) = &items[0] else {
        panic!("{items:?}")
    };
    assert_eq!(
        (first[0].name.as_str(), first[0].role),
        ("sq0", MpcRole::Peeled)
    );
}

/// A ✗ cell of Table 4 (Reduction then Reduction) is not fused: two blocks, with the
/// intermediate value converted out and back in.
#[test]
fn a_table4_red_cell_splits_the_block() {
    let ops = [
        ("sq", LinearKind::EwmulCc),
        ("sum", LinearKind::Sum),
        ("sum2", LinearKind::Sum),
    ];
    let items = plan_graph(&chain(&ops, 8), 4).unwrap_or_else(|e| panic!("{e}"));
    let blocks = blocks_of(&items);
    assert_eq!(
        blocks.iter().map(|b| b.0.clone()).collect::<Vec<_>>(),
        [vec!["sq", "sum"], vec!["sum2"]]
    );
    let b: Vec<&FusedBlock> = items
        .iter()
        .filter_map(|i| {
            if let PlanItem::Ckks(b) = i {
                Some(b)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        b[0].to_mpc
            .iter()
            .map(|c| c.value.as_str())
            .collect::<Vec<_>>(),
        ["sum"]
    );
    assert_eq!(
        b[1].to_ckks
            .iter()
            .map(|c| c.value.as_str())
            .collect::<Vec<_>>(),
        ["sum"]
    );
    assert_eq!(b[1].to_mpc[0].peers, ["next layer"]);
}

/// BERT-base's shape (BLB §7.1 / Table 6): five blocks of depths 4, 7, 7, 7, 6, and the plan
/// survives JSON.
#[test]
fn bert_base_shape_has_the_depths_of_table6() {
    let spec = LayerSpec {
        hidden: 768,
        heads: 12,
        intermediate: 3072,
        layer_norm: true,
        post_norm: true,
        causal: false,
        rope: false,
        gated: false,
        activation: Activation::Gelu,
        bias: true,
    };
    let p = FusionPlan::for_layer(&spec, "bert-base", 12, 128).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.blocks().map(|b| b.depth).collect::<Vec<_>>(), [4, 7, 7, 7, 6], "{p}");
    let back: FusionPlan = serde_json::from_str(&p.to_json()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, p);
    assert!(FusionPlan::for_layer(&spec, "bert-base", 12, 0).is_err());
    assert!(FusionPlan::for_layer(&LayerSpec { heads: 7, ..spec }, "bert-base", 12, 128).is_err());
}
