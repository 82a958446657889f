//! A log line at most once per interval: a server flooded with the same event (accept failing
//! with EMFILE, connections refused at the session cap) reports it once, then how many more
//! there were, instead of one line per event.

use std::time::{Duration, Instant};

/// Counts events and says when one may be logged.
#[derive(Debug)]
pub struct RateLimitedLog {
    interval: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl RateLimitedLog {
    pub fn new(interval: Duration) -> Self {
        RateLimitedLog { interval, last: None, suppressed: 0 }
    }

    /// An event at `now`: `Some(suffix)` if it may be logged (the suffix counts the events
    /// suppressed since the last logged one, empty if none), `None` if it is only counted.
    pub fn event(&mut self, now: Instant) -> Option<String> {
        match self.last {
            Some(t) if now.saturating_duration_since(t) < self.interval => {
                self.suppressed += 1;
                None
            }
            _ => {
                self.last = Some(now);
                let n = std::mem::take(&mut self.suppressed);
                Some(if n > 0 { format!(" ({n} more since the last report)") } else { String::new() })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_then_the_count() {
        let mut l = RateLimitedLog::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(l.event(t0).as_deref(), Some(""));
        let logged = (1..1000).filter(|i| l.event(t0 + Duration::from_millis(*i)).is_some()).count();
        assert_eq!(logged, 0);
        assert_eq!(l.event(t0 + Duration::from_secs(11)).as_deref(), Some(" (999 more since the last report)"));
        assert_eq!(l.event(t0 + Duration::from_secs(22)).as_deref(), Some(""));
    }
}
