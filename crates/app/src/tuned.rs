//! The suites `nectar tune` chose, per link (`--suite tuned:LINK`; issue 48 item 3): a small
//! JSON file in `tune/` of nectar's cache, written by [`crate::tune`] and read by
//! [`crate::suites::resolve`].

use serde::Serialize;
use std::path::{Path, PathBuf};

/// Where tune keeps its files: `tune/` in nectar's cache ([`nectar_model::home::default_home`]:
/// `$NECTAR_HOME`, default `~/.cache/nectar/models`).
pub fn tune_dir() -> PathBuf {
    nectar_model::home::default_home().join("tune")
}

/// The file of tuned suites per link (`--suite tuned:LINK`).
fn tuned_path() -> PathBuf {
    tune_dir().join("tuned.json")
}

/// The suite `nectar tune --net LINK` stored last, for `--suite tuned:LINK`.
pub fn tuned_suite(link: &str) -> Result<String, String> {
    let p = tuned_path();
    let text = std::fs::read_to_string(&p)
        .map_err(|_| format!("no tuned suite for link '{link}': run `nectar tune --net {link} --model DIR --tokens N` first"))?;
    let map: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?;
    map.get(link)
        .and_then(|v| v.get("suite"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .ok_or_else(|| format!("no tuned suite for link '{link}' in {}: run `nectar tune --net {link} --model DIR --tokens N` first", p.display()))
}

/// Records `suite` as the tuned suite of `link` (with its predicted and measured seconds).
pub(crate) fn store_tuned(link: &str, suite: &str, predicted: f64, measured: Option<f64>, model: &Path, tokens: usize) -> Result<(), String> {
    let p = tuned_path();
    let mut map: serde_json::Map<String, serde_json::Value> =
        std::fs::read_to_string(&p).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    map.insert(
        link.to_string(),
        serde_json::json!({ "suite": suite, "predicted_seconds": predicted, "measured_seconds": measured, "model": model.display().to_string(), "tokens": tokens }),
    );
    write_json(&p, &serde_json::Value::Object(map))
}

/// Writes `v` as pretty JSON to `p`, creating its directory.
pub(crate) fn write_json(p: &Path, v: &impl Serialize) -> Result<(), String> {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let text = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
    std::fs::write(p, text + "\n").map_err(|e| format!("{}: {e}", p.display()))
}
