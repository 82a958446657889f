//! A checkpoint's tensors against the ones its config implies (`nectar_model::shapes`), on the
//! tiny checkpoints of every architecture.

use nectar_bench::fixtures::tiny;
use nectar_model::shapes::check_shapes;
use nectar_model::{ModelConfig, Weights};

#[test]
fn tiny_models_match_and_a_changed_config_does_not() {
    let dir = tempfile::tempdir().unwrap();
    for (i, write) in [
        tiny::write_tiny_bert as fn(&std::path::Path, u64) -> Result<(), nectar_model::ModelError>,
        tiny::write_tiny_gpt2,
        tiny::write_tiny_llama,
        tiny::write_tiny_vit,
    ]
    .into_iter()
    .enumerate()
    {
        let d = dir.path().join(i.to_string());
        std::fs::create_dir_all(&d).unwrap();
        write(&d, 1).unwrap();
        let cfg = ModelConfig::from_file(&d.join("config.json")).unwrap();
        let w = Weights::open(&d.join("model.safetensors")).unwrap();
        assert!(check_shapes(&cfg, &w).unwrap() > 10);
    }
    let d = dir.path().join("1");
    let text = std::fs::read_to_string(d.join("config.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["n_inner"] = serde_json::json!(1000);
    let cfg = ModelConfig::from_json_str(&v.to_string(), &d.join("config.json")).unwrap();
    let w = Weights::open(&d.join("model.safetensors")).unwrap();
    let e = check_shapes(&cfg, &w).unwrap_err().to_string();
    assert!(e.contains("h.0.mlp.c_fc.weight") && e.contains("expected"), "{e}");
}
