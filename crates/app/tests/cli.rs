//! End-to-end checks of the `nectar` binary.

use std::process::Command;

fn nectar() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nectar"))
}

#[test]
fn bench_net_json_lines_follow_the_convention() {
    let out = nectar().args(["bench", "net", "--mb", "4", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect();
    let variants: Vec<&str> = lines.iter().map(|l| l["variant"].as_str().unwrap()).collect();
    assert_eq!(variants, ["mem", "tcp-loopback", "sim-lan", "sim-wan"]);
    for l in &lines {
        for k in ["bench", "variant", "params", "seconds", "bytes_sent", "bytes_recv", "bytes_total", "rounds", "peak_rss_bytes"] {
            assert!(l.get(k).is_some(), "missing {k} in {l}");
        }
        assert!(l["params"].is_object());
        // 4 frames of 1 MiB (4 MB rounds up to 4 frames) plus their headers, then a 1-byte ack.
        assert_eq!(l["bytes_sent"].as_u64().unwrap(), 4 * ((1 << 20) + 4));
        assert_eq!(l["bytes_total"].as_u64().unwrap(), 4 * ((1 << 20) + 4) + 5);
    }
    // The simulated WAN pays at least its latency per flight: RTT >= 8 ms.
    let wan = &lines[3];
    assert!(wan["rtt_ms"].as_f64().unwrap() >= 8.0);
}

#[test]
fn wrong_usage_fails_clearly() {
    let cases: [(&[&str], &str); 3] = [
        (&["embed", "some text"], "pass --plaintext"),
        (&["bench", "nn", "--op", "nosuchop"], "unknown --op"),
        (&["bench", "model", "--arch", "bert-base", "--net", "moon"], "invalid value"),
    ];
    for (args, needle) in cases {
        let out = nectar().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} must fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed output");
    }
}

#[test]
fn bad_model_dirs_are_one_line_errors() {
    let out = nectar().args(["info", "--model", "/nonexistent/model"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/model"), "{err}");

    // A directory without config.json: the error names the file.
    let dir = std::env::temp_dir().join(format!("nectar-cli-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = nectar().args(["info", "--model"]).arg(&dir).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("config.json"), "{err}");
}

/// `bench model` runs the server party in its own process: each party reports its own peak
/// RSS, and the two parties' byte counts agree with each other and with the totals.
#[test]
fn bench_model_reports_each_partys_peak_rss() {
    let out = nectar()
        .args(["bench", "model", "--arch", "bert-tiny", "--seq", "4", "--layers", "1", "--quiet", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let l: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON line");
    assert_eq!(l["variant"], "bert-tiny");
    assert_eq!(l["rss_per_party"], true);
    let (s, c) = (&l["server"], &l["client"]);
    let rss = |p: &serde_json::Value| p["peak_rss_bytes"].as_u64().unwrap();
    assert!(rss(s) > 0 && rss(c) > 0);
    assert_eq!(l["peak_rss_bytes"].as_u64().unwrap(), rss(s).max(rss(c)));
    let b = |p: &serde_json::Value, k: &str| p[k].as_u64().unwrap();
    assert_eq!(b(s, "bytes_sent"), b(c, "bytes_recv"));
    assert_eq!(b(c, "bytes_sent"), b(s, "bytes_recv"));
    assert_eq!(l["bytes_total"].as_u64().unwrap(), b(s, "bytes_sent") + b(c, "bytes_sent"));
    assert!(s["profile"].as_array().unwrap().iter().any(|o| o["op"] == "embed"));
}
