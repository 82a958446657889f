//! Streaming private generation on the client: tokens printed as they are opened
//! (`demo` / `infer --generate N --stream`), and `nectar chat`, an interactive conversation
//! whose KV cache the session keeps across turns ([`Task::Chat`]).
//!
//! What the client learns is what the plaintext model would print: each greedy token, no
//! logits. What the server learns: the length of every turn's input and of its answer (the
//! client tells it, after each token, whether to go on: an answer ends at the model's
//! end-of-sequence token or at `--max-new-tokens`), never a token.

use crate::private::{self, ClientModel};
use crate::session::{Input, Live, SessionError, TokenHook};
use nectar_model::chat_template::{ChatTemplate, Message};
use nectar_model::secure::{Output, Task};
use nectar_model::tokenizer::TextTokenizer;
use nectar_model::Suite;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

/// Prints each query's tokens as they arrive, decoded: a line `[i] ` opens each query's text.
pub fn print_hook(tok: Arc<TextTokenizer>) -> TokenHook {
    let state: Mutex<(Option<usize>, Vec<u32>, usize)> = Mutex::new((None, Vec::new(), 0));
    Arc::new(move |q: usize, t: u32| {
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        if s.0 != Some(q) {
            if s.0.is_some() {
                outln!();
            }
            *s = (Some(q), Vec::new(), 0);
            out!("[{q}] ");
        }
        s.1.push(t);
        let printed = s.2;
        if let Some(new) = fresh_text(&tok, &s.1, printed) {
            s.2 += new.len();
            out!("{new}");
            let _ = std::io::stdout().flush();
        }
    })
}

/// The decoded text of `ids` past its first `printed` bytes, unless it ends inside a
/// character (a byte-level token that completes it is still to come).
pub fn fresh_text(tok: &TextTokenizer, ids: &[u32], printed: usize) -> Option<String> {
    let text = tok.decode(ids).ok()?;
    if text.ends_with('\u{FFFD}') || text.len() <= printed || !text.is_char_boundary(printed) {
        return None;
    }
    Some(text[printed..].to_string())
}

/// `nectar chat`: a conversation with the model served at `addr`, read line by line from
/// stdin (`/reset` starts a new one; end of input ends it); each answer streamed.
pub fn chat(addr: &str, suite: &Suite, client: &ClientModel, max_new: usize, system: Option<&str>, seed: Option<u64>) -> Result<(), String> {
    let tok = client.tokenizer.as_ref().ok_or("the model has no tokenizer")?;
    let template = client.chat_template.as_deref().ok_or("the model has no chat template (chat needs an instruct model's GGUF file)")?;
    let template = ChatTemplate::parse(template)?;
    let eos = client.eos_id.ok_or("the model names no end-of-sequence token")?;
    let session = private::connect(addr, suite, client.config.as_ref(), seed)?;
    if session.reveal_to_server() {
        eprintln!("note: this server also learns each output (its reveal-to-server option is on)");
    }
    eprintln!("connected to {addr}; type a message (/reset: new conversation, Ctrl-D: quit)");
    let stdin = std::io::stdin();
    let run = session.run_live(|live| {
        let mut history: Vec<Message> = system.map(|s| vec![Message::new("system", s)]).unwrap_or_default();
        let mut ended_with_eos = true;
        let mut reset = true;
        let mut lines = stdin.lock().lines();
        loop {
            eprint!("> ");
            let Some(line) = lines.next() else { break };
            let line = line.map_err(|e| SessionError::Unexpected(format!("reading stdin: {e}")))?;
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if line == "/reset" {
                history.truncate(usize::from(system.is_some()));
                reset = true;
                eprintln!("(new conversation)");
                continue;
            }
            let (text, answer) = turn(live, &template, tok, &mut history, line, reset, ended_with_eos, max_new, eos)?;
            history.push(Message::new("assistant", &answer));
            ended_with_eos = text.last() == Some(&eos);
            reset = false;
        }
        Ok(())
    });
    let ((), run) = run.map_err(|e| e.to_string())?;
    let secs: f64 = run.reports.iter().map(|r| r.seconds).sum();
    let bytes: u64 = run.reports.iter().map(|r| r.bytes_sent + r.bytes_recv).sum();
    eprintln!("{} turns, {:.1} s, {:.1} MB", run.reports.len(), secs, bytes as f64 / 1e6);
    Ok(())
}

/// One turn: the user's `line` as the template renders it after the conversation so far
/// (the previous answer's end-of-sequence token is in the conversation already, or is closed
/// here when the answer was cut), the answer streamed to stdout. Returns the answer's tokens
/// and text.
#[allow(clippy::too_many_arguments)]
fn turn(
    live: &mut Live<'_, '_>,
    template: &ChatTemplate,
    tok: &TextTokenizer,
    history: &mut Vec<Message>,
    line: &str,
    reset: bool,
    ended_with_eos: bool,
    max_new: usize,
    eos: u32,
) -> Result<(Vec<u32>, String), SessionError> {
    let before = template.render(history, false);
    history.push(Message::new("user", line));
    let full = template.render(history, true);
    let new = full.get(before.len()..).unwrap_or(&full);
    let text = if reset {
        full.clone()
    } else if ended_with_eos {
        // the template's line break after the answer's end-of-sequence token
        format!("\n{new}")
    } else {
        format!("<|im_end|>\n{new}")
    };
    let ids = tok.encode(&text).map_err(|e| SessionError::Unexpected(e.to_string()))?.ids;
    let positions = live.conversation_len() + ids.len();
    let mut got: Vec<u32> = Vec::new();
    let mut printed = 0;
    let mut on_token = |t: u32| {
        if t != eos {
            got.push(t);
            if let Some(s) = fresh_text(tok, &got, printed) {
                printed += s.len();
                out!("{s}");
                let _ = std::io::stdout().flush();
            }
        }
        t != eos
    };
    let r = live.query(Task::Chat { n_new: max_new, reset }, &Input::Ids(ids), Some(&mut on_token))?;
    outln!();
    let per = r.seconds_per_token().map(|s| format!(", {s:.2} s/token after the first")).unwrap_or_default();
    let tokens = match r.output {
        Output::Tokens(t) => t,
        _ => Vec::new(),
    };
    let answer = tok.decode(&got).map_err(|e| SessionError::Unexpected(e.to_string()))?;
    eprintln!("({} tokens in {:.1} s{per}; {} positions in the conversation)", tokens.len(), r.seconds, positions + tokens.len());
    Ok((tokens, answer))
}
