//! The request body, decoded once with serde: the AdmissionReview envelope
//! with the objects left as raw JSON, then, once the kind is known, each
//! object into its model (an Instance into the engine's admission model
//! `kudo_engine::admission::Subject`, a MaintenanceSchedule into
//! `schedule::Schedule`). An error is
//! explained from that decode; only when the envelope itself is broken is
//! the body read again, for nothing but the uid to echo.

use std::borrow::Cow;

use kube::core::admission::{META_API_VERSION_V1, META_KIND, Operation};
use kudo_api::InstanceSpec;
use kudo_api::names::{GROUP, VERSION};
use kudo_engine::admission::{Identity, Subject};
use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::value::RawValue;

use super::answer::Answer;

/// Top level of an AdmissionReview; `apiVersion` and `kind` are required as
/// in kube's `TypeMeta`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review<'a> {
    #[serde(borrow)]
    api_version: Cow<'a, str>,
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    request: Option<Request<'a>>,
}

/// The request; required fields are those kube's `AdmissionRequest`
/// requires. The objects stay raw until the kind is known to be ours, so a
/// foreign or malformed object is still answered with the request's uid.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Request<'a> {
    #[serde(borrow)]
    pub uid: Cow<'a, str>,
    #[serde(borrow)]
    pub kind: Kind<'a>,
    #[allow(dead_code)] // required, never read
    resource: IgnoredAny,
    #[serde(borrow, default)]
    pub sub_resource: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub namespace: Option<Cow<'a, str>>,
    pub operation: Operation,
    /// Who writes: checked against the account an Instance runs as.
    pub user_info: super::acting_as::UserInfo,
    #[serde(borrow, default)]
    object: Option<&'a RawValue>,
    #[serde(borrow, default)]
    old_object: Option<&'a RawValue>,
}

/// `request.kind`.
#[derive(Debug, Deserialize)]
pub(crate) struct Kind<'a> {
    #[serde(borrow)]
    pub group: Cow<'a, str>,
    #[serde(borrow)]
    pub version: Cow<'a, str>,
    #[serde(borrow)]
    pub kind: Cow<'a, str>,
}

/// The objects of a request: `(oldObject, object)`, each when sent.
pub(crate) type Objects<T = Subject> = (Option<Box<T>>, Option<Box<T>>);

/// The (old, new) objects of a spec write: a create has no old one.
pub(crate) type SpecWrite<T> = (Option<Box<T>>, Box<T>);

/// The kinds this webhook reviews.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reviewed {
    /// `kudo.dev` Instance: the admission rules, with its OperatorVersions.
    Instance,
    /// `kudo.dev` MaintenanceSchedule: Mesos' schedule validation, nothing read.
    MaintenanceSchedule,
    /// `kudo.dev` OperatorRepository: URL and interval, nothing read.
    OperatorRepository,
    /// `kudo.dev` OperatorVersion: whoever changes one may act as the
    /// accounts of the Instances that run it.
    OperatorVersion,
}

/// Decodes the body into the request, or the error answer.
pub(crate) fn decode(body: &[u8]) -> Result<Request<'_>, Answer<'static>> {
    let review: Review<'_> = serde_json::from_slice(body).map_err(|err| {
        Answer::bad_request(
            Cow::Owned(uid_of_malformed(body)),
            format!("the request body is not an AdmissionReview: {err}"),
        )
    })?;
    let uid = || review.request.as_ref().map(|r| r.uid.to_string());
    if review.api_version != META_API_VERSION_V1 || review.kind != META_KIND {
        return Err(Answer::bad_request(
            Cow::Owned(uid().unwrap_or_default()),
            format!(
                "expected apiVersion {META_API_VERSION_V1} kind {META_KIND}, got apiVersion \
                 {:?} kind {:?}; set admissionReviewVersions to [v1] in the webhook \
                 configuration",
                review.api_version, review.kind
            ),
        ));
    }
    review.request.ok_or_else(|| {
        Answer::bad_request(
            Cow::Borrowed(""),
            "the AdmissionReview has no request".to_string(),
        )
    })
}

