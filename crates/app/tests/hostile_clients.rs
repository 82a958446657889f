//! `nectar serve` against hostile clients (issue 18): each test plays one attack over real
//! TCP against the real binary and checks the server refuses it cheaply, tells the client
//! why where it can, and goes on serving honest clients.

use nectar_model::config::ModelConfig;
use nectar_model::secure::{SecureEngine, SecureModel};
use nectar_model::Suite;
use nectar_net::{Channel, NetError, Role, TcpChannel, ABORT_MARK};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

fn nectar() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nectar"))
}

struct Server {
    child: Child,
    addr: String,
    log: Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Resident memory of the server process, in bytes.
    fn rss(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: u64 = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
        kb * 1024
    }
    /// Log lines that arrive within `wait`.
    fn log_for(&self, wait: Duration) -> Vec<String> {
        let end = Instant::now() + wait;
        let mut v = Vec::new();
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.log.recv_timeout(left) {
                Ok(l) => v.push(l),
                Err(_) => break,
            }
        }
        v
    }
}

/// `nectar serve` (through `sh` when `ulimit` is given) on an ephemeral port.
fn start_server(dir: &Path, extra: &[&str], ulimit_n: Option<u32>) -> Server {
    let bin = env!("CARGO_BIN_EXE_nectar");
    let mut args: Vec<String> = ["serve", "--listen", "127.0.0.1:0", "--op", "ot=ferret-small", "--model"].map(String::from).to_vec();
    args.push(dir.display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut cmd = match ulimit_n {
        Some(n) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(format!("ulimit -n {n} && exec \"$0\" \"$@\"")).arg(bin).args(&args);
            c
        }
        None => {
            let mut c = Command::new(bin);
            c.args(&args);
            c
        }
    };
    let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = rx.recv_timeout(Duration::from_secs(60)).expect("server banner");
    let addr = first.split(" on ").nth(1).and_then(|s| s.split_whitespace().next()).expect("address in banner").to_string();
    Server { child, addr, log: rx }
}

fn model_dir(name: &str, gpt2: bool) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nectar-hostile-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    if gpt2 {
        nectar_bench::fixtures::tiny::write_tiny_gpt2(&dir, 3).unwrap();
    } else {
        nectar_bench::fixtures::tiny::write_tiny_bert(&dir, 3).unwrap();
    }
    dir
}

fn infer(addr: &str, dir: &Path, ids: &str, extra: &[&str]) -> std::process::Output {
    nectar()
        .args(["infer", "--connect", addr, "--json", "--op", "ot=ferret-small", "--ids", ids, "--model"])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap()
}

fn suite() -> Suite {
    let mut s = Suite::parse("nectar").unwrap(); // the server's default
    s.apply_overrides("ot=ferret-small").unwrap();
    s
}

/// The client's `Hello` as the wire carries it ([`nectar_app::session::PROTOCOL_VERSION`]).
fn hello() -> Vec<u8> {
    let s = suite();
    serde_json::to_vec(&serde_json::json!({ "Hello": { "agreement": { "version": nectar_app::session::PROTOCOL_VERSION, "suite": s, "digest": s.digest() } } })).expect("a JSON literal serialises")
}

/// A client that completes the handshake (and, with `setup`, the session setup) by hand.
fn handshaken(addr: &str, setup: bool) -> TcpChannel {
    let mut ch = TcpChannel::connect(addr).unwrap();
    ch.send(&hello()).unwrap();
    let welcome: serde_json::Value = serde_json::from_slice(&ch.recv().unwrap()).unwrap();
    assert!(welcome.get("Welcome").is_some(), "{welcome}");
    if setup {
        // The session setup: the engine's, then the model's static tables (the default's COP
        // token table, `SecureModel::preload`).
        let json = welcome["Welcome"]["config_json"].as_str().expect("the Welcome carries the config");
        let config = ModelConfig::from_json_str(json, Path::new("<server config.json>")).expect("the server's config parses");
        let mut e = SecureEngine::setup(&mut ch, Role::Client, &suite(), nectar_math::Prg::from_entropy()).expect("the engine's setup");
        SecureModel::new(&config, None).expect("the client's model").preload(&mut e).expect("the model's preload");
    }
    ch
}

/// What an abort frame from the server says (`None`: the stream ended without one).
fn read_abort(s: &mut TcpStream) -> Option<String> {
    let mut h = [0u8; 4];
    s.read_exact(&mut h).ok()?;
    assert_eq!(u32::from_le_bytes(h), ABORT_MARK, "expected an abort frame");
    s.read_exact(&mut h).ok()?;
    let mut r = vec![0u8; u32::from_le_bytes(h) as usize];
    s.read_exact(&mut r).ok()?;
    Some(String::from_utf8(r).unwrap())
}

