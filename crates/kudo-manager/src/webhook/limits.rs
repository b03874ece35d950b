//! What keeps a flood of connections from taking the manager down: the
//! warning it logs is rate-limited, and a failing `accept` backs off.
//!
//! Out of file descriptors (EMFILE), `accept` fails at once every time it is
//! called: logged and retried without a pause, that loop logged thousands
//! of lines a minute and spun a core.

use std::time::{Duration, Instant};

/// At most one line per `every`; the lines left out are counted and
/// reported with the next one. The caller passes the time (tests pass
/// their own).
#[derive(Debug)]
pub(super) struct WarnLimiter {
    every: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl WarnLimiter {
    pub(super) fn new(every: Duration) -> Self {
        Self {
            every,
            last: None,
            suppressed: 0,
        }
    }

    /// Something worth a line happened at `now`: `Some(n)` when the line
    /// is to be logged now (`n` lines were left out since the last one),
    /// `None` when it is left out.
    pub(super) fn note(&mut self, now: Instant) -> Option<u64> {
        let due = self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.every);
        if due {
            self.last = Some(now);
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed += 1;
            None
        }
    }
}

/// The pause after a failed `accept`: from `first`, doubling while accepts
/// keep failing, at most `max`; back to `first` after one succeeds.
#[derive(Debug)]
pub(super) struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub(super) fn new(first: Duration, max: Duration) -> Self {
        Self {
            first,
            max,
            next: first,
        }
    }

    /// How long to pause after this failure.
    pub(super) fn failed(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(self.max);
        pause
    }

    pub(super) fn succeeded(&mut self) {
        self.next = self.first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_warning_is_logged_and_the_next_within_a_second_are_counted() {
        let start = Instant::now();
        let mut limiter = WarnLimiter::new(Duration::from_secs(1));
        assert_eq!(limiter.note(start), Some(0));
        for ms in [1, 10, 500, 999] {
            assert_eq!(limiter.note(start + Duration::from_millis(ms)), None);
        }
        // A second after the last line: logged, saying four were left out.
        assert_eq!(limiter.note(start + Duration::from_secs(1)), Some(4));
        assert_eq!(
            limiter.note(start + Duration::from_millis(1_500)),
            None,
            "the second counts from the line just logged"
        );
        assert_eq!(limiter.note(start + Duration::from_secs(5)), Some(1));
    }

    #[test]
    fn a_flood_of_warnings_logs_one_line_per_second_with_the_count_left_out() {
        let start = Instant::now();
        let mut limiter = WarnLimiter::new(Duration::from_secs(1));
        // A failure every 10 ms for 100 s.
        let logged: Vec<u64> = (0..10_000u64)
            .filter_map(|i| limiter.note(start + Duration::from_millis(i * 10)))
            .collect();
        assert_eq!(logged.len(), 100);
        assert_eq!(logged[0], 0);
        assert!(
            logged[1..].iter().all(|&left_out| left_out == 99),
            "{logged:?}"
        );
    }

    #[test]
    fn accept_failures_back_off_doubling_to_a_cap_and_reset_on_success() {
        let mut backoff = Backoff::new(Duration::from_millis(10), Duration::from_millis(80));
        let pauses: Vec<u128> = (0..6).map(|_| backoff.failed().as_millis()).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 80, 80]);
        backoff.succeeded();
        assert_eq!(backoff.failed(), Duration::from_millis(10));
    }
}
