//! Instances whose objects were last judged free of drift, with the
//! resourceVersions the judgment saw. Drift is a function of the render
//! book and each object's cached metadata; the book changes only when a
//! task runs (which forgets the judgment), so while every cached version is
//! still the one judged, the judgment stands. A reconcile woken by anything
//! else (a repository sync, a schedule, a dependency) then neither reads
//! the book's Secret nor judges again.

use std::collections::HashMap;
use std::sync::Mutex;

use kudo_api::{AppliedObject, Instance};

use super::Observers;

/// The objects judged and the resourceVersion each was judged at.
pub type Versions = Vec<(AppliedObject, String)>;

/// One Instance's last clean judgment. The uid tells a later Instance of
/// the same name apart; the cluster-scoped objects of its status decide
/// which book entries are trusted, so they are part of what was judged.
#[derive(Debug)]
struct Judged {
    uid: String,
    cluster_scoped: Vec<AppliedObject>,
    versions: Versions,
}

/// Clean judgments by Instance (`namespace/name`). Bounded by what is live:
/// an entry goes with its Instance, and with any task that runs for it.
#[derive(Debug, Default)]
pub struct JudgedClean(Mutex<HashMap<String, Judged>>);

impl JudgedClean {
    /// Whether `inst` was judged clean and every object judged is still at
    /// the version judged (also: none is gone from its cache).
    pub fn still_clean(&self, inst: &Instance, observers: &Observers) -> bool {
        let Ok(judged) = self.0.lock() else {
            return false;
        };
        let Some(j) = judged.get(&crate::context::instance_key(inst)) else {
            return false;
        };
        j.uid == uid(inst)
            && j.cluster_scoped == cluster_scoped(inst)
            && j.versions
                .iter()
                .all(|(o, v)| observers.resource_version(o).as_deref() == Some(v.as_str()))
    }

    /// Remembers a judgment that found no drift at `versions`.
    pub fn remember(&self, inst: &Instance, versions: Versions) {
        if let Ok(mut judged) = self.0.lock() {
            judged.insert(
                crate::context::instance_key(inst),
                Judged {
                    uid: uid(inst).to_string(),
                    cluster_scoped: cluster_scoped(inst),
                    versions,
                },
            );
        }
    }

    /// Forgets the judgment of the Instance `key` (`namespace/name`).
    pub fn forget(&self, key: &str) {
        if let Ok(mut judged) = self.0.lock() {
            judged.remove(key);
        }
    }
}

fn uid(inst: &Instance) -> &str {
    inst.metadata.uid.as_deref().unwrap_or_default()
}

fn cluster_scoped(inst: &Instance) -> Vec<AppliedObject> {
    inst.status
        .as_ref()
        .map(kudo_engine::facts::cluster_scoped_objects)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kube::api::ObjectMeta;

    use super::*;
    use crate::recovery::MetaLookup;

    /// A synced cache of Deployments holding `versions` by name.
    struct Cache(Mutex<HashMap<String, String>>);

    impl MetaLookup for Cache {
        fn synced(&self) -> bool {
            true
        }
        fn get(&self, _: Option<&str>, name: &str) -> Option<ObjectMeta> {
            let version = self.resource_version(None, name)?;
            Some(ObjectMeta {
                resource_version: Some(version),
                ..ObjectMeta::default()
            })
        }
        fn resource_version(&self, _: Option<&str>, name: &str) -> Option<String> {
            self.0.lock().ok()?.get(name).cloned()
        }
    }

    fn deployment(name: &str) -> AppliedObject {
        AppliedObject {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("team".into()),
            name: name.into(),
        }
    }

    fn instance(uid: &str) -> Instance {
        let mut inst = Instance::new("zk", Default::default());
        inst.metadata.namespace = Some("team".into());
        inst.metadata.uid = Some(uid.into());
        inst
    }

    fn set(cache: &Cache, name: &str, version: Option<&str>) {
        let mut m = cache.0.lock().unwrap();
        match version {
            Some(v) => m.insert(name.into(), v.into()),
            None => m.remove(name),
        };
    }

    #[test]
    fn a_clean_judgment_stands_only_while_every_object_judged_is_unchanged() {
        let cache = Arc::new(Cache(Mutex::default()));
        let mut observers = Observers::default();
        observers.add("apps", "Deployment", cache.clone());
        set(&cache, "a", Some("1"));
        set(&cache, "b", Some("5"));
        let judged = JudgedClean::default();
        let inst = instance("u1");
        assert!(!judged.still_clean(&inst, &observers), "nothing judged yet");

        judged.remember(
            &inst,
            vec![(deployment("a"), "1".into()), (deployment("b"), "5".into())],
        );
        assert!(judged.still_clean(&inst, &observers));
        assert!(
            !judged.still_clean(&instance("u2"), &observers),
            "a later Instance of the same name"
        );

        set(&cache, "b", Some("6"));
        assert!(!judged.still_clean(&inst, &observers), "b changed");
        set(&cache, "b", Some("5"));
        assert!(judged.still_clean(&inst, &observers));
        set(&cache, "a", None);
        assert!(!judged.still_clean(&inst, &observers), "a is gone");
        set(&cache, "a", Some("1"));

        judged.forget("team/zk");
        assert!(!judged.still_clean(&inst, &observers), "forgotten");
    }
}
