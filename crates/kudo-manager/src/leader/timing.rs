//! The three durations of leader election, named and defaulted as
//! controller-runtime names them (`--leader-elect-lease-duration` 15 s,
//! `--leader-elect-renew-deadline` 10 s, `--leader-elect-retry-period` 2 s),
//! and the decisions that depend on them. Pure: the election loop in
//! `leader.rs` asks these functions and only does the IO.
//!
//! ```text
//!  leader renews every retry period ──► a renewal fails … keeps leading until
//!  renew deadline after the last success ──► stops (the process exits)
//!  followers try every retry period ──► take over once lease duration has
//!  passed since the last renewal: at most lease duration + retry period
//!  after the leader died (17 s by default)
//! ```
//!
//! Renew deadline < lease duration means a leader that cannot renew stops
//! before a follower may take over, so two replicas never lead at once;
//! retry period < renew deadline gives the leader more than one try.

use std::time::Duration;

use crate::settings::parse_duration;
use crate::{Error, Result};

/// controller-runtime's default lease duration.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// controller-runtime's default renew deadline.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// controller-runtime's default retry period.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// The leader-election flags of `kudo-manager run`.
#[derive(clap::Args, Debug, Clone)]
pub struct LeaderFlags {
    /// How long the Lease stays valid without a renewal: the other replicas
    /// take over a leader that has not renewed for this long (e.g. 15s, 1m).
    #[arg(long = "leader-elect-lease-duration", value_name = "DURATION",
          default_value = "15s", value_parser = parse_duration)]
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a failed renewal before it stops
    /// leading and exits; shorter than the lease duration.
    #[arg(long = "leader-elect-renew-deadline", value_name = "DURATION",
          default_value = "10s", value_parser = parse_duration)]
    pub renew_deadline: Duration,
    /// Time between election attempts (the leader's renewals, the other
    /// replicas' tries); shorter than the renew deadline.
    #[arg(long = "leader-elect-retry-period", value_name = "DURATION",
          default_value = "2s", value_parser = parse_duration)]
    pub retry_period: Duration,
}

impl LeaderFlags {
    /// The timing these flags describe, validated.
    pub fn timing(&self) -> Result<LeaderTiming> {
        LeaderTiming::new(self.lease_duration, self.renew_deadline, self.retry_period)
    }
}

/// Validated leader-election durations; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderTiming {
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
}

impl Default for LeaderTiming {
    /// controller-runtime's: 15 s lease, 10 s renew deadline, 2 s retry period.
    fn default() -> Self {
        Self {
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
        }
    }
}

impl LeaderTiming {
    /// Checks that every duration is positive, renew deadline < lease
    /// duration and retry period < renew deadline; the error names the
    /// flags.
    pub fn new(
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Result<Self> {
        for (flag, value) in [
            ("--leader-elect-lease-duration", lease_duration),
            ("--leader-elect-renew-deadline", renew_deadline),
            ("--leader-elect-retry-period", retry_period),
        ] {
            if value.is_zero() {
                return Err(Error::Config(format!("{flag} must be longer than zero")));
            }
        }
        if renew_deadline >= lease_duration {
            return Err(Error::Config(format!(
                "--leader-elect-renew-deadline ({renew_deadline:?}) must be shorter than \
                 --leader-elect-lease-duration ({lease_duration:?}): a leader that cannot renew \
                 has to stop before another replica may take the Lease over \
                 (defaults: 10s and 15s)"
            )));
        }
        if retry_period >= renew_deadline {
            return Err(Error::Config(format!(
                "--leader-elect-retry-period ({retry_period:?}) must be shorter than \
                 --leader-elect-renew-deadline ({renew_deadline:?}): the leader needs more than \
                 one try to renew before it gives up (defaults: 2s and 10s)"
            )));
        }
        Ok(Self {
            lease_duration,
            renew_deadline,
            retry_period,
        })
    }

    /// How long the Lease stays valid without renewal.
    pub fn lease_duration(&self) -> Duration {
        self.lease_duration
    }

    /// How long the leader retries a failed renewal.
    pub fn renew_deadline(&self) -> Duration {
        self.renew_deadline
    }

    /// Time between election attempts.
    pub fn retry_period(&self) -> Duration {
        self.retry_period
    }

    /// `spec.leaseDurationSeconds`: the lease duration in whole seconds,
    /// rounded up (a Lease cannot say less than it means).
    pub fn lease_seconds(&self) -> i32 {
        let secs =
            self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(secs).unwrap_or(i32::MAX)
    }

    /// Whether a leader whose renewal just failed still leads: only while
    /// its last successful renewal (`None`: none yet) is younger than the
    /// renew deadline.
    pub fn still_leading(&self, since_last_renewal: Option<Duration>) -> bool {
        since_last_renewal.is_some_and(|since| since < self.renew_deadline)
    }

    /// How long one election round may take: a leader only until its renew
    /// deadline (a hung request must not keep it leading past it), anyone
    /// else up to one renew deadline.
    pub fn round_timeout(&self, leading: bool, since_last_renewal: Option<Duration>) -> Duration {
        match (leading, since_last_renewal) {
            (true, Some(since)) => self
                .renew_deadline
                .saturating_sub(since)
                .max(Duration::from_millis(1)),
            _ => self.renew_deadline,
        }
    }

    /// The longest a killed leader's work waits for another replica: the
    /// Lease has to expire, then a follower notices within one retry period.
    pub fn worst_case_failover(&self) -> Duration {
        self.lease_duration + self.retry_period
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    use super::*;
    use crate::leader::{LeaseStep, lease_step};

    const fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        leader: LeaderFlags,
    }

    #[test]
    fn flags_default_to_controller_runtimes_durations() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        let timing = cli.leader.timing().unwrap();
        assert_eq!(timing, LeaderTiming::default());
        assert_eq!(
            (
                timing.lease_duration(),
                timing.renew_deadline(),
                timing.retry_period()
            ),
            (secs(15), secs(10), secs(2))
        );
    }

