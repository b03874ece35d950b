//! decide on large plans: phases × steps in every phase strategy, with the
//! plan half done (first half of the steps COMPLETE, canary phases fully
//! approved), so every call walks the whole tree and emits the tasks to run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kudo_api::ExecutionStatus;
use kudo_engine::{Input, Observed, decide};
use support::{Sim, instance, ov, phase, plan};

fn half_done(phases: usize, steps: usize, strategy: &str) -> Sim {
    let names: Vec<String> = (0..phases).map(|i| format!("p{i}")).collect();
    let defs: Vec<_> = names
        .iter()
        .map(|n| phase(n, Some(strategy), steps))
        .collect();
    let mut sim = Sim::new(
        instance("big"),
        ov(
            "big",
            vec![("deploy", plan(Some("parallel"), &defs))],
            vec![],
        ),
    );
    let first = sim.decide_once(&Observed::default());
    let mut status = first.status;
    let ps = status.plan_status.get_mut("deploy").unwrap();
    for phase in &mut ps.phases {
        phase.canary_approvals = Some(2);
        for (i, step) in phase.steps.iter_mut().enumerate() {
            if i < steps / 2 {
                step.status = Some(ExecutionStatus::Complete);
                for t in &mut step.tasks {
                    t.status = Some(ExecutionStatus::Complete);
                }
            }
        }
    }
    sim.inst.status = Some(status);
    sim
}

fn bench_decide(c: &mut Criterion) {
    let mut group = c.benchmark_group("decide");
    group.sample_size(30);
    for strategy in ["serial", "parallel", "serial-canary", "parallel-canary"] {
        for (phases, steps) in [(10, 10), (10, 100), (100, 100)] {
            let sim = half_done(phases, steps, strategy);
            let observed = Observed::default();
            group.bench_with_input(
                BenchmarkId::new(strategy, phases * steps),
                &sim,
                |b, sim| {
                    b.iter(|| {
                        decide(black_box(Input {
                            instance: &sim.inst,
                            operator_version: Some(&sim.ov),
                            observed: &observed,
                            now: sim.now,
                            config: &sim.config,
                        }))
                    })
                },
            );
        }
    }
    group.finish();

    // Baseline: copying the stored status once, which every decide must do
    // because the Decision owns the new status.
    let mut baseline = c.benchmark_group("clone_status");
    baseline.sample_size(30);
    for (phases, steps) in [(10, 10), (10, 100), (100, 100)] {
        let sim = half_done(phases, steps, "serial");
        baseline.bench_with_input(
            BenchmarkId::from_parameter(phases * steps),
            &sim,
            |b, sim| b.iter(|| black_box(sim.inst.status.clone())),
        );
    }
    baseline.finish();
}

criterion_group!(benches, bench_decide);
criterion_main!(benches);