#[test]
fn huge_n_new_gets_a_clear_error_and_the_server_goes_on() {
    let dir = model_dir("n-new", true);
    let server = start_server(&dir, &[], None);
    // The attack: a well-formed session whose query asks for 10^12 new tokens.
    let mut ch = handshaken(&server.addr, true);
    let q = serde_json::json!({ "Query": { "task": { "Generate": { "n_new": 1_000_000_000_000u64 } }, "len": 3 } });
    ch.send(&serde_json::to_vec(&q).unwrap()).unwrap();
    match ch.recv() {
        Err(NetError::Aborted(r)) => {
            assert!(r.starts_with("bad request:") && r.contains("n_new 1000000000000") && r.contains("context window"), "{r}")
        }
        other => panic!("expected an abort frame, got {other:?}"),
    }
    // Within the window but past it with the prompt: refused too (positions are 32).
    let mut ch = handshaken(&server.addr, true);
    let q = serde_json::json!({ "Query": { "task": { "Generate": { "n_new": 30 } }, "len": 3 } });
    ch.send(&serde_json::to_vec(&q).unwrap()).unwrap();
    assert!(matches!(ch.recv(), Err(NetError::Aborted(r)) if r.contains("context window")));
    // A task the architecture does not answer.
    let mut ch = handshaken(&server.addr, true);
    ch.send(br#"{"Query":{"task":"Embed","len":3}}"#).unwrap();
    assert!(matches!(ch.recv(), Err(NetError::Aborted(r)) if r.starts_with("bad request:")));

    // The honest client is served; one that asks too much is stopped locally, in one line.
    let ok = infer(&server.addr, &dir, "5,6,7", &["--tokens", "2"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let bad = infer(&server.addr, &dir, "5,6,7", &["--tokens", "1000000000000"]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.starts_with("error: ") && err.contains("context window"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let log = server.log_for(Duration::from_millis(300));
    assert_eq!(log.iter().filter(|l| l.contains("bad request")).count(), 3, "{log:#?}");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn gigabyte_frame_before_handshake_is_refused_without_buffering() {
    let dir = model_dir("big-frame", false);
    let server = start_server(&dir, &[], None);
    std::thread::sleep(Duration::from_millis(200));
    let before = server.rss();
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(&((1u32 << 30) - 1).to_le_bytes()).unwrap();
    // The server answers the header at once, before any payload.
    let why = read_abort(&mut s).expect("the server says why");
    assert!(why.contains("over limit") && why.contains("65536"), "{why}");
    // Streaming the payload anyway fails after at most the socket buffers.
    let chunk = vec![0u8; 1 << 20];
    let mut sent = 0usize;
    while sent < 256 << 20 {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    assert!(sent < 64 << 20, "the server kept reading: {sent} bytes");
    let after = server.rss();
    eprintln!("server RSS before {before} B, after the 1 GiB announcement {after} B ({sent} B pushed)");
    assert!(after < before + (16 << 20), "RSS grew from {before} to {after}");
    // Others are still served; a client whose stdout is closed (`| head -0`) ends quietly.
    let ok = infer(&server.addr, &dir, "1,2,3", &[]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let mut child = nectar()
        .args(["infer", "--connect", &server.addr, "--op", "ot=ferret-small", "--ids", "4,5", "--model"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("panicked"), "{:?} {err}", out.status);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn slow_loris_is_cut_at_the_handshake_and_idle_deadlines() {
    let dir = model_dir("loris", false);
    let server = start_server(&dir, &["--handshake-timeout", "2", "--idle-timeout", "3"], None);
    // Before the handshake: one byte of a Hello every 200 ms, each read succeeding.
    let trickle = |mut s: TcpStream, bytes: Vec<u8>| {
        std::thread::spawn(move || {
            let t = Instant::now();
            for b in bytes {
                if s.write_all(&[b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
                if t.elapsed() > Duration::from_secs(20) {
                    break;
                }
            }
            t.elapsed()
        })
    };
    let s = TcpStream::connect(&server.addr).unwrap();
    let mut r = s.try_clone().unwrap();
    let mut framed = (hello().len() as u32).to_le_bytes().to_vec();
    framed.extend(hello());
    let t = Instant::now();
    let h = trickle(s, framed);
    let why = read_abort(&mut r).expect("the server says why");
    let cut = t.elapsed();
    assert!(why.contains("timeout"), "{why}");
    assert!(cut >= Duration::from_millis(1900) && cut < Duration::from_secs(5), "cut after {cut:?}");
    assert!(h.join().unwrap() < Duration::from_secs(10));

    // After the handshake: a setup message trickled byte by byte is cut at the idle deadline.
    let ch = handshaken(&server.addr, false);
    drop(ch);
    let mut s = TcpStream::connect(&server.addr).unwrap();
    let mut framed = (hello().len() as u32).to_le_bytes().to_vec();
    framed.extend(hello());
    s.write_all(&framed).unwrap();
    let mut h = [0u8; 4];
    s.read_exact(&mut h).unwrap();
    let mut welcome = vec![0u8; u32::from_le_bytes(h) as usize];
    s.read_exact(&mut welcome).unwrap();
    let mut r = s.try_clone().unwrap();
    let t = Instant::now();
    let h = trickle(s, [100u32.to_le_bytes().to_vec(), vec![1u8; 100]].concat());
    // The server may send its own setup messages first; the abort comes last.
    let mut all = Vec::new();
    let _ = r.read_to_end(&mut all);
    let cut = t.elapsed();
    let text = String::from_utf8_lossy(&all);
    assert!(text.contains("timeout: no whole message within 3 s"), "{} bytes", all.len());
    assert!(cut >= Duration::from_millis(2900) && cut < Duration::from_secs(7), "cut after {cut:?}");
    h.join().unwrap();

    let ok = infer(&server.addr, &dir, "1,2,3", &[]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn connections_beyond_the_concurrency_cap_are_refused_in_one_line() {
    let dir = model_dir("cap", false);
    let server = start_server(&dir, &["--max-concurrent-sessions", "1"], None);
    // A session past its Hello holds the only slot (a connection that sends nothing would not:
    // serving.rs).
    let holder = handshaken(&server.addr, false);
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..5 {
        let out = infer(&server.addr, &dir, "1,2,3", &[]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("server busy: 1 sessions running (--max-concurrent-sessions 1)"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let log = server.log_for(Duration::from_millis(300));
    assert_eq!(log.iter().filter(|l| l.contains("refused")).count(), 1, "logged once: {log:#?}");
    // The slot frees when its session ends; then clients are served again.
    drop(holder);
    std::thread::sleep(Duration::from_millis(300));
    let ok = infer(&server.addr, &dir, "1,2,3", &[]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn running_out_of_descriptors_logs_once_and_backs_off() {
    let dir = model_dir("emfile", false);
    let server = start_server(&dir, &["--max-concurrent-sessions", "1000"], Some(24));
    // Hold many connections: the server's accept fails with EMFILE while they stay queued.
    let held: Vec<TcpStream> = (0..40).filter_map(|_| TcpStream::connect(&server.addr).ok()).collect();
    assert!(held.len() > 24);
    let log = server.log_for(Duration::from_secs(3));
    let accept = log.iter().filter(|l| l.contains("accept failed")).count();
    assert!(accept >= 1, "EMFILE expected: {log:#?}");
    assert!(accept <= 1, "one line per interval: {log:#?}");
    assert!(log.len() < 40, "{log:#?}");
    drop(held);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_refuses_a_config_that_does_not_match_the_weights() {
    let dir = model_dir("shapes", true);
    let cfg = dir.join("config.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    v["n_inner"] = serde_json::json!(1000);
    std::fs::write(&cfg, v.to_string()).unwrap();
    let out = nectar().args(["serve", "--listen", "127.0.0.1:0", "--model"]).arg(&dir).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not match the weights") && err.contains("h.0.mlp.c_fc.weight"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn oversized_control_message_after_the_handshake_is_refused() {
    let dir = model_dir("control", false);
    let server = start_server(&dir, &[], None);
    // Where a Query is due, a 5 MiB "query": refused at its header (control messages <= 4 MiB).
    let mut ch = handshaken(&server.addr, true);
    let _ = ch.send(&vec![b' '; 5 << 20]);
    match ch.recv() {
        Err(NetError::Aborted(r)) => assert!(r.contains("over limit: frame of 5242880 bytes exceeds the limit of 4194304"), "{r}"),
        other => panic!("expected an abort frame, got {other:?}"),
    }
    let ok = infer(&server.addr, &dir, "1,2,3", &[]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn weights_truncated_while_serving_fail_the_session_not_the_server() {
    let dir = model_dir("truncated", false);
    let server = start_server(&dir, &[], None);
    let ok = infer(&server.addr, &dir, "5,6,7", &[]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    // The attack (or an operator's mistake): the checkpoint is cut in half in place. With a
    // memory map the server died of SIGBUS on its next read of the lost pages.
    let path = dir.join("model.safetensors");
    let whole = std::fs::read(&path).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(whole.len() as u64 / 2).unwrap();
    let bad = infer(&server.addr, &dir, "5,6,7", &[]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.starts_with("error: ") && err.contains("internal error (ref: session 1)"), "{err}");
    assert!(server_alive(&server), "the server died with the file");
    let log = server.log_for(Duration::from_millis(300));
    assert!(log.iter().any(|l| l.contains("model.safetensors") && l.contains("cannot read tensor")), "{log:#?}");
    // Written back in place (same file, same descriptor): served again, same answer.
    std::fs::write(&path, &whole).unwrap();
    let again = infer(&server.addr, &dir, "5,6,7", &[]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

fn server_alive(server: &Server) -> bool {
    std::fs::read_to_string(format!("/proc/{}/status", server.child.id()))
        .map(|s| !s.lines().any(|l| l.starts_with("State:") && l.contains("zombie")))
        .unwrap_or(false)
}
