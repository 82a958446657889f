//! Two-party secure runs ([`SecureEngine`] over an in-memory channel, both parties in threads)
//! against the fixed-point twin: the secure output must equal the twin's up to the protocols'
//! error models (±1 LSB per truncation, bOLEe's {0, ±1}, approximate comparisons near
//! thresholds), i.e. agree to ~1e−3 after a whole model.

use nectar_math::{FixedPoint, Prg};
use nectar_model::secure::{Output, Query, SecureEngine, SecureModel, Task};
use nectar_model::twin::PlainEngine;
use nectar_model::{cosine, Model, Suite, Weights};
use nectar_bench::fixtures::tiny;
use nectar_net::{mem::run_pair, Channel, Role};

/// The suite `spec` (`PRESET[+OP=PROTO]...`) with IKNP (fast session setup in tests).
fn suite(spec: &str) -> Suite {
    Suite::parse(&format!("{spec}+ot=iknp")).unwrap()
}

fn twin_run(model: &Model, w: &Weights, task: Task, ids: &[u32]) -> Output {
    twin_run_with(model, w, task, ids, &suite("bumblebee"))
}

fn twin_run_with(model: &Model, w: &Weights, task: Task, ids: &[u32], suite: &Suite) -> Output {
    let m = SecureModel::new(model.config(), Some(w)).unwrap();
    let q = Query {
        task,
        ids: Some(ids.to_vec()),
        len: ids.len(),
    };
    m.run(
        &mut PlainEngine::new(FixedPoint::BUMBLEBEE, suite).unwrap(),
        &q,
    )
    .unwrap()
}

/// Runs `task` on both parties; returns (server output, client output, client profile table,
/// total bytes both ways).
fn secure_run(
    model: &Model,
    w: &Weights,
    task: Task,
    ids: &[u32],
) -> (Output, Output, String, u64) {
    secure_run_with(model, w, task, ids, &suite("bumblebee"))
}

fn secure_run_with(
    model: &Model,
    w: &Weights,
    task: Task,
    ids: &[u32],
    suite: &Suite,
) -> (Output, Output, String, u64) {
    let len = ids.len();
    let (s, c) = run_pair(
        |ch| {
            let ch: &mut dyn Channel = ch;
            let mut e = SecureEngine::setup(ch, Role::Server, suite, Prg::from_entropy()).unwrap();
            let m = SecureModel::new(model.config(), Some(w)).unwrap();
            let out = m
                .run(
                    &mut e,
                    &Query {
                        task: task.clone(),
                        ids: None,
                        len,
                    },
                )
                .unwrap();
            (out, e.profile().total())
        },
        |ch| {
            let ch: &mut dyn Channel = ch;
            let mut e = SecureEngine::setup(ch, Role::Client, suite, Prg::from_entropy()).unwrap();
            let m = SecureModel::new(model.config(), None).unwrap();
            let out = m
                .run(
                    &mut e,
                    &Query {
                        task: task.clone(),
                        ids: Some(ids.to_vec()),
                        len,
                    },
                )
                .unwrap();
            (out, e.profile().table())
        },
    );
    let bytes = s.1.bytes_sent + s.1.bytes_recv;
    (s.0, c.0, c.1, bytes)
}

#[test]
fn tiny_bert_secure_matches_twin() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(dir.path(), 11).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let w = Weights::open(&dir.path().join("model.safetensors")).unwrap();
    let ids = [1u32, 7, 3, 9, 2, 14];
    let t0 = std::time::Instant::now();
    let (server, client, table, bytes) = secure_run(&model, &w, Task::Embed, &ids);
    eprintln!(
        "tiny bert secure embed: {:.1} s, {:.2} MB\n{table}",
        t0.elapsed().as_secs_f64(),
        bytes as f64 / 1e6
    );
    assert_eq!(server, Output::Nothing, "the server learns nothing");
    let (Output::Embedding(got), Output::Embedding(want)) =
        (client, twin_run(&model, &w, Task::Embed, &ids))
    else {
        panic!("embeddings expected")
    };
    let err = want
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    let c = cosine(&want, &got);
    eprintln!("tiny bert secure vs twin: cosine {c:.6}, max abs error {err:.2e}");
    assert!(
        c >= 0.999 && err < 1e-2,
        "secure vs twin: cosine {c}, max error {err}"
    );
}

