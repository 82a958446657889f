//! Whole-model fixed-point twin ([`PlainEngine`]) against the f32 reference forwards: the error
//! of fixed point (64, 18) and of BumbleBee's approximations (Seg4GeLU, SiLU, clipped exp,
//! Newton reciprocal / rsqrt) on whole models. The secure run is later checked against the twin.

use nectar_math::FixedPoint;
use nectar_model::secure::{Output, Query, SecureModel, Task};
use nectar_model::twin::PlainEngine;
use nectar_model::{cosine, home, Model, Network, Suite, Weights};
use nectar_bench::fixtures::tiny;

/// The twin of a run with BumbleBee's protocols.
fn twin() -> PlainEngine {
    twin_with(&Suite::bumblebee())
}

/// The twin of a run with `suite` (it applies the same approximations).
fn twin_with(suite: &Suite) -> PlainEngine {
    PlainEngine::new(FixedPoint::BUMBLEBEE, suite).unwrap()
}

fn run(model: &Model, w: &Weights, task: Task, ids: &[u32], suite: &Suite) -> Output {
    let m = SecureModel::new(model.config(), Some(w)).unwrap();
    let q = Query {
        task,
        ids: Some(ids.to_vec()),
        len: ids.len(),
    };
    m.run(&mut twin_with(suite), &q).unwrap()
}

fn weights(dir: &std::path::Path) -> Weights {
    Weights::open(&dir.join("model.safetensors")).unwrap()
}

#[test]
fn tiny_bert_embedding_and_logits_match_float() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(dir.path(), 11).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let Network::Bert(bert) = model.network() else {
        panic!("bert expected")
    };
    let w = weights(dir.path());
    let mut worst = 1f32;
    for (s, ids) in [
        vec![1u32, 7, 3, 9, 2],
        vec![4, 4, 4],
        (0..20).map(|i| (i * 7 % 50) as u32).collect(),
    ]
    .iter()
    .enumerate()
    {
        let want = bert.embed_ids(ids).unwrap();
        // Client one-hot and shared-ids embedding, full-ring and mixed activations.
        for spec in [
            "bumblebee",
            "bumblebee+embed=shared-ids",
            "bumblebee+act-ring=mixed",
        ] {
            let suite = Suite::parse(spec).unwrap();
            let Output::Embedding(got) = run(&model, &w, Task::Embed, ids, &suite) else {
                panic!("embedding expected")
            };
            let c = cosine(&want, &got);
            eprintln!("tiny bert sentence {s} (suite {suite}): cosine {c:.6}");
            worst = worst.min(c);
        }
        let want = bert.classify_ids(ids).unwrap();
        let Output::Logits(got) = run(&model, &w, Task::Classify, ids, &Suite::bumblebee()) else {
            panic!()
        };
        let err = want
            .iter()
            .zip(&got)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        eprintln!("tiny bert sentence {s}: logits {want:?} vs {got:?}, max abs error {err:.2e}");
        assert!(err < 5e-2, "classifier logits error {err}");
    }
    assert!(worst >= 0.99, "worst cosine {worst}");
}

#[test]
fn tiny_gpt2_generation_matches_float() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_gpt2(dir.path(), 5).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let Network::Gpt2(g) = model.network() else {
        panic!("gpt2 expected")
    };
    let w = weights(dir.path());
    let prompt = [3u32, 17, 42, 8];
    let want = g.generate(&prompt, 8).unwrap();
    let Output::Tokens(got) = run(
        &model,
        &w,
        Task::Generate { n_new: 8 },
        &prompt,
        &Suite::bumblebee(),
    ) else {
        panic!("tokens expected")
    };
    eprintln!("tiny gpt2: float {want:?}, twin {got:?}");
    // Logits of the prompt's next token.
    let sm = SecureModel::new(model.config(), Some(&w)).unwrap();
    let SecureModel::Gpt2(sg) = &sm else { panic!() };
    let mut e = twin();
    let mut cache = sg.new_cache();
    let h = sg
        .forward_step(&mut e, Some(&prompt), prompt.len(), &mut cache)
        .unwrap();
    let lg = sg.last_logits(&mut e, &h, prompt.len()).unwrap();
    let got_logits = FixedPoint::BUMBLEBEE.decode_vec(&lg);
    let want_logits = g.next_token_logits(&prompt).unwrap();
    let err = want_logits
        .iter()
        .zip(&got_logits)
        .map(|(a, b)| (*a as f64 - b).abs())
        .fold(0f64, f64::max);
    let top = want_logits.iter().fold(0f32, |m, v| m.max(v.abs()));
    eprintln!("tiny gpt2: next-token logits max abs error {err:.2e} (max |logit| {top:.2})");
    assert!(err < 1e-1, "logits error {err}");
    assert_eq!(got, want, "greedy generation differs");
}

