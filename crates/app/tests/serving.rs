//! `nectar serve` in production (issue 51): session slots only for real sessions, the admin
//! endpoint, graceful drain on SIGTERM, sessions of vanished clients stopped at once. Real
//! binary over loopback TCP, on the tiny BERT.

use nectar_model::Suite;
use nectar_net::ABORT_MARK;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    addr: String,
    admin: Option<String>,
    log: Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }
    /// Exit status within `wait`, `None` if still running.
    fn exit_within(&mut self, wait: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + wait;
        while Instant::now() < end {
            if let Some(s) = self.child.try_wait().unwrap() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
    /// `(status, body)` of `GET path` on the admin endpoint.
    fn get(&self, path: &str) -> (u16, String) {
        let mut s = TcpStream::connect(self.admin.as_deref().expect("--admin")).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
        let mut r = String::new();
        s.read_to_string(&mut r).unwrap();
        let status = r.split_whitespace().nth(1).unwrap().parse().unwrap();
        let body = r.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
        (status, body)
    }
    /// A sample's value in `/metrics` (`name` with its labels, as printed).
    fn metric(&self, name: &str) -> Option<f64> {
        let (_, body) = self.get("/metrics");
        body.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.trim().parse().ok()))
    }
    fn wait_metric(&self, name: &str, want: f64, within: Duration) -> Option<Duration> {
        let t = Instant::now();
        while t.elapsed() < within {
            if self.metric(name) == Some(want) {
                return Some(t.elapsed());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
    fn log_until(&self, pat: &str, within: Duration) -> Vec<String> {
        let end = Instant::now() + within;
        let mut v = Vec::new();
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.log.recv_timeout(left) {
                Ok(l) => {
                    let hit = l.contains(pat);
                    v.push(l);
                    if hit {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        v
    }
}

fn start_server(dir: &Path, extra: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nectar"))
        .args(["serve", "--listen", "127.0.0.1:0", "--op", "ot=ferret-small", "--model"])
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
    let first = rx.recv_timeout(Duration::from_secs(60)).expect("server banner");
    let addr = first.split(" on ").nth(1).and_then(|s| s.split_whitespace().next()).expect("address in banner").to_string();
    let admin = first.split("admin on http://").nth(1).map(|a| a.chars().take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':').collect());
    Server { child, addr, admin, log: rx }
}

fn model_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nectar-serving-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    nectar_bench::fixtures::tiny::write_tiny_bert(&dir, 3).unwrap();
    dir
}

fn suite() -> Suite {
    let mut s = Suite::parse("nectar").unwrap();
    s.apply_overrides("ot=ferret-small").unwrap();
    s
}

fn hello_frame() -> Vec<u8> {
    let s = suite();
    let hello = serde_json::to_vec(&serde_json::json!({ "Hello": { "agreement": { "version": nectar_app::session::PROTOCOL_VERSION, "suite": s, "digest": s.digest() } } })).unwrap();
    [(hello.len() as u32).to_le_bytes().to_vec(), hello].concat()
}

/// A TCP connection to `to` from the loopback address `from` (127.0.0.0/8 is all loopback),
/// so that connections can come from several client addresses.
fn connect_from(from: Ipv4Addr, to: &str) -> TcpStream {
    let to: SocketAddr = to.parse().unwrap();
    let SocketAddr::V4(to) = to else { panic!("IPv4 expected") };
    let sa = |ip: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a fresh socket, bound and connected with valid sockaddr_in values, then owned
    // by the returned stream.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let src = sa(from, 0);
        assert_eq!(libc::bind(fd, (&src as *const libc::sockaddr_in).cast(), len), 0, "bind {from}");
        let dst = sa(*to.ip(), to.port());
        assert_eq!(libc::connect(fd, (&dst as *const libc::sockaddr_in).cast(), len), 0, "connect from {from}");
        TcpStream::from_raw_fd(fd)
    }
}

/// What an abort frame says (`None`: the stream ended without one).
fn read_abort(s: &mut TcpStream) -> Option<String> {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut h = [0u8; 4];
    s.read_exact(&mut h).ok()?;
    assert_eq!(u32::from_le_bytes(h), ABORT_MARK, "expected an abort frame");
    s.read_exact(&mut h).ok()?;
    let mut r = vec![0u8; u32::from_le_bytes(h) as usize];
    s.read_exact(&mut r).ok()?;
    Some(String::from_utf8(r).unwrap())
}

fn plaintext_embedding(dir: &Path, ids: &[u32]) -> Vec<f32> {
    let m = nectar_model::Model::load(dir).unwrap();
    match m.network() {
        nectar_model::Network::Bert(b) => b.embed_ids(ids).unwrap(),
        _ => panic!("tiny BERT expected"),
    }
}

/// An honest `nectar infer` of `ids`: its wall time, and the cosine of its private embedding
/// to the plaintext one.
fn honest_query(addr: &str, dir: &Path, ids: &[u32]) -> (Duration, f32) {
    let list = ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_nectar"))
        .args(["infer", "--connect", addr, "--json", "--op", "ot=ferret-small", "--ids", &list, "--model"])
        .arg(dir)
        .output()
        .unwrap();
    let took = t.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let first: serde_json::Value = serde_json::from_str(String::from_utf8(out.stdout).unwrap().lines().next().unwrap()).unwrap();
    let private: Vec<f32> = serde_json::from_value(first["private"]["Embedding"].clone()).unwrap();
    (took, nectar_model::cosine(&private, &plaintext_embedding(dir, ids)))
}

/// Issue 51, item 4: 100 connections that send nothing and 20 that trickle a `Hello` one byte
/// a second hold no session slot; an honest client is served at once and correctly. One
/// address alone gets at most `--max-pending-per-peer` places.
#[test]
fn idle_and_trickling_connections_do_not_starve_an_honest_client() {
    let dir = model_dir("starve");
    let server = start_server(&dir, &["--max-concurrent-sessions", "2", "--admin", "127.0.0.1:0"]);
    let ids = [4u32, 8, 15, 16, 23];
    let (alone, cos) = honest_query(&server.addr, &dir, &ids);
    assert!(cos > 0.99, "cosine {cos}");

    // 100 silent connections from four addresses (25 each, under the per-address cap of 32).
    let idle: Vec<TcpStream> = (0..100).map(|i| connect_from(Ipv4Addr::new(127, 0, 0, 2 + i / 25), &server.addr)).collect();
    // 20 trickling a valid Hello, one byte a second, from a fifth address.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tricklers: Vec<_> = (0..20)
        .map(|_| {
            let mut s = connect_from(Ipv4Addr::new(127, 0, 0, 6), &server.addr);
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                for b in hello_frame() {
                    if stop.load(std::sync::atomic::Ordering::SeqCst) || s.write_all(&[b]).is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
            })
        })
        .collect();
    assert_eq!(server.wait_metric("nectar_connections_pending", 120.0, Duration::from_secs(5)).map(|_| ()), Some(()), "all 120 held");
    assert_eq!(server.metric("nectar_sessions_active"), Some(0.0));

    let (attacked, cos) = honest_query(&server.addr, &dir, &ids);
    assert!(cos > 0.99, "cosine {cos}");
    eprintln!("honest client alone {alone:?}, under 100 idle + 20 trickling connections {attacked:?}");
    assert!(attacked < alone * 3 + Duration::from_secs(2), "{attacked:?} against {alone:?} alone");

    // One address past its cap is refused in one line; the others are untouched.
    let mut extra: Vec<TcpStream> = (0..40).map(|_| connect_from(Ipv4Addr::new(127, 0, 0, 7), &server.addr)).collect();
    std::thread::sleep(Duration::from_millis(300));
    let refused = extra.iter_mut().rev().take(8).filter_map(read_abort).collect::<Vec<_>>();
    assert_eq!(refused.len(), 8, "{refused:?}");
    assert!(refused.iter().all(|r| r.starts_with("server busy: 32 connections from 127.0.0.7 awaiting their handshake")), "{refused:?}");
    assert_eq!(server.metric(r#"nectar_sessions_refused_total{reason="per_peer_cap"}"#), Some(8.0));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    drop((idle, extra));
    for t in tricklers {
        t.join().unwrap();
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 51, items 1 and 2: `/healthz`, `/readyz` and `/metrics`; SIGTERM while a session
/// runs: not ready, new connections refused with `server busy: draining`, the session
/// completes correctly, exit 0. Then: a drain that times out cuts its session and exits 0;
/// a second signal exits at once.
#[test]
fn sigterm_drains_the_running_session_then_exits_0() {
    let dir = model_dir("drain");
    let mut server = start_server(&dir, &["--admin", "127.0.0.1:0"]);
    assert_eq!(server.get("/healthz"), (200, "ok\n".into()));
    assert_eq!(server.get("/readyz"), (200, "ready\n".into()));
    // A session in flight: past its handshake, its setup and query still to come.
    let session = nectar_app::private::connect(&server.addr, &suite(), None, None).unwrap();
    assert!(server.wait_metric("nectar_sessions_active", 1.0, Duration::from_secs(5)).is_some());
    server.signal(libc::SIGTERM);
    let log = server.log_until("draining", Duration::from_secs(5));
    assert!(log.iter().any(|l| l.contains("serve: draining: 1 sessions running")), "{log:#?}");
    assert_eq!(server.get("/readyz"), (503, "not ready: draining\n".into()));
    assert_eq!(server.metric("nectar_draining"), Some(1.0));
    let mut late = TcpStream::connect(&server.addr).unwrap();
    assert_eq!(read_abort(&mut late).as_deref(), Some("server busy: draining"));
    let ids = vec![3u32, 1, 4, 1, 5];
    let run = session.run(&[(nectar_model::secure::Task::Embed, nectar_app::private::Input::Ids(ids.clone()))]).unwrap();
    let nectar_model::secure::Output::Embedding(private) = &run.reports[0].output else { panic!("an embedding") };
    let cos = nectar_model::cosine(private, &plaintext_embedding(&dir, &ids));
    assert!(cos > 0.99, "cosine {cos}");
    let status = server.exit_within(Duration::from_secs(10)).expect("exits once drained");
    assert_eq!(status.code(), Some(0));
    let log: Vec<String> = server.log.try_iter().collect();
    assert!(log.iter().any(|l| l.contains("closed after 1 queries")), "{log:#?}");
    assert!(log.iter().any(|l| l.contains("refused") && l.contains("draining")), "{log:#?}");

    // A session that does not finish within --drain-timeout is cut; the exit is still 0.
    let mut server = start_server(&dir, &["--drain-timeout", "1"]);
    let held = nectar_app::private::connect(&server.addr, &suite(), None, None).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    server.signal(libc::SIGTERM);
    let status = server.exit_within(Duration::from_secs(10)).expect("exits at the drain timeout");
    assert_eq!(status.code(), Some(0));
    assert!(t.elapsed() >= Duration::from_millis(900) && t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    drop(held);

    // A second signal ends the process at once.
    let mut server = start_server(&dir, &[]);
    let held = nectar_app::private::connect(&server.addr, &suite(), None, None).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    server.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    server.signal(libc::SIGTERM);
    let status = server.exit_within(Duration::from_secs(3)).expect("exits at the second signal");
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    drop(held);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 51, item 3: a client that vanishes mid-session is noticed within a second; its
/// session ends and its slot frees (logged as JSON with `--log-format json`).
#[test]
fn a_vanished_client_is_noticed_within_a_second() {
    let dir = model_dir("vanish");
    let server = start_server(&dir, &["--admin", "127.0.0.1:0", "--max-concurrent-sessions", "1", "--log-format", "json"]);
    // A client that completes its handshake by hand and then goes silent: its session waits
    // for the setup. Killed (its socket closed by the kernel), it is gone within the poll.
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(&hello_frame()).unwrap();
    let mut h = [0u8; 4];
    s.read_exact(&mut h).unwrap();
    assert!(server.wait_metric("nectar_sessions_active", 1.0, Duration::from_secs(5)).is_some());
    assert_eq!(server.get("/readyz").0, 503, "the only slot is taken");
    drop(s);
    let took = server.wait_metric("nectar_sessions_active", 0.0, Duration::from_secs(5)).expect("the slot frees");
    eprintln!("vanished client noticed after {took:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert_eq!(server.get("/readyz").0, 200);
    let aborted = server.metric(r#"nectar_sessions_aborted_total{reason="peer_gone"}"#).unwrap_or(0.0)
        + server.metric(r#"nectar_sessions_aborted_total{reason="peer_closed"}"#).unwrap_or(0.0);
    assert_eq!(aborted, 1.0, "{}", server.get("/metrics").1);
    // The JSON log: one object per event, in the session's span.
    let line = server.log_until("ended with error", Duration::from_secs(2)).pop().expect("a log line");
    let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON log line");
    assert_eq!(v["span"]["name"], "session", "{v}");
    assert_eq!(v["span"]["id"], 0, "{v}");
    assert_eq!(v["level"], "WARN", "{v}");
    assert!(["peer_gone", "peer_closed"].contains(&v["fields"]["reason"].as_str().unwrap_or_default()), "{v}");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
