//! Object semantics shared by every resource: what create and update do to
//! metadata, status, generation and the defaults some built-ins get.
//! Pure functions over JSON values; no locking or IO.

use serde_json::{Map, Value, json};

use crate::defaults::apply_defaults;
use crate::registry::ResourceInfo;
use crate::status::{ApiError, Subject};
use crate::store::object_rv;

use validation::{labels_problem, name_problem};

/// The current time as the API server formats it.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// `metadata` as a mutable map, created if missing.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let Some(root) = obj.as_object_mut() else {
        unreachable!("the value was made an object above")
    };
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta.as_object_mut() {
        Some(m) => m,
        None => unreachable!("metadata was made an object above"),
    }
}

/// The object's finalizers.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The object's uid.
pub fn uid(obj: &Value) -> &str {
    obj["metadata"]["uid"].as_str().unwrap_or_default()
}

/// Whether the object has a deletionTimestamp.
pub fn is_deleting(obj: &Value) -> bool {
    obj["metadata"]
        .get("deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes
        .iter()
        .take(5)
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

/// Checks apiVersion/kind against the resource addressed by the URL and
/// fills them in when missing.
fn check_type(res: &ResourceInfo, version: &str, obj: &mut Value) -> Result<(), ApiError> {
    let want_av = res.api_version(version);
    let Some(root) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    };
    match root.get("kind").and_then(Value::as_str) {
        Some(k) if k != res.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind of the object ({k}) does not match the resource {} in the URL (expected {})",
                res.plural, res.kind
            )));
        }
        _ => {}
    }
    if let Some(av) = root.get("apiVersion").and_then(Value::as_str)
        && av != want_av
        && res.versions.iter().all(|v| res.api_version(v) != av)
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({want_av})"
        )));
    }
    root.insert("apiVersion".into(), json!(want_av));
    root.insert("kind".into(), json!(res.kind));
    Ok(())
}