#[test]
fn tiny_llama_generation_matches_float() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_llama(dir.path(), 9).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let Network::Llama(lm) = model.network() else {
        panic!("llama expected")
    };
    let w = weights(dir.path());
    let prompt = [1u32, 30, 12, 7, 22];
    let want = lm.generate(&prompt, 8).unwrap();
    let Output::Tokens(got) = run(
        &model,
        &w,
        Task::Generate { n_new: 8 },
        &prompt,
        &Suite::bumblebee(),
    ) else {
        panic!("tokens expected")
    };
    eprintln!("tiny llama: float {want:?}, twin {got:?}");
    let sm = SecureModel::new(model.config(), Some(&w)).unwrap();
    let SecureModel::Llama(sl) = &sm else {
        panic!()
    };
    let mut e = twin();
    let mut cache = sl.new_cache();
    let h = sl
        .forward_step(&mut e, Some(&prompt), prompt.len(), &mut cache)
        .unwrap();
    let lg = sl.last_logits(&mut e, &h, prompt.len()).unwrap();
    let got_logits = FixedPoint::BUMBLEBEE.decode_vec(&lg);
    let want_logits = lm.next_token_logits(&prompt).unwrap();
    let err = want_logits
        .iter()
        .zip(&got_logits)
        .map(|(a, b)| (*a as f64 - b).abs())
        .fold(0f64, f64::max);
    eprintln!("tiny llama: next-token logits max abs error {err:.2e}");
    assert!(err < 5e-2, "logits error {err}");
    assert_eq!(got, want, "greedy generation differs");
}

#[test]
fn minilm_twin_embeddings_match_plaintext() {
    let home = home::default_home();
    assert!(
        home::minilm_present(&home),
        "MiniLM not found under {}: run `nectar fetch-model minilm` (`make test` fetches it first)",
        home.display()
    );
    let dir = home::minilm_dir(&home);
    let model = Model::load(&dir).unwrap();
    let w = weights(&dir);
    let tok = model.tokenizer().unwrap();
    let texts = [
        "The weather is lovely today.",
        "It's so sunny outside!",
        "He drove to the stadium.",
        "A man is playing a guitar on stage, and the crowd sings along with him.",
        "Numbers: 3.14159, 2.71828 and 1,000,000 — what do they have in common?",
        "Why?!",
        "Private inference keeps both the model and the query secret.",
        "The quick brown fox jumps over the lazy dog.",
        "Quantum computers may break RSA, but lattices should resist them.",
        "I bought 12 eggs, 3 loaves of bread, and a bottle of olive oil at the market yesterday afternoon.",
    ];
    let t0 = std::time::Instant::now();
    let mut worst = 1f32;
    for t in texts {
        let enc = tok.encode(t).unwrap();
        let want = model.embed(&[t]).unwrap().remove(0);
        let Output::Embedding(got) = run(&model, &w, Task::Embed, &enc.ids, &Suite::bumblebee())
        else {
            panic!()
        };
        let c = cosine(&want, &got);
        eprintln!(
            "minilm twin: cosine {c:.6} ({} tokens) {t:?}",
            enc.ids.len()
        );
        worst = worst.min(c);
    }
    eprintln!(
        "minilm twin: worst cosine {worst:.6} over {} sentences in {:.1} s",
        texts.len(),
        t0.elapsed().as_secs_f64()
    );
    assert!(worst >= 0.99, "worst cosine {worst}");
}

