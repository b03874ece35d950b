//! OperatorVersions are input too: anyone who may create one can do so
//! with kubectl, skipping the CLI's `package verify`. The manager and the
//! webhook run the same checks on every OperatorVersion they use, once per
//! version of it (cached by uid and resourceVersion, one entry per
//! OperatorVersion), off the async workers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kudo_api::OperatorVersion;

use crate::render_pool::RenderPool;

/// A verdict: the resourceVersion it is of, and the problem found, if any.
type Verdict = (String, Option<String>);

/// Verdicts kept at most: one per OperatorVersion, so only a cluster with
/// more than this many evicts one (it is verified again when next used).
const MAX_VERDICTS: usize = 4096;

/// Verdicts of `package verify` on OperatorVersions, by uid.
#[derive(Debug, Default, Clone)]
pub struct VerifiedOperatorVersions {
    verdicts: Arc<Mutex<HashMap<String, Verdict>>>,
}

impl VerifiedOperatorVersions {
    /// Why `ov` cannot be used (its `package verify` errors), or `None`.
    /// A verification that takes longer than the pool's deadline passes,
    /// and is remembered like any verdict: verifying it again at every
    /// reconcile would hold a render slot each time. What verify would
    /// have found is still refused where it matters, by every render's
    /// budgets and injection check and by the API server's RBAC.
    pub async fn problem(&self, pool: &RenderPool, ov: &Arc<OperatorVersion>) -> Option<String> {
        let uid = ov.metadata.uid.clone().unwrap_or_default();
        let version = ov.metadata.resource_version.clone().unwrap_or_default();
        if let Some((seen, verdict)) = self.verdicts.lock().ok()?.get(&uid)
            && *seen == version
        {
            return verdict.clone();
        }
        let checked = ov.clone();
        let report = pool
            .run(move || kudo_package::verify::verify_operator_version(&checked))
            .await;
        let verdict = match report {
            Ok(report) if report.has_errors() => Some(format!(
                "OperatorVersion {}/{} does not pass package verify: {}; fix the package and \
                 create its OperatorVersion again (`kubectl kudo package verify` shows the same)",
                ov.metadata.namespace.as_deref().unwrap_or_default(),
                ov.metadata.name.as_deref().unwrap_or_default(),
                report.errors_summary(3)
            )),
            Ok(_) => None,
            Err(stalled) => {
                tracing::warn!(%stalled, "OperatorVersion not verified in time; used unverified");
                None
            }
        };
        if !uid.is_empty()
            && let Ok(mut verdicts) = self.verdicts.lock()
        {
            if verdicts.len() >= MAX_VERDICTS
                && !verdicts.contains_key(&uid)
                && let Some(evicted) = verdicts.keys().next().cloned()
            {
                verdicts.remove(&evicted);
            }
            verdicts.insert(uid, (version, verdict.clone()));
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ov(template: &str, version: &str) -> Arc<OperatorVersion> {
        let mut ov: OperatorVersion = serde_json::from_value(serde_json::json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "OperatorVersion",
            "metadata": {"name": "op-0.1.0", "namespace": "ns", "uid": "u1"},
            "spec": {
                "operator": {"name": "op"}, "version": "0.1.0",
                "templates": {"t.yaml": template},
                "tasks": [{"name": "app", "kind": "Apply", "spec": {"resources": ["t.yaml"]}}],
                "plans": {"deploy": {"strategy": "serial", "phases": [
                    {"name": "main", "strategy": "serial", "steps": [{"name": "s", "tasks": ["app"]}]}
                ]}}
            }
        }))
        .unwrap();
        ov.metadata.resource_version = Some(version.into());
        Arc::new(ov)
    }

    #[tokio::test]
    async fn a_namespace_template_made_with_kubectl_is_named_and_a_fixed_version_passes() {
        let cache = VerifiedOperatorVersions::default();
        let pool = RenderPool::default();
        let grab = ov(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tenant-b\n",
            "1",
        );
        let problem = cache.problem(&pool, &grab).await.unwrap();
        assert!(
            problem.starts_with("OperatorVersion ns/op-0.1.0 does not pass package verify: templates/t.yaml: template contains a Namespace"),
            "{problem}"
        );
        let fixed = ov(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
            "2",
        );
        assert_eq!(cache.problem(&pool, &fixed).await, None);
        assert_eq!(
            cache.verdicts.lock().unwrap().len(),
            1,
            "one entry per OperatorVersion"
        );
    }

    #[tokio::test]
    async fn a_verification_past_the_deadline_passes_once_and_is_not_run_again() {
        let cache = VerifiedOperatorVersions::default();
        let pool = RenderPool::new(std::time::Duration::ZERO);
        let slow = ov(
            "{{ range until 600 }}{{ range until 600 }}{{ end }}{{ end }}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
            "1",
        );
        assert_eq!(cache.problem(&pool, &slow).await, None);
        assert_eq!(
            cache.verdicts.lock().unwrap().get("u1"),
            Some(&("1".to_string(), None)),
            "remembered for this resourceVersion"
        );
    }
}