impl Request<'_> {
    /// The kind of the request, or the message for a kind this webhook
    /// does not review.
    pub(crate) fn reviewed_kind(&self) -> Result<Reviewed, String> {
        let kind = &self.kind;
        if kind.group == GROUP {
            match kind.kind.as_ref() {
                "Instance" => return Ok(Reviewed::Instance),
                "MaintenanceSchedule" => return Ok(Reviewed::MaintenanceSchedule),
                "OperatorRepository" => return Ok(Reviewed::OperatorRepository),
                "OperatorVersion" => return Ok(Reviewed::OperatorVersion),
                _ => {}
            }
        }
        let gv = if kind.group.is_empty() {
            kind.version.to_string()
        } else {
            format!("{}/{}", kind.group, kind.version)
        };
        Err(format!(
            "this webhook reviews only {GROUP}/{VERSION} Instance, OperatorVersion, \
             MaintenanceSchedule and OperatorRepository objects, but was sent {gv} {}; restrict \
             the webhook configuration's rules to the instances, operatorversions, \
             maintenanceschedules and operatorrepositories resources",
            kind.kind
        ))
    }

    /// Decodes the Instances the request carries into the admission model.
    pub(crate) fn objects(&self) -> Result<Objects, String> {
        let old = object::<Subject>(self.old_object, "oldObject", "Instance")?;
        let new = object::<NewInstance>(self.object, "object", "Instance")?;
        let new = new.map(|n| {
            Box::new(Subject {
                metadata: n.metadata,
                spec: n.spec,
                status: None,
            })
        });
        Ok((old, new))
    }

    /// Decodes the objects the request carries as `kind` (named in the
    /// message when one does not decode).
    pub(crate) fn objects_as<T: DeserializeOwned>(&self, kind: &str) -> Result<Objects<T>, String> {
        Ok((
            object(self.old_object, "oldObject", kind)?,
            object(self.object, "object", kind)?,
        ))
    }

    /// Whether this is an update of the `status` subresource.
    pub(crate) fn is_status_write(&self) -> bool {
        matches!(self.operation, Operation::Update)
            && self.sub_resource.as_deref() == Some("status")
    }

    /// Whether an update turns on `kudo.dev/delete-crds` (the Instance's
    /// deletion then deletes its CRDs, as its account): a metadata write
    /// that changes what the account does. An object that does not decode
    /// counts as not asking.
    pub(crate) fn asks_to_delete_crds(&self) -> bool {
        #[derive(Deserialize, Default)]
        struct Annotated {
            #[serde(default)]
            metadata: Annotations,
        }
        #[derive(Deserialize, Default)]
        struct Annotations {
            #[serde(default)]
            annotations: Option<std::collections::BTreeMap<String, Option<String>>>,
        }
        let asks = |raw: Option<&RawValue>| {
            raw.and_then(|raw| serde_json::from_str::<Annotated>(raw.get()).ok())
                .and_then(|o| o.metadata.annotations)
                .and_then(|mut a| a.remove(kudo_api::names::DELETE_CRDS_ANNOTATION).flatten())
                .is_some_and(|v| v == "true")
        };
        matches!(self.operation, Operation::Update) && asks(self.object) && !asks(self.old_object)
    }

    /// For the kinds judged by their spec alone: the (old, new) objects of
    /// a create or update of the object itself, decoded as `kind`; `None`
    /// for what is not judged by its spec (subresource writes, status
    /// included, deletions, CONNECT); an error message when an object does not
    /// decode or the new one is missing.
    pub(crate) fn spec_write_as<T: DeserializeOwned>(
        &self,
        kind: &str,
    ) -> Result<Option<SpecWrite<T>>, String> {
        let subresource = self.sub_resource.as_deref().is_some_and(|s| !s.is_empty());
        if subresource || !matches!(self.operation, Operation::Create | Operation::Update) {
            return Ok(None);
        }
        let (old, new) = self.objects_as::<T>(kind)?;
        let new = new.ok_or_else(|| {
            "request.object is missing; the API server always sends it for this operation"
                .to_string()
        })?;
        Ok(Some((old, new)))
    }
}

/// The new object as the rules read it: the API server keeps its status
/// equal to the old one's on spec writes, and the rules read only the old
/// one's, so it is skipped unread.
#[derive(Deserialize)]
struct NewInstance {
    #[serde(default)]
    metadata: Identity,
    spec: InstanceSpec,
}

/// The namespace of a decoded Instance: its own, else the request's,
/// else `default`.
pub(crate) fn instance_namespace<'a>(
    instance: &'a Subject,
    request_namespace: Option<&'a str>,
) -> &'a str {
    object_namespace(instance.metadata.namespace.as_deref(), request_namespace)
}

/// The namespace of a reviewed object: its own, else the request's, else
/// `default` (the API server sends both, the same, for a namespaced kind).
pub(crate) fn object_namespace<'a>(own: Option<&'a str>, request: Option<&'a str>) -> &'a str {
    [own, request]
        .into_iter()
        .flatten()
        .find(|ns| !ns.is_empty())
        .unwrap_or("default")
}

/// `(namespace, name)` of the OperatorVersion an Instance names; the
/// namespace defaults to the Instance's. `None` when no name is given.
pub(crate) fn ov_ref<'a>(instance: &'a Subject, instance_namespace: &'a str) -> Option<OvRef<'a>> {
    let reference = &instance.spec.operator_version;
    let name = reference.name.as_deref().filter(|n| !n.is_empty())?;
    let namespace = kudo_api::ov_namespace(reference.namespace.as_deref(), instance_namespace);
    Some((namespace, name))
}

