//! `nectar report FILE.jsonl --html OUT.html`: one self-contained HTML page of the per-operator
//! time and bytes of each run in a file of bench JSON lines (`nectar bench suites --json`,
//! e.g. `docs/results/suites.jsonl`).
//!
//! The page holds inline SVG bar charts and tables only: no script, no stylesheet or font
//! from elsewhere, nothing fetched, so it opens offline and can be attached to a report.
//! Charts: totals per run (seconds, MB), then per operator the seconds and the MB (both
//! directions) of every run side by side; the part spent in input-independent preprocessing
//! (`prepro_seconds`, `prepro_bytes`, ROTL) is drawn as a lighter overlay on its bar.

use serde_json::Value;
use std::fmt::Write;
use std::path::Path;

/// One run (one JSON line with a per-operator breakdown).
#[derive(Clone, Debug)]
pub struct Run {
    /// The suite (or variant) label.
    pub label: String,
    pub seconds: f64,
    pub bytes_total: u64,
    pub ops: Vec<Op>,
}

/// One operator row of a run's profile.
#[derive(Clone, Debug)]
pub struct Op {
    pub op: String,
    pub protocol: String,
    pub seconds: f64,
    pub bytes: u64,
    pub prepro_seconds: f64,
    pub prepro_bytes: u64,
}

/// Colours of the runs, in order (repeated past eight runs).
const PALETTE: [&str; 8] = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"];

/// Runs of `text` (JSON lines): each line with `breakdown.ops` (a bench line) or
/// `totals.breakdown.ops` (`nectar demo --json`). Lines without one are not runs and are left out; a line that is
/// not JSON is an error naming it.
pub fn parse_runs(text: &str) -> Result<Vec<Run>, String> {
    let mut runs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| format!("line {}: not JSON: {e}", i + 1))?;
        let (obj, ops) = match (v.pointer("/breakdown/ops"), v.pointer("/totals/breakdown/ops")) {
            (Some(ops), _) => (&v, ops),
            (None, Some(ops)) => (&v["totals"], ops),
            (None, None) => continue,
        };
        let label = obj
            .get("variant")
            .or_else(|| obj.get("suite"))
            .and_then(Value::as_str)
            .map_or_else(|| format!("run {}", runs.len() + 1), str::to_string);
        let num = |o: &Value, k: &str| o.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let int = |o: &Value, k: &str| o.get(k).and_then(Value::as_u64).unwrap_or(0);
        let ops = ops
            .as_array()
            .ok_or_else(|| format!("line {}: breakdown.ops is not an array", i + 1))?
            .iter()
            .map(|o| Op {
                op: o.get("op").and_then(Value::as_str).unwrap_or("?").to_string(),
                protocol: o.get("protocol").and_then(Value::as_str).unwrap_or("").to_string(),
                seconds: num(o, "seconds"),
                bytes: int(o, "bytes_sent") + int(o, "bytes_recv"),
                prepro_seconds: num(o, "prepro_seconds"),
                prepro_bytes: int(o, "prepro_bytes"),
            })
            .collect();
        runs.push(Run { label, seconds: num(obj, "seconds"), bytes_total: int(obj, "bytes_total"), ops });
    }
    Ok(runs)
}

