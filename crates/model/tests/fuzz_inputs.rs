//! Fuzzing the parsers of files and client text (issue 18 item 5): `config.json` (arbitrary
//! text and valid configs with random edits), `model.safetensors` (valid files with random bit
//! flips and truncations) and the tokenizer (arbitrary Unicode) must parse or fail with an
//! error — never panic.

use nectar_model::config::ModelConfig;
use nectar_model::{home, Model, Weights};
use nectar_bench::fixtures::tiny;
use proptest::collection::vec;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A tiny BERT and a tiny GPT-2 directory (written once).
fn dirs() -> &'static (tempfile::TempDir, PathBuf, PathBuf) {
    static D: OnceLock<(tempfile::TempDir, PathBuf, PathBuf)> = OnceLock::new();
    D.get_or_init(|| {
        let t = tempfile::tempdir().unwrap();
        let (b, g) = (t.path().join("bert"), t.path().join("gpt2"));
        std::fs::create_dir_all(&b).unwrap();
        std::fs::create_dir_all(&g).unwrap();
        tiny::write_tiny_bert(&b, 1).unwrap();
        tiny::write_tiny_gpt2(&g, 2).unwrap();
        (t, b, g)
    })
}

fn mutate(base: &[u8], flips: &[(usize, u8)], cut: usize) -> Vec<u8> {
    let mut b = base.to_vec();
    for &(i, x) in flips {
        let k = i % b.len();
        b[k] ^= x;
    }
    b.truncate(cut % (b.len() + 1));
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_config_text_is_an_error_not_a_panic(text in ".{0,400}") {
        let _ = ModelConfig::from_json_str(&text, Path::new("config.json"));
    }

    #[test]
    fn edited_configs_are_errors_not_panics(flips in vec((any::<usize>(), any::<u8>()), 1..8), cut in any::<usize>()) {
        for d in [&dirs().1, &dirs().2] {
            let base = std::fs::read(d.join("config.json")).unwrap();
            let text = String::from_utf8_lossy(&mutate(&base, &flips, cut)).into_owned();
            let _ = ModelConfig::from_json_str(&text, Path::new("config.json"));
        }
    }

    #[test]
    fn corrupted_safetensors_are_errors_not_panics(flips in vec((any::<usize>(), any::<u8>()), 1..16), cut in any::<usize>()) {
        let (t, bert, _) = dirs();
        let base = std::fs::read(bert.join("model.safetensors")).unwrap();
        // Corrupt the header region most of the time (where the parser works).
        let head: Vec<(usize, u8)> = flips.iter().map(|&(i, x)| (i % 512, x)).collect();
        let bytes = mutate(&base, &head, cut);
        let path = t.path().join(format!("fuzz-{}.safetensors", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(w) = Weights::open(&path) {
            // A file that still opens must answer tensor reads with values or errors.
            for name in w.names().iter().map(|s| s.to_string()).collect::<Vec<_>>() {
                let shape = w.shape(&name).map(|s| s.to_vec()).unwrap_or_default();
                let _ = w.tensor(&name, &shape);
            }
        }
        let _ = std::fs::remove_file(&path);
    }
}

/// The client's text goes through the MiniLM tokenizer: arbitrary Unicode is encoded or
/// refused, never a panic.
#[test]
fn tokenizer_takes_arbitrary_text() {
    let dir = home::minilm_dir(&home::default_home());
    let model = Model::load(&dir).expect("MiniLM (make test fetches it: nectar fetch-model minilm)");
    let tok = model.tokenizer().expect("MiniLM has a tokenizer");
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig { cases: 64, ..ProptestConfig::default() });
    runner
        .run(&"\\PC{0,300}", |text| {
            let _ = tok.encode(&text);
            Ok(())
        })
        .unwrap();
    for nasty in ["", "\u{0}", "\u{202e}abc", &"é".repeat(5000), "[CLS][SEP][PAD]", "\u{feff}\u{200b}"] {
        let _ = tok.encode(nasty);
    }
}
