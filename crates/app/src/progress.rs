//! Progress bars on stderr for long CLI runs (`infer`, `demo`, `bench suites`), with
//! indicatif. Drawn only when stderr is a terminal (so never in tests, pipes or CI logs), and
//! never in `--json` mode (callers do not create one there).

use crate::session::QueryProgress;
use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Arc;

/// A bar over a session's queries, advanced after each transformer block.
pub struct QueryBar {
    bar: ProgressBar,
}

impl QueryBar {
    /// A bar labelled `label` (e.g. `infer`); its length is learnt from the first report.
    pub fn new(label: &str) -> Self {
        // Length 1 until the first report tells the real one: an empty bar, not a full one.
        let bar = ProgressBar::new(1);
        // The template is a constant: a parse failure is a programming error caught by the
        // unit test below, and falls back to the default style rather than panicking.
        if let Ok(style) = ProgressStyle::with_template("{prefix} [{bar:30}] {msg} ({elapsed})") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(label.to_string());
        bar.set_message("session setup");
        QueryBar { bar }
    }

    /// The session hook that moves this bar: `(query, queries, block, blocks)`. A generation
    /// reports each step's blocks again, so the bar refills once per generated token.
    pub fn hook(&self) -> QueryProgress {
        let bar = self.bar.clone();
        Arc::new(move |q, n, b, blocks| {
            bar.set_length((n * blocks) as u64);
            bar.set_position((q * blocks + b) as u64);
            bar.set_message(format!("query {}/{n}, block {b}/{blocks}", q + 1));
        })
    }

    /// Removes the bar (the results are printed after it).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_parses_and_hook_moves_the_bar() {
        assert!(ProgressStyle::with_template("{prefix} [{bar:30}] {msg} ({elapsed})").is_ok());
        let b = QueryBar::new("t");
        (b.hook())(1, 2, 3, 6);
        assert_eq!(b.bar.position(), 9);
        assert_eq!(b.bar.length(), Some(12));
        b.finish();
    }
}