#[test]
fn bad_queries_are_errors_not_panics() {
    use nectar_model::secure::SecureError;
use nectar_bench::fixtures::random::{random_config, RandomArch};
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(dir.path(), 3).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let w = weights(dir.path());
    let m = SecureModel::new(model.config(), Some(&w)).unwrap();
    let bad_id = Query {
        task: Task::Embed,
        ids: Some(vec![1, 999]),
        len: 2,
    };
    assert!(m.run(&mut twin(), &bad_id).is_err());
    let wrong_len = Query {
        task: Task::Embed,
        ids: Some(vec![1, 2]),
        len: 3,
    };
    assert!(m.run(&mut twin(), &wrong_len).is_err());
    let empty = Query {
        task: Task::Embed,
        ids: Some(vec![]),
        len: 0,
    };
    assert!(m.run(&mut twin(), &empty).is_err());
    let wrong_task = Query {
        task: Task::Generate { n_new: 2 },
        ids: Some(vec![1]),
        len: 1,
    };
    assert!(matches!(
        m.run(&mut twin(), &wrong_task),
        Err(SecureError::Unsupported(_))
    ));
    // The twin plays both parties: without weights it must refuse, not panic.
    let no_w = SecureModel::new(model.config(), None).unwrap();
    let q = Query {
        task: Task::Embed,
        ids: Some(vec![1, 2]),
        len: 2,
    };
    assert!(no_w.run(&mut twin(), &q).is_err());
    // ViT: the image is the client's input; a text query or a missing image is refused.
    let vit = SecureModel::new(&random_config(RandomArch::VitBase, Some(1)), None).unwrap();
    assert!(matches!(
        vit.run(&mut twin(), &wrong_task),
        Err(SecureError::Unsupported(_))
    ));
    assert!(matches!(
        vit.run_image(&mut twin(), None),
        Err(SecureError::Role(_))
    ));
    assert!(matches!(
        m.run_image(&mut twin(), Some(&[0.0; 4])),
        Err(SecureError::Unsupported(_))
    ));
}

#[test]
fn tiny_vit_logits_match_float() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_vit(dir.path(), 21).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let Network::Vit(vit) = model.network() else {
        panic!("vit expected")
    };
    let w = weights(dir.path());
    for seed in [1u64, 2, 3] {
        let px = tiny::tiny_image(tiny::VIT_CHANNELS, tiny::VIT_IMAGE, seed);
        let want = vit.classify(&px).unwrap();
        for spec in ["bumblebee", "bumblebee+act-ring=mixed"] {
            let suite = Suite::parse(spec).unwrap();
            let m = SecureModel::new(model.config(), Some(&w)).unwrap();
            let Output::Logits(got) = m.run_image(&mut twin_with(&suite), Some(&px)).unwrap()
            else {
                panic!("logits expected")
            };
            let err = want
                .iter()
                .zip(&got)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            eprintln!(
                "tiny vit image {seed} (suite {suite}): float {want:?}, twin {got:?}, max abs error {err:.2e}"
            );
            assert!(err < 5e-2, "logits error {err}");
            assert_eq!(argmax(&got), argmax(&want), "argmax differs");
        }
    }
    // All final hidden rows, not only [CLS].
    let px = tiny::tiny_image(tiny::VIT_CHANNELS, tiny::VIT_IMAGE, 4);
    let want = vit.forward(&px).unwrap();
    let sm = SecureModel::new(model.config(), Some(&w)).unwrap();
    let SecureModel::Vit(sv) = &sm else { panic!() };
    let h = sv.forward(&mut twin(), Some(&px)).unwrap();
    let got = FixedPoint::BUMBLEBEE.decode_vec(&h);
    let err = want
        .iter()
        .zip(&got)
        .map(|(a, b)| (*a as f64 - b).abs())
        .fold(0f64, f64::max);
    eprintln!("tiny vit: final hidden states max abs error {err:.2e}");
    assert_eq!(got.len(), want.len());
    assert!(err < 5e-2, "hidden error {err}");
}

fn argmax(x: &[f32]) -> usize {
    nectar_model::ops::argmax(x)
}

