//! Prometheus metrics served at `/metrics` on the admin port.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::webhook::ReviewVerdict;

/// Label set `{kind}` of the error counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// Error kind, e.g. `kube`, `transient_task`, `fatal_task`.
    pub kind: String,
}

/// Label set `{plan}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PlanLabels {
    /// Plan name.
    pub plan: String,
}

/// Label set `{plan, result}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PlanResultLabels {
    /// Plan name.
    pub plan: String,
    /// `COMPLETE` or `FATAL_ERROR`.
    pub result: String,
}

/// Label set `{verdict}` of the webhook's review counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReviewLabels {
    /// `allowed`, `denied` (403), `invalid` (a malformed or foreign
    /// request, 400) or `failed` (our side failed or timed out, 5xx).
    pub verdict: String,
}

/// The manager's metrics; cheap to clone (shared handles).
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    /// Reconciles run.
    pub reconciles: Counter,
    /// Reconcile duration in seconds.
    pub reconcile_duration: Histogram,
    /// Errors by kind.
    pub errors: Family<ErrorLabels, Counter>,
    /// Plans started, by plan.
    pub plans_started: Family<PlanLabels, Counter>,
    /// Plans finished, by plan and result.
    pub plans_finished: Family<PlanResultLabels, Counter>,
    /// Plans currently running (not terminal).
    pub active_plans: Gauge,
    /// Engine `decide` calls (several per reconcile while a plan advances).
    pub decisions: Counter,
    /// Admission reviews answered, by verdict.
    pub webhook_reviews: Family<ReviewLabels, Counter>,
    /// The counters of [`ReviewVerdict::ALL`], created up front: every
    /// series shows from the start (at 0), and a review costs no label
    /// allocation.
    review_counters: [Counter; 4],
    /// Time from a review request reaching the handler to its answer, in
    /// seconds (body read and OperatorVersion reads included).
    pub webhook_review_duration: Histogram,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Create and register all metrics under the prefix `kudo_manager`.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("kudo_manager");
        let reconciles = Counter::default();
        let reconcile_duration = Histogram::new(exponential_buckets(0.001, 2.0, 16));
        let errors = Family::<ErrorLabels, Counter>::default();
        let plans_started = Family::<PlanLabels, Counter>::default();
        let plans_finished = Family::<PlanResultLabels, Counter>::default();
        let active_plans = Gauge::default();
        let decisions = Counter::default();
        let webhook_reviews = Family::<ReviewLabels, Counter>::default();
        // 50 µs .. ~0.8 s: a review is tens of µs plus a live OV read.
        let webhook_review_duration = Histogram::new(exponential_buckets(0.000_05, 2.0, 15));
        registry.register("reconciles", "Instance reconciles run", reconciles.clone());
        registry.register(
            "reconcile_duration_seconds",
            "Duration of one Instance reconcile",
            reconcile_duration.clone(),
        );
        registry.register("errors", "Errors by kind", errors.clone());
        registry.register(
            "plans_started",
            "Plan executions started",
            plans_started.clone(),
        );
        registry.register(
            "plans_finished",
            "Plan executions finished, by result",
            plans_finished.clone(),
        );
        registry.register(
            "active_plans",
            "Plan executions currently running",
            active_plans.clone(),
        );
        registry.register("decisions", "Engine decide calls", decisions.clone());
        let review_counters = ReviewVerdict::ALL.map(|verdict| {
            webhook_reviews
                .get_or_create(&ReviewLabels {
                    verdict: verdict.as_str().to_string(),
                })
                .clone()
        });
        registry.register(
            "webhook_reviews",
            "Admission reviews answered, by verdict",
            webhook_reviews.clone(),
        );
        registry.register(
            "webhook_review_duration_seconds",
            "Duration of one admission review, OperatorVersion reads included",
            webhook_review_duration.clone(),
        );
        Self {
            registry: Arc::new(registry),
            reconciles,
            reconcile_duration,
            errors,
            plans_started,
            plans_finished,
            active_plans,
            decisions,
            webhook_reviews,
            review_counters,
            webhook_review_duration,
        }
    }

    /// Count one admission review with this verdict that took `elapsed`.
    pub fn observe_review(&self, verdict: ReviewVerdict, elapsed: Duration) {
        self.review_counters[verdict as usize].inc();
        self.webhook_review_duration.observe(elapsed.as_secs_f64());
    }

    /// Count one reconcile that took `elapsed`.
    pub fn observe_reconcile(&self, elapsed: Duration) {
        self.reconciles.inc();
        self.reconcile_duration.observe(elapsed.as_secs_f64());
    }

    /// Count an error of this kind.
    pub fn count_error(&self, kind: &str) {
        self.errors
            .get_or_create(&ErrorLabels {
                kind: kind.to_string(),
            })
            .inc();
    }

    /// Count a plan start.
    pub fn plan_started(&self, plan: &str) {
        self.plans_started
            .get_or_create(&PlanLabels {
                plan: plan.to_string(),
            })
            .inc();
    }

    /// Count a plan finish.
    pub fn plan_finished(&self, plan: &str, result: &str) {
        self.plans_finished
            .get_or_create(&PlanResultLabels {
                plan: plan.to_string(),
                result: result.to_string(),
            })
            .inc();
    }

    /// OpenMetrics text of all metrics.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_metrics_include_counts_by_label() {
        let m = Metrics::new();
        m.observe_reconcile(Duration::from_millis(5));
        m.count_error("kube");
        m.plan_started("deploy");
        m.plan_finished("deploy", "COMPLETE");
        m.active_plans.set(2);
        m.decisions.inc();
        let text = m.render();
        assert!(text.contains("kudo_manager_reconciles_total 1"), "{text}");
        assert!(
            text.contains("kudo_manager_errors_total{kind=\"kube\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "kudo_manager_plans_finished_total{plan=\"deploy\",result=\"COMPLETE\"} 1"
            ),
            "{text}"
        );
        assert!(text.contains("kudo_manager_active_plans 2"), "{text}");
        assert!(text.contains("kudo_manager_decisions_total 1"), "{text}");
        assert!(
            text.contains("kudo_manager_reconcile_duration_seconds_count 1"),
            "{text}"
        );
    }

    #[test]
    fn webhook_reviews_are_counted_by_verdict_and_timed() {
        let m = Metrics::new();
        m.observe_review(ReviewVerdict::Denied, Duration::from_micros(40));
        m.observe_review(ReviewVerdict::Denied, Duration::from_micros(60));
        m.observe_review(ReviewVerdict::Failed, Duration::from_secs(4));
        let text = m.render();
        assert!(
            text.contains("kudo_manager_webhook_reviews_total{verdict=\"denied\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("kudo_manager_webhook_reviews_total{verdict=\"failed\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("kudo_manager_webhook_review_duration_seconds_count 3"),
            "{text}"
        );
        for verdict in ReviewVerdict::ALL {
            assert_eq!(ReviewVerdict::ALL[verdict as usize], verdict);
        }
        // Verdicts not seen yet show as 0 rather than being absent.
        assert!(
            text.contains("kudo_manager_webhook_reviews_total{verdict=\"allowed\"} 0"),
            "{text}"
        );
    }
}
