//! The admin endpoint of `nectar serve --admin ADDR`: a minimal HTTP/1.1 responder for
//! `GET /healthz` (the process answers: 200), `GET /readyz` (200 while the server accepts
//! sessions, 503 with the reason otherwise) and `GET /metrics` (Prometheus text format).
//!
//! Separate from the protocol port, so probes and scrapes never count against the session
//! limits. Each request has [`DEADLINE`] to arrive whole and at most [`MAX_REQUEST`] bytes;
//! at most [`MAX_CONNECTIONS`] are served at once, one thread each; one response per
//! connection (`Connection: close`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Time for a whole request to arrive and for the response to be written (LOCAL).
pub const DEADLINE: Duration = Duration::from_secs(2);
/// Largest request head accepted (LOCAL): probes send a few hundred bytes.
pub const MAX_REQUEST: usize = 8 << 10;
/// Admin connections served at once (LOCAL); more are closed unanswered.
pub const MAX_CONNECTIONS: usize = 16;

/// What the endpoint reports.
pub trait Probe: Send + Sync {
    /// `Ok` while the server accepts new sessions, else the reason it does not.
    fn ready(&self) -> Result<(), String>;
    /// The metrics in Prometheus text format.
    fn metrics(&self) -> Result<String, String>;
}

/// Serves `listener` on a thread of its own for the life of the process.
pub fn spawn(listener: Arc<TcpListener>, probe: Arc<dyn Probe>) -> Result<(), String> {
    std::thread::Builder::new()
        .name("admin".into())
        .spawn(move || {
            let busy = Arc::new(AtomicUsize::new(0));
            for conn in listener.incoming() {
                let Ok(stream) = conn else {
                    // Out of descriptors and the like: do not spin.
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                };
                if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    busy.fetch_sub(1, Ordering::SeqCst);
                    continue;
                }
                let (probe, done) = (Arc::clone(&probe), Arc::clone(&busy));
                let spawned = std::thread::Builder::new().name("admin-request".into()).spawn(move || {
                    answer(stream, probe.as_ref());
                    done.fetch_sub(1, Ordering::SeqCst);
                });
                if spawned.is_err() {
                    busy.fetch_sub(1, Ordering::SeqCst);
                }
            }
        })
        .map(drop)
        .map_err(|e| format!("cannot start the admin endpoint: {e}"))
}

/// Reads one request head (bounded in time and size) and writes the response.
fn answer(mut s: TcpStream, probe: &dyn Probe) {
    let _ = s.set_write_timeout(Some(DEADLINE));
    let (status, body, content_type) = match read_head(&mut s) {
        Ok(head) => route(&head, probe),
        Err(status) => (status, String::new(), "text/plain; charset=utf-8"),
    };
    let head_only = body.is_empty();
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        _ => "Service Unavailable",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(body.as_bytes());
    }
    let _ = s.write_all(&out);
    let _ = s.flush();
}

/// The request line of a request whose head arrived whole, or the status to answer.
fn read_head(s: &mut TcpStream) -> Result<String, u16> {
    let until = Instant::now() + DEADLINE;
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n").or_else(|| buf.windows(2).position(|w| w == b"\n\n")) {
            let head = String::from_utf8_lossy(&buf[..end]);
            return Ok(head.lines().next().unwrap_or_default().to_string());
        }
        if buf.len() > MAX_REQUEST {
            return Err(431);
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || s.set_read_timeout(Some(left)).is_err() {
            return Err(408);
        }
        match s.read(&mut chunk) {
            Ok(0) => return Err(400),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => return Err(408),
        }
    }
}

/// Status, body and content type for a request line such as `GET /readyz HTTP/1.1`.
fn route(request_line: &str, probe: &dyn Probe) -> (u16, String, &'static str) {
    const TEXT: &str = "text/plain; charset=utf-8";
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return (400, "bad request\n".into(), TEXT);
    };
    if method != "GET" && method != "HEAD" {
        return (405, "only GET\n".into(), TEXT);
    }
    let path = target.split('?').next().unwrap_or_default();
    let (status, body, ct) = match path {
        "/healthz" => (200, "ok\n".to_string(), TEXT),
        "/readyz" => match probe.ready() {
            Ok(()) => (200, "ready\n".to_string(), TEXT),
            Err(why) => (503, format!("not ready: {why}\n"), TEXT),
        },
        "/metrics" => match probe.metrics() {
            Ok(text) => (200, text, "text/plain; version=0.0.4; charset=utf-8"),
            Err(e) => (500, format!("{e}\n"), TEXT),
        },
        _ => (404, "not found: /healthz, /readyz, /metrics\n".to_string(), TEXT),
    };
    if method == "HEAD" {
        return (status, String::new(), ct);
    }
    (status, body, ct)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(bool);
    impl Probe for Fixed {
        fn ready(&self) -> Result<(), String> {
            if self.0 { Ok(()) } else { Err("draining".into()) }
        }
        fn metrics(&self) -> Result<String, String> {
            Ok("nectar_up 1\n".into())
        }
    }

    fn get(addr: std::net::SocketAddr, raw: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(raw).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn routes_statuses_and_limits() {
        for ready in [true, false] {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            spawn(Arc::new(l), Arc::new(Fixed(ready))).unwrap();
            assert!(get(addr, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").starts_with("HTTP/1.1 200 OK\r\n"));
            let r = get(addr, b"GET /readyz HTTP/1.0\r\n\r\n");
            if ready {
                assert!(r.starts_with("HTTP/1.1 200") && r.ends_with("ready\n"), "{r}");
            } else {
                assert!(r.starts_with("HTTP/1.1 503") && r.ends_with("not ready: draining\n"), "{r}");
            }
            let m = get(addr, b"GET /metrics?x=1 HTTP/1.1\r\n\r\n");
            assert!(m.contains("version=0.0.4") && m.ends_with("\r\n\r\nnectar_up 1\n"), "{m}");
            assert!(get(addr, b"POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
            assert!(get(addr, b"GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
            assert!(get(addr, &vec![b'a'; MAX_REQUEST + 1]).starts_with("HTTP/1.1 431"));
            // A request that never completes is answered at the deadline.
            let t = Instant::now();
            assert!(get(addr, b"GET /healthz").starts_with("HTTP/1.1 408"));
            assert!(t.elapsed() < DEADLINE + Duration::from_secs(1));
        }
    }
}