/// The `east` suite's twin (OPPE GeLU / gelu_new / SiLU / exp / tanh, Determine reciprocal) on
/// the tiny models: generation unchanged, embeddings and logits at least as close to float as
/// BumbleBee's.
#[test]
fn east_suite_twin_matches_float_on_tiny_models() {
    let east = Suite::parse("east").unwrap();
    // BERT: embedding and classifier (the pooler's tanh by OPPE).
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(dir.path(), 11).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let Network::Bert(bert) = model.network() else { panic!() };
    let w = weights(dir.path());
    let ids: Vec<u32> = (0..20).map(|i| (i * 7 % 50) as u32).collect();
    let want = bert.embed_ids(&ids).unwrap();
    let cos = |suite: &Suite| {
        let Output::Embedding(got) = run(&model, &w, Task::Embed, &ids, suite) else { panic!() };
        cosine(&want, &got)
    };
    let (ce, cb) = (cos(&east), cos(&Suite::bumblebee()));
    eprintln!("tiny bert: cosine east {ce:.7}, bumblebee {cb:.7}");
    assert!(ce >= 0.999 && ce >= cb - 1e-5, "east {ce} vs bumblebee {cb}");
    let want = bert.classify_ids(&ids).unwrap();
    let Output::Logits(got) = run(&model, &w, Task::Classify, &ids, &east) else { panic!() };
    let err = want.iter().zip(&got).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    eprintln!("tiny bert east logits max abs error {err:.2e}");
    assert!(err < 5e-2, "classifier logits error {err}");
    // GPT-2 (gelu_new table) and LLaMA (SiLU table): greedy generation as in float.
    for (write, prompt) in [
        (tiny::write_tiny_gpt2 as fn(&std::path::Path, u64) -> Result<(), nectar_model::ModelError>, vec![3u32, 17, 42, 8]),
        (tiny::write_tiny_llama, vec![1u32, 30, 12, 7, 22]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), 5).unwrap();
        let model = Model::load(dir.path()).unwrap();
        let w = weights(dir.path());
        let want = match model.network() {
            Network::Gpt2(g) => g.generate(&prompt, 8).unwrap(),
            Network::Llama(l) => l.generate(&prompt, 8).unwrap(),
            _ => panic!(),
        };
        let Output::Tokens(got) = run(&model, &w, Task::Generate { n_new: 8 }, &prompt, &east) else { panic!() };
        assert_eq!(got, want, "greedy generation differs under east");
    }
}

/// MiniLM under the `east` suite's twin: every sentence's embedding within cosine 0.9995 of
/// plaintext (issue 14's target for the secure run; the twin is its noiseless part).
#[test]
fn minilm_east_twin_embeddings_match_plaintext() {
    let dir = home::minilm_dir(&home::default_home());
    let model = Model::load(&dir).expect("MiniLM (make test fetches it: nectar fetch-model minilm)");
    let w = weights(&dir);
    let tok = model.tokenizer().unwrap();
    let (mut worst_e, mut worst_b) = (1f32, 1f32);
    for t in [
        "The weather is lovely today.",
        "A man is playing a guitar on stage, and the crowd sings along with him.",
        "Numbers: 3.14159, 2.71828 and 1,000,000 — what do they have in common?",
        "Why?!",
        "I bought 12 eggs, 3 loaves of bread, and a bottle of olive oil at the market yesterday afternoon.",
    ] {
        let enc = tok.encode(t).unwrap();
        let want = model.embed(&[t]).unwrap().remove(0);
        let c = |suite: &Suite| {
            let Output::Embedding(got) = run(&model, &w, Task::Embed, &enc.ids, suite) else { panic!() };
            cosine(&want, &got)
        };
        let (ce, cb) = (c(&Suite::parse("east").unwrap()), c(&Suite::bumblebee()));
        eprintln!("minilm twin: east {ce:.6}, bumblebee {cb:.6}: {t:?}");
        worst_e = worst_e.min(ce);
        worst_b = worst_b.min(cb);
    }
    eprintln!("minilm twin worst cosine: east {worst_e:.6}, bumblebee {worst_b:.6}");
    assert!(worst_e >= 0.9995, "east worst cosine {worst_e}");
}

/// MiniLM under the `rotl` suite's twin (LUT GELU / exp / reciprocal / softmax): every
/// sentence's embedding within cosine 0.999 of plaintext (issue 13's target for the secure demo;
/// the twin is its noiseless part).
#[test]
fn minilm_rotl_twin_embeddings_match_plaintext() {
    let worst = minilm_twin_worst_cosine(
        "rotl",
        &[
            "The weather is lovely today.",
            "It's so sunny outside!",
            "He drove to the stadium.",
            "Numbers: 3.14159, 2.71828 and 1,000,000 — what do they have in common?",
            "Why?!",
        ],
    );
    assert!(worst >= 0.999, "rotl worst cosine {worst}");
}

