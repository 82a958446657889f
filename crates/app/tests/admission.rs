//! `nectar serve --memory-limit-gib` and the derived message limit (issue 51, item 5): real
//! binary over loopback TCP. The memory budget on the tiny BERT (its estimate given by
//! `--session-memory-mib`); the message limit on the fetched MiniLM, whose calibration
//! (docs/results/admission.jsonl) the server derives it from.

use nectar_model::Suite;
use nectar_net::ABORT_MARK;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    addr: String,
    admin: String,
    _log: Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn get(&self, path: &str) -> (u16, String) {
        let mut s = TcpStream::connect(&self.admin).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
        let mut r = String::new();
        s.read_to_string(&mut r).unwrap();
        let status = r.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, r.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
    }
    fn metric(&self, name: &str) -> Option<f64> {
        let (_, body) = self.get("/metrics");
        body.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.trim().parse().ok()))
    }
}

fn start_server(dir: &Path, extra: &[&str]) -> Result<Server, String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nectar"))
        .args(["serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--model"])
        .arg(dir)
        .args(extra)
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
    let first = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| "no banner".to_string());
    let Some(addr) = first.split(" on ").nth(1).and_then(|s| s.split_whitespace().next()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(first);
    };
    let addr = addr.to_string();
    let admin = first.split("admin on http://").nth(1).unwrap().chars().take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':').collect();
    Ok(Server { child, addr, admin, _log: rx })
}

fn hello_frame(suite: &Suite) -> Vec<u8> {
    let hello = serde_json::to_vec(&serde_json::json!({ "Hello": { "agreement": {
        "version": nectar_app::session::PROTOCOL_VERSION, "suite": suite, "digest": suite.digest() } } }))
    .unwrap();
    [(hello.len() as u32).to_le_bytes().to_vec(), hello].concat()
}

/// Reads frames until an abort frame (its reason) or the end of the stream (`None`).
fn abort_reason(s: &mut TcpStream) -> Option<String> {
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut h = [0u8; 4];
    loop {
        s.read_exact(&mut h).ok()?;
        let n = u32::from_le_bytes(h);
        if n == ABORT_MARK {
            s.read_exact(&mut h).ok()?;
            let mut r = vec![0u8; u32::from_le_bytes(h) as usize];
            s.read_exact(&mut r).ok()?;
            return String::from_utf8(r).ok();
        }
        std::io::copy(&mut (&mut *s).take(n as u64), &mut std::io::sink()).ok()?;
    }
}

/// A connection past its `Hello`: the server has admitted it (its `Welcome` read).
fn admitted(addr: &str, suite: &Suite) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&hello_frame(suite)).unwrap();
    let mut h = [0u8; 4];
    s.read_exact(&mut h).unwrap();
    let n = u32::from_le_bytes(h);
    assert_ne!(n, ABORT_MARK, "refused");
    let mut w = vec![0u8; n as usize];
    s.read_exact(&mut w).unwrap();
    assert!(String::from_utf8_lossy(&w).contains("Welcome"));
    s
}

fn tiny_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nectar-admission-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    nectar_bench::fixtures::tiny::write_tiny_bert(&dir, 3).unwrap();
    dir
}

