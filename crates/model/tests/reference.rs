//! The plaintext Rust forwards against an independent float64 numpy implementation
//! (`tests/ref_numpy.py`) on deterministic tiny checkpoints.

use std::path::Path;
use std::process::Command;

use nectar_model::{Model, Network};
use nectar_bench::fixtures::tiny;
use serde_json::Value;

const TOL: f64 = 1e-4;

fn numpy(args: &[&str]) -> Value {
    let probe = Command::new("python3")
        .args(["-c", "import numpy"])
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        _ => panic!("python3 with numpy is required for the reference tests: run `pip install numpy` (`make test` does it)"),
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("ref_numpy.py");
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "ref_numpy.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("ref_numpy.py output is JSON")
}

fn floats(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(a) => a.iter().flat_map(floats).collect(),
        Value::Number(n) => vec![n.as_f64().unwrap()],
        other => panic!("not a number array: {other}"),
    }
}

fn assert_close(what: &str, got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let worst = got
        .iter()
        .zip(want)
        .map(|(&g, &w)| (g as f64 - w).abs())
        .fold(0.0, f64::max);
    assert!(worst < TOL, "{what}: max abs error {worst:e} >= {TOL:e}");
}

fn ids_arg(ids: &[u32]) -> String {
    ids.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn tiny_bert_matches_numpy() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(dir.path(), 7).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let Network::Bert(bert) = model.network() else {
        panic!("not bert")
    };
    assert!(bert.has_classifier());
    for ids in [
        vec![1u32, 17, 42, 3, 9, 2],
        vec![5],
        (0..tiny::BERT_MAX_POS as u32).collect(),
    ] {
        let r = numpy(&["bert", dir.path().to_str().unwrap(), &ids_arg(&ids)]);
        assert_close(
            "hidden",
            &bert.forward_ids(&ids).unwrap(),
            &floats(&r["hidden"]),
        );
        assert_close(
            "embedding",
            &bert.embed_ids(&ids).unwrap(),
            &floats(&r["embedding"]),
        );
        assert_close(
            "logits",
            &bert.classify_ids(&ids).unwrap(),
            &floats(&r["logits"]),
        );
    }
}

#[test]
fn tiny_bert_padding_is_masked() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(dir.path(), 8).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let Network::Bert(bert) = model.network() else {
        panic!("not bert")
    };
    let plain = bert.embed_ids(&[1, 20, 30, 2]).unwrap();
    let padded = bert
        .embed(&[1, 20, 30, 2, 0, 0, 0], &[0; 7], &[1, 1, 1, 1, 0, 0, 0])
        .unwrap();
    assert_close(
        "padded embedding",
        &padded,
        &plain.iter().map(|&x| x as f64).collect::<Vec<_>>(),
    );
}

#[test]
fn tiny_gpt2_matches_numpy() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_gpt2(dir.path(), 11).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let Network::Gpt2(gpt2) = model.network() else {
        panic!("not gpt2")
    };
    let prompt = [3u32, 14, 15, 9, 26];
    let n_new = 10;
    let r = numpy(&[
        "gpt2",
        dir.path().to_str().unwrap(),
        &ids_arg(&prompt),
        &n_new.to_string(),
    ]);
    assert_close(
        "logits",
        &gpt2.next_token_logits(&prompt).unwrap(),
        &floats(&r["logits"]),
    );
    let want: Vec<u32> = floats(&r["generated"]).iter().map(|&x| x as u32).collect();
    assert_eq!(
        gpt2.generate(&prompt, n_new).unwrap(),
        want,
        "greedy tokens (KV cache vs recomputation)"
    );
}

#[test]
fn tiny_llama_matches_numpy() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_llama(dir.path(), 13).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let Network::Llama(llama) = model.network() else {
        panic!("not llama")
    };
    let prompt = [1u32, 7, 22, 35, 4, 18];
    let n_new = 10;
    let r = numpy(&[
        "llama",
        dir.path().to_str().unwrap(),
        &ids_arg(&prompt),
        &n_new.to_string(),
    ]);
    assert_close(
        "logits",
        &llama.next_token_logits(&prompt).unwrap(),
        &floats(&r["logits"]),
    );
    let want: Vec<u32> = floats(&r["generated"]).iter().map(|&x| x as u32).collect();
    assert_eq!(
        llama.generate(&prompt, n_new).unwrap(),
        want,
        "greedy tokens (KV cache vs recomputation)"
    );
    assert!(model.summary().contains("kv heads:      2"));
}

#[test]
fn tiny_models_are_deterministic_and_summarised() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    tiny::write_tiny_gpt2(a.path(), 5).unwrap();
    tiny::write_tiny_gpt2(b.path(), 5).unwrap();
    let read = |d: &Path| std::fs::read(d.join("model.safetensors")).unwrap();
    assert_eq!(read(a.path()), read(b.path()));
    let s = Model::load(a.path()).unwrap().summary();
    assert!(s.contains("type:          gpt2"), "{s}");
    assert!(s.contains("parameters:"), "{s}");
    let m = Model::load(a.path()).unwrap();
    let e = m.generate("hello", 3).unwrap_err().to_string();
    assert!(e.contains("tokenizer.json"), "{e}");
    let e = m.embed(&["hello"]).unwrap_err().to_string();
    assert!(e.contains("BERT-family"), "{e}");
}

#[test]
fn tiny_vit_matches_numpy() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_vit(dir.path(), 17).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let Network::Vit(vit) = model.network() else {
        panic!("not vit")
    };
    assert_eq!(vit.num_labels(), Some(tiny::VIT_LABELS));
    let s = model.summary();
    assert!(s.contains("8x8x3, patch 4 (4 patches + [CLS])"), "{s}");
    assert!(s.contains("classifier head on [CLS]"), "{s}");
    for seed in [1u64, 2] {
        let px = tiny::tiny_image(tiny::VIT_CHANNELS, tiny::VIT_IMAGE, seed);
        let file = dir.path().join(format!("img{seed}.f32"));
        let raw: Vec<u8> = px.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(&file, raw).unwrap();
        assert_eq!(nectar_model::vit::read_pixels(&file).unwrap(), px);
        let r = numpy(&["vit", dir.path().to_str().unwrap(), file.to_str().unwrap()]);
        assert_close("hidden", &vit.forward(&px).unwrap(), &floats(&r["hidden"]));
        let logits = model.classify_image(&px).unwrap();
        assert_close("logits", &logits, &floats(&r["logits"]));
    }
    // An 8-bit PPM, normalised with HF's default mean/std 0.5 (no preprocessor_config.json).
    let ppm = dir.path().join("img.ppm");
    let mut bytes = b"P6\n8 8\n255\n".to_vec();
    bytes.extend((0..8 * 8 * 3).map(|i| (i * 37 % 256) as u8));
    std::fs::write(&ppm, &bytes).unwrap();
    let px = model.read_image(&ppm).unwrap();
    assert!((px[1] - ((3.0 * 37.0 % 256.0) / 255.0 - 0.5) / 0.5).abs() < 1e-6);
    let file = dir.path().join("ppm.f32");
    let raw: Vec<u8> = px.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&file, raw).unwrap();
    let r = numpy(&["vit", dir.path().to_str().unwrap(), file.to_str().unwrap()]);
    assert_close(
        "ppm logits",
        &model.classify_image(&px).unwrap(),
        &floats(&r["logits"]),
    );
    let e = model.classify_image(&[0.0; 5]).unwrap_err().to_string();
    assert!(e.contains("expected 192"), "{e}");
    let e = model.embed(&["hi"]).unwrap_err().to_string();
    assert!(e.contains("unsupported"), "{e}");
}
