//! What a review reads of an OperatorVersion through the API server.
//!
//! A live GET returns the whole object, and a real OperatorVersion is
//! mostly its package's manifests (`spec.templates`) and task specs: for
//! this repository's zookeeper package, 6 KB of a 7.7 KB object; for the
//! big KUDO operators, tens of kilobytes. No admission rule reads them, and
//! decoding them per review cost more than the whole review. So the live
//! read decodes into [`ReviewedOperatorVersion`]: the same `OperatorVersion`
//! with those two fields skipped unread (left empty) and only the
//! metadata a log line names.

use std::borrow::Cow;
use std::collections::BTreeMap;

use kube::Resource;
use kube::core::ObjectMeta;
use kudo_api::{ObjectReference, OperatorVersion, OperatorVersionSpec, Parameter, Plan};
use serde::Deserialize;
use serde::de::IgnoredAny;

/// An OperatorVersion as the admission rules read it: `spec.templates` and
/// `spec.tasks` empty, metadata reduced to name, namespace and
/// resourceVersion, status dropped. Everything else is decoded as
/// `OperatorVersion` decodes it.
#[derive(Clone, Debug, Deserialize)]
#[serde(from = "Wire")]
pub struct ReviewedOperatorVersion(pub OperatorVersion);

#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    metadata: WireMeta,
    spec: WireSpec,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
}

/// `OperatorVersionSpec`'s fields with the same serde rules, the two
/// unread ones skipped. The conversion below names every field of
/// `OperatorVersionSpec`, so a field added there fails to compile here
/// until it is decoded (or deliberately skipped) too.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireSpec {
    #[serde(default)]
    operator: Option<ObjectReference>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    app_version: Option<String>,
    #[serde(default)]
    templates: IgnoredAny,
    #[serde(default)]
    tasks: IgnoredAny,
    #[serde(default)]
    parameters: Vec<Parameter>,
    #[serde(default)]
    plans: BTreeMap<String, Plan>,
    #[serde(default)]
    connection_string: Option<String>,
    #[serde(default)]
    upgradable_from: Vec<ObjectReference>,
}

impl From<Wire> for ReviewedOperatorVersion {
    fn from(wire: Wire) -> Self {
        let WireSpec {
            operator,
            version,
            app_version,
            templates: IgnoredAny,
            tasks: IgnoredAny,
            parameters,
            plans,
            connection_string,
            upgradable_from,
        } = wire.spec;
        let spec = OperatorVersionSpec {
            operator,
            version,
            app_version,
            templates: BTreeMap::new(),
            tasks: Vec::new(),
            parameters,
            plans,
            connection_string,
            upgradable_from,
        };
        Self(OperatorVersion {
            metadata: ObjectMeta {
                name: wire.metadata.name,
                namespace: wire.metadata.namespace,
                resource_version: wire.metadata.resource_version,
                ..ObjectMeta::default()
            },
            spec,
            status: None,
        })
    }
}

/// Read through `Api<ReviewedOperatorVersion>` at OperatorVersion's URL.
impl Resource for ReviewedOperatorVersion {
    type DynamicType = ();
    type Scope = <OperatorVersion as Resource>::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        OperatorVersion::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        OperatorVersion::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        OperatorVersion::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        OperatorVersion::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.0.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

#[cfg(test)]
#[path = "ov_read_tests.rs"]
mod tests;
