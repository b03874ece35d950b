//! OperatorVersions are input too: anyone who may create one can do so
//! with kubectl, skipping the CLI's `package verify`. The manager and the
//! webhook run the same checks on every OperatorVersion they use, once per
//! version of it (cached by uid and resourceVersion, one entry per
//! OperatorVersion), off the async workers.
//!
//! A verification runs to its end in the background (verify renders within
//! one step's budget, so its end is near) and its verdict is kept; a caller
//! waits for it at most the pool's deadline. Until there is a verdict the
//! OperatorVersion is not used by the manager: it fails closed, without
//! refusing anything for a slow machine or a busy render pool.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use kudo_api::OperatorVersion;
use tokio::sync::watch;

use crate::render_pool::RenderPool;

/// What `package verify` found: `None` when it passes.
type Verdict = Option<String>;

/// Verdicts kept at most: one per OperatorVersion, so only a cluster with
/// more than this many evicts one (it is verified again when next used).
const MAX_VERDICTS: usize = 4096;

/// Whether an OperatorVersion may be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// It passes `package verify`.
    Passed,
    /// It does not; why, for the Instance's status.
    Failed(String),
    /// Its verification has not finished yet (it goes on); why it waits.
    Unfinished(String),
}

impl Verification {
    /// Why the manager may not use the OperatorVersion now, if it may not.
    pub fn problem(&self) -> Option<String> {
        match self {
            Verification::Passed => None,
            Verification::Failed(why) | Verification::Unfinished(why) => Some(why.clone()),
        }
    }
}

/// The verdict of one resourceVersion, or the verification under way.
#[derive(Debug)]
struct Entry {
    version: String,
    verdict: watch::Receiver<Option<Verdict>>,
}

/// Verifications under way or waiting for a render slot at most: each
/// holds its OperatorVersion, and they share the slots with every step's
/// renders. Past it a caller is told to come back.
const MAX_PENDING: usize = 16;

/// Verdicts of `package verify` on OperatorVersions, by uid.
#[derive(Debug, Default, Clone)]
pub struct VerifiedOperatorVersions {
    verdicts: Arc<Mutex<HashMap<String, Entry>>>,
    pending: Arc<AtomicUsize>,
}

impl VerifiedOperatorVersions {
    /// Whether `ov` passes its `package verify`. A verification that has
    /// not ended within the pool's deadline is [`Verification::Unfinished`]
    /// and goes on; a later call gets its verdict.
    pub async fn check(&self, pool: &RenderPool, ov: &Arc<OperatorVersion>) -> Verification {
        let uid = ov.metadata.uid.clone().unwrap_or_default();
        let version = ov.metadata.resource_version.clone().unwrap_or_default();
        let mut verdict = {
            let mut verdicts = self.verdicts.lock().unwrap_or_else(PoisonError::into_inner);
            match verdicts.get(&uid) {
                Some(entry) if entry.version == version && !uid.is_empty() => {
                    // Known already: no wait (the common case, every reconcile).
                    if let Some(done) = entry.verdict.borrow().clone() {
                        return verification(done);
                    }
                    entry.verdict.clone()
                }
                _ => {
                    if self.pending.load(Ordering::Relaxed) >= MAX_PENDING {
                        return Verification::Unfinished(format!(
                            "OperatorVersion {} is waiting to be verified ({MAX_PENDING} \
                             verifications are under way); it is used once it passes",
                            shown(ov)
                        ));
                    }
                    let (tx, rx) = watch::channel(None);
                    self.spawn(pool.clone(), ov.clone(), (uid.clone(), version.clone()), tx);
                    if !uid.is_empty() {
                        let entry = Entry {
                            version,
                            verdict: rx.clone(),
                        };
                        crate::bounded::insert_within(&mut verdicts, uid, entry, MAX_VERDICTS);
                    }
                    rx
                }
            }
        };
        let waited = tokio::time::timeout(pool.deadline(), verdict.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(done)) => verification(done.clone().flatten()),
            // The sender is gone without a verdict only if the runtime
            // shuts down; either way nothing is known yet.
            Ok(Err(_)) | Err(_) => Verification::Unfinished(format!(
                "OperatorVersion {} is being verified (package verify has not finished within \
                 {}s; the manager's renders are busy); it is used once it passes",
                shown(ov),
                pool.deadline().as_secs()
            )),
        }
    }
}

