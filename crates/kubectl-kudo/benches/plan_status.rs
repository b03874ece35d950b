//! How long `plan status` takes to format a large plan, and `--wait` to
//! assess one poll (both run once per second while waiting).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubectl_kudo::plan_tree;
use kubectl_kudo::wait::{Baseline, assess};
use kudo_api::{
    ExecutionStatus, Instance, InstanceSpec, InstanceStatus, OperatorVersionSpec, Phase,
    PhaseStatus, Plan, PlanStatus, Step, StepStatus,
};

const PHASES: usize = 20;
const STEPS: usize = 50;

fn big_plan() -> (Instance, OperatorVersionSpec) {
    let at = Time("2026-11-21T10:00:00Z".parse().unwrap());
    let phases: Vec<PhaseStatus> = (0..PHASES)
        .map(|p| PhaseStatus {
            name: format!("phase-{p}"),
            status: Some(ExecutionStatus::InProgress),
            steps: (0..STEPS)
                .map(|s| StepStatus {
                    name: format!("step-{s}"),
                    status: Some(if s < STEPS / 2 {
                        ExecutionStatus::Complete
                    } else {
                        ExecutionStatus::Pending
                    }),
                    message: format!("waiting for StatefulSet node-{p}-{s}"),
                    started_at: Some(at.clone()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    let ov_plan = Plan {
        strategy: Some("serial".into()),
        phases: (0..PHASES)
            .map(|p| Phase {
                name: format!("phase-{p}"),
                strategy: Some("serial".into()),
                steps: (0..STEPS)
                    .map(|s| Step {
                        name: format!("step-{s}"),
                        tasks: vec!["deploy".into()],
                    })
                    .collect(),
            })
            .collect(),
        downtime: None,
    };
    let ov = OperatorVersionSpec {
        plans: BTreeMap::from([
            ("deploy".to_string(), ov_plan.clone()),
            ("update".to_string(), ov_plan),
        ]),
        ..Default::default()
    };
    let mut spec = InstanceSpec::default();
    spec.operator_version.name = Some("big-1.0.0".into());
    let mut instance = Instance::new("big", spec);
    instance.metadata.namespace = Some("default".into());
    instance.status = Some(InstanceStatus {
        plan_status: BTreeMap::from([(
            "deploy".to_string(),
            PlanStatus {
                name: "deploy".into(),
                status: Some(ExecutionStatus::InProgress),
                uid: Some("run-1".into()),
                last_updated_timestamp: Some(at),
                phases,
                ..Default::default()
            },
        )]),
        ..Default::default()
    });
    (instance, ov)
}

fn bench(c: &mut Criterion) {
    let (instance, ov) = big_plan();
    c.bench_function("plan_status_render_1000_steps", |b| {
        b.iter(|| plan_tree::render(&instance, Some(&ov), false))
    });
    let status = instance.status.clone().unwrap();
    let baseline = Baseline::default();
    c.bench_function("wait_assess_1000_steps", |b| {
        b.iter(|| assess(Some(&status), &baseline))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
