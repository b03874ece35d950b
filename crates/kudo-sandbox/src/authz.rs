//! RBAC for impersonated requests.
//!
//! The sandbox has no authentication: a plain request is the admin, as
//! before. A request that impersonates someone (`Impersonate-User`, what
//! kudo-manager does to apply an Instance's objects as a ServiceAccount) is
//! authorized the way kube-apiserver's RBAC authorizer does it: the rules
//! of the Roles and ClusterRoles bound to the user or its groups, and
//! the escalation check on RBAC writes (a binding or role may only grant
//! what the caller holds, unless it may `bind` / `escalate`).
//!
//! SubjectAccessReviews are answered by the same rules (`access_review`).
//!
//! Not modelled: aggregated ClusterRoles (`aggregationRule`), the built-in
//! default roles (`cluster-admin`, `edit`, ...), non-resource URLs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use http::HeaderMap;
use serde_json::Value;

use crate::state::State;
use crate::status::{ApiError, qualified};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Who a plain (not impersonating) request is, as webhooks are told.
pub const ADMIN_USER: &str = "kudo-sandbox-admin";

/// The groups of [`ADMIN_USER`].
pub const ADMIN_GROUPS: [&str; 2] = [MASTERS_GROUP, "system:authenticated"];

/// The group kube-apiserver authorizes for everything, before RBAC.
const MASTERS_GROUP: &str = "system:masters";

/// Who an impersonating request acts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// User name, e.g. `system:serviceaccount:team:deployer`.
    pub user: String,
    /// Groups, with the ones the API server adds.
    pub groups: Vec<String>,
}

impl Caller {
    /// The impersonated caller of a request, if it impersonates anyone.
    /// Like kube-apiserver: without `Impersonate-Group`, a ServiceAccount
    /// user gets its ServiceAccount groups; everyone gets `system:authenticated`.
    pub fn from_headers(headers: &HeaderMap) -> Option<Self> {
        let user = headers.get("impersonate-user")?.to_str().ok()?.to_string();
        let mut groups: Vec<String> = headers
            .get_all("impersonate-group")
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect();
        if groups.is_empty()
            && let Some(ns) = service_account_namespace(&user)
        {
            groups.push("system:serviceaccounts".into());
            groups.push(format!("system:serviceaccounts:{ns}"));
        }
        groups.push("system:authenticated".into());
        Some(Self { user, groups })
    }
}

fn service_account_namespace(user: &str) -> Option<&str> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty()).then_some(ns)
}

/// One request as the authorizer sees it.
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    /// RBAC verb: get, list, watch, create, update, patch, delete, ...
    pub verb: &'a str,
    /// API group ("" for core).
    pub group: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Subresource, if any.
    pub subresource: Option<&'a str>,
    /// Namespace ("" for cluster scope).
    pub namespace: &'a str,
    /// Object name, when the request names one.
    pub name: Option<&'a str>,
}

impl Attributes<'_> {
    fn resource_path(&self) -> String {
        match self.subresource {
            Some(sub) => format!("{}/{sub}", self.resource),
            None => self.resource.to_string(),
        }
    }
}

/// Refuses the request with kube-apiserver's 403 unless an RBAC rule bound
/// to the caller allows it.
pub fn authorize(st: &State, caller: &Caller, attrs: &Attributes<'_>) -> Result<(), ApiError> {
    if allowed(st, caller, attrs) {
        return Ok(());
    }
    let what = match attrs.name {
        Some(name) => format!("{} {name:?}", qualified(attrs.resource, attrs.group)),
        None => qualified(attrs.resource, attrs.group),
    };
    let scope = if attrs.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace {:?}", attrs.namespace)
    };
    Err(ApiError::forbidden(format!(
        "{what} is forbidden: User {:?} cannot {} resource {:?} in API group {:?} {scope}",
        caller.user,
        attrs.verb,
        attrs.resource_path(),
        attrs.group
    )))
}

