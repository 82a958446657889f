//! Suite `blb` end to end on the fixed-point twin: BLB's layer stack (the planner's parts, the
//! fused blocks on the slot simulator, App. B's MPC operators on the fixed-point backend)
//! against the plaintext model (the twin with every nonlinear operator exact) and against the
//! BumbleBee suite's twin, on random weights of shapes BLB's packings take (128 and 64
//! tokens). The secure fused blocks are checked against this twin in `nectar-bench`'s
//! `blb_fused` test and, whole models, by `nectar bench model --suite blb --check-plain`.

use nectar_math::FixedPoint;
use nectar_model::secure::exact::EXACT_OPS;
use nectar_model::secure::{Output, Query, SecureModel, Task};
use nectar_model::twin::PlainEngine;
use nectar_bench::fixtures::random::{random_config, RandomArch, RandomWeights};
use nectar_model::{cosine, Suite};

/// The output on the twin of `suite` (`exact`: every nonlinear operator exact) and the
/// profile's operator names.
fn run(arch: RandomArch, layers: usize, suite: &str, exact: bool, task: Task, ids: &[u32]) -> (Output, Vec<String>) {
    let config = random_config(arch, Some(layers));
    let w = RandomWeights::new(5);
    let m = SecureModel::new(&config, Some(&w)).unwrap();
    let q = Query { task, ids: Some(ids.to_vec()), len: ids.len() };
    let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, &Suite::parse(suite).unwrap()).unwrap();
    if exact {
        e = e.with_exact(&EXACT_OPS).unwrap();
    }
    let out = m.run(&mut e, &q).unwrap();
    (out, e.profile().ops.iter().map(|r| r.op.clone()).collect())
}

fn embedding(o: Output) -> Vec<f32> {
    match o {
        Output::Embedding(v) => v,
        other => panic!("embedding expected, got {other:?}"),
    }
}

#[test]
fn blb_twin_of_bert_matches_the_plaintext_model_as_well_as_bumblebee() {
    let ids: Vec<u32> = (0..128).map(|i| (i * 7919 % 30000) as u32 + 100).collect();
    let (blb, ops) = run(RandomArch::BertTiny, 2, "blb", false, Task::Embed, &ids);
    let plain = embedding(run(RandomArch::BertTiny, 2, "bumblebee", true, Task::Embed, &ids).0);
    let bb = embedding(run(RandomArch::BertTiny, 2, "bumblebee", false, Task::Embed, &ids).0);
    let (c_blb, c_bb) = (cosine(&embedding(blb), &plain), cosine(&bb, &plain));
    eprintln!("cosine to the plaintext model: blb {c_blb}, bumblebee {c_bb}");
    // Two layers = the First part, one Steady part, the Last part: every block of each ran
    // (the steady layer's five), and every MPC operator of App. B.
    for op in ["blb.first.block1", "blb.block1", "blb.block5", "blb.last.block1", "blb.keys", "blb-mpc.softmax.max", "blb-mpc.softmax.rec", "blb-mpc.ln1.rsqrt", "blb-mpc.gelu.mux_f0"] {
        assert!(ops.iter().any(|o| o == op), "{op} did not run: {ops:?}");
    }
    assert!(!ops.iter().any(|o| o.starts_with("linear") || o.starts_with("gelu") || o.starts_with("softmax")), "BumbleBee's layer operators ran: {ops:?}");
    assert!(c_blb > 0.9999 && c_bb > 0.9999, "blb {c_blb}, bumblebee {c_bb}");
    assert!(c_blb >= c_bb - 0.0005, "blb {c_blb} vs bumblebee {c_bb}");
}

#[test]
fn blb_twin_of_gpt2_generates_the_plaintext_models_token() {
    let ids: Vec<u32> = (0..64).map(|i| (i * 7919 % 50000) as u32 + 7).collect();
    let (blb, ops) = run(RandomArch::Gpt2, 1, "blb", false, Task::Generate { n_new: 1 }, &ids);
    assert!(ops.iter().any(|o| o == "blb.first.block1") && ops.iter().any(|o| o == "blb.last.block1"), "{ops:?}");
    let (plain, _) = run(RandomArch::Gpt2, 1, "bumblebee", true, Task::Generate { n_new: 1 }, &ids);
    assert!(matches!(blb, Output::Tokens(ref t) if t.len() == 1), "{blb:?}");
    assert_eq!(blb, plain);
}

#[test]
fn blb_profile_rows_name_the_protocols_that_ran() {
    // The steps between the fused blocks are the `blb` preset's protocols (BOLT's P4 GeLU,
    // BumbleBee's Newton reciprocal and rsqrt, the millionaire's comparisons), not "bumblebee".
    let config = random_config(RandomArch::BertTiny, Some(1));
    let w = RandomWeights::new(5);
    let m = SecureModel::new(&config, Some(&w)).unwrap();
    let ids: Vec<u32> = (0..128).map(|i| (i * 7919 % 30000) as u32 + 100).collect();
    let q = Query { task: Task::Embed, ids: Some(ids), len: 128 };
    let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, &Suite::parse("blb").unwrap()).unwrap();
    m.run(&mut e, &q).unwrap();
    let protocol = |op: &str| e.profile().ops.iter().find(|r| r.op == op).map(|r| r.protocol.clone());
    assert_eq!(protocol("blb-mpc.gelu.mux_f0").as_deref(), Some("p4"));
    assert_eq!(protocol("blb-mpc.softmax.rec").as_deref(), Some("newton"));
    assert_eq!(protocol("blb-mpc.ln1.rsqrt").as_deref(), Some("newton"));
    assert_eq!(protocol("blb-mpc.softmax.max").as_deref(), Some("millionaire"));
}

