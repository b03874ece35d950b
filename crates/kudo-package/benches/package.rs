//! Load, verify, render and hash costs on the zookeeper example package.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use kudo_package::render::{PlanRenderOptions, StaticDiscovery, render_plan};
use serde_json::json;

fn zookeeper_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../operators/zookeeper")
}

fn benches(c: &mut Criterion) {
    let dir = zookeeper_dir();
    c.bench_function("load zookeeper package (dir)", |b| {
        b.iter(|| kudo_package::load(black_box(&dir)).unwrap())
    });
    let pkg = kudo_package::load(&dir).unwrap();
    c.bench_function("verify zookeeper package", |b| {
        b.iter(|| black_box(&pkg).verify())
    });
    let ov = pkg.to_operator_version("default");
    let options = PlanRenderOptions {
        instance_uid: Some("uid".into()),
        ..Default::default()
    };
    let discovery = StaticDiscovery::default();
    c.bench_function(
        "render zookeeper deploy plan (5 objects, enhanced, hashed)",
        |b| b.iter(|| render_plan(black_box(&ov), &options, &discovery).unwrap()),
    );
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "n", "labels": {"a": "b"}},
        "data": {"zoo.cfg": "tickTime=2000\ninitLimit=10\nsyncLimit=5\n".repeat(20)}});
    c.bench_function("dependencies hash of one ConfigMap", |b| {
        b.iter(|| kudo_package::hash::dependencies_hash([Some(black_box(&cm))]))
    });
}

/// What reading one rendered document costs: a ConfigMap as the
/// plan-throughput bench applies it, and a StatefulSet-sized manifest.
fn yaml_parse(c: &mut Criterion) {
    let configmap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-42\n  namespace: default\ndata:\n  key: \"value-42\"\n";
    let statefulset = std::fs::read_to_string(zookeeper_dir().join("templates/statefulset.yaml"))
        .unwrap_or_default();
    c.bench_function("yaml ConfigMap: parse_value", |b| {
        b.iter(|| kudo_package::yaml::parse_value(black_box(configmap)).unwrap())
    });
    // The template itself is not rendered YAML; only time it if it parses.
    if kudo_package::yaml::parse_value(&statefulset).is_ok() {
        c.bench_function("yaml StatefulSet template: parse_value", |b| {
            b.iter(|| kudo_package::yaml::parse_value(black_box(&statefulset)))
        });
    }
}

criterion_group!(package, benches, yaml_parse);
criterion_main!(package);