/// Whether any rule bound to the caller allows `attrs` (everything for
/// `system:masters`, as kube-apiserver's first authorizer allows).
pub fn allowed(st: &State, caller: &Caller, attrs: &Attributes<'_>) -> bool {
    if caller.groups.iter().any(|g| g == MASTERS_GROUP) {
        return true;
    }
    st.rbac_rules
        .rules_for(st, caller, attrs.namespace)
        .iter()
        .any(|rule| rule.allows(attrs))
}

/// One RBAC policy rule, read once from its role.
#[derive(Debug)]
struct Rule {
    verbs: Vec<String>,
    groups: Vec<String>,
    resources: Vec<String>,
    names: Vec<String>,
}

impl Rule {
    fn from_value(rule: &Value) -> Self {
        let list = |field: &str| -> Vec<String> {
            rule.get(field)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        Self {
            verbs: list("verbs"),
            groups: list("apiGroups"),
            resources: list("resources"),
            names: list("resourceNames"),
        }
    }

    fn allows(&self, attrs: &Attributes<'_>) -> bool {
        let has = |items: &[String], want: &str| items.iter().any(|i| i == "*" || i == want);
        let names_ok = self.names.is_empty()
            || attrs
                .name
                .is_some_and(|n| self.names.iter().any(|x| x == n));
        let resource_ok = match attrs.subresource {
            None => has(&self.resources, attrs.resource),
            Some(_) => has(&self.resources, &attrs.resource_path()),
        };
        has(&self.verbs, attrs.verb) && has(&self.groups, attrs.group) && resource_ok && names_ok
    }
}

type Rules = Arc<[Rule]>;

/// Callers (user, groups) and namespaces the cache keeps rules for, at most.
const CACHED: usize = 4096;

/// The rules bound to each caller in each namespace, resolved once and kept
/// until any Role, ClusterRole or their bindings change (as kube-apiserver's
/// authorizer answers from its informers' indexed caches instead of reading
/// every binding per request).
#[derive(Debug, Default)]
pub struct RuleCache {
    entries: Mutex<Resolved>,
}

#[derive(Debug, Default)]
struct Resolved {
    /// [`crate::store::Store::rbac_written`] when these were resolved.
    version: u64,
    rules: HashMap<(String, Vec<String>, String), Rules>,
}

impl RuleCache {
    /// The rules that apply to the caller in `namespace` (cluster-wide ones
    /// always; a namespace's RoleBindings only there).
    fn rules_for(&self, st: &State, caller: &Caller, namespace: &str) -> Rules {
        let version = st.store.rbac_written();
        let key = (
            caller.user.clone(),
            caller.groups.clone(),
            namespace.to_string(),
        );
        let mut cache = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if cache.version != version || cache.rules.len() >= CACHED {
            cache.rules.clear();
            cache.version = version;
        }
        cache
            .rules
            .entry(key)
            .or_insert_with(|| resolve(st, caller, namespace).into())
            .clone()
    }
}

fn resolve(st: &State, caller: &Caller, namespace: &str) -> Vec<Rule> {
    let mut rules = Vec::new();
    for binding in st.store.list(RBAC_GROUP, "clusterrolebindings", None) {
        if binds(&binding.value, caller) {
            rules.extend(
                role_rules(st, &binding.value, "")
                    .iter()
                    .map(Rule::from_value),
            );
        }
    }
    if !namespace.is_empty() {
        for binding in st.store.list(RBAC_GROUP, "rolebindings", Some(namespace)) {
            if binds(&binding.value, caller) {
                rules.extend(
                    role_rules(st, &binding.value, namespace)
                        .iter()
                        .map(Rule::from_value),
                );
            }
        }
    }
    rules
}

fn binds(binding: &Value, caller: &Caller) -> bool {
    let Some(subjects) = binding.get("subjects").and_then(Value::as_array) else {
        return false;
    };
    let binding_ns = binding["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default();
    subjects.iter().any(|s| {
        let name = s["name"].as_str().unwrap_or_default();
        match s["kind"].as_str() {
            Some("User") => name == caller.user,
            Some("Group") => caller.groups.iter().any(|g| g == name),
            Some("ServiceAccount") => {
                let ns = s["namespace"]
                    .as_str()
                    .filter(|n| !n.is_empty())
                    .unwrap_or(binding_ns);
                caller.user == format!("system:serviceaccount:{ns}:{name}")
            }
            _ => false,
        }
    })
}

fn role_rules<'a>(st: &'a State, binding: &Value, namespace: &str) -> &'a [Value] {
    let role_ref = &binding["roleRef"];
    let name = role_ref["name"].as_str().unwrap_or_default();
    let role = match role_ref["kind"].as_str() {
        Some("ClusterRole") => st.store.get(RBAC_GROUP, "clusterroles", "", name),
        Some("Role") if !namespace.is_empty() => st.store.get(RBAC_GROUP, "roles", namespace, name),
        _ => None,
    };
    role.and_then(|r| r.value.get("rules").and_then(Value::as_array))
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// kube-apiserver's escalation check for RBAC writes by an impersonated
/// caller: a (Cluster)RoleBinding needs `bind` on its role or every right
/// the role grants; a (Cluster)Role needs `escalate` or every right of its
/// rules. `object` is the role or binding as sent.
pub fn check_escalation(
    st: &State,
    caller: &Caller,
    resource: &str,
    namespace: &str,
    object: &Value,
) -> Result<(), ApiError> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let (granted, exemption, target): (Vec<Value>, &str, (&str, String)) = match resource {
        "rolebindings" | "clusterrolebindings" => {
            let role_ref = &object["roleRef"];
            let role_name = role_ref["name"].as_str().unwrap_or_default().to_string();
            let (plural, ns) = match role_ref["kind"].as_str() {
                Some("Role") => ("roles", namespace),
                _ => ("clusterroles", ""),
            };
            let rules = st
                .store
                .get(RBAC_GROUP, plural, ns, &role_name)
                .and_then(|r| r.value.get("rules").and_then(Value::as_array).cloned())
                .unwrap_or_default();
            (rules, "bind", (plural, role_name))
        }
        "roles" | "clusterroles" => (
            object
                .get("rules")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            "escalate",
            (resource, name.to_string()),
        ),
        _ => return Ok(()),
    };
    let exempt = Attributes {
        verb: exemption,
        group: RBAC_GROUP,
        resource: target.0,
        subresource: None,
        namespace,
        name: Some(&target.1),
    };
    if allowed(st, caller, &exempt) {
        return Ok(());
    }
    let missing: Vec<String> = granted
        .iter()
        .flat_map(expand)
        .filter(|(verb, group, res, rname)| {
            !allowed(
                st,
                caller,
                &Attributes {
                    verb,
                    group,
                    resource: res,
                    subresource: None,
                    namespace,
                    name: rname.as_deref(),
                },
            )
        })
        .map(|(verb, group, res, _)| {
            format!("{{APIGroups:[{group:?}], Resources:[{res:?}], Verbs:[{verb:?}]}}")
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "{} {name:?} is forbidden: user {:?} (groups={:?}) is attempting to grant RBAC permissions not currently held: {}",
        qualified(resource, RBAC_GROUP),
        caller.user,
        caller.groups,
        missing.join(", ")
    )))
}

/// Every (verb, group, resource, name) a rule grants, wildcards kept as
/// `*` (held only by a rule that has `*` too).
fn expand(rule: &Value) -> Vec<(String, String, String, Option<String>)> {
    let list = |field: &str| -> Vec<String> {
        rule.get(field)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let names: Vec<Option<String>> = match list("resourceNames") {
        n if n.is_empty() => vec![None],
        n => n.into_iter().map(Some).collect(),
    };
    let mut out = Vec::new();
    for verb in list("verbs") {
        for group in list("apiGroups") {
            for res in list("resources") {
                for name in &names {
                    out.push((verb.clone(), group.clone(), res.clone(), name.clone()));
                }
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "authz_tests.rs"]
mod tests;