#[test]
fn tiny_gpt2_secure_generation_equals_twin() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_gpt2(dir.path(), 5).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let w = Weights::open(&dir.path().join("model.safetensors")).unwrap();
    let prompt = [3u32, 17, 42, 8];
    let t0 = std::time::Instant::now();
    let (server, client, table, bytes) =
        secure_run(&model, &w, Task::Generate { n_new: 8 }, &prompt);
    eprintln!(
        "tiny gpt2 secure generation: {:.1} s, {:.2} MB\n{table}",
        t0.elapsed().as_secs_f64(),
        bytes as f64 / 1e6
    );
    assert_eq!(server, Output::Nothing);
    let want = twin_run(&model, &w, Task::Generate { n_new: 8 }, &prompt);
    eprintln!("secure {client:?}, twin {want:?}");
    assert_eq!(
        client, want,
        "secure greedy generation differs from the twin"
    );
}

#[test]
fn tiny_bert_secure_classifier_with_shared_ids_matches_twin() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(dir.path(), 12).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let w = Weights::open(&dir.path().join("model.safetensors")).unwrap();
    let ids = [2u32, 40, 41, 5, 17];
    let suite = suite("bumblebee+embed=shared-ids");
    let (server, client, table, bytes) = secure_run_with(&model, &w, Task::Classify, &ids, &suite);
    eprintln!(
        "tiny bert secure classify (shared ids): {:.2} MB\n{table}",
        bytes as f64 / 1e6
    );
    assert_eq!(server, Output::Nothing);
    let (Output::Logits(got), Output::Logits(want)) = (
        client,
        twin_run_with(&model, &w, Task::Classify, &ids, &suite),
    ) else {
        panic!("logits expected")
    };
    let err = want
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    eprintln!("tiny bert secure logits {got:?} vs twin {want:?}: max abs error {err:.2e}");
    assert!(err < 1e-2, "secure vs twin logits error {err}");
}

#[test]
fn tiny_vit_secure_classifier_matches_twin() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_vit(dir.path(), 21).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let w = Weights::open(&dir.path().join("model.safetensors")).unwrap();
    let px = tiny::tiny_image(tiny::VIT_CHANNELS, tiny::VIT_IMAGE, 5);
    let suite = suite("bumblebee");
    let t0 = std::time::Instant::now();
    let (s, c) = run_pair(
        |ch| {
            let ch: &mut dyn Channel = ch;
            let mut e = SecureEngine::setup(ch, Role::Server, &suite, Prg::from_entropy()).unwrap();
            let m = SecureModel::new(model.config(), Some(&w)).unwrap();
            // The server runs the ordinary query path: its query carries no input.
            let q = Query {
                task: Task::Classify,
                ids: None,
                len: 0,
            };
            let out = m.run(&mut e, &q).unwrap();
            (out, e.profile().total())
        },
        |ch| {
            let ch: &mut dyn Channel = ch;
            let mut e = SecureEngine::setup(ch, Role::Client, &suite, Prg::from_entropy()).unwrap();
            let m = SecureModel::new(model.config(), None).unwrap();
            let out = m.run_image(&mut e, Some(&px)).unwrap();
            (out, e.profile().table())
        },
    );
    eprintln!(
        "tiny vit secure classify: {:.1} s, {:.2} MB\n{}",
        t0.elapsed().as_secs_f64(),
        (s.1.bytes_sent + s.1.bytes_recv) as f64 / 1e6,
        c.1
    );
    assert_eq!(s.0, Output::Nothing, "the server learns nothing");
    let twin = SecureModel::new(model.config(), Some(&w))
        .unwrap()
        .run_image(
            &mut PlainEngine::new(FixedPoint::BUMBLEBEE, &suite).unwrap(),
            Some(&px),
        )
        .unwrap();
    let (Output::Logits(got), Output::Logits(want)) = (c.0, twin) else {
        panic!("logits expected")
    };
    let err = want
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    eprintln!("tiny vit secure logits {got:?} vs twin {want:?}: max abs error {err:.2e}");
    assert!(err < 1e-2, "secure vs twin logits error {err}");
    let top = |v: &[f32]| nectar_model::ops::argmax(v);
    assert_eq!(top(&got), top(&want), "argmax differs");
}

