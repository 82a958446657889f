//! `nectar suites` and the one way every command resolves its suite (`--suite`, `--op`,
//! `--suite-file`): the grammar is [`nectar_model::Suite`]'s.

use nectar_model::suite::{Suite, PRESETS};
use std::path::Path;

/// The suite of `serve`, `infer`, `demo`, `accuracy` and the Python package when none is named.
pub const DEFAULT_SUITE: &str = "nectar";

/// The suite of the share-level benches (`bench nn`, `bench linear`) when none is named: the
/// paper's protocols, whose tables they are compared with.
pub const BENCH_SUITE: &str = "bumblebee";

/// `--suite SPEC` (`None`: `default`) or `--suite-file FILE`, with the `--op` overrides on top.
/// Not validated: callers that run the suite call [`Suite::validate`].
pub fn resolve(spec: Option<&str>, file: Option<&Path>, ops: &[String], default: &str) -> Result<Suite, String> {
    let mut s = match (spec, file) {
        (Some(_), Some(_)) => return Err("give either --suite or --suite-file, not both".into()),
        (_, Some(f)) => {
            let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            Suite::from_toml(&text).map_err(|e| format!("{}: {e}", f.display()))?
        }
        (Some(spec), None) if spec.starts_with("tuned:") => {
            let tuned = crate::tuned::tuned_suite(&spec["tuned:".len()..])?;
            Suite::parse(&tuned).map_err(|e| format!("{spec} ({tuned}): {e}"))?
        }
        (spec, None) => Suite::parse(spec.unwrap_or(default)).map_err(|e| e.to_string())?,
    };
    for o in ops {
        s.apply_overrides(o).map_err(|e| e.to_string())?;
    }
    Ok(s)
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The README's suites × operators table (a test keeps README.md equal to it).
pub fn markdown_table() -> String {
    let presets: Vec<(&str, Suite)> = PRESETS.iter().filter_map(|(n, _)| Suite::preset(n).ok().map(|s| (*n, s))).collect();
    let mut out = String::from("| operator |");
    for (n, _) in &presets {
        out.push_str(&format!(" `{n}` |"));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(presets.len()));
    out.push('\n');
    let entries: Vec<_> = presets.iter().map(|(_, s)| s.entries()).collect();
    for (i, e) in entries[0].iter().enumerate() {
        out.push_str(&format!("| {} |", e.operator));
        for es in &entries {
            let x = &es[i];
            let mark = if x.implemented { "" } else { " (planned)" };
            out.push_str(&format!(" {}{mark} |", x.protocol));
        }
        out.push('\n');
    }
    out.push_str("| **runs today** |");
    for (_, s) in &presets {
        out.push_str(if s.validate().is_ok() { " **yes** |" } else { " no |" });
    }
    out.push('\n');
    out
}

/// Prints the presets (each operator's protocol, implemented or not) and every operator's
/// choices; `markdown`: the README's table.
pub fn print(json: bool, markdown: bool) {
    if markdown {
        out!("{}", markdown_table());
        return;
    }
    if json {
        for (name, about) in PRESETS {
            let Ok(s) = Suite::preset(name) else { continue };
            let ops: serde_json::Map<String, serde_json::Value> = s
                .entries()
                .into_iter()
                .map(|e| (e.operator.to_string(), serde_json::json!({ "protocol": e.protocol, "implemented": e.implemented })))
                .collect();
            let o = serde_json::json!({
                "preset": name,
                "about": about,
                "runs": s.validate().is_ok(),
                "missing": s.validate().err().map(|e| e.to_string()),
                "ops": ops,
            });
            outln!("{o}");
        }
        for c in Suite::catalogue() {
            let choices: Vec<serde_json::Value> = c
                .choices
                .iter()
                .map(|(n, src, imp)| serde_json::json!({ "protocol": n, "source": src, "implemented": imp }))
                .collect();
            outln!("{}", serde_json::json!({ "operator": c.operator, "choices": choices }));
        }
        return;
    }
    outln!("presets (--suite NAME; override one operator with --op OP=PROTO):");
    for (name, about) in PRESETS {
        let Ok(s) = Suite::preset(name) else { continue };
        let status = match s.validate() {
            Ok(()) => "runs today".to_string(),
            Err(e) => format!("not runnable yet: {e}"),
        };
        outln!("\n  {name}: {about}\n    {status}");
        let base = Suite::bumblebee();
        for (e, b) in s.entries().into_iter().zip(base.entries()) {
            let mark = if name != "bumblebee" && e.protocol != b.protocol { "*" } else { " " };
            outln!("    {mark} {:<14} {:<17} implemented: {}", e.operator, e.protocol, yes_no(e.implemented));
        }
    }
    outln!("\noperators and their protocols:");
    outln!("  {:<14} {:<17} {:<12} source", "operator", "protocol", "implemented");
    for c in Suite::catalogue() {
        for (i, (n, src, imp)) in c.choices.iter().enumerate() {
            let op = if i == 0 { c.operator } else { "" };
            outln!("  {op:<14} {n:<17} {:<12} {src}", yes_no(*imp));
        }
    }
}

#[cfg(test)]
mod tests {
    /// README.md's suite table is the code's (`nectar suites --markdown`).
    #[test]
    fn readme_table_is_the_codes() {
        let readme = include_str!("../../../README.md");
        let table = super::markdown_table();
        assert!(readme.contains(&table), "README.md's suite table is stale; paste `nectar suites --markdown`:\n{table}");
    }
}
