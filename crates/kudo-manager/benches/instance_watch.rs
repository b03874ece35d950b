//! What the webhook's watch of Instances costs per event, next to the
//! controller's own watch of the same objects: one JSON decode of an
//! Instance (a watch event's object) into each type.
//!
//! `cargo bench -p kudo-manager --bench instance_watch`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use kudo_manager::webhook::InstanceUse;

/// An Instance mid-plan with operations, windows and statuses, as JSON.
fn instance_json() -> Vec<u8> {
    let yaml = include_str!("../../kudo-api/tests/fixtures/instance-kudo-rs.yaml");
    let value: serde_json::Value = serde_saphyr::from_str(yaml).unwrap();
    serde_json::to_vec(&value).unwrap()
}

fn decode(c: &mut Criterion) {
    let json = instance_json();
    let mut group = c.benchmark_group(format!("instance_watch/decode {} bytes", json.len()));
    group.bench_function("the controller's Instance", |b| {
        b.iter(|| serde_json::from_slice::<kudo_api::Instance>(&json).unwrap())
    });
    group.bench_function("the webhook's InstanceUse", |b| {
        b.iter(|| serde_json::from_slice::<InstanceUse>(&json).unwrap())
    });
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