impl VerifiedOperatorVersions {
    /// Verifies `ov` (`uid` at `version`) off the async workers and sends
    /// the verdict; skipped once a newer version of it is being verified.
    fn spawn(
        &self,
        pool: RenderPool,
        ov: Arc<OperatorVersion>,
        (uid, version): (String, String),
        verdict: watch::Sender<Option<Verdict>>,
    ) {
        let verdicts = self.verdicts.clone();
        let pending = PendingGuard::new(self.pending.clone());
        tokio::spawn(async move {
            let _pending = pending;
            let checked = ov.clone();
            let report = pool
                .run_to_end(move || {
                    let superseded = !uid.is_empty()
                        && verdicts
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .get(&uid)
                            .is_none_or(|e| e.version != version);
                    (!superseded).then(|| kudo_package::verify::verify_operator_version(&checked))
                })
                .await;
            let problem = match report {
                // Nobody needs it: the waiting callers look again.
                Ok(None) => return,
                Ok(Some(report)) if report.has_errors() => Some(format!(
                    "OperatorVersion {} does not pass package verify: {}; fix the package and \
                     create its OperatorVersion again (`kubectl kudo package verify` shows the \
                     same)",
                    shown(&ov),
                    report.errors_summary(3)
                )),
                Ok(Some(_)) => None,
                Err(failed) => Some(format!(
                    "OperatorVersion {} could not be verified: {failed}",
                    shown(&ov)
                )),
            };
            // Nobody may be waiting any more; the verdict is kept all the same.
            verdict.send_replace(Some(problem));
        });
    }
}

/// Counts a verification as pending for as long as it lives.
struct PendingGuard(Arc<AtomicUsize>);

impl PendingGuard {
    fn new(pending: Arc<AtomicUsize>) -> Self {
        pending.fetch_add(1, Ordering::Relaxed);
        Self(pending)
    }
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a verdict means for the caller.
fn verification(problem: Verdict) -> Verification {
    match problem {
        None => Verification::Passed,
        Some(problem) => Verification::Failed(problem),
    }
}

/// `namespace/name` of an OperatorVersion.
fn shown(ov: &OperatorVersion) -> String {
    format!(
        "{}/{}",
        ov.metadata.namespace.as_deref().unwrap_or_default(),
        ov.metadata.name.as_deref().unwrap_or_default()
    )
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
        let problem = cache.check(&pool, &grab).await.problem().unwrap();
        assert!(
            problem.starts_with("OperatorVersion ns/op-0.1.0 does not pass package verify: templates/t.yaml: template contains a Namespace"),
            "{problem}"
        );
        let fixed = ov(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
            "2",
        );
        assert_eq!(cache.check(&pool, &fixed).await, Verification::Passed);
        assert_eq!(
            cache.verdicts.lock().unwrap().len(),
            1,
            "one entry per OperatorVersion"
        );
    }

    #[tokio::test]
    async fn verifications_waiting_for_a_slot_are_bounded() {
        let cache = VerifiedOperatorVersions::default();
        let pool = RenderPool::new(std::time::Duration::ZERO);
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
        // Every slot is taken: the verifications wait.
        let _slots = pool.hold_all_slots().await;
        for i in 0..MAX_PENDING {
            let mut one = (*ov(cm, "1")).clone();
            one.metadata.uid = Some(format!("u{i}"));
            let first = cache.check(&pool, &Arc::new(one)).await;
            assert!(matches!(first, Verification::Unfinished(_)), "{first:?}");
        }
        let mut more = (*ov(cm, "1")).clone();
        more.metadata.uid = Some("one-more".into());
        let refused = cache.check(&pool, &Arc::new(more)).await;
        assert_eq!(
            refused,
            Verification::Unfinished(
                "OperatorVersion ns/op-0.1.0 is waiting to be verified (16 verifications are \
                 under way); it is used once it passes"
                    .into()
            )
        );
        assert!(!cache.verdicts.lock().unwrap().contains_key("one-more"));
    }

    #[tokio::test]
    async fn a_verification_past_the_deadline_blocks_until_it_ends_and_runs_once() {
        let cache = VerifiedOperatorVersions::default();
        let pool = RenderPool::new(std::time::Duration::ZERO);
        let slow = ov(
            "{{ range until 600 }}{{ range until 600 }}{{ end }}{{ end }}apiVersion: v1\nkind: Namespace\nmetadata:\n  name: c\n",
            "1",
        );
        let first = cache.check(&pool, &slow).await;
        assert!(
            matches!(&first, Verification::Unfinished(why) if why.starts_with("OperatorVersion ns/op-0.1.0 is being verified")),
            "{first:?}"
        );
        let mut verdict = cache.verdicts.lock().unwrap()["u1"].verdict.clone();
        verdict.wait_for(Option::is_some).await.unwrap();
        // A new verification would not end within a zero deadline either:
        // the verdict is the one kept from the first.
        let second = cache.check(&pool, &slow).await;
        assert!(
            matches!(&second, Verification::Failed(why) if why.contains("template contains a Namespace")),
            "{second:?}"
        );
    }
}
