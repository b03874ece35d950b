//! Fault injection for reliability tests: errors per verb, added latency,
//! watches closed after a number of events.

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
    /// HTTP status to answer with: 409, 429 or 500 (others are sent as 500).
    pub code: u16,
}

/// The faults to inject. The default injects none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// Error rules, checked in order.
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

    /// Answers `fraction` of `verb` requests with `code` (409, 429 or 500).
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
        let rule = self
            .rules
            .iter()
            .find(|r| r.verb.is_none_or(|v| v == verb))?;
        if roll >= rule.fraction {
            return None;
        }
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
            _ => ApiError::internal("Internal error occurred: injected fault"),
        })
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
    fn roll_stays_in_unit_interval() {
        for _ in 0..1000 {
            let r = roll();
            assert!((0.0..1.0).contains(&r));
        }
    }
}
