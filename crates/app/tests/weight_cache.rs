//! The client's cache of a server's encrypted weights (`matmul = nimbus-cop`, `embed =
//! nimbus-cop`; `nectar_linear::cop_cache`, issue 47) through the real binaries: a returning
//! client skips the transfer; a truncated file, a file changed in place and a server with a new
//! key each end in a one-line message and a fresh transfer, never a wrong answer.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const SUITE: &str = "nectar+matmul=nimbus-cop+embed=nimbus-cop+ot=ferret-small";
const IDS: &str = "1,7,3,9,2,14";

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(model: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nectar"))
        .args(["serve", "--listen", "127.0.0.1:0", "--suite", SUITE, "--model"])
        .arg(model)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = rx.recv_timeout(Duration::from_secs(60)).expect("server banner");
    let addr = first.split(" on ").nth(1).and_then(|s| s.split_whitespace().next()).expect("address in banner").to_string();
    Server(child, addr)
}

/// One `nectar infer` with its cache under `home`: (embedding, bytes, stderr), or the failure's
/// stderr.
fn infer(server: &Server, model: &Path, home: &Path) -> Result<(Vec<f64>, f64, String), String> {
    let out = Command::new(env!("CARGO_BIN_EXE_nectar"))
        .env("NECTAR_HOME", home)
        .args(["infer", "--connect", &server.1, "--json", "--suite", SUITE, "--ids", IDS, "--model"])
        .arg(model)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    if !out.status.success() {
        return Err(err);
    }
    let line = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(line.lines().next().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {line}"));
    let emb = v["private"]["Embedding"].as_array().unwrap_or_else(|| panic!("no embedding in {v}")).iter().map(|x| x.as_f64().unwrap()).collect();
    Ok((emb, v["bytes_per_input"].as_f64().unwrap(), err))
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let d: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    d / (a.iter().map(|x| x * x).sum::<f64>().sqrt() * b.iter().map(|x| x * x).sum::<f64>().sqrt())
}

fn cache_files(home: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(home.join("cop"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .map(|f| f.path())
        .filter(|p| p.extension().is_some_and(|e| e == "cts"))
        .collect();
    v.sort();
    v
}

/// The cached file of a layer weight (not the embedding table), from the index.
fn layer_file(home: &Path) -> PathBuf {
    for d in std::fs::read_dir(home.join("cop")).unwrap().flatten() {
        let index: serde_json::Value = serde_json::from_slice(&std::fs::read(d.path().join("index.json")).unwrap()).unwrap();
        for e in index.as_array().unwrap() {
            if e["name"].as_str().is_some_and(|n| n.contains("layer")) {
                return d.path().join(format!("{}.cts", e["digest"].as_str().unwrap()));
            }
        }
    }
    panic!("no layer weight cached under {}", home.display())
}

fn warnings(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("COP weight cache")).collect()
}

#[test]
fn a_returning_client_skips_the_transfer_and_bad_files_are_sent_again() {
    let root = std::env::temp_dir().join(format!("nectar-weight-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (model, home) = (root.join("model"), root.join("home"));
    std::fs::create_dir_all(&model).unwrap();
    nectar_bench::fixtures::tiny::write_tiny_bert(&model, 3).unwrap();
    let server = start_server(&model);

    // Cold: the weights travel and are cached.
    let (cold, cold_bytes, err) = infer(&server, &model, &home).unwrap();
    assert!(warnings(&err).is_empty(), "{err}");
    let files = cache_files(&home);
    assert!(files.len() >= 5, "the embedding and the layer weights are cached: {files:?}");
    // Warm: none travels again; the same result up to the protocols' error.
    let (warm, warm_bytes, err) = infer(&server, &model, &home).unwrap();
    assert!(warnings(&err).is_empty(), "{err}");
    // Tiny BERT: the weights are a handful of ciphertexts (about 150 kB each), the rest the same.
    assert!(warm_bytes + 1e6 < cold_bytes, "warm {warm_bytes} B vs cold {cold_bytes} B");
    assert!(cosine(&cold, &warm) > 0.999, "cosine {}", cosine(&cold, &warm));

    // A truncated file: dropped at setup with one line, that weight sent again.
    let b = std::fs::read(&files[0]).unwrap();
    std::fs::write(&files[0], &b[..b.len() / 2]).unwrap();
    let (again, bytes, err) = infer(&server, &model, &home).unwrap();
    assert_eq!(warnings(&err).len(), 1, "{err}");
    assert!(bytes > warm_bytes + 1e5, "the truncated weight travels again: {bytes} vs {warm_bytes}");
    assert!(cosine(&cold, &again) > 0.999);

    // A layer weight's file changed in place (same size): that query fails in one line, the
    // next one gets a fresh transfer. (A lookup table is read only where the query's rows need
    // it; every part read is checked.)
    let layer = layer_file(&home);
    let mut b = std::fs::read(&layer).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0x40;
    std::fs::write(&layer, &b).unwrap();
    let e = infer(&server, &model, &home).unwrap_err();
    let last = e.lines().filter(|l| !l.trim().is_empty()).last().unwrap_or("");
    assert!(last.contains("reconnect for a fresh transfer"), "{e}");
    let (again, bytes, err) = infer(&server, &model, &home).unwrap();
    assert!(warnings(&err).is_empty(), "{err}");
    assert!(bytes > warm_bytes + 1e5, "{bytes} vs {warm_bytes}");
    assert!(cosine(&cold, &again) > 0.999);

    // A new server (a new key): every weight travels again, under a directory of its own.
    drop(server);
    let server = start_server(&model);
    let (again, bytes, _) = infer(&server, &model, &home).unwrap();
    assert!(bytes + 1e5 > cold_bytes, "{bytes} vs cold {cold_bytes}");
    assert!(cosine(&cold, &again) > 0.999);
    let dirs = std::fs::read_dir(home.join("cop")).unwrap().count();
    assert_eq!(dirs, 2, "one directory per server key");
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}