/// The worst cosine between MiniLM's f32 embeddings of `texts` and the twin's under `spec`.
fn minilm_twin_worst_cosine(spec: &str, texts: &[&str]) -> f32 {
    let dir = home::minilm_dir(&home::default_home());
    let model = Model::load(&dir).expect("MiniLM (make test fetches it: nectar fetch-model minilm)");
    let w = weights(&dir);
    let tok = model.tokenizer().unwrap();
    let suite = Suite::parse(spec).unwrap();
    let mut worst = 1f32;
    for t in texts {
        let enc = tok.encode(t).unwrap();
        let want = model.embed(&[t]).unwrap().remove(0);
        let Output::Embedding(got) = run(&model, &w, Task::Embed, &enc.ids, &suite) else { panic!() };
        let c = cosine(&want, &got);
        eprintln!("minilm twin: {spec} {c:.7}: {t:?}");
        worst = worst.min(c);
    }
    worst
}

/// `PlainEngine::with_exact` (the error attribution of `nectar accuracy`): with every nonlinear
/// operator exact the twin is the f32 model up to the fixed-point format; with only one
/// approximated it carries that operator's error alone; an unknown operator is an error.
#[test]
fn exact_operators_isolate_each_approximation() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(dir.path(), 21).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let Network::Bert(bert) = model.network() else { panic!("bert expected") };
    let w = weights(dir.path());
    let ids: Vec<u32> = (0..24).map(|i| (i * 11 % 50) as u32).collect();
    let want = bert.embed_ids(&ids).unwrap();
    let m = SecureModel::new(model.config(), Some(&w)).unwrap();
    let q = Query { task: Task::Embed, ids: Some(ids.clone()), len: ids.len() };
    let cos = |exact: &[&str], suite: &Suite| {
        let mut e = twin_with(suite).with_exact(exact).unwrap();
        let Output::Embedding(got) = m.run(&mut e, &q).unwrap() else { panic!() };
        (1.0 - cosine(&want, &got)) as f64
    };
    let bb = Suite::bumblebee();
    let all = ["gelu", "softmax", "layernorm"];
    let (approx, floor) = (cos(&[], &bb), cos(&all, &bb));
    let only_gelu = cos(&["softmax", "layernorm"], &bb);
    eprintln!("tiny bert 1 − cosine: bumblebee {approx:.3e}, only gelu {only_gelu:.3e}, format only {floor:.3e}");
    assert!(floor < 1e-6, "format floor {floor}");
    assert!(floor < only_gelu && only_gelu <= approx * 1.5 + 1e-7, "{floor} {only_gelu} {approx}");
    // the default suite's GeLU, exp and LayerNorm are at least 10x closer than BumbleBee's
    let nectar = cos(&[], &Suite::nectar());
    eprintln!("tiny bert 1 − cosine: nectar {nectar:.3e}");
    assert!(nectar * 10.0 < approx, "nectar {nectar} vs bumblebee {approx}");
    assert!(twin_with(&bb).with_exact(&["relu"]).is_err());
}

/// The default suite's twin on MiniLM: plaintext-grade (issue 17: cosine ≥ 0.9999) on varied
/// sentences, including the worst of the 50-sentence set under BumbleBee's approximations.
#[test]
fn minilm_nectar_twin_embeddings_match_plaintext() {
    let worst = minilm_twin_worst_cosine(
        "nectar",
        &[
            "OK.",
            "Why?!",
            "Numbers: 3.14159, 2.71828 and 1,000,000 — what do they have in common?",
            "Der schnelle braune Fuchs springt über den faulen Hund.",
            "I bought 12 eggs, 3 loaves of bread, and a bottle of olive oil at the market yesterday afternoon.",
        ],
    );
    assert!(worst >= 0.9999, "nectar worst cosine {worst}");
}

/// The `nimbus` preset's twin on MiniLM (issue 47: `demo --suite nimbus` at cosine ≥ 0.9999): its
/// GeLU and exp tables were fitted to MiniLM's inputs on the calibration texts, none of which is
/// among these sentences.
#[test]
fn minilm_nimbus_twin_embeddings_match_plaintext() {
    let worst = minilm_twin_worst_cosine(
        "nimbus",
        &[
            "OK.",
            "Why?!",
            "Numbers: 3.14159, 2.71828 and 1,000,000 — what do they have in common?",
            "Der schnelle braune Fuchs springt über den faulen Hund.",
            "I bought 12 eggs, 3 loaves of bread, and a bottle of olive oil at the market yesterday afternoon.",
        ],
    );
    assert!(worst >= 0.9999, "nimbus worst cosine {worst}");
}

