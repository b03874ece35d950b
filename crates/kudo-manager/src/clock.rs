//! The manager's one time of day. Maintenance windows, suppressions,
//! backoffs and Ready's transition times read it; tests set it instead of
//! waiting for a real minute to come round.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use jiff::{SignedDuration, Timestamp};

/// The time of day: the system's, or the system's moved by an offset a
/// test sets (time keeps running from where it was set).
#[derive(Clone, Debug, Default)]
pub struct Clock {
    /// Nanoseconds added to the system time; None for the system clock.
    offset: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self::default()
    }

    /// A clock that starts at the system time and that [`Clock::set`] and
    /// [`Clock::advance`] move (its clones move with it).
    pub fn settable() -> Self {
        Self {
            offset: Some(Arc::new(AtomicI64::new(0))),
        }
    }

    /// Now.
    pub fn now(&self) -> Timestamp {
        let real = Timestamp::now();
        let Some(offset) = &self.offset else {
            return real;
        };
        let moved = SignedDuration::from_nanos(offset.load(Ordering::Relaxed));
        real.checked_add(moved).unwrap_or(real)
    }

    /// From now on the time runs from `at`. No effect on the system clock.
    pub fn set(&self, at: Timestamp) {
        if let Some(offset) = &self.offset {
            let moved = at.duration_since(Timestamp::now());
            let nanos = i64::try_from(moved.as_nanos()).unwrap_or(i64::MAX);
            offset.store(nanos, Ordering::Relaxed);
        }
    }

    /// Moves the time forward by `by`. No effect on the system clock.
    pub fn advance(&self, by: SignedDuration) {
        if let Some(offset) = &self.offset {
            let nanos = i64::try_from(by.as_nanos()).unwrap_or(i64::MAX);
            offset.fetch_add(nanos, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_clock_runs_on_from_where_it_was_set() {
        let clock = Clock::settable();
        let copy = clock.clone();
        let at: Timestamp = "2030-01-01T00:00:00Z".parse().unwrap();
        clock.set(at);
        let seen = copy.now();
        assert!(
            seen >= at && seen < at + SignedDuration::from_secs(60),
            "{seen}"
        );
        copy.advance(SignedDuration::from_hours(2));
        assert!(clock.now() >= at + SignedDuration::from_hours(2));
    }

    #[test]
    fn the_system_clock_cannot_be_moved() {
        let clock = Clock::system();
        clock.set("2030-01-01T00:00:00Z".parse().unwrap());
        clock.advance(SignedDuration::from_hours(24 * 365));
        let year = clock.now().to_zoned(jiff::tz::TimeZone::UTC).year();
        assert!(year < 2030, "{year}");
    }
}