#[test]
fn blb_pads_any_token_count_and_masks_the_padded_keys() {
    // BERT (bidirectional: the padded keys masked) at 100 and 5 tokens, GPT-2 (causal: the
    // padded rows come after every real query) at 48 and 16: each runs at the shortest
    // power of two the packings take, and equals the plaintext model as closely as at 128.
    for len in [100usize, 5] {
        let ids: Vec<u32> = (0..len).map(|i| (i * 7919 % 30000) as u32 + 100).collect();
        let blb = embedding(run(RandomArch::BertTiny, 2, "blb", false, Task::Embed, &ids).0);
        let plain = embedding(run(RandomArch::BertTiny, 2, "bumblebee", true, Task::Embed, &ids).0);
        let c = cosine(&blb, &plain);
        eprintln!("BERT {len} tokens: cosine to the plaintext model {c}");
        assert!(c > 0.9999, "{len} tokens: {c}");
    }
    for len in [48usize, 16] {
        let ids: Vec<u32> = (0..len).map(|i| (i * 7919 % 50000) as u32 + 7).collect();
        let (blb, _) = run(RandomArch::Gpt2, 1, "blb", false, Task::Generate { n_new: 1 }, &ids);
        let (plain, _) = run(RandomArch::Gpt2, 1, "bumblebee", true, Task::Generate { n_new: 1 }, &ids);
        assert_eq!(blb, plain, "{len} tokens");
    }
}

#[test]
fn blb_refuses_what_it_does_not_plan() {
    // KV-cache decoding.
    let config = random_config(RandomArch::Gpt2, Some(1));
    let w = RandomWeights::new(5);
    let m = SecureModel::new(&config, Some(&w)).unwrap();
    let suite = Suite::parse("blb").unwrap();
    let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, &suite).unwrap();
    let q = Query { task: Task::Generate { n_new: 2 }, ids: Some((0..64).collect()), len: 64 };
    let err = m.run(&mut e, &q).unwrap_err().to_string();
    assert!(err.contains("one token per prompt"), "{err}");
    assert!(!e.profile().ops.iter().any(|o| o.op.starts_with("blb")), "a block ran");
}

#[test]
fn blb_twin_of_llama_generates_the_plaintext_models_token() {
    let config = random_config(RandomArch::LlamaSmall, Some(2));
    let w = RandomWeights::new(5);
    let m = SecureModel::new(&config, Some(&w)).unwrap();
    for len in [64usize, 11] {
        let ids: Vec<u32> = (0..len).map(|i| (i * 7919 % 1000) as u32).collect();
        let q = Query { task: Task::Generate { n_new: 1 }, ids: Some(ids.clone()), len };
        let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, &Suite::parse("blb").unwrap()).unwrap();
        let blb = m.run(&mut e, &q).unwrap();
        assert!(e.profile().ops.iter().any(|r| r.op == "blb.first.block1"), "BLB's blocks did not run");
        let mut x = PlainEngine::new(FixedPoint::BUMBLEBEE, &Suite::parse("bumblebee").unwrap()).unwrap().with_exact(&EXACT_OPS).unwrap();
        let plain = m.run(&mut x, &q).unwrap();
        assert_eq!(blb, plain, "{len} tokens");
    }
}

#[test]
fn blb_twin_of_vit_matches_the_plaintext_model() {
    let config = random_config(RandomArch::VitSmall, Some(2));
    let w = RandomWeights::new(5).with_classifier();
    let m = SecureModel::new(&config, Some(&w)).unwrap();
    let px = nectar_bench::fixtures::tiny::tiny_image(3, 64, 5);
    let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, &Suite::parse("blb").unwrap()).unwrap();
    let blb = m.run_image(&mut e, Some(&px)).unwrap();
    assert!(e.profile().ops.iter().any(|r| r.op == "blb.first.block1"), "BLB's blocks did not run");
    let mut x = PlainEngine::new(FixedPoint::BUMBLEBEE, &Suite::parse("bumblebee").unwrap()).unwrap().with_exact(&EXACT_OPS).unwrap();
    let plain = m.run_image(&mut x, Some(&px)).unwrap();
    let (Output::Logits(a), Output::Logits(b)) = (blb, plain) else { panic!("logits expected") };
    let c = cosine(&a, &b);
    eprintln!("ViT: cosine to the plaintext model {c}");
    assert!(c > 0.999, "{c}");
}

#[test]
fn blb_galois_keys_are_cut_to_the_level_they_serve() {
    // BERT-base at 128 tokens: the keys of rotations that only happen after a block's first
    // rescales are cut below the top (fewer digits and primes), and no key below the lowest
    // level a block reaches. Key bytes scale as levels·(levels + 1).
    let cfg = nectar_model::secure::blb_spec::block_config(&random_config(RandomArch::BertBase, Some(12)));
    let (rows, sets) = nectar_model::secure::blb::galois_key_plan(&cfg, 100, 12).unwrap();
    assert_eq!(rows, 128, "100 tokens run as 128 rows");
    let mut ratio = Vec::new();
    for (&(n, depth), steps) in &sets {
        let top = depth + 2; // executable_params: [60, 40, 40 × depth]
        assert!(steps.values().all(|&d| d < top), "N = {n}: a key cut below level 1: {steps:?}");
        let size = |d: u32| ((top - d) * (top - d + 1)) as f64;
        let r = steps.values().map(|&d| size(d)).sum::<f64>() / (steps.len() as f64 * size(0));
        eprintln!("N = {n}, depth {depth}: {} keys, {:.3} of their uncut bytes", steps.len(), r);
        ratio.push(r);
    }
    assert!(ratio.iter().all(|&r| r <= 1.0) && ratio.iter().any(|&r| r < 0.9), "{ratio:?}");
}
