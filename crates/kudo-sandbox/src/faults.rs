//! Fault injection for reliability tests: errors per verb, added latency,
//! watches closed after a number of events.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::status::ApiError;

/// A request verb as the API server's authorizer names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH (including server-side apply).
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

impl Verb {
    /// The verb as RBAC names it.
    pub fn rbac(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Watch => "watch",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::DeleteCollection => "deletecollection",
        }
    }
}

/// One error rule: `fraction` of the requests with `verb` get `code`.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    /// Verb the rule applies to; None for every verb.
    pub verb: Option<Verb>,
    /// Share of matching requests that fail, 0.0 to 1.0.
    pub fraction: f64,
    /// HTTP status to answer with: 409, 429, 500 or 503 (others are sent as 500).
    pub code: u16,
}

/// The faults to inject. The default injects none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// Error rules. Each rule matching a request takes its own share of the
    /// rolls, in order: `fail_all(0.05, 500).fail_all(0.05, 503)` answers
    /// 5% with 500, another 5% with 503.
    pub rules: Vec<FaultRule>,
    /// Delay added before every API request is handled.
    pub latency: Duration,
    /// Close every watch stream after this many events.
    pub close_watches_after: Option<u64>,
}

impl Faults {
    /// No faults.
    pub fn none() -> Self {
        Self::default()
    }

    /// Answers `fraction` of `verb` requests with `code` (409, 429, 500 or 503).
    pub fn fail(mut self, verb: Verb, fraction: f64, code: u16) -> Self {
        self.rules.push(FaultRule {
            verb: Some(verb),
            fraction: fraction.clamp(0.0, 1.0),
            code,
        });
        self
    }

    /// Answers `fraction` of all API requests with `code`.
    pub fn fail_all(mut self, fraction: f64, code: u16) -> Self {
        self.rules.push(FaultRule {
            verb: None,
            fraction: fraction.clamp(0.0, 1.0),
            code,
        });
        self
    }

    /// Adds latency to every API request.
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Closes watches after `events` events.
    pub fn close_watches_after(mut self, events: u64) -> Self {
        self.close_watches_after = Some(events.max(1));
        self
    }

    /// The injected error for a request, given a uniform random number in [0, 1).
    pub fn error_for(&self, verb: Verb, roll: f64) -> Option<ApiError> {
        let mut share = 0.0;
        let rule = self
            .rules
            .iter()
            .filter(|r| r.verb.is_none_or(|v| v == verb))
            .find(|r| {
                share += r.fraction;
                roll < share
            })?;
        Some(match rule.code {
            409 => ApiError::conflict(
                crate::status::Subject {
                    group: "",
                    plural: "objects",
                    name: "injected",
                },
                "the object has been modified (injected fault); please apply your changes to the latest version and try again",
            ),
            429 => ApiError::too_many_requests(),
            503 => ApiError::service_unavailable(),
            _ => ApiError::internal("Internal error occurred: injected fault"),
        })
    }
}

/// What fault injection has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Injected error answers, by HTTP status code.
    pub errors: BTreeMap<u16, u64>,
    /// Watch streams closed by `close_watches_after`.
    pub watches_closed: u64,
}

impl FaultStats {
    /// All injected error answers.
    pub fn total_errors(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// The running counts behind [`FaultStats`].
#[derive(Debug, Default)]
pub struct FaultCounter(Mutex<FaultStats>);

impl FaultCounter {
    fn lock(&self) -> std::sync::MutexGuard<'_, FaultStats> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one injected error answer.
    pub fn error(&self, code: u16) {
        *self.lock().errors.entry(code).or_default() += 1;
    }

    /// Counts one watch closed by fault injection.
    pub fn watch_closed(&self) {
        self.lock().watches_closed += 1;
    }

    /// The counts so far.
    pub fn stats(&self) -> FaultStats {
        self.lock().clone()
    }
}

/// A uniform random number in [0, 1).
pub fn roll() -> f64 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut n = [0u8; 8];
    n.copy_from_slice(&bytes[..8]);
    (u64::from_le_bytes(n) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_applies_to_its_fraction_of_rolls() {
        let f = Faults::none().fail(Verb::Create, 0.5, 429);
        assert_eq!(f.error_for(Verb::Create, 0.2).map(|e| e.code), Some(429));
        assert!(f.error_for(Verb::Create, 0.7).is_none());
        assert!(f.error_for(Verb::Get, 0.0).is_none());
    }

    #[test]
    fn matching_rules_take_consecutive_shares() {
        let f = Faults::none()
            .fail(Verb::Get, 0.1, 409)
            .fail_all(0.1, 503)
            .fail_all(0.1, 500);
        let code = |verb, roll| f.error_for(verb, roll).map(|e| e.code);
        assert_eq!(code(Verb::Get, 0.05), Some(409));
        assert_eq!(code(Verb::Get, 0.15), Some(503));
        assert_eq!(code(Verb::Get, 0.25), Some(500));
        assert_eq!(code(Verb::Get, 0.35), None);
        // The Get-only rule does not take a share of other verbs.
        assert_eq!(code(Verb::Patch, 0.05), Some(503));
        assert_eq!(code(Verb::Patch, 0.15), Some(500));
        assert_eq!(code(Verb::Patch, 0.25), None);
        let unavailable = f.error_for(Verb::List, 0.05).unwrap();
        assert_eq!(unavailable.reason, "ServiceUnavailable");
    }

    #[test]
    fn roll_stays_in_unit_interval() {
        for _ in 0..1000 {
            let r = roll();
            assert!((0.0..1.0).contains(&r));
        }
    }
}
