//! The resource table: built-in kinds and kinds added by CRDs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod builtins;

use builtins::BUILTINS;

/// An additional printer column of a CRD (or a built-in table column).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type (`string`, `integer`, `date`, ...).
    pub column_type: String,
    /// Simple JSONPath into the object.
    pub json_path: String,
    /// 0 for default output, higher for `-o wide`.
    pub priority: i64,
}

/// One REST resource served by the sandbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceInfo {
    /// API group, "" for core.
    pub group: String,
    /// Served versions; the first is the preferred one.
    pub versions: Vec<String>,
    /// Kind.
    pub kind: String,
    /// Plural resource name used in paths.
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Short names (`cm`, `deploy`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether a `/status` subresource exists.
    pub status: bool,
    /// Whether a `/scale` subresource exists.
    pub scale: bool,
    /// Table columns for CRD kinds.
    pub printer_columns: Vec<PrinterColumn>,
    /// Whether the resource was defined by a CRD.
    pub from_crd: bool,
}

impl ResourceInfo {
    /// `apiVersion` for a served version.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    /// The preferred version.
    pub fn preferred_version(&self) -> &str {
        self.versions.first().map(String::as_str).unwrap_or("v1")
    }
}

/// All resources the sandbox serves, in a stable order.
#[derive(Debug, Clone)]
pub struct Registry {
    resources: Vec<ResourceInfo>,
    /// CRD kinds (group, plural) registered but not Established yet: not
    /// served, neither in discovery nor at their paths (404).
    establishing: Vec<(String, String)>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::builtin()
    }
}

impl Registry {
    /// The built-in resource table.
    pub fn builtin() -> Self {
        let resources = BUILTINS
            .iter()
            .map(|x| ResourceInfo {
                group: x.group.to_string(),
                versions: std::iter::once(x.version)
                    .chain(x.more_versions.iter().copied())
                    .map(str::to_string)
                    .collect(),
                kind: x.kind.to_string(),
                plural: x.plural.to_string(),
                singular: x.kind.to_lowercase(),
                short_names: x.short.iter().map(|s| (*s).to_string()).collect(),
                categories: if x.all {
                    vec!["all".to_string()]
                } else {
                    Vec::new()
                },
                namespaced: x.namespaced,
                status: x.status,
                scale: x.scale,
                printer_columns: Vec::new(),
                from_crd: false,
            })
            .collect();
        Self {
            resources,
            establishing: Vec::new(),
        }
    }

    fn served(&self, r: &ResourceInfo) -> bool {
        !(r.from_crd
            && self
                .establishing
                .iter()
                .any(|(g, p)| *g == r.group && *p == r.plural))
    }

    /// The resource served at `/apis/{group}/{version}/{plural}`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceInfo> {
        self.resources.iter().find(|r| {
            r.group == group
                && r.plural == plural
                && r.versions.iter().any(|v| v == version)
                && self.served(r)
        })
    }

    /// Groups with their served versions, core group excluded, in first-seen order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for r in self
            .resources
            .iter()
            .filter(|r| !r.group.is_empty() && self.served(r))
        {
            match out.iter_mut().find(|(g, _)| *g == r.group) {
                Some((_, versions)) => {
                    for v in &r.versions {
                        if !versions.contains(v) {
                            versions.push(v.clone());
                        }
                    }
                }
                None => out.push((r.group.clone(), r.versions.clone())),
            }
        }
        out
    }

    /// Resources served in one group version.
    pub fn in_group_version<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a ResourceInfo> + 'a {
        self.resources.iter().filter(move |r| {
            r.group == group && r.versions.iter().any(|v| v == version) && self.served(r)
        })
    }

    /// Adds or replaces the resource a CRD defines. Returns a problem
    /// description if the CRD is unusable.
    pub fn register_crd(&mut self, crd: &Value) -> Result<ResourceInfo, String> {
        let info = crd_resource(crd)?;
        if let Some(existing) = self
            .resources
            .iter()
            .find(|r| r.group == info.group && r.plural == info.plural && !r.from_crd)
        {
            return Err(format!(
                "{}.{} is a built-in resource",
                existing.plural, existing.group
            ));
        }
        self.resources
            .retain(|r| !(r.group == info.group && r.plural == info.plural));
        self.resources.push(info.clone());
        Ok(info)
    }

    /// The resource of `kind` in `group`, whatever version serves it (how
    /// an owner reference is resolved).
    pub fn by_kind(&self, group: &str, kind: &str) -> Option<&ResourceInfo> {
        self.resources
            .iter()
            .find(|r| r.group == group && r.kind == kind)
    }

    /// Whether the kind a CRD defines is registered but not served until
    /// its CRD is Established.
    pub fn is_establishing(&self, group: &str, plural: &str) -> bool {
        self.establishing
            .iter()
            .any(|(g, p)| g == group && p == plural)
    }

    /// Holds back (`true`) or serves (`false`) a kind a CRD defines.
    pub fn set_establishing(&mut self, group: &str, plural: &str, establishing: bool) {
        self.establishing
            .retain(|(g, p)| !(g == group && p == plural));
        if establishing {
            self.establishing
                .push((group.to_string(), plural.to_string()));
        }
    }

    /// Removes the resource a CRD defined.
    pub fn unregister(&mut self, group: &str, plural: &str) {
        self.set_establishing(group, plural, false);
        self.resources
            .retain(|r| !(r.from_crd && r.group == group && r.plural == plural));
    }
}

