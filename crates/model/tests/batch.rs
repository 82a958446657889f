//! Batched inference (issue 52): N inputs of different lengths in one pass. On the fixed-point
//! twin a batch's outputs equal the inputs' one-by-one outputs bit for bit (the batch changes
//! only how rows are stacked and padded, never an input's arithmetic); between seeded secure
//! parties, changing one input leaves every other input's output bit-identical (nothing of
//! one input reaches another's output), and each output agrees with the twin within the
//! protocols' error (as `secure_e2e.rs`).

use nectar_bench::fixtures::tiny;
use nectar_math::{FixedPoint, Prg};
use nectar_model::secure::{Output, Query, SecureEngine, SecureModel, Task};
use nectar_model::twin::PlainEngine;
use nectar_model::{cosine, Model, Suite, Weights};
use nectar_net::{mem::run_pair, Channel, Role};

fn suite(spec: &str) -> Suite {
    Suite::parse(&format!("{spec}+ot=iknp")).unwrap()
}

fn batch(each: Task, inputs: &[Vec<u32>]) -> Query {
    let lens: Vec<usize> = inputs.iter().map(|i| i.len()).collect();
    Query { task: Task::Batch { each: Box::new(each), lens: lens.clone() }, ids: Some(inputs.concat()), len: lens.iter().sum() }
}

fn twin(model: &Model, w: &Weights, q: &Query, s: &Suite) -> Output {
    let m = SecureModel::new(model.config(), Some(w)).unwrap();
    m.run(&mut PlainEngine::new(FixedPoint::BUMBLEBEE, s).unwrap(), q).unwrap()
}

/// The client's output of `q` between parties seeded with `seed`.
fn secure(model: &Model, w: &Weights, q: &Query, s: &Suite, seed: u8) -> Output {
    let server_q = Query { ids: None, ..q.clone() };
    let (srv, cli) = run_pair(
        |ch| {
            let ch: &mut dyn Channel = ch;
            let mut e = SecureEngine::setup(ch, Role::Server, s, Prg::new([seed; 16])).unwrap();
            SecureModel::new(model.config(), Some(w)).unwrap().run(&mut e, &server_q).unwrap()
        },
        |ch| {
            let ch: &mut dyn Channel = ch;
            let mut e = SecureEngine::setup(ch, Role::Client, s, Prg::new([seed + 1; 16])).unwrap();
            SecureModel::new(model.config(), None).unwrap().run(&mut e, q).unwrap()
        },
    );
    assert_eq!(srv, Output::Nothing, "the server learns nothing");
    cli
}

fn outputs(o: Output) -> Vec<Vec<f32>> {
    let Output::Batch(v) = o else { panic!("a batch output expected, got {o:?}") };
    v.into_iter()
        .map(|o| match o {
            Output::Embedding(x) | Output::Logits(x) => x,
            o => panic!("unexpected {o:?}"),
        })
        .collect()
}

fn one(o: Output) -> Vec<f32> {
    match o {
        Output::Embedding(x) | Output::Logits(x) => x,
        o => panic!("unexpected {o:?}"),
    }
}

fn tiny_bert() -> (tempfile::TempDir, Model, Weights) {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(dir.path(), 23).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let w = Weights::open(&dir.path().join("model.safetensors")).unwrap();
    (dir, model, w)
}

fn inputs() -> Vec<Vec<u32>> {
    vec![vec![1, 7, 3, 9, 2], vec![4, 11, 6], vec![2, 5, 8, 13, 10, 3, 1], vec![9, 12, 7, 4, 6]]
}

#[test]
fn twin_batch_equals_one_by_one() {
    let (_d, model, w) = tiny_bert();
    let same_length = vec![vec![1, 7, 3, 9, 2], vec![4, 11, 6, 1, 1], vec![9, 12, 7, 4, 6]];
    for spec in ["nectar", "bumblebee", "east"] {
        let s = suite(spec);
        for each in [Task::Embed, Task::Classify] {
            for (set, exact) in [(&same_length, true), (&inputs(), false)] {
                let got = outputs(twin(&model, &w, &batch(each.clone(), set), &s));
                assert_eq!(got.len(), set.len());
                for (i, ids) in set.iter().enumerate() {
                    let q = Query { task: each.clone(), ids: Some(ids.clone()), len: ids.len() };
                    let want = one(twin(&model, &w, &q, &s));
                    if exact {
                        assert_eq!(got[i], want, "{spec} {each:?}: input {i} batched vs alone");
                    } else {
                        // A shorter input's softmax rows are padded to the longest input's width
                        // with masked entries (exactly 0 after the exponential), but the
                        // reciprocal of the row sums takes its domain `[1, cols]` from the
                        // padded width: its Newton start differs, within its stated error.
                        let err = got[i].iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
                        assert!(err < 1e-4, "{spec} {each:?}: input {i} batched vs alone differ by {err}");
                    }
                }
            }
        }
    }
}

