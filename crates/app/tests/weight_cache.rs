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

/// A test step's failure, as a message.
type R<T> = Result<T, String>;

/// A successful `nectar infer`: its embedding, bytes (the session setup's and the query's) and
/// stderr.
type Run = (Vec<f64>, f64, String);

fn io<T>(what: &str, r: std::io::Result<T>) -> R<T> {
    r.map_err(|e| format!("{what}: {e}"))
}

fn start_server(model: &Path) -> R<Server> {
    let mut child = io(
        "spawn nectar serve",
        Command::new(env!("CARGO_BIN_EXE_nectar"))
            .args(["serve", "--listen", "127.0.0.1:0", "--suite", SUITE, "--model"])
            .arg(model)
            .stderr(Stdio::piped())
            .spawn(),
    )?;
    let stderr = child.stderr.take().ok_or("no server stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = rx.recv_timeout(Duration::from_secs(60)).map_err(|e| format!("server banner: {e}"))?;
    let addr = first.split(" on ").nth(1).and_then(|s| s.split_whitespace().next()).ok_or(format!("no address in {first:?}"))?.to_string();
    Ok(Server(child, addr))
}

/// One `nectar infer` with its cache under `home`: `Ok((embedding, bytes, stderr))`, or
/// `Ok(Err(stderr))` when it failed (the outer error: the test could not run it or read it).
fn infer(server: &Server, model: &Path, home: &Path) -> R<Result<Run, String>> {
    let out = io(
        "run nectar infer",
        Command::new(env!("CARGO_BIN_EXE_nectar"))
            .env("NECTAR_HOME", home)
            .args(["infer", "--connect", &server.1, "--json", "--suite", SUITE, "--ids", IDS, "--model"])
            .arg(model)
            .output(),
    )?;
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    if !out.status.success() {
        return Ok(Err(err));
    }
    let line = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(line.lines().next().unwrap_or("")).map_err(|e| format!("{e}: {line}"))?;
    let emb = v["private"]["Embedding"].as_array().ok_or(format!("no embedding in {v}"))?.iter().map(|x| x.as_f64().ok_or("a non-number")).collect::<Result<_, _>>()?;
    // The session's bytes: the query's and the setup's (the lookup table travels at setup).
    let totals: serde_json::Value = serde_json::from_str(line.lines().rfind(|l| l.contains("\"totals\"")).unwrap_or("")).map_err(|e| format!("{e}: {line}"))?;
    let setup = totals["totals"]["setup_bytes_total"].as_f64().ok_or(format!("no setup_bytes_total in {totals}"))?;
    let bytes = v["bytes_per_input"].as_f64().ok_or(format!("no bytes_per_input in {v}"))? + setup;
    Ok(Ok((emb, bytes, err)))
}

/// [`infer`] that must succeed.
fn infer_ok(server: &Server, model: &Path, home: &Path) -> R<Run> {
    infer(server, model, home)?.map_err(|e| format!("nectar infer failed: {e}"))
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
fn layer_file(home: &Path) -> R<PathBuf> {
    for d in io("read the cache", std::fs::read_dir(home.join("cop")))?.flatten() {
        let text = io("read index.json", std::fs::read(d.path().join("index.json")))?;
        let index: serde_json::Value = serde_json::from_slice(&text).map_err(|e| format!("index.json: {e}"))?;
        for e in index.as_array().ok_or("index.json: not a list")? {
            if let (Some(true), Some(file)) = (e["name"].as_str().map(|n| n.contains("layer")), e["file"].as_str()) {
                return Ok(d.path().join(file));
            }
        }
    }
    Err(format!("no layer weight cached under {}", home.display()))
}

fn warnings(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("COP weight cache")).collect()
}

#[test]
fn a_returning_client_skips_the_transfer_and_bad_files_are_sent_again() -> R<()> {
    let root = std::env::temp_dir().join(format!("nectar-weight-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (model, home) = (root.join("model"), root.join("home"));
    io("make the model directory", std::fs::create_dir_all(&model))?;
    nectar_bench::fixtures::tiny::write_tiny_bert(&model, 3).map_err(|e| format!("tiny BERT: {e}"))?;
    let server = start_server(&model)?;

    // Cold: the weights travel and are cached.
    let (cold, cold_bytes, err) = infer_ok(&server, &model, &home)?;
    assert!(warnings(&err).is_empty(), "{err}");
    let files = cache_files(&home);
    assert!(files.len() >= 5, "the embedding and the layer weights are cached: {files:?}");
    // Warm: none travels again; the same result up to the protocols' error.
    let (warm, warm_bytes, err) = infer_ok(&server, &model, &home)?;
    assert!(warnings(&err).is_empty(), "{err}");
    // Tiny BERT: the weights are a handful of ciphertexts (about 150 kB each), the rest the same.
    assert!(warm_bytes + 1e6 < cold_bytes, "warm {warm_bytes} B vs cold {cold_bytes} B");
    assert!(cosine(&cold, &warm) > 0.999, "cosine {}", cosine(&cold, &warm));

    // A truncated file: dropped at setup with one line, that weight sent again.
    let b = io("read a cached file", std::fs::read(&files[0]))?;
    io("truncate it", std::fs::write(&files[0], &b[..b.len() / 2]))?;
    let (again, bytes, err) = infer_ok(&server, &model, &home)?;
    assert_eq!(warnings(&err).len(), 1, "{err}");
    assert!(bytes > warm_bytes + 1e5, "the truncated weight travels again: {bytes} vs {warm_bytes}");
    assert!(cosine(&cold, &again) > 0.999);

    // A layer weight's file changed in place (same size): that query fails in one line, the
    // next one gets a fresh transfer. (A lookup table is read only where the query's rows need
    // it; every part read is checked.)
    let layer = layer_file(&home)?;
    let mut b = io("read a layer weight's file", std::fs::read(&layer))?;
    let mid = b.len() / 2;
    b[mid] ^= 0x40;
    io("change it", std::fs::write(&layer, &b))?;
    let Err(e) = infer(&server, &model, &home)? else {
        return Err("a changed cached file was used".into());
    };
    let last = e.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(last.contains("reconnect for a fresh transfer"), "{e}");
    let (again, bytes, err) = infer_ok(&server, &model, &home)?;
    assert!(warnings(&err).is_empty(), "{err}");
    assert!(bytes > warm_bytes + 1e5, "{bytes} vs {warm_bytes}");
    assert!(cosine(&cold, &again) > 0.999);

    // A new server (a new key): every weight travels again, under a directory of its own.
    drop(server);
    let server = start_server(&model)?;
    let (again, bytes, _) = infer_ok(&server, &model, &home)?;
    assert!(bytes + 1e5 > cold_bytes, "{bytes} vs cold {cold_bytes}");
    assert!(cosine(&cold, &again) > 0.999);
    let dirs = io("read the cache", std::fs::read_dir(home.join("cop")))?.count();
    assert_eq!(dirs, 2, "one directory per server key");
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}