/// Text for XML / HTML content and attribute values.
fn esc(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&#39;".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// One bar of a chart: its value, the part of it in preprocessing, the run it belongs to.
struct Bar {
    value: f64,
    prepro: f64,
    run: usize,
}

/// A horizontal grouped bar chart: one group per label, one bar per run in the group. Every
/// bar is a `<rect class="bar">` with `data-run`, `data-label` and `data-value` attributes (so
/// the chart can be read back), its width proportional to the value.
fn bar_chart(title: &str, unit: &str, groups: &[(String, Vec<Bar>)], runs: &[Run]) -> String {
    let (label_w, plot_w, bar_h, gap) = (170.0, 560.0, 12.0, 10.0);
    let max = groups.iter().flat_map(|(_, b)| b.iter().map(|b| b.value)).fold(0.0f64, f64::max).max(f64::MIN_POSITIVE);
    let group_h = |n: usize| n as f64 * bar_h + gap;
    let height = 30.0 + groups.iter().map(|(_, b)| group_h(b.len())).sum::<f64>() + 10.0;
    let width = label_w + plot_w + 90.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="{t}"><title>{t}</title>"#,
        t = esc(title)
    );
    let _ = write!(s, r#"<text x="0" y="16" class="title">{}</text>"#, esc(title));
    let mut y = 30.0;
    for (label, bars) in groups {
        let mid = y + bars.len() as f64 * bar_h / 2.0 + 4.0;
        let _ = write!(s, r#"<text x="{:.1}" y="{mid:.1}" class="label" text-anchor="end">{}</text>"#, label_w - 8.0, esc(label));
        for b in bars {
            let w = b.value / max * plot_w;
            let run = &runs[b.run];
            let _ = write!(
                s,
                r#"<rect class="bar" x="{label_w:.1}" y="{y:.1}" width="{w:.2}" height="{:.1}" fill="{}" data-run="{}" data-label="{}" data-value="{}"><title>{}: {} {} {unit}</title></rect>"#,
                bar_h - 2.0,
                PALETTE[b.run % PALETTE.len()],
                esc(&run.label),
                esc(label),
                b.value,
                esc(&run.label),
                esc(label),
                fmt_num(b.value),
            );
            if b.prepro > 0.0 {
                let pw = b.prepro.min(b.value) / max * plot_w;
                let _ = write!(
                    s,
                    r#"<rect class="prepro" x="{label_w:.1}" y="{y:.1}" width="{pw:.2}" height="{:.1}" fill="white" fill-opacity="0.45"><title>preprocessing {} {unit}</title></rect>"#,
                    bar_h - 2.0,
                    fmt_num(b.prepro)
                );
            }
            let _ = write!(s, r#"<text x="{:.1}" y="{:.1}" class="value">{}</text>"#, label_w + w + 4.0, y + bar_h - 3.0, fmt_num(b.value));
            y += bar_h;
        }
        y += gap;
    }
    s.push_str("</svg>");
    s
}

fn fmt_num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The whole page for `runs` (read from `source`).
pub fn render(runs: &[Run], source: &str) -> String {
    // Operators in order of their largest time over the runs.
    let mut names: Vec<String> = Vec::new();
    for r in runs {
        for o in &r.ops {
            if !names.contains(&o.op) {
                names.push(o.op.clone());
            }
        }
    }
    let worst = |n: &str| runs.iter().flat_map(|r| r.ops.iter().filter(|o| o.op == n).map(|o| o.seconds)).fold(0.0f64, f64::max);
    names.sort_by(|a, b| worst(b).total_cmp(&worst(a)));
    let per_op = |f: &dyn Fn(&Op) -> (f64, f64)| -> Vec<(String, Vec<Bar>)> {
        names
            .iter()
            .map(|n| {
                let bars = runs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| r.ops.iter().find(|o| &o.op == n).map(|o| (i, f(o))))
                    .map(|(run, (value, prepro))| Bar { value, prepro, run })
                    .collect();
                (n.clone(), bars)
            })
            .collect()
    };
    // One chart per unit: a group per run, of its one bar.
    let per_run = |f: &dyn Fn(&Run) -> f64| -> Vec<(String, Vec<Bar>)> {
        runs.iter().enumerate().map(|(run, r)| (r.label.clone(), vec![Bar { value: f(r), prepro: 0.0, run }])).collect()
    };
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>nectar report</title><style>");
    h.push_str(
        "body{font-family:system-ui,sans-serif;margin:2em;color:#222}svg text{font-size:11px;font-family:system-ui,sans-serif}\
         svg .title{font-size:13px;font-weight:600}table{border-collapse:collapse;font-size:12px;margin:1em 0}\
         td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th:first-child,td:first-child{text-align:left}\
         .key span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}",
    );
    h.push_str("</style></head><body>\n");
    let _ = writeln!(h, "<h1>nectar: per-operator time and communication</h1><p>From <code>{}</code>: {} runs (client's view of the profile). Lighter part of a bar: input-independent preprocessing.</p>", esc(source), runs.len());
    h.push_str("<p class=\"key\">");
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(h, "<span style=\"background:{}\"></span>{}", PALETTE[i % PALETTE.len()], esc(&r.label));
    }
    h.push_str("</p>\n");
    let _ = writeln!(h, "<h2>Totals</h2>{}", bar_chart("Seconds per run", "s", &per_run(&|r| r.seconds), runs));
    let _ = writeln!(h, "{}", bar_chart("MB per run (both directions)", "MB", &per_run(&|r| r.bytes_total as f64 / 1e6), runs));
    let secs = per_op(&|o| (o.seconds, o.prepro_seconds));
    let _ = writeln!(h, "<h2>Time per operator</h2>{}", bar_chart("Seconds per operator", "s", &secs, runs));
    let mb = per_op(&|o| (o.bytes as f64 / 1e6, o.prepro_bytes as f64 / 1e6));
    let _ = writeln!(h, "<h2>Communication per operator</h2>{}", bar_chart("MB per operator (both directions)", "MB", &mb, runs));
    // The numbers, for reading off.
    h.push_str("<h2>Table</h2><table><tr><th>operator</th>");
    for r in runs {
        let _ = write!(h, "<th colspan=\"3\">{}</th>", esc(&r.label));
    }
    h.push_str("</tr><tr><th></th>");
    for _ in runs {
        h.push_str("<th>protocol</th><th>s</th><th>MB</th>");
    }
    h.push_str("</tr>\n");
    for n in &names {
        let _ = write!(h, "<tr><td>{}</td>", esc(n));
        for r in runs {
            match r.ops.iter().find(|o| &o.op == n) {
                Some(o) => {
                    let _ = write!(h, "<td>{}</td><td>{:.3}</td><td>{:.1}</td>", esc(&o.protocol), o.seconds, o.bytes as f64 / 1e6);
                }
                None => h.push_str("<td></td><td></td><td></td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></body></html>\n");
    h
}

/// `nectar report FILE --html OUT`.
pub fn run(file: &Path, html: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let runs = parse_runs(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    if runs.is_empty() {
        return Err(format!(
            "{}: no line with a per-operator breakdown (expected `nectar bench suites --json` lines)",
            file.display()
        ));
    }
    let page = render(&runs, &file.display().to_string());
    std::fs::write(html, page).map_err(|e| format!("{}: {e}", html.display()))?;
    eprintln!("wrote {} ({} runs)", html.display(), runs.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"bench":"suites","variant":"a<b","seconds":2.0,"bytes_total":3000000,"breakdown":{"ops":[{"op":"gelu","protocol":"seg4","seconds":1.5,"bytes_sent":1000000,"bytes_recv":500000,"prepro_bytes":0,"prepro_seconds":0.0},{"op":"softmax","protocol":"lut","seconds":0.5,"bytes_sent":10,"bytes_recv":0,"prepro_bytes":5,"prepro_seconds":0.25}]}}"#;

    #[test]
    fn parses_and_escapes() -> Result<(), String> {
        let runs = parse_runs(&format!("{LINE}\n{{\"bench\":\"net\"}}\n"))?;
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].ops[0].bytes, 1_500_000);
        let page = render(&runs, "x.jsonl");
        assert!(page.contains("a&lt;b") && !page.contains("a<b"));
        assert_eq!(page.matches("class=\"bar\"").count(), 1 + 1 + 2 + 2);
        assert_eq!(page.matches("class=\"prepro\"").count(), 2);
        assert!(parse_runs("{not json").is_err());
        Ok(())
    }
}