/// Runs suite `spec` end to end on each tiny architecture of `archs` (`bert`: embedding,
/// `gpt2` / `llama`: greedy generation) and compares with the suite's twin: embeddings within
/// the bumblebee test's bound, generated tokens equal. `check_table` inspects the client's
/// profile table.
fn tiny_suite_matches_twin(spec: &str, archs: &[&str], seed: u64, n_new: usize, check_table: impl Fn(&str)) {
    let s = suite(spec);
    for &arch in archs {
        let dir = tempfile::tempdir().unwrap();
        match arch {
            "bert" => tiny::write_tiny_bert(dir.path(), seed).unwrap(),
            "gpt2" => tiny::write_tiny_gpt2(dir.path(), seed).unwrap(),
            _ => tiny::write_tiny_llama(dir.path(), seed).unwrap(),
        }
        let model = Model::load(dir.path()).unwrap();
        let w = Weights::open(&dir.path().join("model.safetensors")).unwrap();
        let ids = [1u32, 7, 3, 9, 2, 14];
        let task = if arch == "bert" { Task::Embed } else { Task::Generate { n_new } };
        let (server, client, table, bytes) = secure_run_with(&model, &w, task.clone(), &ids, &s);
        eprintln!("tiny {arch} {spec}: {:.2} MB\n{table}", bytes as f64 / 1e6);
        assert_eq!(server, Output::Nothing, "the server learns nothing");
        check_table(&table);
        let want = twin_run_with(&model, &w, task, &ids, &s);
        let (got, want) = match (client, want) {
            (Output::Embedding(g), Output::Embedding(w)) => (g, w),
            (got @ Output::Tokens(_), want) => {
                assert_eq!(got, want, "{arch}: secure greedy tokens equal the twin's");
                continue;
            }
            other => panic!("unexpected outputs {other:?}"),
        };
        let err = want.iter().zip(&got).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        let c = cosine(&want, &got);
        eprintln!("tiny {arch} {spec} secure vs twin: cosine {c:.6}, max abs error {err:.2e}");
        assert!(c >= 0.999 && err < 1e-2, "{arch}: secure vs twin: cosine {c}, max error {err}");
    }
}

/// The `rotl` suite (ROTL LUT GELU / SiLU / exp / reciprocal / softmax, comparisons from LUTs)
/// end to end on tiny BERT and tiny LLaMA: secure vs the `rotl` twin. The LUT operators' twin
/// gap (the index carry picks the neighbouring segment, `nectar_nn::tolerance`) is a few 1e−4
/// per activation, so the bound is the same as the bumblebee test's.
#[test]
fn tiny_models_rotl_secure_matches_twin() {
    tiny_suite_matches_twin("rotl", &["bert", "llama"], 12, 2, |table| {
        assert!(table.contains("lut"), "the profile names the LUT protocols: {table}");
    });
}

/// BLB's per-operator CKKS matmuls (`matmul=ckks`: the transformer layers' `X·W`;
/// `matmul-shared=ckks`: `Q_h·K_h^T`, `P_h·V_h`) end to end on tiny BERT and tiny GPT-2: secure
/// vs the twin. The CKKS products come back already truncated, with the conversions'
/// stochastic rounding (a few units of 2^-18) in place of one truncation's ±1: the same bound
/// as the bumblebee test's. GPT-2's KV-cache steps give every query length its own layout.
#[test]
fn tiny_models_ckks_matmuls_secure_match_twin() {
    tiny_suite_matches_twin("bumblebee+matmul=ckks+matmul-shared=ckks", &["bert", "gpt2"], 13, 3, |table| {
        let row = |op: &str| table.lines().find(|l| l.trim_start().starts_with(op)).unwrap_or_else(|| panic!("{op} in {table}"));
        for op in ["linear.qkv", "linear.ffn1", "matmul.qk", "matmul.pv"] {
            assert!(row(op).contains("ckks"), "{op} runs on CKKS: {}", row(op));
        }
        assert!(row("embed").contains("olt"), "the embedding stays on OLT: {}", row("embed"));
    });
}

