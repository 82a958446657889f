//! Broken model directories give one-line errors naming the file and the field or tensor.

use std::path::Path;

use nectar_model::Model;
use nectar_bench::fixtures::tiny;

fn load_err(dir: &Path) -> String {
    let e = Model::load(dir).unwrap_err().to_string();
    assert!(!e.contains('\n'), "multi-line error: {e}");
    e
}

#[test]
fn missing_safetensors() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(dir.path(), 1).unwrap();
    std::fs::remove_file(dir.path().join("model.safetensors")).unwrap();
    let e = load_err(dir.path());
    assert!(e.contains("model.safetensors: cannot open"), "{e}");
}

#[test]
fn truncated_and_garbage_safetensors() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(dir.path(), 1).unwrap();
    let p = dir.path().join("model.safetensors");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 100]).unwrap();
    let e = load_err(dir.path());
    assert!(
        e.contains("model.safetensors: invalid safetensors file"),
        "{e}"
    );
    std::fs::write(&p, b"\xff\xff\xff\xff\xff\xff\xff\x7fgarbage").unwrap();
    let e = load_err(dir.path());
    assert!(
        e.contains("model.safetensors: invalid safetensors file"),
        "{e}"
    );
    std::fs::write(&p, b"abc").unwrap();
    let e = load_err(dir.path());
    assert!(
        e.contains("model.safetensors: invalid safetensors file"),
        "{e}"
    );
}

#[test]
fn wrong_shape_and_missing_tensor() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(dir.path(), 1).unwrap();
    // Config claims a larger hidden size than the weights have.
    let cfg_path = dir.path().join("config.json");
    let cfg = std::fs::read_to_string(&cfg_path)
        .unwrap()
        .replace("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 3");
    std::fs::write(&cfg_path, cfg).unwrap();
    let e = load_err(dir.path());
    assert!(
        e.contains("model.safetensors: missing tensor \"encoder.layer.2."),
        "{e}"
    );
    let cfg = std::fs::read_to_string(&cfg_path)
        .unwrap()
        .replace("\"vocab_size\": 50", "\"vocab_size\": 51");
    std::fs::write(&cfg_path, cfg).unwrap();
    let e = load_err(dir.path());
    assert!(
        e.contains("has shape [50, 16], expected [51, 16]") || e.contains("missing tensor"),
        "{e}"
    );
}

#[test]
fn missing_config_field_and_file() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_gpt2(dir.path(), 1).unwrap();
    let cfg_path = dir.path().join("config.json");
    let cfg = std::fs::read_to_string(&cfg_path)
        .unwrap()
        .replace("\"n_head\"", "\"n_heads\"");
    std::fs::write(&cfg_path, cfg).unwrap();
    let e = load_err(dir.path());
    assert!(e.ends_with("config.json: missing field \"n_head\""), "{e}");
    assert!(e.contains(dir.path().to_str().unwrap()), "{e}");
    std::fs::remove_file(&cfg_path).unwrap();
    let e = load_err(dir.path());
    assert!(e.contains("config.json: cannot read"), "{e}");
    let e = load_err(&dir.path().join("nope"));
    assert!(e.contains("model directory not found"), "{e}");
}

#[test]
fn vit_and_llama_configs_load_without_forward() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"model_type":"llama","vocab_size":32000,"hidden_size":2048,"num_hidden_layers":22,
        "num_attention_heads":32,"num_key_value_heads":4,"intermediate_size":5632,
        "max_position_embeddings":2048,"rms_norm_eps":1e-5}"#,
    )
    .unwrap();
    let m = Model::load(dir.path()).unwrap();
    let s = m.summary();
    assert!(s.contains("kv heads:      4"), "{s}");
    let e = m.generate_ids(&[1], 1).unwrap_err().to_string();
    assert_eq!(
        e,
        format!("unsupported: plaintext generation needs the weights: {} has no model.safetensors", dir.path().display())
    );
}