fn str_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The resource a CRD object defines.
pub fn crd_resource(crd: &Value) -> Result<ResourceInfo, String> {
    let spec = crd.get("spec").ok_or("spec: Required value")?;
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .ok_or("spec.group: Required value")?;
    let names = spec.get("names").ok_or("spec.names: Required value")?;
    let plural = names
        .get("plural")
        .and_then(Value::as_str)
        .ok_or("spec.names.plural: Required value")?;
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .ok_or("spec.names.kind: Required value")?;
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let namespaced = match spec.get("scope").and_then(Value::as_str) {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        other => {
            return Err(format!(
                "spec.scope: Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""
            ));
        }
    };
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .ok_or("spec.versions: Required value")?;
    let mut served = Vec::new();
    let mut storage_first = None;
    let mut status = false;
    let mut scale = false;
    let mut printer_columns = Vec::new();
    for v in versions {
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .ok_or("spec.versions[].name: Required value")?;
        if v.get("served").and_then(Value::as_bool).unwrap_or(false) {
            served.push(name.to_string());
        }
        if v.get("storage").and_then(Value::as_bool).unwrap_or(false) {
            storage_first = Some(name.to_string());
            let sub = v.get("subresources");
            status = sub.and_then(|s| s.get("status")).is_some();
            scale = sub.and_then(|s| s.get("scale")).is_some();
            printer_columns = v
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .map(|cols| {
                    cols.iter()
                        .filter_map(|c| {
                            Some(PrinterColumn {
                                name: c.get("name")?.as_str()?.to_string(),
                                column_type: c
                                    .get("type")
                                    .and_then(Value::as_str)
                                    .unwrap_or("string")
                                    .to_string(),
                                json_path: c.get("jsonPath")?.as_str()?.to_string(),
                                priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
        }
    }
    if served.is_empty() {
        return Err("spec.versions: Invalid value: must have at least one served version".into());
    }
    if let Some(storage) = storage_first
        && let Some(pos) = served.iter().position(|v| *v == storage)
    {
        let s = served.remove(pos);
        served.insert(0, s);
    }
    Ok(ResourceInfo {
        group: group.to_string(),
        versions: served,
        kind: kind.to_string(),
        plural: plural.to_string(),
        singular,
        short_names: str_list(names.get("shortNames").unwrap_or(&Value::Null)),
        categories: str_list(names.get("categories").unwrap_or(&Value::Null)),
        namespaced,
        status,
        scale,
        printer_columns,
        from_crd: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_builtin_by_path_and_kind() {
        let r = Registry::builtin();
        assert_eq!(
            r.find("apps", "v1", "deployments").map(|x| x.kind.as_str()),
            Some("Deployment")
        );
        assert!(
            r.find("", "v1", "configmaps")
                .is_some_and(|x| x.short_names == ["cm"])
        );
        assert!(r.find("apps", "v2", "deployments").is_none());
    }

    #[test]
    fn crd_registration_uses_storage_version_first() {
        let mut r = Registry::builtin();
        let crd = json!({"spec": {"group": "kudo.dev", "scope": "Namespaced",
        "names": {"plural": "instances", "kind": "Instance", "shortNames": ["inst"]},
        "versions": [
            {"name": "v1alpha1", "served": true, "storage": false},
            {"name": "v1beta1", "served": true, "storage": true, "subresources": {"status": {}}}
        ]}});
        let info = r.register_crd(&crd).unwrap();
        assert_eq!(info.versions, vec!["v1beta1", "v1alpha1"]);
        assert!(info.status);
        assert!(r.find("kudo.dev", "v1alpha1", "instances").is_some());
        r.unregister("kudo.dev", "instances");
        assert!(r.find("kudo.dev", "v1beta1", "instances").is_none());
    }

    #[test]
    fn built_ins_are_served_in_exactly_the_versions_kubernetes_1_32_serves() {
        use kudo_package::removed_apis::{KubernetesRelease, ServedApis, removed_versions};
        let r = Registry::builtin();
        let release = KubernetesRelease::CURRENT;
        for res in &r.resources {
            for version in &res.versions {
                let api_version = res.api_version(version);
                assert!(
                    release.serves(&api_version, &res.kind),
                    "{api_version} {} is not served by {release}",
                    res.kind
                );
            }
        }
        let serves = |api_version: &str, kind: &str| {
            r.resources.iter().any(|res| {
                res.kind == kind
                    && res
                        .versions
                        .iter()
                        .any(|v| res.api_version(v) == api_version)
            })
        };
        for removed in removed_versions() {
            assert!(
                !serves(removed.api_version, removed.kind),
                "{} {} was removed in {}",
                removed.api_version,
                removed.kind,
                removed.removed_in
            );
            // What a translated object is applied as must be there.
            for successor in removed.successors {
                if release.serves(successor, removed.kind) {
                    assert!(
                        serves(successor, removed.kind),
                        "{successor} {} is missing",
                        removed.kind
                    );
                }
            }
        }
        let hpa = r.find("autoscaling", "v1", "horizontalpodautoscalers");
        assert_eq!(hpa.map(|h| h.preferred_version()), Some("v2"));
        assert!(
            r.find("policy", "v1beta1", "poddisruptionbudgets")
                .is_none()
        );
    }

    #[test]
    fn crd_without_scope_is_rejected() {
        let crd = json!({"spec": {"group": "x.io", "names": {"plural": "as", "kind": "A"}, "versions": []}});
        assert!(crd_resource(&crd).unwrap_err().contains("spec.scope"));
    }
}