/// `(namespace, name)` of an OperatorVersion, borrowed from the Instance.
pub(crate) type OvRef<'a> = (&'a str, &'a str);

/// The uid of a review whose envelope did not decode (a field of the wrong
/// type), so the API server can still match the answer to its call.
fn uid_of_malformed(body: &[u8]) -> String {
    // Read loosely, as JSON: a repeated key is what broke some bodies, and
    // here the last one counts, as for serde_json's maps.
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|value| Some(value.get("request")?.get("uid")?.as_str()?.to_string()))
        .unwrap_or_default()
}

fn object<T: DeserializeOwned>(
    raw: Option<&RawValue>,
    field: &str,
    kind: &str,
) -> Result<Option<Box<T>>, String> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    serde_json::from_str(raw.get()).map(Some).map_err(|err| {
        format!(
            "request.{field} is not a valid {kind}: {}; check it against the {kind} CRD",
            without_position(&err)
        )
    })
}

/// serde's message without "at line 1 column 97": the position is within
/// the object, which the reader of the message never saw on its own.
fn without_position(err: &serde_json::Error) -> String {
    let message = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    match message.strip_suffix(&suffix) {
        Some(stripped) => stripped.to_string(),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(request: serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request
        }))
        .unwrap()
    }

    fn request(extra: serde_json::Value) -> serde_json::Value {
        let mut request = serde_json::json!({
            "uid": "u", "kind": {"group": "kudo.dev", "version": "v1beta1", "kind": "Instance"},
            "resource": {}, "operation": "CREATE", "userInfo": {}
        });
        for (key, value) in extra.as_object().unwrap() {
            request[key] = value.clone();
        }
        request
    }

    #[test]
    fn requires_the_fields_kube_requires() {
        for missing in ["uid", "kind", "resource", "operation", "userInfo"] {
            let mut request = request(serde_json::json!({}));
            request.as_object_mut().unwrap().remove(missing);
            let answer = decode(&body(request)).unwrap_err();
            let message = &answer.refusal.unwrap().message;
            assert!(message.contains(missing), "{missing}: {message}");
        }
    }

    #[test]
    fn borrows_plain_strings_and_unescapes_the_others() {
        let body = body(request(serde_json::json!({"name": "a\"b"})));
        let request = decode(&body).unwrap();
        assert!(matches!(request.uid, Cow::Borrowed("u")));
        assert_eq!(request.name, "a\"b");
    }

    #[test]
    fn an_invalid_object_is_named_and_the_uid_still_echoed_by_the_caller() {
        let body = body(request(serde_json::json!({
            "object": {"metadata": {"name": "zk"}, "spec": {"parameters": {"N": 3}}}
        })));
        let request = decode(&body).unwrap();
        let message = request.objects().unwrap_err();
        assert_eq!(
            message,
            "request.object is not a valid Instance: invalid type: integer `3`, expected a \
             string; check it against the Instance CRD"
        );
    }

    #[test]
    fn null_objects_are_absent_and_present_ones_are_read() {
        let body = body(request(serde_json::json!({
            "object": {"metadata": {"name": "zk", "labels": {"a": "b"}},
                       "spec": {"operatorVersion": {"name": "zk-1"}}},
            "oldObject": null
        })));
        let (old, new) = decode(&body).unwrap().objects().unwrap();
        assert!(old.is_none());
        assert_eq!(new.unwrap().ov_name(), "zk-1");
    }

    #[test]
    fn instances_and_maintenance_schedules_are_reviewed_and_other_kinds_named() {
        let kind_of = |group: &str, kind: &str| {
            let body = body(request(serde_json::json!({
                "kind": {"group": group, "version": "v1beta1", "kind": kind}
            })));
            decode(&body).unwrap().reviewed_kind()
        };
        assert_eq!(kind_of("kudo.dev", "Instance"), Ok(Reviewed::Instance));
        assert_eq!(
            kind_of("kudo.dev", "MaintenanceSchedule"),
            Ok(Reviewed::MaintenanceSchedule)
        );
        assert_eq!(
            kind_of("kudo.dev", "OperatorRepository"),
            Ok(Reviewed::OperatorRepository)
        );
        assert_eq!(
            kind_of("kudo.dev", "OperatorVersion"),
            Ok(Reviewed::OperatorVersion)
        );
        let message = kind_of("other.dev", "MaintenanceSchedule").unwrap_err();
        assert!(
            message.contains(
                "MaintenanceSchedule and OperatorRepository objects, but was sent \
                 other.dev/v1beta1 MaintenanceSchedule"
            ),
            "{message}"
        );
    }

    #[test]
    fn invalid_utf8_is_reported_with_its_position() {
        let answer = decode(b"{\"apiVersion\":\"\xff\"}").unwrap_err();
        let message = answer.refusal.unwrap().message;
        assert!(message.contains("column"), "{message}");
    }
}