/// Fills in a new object's metadata and defaults. `namespace` is the URL's.
pub fn prepare_create(
    res: &ResourceInfo,
    version: &str,
    namespace: &str,
    mut obj: Value,
) -> Result<Value, ApiError> {
    check_type(res, version, &mut obj)?;
    let kind = res.kind.clone();
    let meta = meta_mut(&mut obj);
    if meta
        .get("resourceVersion")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
    {
        return Err(ApiError::internal(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let mut name = meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if name.is_empty()
        && let Some(prefix) = meta.get("generateName").and_then(Value::as_str)
        && !prefix.is_empty()
    {
        name = format!("{prefix}{}", random_suffix());
        meta.insert("name".into(), json!(name));
    }
    if let Some(problem) = name_problem(res, &name) {
        return Err(ApiError::invalid(
            &kind,
            &res.group,
            &name,
            "metadata.name",
            &problem,
        ));
    }
    if let Some((field, problem)) = labels_problem(meta) {
        return Err(ApiError::invalid(
            &kind, &res.group, &name, &field, &problem,
        ));
    }
    if res.namespaced {
        match meta.get("namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() && ns != namespace => {
                return Err(ApiError::bad_request(format!(
                    "the namespace of the provided object ({ns}) does not match the namespace sent on the request ({namespace})"
                )));
            }
            _ => {
                meta.insert("namespace".into(), json!(namespace));
            }
        }
    } else {
        meta.remove("namespace");
    }
    meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
    meta.insert("generation".into(), json!(1));
    meta.remove("deletionTimestamp");
    meta.remove("deletionGracePeriodSeconds");
    meta.remove("managedFields");
    meta.remove("selfLink");
    if res.status
        && let Some(root) = obj.as_object_mut()
    {
        root.remove("status");
    }
    apply_defaults(res, &mut obj, None)?;
    Ok(obj)
}

/// Fields other than metadata and status, whose change bumps generation.
fn spec_part(obj: &Value) -> Map<String, Value> {
    obj.as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// Builds the stored form of an update from the old object and the body a
/// client sent (PUT or the result of a patch). `status_only` for `/status`.
pub fn prepare_update(
    res: &ResourceInfo,
    version: &str,
    old: &Value,
    mut new: Value,
    status_only: bool,
) -> Result<Value, ApiError> {
    check_type(res, version, &mut new)?;
    let old_meta = old["metadata"].clone();
    let name = old_meta["name"].as_str().unwrap_or_default().to_string();
    let subject = Subject {
        group: &res.group,
        plural: &res.plural,
        name: &name,
    };
    let meta = meta_mut(&mut new);
    match meta.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() && n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    if let Some(rv) = meta.get("resourceVersion").and_then(Value::as_str)
        && !rv.is_empty()
        && rv.parse::<u64>().ok() != Some(object_rv(old))
    {
        return Err(ApiError::stale(subject));
    }
    for key in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match old_meta.get(key) {
            Some(v) => {
                meta.insert(key.into(), v.clone());
            }
            None => {
                meta.remove(key);
            }
        }
    }
    meta.remove("managedFields");
    if let Some((field, problem)) = labels_problem(meta) {
        return Err(ApiError::invalid(
            &res.kind, &res.group, &name, &field, &problem,
        ));
    }
    let mut new = if status_only {
        let mut merged = old.clone();
        // Moved, not cloned: a status can be large (a plan's step tree).
        merged["status"] = new
            .as_object_mut()
            .and_then(|m| m.remove("status"))
            .unwrap_or(Value::Null);
        if merged["status"].is_null()
            && let Some(m) = merged.as_object_mut()
        {
            m.remove("status");
        }
        merged
    } else {
        if res.status
            && let Some(m) = new.as_object_mut()
        {
            match old.get("status") {
                Some(s) => {
                    m.insert("status".into(), s.clone());
                }
                None => {
                    m.remove("status");
                }
            }
        }
        new
    };
    if is_deleting(old) {
        let before = finalizers(old);
        if let Some(added) = finalizers(&new).into_iter().find(|f| !before.contains(f)) {
            return Err(ApiError::invalid(
                &res.kind,
                &res.group,
                &name,
                "metadata.finalizers",
                &format!(
                    "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers [{added}]"
                ),
            ));
        }
    }
    if !status_only {
        apply_defaults(res, &mut new, Some(old))?;
        if res.kind == "Namespace" && res.group.is_empty() {
            new["status"] = old["status"].clone();
        }
    }
    if spec_part(old) != spec_part(&new) {
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
        meta_mut(&mut new).insert("generation".into(), json!(generation));
    }
    Ok(new)
}

#[path = "objects_validation.rs"]
mod validation;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn cm_res() -> ResourceInfo {
        Registry::builtin()
            .find("", "v1", "configmaps")
            .cloned()
            .unwrap()
    }

    fn deploy_res() -> ResourceInfo {
        Registry::builtin()
            .find("apps", "v1", "deployments")
            .cloned()
            .unwrap()
    }

    #[test]
    fn create_fills_metadata_and_drops_status_of_status_resources() {
        let obj = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}, "status": {"replicas": 9}});
        let out = prepare_create(&deploy_res(), "v1", "default", obj).unwrap();
        assert_eq!(out["metadata"]["namespace"], "default");
        assert_eq!(out["metadata"]["generation"], 1);
        assert!(
            out["metadata"]["uid"]
                .as_str()
                .is_some_and(|u| u.len() == 36)
        );
        assert!(out.get("status").is_none());
        assert_eq!(out["kind"], "Deployment");
    }

    #[test]
    fn create_without_name_is_invalid() {
        let err = prepare_create(&cm_res(), "v1", "default", json!({"metadata": {}})).unwrap_err();
        assert_eq!(err.code, 422);
        assert!(err.message.contains("metadata.name"));
    }

    #[test]
    fn generate_name_gets_a_suffix() {
        let out = prepare_create(
            &cm_res(),
            "v1",
            "default",
            json!({"metadata": {"generateName": "x-"}}),
        )
        .unwrap();
        let name = out["metadata"]["name"].as_str().unwrap();
        assert!(name.starts_with("x-") && name.len() == 7);
    }

    #[test]
    fn uppercase_names_are_rejected() {
        let err = prepare_create(
            &cm_res(),
            "v1",
            "default",
            json!({"metadata": {"name": "Bad"}}),
        )
        .unwrap_err();
        assert_eq!(err.reason, "Invalid");
    }

    #[test]
    fn spec_change_bumps_generation_but_label_change_does_not() {
        let res = deploy_res();
        let old = prepare_create(
            &res,
            "v1",
            "default",
            json!({"metadata": {"name": "w"}, "spec": {"replicas": 1}}),
        )
        .unwrap();
        let mut relabel = old.clone();
        relabel["metadata"]["labels"] = json!({"a": "b"});
        assert_eq!(
            prepare_update(&res, "v1", &old, relabel, false).unwrap()["metadata"]["generation"],
            1
        );
        let mut scale = old.clone();
        scale["spec"]["replicas"] = json!(3);
        assert_eq!(
            prepare_update(&res, "v1", &old, scale, false).unwrap()["metadata"]["generation"],
            2
        );
    }

    #[test]
    fn main_write_keeps_status_and_status_write_keeps_spec() {
        let res = deploy_res();
        let mut old = prepare_create(
            &res,
            "v1",
            "default",
            json!({"metadata": {"name": "w"}, "spec": {"replicas": 1}}),
        )
        .unwrap();
        old["status"] = json!({"replicas": 1});
        let mut body = old.clone();
        body["status"] = json!({"replicas": 5});
        body["spec"]["replicas"] = json!(2);
        let main = prepare_update(&res, "v1", &old, body.clone(), false).unwrap();
        assert_eq!(main["status"]["replicas"], 1);
        let status = prepare_update(&res, "v1", &old, body, true).unwrap();
        assert_eq!(status["status"]["replicas"], 5);
        assert_eq!(status["spec"]["replicas"], 1);
    }

    #[test]
    fn stale_resource_version_conflicts() {
        let res = cm_res();
        let mut old =
            prepare_create(&res, "v1", "default", json!({"metadata": {"name": "c"}})).unwrap();
        old["metadata"]["resourceVersion"] = json!("7");
        let mut body = old.clone();
        body["metadata"]["resourceVersion"] = json!("6");
        assert_eq!(
            prepare_update(&res, "v1", &old, body, false)
                .unwrap_err()
                .code,
            409
        );
    }

    #[test]
    fn secret_string_data_becomes_base64_data() {
        let res = Registry::builtin()
            .find("", "v1", "secrets")
            .cloned()
            .unwrap();
        let out = prepare_create(
            &res,
            "v1",
            "default",
            json!({"metadata": {"name": "s"}, "stringData": {"pw": "hi"}}),
        )
        .unwrap();
        assert_eq!(out["data"]["pw"], "aGk=");
        assert!(out.get("stringData").is_none());
    }

    #[test]
    fn no_new_finalizers_while_deleting() {
        let res = cm_res();
        let mut old = prepare_create(
            &res,
            "v1",
            "default",
            json!({"metadata": {"name": "c", "finalizers": ["a"]}}),
        )
        .unwrap();
        old["metadata"]["deletionTimestamp"] = json!(now_rfc3339());
        let mut body = old.clone();
        body["metadata"]["finalizers"] = json!(["a", "b"]);
        assert_eq!(
            prepare_update(&res, "v1", &old, body, false)
                .unwrap_err()
                .code,
            422
        );
    }
}
