//! The channel move's gate with the namespace-wide suppression: a move
//! [`upgrades::gate`] lets go still waits while the Instance's namespace
//! holds automatic plans, unless it leaves a recalled version (as for the
//! Instance's own automatic suppression).

use jiff::Timestamp;
use kudo_api::Instance;

use crate::automatic::upgrades::{self, Gate, Offer};
use crate::model::EngineConfig;
use crate::model::namespace::NamespaceSuppressions;
use crate::plan::namespace_hold;

/// [`upgrades::gate`], then the namespace's hold (`namespace`: what the
/// manager counted there, if it did).
pub fn gate(
    instance: &Instance,
    offer: &Offer<'_>,
    now: Timestamp,
    config: &EngineConfig,
    namespace: Option<&NamespaceSuppressions>,
) -> Gate {
    match upgrades::gate(instance, offer, now, config) {
        Gate::Go if !offer.recall => match namespace.and_then(|ns| namespace_hold::hold(ns, now)) {
            Some(hold) => Gate::held_until(format!("waiting: {}", hold.message), hold.lifts_at),
            None => Gate::Go,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::namespace::{Suppressed, Threshold, ThresholdSource};

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn namespace(count: usize) -> NamespaceSuppressions {
        NamespaceSuppressions {
            namespace: "team".into(),
            threshold: Threshold::MoreThan(1),
            source: ThresholdSource::Manager,
            suppressed: (0..count)
                .map(|i| Suppressed {
                    name: format!("db-{i}"),
                    until: None,
                })
                .collect(),
        }
    }

    fn instance() -> Instance {
        let mut i = Instance::new("web", Default::default());
        i.metadata.namespace = Some("team".into());
        i
    }

    #[test]
    fn a_channel_move_waits_while_the_namespace_holds() {
        let offer = Offer {
            version: "1.4.0",
            recall: false,
        };
        let now = ts("2026-01-01T00:00:00Z");
        let config = EngineConfig::default();
        let Gate::Hold { why, .. } = gate(&instance(), &offer, now, &config, Some(&namespace(2)))
        else {
            panic!("not held");
        };
        assert!(
            why.contains("namespace team holds automatic plans"),
            "{why}"
        );
        assert_eq!(
            gate(&instance(), &offer, now, &config, Some(&namespace(1))),
            Gate::Go
        );
        assert_eq!(gate(&instance(), &offer, now, &config, None), Gate::Go);
    }

    #[test]
    fn leaving_a_recalled_version_goes_ahead_of_the_namespace_hold() {
        let offer = Offer {
            version: "1.3.1",
            recall: true,
        };
        let got = gate(
            &instance(),
            &offer,
            ts("2026-01-01T00:00:00Z"),
            &EngineConfig::default(),
            Some(&namespace(5)),
        );
        assert_eq!(got, Gate::Go);
    }
}
