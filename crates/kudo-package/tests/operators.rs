//! The example packages under operators/: they verify cleanly and their
//! `package render` output is snapshot-tested.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use kudo_package::render::{
    MaintenanceContext, PlanRenderOptions, RenderContext, RenderedTask, StaticDiscovery,
    format_render_output, render_plan, render_task,
};

fn operator_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../operators")
        .join(name)
}

const OPERATORS: [&str; 4] = ["first-operator", "zookeeper", "canary-web", "zk-monitor"];

#[test]
fn every_example_operator_verifies_without_errors_or_warnings() {
    for name in OPERATORS {
        let pkg = kudo_package::load(&operator_dir(name)).unwrap();
        let report = pkg.verify();
        assert!(report.is_clean(), "{name}:\n{report}");
    }
}

/// What the manager and the webhook check of an OperatorVersion made from
/// these packages (and from the end-to-end fixtures) finds nothing: the
/// object holds what `package verify` needs.
#[test]
fn their_operator_versions_pass_the_servers_verification() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut dirs: Vec<PathBuf> = OPERATORS.iter().map(|n| operator_dir(n)).collect();
    dirs.extend(
        std::fs::read_dir(&fixtures)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("operator.yaml").exists()),
    );
    for dir in dirs {
        let pkg = kudo_package::load(&dir).unwrap();
        let ov = pkg.to_operator_version("ns");
        let report = kudo_package::verify::verify_operator_version(&ov);
        assert!(!report.has_errors(), "{}:\n{report}", dir.display());
    }
}

fn render(name: &str, plan: &str, values: &[(&str, &str)]) -> String {
    let pkg = kudo_package::load(&operator_dir(name)).unwrap();
    let ov = pkg.to_operator_version("demo");
    let options = PlanRenderOptions {
        plan: plan.to_string(),
        instance_name: format!("{name}-instance"),
        namespace: "demo".to_string(),
        instance_uid: Some("00000000-0000-0000-0000-000000000001".to_string()),
        plan_uid: "00000000-0000-0000-0000-0000000000aa".to_string(),
        values: values
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
    };
    let steps = render_plan(&ov, &options, &StaticDiscovery::default()).unwrap();
    format_render_output(&steps)
}

#[test]
fn first_operator_deploy_renders() {
    insta::assert_snapshot!(render("first-operator", "deploy", &[("REPLICAS", "3")]));
}

#[test]
fn zk_monitor_deploy_renders_its_zookeeper_as_a_child_instance() {
    insta::assert_snapshot!(render("zk-monitor", "deploy", &[("ZOOKEEPER_NODES", "3")]));
}

#[test]
fn zookeeper_deploy_renders() {
    insta::assert_snapshot!(render("zookeeper", "deploy", &[]));
}

#[test]
fn zookeeper_deploy_with_typed_parameters_renders() {
    insta::assert_snapshot!(render(
        "zookeeper",
        "deploy",
        &[
            ("NODE_COUNT", "1"),
            ("METRICS_ENABLED", "true"),
            (
                "EXTRA_JVM_FLAGS",
                "[-XX:+UseG1GC, -Dzookeeper.forceSync=no]"
            ),
            ("POD_LABELS", "{team: storage, tier: \"1\"}"),
            ("STORAGE_CLASS", "fast"),
        ]
    ));
}

#[test]
fn zookeeper_cleanup_renders() {
    insta::assert_snapshot!(render("zookeeper", "cleanup", &[]));
}

#[test]
fn zookeeper_maintenance_renders_empty_outside_maintenance() {
    insta::assert_snapshot!(render("zookeeper", "maintenance", &[]));
}

#[test]
fn zookeeper_maintenance_records_the_nodes_window_and_members() {
    let pkg = kudo_package::load(&operator_dir("zookeeper")).unwrap();
    let ov = pkg.to_operator_version("demo");
    let ctx = RenderContext {
        instance_name: "zk".into(),
        namespace: "demo".into(),
        plan: "maintenance".into(),
        phase: "maintenance".into(),
        step: "record".into(),
        params: kudo_package::params::template_values(&ov.spec, &BTreeMap::new()).unwrap(),
        maintenance: MaintenanceContext {
            nodes: vec!["n1".into(), "n2".into()],
            start: "2024-05-01T02:00:00Z".into(),
            end: "2024-05-01T03:00:00Z".into(),
        },
        ..RenderContext::for_operator_version(&ov)
    };
    let rendered = render_task(&ov, "record-maintenance", &ctx, &StaticDiscovery::default());
    let Ok(RenderedTask::Apply { objects }) = rendered else {
        panic!("expected an Apply, got {rendered:?}");
    };
    assert_eq!(objects.len(), 1);
    assert_eq!(objects[0]["metadata"]["name"], "zk-maintenance");
    assert_eq!(
        objects[0]["data"],
        serde_json::json!({
            "nodes": "n1,n2",
            "start": "2024-05-01T02:00:00Z",
            "end": "2024-05-01T03:00:00Z",
            "members": "server.1=zk-zookeeper-0\nserver.2=zk-zookeeper-1\nserver.3=zk-zookeeper-2\n",
            "quorum-survives-losing": "1",
        })
    );
}

#[test]
fn canary_web_deploy_renders() {
    insta::assert_snapshot!(render("canary-web", "deploy", &[]));
}

#[test]
fn canary_web_update_with_ingress_renders() {
    insta::assert_snapshot!(render(
        "canary-web",
        "update",
        &[("INGRESS_ENABLED", "true"), ("MESSAGE", "Second edition")]
    ));
}

#[test]
fn canary_web_generate_serves_the_page_its_pipe_task_made() {
    let text = render("canary-web", "generate", &[]);
    assert!(
        text.contains("name: canarywebinstance.generate.page.generate.generatepage.indexhtml"),
        "{text}"
    );
    assert!(!text.contains("canary-web-instance-page"), "{text}");
}

#[test]
fn packed_operator_loads_like_the_directory() {
    let dir = operator_dir("zookeeper");
    let tmp = tempfile::tempdir().unwrap();
    let tgz = tmp.path().join("zookeeper-0.1.0.tgz");
    let file = std::fs::File::create(&tgz).unwrap();
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.append_dir_all("zookeeper", &dir).unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    let from_dir = kudo_package::load(&dir).unwrap();
    let from_tgz = kudo_package::load(&tgz).unwrap();
    assert_eq!(from_dir.operator, from_tgz.operator);
    assert_eq!(from_dir.params, from_tgz.params);
    assert_eq!(from_dir.templates, from_tgz.templates);
}

#[test]
fn zookeeper_parameter_table_lists_types_defaults_and_triggers() {
    let pkg = kudo_package::load(&operator_dir("zookeeper")).unwrap();
    insta::assert_snapshot!(pkg.params_table(false));
}

#[test]
fn default_instance_name_follows_kudo() {
    let pkg = kudo_package::load(&operator_dir("first-operator")).unwrap();
    assert_eq!(pkg.default_instance_name(), "first-operator-instance");
    assert_eq!(pkg.operator_version_name(), "first-operator-1.27.0-0.2.0");
}
