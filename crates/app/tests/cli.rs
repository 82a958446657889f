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

/// A GGUF file is a model wherever `--model` is taken: `info` shows its quantisation, `generate
/// --plaintext` continues a prompt; a corrupt one is a one-line error naming it.
#[test]
fn gguf_files_are_models() {
    let dir = tempfile::tempdir().unwrap();
    nectar_bench::fixtures::tiny::write_tiny_llama(dir.path(), 4).unwrap();
    let path = dir.path().join("tiny.gguf");
    nectar_bench::fixtures::gguf::tiny_llama(dir.path()).unwrap().write(&path).unwrap();
    let out = nectar().args(["info", "--model"]).arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for want in ["type:          llama", "kv heads:      2", "quantisation:  F32 ×21", "format:        GGUF v3"] {
        assert!(text.contains(want), "{want:?} missing from {text}");
    }
    let out = nectar().args(["generate", "--plaintext", "--tokens", "3", "--json", "--model"]).arg(&path).arg("ABC").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["prompt_ids"], serde_json::json!([0, 1, 2]));
    assert_eq!(v["generated_ids"].as_array().unwrap().len(), 3);
    let out = nectar().args(["generate", "--model"]).arg(&path).arg("ABC").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --plaintext"));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&path, &bytes).unwrap();
    let out = nectar().args(["info", "--model"]).arg(&path).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("tiny.gguf: invalid GGUF file:") && err.contains("past the end of the file"), "{err}");
}

/// `bench model` runs the server party in its own process, with no link and through the
/// simulated LAN (both ends of the loopback connection): each party reports its own peak RSS,
/// the two parties' byte counts agree with each other and with the totals, and the link
/// changes no byte.
#[test]
fn bench_model_reports_each_partys_peak_rss() {
    let mut totals = Vec::new();
    for net in ["none", "lan"] {
        let out = nectar()
            .args(["bench", "model", "--arch", "bert-tiny", "--seq", "4", "--layers", "1", "--quiet", "--json", "--net", net])
            .output()
            .expect("run nectar bench model");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).expect("utf-8 stdout");
        let l: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON line");
        assert_eq!(l["variant"], "bert-tiny");
        assert_eq!(l["params"]["net"], net);
        assert_eq!(l["rss_per_party"], true, "{net}");
        let (s, c) = (&l["server"], &l["client"]);
        let num = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{net}: no number '{k}' in {v}"));
        let rss = |p: &serde_json::Value| num(p, "peak_rss_bytes");
        assert!(rss(s) > 0 && rss(c) > 0);
        assert_eq!(num(&l, "peak_rss_bytes"), rss(s).max(rss(c)));
        assert_eq!(num(s, "bytes_sent"), num(c, "bytes_recv"));
        assert_eq!(num(c, "bytes_sent"), num(s, "bytes_recv"));
        assert_eq!(num(&l, "bytes_total"), num(s, "bytes_sent") + num(c, "bytes_sent"));
        assert!(s["profile"].as_array().expect("a server profile").iter().any(|o| o["op"] == "embed"));
        totals.push((num(&l, "bytes_total"), num(&l, "rounds")));
    }
    assert_eq!(totals[0], totals[1], "the simulated link changes no byte or round");
}

