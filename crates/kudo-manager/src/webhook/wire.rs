//! The AdmissionReview as it arrives, reduced to what the rules read.
//!
//! kube's `AdmissionReview<T>` flattens its type fields, which makes serde
//! buffer the whole request (both objects) into an intermediate tree before
//! decoding it, and `ObjectMeta` decodes every label, annotation and
//! managedFields entry. Here the request is decoded in one pass straight
//! from the body: strings are borrowed where they have no escapes, fields
//! the rules never look at are skipped (still checked to be JSON, not for
//! their types), and each object keeps only the metadata the engine reads.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::admission::Operation;
use kudo_api::{Instance, InstanceSpec, InstanceStatus, Time};
use kudo_engine::view::InstanceView;
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};

pub(crate) use super::wire_status::WireStatus;

/// Top level of an AdmissionReview; `apiVersion` and `kind` are required as
/// in kube's `TypeMeta`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireReview<'a> {
    #[serde(borrow)]
    pub api_version: Cow<'a, str>,
    #[serde(borrow)]
    pub kind: Cow<'a, str>,
    #[serde(borrow, default)]
    pub request: Option<WireRequest<'a>>,
}

/// The request; required fields are those kube's `AdmissionRequest` requires.
/// The objects are views the engine judges as they are; boxed, as the
/// request is passed up by value through the decoder and inline views are
/// kilobytes.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireRequest<'a> {
    #[serde(borrow)]
    pub uid: Cow<'a, str>,
    #[serde(borrow)]
    pub kind: WireKind<'a>,
    #[allow(dead_code)] // required, never read
    resource: IgnoredAny,
    #[serde(borrow, default)]
    pub sub_resource: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub namespace: Option<Cow<'a, str>>,
    pub operation: Operation,
    #[allow(dead_code)] // required, never read
    user_info: IgnoredAny,
    /// The rules never read the new object's status (the API server keeps
    /// it equal to the old one on spec writes): skipped.
    #[serde(default, deserialize_with = "boxed_view::<_, IgnoredAny>")]
    pub object: Option<Box<InstanceView<'a>>>,
    /// Only the status fields the rules read (see [`WireStatus`]).
    #[serde(default, deserialize_with = "boxed_view::<_, WireStatus>")]
    pub old_object: Option<Box<InstanceView<'a>>>,
}

/// An object decoded slim (its status as `S`) into an owned `Instance`,
/// then into the view the engine judges. Only bodies the fast path gives up
/// on come this way, so the copy is no concern.
fn boxed_view<'de, 'a, D, S>(d: D) -> Result<Option<Box<InstanceView<'a>>>, D::Error>
where
    D: Deserializer<'de>,
    WireInstance<S>: Deserialize<'de>,
    Instance: From<WireInstance<S>>,
{
    let wire = Option::<WireInstance<S>>::deserialize(d)?;
    Ok(wire.map(|wire| {
        let instance = Instance::from(wire);
        Box::new(InstanceView::from(&instance).into_owned())
    }))
}

/// `request.kind`.
#[derive(Debug, Deserialize)]
pub(crate) struct WireKind<'a> {
    #[serde(borrow)]
    pub group: Cow<'a, str>,
    #[serde(borrow)]
    pub version: Cow<'a, str>,
    #[serde(borrow)]
    pub kind: Cow<'a, str>,
}

/// An Instance with only the metadata the admission rules read; `metadata`
/// and `spec` are required as in the derived `Instance`. `S` is
/// [`WireStatus`], or `IgnoredAny` where the status is not read.
#[derive(Debug, Deserialize)]
pub(crate) struct WireInstance<S> {
    metadata: WireMeta,
    spec: InstanceSpec,
    #[serde(default = "none")]
    status: Option<S>,
}

fn none<S>() -> Option<S> {
    None
}

/// The metadata fields `kudo_engine` reads (name and namespace for
/// messages, uid and generation for derived plan uids, deletionTimestamp).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    generation: Option<i64>,
    #[serde(default)]
    deletion_timestamp: Option<Time>,
}

impl From<WireInstance<WireStatus>> for Instance {
    fn from(wire: WireInstance<WireStatus>) -> Self {
        let status = wire.status.map(InstanceStatus::from);
        let mut instance = Instance::from(WireInstance::<IgnoredAny> {
            metadata: wire.metadata,
            spec: wire.spec,
            status: None,
        });
        instance.status = status;
        instance
    }
}

