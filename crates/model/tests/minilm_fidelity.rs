//! all-MiniLM-L6-v2 fidelity on the 50-sentence set `tests/data/sentences50.txt` (issue 7:
//! cosine ≥ 0.99 to the plaintext reference on ≥ 50 varied sentences: short, long up to
//! ~128 tokens, punctuation, numbers). Needs the fetched model (`make test` fetches it); fails
//! without it.
//!
//! The accuracy check is split as the guide asks:
//! - approximation error: the fixed-point twin (`PlainEngine`, the same operator
//!   approximations as the protocols) against the f32 plaintext model, on all 50 sentences;
//! - protocol error: two parties (`SecureEngine` over an in-memory channel) against the twin on
//!   two sentences in `make test` (≈ 1–2 minutes here), and on all 50 in the ignored test
//!   `minilm_secure_50_sentences` (≈ 1 h on the 2-core machine; results in
//!   `docs/notes/e2e-notes.md`, where the same set also ran through `nectar demo` over TCP).

use nectar_math::{FixedPoint, Prg};
use nectar_model::secure::{Output, Query, SecureEngine, SecureModel, Task};
use nectar_model::twin::PlainEngine;
use nectar_model::{cosine, home, Model, Suite, Weights};
use nectar_net::{mem::run_pair, Channel, Role};

/// BumbleBee's protocols with IKNP COT (fast session setup in tests) and the `lan_commodity`
/// OLT prices that `make demo` uses; the twin gets the same suite.
const SUITE: &str = "bumblebee+ot=iknp+olt-cost=lan_commodity";

fn suite() -> Suite {
    Suite::parse(SUITE).unwrap()
}

const SENTENCES: &str = include_str!("data/sentences50.txt");

fn sentences() -> Vec<&'static str> {
    SENTENCES.lines().filter(|l| !l.trim().is_empty()).collect()
}

/// The fetched MiniLM; a missing model fails the test (`make test` fetches it first).
fn minilm() -> (Model, Weights) {
    let home = home::default_home();
    assert!(
        home::minilm_present(&home),
        "MiniLM not found under {}: run `nectar fetch-model minilm` (`make test` fetches it first)",
        home.display()
    );
    let dir = home::minilm_dir(&home);
    let model = Model::load(&dir).unwrap();
    let w = Weights::open(&dir.join("model.safetensors")).unwrap();
    (model, w)
}

fn embedding(o: Output) -> Vec<f32> {
    match o {
        Output::Embedding(v) => v,
        other => panic!("expected an embedding, got {other:?}"),
    }
}

fn twin_embed(model: &Model, w: &Weights, ids: &[u32]) -> Vec<f32> {
    let m = SecureModel::new(model.config(), Some(w)).unwrap();
    let q = Query {
        task: Task::Embed,
        ids: Some(ids.to_vec()),
        len: ids.len(),
    };
    embedding(
        m.run(
            &mut PlainEngine::new(FixedPoint::BUMBLEBEE, &suite()).unwrap(),
            &q,
        )
        .unwrap(),
    )
}

/// One two-party session ([`SUITE`]) running every id sequence in turn; the client's
/// embeddings.
fn secure_embed_all(model: &Model, w: &Weights, inputs: &[Vec<u32>]) -> Vec<Vec<f32>> {
    let suite = suite();
    let (_, client) = run_pair(
        |ch| {
            let ch: &mut dyn Channel = ch;
            let mut e = SecureEngine::setup(ch, Role::Server, &suite, Prg::from_entropy()).unwrap();
            let m = SecureModel::new(model.config(), Some(w)).unwrap();
            for ids in inputs {
                let q = Query {
                    task: Task::Embed,
                    ids: None,
                    len: ids.len(),
                };
                assert_eq!(m.run(&mut e, &q).unwrap(), Output::Nothing);
            }
        },
        |ch| {
            let ch: &mut dyn Channel = ch;
            let mut e = SecureEngine::setup(ch, Role::Client, &suite, Prg::from_entropy()).unwrap();
            let m = SecureModel::new(model.config(), None).unwrap();
            inputs
                .iter()
                .map(|ids| {
                    let q = Query {
                        task: Task::Embed,
                        ids: Some(ids.clone()),
                        len: ids.len(),
                    };
                    embedding(m.run(&mut e, &q).unwrap())
                })
                .collect::<Vec<_>>()
        },
    );
    client
}

