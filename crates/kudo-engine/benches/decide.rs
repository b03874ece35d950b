//! decide and decide_in_place on large plans (phases × steps) in every phase
//! strategy, in three states:
//!
//! - `half_done`: parallel plan, the first half of every phase's steps
//!   COMPLETE, canary phases approved: every call walks the whole tree and
//!   emits a task for every other step (5,000 RunTask actions at 10,000).
//! - `mid_way`: serial plan, the first half of the phases COMPLETE, the
//!   middle phase half done and its next step's task just reported done;
//!   in parallel phases the rest of that phase's steps are running. This
//!   is what a reconcile pass of a big rollout looks like.
//! - `idle`: the plan COMPLETE, nothing to do.
//!
//! Runs with mimalloc, the global allocator of kudo-manager (the only
//! caller of the engine in production).
//!
//! The `decide` groups include the copy of the stored status that `decide`
//! makes (the `clone_status` group measures it alone); the
//! `decide_in_place` groups clone the status in untimed setup.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "../tests/support/mod.rs"]
mod support;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use kudo_api::{ExecutionStatus as S, InstanceStatus, StepStatus};
use kudo_engine::{Input, Observed, TaskOutcome, TaskResult, decide, decide_in_place};
use support::{Sim, instance, ov, phase, plan};

const STRATEGIES: [&str; 4] = ["serial", "parallel", "serial-canary", "parallel-canary"];
const SIZES: [(usize, usize); 3] = [(10, 10), (10, 100), (100, 100)];

/// A Sim whose deploy plan (phases × steps, phase strategy `strategy`)
/// has just started.
fn started(phases: usize, steps: usize, plan_strategy: &str, strategy: &str) -> Sim {
    let names: Vec<String> = (0..phases).map(|i| format!("p{i}")).collect();
    let defs: Vec<_> = names
        .iter()
        .map(|n| phase(n, Some(strategy), steps))
        .collect();
    let mut sim = Sim::new(
        instance("big"),
        ov(
            "big",
            vec![("deploy", plan(Some(plan_strategy), &defs))],
            vec![],
        ),
    );
    let first = sim.decide_once(&Observed::default());
    sim.inst.status = Some(first.status);
    sim
}

fn set_step(step: &mut StepStatus, status: S) {
    step.status = Some(status);
    for t in &mut step.tasks {
        t.status = Some(status);
    }
}

/// Approves canary phases, applies `edit` to every step (phase index,
/// step index), then stores the status one decide makes of it (aggregates
/// and blockers consistent).
fn settle(mut sim: Sim, edit: impl Fn(usize, usize, &mut StepStatus)) -> Sim {
    let status = sim.inst.status.as_mut().unwrap();
    let ps = status.plan_status.get_mut("deploy").unwrap();
    for (p, phase) in ps.phases.iter_mut().enumerate() {
        phase.canary_approvals = Some(2);
        for (s, step) in phase.steps.iter_mut().enumerate() {
            edit(p, s, step);
        }
    }
    let d = sim.decide_once(&Observed::default());
    sim.inst.status = Some(d.status);
    sim
}

fn half_done(phases: usize, steps: usize, strategy: &str) -> (Sim, Observed) {
    let sim = started(phases, steps, "parallel", strategy);
    let sim = settle(sim, |_, s, step| {
        if s < steps / 2 {
            set_step(step, S::Complete);
        }
    });
    (sim, Observed::default())
}

fn mid_way(phases: usize, steps: usize, strategy: &str) -> (Sim, Observed) {
    let sim = started(phases, steps, "serial", strategy);
    let (mid_phase, mid_step) = (phases / 2, steps / 2);
    let parallel = strategy.starts_with("parallel");
    let sim = settle(sim, |p, s, step| {
        if p < mid_phase || (p == mid_phase && s < mid_step) {
            set_step(step, S::Complete);
        } else if p == mid_phase && (s == mid_step || parallel) {
            set_step(step, S::InProgress);
        }
    });
    let mut observed = Observed::default();
    let key = sim
        .decide_once(&observed)
        .actions
        .into_iter()
        .find_map(|a| match a {
            kudo_engine::Action::RunTask { key, .. }
                if key.phase() == format!("p{mid_phase}")
                    && key.step() == format!("s{mid_step}") =>
            {
                Some(key)
            }
            _ => None,
        })
        .expect("the middle step runs");
    observed.tasks.insert(
        key,
        TaskResult {
            outcome: TaskOutcome::Done,
            objects: Vec::new(),
            notes: Vec::new(),
        },
    );
    (sim, observed)
}

fn idle(phases: usize, steps: usize) -> (Sim, Observed) {
    let sim = started(phases, steps, "serial", "serial");
    let sim = settle(sim, |_, _, step| set_step(step, S::Complete));
    (sim, Observed::default())
}

fn input<'a>(sim: &'a Sim, observed: &'a Observed) -> Input<'a> {
    Input {
        instance: &sim.inst,
        operator_version: Some(&sim.ov),
        observed,
        now: sim.now,
        config: &sim.config,
    }
}

type State = fn(usize, usize, &str) -> (Sim, Observed);

fn bench_states(c: &mut Criterion, state_name: &str, state: State) {
    let mut cloning = c.benchmark_group(format!("decide/{state_name}"));
    cloning.sample_size(20);
    for strategy in STRATEGIES {
        for (phases, steps) in SIZES {
            let (sim, observed) = state(phases, steps, strategy);
            cloning.bench_function(BenchmarkId::new(strategy, phases * steps), |b| {
                b.iter(|| decide(black_box(input(&sim, &observed))))
            });
        }
    }
    cloning.finish();

    let mut in_place = c.benchmark_group(format!("decide_in_place/{state_name}"));
    in_place.sample_size(20);
    for strategy in STRATEGIES {
        for (phases, steps) in SIZES {
            let (sim, observed) = state(phases, steps, strategy);
            let stored: InstanceStatus = sim.inst.status.clone().unwrap();
            in_place.bench_function(BenchmarkId::new(strategy, phases * steps), |b| {
                b.iter_batched_ref(
                    || stored.clone(),
                    |status| decide_in_place(black_box(input(&sim, &observed)), status),
                    BatchSize::LargeInput,
                )
            });
        }
    }
    in_place.finish();
}

fn bench_decide(c: &mut Criterion) {
    bench_states(c, "mid_way", mid_way);
    bench_states(c, "half_done", half_done);

    let mut quiet = c.benchmark_group("decide_in_place/idle");
    quiet.sample_size(20);
    for (phases, steps) in SIZES {
        let (sim, observed) = idle(phases, steps);
        let stored = sim.inst.status.clone().unwrap();
        let effects = decide_in_place(input(&sim, &observed), &mut stored.clone());
        assert!(!effects.changed && effects.actions.is_empty(), "idle");
        quiet.bench_function(BenchmarkId::from_parameter(phases * steps), |b| {
            b.iter_batched_ref(
                || stored.clone(),
                |status| decide_in_place(black_box(input(&sim, &observed)), status),
                BatchSize::LargeInput,
            )
        });
    }
    quiet.finish();

    // Baseline: one copy of the stored status, which decide makes.
    let mut baseline = c.benchmark_group("clone_status");
    baseline.sample_size(20);
    for (phases, steps) in SIZES {
        let (sim, _) = half_done(phases, steps, "serial");
        baseline.bench_function(BenchmarkId::from_parameter(phases * steps), |b| {
            b.iter(|| black_box(sim.inst.status.clone()))
        });
    }
    baseline.finish();
}

criterion_group!(benches, bench_decide);
criterion_main!(benches);
