#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Snapshot tests of realistic KUDO package templates (in the style of the
//! zookeeper and cassandra operators) rendered with KUDO-like contexts.

use kudo_template::Template;
use serde_json::{Value, json};

fn render(file: &str, data: &Value) -> String {
    let path = format!("{}/tests/packages/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let template = Template::parse(&format!("templates/{file}"), &text).unwrap();
    template.render(data).unwrap()
}

fn zookeeper_context(metrics: &str) -> Value {
    json!({
        "OperatorName": "zookeeper", "Name": "zk", "Namespace": "default",
        "AppVersion": "3.6.2", "OperatorVersion": "0.3.3",
        "PlanName": "deploy", "PhaseName": "zookeeper", "StepName": "deploy",
        "Params": {
            "NODE_COUNT": "3", "IMAGE": "zookeeper", "MEMORY": "1Gi", "MEMORY_MB": "1024",
            "CPUS": "250m", "METRICS_ENABLED": metrics, "METRICS_PORT": "7000",
            "CLIENT_PORT": "2181", "POD_MANAGEMENT_POLICY": "",
            "EXTRA_PORTS": {"server": 2888, "election": 3888},
            "STORAGE_CLASS": "", "DISK_SIZE": "5Gi"
        },
        "Pipes": {}
    })
}

fn cassandra_context() -> Value {
    json!({
        "OperatorName": "cassandra", "Name": "cass", "Namespace": "db",
        "Params": {
            "NODE_TOPOLOGY": [
                {"datacenter": "DC1", "nodes": 3.0, "racks": [{"name": "r1", "offset": "0"}, {"name": "r2", "offset": "1"}]},
                {"datacenter": "DC2", "nodes": 1.0, "racks": []}
            ],
            "HEAP_SIZE": "2G", "JVM_OPTS": "-XX:+UseG1GC", "PASSWORD": "s3cret"
        }
    })
}

#[test]
fn renders_zookeeper_statefulset_with_range_until() {
    insta::assert_snapshot!(render("statefulset.yaml", &zookeeper_context("true")));
}

#[test]
fn statefulset_drops_metrics_block_when_disabled() {
    let out = render("statefulset.yaml", &zookeeper_context("false"));
    assert!(!out.contains("METRICS_PORT"), "{out}");
    assert!(out.contains("server.3=zk-2.zk-hs:2888:3888\""), "{out}");
}

#[test]
fn renders_cassandra_configmap_with_to_yaml_indent() {
    insta::assert_snapshot!(render("configmap.yaml", &cassandra_context()));
}

#[test]
fn renders_one_service_per_datacenter_from_an_array_of_maps() {
    insta::assert_snapshot!(render("services.yaml", &cassandra_context()));
}

#[test]
fn package_templates_report_their_parameter_references() {
    let path = format!(
        "{}/tests/packages/statefulset.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let t = Template::parse(
        "templates/statefulset.yaml",
        &std::fs::read_to_string(path).unwrap(),
    )
    .unwrap();
    let params: Vec<String> = t.param_references().into_iter().collect();
    assert_eq!(
        params,
        [
            "CLIENT_PORT",
            "CPUS",
            "DISK_SIZE",
            "EXTRA_PORTS",
            "IMAGE",
            "MEMORY",
            "MEMORY_MB",
            "METRICS_ENABLED",
            "METRICS_PORT",
            "NODE_COUNT",
            "POD_MANAGEMENT_POLICY",
            "STORAGE_CLASS"
        ]
    );
    let roots: Vec<String> = t.root_fields().into_iter().collect();
    assert_eq!(
        roots,
        ["AppVersion", "Name", "Namespace", "OperatorName", "Params"]
    );
}

#[test]
fn root_fields_ignore_dot_inside_range_and_with() {
    let t = Template::parse(
        "t",
        "{{ range .Params.L }}{{ .name }}{{ $.Params.X }}{{ end }}{{ with .A }}{{ .b }}{{ end }}",
    )
    .unwrap();
    assert_eq!(
        t.root_fields().into_iter().collect::<Vec<_>>(),
        ["A", "Params"]
    );
    assert_eq!(
        t.param_references().into_iter().collect::<Vec<_>>(),
        ["L", "X"]
    );
}
