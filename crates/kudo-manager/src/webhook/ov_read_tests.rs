use std::path::Path;

use kudo_api::{OperatorVersion, OperatorVersionSpec, Parameter, Plan};

use super::*;

/// An OperatorVersion with every spec field set, templates and tasks from
/// this repository's zookeeper package, and the metadata a GET returns.
fn full_operator_version() -> OperatorVersion {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../operators/zookeeper");
    let mut ov = kudo_package::load(&package)
        .expect("the zookeeper package loads")
        .to_operator_version("prod");
    assert!(!ov.spec.templates.is_empty() && !ov.spec.tasks.is_empty());
    ov.spec.connection_string = Some("zk:2181".into());
    ov.spec.upgradable_from = vec![ObjectReference {
        name: Some("zookeeper-0.2.0".into()),
        ..ObjectReference::default()
    }];
    ov.metadata.resource_version = Some("4711".into());
    ov.metadata.uid = Some("4a7e".into());
    ov.metadata.labels = Some([("kudo.dev/operator".to_string(), "zookeeper".to_string())].into());
    ov
}

fn as_reviewed(ov: &OperatorVersion) -> ReviewedOperatorVersion {
    let json = serde_json::to_vec(ov).expect("serialises");
    serde_json::from_slice(&json).expect("decodes")
}

#[test]
fn reads_everything_the_rules_read_and_skips_templates_and_tasks() {
    let full = full_operator_version();
    let ReviewedOperatorVersion(read) = as_reviewed(&full);
    let expected = OperatorVersion {
        metadata: ObjectMeta {
            name: full.metadata.name.clone(),
            namespace: full.metadata.namespace.clone(),
            resource_version: full.metadata.resource_version.clone(),
            ..ObjectMeta::default()
        },
        spec: OperatorVersionSpec {
            templates: BTreeMap::new(),
            tasks: Vec::new(),
            ..full.spec.clone()
        },
        status: None,
    };
    assert_eq!(read.metadata, expected.metadata);
    assert_eq!(read.spec, expected.spec);
    assert!(read.status.is_none());
    assert!(!read.spec.parameters.is_empty() && !read.spec.plans.is_empty());
}

#[test]
fn decodes_a_minimal_operator_version_like_the_full_type() {
    let json = br#"{"apiVersion":"kudo.dev/v1beta1","kind":"OperatorVersion",
        "metadata":{"name":"x-1.0.0"},"spec":{}}"#;
    let full: OperatorVersion = serde_json::from_slice(json).expect("full decodes");
    let ReviewedOperatorVersion(read) = serde_json::from_slice(json).expect("reviewed decodes");
    assert_eq!(read.spec, full.spec);
    assert_eq!(read.metadata.name.as_deref(), Some("x-1.0.0"));
}

#[test]
fn refuses_what_the_full_type_refuses_in_the_fields_it_reads() {
    for json in [
        r#"{"metadata":{"name":"x"},"spec":{"parameters":"not a list"}}"#,
        r#"{"metadata":{"name":"x"},"spec":{"plans":{"deploy":{"phases":7}}}}"#,
        r#"{"metadata":{"name":"x"}}"#,
    ] {
        assert!(
            serde_json::from_str::<OperatorVersion>(json).is_err(),
            "{json}"
        );
        assert!(
            serde_json::from_str::<ReviewedOperatorVersion>(json).is_err(),
            "{json}"
        );
    }
}

#[test]
fn is_read_at_the_operator_version_url() {
    assert_eq!(
        ReviewedOperatorVersion::url_path(&(), Some("prod")),
        OperatorVersion::url_path(&(), Some("prod"))
    );
    assert_eq!(
        ReviewedOperatorVersion::api_version(&()),
        OperatorVersion::api_version(&())
    );
    assert_eq!(ReviewedOperatorVersion::kind(&()), "OperatorVersion");
}

#[test]
fn parameters_and_plans_keep_their_order_and_content() {
    let mut ov = full_operator_version();
    ov.spec.parameters.push(Parameter {
        name: "ZZZ_LAST".into(),
        default: Some("1".into()),
        ..Parameter::default()
    });
    ov.spec.plans.insert("zzz".into(), Plan::default());
    let ReviewedOperatorVersion(read) = as_reviewed(&ov);
    assert_eq!(read.spec.parameters, ov.spec.parameters);
    assert_eq!(read.spec.plans, ov.spec.plans);
}
