//! OperatorRepository reviews: the URL and the interval
//! (`OperatorRepositorySpec::problems`), nothing read from the cluster.

use std::borrow::Cow;

use kudo_api::OperatorRepositorySpec;
use serde::Deserialize;

use super::answer::Answer;
use super::decode::Request;

/// What the review reads of an OperatorRepository: its spec.
#[derive(Debug, Deserialize)]
pub(crate) struct Repository {
    #[serde(default)]
    spec: OperatorRepositorySpec,
}

/// Answers an OperatorRepository request: refused (403) naming every
/// problem of the spec, 400 when an object does not decode, allowed
/// otherwise (status and metadata-only writes are not judged).
pub(crate) fn review<'b>(request: &Request<'_>, uid: Cow<'b, str>) -> Answer<'b> {
    // Status writes, deletions and CONNECT change no spec: not judged.
    let (old, new) = match request.spec_write_as::<Repository>("OperatorRepository") {
        Ok(Some(objects)) => objects,
        Ok(None) => return Answer::allowed(uid, vec![]),
        Err(message) => return Answer::bad_request(uid, message),
    };
    if old.is_some_and(|old| old.spec == new.spec) {
        return Answer::allowed(uid, vec![]);
    }
    let problems = new.spec.problems();
    if problems.is_empty() {
        Answer::allowed(uid, vec![])
    } else {
        Answer::refused(uid, 403, "Forbidden", problems.join("; "))
    }
}

/// What is wrong with an Instance's `spec.upgrades`: no repository, a
/// channel that is no channel name, a range that does not parse, an
/// approved version that is no version, a dependency that names no
/// operator or no Instance. The repository's and the named Instances'
/// existence is not checked here (status says when one is missing: it
/// may be created next).
pub(crate) fn upgrades_problem(
    policy: Option<&kudo_api::upgrades::UpgradePolicy>,
) -> Option<String> {
    let policy = policy?;
    let mut problems = Vec::new();
    if let Err(e) = kudo_repo::index::check_name(policy.repository.trim()) {
        problems.push(format!(
            "spec.upgrades.repository {:?}: {e} (name an OperatorRepository)",
            policy.repository
        ));
    }
    if let Err(e) = kudo_api::package::check_channel(policy.channel()) {
        problems.push(format!("spec.upgrades.channel: {e}"));
    }
    if let Some(range) = &policy.versions
        && let Err(e) = kudo_repo::Range::parse(range)
    {
        problems.push(format!("spec.upgrades.versions: {e}"));
    }
    if let Some(approved) = &policy.approved
        && let Err(e) = kudo_repo::Version::parse(approved)
    {
        problems.push(format!("spec.upgrades.approved {approved:?}: {e}"));
    }
    if policy.dependencies.len() > MAX_NAMED_DEPENDENCIES {
        problems.push(format!(
            "spec.upgrades.dependencies names {} operators; at most {MAX_NAMED_DEPENDENCIES}",
            policy.dependencies.len()
        ));
    }
    for (operator, instance) in policy.dependencies.iter().take(MAX_NAMED_DEPENDENCIES) {
        let shown = kudo_api::param_value::preview(operator);
        if let Err(e) = kudo_repo::index::check_name(operator) {
            problems.push(format!("spec.upgrades.dependencies {shown}: {e}"));
        } else if let Err(e) = check_object_name(instance) {
            problems.push(format!("spec.upgrades.dependencies.{shown}: {e}"));
        }
    }
    if let Some(left) = &policy.rolled_back_from
        && let Err(e) = kudo_repo::Version::parse(left)
    {
        problems.push(format!(
            "spec.upgrades.rolledBackFrom {}: {e}",
            kudo_api::param_value::preview(left)
        ));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// As many operators as a package may require.
const MAX_NAMED_DEPENDENCIES: usize = 32;

/// An Instance's name as Kubernetes allows it (a DNS subdomain).
fn check_object_name(name: &str) -> Result<(), String> {
    let shown = kudo_api::param_value::preview(name);
    let fine = (1..=253).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if fine {
        Ok(())
    } else {
        Err(format!(
            "{shown} is not an Instance name (lowercase letters, digits, '-' and '.')"
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kube::core::DynamicObject;
    use kube::core::admission::AdmissionReview;
    use serde_json::{Value, json};

    use crate::webhook::Reviewer;
    use crate::webhook::ov_source::FnSource;

    async fn answer(spec: Value) -> (bool, String) {
        let reviewer = Reviewer::new(
            FnSource(|_: &str, _: &str| Ok(None)),
            Duration::from_secs(1),
        );
        let body = serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "r-1",
                "kind": {"group": "kudo.dev", "version": "v1beta1", "kind": "OperatorRepository"},
                "resource": {"group": "kudo.dev", "version": "v1beta1", "resource": "operatorrepositories"},
                "name": "community",
                "operation": "CREATE",
                "userInfo": {"username": "admin"},
                "object": {"apiVersion": "kudo.dev/v1beta1", "kind": "OperatorRepository",
                           "metadata": {"name": "community"}, "spec": spec},
            }
        }))
        .unwrap();
        let review: AdmissionReview<DynamicObject> = reviewer.review_bytes(&body).await;
        let response = review.response.unwrap();
        (response.allowed, response.result.message)
    }

    #[tokio::test]
    async fn a_repository_with_a_bad_url_or_interval_is_refused_naming_both() {
        let (allowed, message) = answer(json!({"url": "file:///etc", "interval": "1s"})).await;
        assert!(!allowed);
        assert!(
            message.contains("spec.url \"file:///etc\" is not an http or https URL"),
            "{message}"
        );
        assert!(
            message.contains("spec.interval: interval \"1s\" is outside 10s to 24h"),
            "{message}"
        );
        let (allowed, message) =
            answer(json!({"url": "https://charts.example/kudo", "interval": "5m"})).await;
        assert!(allowed, "{message}");
    }

    #[test]
    fn an_upgrade_policy_with_a_bad_range_or_channel_is_named() {
        let policy = |json: Value| -> kudo_api::upgrades::UpgradePolicy {
            serde_json::from_value(json).unwrap()
        };
        let fine = policy(json!({"repository": "community", "versions": ">=1.2 <2",
                                 "dependencies": {"zookeeper": "zk-1.a"}}));
        assert_eq!(super::upgrades_problem(Some(&fine)), None);
        let bad = policy(
            json!({"repository": "", "channel": "Beta", "versions": "1.x.2", "approved": "latest",
                   "rolledBackFrom": "previous",
                   "dependencies": {"zookeeper": "ZK_1", "bad name": "zk"}}),
        );
        let problem = super::upgrades_problem(Some(&bad)).unwrap();
        for needle in [
            "spec.upgrades.repository \"\"",
            "spec.upgrades.channel: channel \"Beta\"",
            "spec.upgrades.versions: \"1.x.2\" is not a version or range",
            "spec.upgrades.approved \"latest\"",
            "spec.upgrades.rolledBackFrom \"previous\"",
            "spec.upgrades.dependencies.\"zookeeper\": \"ZK_1\" is not an Instance name",
            "spec.upgrades.dependencies \"bad name\"",
        ] {
            assert!(problem.contains(needle), "{needle}: {problem}");
        }
    }
}