#[test]
fn a_session_is_admitted_only_while_its_estimate_fits_the_memory_limit() {
    let dir = tiny_dir("budget");
    let mut suite = Suite::parse("nectar").unwrap();
    suite.apply_overrides("ot=ferret-small").unwrap();
    // No calibration for the tiny BERT: the limit alone is refused at start, with what to do.
    let e = start_server(&dir, &["--op", "ot=ferret-small", "--memory-limit-gib", "1.5"]).err().expect("refused at start");
    assert!(e.contains("--session-memory-mib"), "{e}");
    // One session of 1 GiB fits in 1.5 GiB with the idle server; a second does not.
    let server = start_server(&dir, &["--op", "ot=ferret-small", "--memory-limit-gib", "1.5", "--session-memory-mib", "1024"]).unwrap();
    assert_eq!(server.metric("nectar_session_memory_estimate_bytes"), Some((1u64 << 30) as f64));
    assert_eq!(server.metric("nectar_memory_limit_bytes"), Some((3u64 << 29) as f64));
    assert_eq!(server.get("/readyz").0, 200);
    let first = admitted(&server.addr, &suite);
    let (status, body) = server.get("/readyz");
    assert_eq!(status, 503);
    assert!(body.starts_with("not ready: memory: 1 sessions running, 1.00 GiB estimated each"), "{body}");
    let mut second = TcpStream::connect(&server.addr).unwrap();
    second.write_all(&hello_frame(&suite)).unwrap();
    let why = abort_reason(&mut second).expect("an abort frame");
    assert!(why.starts_with("server busy: memory: 1 sessions running"), "{why}");
    assert!(why.contains("--memory-limit-gib 1.50"), "{why}");
    // The session counts its refusal after its abort frame is out: wait for the count.
    let t = Instant::now();
    while server.metric(r#"nectar_sessions_refused_total{reason="memory"}"#).is_none() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.metric(r#"nectar_sessions_refused_total{reason="memory"}"#), Some(1.0));
    let admitted_bytes = server.metric("nectar_memory_admitted_bytes").unwrap();
    assert!(admitted_bytes >= (1u64 << 30) as f64, "{admitted_bytes}");
    // The first client leaves: its share comes back, the server is ready again.
    drop(first);
    let t = Instant::now();
    while server.get("/readyz").0 != 200 {
        assert!(t.elapsed() < Duration::from_secs(5), "still not ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(server.metric("nectar_memory_admitted_bytes").unwrap() < (1u64 << 30) as f64);
    drop(admitted(&server.addr, &suite));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The message limit derived from MiniLM's calibration: a normal session passes under it, a
/// message one byte over it ends the session with `over limit`.
#[test]
fn minilm_runs_under_its_derived_message_limit_and_a_larger_message_is_refused() {
    let dir = nectar_model::home::default_home().join("minilm");
    assert!(dir.join("model.safetensors").exists(), "MiniLM is not fetched: run `make model`");
    let suite = Suite::parse("nectar").unwrap();
    let cfg = nectar_model::config::ModelConfig::from_file(&dir.join("config.json")).unwrap();
    let budget = nectar_model::secure::secure_engine::DEFAULT_PREFETCH_BUDGET as u64;
    let plan = nectar_app::admission::plan(&cfg, &suite, budget, None, None, None, 0).expect("the MiniLM calibration plans a server");
    assert!(plan.max_frame < nectar_net::DEFAULT_MAX_FRAME, "MiniLM is calibrated: {}", plan.max_frame);
    let server = start_server(&dir, &[]).unwrap();
    assert_eq!(server.metric("nectar_max_message_bytes"), Some(plan.max_frame as f64));
    // A normal query, checked against the plaintext embedding.
    let text = "The weather is lovely today.";
    let out = Command::new(env!("CARGO_BIN_EXE_nectar")).args(["infer", "--connect", &server.addr, "--json", "--model"]).arg(&dir).arg(text).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let first: serde_json::Value = serde_json::from_str(String::from_utf8(out.stdout).unwrap().lines().next().unwrap()).unwrap();
    let private: Vec<f32> = serde_json::from_value(first["private"]["Embedding"].clone()).unwrap();
    let plain = Command::new(env!("CARGO_BIN_EXE_nectar")).args(["embed", "--plaintext", "--json", "--model"]).arg(&dir).arg(text).output().unwrap();
    let plain: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    let plain: Vec<f32> = serde_json::from_value(plain["embedding"].clone()).unwrap();
    let cos = nectar_model::cosine(&private, &plain);
    assert!(cos >= 0.998, "cosine {cos}");
    // A message one byte over the limit, where the server expects its first setup message.
    let mut s = admitted(&server.addr, &suite);
    s.write_all(&((plan.max_frame + 1) as u32).to_le_bytes()).unwrap();
    let why = abort_reason(&mut s).expect("an abort frame");
    assert!(why.contains("over limit") && why.contains(&plan.max_frame.to_string()), "{why}");
    let t = Instant::now();
    while server.metric(r#"nectar_sessions_aborted_total{reason="over_limit"}"#) != Some(1.0) {
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", server.get("/metrics"));
        std::thread::sleep(Duration::from_millis(50));
    }
}
