//! The server's log (`nectar serve --log-format text|json`), through `tracing`.
//!
//! Text (the default) writes each event's message alone, one line on stderr, as the server
//! always has (tests and operators grep these lines). JSON writes one object per event with
//! its level, timestamp, fields and the session span (`session{id, peer}`) it belongs to.

use std::fmt;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// How log events are written (`--log-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// The message alone, one line per event.
    #[default]
    Text,
    /// One JSON object per line: timestamp, level, message, fields, session span.
    Json,
}

/// Installs the process-wide log writer (stderr) unless one is installed already, so a
/// library caller (the Python binding, `nectar demo`) gets the text log without asking.
pub fn init(format: LogFormat) {
    if tracing::dispatcher::has_been_set() {
        return;
    }
    let builder = tracing_subscriber::fmt().with_writer(std::io::stderr);
    // A race with another initialiser leaves theirs in place: nothing to report.
    let _ = match format {
        LogFormat::Text => tracing::subscriber::set_global_default(builder.event_format(MessageOnly).finish()),
        LogFormat::Json => tracing::subscriber::set_global_default(
            builder.json().with_current_span(true).with_span_list(false).finish(),
        ),
    };
}

/// Writes an event's message and nothing else (its fields are for the JSON log).
struct MessageOnly;

impl<S, N> FormatEvent<S, N> for MessageOnly
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mut m = Message(String::new());
        event.record(&mut m);
        writeln!(writer, "{}", m.0)
    }
}

struct Message(String);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            use fmt::Write;
            let _ = write!(self.0, "{value:?}");
        }
    }
}
