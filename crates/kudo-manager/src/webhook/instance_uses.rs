//! Which Instances may run an OperatorVersion, and as which account: what
//! a write to that OperatorVersion is judged by.
//!
//! The Instances of the OperatorVersion's own namespace are listed live at
//! each review, so one created a moment before is seen. Those of the
//! namespaces it is shared with come from a watch of all Instances that
//! keeps, of each, only its name, the OperatorVersion its spec names, the
//! one a channel installed (`status.upgrades.operatorVersion`) and
//! `spec.serviceAccountName`; the parameters and plan statuses are skipped
//! unread, so the cache stays a few hundred bytes per Instance. While that
//! cache is not current (before its first list, and after a watch error
//! until the new list it starts is complete), they are listed live too.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kudo_api::Instance;
use serde::Deserialize;

use super::ov_source::OperatorVersionReadError;

/// What the webhook keeps of one Instance.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct InstanceUse {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<UseSpec>,
    #[serde(default)]
    status: Option<UseStatus>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UseSpec {
    #[serde(default)]
    operator_version: Option<NamedVersion>,
    #[serde(default)]
    service_account_name: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct NamedVersion {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct UseStatus {
    #[serde(default)]
    upgrades: Option<Tracked>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Tracked {
    #[serde(default)]
    operator_version: Option<String>,
}

impl Resource for InstanceUse {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        Instance::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        Instance::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        Instance::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        Instance::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl InstanceUse {
    /// What the webhook keeps of `instance`.
    pub fn of(instance: &Instance) -> Self {
        let spec = &instance.spec;
        Self {
            metadata: ObjectMeta {
                name: instance.metadata.name.clone(),
                namespace: instance.metadata.namespace.clone(),
                ..ObjectMeta::default()
            },
            spec: Some(UseSpec {
                operator_version: Some(NamedVersion {
                    name: spec.operator_version.name.clone(),
                    namespace: spec.operator_version.namespace.clone(),
                }),
                service_account_name: spec.service_account_name.clone(),
            }),
            status: Some(UseStatus {
                upgrades: Some(Tracked {
                    operator_version: instance
                        .status
                        .as_ref()
                        .and_then(|s| s.upgrades.as_ref())
                        .and_then(|u| u.operator_version.clone()),
                }),
            }),
        }
    }

    /// Its namespace (`default` when the object names none).
    pub fn namespace(&self) -> &str {
        self.metadata
            .namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .unwrap_or("default")
    }

    /// Its name.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// `spec.serviceAccountName`.
    pub fn account(&self) -> Option<&str> {
        self.spec.as_ref()?.service_account_name.as_deref()
    }

    /// Whether it names OperatorVersion `namespace/name`: in its spec, or
    /// as the one a channel installed (always of its own namespace). Both
    /// count, whichever is in force now: the other may be again.
    pub fn names(&self, namespace: &str, name: &str) -> bool {
        let own = self.namespace();
        let in_spec = self
            .spec
            .as_ref()
            .and_then(|s| s.operator_version.as_ref())
            .is_some_and(|reference| {
                let ns = kudo_api::ov_namespace(reference.namespace.as_deref(), own);
                reference.name.as_deref() == Some(name) && ns == namespace
            });
        let tracked = self
            .status
            .as_ref()
            .and_then(|s| s.upgrades.as_ref())
            .and_then(|u| u.operator_version.as_deref())
            .is_some_and(|tracked| tracked == name && own == namespace);
        in_spec || tracked
    }

    /// The same, without what no lookup reads (labels, annotations,
    /// managed fields).
    fn trimmed(&mut self) {
        let metadata = std::mem::take(&mut self.metadata);
        self.metadata = ObjectMeta {
            name: metadata.name,
            namespace: metadata.namespace,
            resource_version: metadata.resource_version,
            uid: metadata.uid,
            ..ObjectMeta::default()
        };
    }
}

/// The Instances that name OperatorVersion `namespace/name`, of `all`.
fn naming<'a>(
    all: impl IntoIterator<Item = &'a InstanceUse>,
    namespace: &str,
    name: &str,
) -> Vec<InstanceUse> {
    all.into_iter()
        .filter(|i| i.names(namespace, name))
        .cloned()
        .collect()
}

/// Instances a page of a live list holds: the list is read in pages so a
/// cluster of many Instances never arrives as one body.
const PAGE: u32 = 500;

/// The Instances that name OperatorVersion `namespace/name`, listed live:
/// of `scope` (a namespace), or of all namespaces when `None`.
pub(super) async fn list_naming(
    client: &kube::Client,
    scope: Option<&str>,
    namespace: &str,
    name: &str,
) -> Result<Vec<InstanceUse>, OperatorVersionReadError> {
    let api = match scope {
        Some(scope) => Api::<InstanceUse>::namespaced(client.clone(), scope),
        None => Api::<InstanceUse>::all(client.clone()),
    };
    let mut found = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list(&params).await.map_err(|e| {
            OperatorVersionReadError(format!(
                "listing the Instances of {}: {e}",
                scope.unwrap_or("all namespaces")
            ))
        })?;
        found.extend(naming(&page.items, namespace, name));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(found),
        }
    }
}

/// A watch-fed cache of every Instance's [`InstanceUse`], for the
/// namespaces an OperatorVersion is shared with.
#[derive(Clone)]
pub(super) struct InstanceUses {
    store: Store<InstanceUse>,
    /// See [`current_after`].
    current: Arc<AtomicBool>,
    _watch: Arc<super::ov_cache::StopOnDrop>,
}

/// How long a watch must hold after its list for its next failure to start
/// again from the first pause.
const HEALTHY: std::time::Duration = std::time::Duration::from_secs(60);

/// Pauses before a failed watch starts again: the first, and the most
/// (doubling in between).
const RESTART_PAUSES: (std::time::Duration, std::time::Duration) = (
    std::time::Duration::from_secs(1),
    std::time::Duration::from_secs(60),
);

impl InstanceUses {
    /// Starts the watch; it runs until the last copy is dropped. After any
    /// error it starts again with a new list: a watch that resumed on its
    /// own would stay not current until the next Instance event (hours in a
    /// quiet cluster), and one may have lost an event (an object that did
    /// not decode).
    pub(super) fn start(client: &kube::Client) -> Self {
        let (store, mut writer) = reflector::store();
        let current = Arc::new(AtomicBool::new(false));
        let reported = current.clone();
        let api = Api::<InstanceUse>::all(client.clone());
        let watch = tokio::spawn(async move {
            let mut current = false;
            let mut pause = RESTART_PAUSES.0;
            let mut listed_at = None;
            loop {
                let mut events = watcher(api.clone(), watcher::Config::default())
                    .modify(InstanceUse::trimmed)
                    .boxed();
                while let Some(event) = events.next().await {
                    if let Ok(event) = &event {
                        writer.apply_watcher_event(event);
                    }
                    current = current_after(current, &event);
                    reported.store(current, Ordering::Release);
                    match &event {
                        Ok(watcher::Event::InitDone) => listed_at = Some(Instant::now()),
                        Ok(_) => {}
                        Err(e) => {
                            // Back to the first pause only after a watch
                            // that held for a while.
                            if listed_at.take().is_some_and(|at| at.elapsed() >= HEALTHY) {
                                pause = RESTART_PAUSES.0;
                            }
                            tracing::warn!(
                                error = %e,
                                "the webhook's watch of Instances failed; OperatorVersion \
                                 reviews list Instances live until it has listed them again"
                            );
                            break;
                        }
                    }
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(RESTART_PAUSES.1);
            }
        });
        Self {
            store,
            current,
            _watch: Arc::new(super::ov_cache::StopOnDrop(watch)),
        }
    }

    /// The Instances that name OperatorVersion `namespace/name`; `None`
    /// while the cache is not current.
    pub(super) fn naming(&self, namespace: &str, name: &str) -> Option<Vec<InstanceUse>> {
        if !self.current.load(Ordering::Acquire) {
            return None;
        }
        let all = self.store.state();
        Some(naming(all.iter().map(AsRef::as_ref), namespace, name))
    }
}

/// Whether the cache holds every Instance after `event`, given whether it
/// did before: from the end of a list until the next error. A list under
/// way leaves the store as it was until its end, and after an error the
/// watch starts again with a new list.
fn current_after(
    current: bool,
    event: &Result<watcher::Event<InstanceUse>, watcher::Error>,
) -> bool {
    match event {
        Ok(watcher::Event::InitDone) => true,
        Ok(watcher::Event::Init | watcher::Event::InitApply(_)) | Err(_) => false,
        Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(instance: serde_json::Value) -> InstanceUse {
        serde_json::from_value(instance).unwrap()
    }

    #[test]
    fn an_instance_names_the_version_of_its_spec_in_its_own_namespace_by_default() {
        let zk = decoded(serde_json::json!({
            "metadata": {"name": "zk", "namespace": "team-a"},
            "spec": {"operatorVersion": {"name": "zk-1"}, "parameters": {"N": "3"}},
        }));
        assert!(zk.names("team-a", "zk-1"));
        assert!(!zk.names("team-b", "zk-1"));
        assert!(!zk.names("team-a", "zk-2"));
        let shared = decoded(serde_json::json!({
            "metadata": {"name": "zk", "namespace": "team-a"},
            "spec": {"operatorVersion": {"name": "zk-1", "namespace": "shared"}},
        }));
        assert!(shared.names("shared", "zk-1"));
        assert!(!shared.names("team-a", "zk-1"));
    }

    #[test]
    fn an_instance_names_the_version_a_channel_installed_as_well_as_its_spec() {
        let zk = decoded(serde_json::json!({
            "metadata": {"name": "zk", "namespace": "team-a"},
            "spec": {"operatorVersion": {"name": "zk-1"}, "serviceAccountName": "ops"},
            "status": {"upgrades": {"operatorVersion": "zk-2"}, "planStatus": {}},
        }));
        assert!(zk.names("team-a", "zk-1"));
        assert!(zk.names("team-a", "zk-2"));
        assert_eq!(zk.account(), Some("ops"));
    }

    #[test]
    fn an_instance_without_spec_or_status_names_nothing() {
        let bare = decoded(serde_json::json!({"metadata": {"name": "x"}, "status": null}));
        assert!(!bare.names("default", ""));
        assert_eq!(bare.namespace(), "default");
    }

    #[test]
    fn the_cache_is_current_only_between_a_complete_list_and_the_next_failure() {
        let use_ = || InstanceUse::default();
        let failed = || Err(watcher::Error::NoResourceVersion);
        let mut current = false;
        for (event, expected) in [
            (Ok(watcher::Event::Init), false),
            (Ok(watcher::Event::InitApply(use_())), false),
            (Ok(watcher::Event::InitDone), true),
            (Ok(watcher::Event::Apply(use_())), true),
            (Ok(watcher::Event::Delete(use_())), true),
            (failed(), false),
            // The new list after the failure (the store still holds the
            // old one): not current until it ends.
            (Ok(watcher::Event::Init), false),
            (Ok(watcher::Event::InitApply(use_())), false),
            (Ok(watcher::Event::InitDone), true),
        ] {
            current = current_after(current, &event);
            assert_eq!(current, expected, "after {event:?}");
        }
    }
}
