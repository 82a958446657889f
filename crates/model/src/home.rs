//! The model cache: where fetched models live (`nectar fetch-model` fills it; every command
//! that defaults to MiniLM reads it): MiniLM (`minilm/`, an HF directory) and SmolLM2
//! (`smollm2/`, one GGUF file).

use std::path::{Path, PathBuf};

/// Files whose presence means MiniLM is installed.
const MINILM_REQUIRED: [&str; 3] = ["config.json", "model.safetensors", "tokenizer.json"];

/// The model cache: `$NECTAR_HOME` if set, else `~/.cache/nectar/models`.
pub fn default_home() -> PathBuf {
    if let Some(h) = std::env::var_os("NECTAR_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home)
            .join(".cache")
            .join("nectar")
            .join("models"),
        None => PathBuf::from(".nectar").join("models"),
    }
}

/// Where MiniLM lives under `home`.
pub fn minilm_dir(home: &Path) -> PathBuf {
    home.join("minilm")
}

/// Whether `home/minilm` holds every file the loader needs.
pub fn minilm_present(home: &Path) -> bool {
    let dir = minilm_dir(home);
    MINILM_REQUIRED.iter().all(|f| dir.join(f).is_file())
}


/// The SmolLM2-135M-Instruct GGUF file's name (`nectar fetch-model smollm2`).
pub const SMOLLM2_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Where SmolLM2 lives under `home` (a directory holding [`SMOLLM2_FILE`]).
pub fn smollm2_dir(home: &Path) -> PathBuf {
    home.join("smollm2")
}

/// Whether `home/smollm2` holds the GGUF file.
pub fn smollm2_present(home: &Path) -> bool {
    smollm2_dir(home).join(SMOLLM2_FILE).is_file()
}
