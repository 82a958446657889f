//! Suite `blb` end to end on the fixed-point twin: BLB's layer stack (the planner's parts,
//! the fused blocks on the slot simulator, App. B's MPC operators on the fixed-point backend)
//! against the BumbleBee suite's twin and the exact arithmetic of the same model.

use nectar_math::FixedPoint;
use nectar_model::secure::{random_config, Output, PlainEngine, Query, RandomArch, RandomWeights, SecureModel, Task};
use nectar_model::{cosine, Suite};

/// The model's output on the twin of `suite`, and the profile's operator names.
fn run(arch: RandomArch, layers: usize, suite: &str, task: Task, ids: &[u32]) -> (Output, Vec<String>) {
    let config = random_config(arch, Some(layers));
    let w = RandomWeights::new(5);
    let m = SecureModel::new(&config, Some(&w)).unwrap();
    let q = Query { task, ids: Some(ids.to_vec()), len: ids.len() };
    let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, &Suite::parse(suite).unwrap()).unwrap();
    let t0 = std::time::Instant::now();
    let out = m.run(&mut e, &q).unwrap();
    eprintln!("{suite}: {:.1} s", t0.elapsed().as_secs_f64());
    (out, e.profile().ops.iter().map(|r| r.op.clone()).collect())
}

fn embed(arch: RandomArch, layers: usize, suite: &str, ids: &[u32]) -> Vec<f32> {
    let (Output::Embedding(v), ops) = run(arch, layers, suite, Task::Embed, ids) else { panic!("embedding expected") };
    eprintln!("{ops:?}");
    v
}

#[test]
fn blb_twin_matches_the_bumblebee_twin_on_bert_tiny() {
    let ids: Vec<u32> = (0..128).map(|i| (i * 7919 % 30000) as u32 + 100).collect();
    let blb = embed(RandomArch::BertTiny, 2, "blb", &ids);
    let bb = embed(RandomArch::BertTiny, 2, "bumblebee", &ids);
    let c = cosine(&blb, &bb);
    eprintln!("cosine blb vs bumblebee twin: {c}");
    assert!(c > 0.999, "{c}");
}

#[test]
fn blb_twin_runs_gpt2_shapes() {
    let ids: Vec<u32> = (0..64).map(|i| (i * 7919 % 50000) as u32 + 7).collect();
    let (blb, ops) = run(RandomArch::Gpt2, 1, "blb", Task::Generate { n_new: 1 }, &ids);
    eprintln!("{ops:?}");
    let (bb, _) = run(RandomArch::Gpt2, 1, "bumblebee", Task::Generate { n_new: 1 }, &ids);
    eprintln!("{blb:?} {bb:?}");
}
