//! `nectar infer --retries N` (issue 51, item 6): a query whose connection or session failed
//! for a reason another attempt can cure — the server could not be reached, was busy or
//! draining, or its connection broke (a replica killed behind a load balancer) — is run again
//! on a new connection, which a load balancer sends to a live replica. Errors another attempt
//! would only repeat (a suite or model mismatch, a query the model cannot answer) end at once.

use crate::private::{default_task, Input};
use crate::session::{Agreement, ClientRun, ClientSession, QueryProgress, SessionError, TokenHook};
use crate::test_seed;
use nectar_model::config::ModelConfig;
use nectar_model::Suite;
use nectar_net::{NetError, Role, TcpChannel};
use std::time::Duration;

/// First wait between attempts (LOCAL); doubled per attempt up to [`MAX_BACKOFF`]: a load
/// balancer needs a health-check interval or two to mark a dead replica down.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
pub const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// Why one attempt failed, and whether another may succeed.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub retryable: bool,
}

/// Whether another attempt on a new connection may cure `e`.
pub fn retryable(e: &SessionError) -> bool {
    match e {
        // The server said so: busy (slots, memory), draining.
        SessionError::Server(r) | SessionError::Refused(r) => r.starts_with("server busy"),
        SessionError::Mismatch(_) | SessionError::Rejected(_) | SessionError::BadRequest(_) => false,
        _ => match e.net_cause() {
            Some(n) => matches!(n, NetError::Closed | NetError::Timeout | NetError::Io(_)),
            // Operators wrap their channel's error in layers whose `source` skips it
            // (`#[error(transparent)]`): what is left is its text, at the end of the message.
            None => {
                let text = e.to_string();
                [NetError::Closed.to_string(), NetError::Timeout.to_string()].iter().any(|t| text.ends_with(t.as_str()))
                    || text.contains("i/o error: ")
            }
        },
    }
}

/// One attempt: connect to `addr`, handshake, run every input as one session.
#[allow(clippy::too_many_arguments)]
fn attempt(
    addr: &str,
    suite: &Suite,
    expected: Option<&ModelConfig>,
    inputs: &[Input],
    tokens: usize,
    classify: bool,
    batch: usize,
    progress: Option<QueryProgress>,
    seed: Option<u64>,
    on_token: Option<TokenHook>,
) -> Result<(ClientRun, ModelConfig), Failure> {
    let agreement = Agreement::new(suite).map_err(|message| Failure { message, retryable: false })?;
    // A connection that cannot be made (refused, unreachable, timed out) may be made later.
    let ch = TcpChannel::connect(addr).map_err(|e| Failure { message: format!("connect {addr}: {e}"), retryable: true })?;
    let fail = |e: SessionError| Failure { retryable: retryable(&e), message: e.to_string() };
    let mut session = ClientSession::connect(Box::new(ch), agreement, expected, test_seed::session_prg(seed, Role::Client, 0)).map_err(fail)?;
    if let Some(p) = progress {
        session = session.with_progress(p);
    }
    if let Some(h) = on_token {
        session = session.with_token_hook(h);
    }
    if session.reveal_to_server() {
        eprintln!("note: this server also learns each output (its reveal-to-server option is on)");
    }
    let cfg = session.config().clone();
    let task = default_task(&cfg, tokens, classify);
    let queries = crate::batch::queries(&task, inputs, batch).map_err(|message| Failure { message, retryable: false })?;
    let run = session.run(&queries).map_err(fail)?;
    Ok((run, cfg))
}

/// Connect to `addr` and run `inputs` as one session, in queries of `batch` inputs
/// ([`crate::batch::queries`]; `progress`: told after each transformer block; `seed`:
/// [`crate::test_seed`], tests only; `on_token`: told each generated token as it is opened),
/// with up to `retries` more attempts after a retryable failure, each on a new connection
/// after a growing pause; each retry is told on stderr (`infer: attempt 1 failed: ...;
/// retrying in 1.0 s`). The last failure is the error. A
/// retried generation streams its tokens (`on_token`) again from its first.
#[allow(clippy::too_many_arguments)]
pub fn run_client(
    addr: &str,
    suite: &Suite,
    expected: Option<&ModelConfig>,
    inputs: &[Input],
    tokens: usize,
    classify: bool,
    batch: usize,
    progress: Option<QueryProgress>,
    seed: Option<u64>,
    on_token: Option<TokenHook>,
    retries: usize,
) -> Result<(ClientRun, ModelConfig), String> {
    let mut wait = FIRST_BACKOFF;
    for n in 0.. {
        match attempt(addr, suite, expected, inputs, tokens, classify, batch, progress.clone(), seed, on_token.clone()) {
            Ok(r) => return Ok(r),
            Err(f) if f.retryable && n < retries => {
                eprintln!(
                    "infer: attempt {} failed: {}; retrying in {:.1} s ({} retries left)",
                    n + 1,
                    f.message,
                    wait.as_secs_f64(),
                    retries - n
                );
                std::thread::sleep(wait);
                wait = (wait * 2).min(MAX_BACKOFF);
            }
            Err(f) if n > 0 => return Err(format!("{} (attempt {} of {})", f.message, n + 1, retries + 1)),
            Err(f) => return Err(f.message),
        }
    }
    unreachable!("the loop returns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_retried() {
        let io = |k| SessionError::Net(NetError::Io(std::io::Error::from(k)));
        assert!(retryable(&SessionError::Net(NetError::Closed)));
        assert!(retryable(&io(std::io::ErrorKind::ConnectionReset)));
        assert!(retryable(&SessionError::Server("server busy: draining".into())));
        assert!(retryable(&SessionError::Server("server busy: memory: 3 sessions running".into())));
        assert!(!retryable(&SessionError::Server("bad request: 600 tokens".into())));
        assert!(!retryable(&SessionError::Mismatch("suite mismatch: gelu".into())));
        assert!(!retryable(&SessionError::BadRequest("too long".into())));
        assert!(!retryable(&SessionError::Net(NetError::FrameTooLarge { len: 9, max: 8 })));
        // A broken connection under an operator (`operator: backend: ...`, as a killed
        // replica's client sees it).
        #[derive(Debug)]
        struct Transparent(NetError);
        impl std::fmt::Display for Transparent {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
        impl std::error::Error for Transparent {}
        let nested = |n: NetError| {
            let nn = nectar_nn::NnError::Backend(Box::new(Transparent(n)));
            SessionError::Secure(nectar_model::secure::SecureError::Nn(nn))
        };
        assert_eq!(nested(NetError::Closed).to_string(), "operator: backend: peer closed the connection");
        assert!(retryable(&nested(NetError::Closed)));
        assert!(retryable(&nested(NetError::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset)))));
        assert!(!retryable(&nested(NetError::FrameTooLarge { len: 9, max: 8 })));
    }

    #[test]
    fn an_unreachable_server_is_retried_then_reported() {
        // A port nothing listens on: bind, note it, close.
        let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let suite = Suite::parse("nectar").unwrap();
        let t = std::time::Instant::now();
        let e = match run_client(&addr, &suite, None, &[Input::Ids(vec![101, 102])], 1, false, 1, None, None, None, 1) {
            Ok(_) => panic!("nothing listens on {addr}"),
            Err(e) => e,
        };
        assert!(e.contains("connect") && e.ends_with("(attempt 2 of 2)"), "{e}");
        assert!(t.elapsed() >= FIRST_BACKOFF);
    }
}