    #[test]
    fn flags_take_durations_with_units() {
        let cli = Cli::try_parse_from([
            "x",
            "--leader-elect-lease-duration",
            "1m",
            "--leader-elect-renew-deadline=40s",
            "--leader-elect-retry-period",
            "5s",
        ])
        .unwrap();
        let timing = cli.leader.timing().unwrap();
        assert_eq!(timing.lease_duration(), secs(60));
        assert_eq!(timing.renew_deadline(), secs(40));
        assert_eq!(timing.retry_period(), secs(5));
        assert!(
            Cli::try_parse_from(["x", "--leader-elect-retry-period", "2"]).is_err(),
            "a number without a unit is refused"
        );
    }

    #[test]
    fn a_renew_deadline_not_shorter_than_the_lease_is_refused_naming_both_flags() {
        let err = LeaderTiming::new(secs(15), secs(15), secs(2))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "--leader-elect-renew-deadline (15s) must be shorter than \
                 --leader-elect-lease-duration (15s)"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_retry_period_not_shorter_than_the_renew_deadline_is_refused_naming_both_flags() {
        let err = LeaderTiming::new(secs(15), secs(10), secs(10))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "--leader-elect-retry-period (10s) must be shorter than \
                 --leader-elect-renew-deadline (10s)"
            ),
            "{err}"
        );
    }

    #[test]
    fn zero_durations_are_refused() {
        let err = LeaderTiming::new(secs(15), secs(10), Duration::ZERO)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--leader-elect-retry-period must be longer than zero"),
            "{err}"
        );
    }

    #[test]
    fn a_leader_keeps_leading_through_failed_renewals_until_the_renew_deadline() {
        let t = LeaderTiming::default();
        assert!(t.still_leading(Some(secs(9))));
        assert!(!t.still_leading(Some(secs(10))));
        assert!(!t.still_leading(None), "never renewed: not leading");
    }

    #[test]
    fn a_leaders_round_may_only_last_until_its_renew_deadline() {
        let t = LeaderTiming::default();
        assert_eq!(t.round_timeout(true, Some(secs(7))), secs(3));
        assert_eq!(
            t.round_timeout(true, Some(secs(12))),
            Duration::from_millis(1)
        );
        assert_eq!(t.round_timeout(false, None), secs(10));
    }

    #[test]
    fn the_lease_says_its_duration_in_whole_seconds_rounded_up() {
        let t = LeaderTiming::new(Duration::from_millis(2500), secs(2), secs(1)).unwrap();
        assert_eq!(t.lease_seconds(), 3);
        assert_eq!(LeaderTiming::default().lease_seconds(), 15);
    }

    /// A leader renews at t=0 and is killed. A follower tries every retry
    /// period from some phase; the first try that may take the Lease over
    /// is at most lease duration + retry period later, so by default plans
    /// wait at most 17 s, and the dead leader would itself have stopped at
    /// its renew deadline, before anyone could take over.
    #[test]
    fn a_killed_leader_is_replaced_within_lease_duration_plus_retry_period() {
        let t = LeaderTiming::default();
        let renewed = jiff::Timestamp::from_second(1_000_000).unwrap();
        let lease = LeaseSpec {
            holder_identity: Some("dead".into()),
            renew_time: Some(MicroTime(renewed)),
            lease_duration_seconds: Some(t.lease_seconds()),
            ..LeaseSpec::default()
        };
        for phase_ms in (0..2000).step_by(250) {
            let mut tried = Duration::from_millis(phase_ms);
            let takeover = loop {
                let now = renewed + jiff::SignedDuration::try_from(tried).unwrap();
                if lease_step(&lease, "follower", now) == LeaseStep::Acquire {
                    break tried;
                }
                tried += t.retry_period();
            };
            assert!(takeover <= t.worst_case_failover(), "{takeover:?}");
            assert!(takeover >= t.lease_duration(), "{takeover:?}");
            assert!(t.renew_deadline() < takeover);
        }
        assert_eq!(t.worst_case_failover(), secs(17));
    }
}
