//! A benchmark's server party in a child process (`bench model`, `bench suites`): the parent
//! listens on loopback, starts this binary with the hidden `--server-party ADDR`, and runs the
//! client party on the connection the child opens, so each party's peak RSS is its own.

use nectar_net::TcpChannel;
use std::net::TcpListener;
use std::process::Child;
use std::time::{Duration, Instant};

/// How long the parent waits for its child server party to connect.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(120);

/// A loopback listener for the child, and the address to give it.
pub fn listen() -> Result<(TcpListener, String), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind loopback: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?.to_string();
    Ok((listener, addr))
}

/// The connection `child` opens on `listener`, as a channel without a read deadline (the parent
/// watches the child; a long local computation must not time the link out). An error if the
/// child exits first or does not connect within [`CONNECT_TIMEOUT`].
pub fn accept_child(listener: &TcpListener, child: &mut Child) -> Result<TcpChannel, String> {
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let stream = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Ok(Some(st)) = child.try_wait() {
                    return Err(format!("the server party exited before connecting ({st})"));
                }
                if t0.elapsed() > CONNECT_TIMEOUT {
                    return Err("the server party did not connect".into());
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(format!("accept: {e}")),
        }
    };
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    let mut ch = TcpChannel::from_stream(stream).map_err(|e| e.to_string())?;
    ch.set_timeout(None).map_err(|e| e.to_string())?;
    Ok(ch)
}

/// Resets this process's peak RSS counter (`VmHWM`) to its current RSS (Linux ≥ 4.0; a no-op
/// elsewhere, where the peak then covers the whole process).
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Ends the child after the client party ran: killed if the client failed, else waited for;
/// the client's result and the child's stdout (its report) when both succeeded.
pub fn finish<T>(mut child: Child, client: Result<T, String>) -> Result<(T, Vec<u8>), String> {
    let client = match client {
        Ok(c) => c,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    let out = child.wait_with_output().map_err(|e| format!("waiting for the server party: {e}"))?;
    if !out.status.success() {
        return Err(format!("the server party failed ({})", out.status));
    }
    Ok((client, out.stdout))
}