impl From<WireInstance<IgnoredAny>> for Instance {
    fn from(wire: WireInstance<IgnoredAny>) -> Self {
        let WireMeta {
            name,
            namespace,
            uid,
            generation,
            deletion_timestamp,
        } = wire.metadata;
        Instance {
            metadata: ObjectMeta {
                name,
                namespace,
                uid,
                generation,
                deletion_timestamp,
                ..ObjectMeta::default()
            },
            spec: wire.spec,
            status: None,
        }
    }
}

/// Decodes a body; the error is serde's, with line and column.
///
/// The body is checked to be UTF-8 once, up front (vectorised), so the
/// parser need not check every string again; bodies that are not UTF-8 go
/// through the byte parser, which says where the bad byte is.
pub(crate) fn parse(body: &[u8]) -> Result<WireReview<'_>, serde_json::Error> {
    match std::str::from_utf8(body) {
        Ok(text) => fast::review(text).map_or_else(|| serde_json::from_str(text), Ok),
        Err(_) => serde_json::from_slice(body),
    }
}

#[path = "wire_fast.rs"]
mod fast;

#[cfg(test)]
#[path = "wire_fast_tests.rs"]
mod fast_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn full_instance(value: &serde_json::Value) -> Instance {
        serde_json::from_value(value.clone()).unwrap()
    }

    #[test]
    fn keeps_what_the_rules_read_and_drops_the_rest() {
        let object = serde_json::json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
            "metadata": {
                "name": "zk", "namespace": "ns", "uid": "u-7", "generation": 4,
                "deletionTimestamp": "2026-01-02T03:04:05Z",
                "labels": {"a": "b"},
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]
            },
            "spec": {"operatorVersion": {"name": "zk-1"}, "parameters": {"A": "1"}},
            "status": {"appliedOperatorVersion": "zk-1"}
        });
        let wire: WireInstance<WireStatus> = serde_json::from_value(object.clone()).unwrap();
        let slim = Instance::from(wire);
        let full = full_instance(&object);
        assert_eq!(slim.spec, full.spec);
        assert_eq!(slim.status, full.status);
        for (slim, full) in [
            (&slim.metadata.name, &full.metadata.name),
            (&slim.metadata.namespace, &full.metadata.namespace),
            (&slim.metadata.uid, &full.metadata.uid),
        ] {
            assert_eq!(slim, full);
        }
        assert_eq!(slim.metadata.generation, Some(4));
        assert_eq!(
            slim.metadata.deletion_timestamp,
            full.metadata.deletion_timestamp
        );
        assert!(slim.metadata.labels.is_none() && slim.metadata.managed_fields.is_none());
    }

    #[test]
    fn borrows_strings_without_escapes_and_unescapes_the_others() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
            "uid":"plain","kind":{"group":"kudo.dev","version":"v1beta1","kind":"Instance"},
            "resource":{},"operation":"CREATE","userInfo":{},"name":"a\"b"}}"#;
        let review = parse(body).unwrap();
        let request = review.request.unwrap();
        assert!(matches!(request.uid, Cow::Borrowed("plain")));
        assert_eq!(request.name, "a\"b");
    }

    #[test]
    fn requires_the_fields_kube_requires() {
        for missing in ["uid", "kind", "resource", "operation", "userInfo"] {
            let mut request = serde_json::json!({
                "uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {}, "operation": "CREATE", "userInfo": {}
            });
            request.as_object_mut().unwrap().remove(missing);
            let body = serde_json::to_vec(&serde_json::json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request
            }))
            .unwrap();
            let err = parse(&body).unwrap_err();
            assert!(err.to_string().contains(missing), "{missing}: {err}");
        }
    }

    #[test]
    fn the_new_objects_status_is_skipped_and_the_old_ones_kept() {
        let object = serde_json::json!({
            "metadata": {"name": "zk"}, "spec": {},
            "status": {"appliedOperatorVersion": "zk-1"}
        });
        let new: WireInstance<IgnoredAny> = serde_json::from_value(object.clone()).unwrap();
        let old: WireInstance<WireStatus> = serde_json::from_value(object).unwrap();
        assert!(Instance::from(new).status.is_none());
        let status = Instance::from(old).status.unwrap();
        assert_eq!(status.applied_operator_version.as_deref(), Some("zk-1"));
    }

    #[test]
    fn invalid_utf8_is_reported_with_its_position() {
        let err = parse(b"{\"apiVersion\":\"\xff\"}").unwrap_err();
        assert!(err.to_string().contains("column"), "{err}");
    }

    #[test]
    fn a_missing_spec_is_an_error_as_for_the_full_instance() {
        let object = serde_json::json!({"metadata": {"name": "zk"}});
        assert!(serde_json::from_value::<WireInstance<IgnoredAny>>(object.clone()).is_err());
        assert!(serde_json::from_value::<Instance>(object).is_err());
    }
}
