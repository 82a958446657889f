//! `nectar params`: the HE parameter sets and the statistical security per session of each
//! suite ([`nectar_model::suite::security`]).

use nectar_model::suite::security::report;
use nectar_model::suite::PRESETS;
use nectar_model::Suite;

/// Prints the report of `suite` (or of every preset), as text or JSON lines.
pub fn run(suite: Option<&Suite>, json: bool) -> Result<(), String> {
    let suites: Vec<(String, Result<Suite, String>)> = match suite {
        Some(s) => vec![(s.label(), Ok(*s))],
        None => PRESETS
            .iter()
            .map(|(name, _)| (name.to_string(), Suite::preset(name).map_err(|e| e.to_string())))
            .collect(),
    };
    for (name, s) in suites {
        let r = s.and_then(|s| report(&s).map_err(|e| e.to_string()));
        match (r, json) {
            (Ok(r), true) => outln!("{}", serde_json::to_string(&r).map_err(|e| e.to_string())?),
            (Err(e), true) => outln!("{}", serde_json::json!({ "suite": name, "error": e })),
            (Err(e), false) => outln!("{name}: cannot assess ({e})\n"),
            (Ok(r), false) => {
                let bits = r.session_bits.map_or("perfect (no statistical step)".to_string(), |b| format!("{b} bits"));
                outln!("{}: statistical security per session {bits}", r.suite);
                for h in &r.he {
                    outln!(
                        "  HE {:<5} N = {:>5}  log2(qP) = {:>3} (128-bit bound {:>3})  log2 t = {:>3}  σ = {:.2}",
                        h.role, h.n, h.log_qp, h.max_log_qp_128, h.log_t, h.error_sigma
                    );
                }
                for s in &r.statistical {
                    let b = s.session_bits.map_or("perfect".to_string(), |b| format!("{b} bits"));
                    outln!("  {:<40} {b:>8}  {}", s.step, s.detail);
                }
                outln!();
            }
        }
    }
    Ok(())
}
