//! `nectar report FILE.jsonl --html OUT.html`: one self-contained HTML page of the per-operator
//! time and bytes of each run in a file of bench JSON lines (`nectar bench suites --json`,
//! e.g. `docs/results/suites.jsonl`).
//!
//! The page holds inline SVG bar charts and tables only: no script, no stylesheet or font
//! from elsewhere, nothing fetched, so it opens offline and can be attached to a report.
//! Charts: totals per run (seconds, MB), then per operator the seconds and the MB (both
//! directions) of every run side by side; the part spent in input-independent preprocessing
//! (`prepro_seconds`, `prepro_bytes`, ROTL) is drawn as a lighter overlay on its bar. When the
//! runs went through more than one simulated link (`params.net`), a first chart gives the
//! seconds of each suite on each link (issue 48, the WAN page's chart; [`links_svg`] writes it
//! alone for `docs/results/wan.md`). Labels of any length are drawn whole: the label column is
//! as wide as the longest label.

use serde_json::Value;
use std::fmt::Write;
use std::path::Path;

/// One run (one JSON line with a per-operator breakdown).
#[derive(Clone, Debug)]
pub struct Run {
    /// The suite (or variant) label.
    pub label: String,
    /// The simulated link it ran through (`params.net`), if the line names one.
    pub net: Option<String>,
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
        let net = v.pointer("/params/net").and_then(Value::as_str).map(str::to_string);
        runs.push(Run { label, net, seconds: num(obj, "seconds"), bytes_total: int(obj, "bytes_total"), ops });
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

/// One bar of a chart: its value, the part of it in preprocessing, the run it belongs to and
/// its colour (the run's, or its link's in the per-link chart).
struct Bar {
    value: f64,
    prepro: f64,
    run: usize,
    colour: usize,
}

/// Width of the label column for `labels`: about 6.5 px per character at the 11 px font, so
/// that no label is cut (at least 170 px).
fn label_width<'a>(labels: impl Iterator<Item = &'a str>) -> f64 {
    let longest = labels.map(|l| l.chars().count()).max().unwrap_or(0);
    (longest as f64 * 6.5 + 16.0).max(170.0)
}