#[test]
fn sentence_set_is_varied() {
    let s = sentences();
    assert_eq!(s.len(), 50);
    assert!(
        s.iter().any(|t| t.split_whitespace().count() <= 2),
        "short ones"
    );
    assert!(
        s.iter().any(|t| t.split_whitespace().count() >= 80),
        "long ones"
    );
    assert!(
        s.iter()
            .filter(|t| t.chars().any(|c| c.is_ascii_digit()))
            .count()
            >= 10
    );
    assert!(
        s.iter()
            .filter(|t| t.contains(['!', '?', ';', '"', '#']))
            .count()
            >= 10
    );
}

/// Approximation error: twin vs f32 on all 50 sentences.
#[test]
fn minilm_twin_on_50_sentences() {
    let (model, w) = minilm();
    let tok = model.tokenizer().unwrap();
    let t0 = std::time::Instant::now();
    let (mut worst, mut longest) = (1f32, 0usize);
    for t in sentences() {
        let ids = tok.encode(t).unwrap().ids;
        longest = longest.max(ids.len());
        let want = model.embed(&[t]).unwrap().remove(0);
        let c = cosine(&want, &twin_embed(&model, &w, &ids));
        assert!(c >= 0.99, "twin cosine {c} for {t:?}");
        worst = worst.min(c);
    }
    eprintln!(
        "minilm twin: worst cosine {worst:.6} over 50 sentences (longest {longest} tokens) in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    assert!(
        longest >= 100,
        "the set should reach ~128 tokens, longest is {longest}"
    );
}

fn check_secure(picked: &[&str]) {
    let (model, w) = minilm();
    let tok = model.tokenizer().unwrap();
    let inputs: Vec<Vec<u32>> = picked.iter().map(|t| tok.encode(t).unwrap().ids).collect();
    let t0 = std::time::Instant::now();
    let got = secure_embed_all(&model, &w, &inputs);
    let secs = t0.elapsed().as_secs_f64();
    let mut worst = 1f32;
    for ((t, ids), g) in picked.iter().zip(&inputs).zip(&got) {
        let plain = model.embed(&[*t]).unwrap().remove(0);
        let twin = twin_embed(&model, &w, ids);
        let (c_plain, c_twin) = (cosine(&plain, g), cosine(&twin, g));
        eprintln!(
            "minilm secure: cosine {c_plain:.6} to plaintext, {c_twin:.6} to the twin ({} tokens) {t:?}",
            ids.len()
        );
        // Protocol error: the secure run is the twin up to LSB-level protocol errors.
        assert!(c_twin >= 0.999, "secure vs twin cosine {c_twin} for {t:?}");
        assert!(
            c_plain >= 0.99,
            "secure vs plaintext cosine {c_plain} for {t:?}"
        );
        worst = worst.min(c_plain);
    }
    eprintln!(
        "minilm secure: worst cosine {worst:.6} over {} sentences, {secs:.1} s",
        picked.len()
    );
}

/// Protocol error on two sentences of the set (the worst twin case and one with numbers).
#[test]
fn minilm_secure_two_sentences() {
    let s = sentences();
    check_secure(&[s[4], s[9]]);
}

/// The whole set through two parties (≈ 1 h here).
#[test]
#[ignore = "about an hour on a 2-core machine; run with --ignored"]
fn minilm_secure_50_sentences() {
    check_secure(&sentences());
}
