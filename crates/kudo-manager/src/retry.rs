//! How soon a failed reconcile of an Instance runs again: later with every
//! failure in a row. A status the API server refuses (too large, say)
//! would otherwise redo the reconcile's work, applies and pod execs
//! included, every two seconds for as long as it fails.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The first wait after a transient failure; it doubles from there.
const TRANSIENT_FIRST: Duration = Duration::from_secs(2);
/// The longest wait after transient failures.
const TRANSIENT_MOST: Duration = Duration::from_secs(300);
/// The first wait after a failure a person has to fix (the watch brings
/// the fix sooner); it doubles from there.
const FATAL_FIRST: Duration = Duration::from_secs(60);
/// The longest wait after failures a person has to fix.
const FATAL_MOST: Duration = Duration::from_secs(900);

/// The wait before the next reconcile after `failures` failures in a row
/// (1 for the first), the last of them `transient` or not.
pub fn retry_after(transient: bool, failures: u32) -> Duration {
    let (first, most) = if transient {
        (TRANSIENT_FIRST, TRANSIENT_MOST)
    } else {
        (FATAL_FIRST, FATAL_MOST)
    };
    let doublings = failures.saturating_sub(1).min(16);
    first.saturating_mul(1 << doublings).min(most)
}

/// Failures in a row per Instance (`namespace/name`); an Instance is
/// forgotten when a reconcile of it succeeds or it is gone.
#[derive(Debug, Default)]
pub struct Failures {
    in_a_row: Mutex<HashMap<String, u32>>,
}

impl Failures {
    /// Counts a failure of `key`; how many in a row now.
    pub fn failed(&self, key: String) -> u32 {
        let mut in_a_row = self.in_a_row.lock().unwrap_or_else(PoisonError::into_inner);
        let count = in_a_row.entry(key).or_default();
        *count = count.saturating_add(1);
        *count
    }

    /// Forgets the failures of `key`.
    pub fn forget(&self, key: &str) {
        let mut in_a_row = self.in_a_row.lock().unwrap_or_else(PoisonError::into_inner);
        if !in_a_row.is_empty() {
            in_a_row.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_in_a_row_waits_twice_as_long_up_to_a_limit() {
        let waits: Vec<u64> = (1..=9).map(|n| retry_after(true, n).as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 64, 128, 256, 300]);
        assert_eq!(retry_after(false, 1), Duration::from_secs(60));
        assert_eq!(retry_after(false, 5), Duration::from_secs(900));
        assert_eq!(retry_after(true, u32::MAX), TRANSIENT_MOST);
    }

    #[test]
    fn failures_count_per_instance_until_forgotten() {
        let failures = Failures::default();
        assert_eq!(failures.failed("ns/a".into()), 1);
        assert_eq!(failures.failed("ns/a".into()), 2);
        assert_eq!(failures.failed("ns/b".into()), 1);
        failures.forget("ns/a");
        assert_eq!(failures.failed("ns/a".into()), 1);
    }
}