/// A horizontal grouped bar chart: one group per label, one bar per run in the group. Every
/// bar is a `<rect class="bar">` with `data-run`, `data-label` and `data-value` attributes (so
/// the chart can be read back), its width proportional to the value.
fn bar_chart(title: &str, unit: &str, groups: &[(String, Vec<Bar>)], runs: &[Run]) -> String {
    let (plot_w, bar_h, gap) = (560.0, 12.0, 10.0);
    let label_w = label_width(groups.iter().map(|(l, _)| l.as_str()));
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
                PALETTE[b.colour % PALETTE.len()],
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

/// The links of `runs` in order of first appearance (runs without one left out).
fn links(runs: &[Run]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in runs.iter().filter_map(|r| r.net.as_ref()) {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

/// Seconds of every suite on every link: a group per suite (in order of first appearance), a
/// bar per link coloured by the link, with its key; `None` when the runs name fewer than two
/// links.
fn links_chart(runs: &[Run]) -> Option<String> {
    let nets = links(runs);
    if nets.len() < 2 {
        return None;
    }
    let mut suites: Vec<&str> = Vec::new();
    for r in runs {
        if !suites.contains(&r.label.as_str()) {
            suites.push(&r.label);
        }
    }
    let groups: Vec<(String, Vec<Bar>)> = suites
        .iter()
        .map(|s| {
            let bars = runs
                .iter()
                .enumerate()
                .filter(|(_, r)| r.label == *s)
                .filter_map(|(run, r)| {
                    let link = nets.iter().position(|n| Some(n) == r.net.as_ref())?;
                    Some(Bar { value: r.seconds, prepro: 0.0, run, colour: link })
                })
                .collect();
            (s.to_string(), bars)
        })
        .collect();
    let mut key = String::from("<p class=\"key\">links:");
    for (i, n) in nets.iter().enumerate() {
        let _ = write!(key, "<span style=\"background:{}\"></span>{}", PALETTE[i % PALETTE.len()], esc(n));
    }
    key.push_str("</p>");
    Some(format!("{key}{}", bar_chart("Seconds per suite, one bar per link", "s", &groups, runs)))
}

/// The per-link chart of `runs` alone as an SVG document (for a Markdown page); an error when
/// the runs name fewer than two links. The bars are coloured by link in the order of
/// [`links`], named in each bar's tooltip (`data-run` holds the run's suite and link).
pub fn links_svg(runs: &[Run]) -> Result<String, String> {
    let nets = links(runs);
    if nets.len() < 2 {
        return Err(format!("the runs name {} simulated link(s); a per-link chart needs two or more", nets.len()));
    }
    let labelled: Vec<Run> = runs
        .iter()
        .map(|r| Run { label: format!("{} @ {}", r.label, r.net.as_deref().unwrap_or("?")), ..r.clone() })
        .collect();
    let mut groups: Vec<(String, Vec<Bar>)> = Vec::new();
    for (run, r) in runs.iter().enumerate() {
        let Some(link) = nets.iter().position(|n| Some(n) == r.net.as_ref()) else { continue };
        let bar = Bar { value: r.seconds, prepro: 0.0, run, colour: link };
        match groups.iter_mut().find(|(l, _)| *l == r.label) {
            Some((_, bars)) => bars.push(bar),
            None => groups.push((r.label.clone(), vec![bar])),
        }
    }
    let key: Vec<String> = nets.iter().enumerate().map(|(i, n)| format!("{} = {}", colour_name(i), n)).collect();
    let title = format!("Seconds per suite and link ({})", key.join(", "));
    // A standalone document: the page's font sizes, which the label column is measured for.
    let style = "<style>text{font-size:11px;font-family:system-ui,sans-serif}.title{font-size:13px;font-weight:600}</style>";
    let chart = bar_chart(&title, "s", &groups, &labelled);
    Ok(match chart.find('>') {
        Some(i) => format!("{}{style}{}", &chart[..=i], &chart[i + 1..]),
        None => chart,
    })
}

/// Plain names of the [`PALETTE`] colours, for a key written as text.
fn colour_name(i: usize) -> &'static str {
    ["blue", "orange", "green", "red", "teal", "yellow", "purple", "brown"][i % PALETTE.len()]
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
                    .map(|(run, (value, prepro))| Bar { value, prepro, run, colour: run })
                    .collect();
                (n.clone(), bars)
            })
            .collect()
    };
    // One chart per unit: a group per run, of its one bar.
    let per_run = |f: &dyn Fn(&Run) -> f64| -> Vec<(String, Vec<Bar>)> {
        runs.iter().enumerate().map(|(run, r)| (r.label.clone(), vec![Bar { value: f(r), prepro: 0.0, run, colour: run }])).collect()
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
    if let Some(chart) = links_chart(runs) {
        let _ = writeln!(h, "<h2>Seconds per suite and link</h2>{chart}");
    }
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

/// `nectar report FILE [--html OUT] [--links-svg OUT]`.
pub fn run(file: &Path, html: Option<&Path>, links: Option<&Path>) -> Result<(), String> {
    if html.is_none() && links.is_none() {
        return Err("nectar report: give --html OUT.html, --links-svg OUT.svg or both".into());
    }
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let runs = parse_runs(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    if runs.is_empty() {
        return Err(format!(
            "{}: no line with a per-operator breakdown (expected `nectar bench suites --json` lines)",
            file.display()
        ));
    }
    if let Some(html) = html {
        let page = render(&runs, &file.display().to_string());
        std::fs::write(html, page).map_err(|e| format!("{}: {e}", html.display()))?;
        eprintln!("wrote {} ({} runs)", html.display(), runs.len());
    }
    if let Some(svg) = links {
        let chart = links_svg(&runs).map_err(|e| format!("{}: {e}", file.display()))?;
        std::fs::write(svg, chart).map_err(|e| format!("{}: {e}", svg.display()))?;
        eprintln!("wrote {} ({} runs)", svg.display(), runs.len());
    }
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

    /// Two links: the per-link chart groups by suite with one bar per link, and a long label
    /// stays whole (the label column widens to hold it).
    #[test]
    fn per_link_chart_and_long_labels() -> Result<(), String> {
        let long = "bumblebee+matmul=ckks+matmul-shared=ckks";
        let line = |label: &str, net: &str, s: f64| LINE.replace("\"a<b\"", &format!("\"{label}\"")).replace("\"seconds\":2.0", &format!("\"params\":{{\"net\":\"{net}\"}},\"seconds\":{s}"));
        let text = [line(long, "lan", 3.0), line(long, "blb-wan3", 30.0), line("nectar", "lan", 1.0), line("nectar", "blb-wan3", 9.0)].join("\n");
        let runs = parse_runs(&text)?;
        assert_eq!(runs[1].net.as_deref(), Some("blb-wan3"));
        let svg = links_svg(&runs)?;
        assert_eq!(svg.matches("class=\"bar\"").count(), 4);
        assert!(svg.contains(&format!(">{long}</text>")));
        // the label column holds the whole label: its right edge leaves room for every character
        assert!(label_width([long].into_iter()) >= long.len() as f64 * 6.5);
        assert!(svg.contains("blue = lan, orange = blb-wan3"));
        let page = render(&runs, "x.jsonl");
        assert!(page.contains("Seconds per suite and link"));
        assert!(links_svg(&runs[..1]).is_err());
        Ok(())
    }
}