#[test]
fn secure_batch_isolates_inputs_and_matches_twin() {
    let (_d, model, w) = tiny_bert();
    let s = suite("nectar");
    let q = batch(Task::Embed, &inputs());
    let a = outputs(secure(&model, &w, &q, &s, 40));
    let want = outputs(twin(&model, &w, &q, &s));
    for (i, (g, t)) in a.iter().zip(&want).enumerate() {
        let err = g.iter().zip(t).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
        let c = cosine(g, t);
        assert!(c >= 0.999 && err < 1e-2, "input {i}: secure vs twin cosine {c}, max error {err}");
    }
    // The second input's values change, its length does not.
    let mut changed = inputs();
    changed[1] = vec![14, 2, 9];
    let b = outputs(secure(&model, &w, &batch(Task::Embed, &changed), &s, 40));
    for i in [0, 2, 3] {
        assert_eq!(a[i], b[i], "input {i} changed when only input 1 did");
    }
    assert_ne!(a[1], b[1], "input 1's output must follow its input");
}

#[test]
fn batch_queries_are_checked() {
    let (_d, model, w) = tiny_bert();
    let m = SecureModel::new(model.config(), Some(&w)).unwrap();
    let bad = |task: Task, len: usize| m.check_query(&Query { task, ids: None, len }).unwrap_err().to_string();
    let b = |lens: Vec<usize>| Task::Batch { each: Box::new(Task::Embed), lens };
    assert!(bad(b(vec![3, 4]), 8).contains("announced as 8"));
    assert!(bad(b(vec![3, 0]), 3).contains("0 tokens"));
    assert!(bad(b(vec![]), 0).contains("0 inputs"));
    assert!(bad(b(vec![1; 300]), 300).contains("300 inputs"));
    let nested = Task::Batch { each: Box::new(b(vec![2])), lens: vec![2] };
    assert!(bad(nested, 2).contains("batches embed or classify"));
    m.check_query(&Query { task: b(vec![3, 4]), ids: None, len: 7 }).unwrap();
}

/// MiniLM's twin on a batch of far-apart lengths: the attention is cut into length groups (two
/// calls per layer instead of one padded to 100 tokens), and each output still equals its
/// one-by-one twin within the reciprocal's domain effect (see above).
#[test]
fn minilm_twin_batch_of_mixed_lengths_is_cut_into_groups() {
    use nectar_model::home;
    let dir = home::minilm_dir(&home::default_home());
    let model = Model::load(&dir).expect("MiniLM (make test fetches it: nectar fetch-model minilm)");
    let w = Weights::open(&dir.join("model.safetensors")).unwrap();
    let s = suite("nectar");
    let mut inputs: Vec<Vec<u32>> = (0..6).map(|i| vec![101, 2000 + i, 2100 + i, 2200 + i, 102]).collect();
    inputs.push((0..100).map(|t| 1000 + 7 * t).collect());
    inputs.push((0..96).map(|t| 1500 + 5 * t).collect());
    let m = SecureModel::new(model.config(), Some(&w)).unwrap();
    let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, &s).unwrap();
    let got = outputs(m.run(&mut e, &batch(Task::Embed, &inputs)).unwrap());
    let layers = match model.config() {
        nectar_model::ModelConfig::Bert(c) => c.num_hidden_layers as u64,
        _ => panic!("MiniLM is a BERT"),
    };
    let softmax = e.profile().ops.iter().find(|r| r.op == "softmax").map(|r| r.calls);
    assert_eq!(softmax, Some(2 * layers), "one attention call per length group and layer");
    for (i, ids) in inputs.iter().enumerate() {
        let want = one(twin(&model, &w, &Query { task: Task::Embed, ids: Some(ids.clone()), len: ids.len() }, &s));
        let err = got[i].iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(err < 1e-4, "input {i} batched vs alone differ by {err}");
    }
}