/// `nectar suites` lists the seven presets and every operator's choices, implemented or not.
#[test]
fn suites_lists_presets_and_choices() {
    let out = nectar().args(["suites", "--json"]).output().unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let presets: Vec<&str> = lines.iter().filter_map(|l| l["preset"].as_str()).collect();
    assert_eq!(presets, ["nectar", "bumblebee", "rotl", "east", "blb", "leaf", "nimbus"]);
    let runs: Vec<bool> = lines.iter().filter(|l| l["preset"].is_string()).map(|l| l["runs"].as_bool().unwrap()).collect();
    assert_eq!(runs, [true; 7], "every preset runs today");
    let gelu = lines.iter().find(|l| l["operator"] == "gelu").expect("gelu row");
    let choices: Vec<(String, bool)> = gelu["choices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["protocol"].as_str().unwrap().to_string(), c["implemented"].as_bool().unwrap()))
        .collect();
    // the registry's list, in its order (`nectar_nn::gelu::ALL`)
    let listed: Vec<(String, bool)> = nectar_nn::gelu::ALL.iter().map(|p| (p.name().to_string(), true)).collect();
    assert_eq!(choices, listed);
    assert!(listed.len() >= 6 && listed[0].0 == "seg4", "{listed:?}");
    let table = nectar().arg("suites").output().unwrap();
    let text = String::from_utf8(table.stdout).unwrap();
    for needle in ["nectar", "bumblebee", "rotl", "east", "blb", "leaf", "implemented"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

/// An invalid suite (here BLB's fused blocks without their CKKS attention products) fails at
/// start with one line naming the operators, before anything is loaded or generated; no
/// panic, no backtrace.
#[test]
fn invalid_suites_fail_at_start_with_one_line() {
    let cases: [(&[&str], &str); 4] = [
        (&["demo", "--suite", "rotl", "--op", "matmul=blb-fused", "some text"], "matmul-shared must be ckks"),
        (&["demo", "--suite", "east", "--op", "matmul=blb-fused", "--model", "/nonexistent", "x"], "matmul-shared must be ckks"),
        (&["infer", "--suite", "bumblebee+matmul=blb-fused", "--ids", "1,2"], "matmul-shared must be ckks"),
        (&["bench", "nn", "--op", "gelu", "--suite", "bumblebee+matmul=blb-fused", "--size", "8"], "matmul-shared must be ckks"),
    ];
    for (args, needle) in cases {
        let out = nectar().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} must fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle) && err.contains("matmul = blb-fused"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // BLB's fused blocks run their own nonlinear protocols: another one is refused by name.
    let out = nectar().args(["demo", "--suite", "blb", "--op", "gelu=sq8", "x"]).output().expect("the nectar binary runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("matmul=blb-fused") && err.contains("gelu=sq8 (it runs p4)"), "{err}");
    let bad = nectar().args(["demo", "--op", "gelu=xyz", "x"]).output().unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    let names: Vec<&str> = nectar_nn::gelu::ALL.iter().map(|p| p.name()).collect();
    assert!(err.contains(&format!("operator gelu: unknown protocol 'xyz' (choices: {})", names.join(", "))), "{err}");
}

/// `--net` takes any link as `MBPS/RTT_MS` (round trip) besides the presets, and bench lines
/// name it with both its round trip and its one-way latency; a softmax line names its
/// composition (the registry's label).
#[test]
fn links_are_data() {
    let out = nectar()
        .args(["bench", "nn", "--op", "softmax", "--size", "64", "--cols", "16", "--suite", "bumblebee+ot=iknp", "--net", "200/10", "--json"])
        .output()
        .expect("the nectar binary runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let l: serde_json::Value = serde_json::from_str(String::from_utf8(out.stdout).expect("UTF-8 output").trim()).expect("one JSON line");
    assert_eq!(l["params"]["net"], "200 Mbit/s, 10ms RTT (5ms one-way)");
    assert_eq!(l["params"]["kernel"], "softmax=bumblebee+exp=taylor+reciprocal=newton");
    // every flight waits at least the one-way latency
    let (secs, rounds) = (l["seconds"].as_f64().expect("seconds"), l["rounds"].as_f64().expect("rounds"));
    assert!(secs >= 0.005 * rounds / 2.0, "{l}");
    let out = nectar().args(["bench", "nn", "--op", "msb", "--net", "blb-wan3", "--size", "8"]).output().expect("the nectar binary runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for bad in ["100", "fast", "0/5"] {
        let out = nectar().args(["bench", "nn", "--op", "msb", "--net", bad]).output().expect("the nectar binary runs");
        assert!(!out.status.success(), "--net {bad} must fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("MBPS/RTT_MS") || err.contains("bandwidth"), "--net {bad}: {err}");
    }
}

/// Bench lines name the protocol that ran: `bench nn --op gelu=p4` and `bench model` with a
/// suite override.
#[test]
fn bench_lines_name_their_protocols() {
    let out = nectar()
        .args(["bench", "nn", "--op", "gelu=p4", "--size", "64", "--suite", "bumblebee+ot=iknp+mul=ot", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let l: serde_json::Value = serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
    assert_eq!(l["params"]["protocol"], "p4");
    assert_eq!(l["params"]["kernel"], "gelu=p4");
    assert_eq!(l["params"]["suite"], "bumblebee+ot=iknp+mul=ot+gelu=p4");
    let out = nectar()
        .args(["bench", "model", "--arch", "bert-tiny", "--seq", "4", "--layers", "1", "--quiet", "--json", "--in-process"])
        .args(["--op", "gelu=p4,ot=iknp"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let l: serde_json::Value = serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
    assert_eq!(l["protocols"]["gelu"], "p4");
    assert_eq!(l["params"]["suite"], "nectar+ot=iknp+gelu=p4", "the default suite with two overrides");
    let ops = l["client"]["profile"].as_array().unwrap();
    let gelu = ops.iter().find(|o| o["op"] == "gelu").expect("a gelu row");
    assert_eq!(gelu["protocol"], "p4");
}

/// `bench linear` runs (its `--op` names the kernel; the suite comes from `--suite`) and its
/// line names the suite.
#[test]
fn bench_linear_runs_with_a_suite() {
    let out = nectar()
        .args(["bench", "linear", "--op", "bole", "--size", "256", "--suite", "bumblebee+ot=iknp", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let l: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert!(l["bytes_total"].as_u64().unwrap() > 0, "{l}");
    assert!(text.contains("bumblebee+ot=iknp"), "{text}");
}

/// `bench linear` benches the OLT and COP kernels under the presets whose matmul keeps session
/// state (`nectar`: `olt-ahead`; `nimbus`: `nimbus-cop`) instead of sending them to BLB's CKKS
/// benches (only `matmul = ckks` and the fused BLB matmul go there), and `--suite blb` still
/// refuses a kernel that is not BLB's in one line.
#[test]
fn bench_linear_runs_the_olt_and_cop_kernels_of_stateful_suites() {
    for (suite, op) in [("nectar", "matmul"), ("nectar", "cop"), ("nimbus", "cop")] {
        let out = nectar().args(["bench", "linear", "--op", op, "--shape", "4,16,8", "--suite", suite, "--json"]).output().expect("nectar bench linear runs");
        assert!(out.status.success(), "{suite} {op}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).expect("UTF-8 output");
        let l: serde_json::Value = serde_json::from_str(text.lines().next().expect("a line")).expect("a JSON line");
        assert!(l["variant"].as_str().expect("a variant").starts_with(op), "{suite} {op}: {l}");
        assert_eq!(l["mismatches"], 0, "{suite} {op}: {l}");
    }
    let out = nectar().args(["bench", "linear", "--op", "cop", "--shape", "4,16,8", "--suite", "blb"]).output().expect("nectar bench linear runs");
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim().lines().count(), 1);
}

/// `nectar fit --model` re-derives the committed Nimbus tables from MiniLM's activation inputs
/// (the fit is deterministic), reports its error over those inputs, and refuses what it cannot
/// fit in one line.
#[test]
fn fit_model_rederives_the_committed_nimbus_tables() {
    let minilm = nectar_model::home::minilm_dir(&nectar_model::home::default_home());
    assert!(minilm.join("model.safetensors").is_file(), "MiniLM missing: `make test` fetches it");
    let fit = |args: &[&str]| -> serde_json::Value {
        let out = nectar().args(["fit", "--json", "--model"]).arg(&minilm).args(args).output().expect("nectar fit runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).expect("UTF-8 output");
        serde_json::from_str(text.trim()).expect("one JSON line")
    };
    let same = |got: &serde_json::Value, want: &[f64]| {
        let got: Vec<f64> = got.as_array().expect("a list of coefficients").iter().filter_map(|v| v.as_f64()).collect();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{got:?} vs {want:?}");
        }
    };
    let g = fit(&["--func", "gelu", "--range", "3"]);
    same(&g["table"]["c"], &nectar_nn::gelu::nimbus::NIMBUS_ERF.c);
    let (rms, worst) = (g["error"]["rms"].as_f64(), g["error"]["worst_abs"].as_f64());
    assert!(rms.is_some_and(|e| e < 1.2e-3) && worst.is_some_and(|e| e < 4.1e-3), "{g}");
    let e = fit(&["--func", "exp", "--clip", "-8"]);
    assert_eq!(e["table"]["n"], 2, "the default squarings are the committed table's");
    same(&e["table"]["c"], &nectar_nn::exp::nimbus::NIMBUS_EXP.c);
    for bad in [vec!["--func", "tanh"], vec!["--func", "gelu", "--floor", "11"], vec!["--func", "exp", "--clip", "1"]] {
        let out = nectar().args(["fit", "--model"]).arg(&minilm).args(&bad).output().expect("nectar fit runs");
        assert!(!out.status.success(), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
    }
}

/// `nectar fit` fits an OPPE table and refuses bad arguments in one line.
#[test]
fn fit_prints_a_table_and_refuses_bad_arguments() {
    let out = nectar()
        .args(["fit", "--func", "gelu", "--lo", "-5", "--hi", "5", "--m", "4", "--d", "2", "--domain", "-6,6", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t: serde_json::Value = serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
    assert_eq!(t["breaks"].as_array().unwrap().len(), 4);
    assert!(t["fit"]["twin_max_abs"].as_f64().unwrap() < 0.1);
    for bad in [
        vec!["--m", "0"],
        vec!["--d", "12"],
        vec!["--domain", "-1e9,1e9"],
    ] {
        let out = nectar()
            .args(["fit", "--func", "gelu", "--lo", "-5", "--hi", "5"])
            .args(&bad)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
        assert!(err.starts_with("error: "), "{err}");
    }
}

/// `nectar params` prints the statistical security per session of every preset (all seven run):
/// ≥ 40 bits each, every HE set within the 128-bit bound.
#[test]
fn params_reports_40_bits_per_session() {
    let out = nectar().args(["params", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 7);
    for l in &lines {
        match l["suite"].as_str().unwrap() {
            "nectar" | "bumblebee" | "east" | "rotl" | "blb" | "leaf" | "nimbus" => {
                assert!(l["session_bits"].as_u64().unwrap() >= 40, "{l}");
                for h in l["he"].as_array().unwrap() {
                    assert!(h["log_qp"].as_u64() <= h["max_log_qp_128"].as_u64(), "{h}");
                }
            }
            other => panic!("unexpected suite {other}: {l}"),
        }
    }
    let out = nectar().args(["params", "--suite", "bumblebee+mul=ot"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains("perfect"));
}

/// Runs `nectar ARGS` with its stdout closed before it writes (`nectar ... | head -0`).
pub fn closed_stdout(args: &[&str]) -> std::process::Output {
    let mut child = nectar()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

/// `nectar suites | head -1` and the like: a closed stdout ends the command quietly with
/// status 0, not with a `println!` panic (exit 101).
#[test]
fn closed_stdout_ends_quietly() {
    let dir = std::env::temp_dir().join(format!("nectar-cli-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    nectar_bench::fixtures::tiny::write_tiny_bert(&dir, 2).unwrap();
    let d = dir.display().to_string();
    // `embed` needs a tokenizer: the fetched MiniLM when present.
    let minilm = nectar_model::home::default_home().join("minilm");
    let m = minilm.display().to_string();
    let info: &[&str] = &["info", "--model", &d];
    let mut cases: Vec<&[&str]> = vec![&["suites"], &["suites", "--json"], &["bench", "net", "--mb", "1"], info];
    let embed: &[&str] = &["embed", "--plaintext", "--model", &m, "one", "two"];
    if minilm.join("tokenizer.json").exists() {
        cases.push(embed);
    }
    for args in cases {
        let out = closed_stdout(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `nectar accuracy` on MiniLM: per-sentence and summary JSON lines; the default suite's twin and
/// secure run within issue 17's 0.9999 of plaintext; the error attribution names GeLU as
/// BumbleBee's dominant operator; bad inputs are one-line errors.
#[test]
fn accuracy_reports_per_operator_errors() {
    let minilm = nectar_model::home::default_home().join("minilm");
    assert!(minilm.join("model.safetensors").exists(), "MiniLM missing: `make test` fetches it (nectar fetch-model minilm)");
    let m = minilm.display().to_string();
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("s.txt");
    std::fs::write(&file, "OK.\n\nWhy?!\n").expect("write the sentences");
    let f = file.display().to_string();
    let run = |extra: &[&str]| -> Vec<serde_json::Value> {
        let mut args = vec!["accuracy", "--model", &m, "--sentences", &f, "--json"];
        args.extend_from_slice(extra);
        let out = nectar().args(&args).output().expect("run nectar");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("utf-8 stdout").lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
    };
    let lines = run(&["--secure"]);
    assert_eq!(lines.len(), 3, "two sentences (a blank line is not a sentence) and a summary");
    let s = &lines[2];
    assert_eq!((s["bench"].as_str(), s["suite"].as_str(), s["sentences"].as_u64()), (Some("accuracy-summary"), Some("nectar"), Some(2)));
    let min = |v: &serde_json::Value| v["min_cosine"].as_f64().expect("min_cosine");
    assert!(min(&s["twin"]) >= 0.9999 && min(&s["secure"]) >= 0.9999 && min(&s["secure_vs_twin"]) >= 0.9999, "{s}");
    assert!(min(&s["format_only"]) >= 0.99999, "{s}");
    for op in ["gelu", "softmax", "layernorm"] {
        assert!(min(&s["only"][op]) >= min(&s["twin"]) - 1e-6, "{op}: {s}");
    }
    assert!(lines[0]["tokens"].as_u64().expect("tokens") >= 3 && lines[0]["secure"]["cosine"].is_f64());
    // BumbleBee's approximations: GeLU (Seg4) is the largest error, LayerNorm the smallest.
    let b = run(&["--suite", "bumblebee"]);
    let o = &b[2]["only"];
    assert!(min(&o["gelu"]) < min(&o["softmax"]) && min(&o["softmax"]) < min(&o["layernorm"]), "{o}");
    assert!(b[2].get("secure").is_none());
    // Bad inputs: a missing file, a file without sentences, a generation model.
    std::fs::write(dir.path().join("empty.txt"), "\n  \n").expect("write the empty file");
    let gpt = dir.path().join("gpt");
    nectar_bench::fixtures::tiny::write_tiny_gpt2(&gpt, 3).expect("a tiny GPT-2");
    for (model, sentences, needle) in [
        (m.as_str(), dir.path().join("none.txt"), "none.txt"),
        (m.as_str(), dir.path().join("empty.txt"), "no sentences"),
        (gpt.to_str().expect("utf-8 path"), file.clone(), "BERT-family"),
    ] {
        let out = nectar().args(["accuracy", "--model", model, "--sentences", sentences.to_str().expect("utf-8 path")]).output().expect("run nectar");
        assert!(!out.status.success());
        let err = String::from_utf8(out.stderr).expect("utf-8 stderr");
        assert!(err.starts_with("error: ") && err.contains(needle) && err.trim().lines().count() == 1, "{err}");
    }
}

/// `nectar bench suites` runs the server party in a child process: each party's own peak RSS
/// (issue 17's per-party memory figure), the same bytes and rounds as `--in-process`.
#[test]
fn bench_suites_reports_rss_per_party() {
    let minilm = nectar_model::home::default_home().join("minilm");
    assert!(minilm.join("model.safetensors").exists(), "MiniLM missing: `make test` fetches it (nectar fetch-model minilm)");
    let m = minilm.display().to_string();
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["bench", "suites", "--model", &m, "--suites", "nectar", "--tokens", "4", "--net", "none", "--json"];
        args.extend_from_slice(extra);
        let out = nectar().args(&args).output().expect("run nectar");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str(String::from_utf8(out.stdout).expect("utf-8 stdout").trim()).expect("one JSON line")
    };
    let (two, one) = (run(&[]), run(&["--in-process"]));
    assert_eq!(two["rss_per_party"], true);
    assert_eq!(one["rss_per_party"], false);
    for k in ["server_peak_rss_bytes", "client_peak_rss_bytes"] {
        assert!(two[k].as_u64().expect("a peak RSS") > 50 << 20, "{k}: {two}");
        assert!(one[k].is_null());
    }
    let peak = |k: &str| two[k].as_u64().expect("a peak RSS");
    assert_eq!(two["peak_rss_bytes"].as_u64(), Some(peak("server_peak_rss_bytes").max(peak("client_peak_rss_bytes"))));
    assert_eq!(two["bytes_total"], one["bytes_total"]);
    assert_eq!(two["rounds"], one["rounds"]);
    assert!(two["agreement_vs_plaintext"].as_f64().expect("a cosine") > 0.9999);
}