/// The default suite (`nectar`: SQ8 GeLU, fourth-order Taylor exp, `r ⊗ γ` LayerNorm / RMSNorm)
/// end to end on tiny BERT, GPT-2 (tanh-form GeLU, causal softmax) and LLaMA (RMSNorm): secure
/// vs the nectar twin, with the bumblebee test's bound (SQ8's stated twin gap is 3 LSB, the exp's
/// 6; the `r ⊗ γ` OLT adds one truncation).
#[test]
fn tiny_models_nectar_secure_matches_twin() {
    tiny_suite_matches_twin("nectar", &["bert", "gpt2", "llama"], 14, 2, |table| {
        assert!(table.contains("outer"), "the profile names the r ⊗ γ norm: {table}");
        if let Some(gelu) = table.lines().find(|l| l.trim_start().starts_with("gelu")) {
            assert!(gelu.contains("sq8"), "GeLU by sq8: {gelu}");
        }
    });
}

/// The `nimbus` preset (COP matmuls and lookup; the fitted `|x|`-form GeLU / SiLU and the
/// clipped quartic-base exp) end to end on tiny BERT, GPT-2 and LLaMA: secure vs the nimbus
/// twin, with the bumblebee test's bound (each fitted protocol's stated twin gap is a few LSB).
#[test]
fn tiny_models_nimbus_secure_matches_twin() {
    tiny_suite_matches_twin("nimbus", &["bert", "gpt2", "llama"], 16, 2, |table| {
        let row = |op: &str| table.lines().find(|l| l.trim_start().starts_with(op)).map(str::to_string);
        assert!(row("linear.qkv").is_some_and(|r| r.contains("nimbus-cop")), "COP matmuls: {table}");
        for op in ["gelu", "silu"] {
            if let Some(r) = row(op) {
                assert!(r.split_whitespace().nth(1) == Some("nimbus"), "{op} by nimbus: {r}");
            }
        }
    });
}

/// Generated from the registry: every layer-matmul protocol (`nectar_linear::layer::ALL`; BLB's
/// fused blocks apart, `blb_suite.rs`) and every attention-matmul protocol
/// (`nectar_linear::attention::ALL`) end to end on tiny BERT, secure vs the twin, the profile
/// naming the protocol that ran.
#[test]
fn every_linear_protocol_secure_matches_twin() {
    use nectar_model::suite::{Matmul, SharedMatmul};
    let protocol_of = |table: &str, op: &str| -> String {
        let row = table.lines().find(|l| l.trim_start().starts_with(op)).unwrap_or_else(|| panic!("{op} in {table}"));
        row.split_whitespace().nth(1).unwrap_or_default().to_string()
    };
    for p in Matmul::all().filter(|p| !p.fused()) {
        tiny_suite_matches_twin(&format!("bumblebee+matmul={}", p.name()), &["bert"], 15, 1, |table| {
            assert_eq!(protocol_of(table, "linear.qkv"), p.name(), "{table}");
        });
    }
    for p in SharedMatmul::all() {
        tiny_suite_matches_twin(&format!("bumblebee+matmul-shared={}", p.name()), &["bert"], 16, 1, |table| {
            assert_eq!(protocol_of(table, "matmul.qk"), p.name(), "{table}");
        });
    }
    // Embedding lookups on a linear protocol of their own (`embed = nimbus-cop`).
    for p in nectar_model::suite::Embed::all().filter(|p| p.lookup().is_some()) {
        tiny_suite_matches_twin(&format!("bumblebee+embed={}", p.name()), &["bert"], 17, 1, |table| {
            assert_eq!(protocol_of(table, "embed"), p.runs(), "{table}");
        });
    }
}

/// Nimbus's COP (`matmul = nimbus-cop`, `embed = nimbus-cop`) on tiny GPT-2 with the KV cache:
/// every weight is sent once (at the prompt) and reused by the decoding steps, whose row
/// count differs; the greedy tokens equal the twin's.
#[test]
fn tiny_gpt2_cop_reuses_the_weights_across_steps() {
    tiny_suite_matches_twin("bumblebee+matmul=nimbus-cop+embed=nimbus-cop", &["gpt2"], 18, 3, |table| {
        assert!(table.contains("nimbus-cop"), "{table}");
    });
}