/// What `nectar fit --model` fits to (`calibrate::activation_samples`): every GeLU input of every
/// layer and every softmax input `score − row max` (each row has its max at 0), on MiniLM.
#[test]
fn minilm_activation_samples_cover_every_layer() {
    let dir = home::minilm_dir(&home::default_home());
    let model = Model::load(&dir).expect("MiniLM (make test fetches it: nectar fetch-model minilm)");
    let text = "The quick brown fox jumps over the lazy dog.".to_string();
    let n = model.tokenizer().unwrap().encode(&text).unwrap().ids.len();
    let s = nectar_model::calibrate::activation_samples(&model, std::slice::from_ref(&text)).unwrap();
    let (layers, heads, ffn) = (6, 12, 1536);
    assert_eq!(s["gelu"].len(), layers * n * ffn);
    let sm = &s["softmax"];
    assert_eq!(sm.len(), layers * heads * n * n);
    assert!(sm.iter().all(|&z| z <= 0.0));
    assert!(sm.chunks(n).all(|row| row.contains(&0.0)), "every row's max is its 0");
}

/// MiniLM under the `leaf` suite's twin (LEAF's block for `X·W1 → GELU`: the pre-activation
/// on a `1/16` grid over `[−32, 32)`, the table's output at 20 bits; issue 16): the demo's
/// sentences within cosine 0.999 of plaintext (issue 16's target for `demo --suite leaf`), and
/// no sentence of the set below the bumblebee twin's worst minus 0.001 (the 1/16 grid costs
/// about what BumbleBee's Seg4 GeLU does: 50 sentences, min 0.99786 vs 0.99842, mean 0.99941
/// vs 0.99940 in `nectar accuracy`).
#[test]
fn minilm_leaf_twin_embeddings_match_plaintext() {
    let demo = minilm_twin_worst_cosine(
        "leaf",
        &["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."],
    );
    assert!(demo >= 0.999, "leaf worst cosine on the demo sentences {demo}");
    let hard = ["Why?!", "Numbers: 3.14159, 2.71828 and 1,000,000 — what do they have in common?"];
    let (leaf, bb) = (minilm_twin_worst_cosine("leaf", &hard), minilm_twin_worst_cosine("bumblebee", &hard));
    assert!(leaf >= bb - 0.001, "leaf {leaf} vs bumblebee {bb}");
}

/// A gated FFN under the `leaf` suite (ours; LEAF has no gated block): `SiLU(X·W_gate)` by
/// LEAF's block on its `1/16` grid, `X·W_up` and the product by the suite's protocols. The
/// small LLaMA's twin generates the plaintext model's greedy tokens, and the profile shows
/// LEAF's block ran.
#[test]
fn llama_small_leaf_twin_generates_the_plaintext_tokens() {
    use nectar_bench::fixtures::random::{random_config, RandomArch, RandomWeights};
    let config = random_config(RandomArch::LlamaSmall, Some(2));
    let w = RandomWeights::new(5);
    let m = SecureModel::new(&config, Some(&w)).unwrap();
    let ids: Vec<u32> = (0..9).map(|i| (i * 7919 % 1000) as u32).collect();
    let q = Query { task: Task::Generate { n_new: 3 }, ids: Some(ids.clone()), len: ids.len() };
    let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, &Suite::parse("leaf").unwrap()).unwrap();
    let leaf = m.run(&mut e, &q).unwrap();
    assert!(e.profile().ops.iter().any(|r| r.op == "leaf.ffn1"), "LEAF's block did not run");
    let mut x = PlainEngine::new(FixedPoint::BUMBLEBEE, &Suite::parse("bumblebee").unwrap())
        .unwrap()
        .with_exact(&nectar_model::secure::exact::EXACT_OPS)
        .unwrap();
    let plain = m.run(&mut x, &q).unwrap();
    assert!(matches!(leaf, Output::Tokens(ref t) if t.len() == 3), "{leaf:?}");
    assert_eq!(leaf, plain);
}
