//! Plan throughput on the sandbox: a 100-step serial plan of single-ConfigMap
//! Apply steps, run by the in-process controller, against 100 sequential
//! server-side applies by a bare kube client (the floor any plan runner has
//! to pay). Target: plan < 1.5 × bare.
//!
//! Both are timed the same way, end to end: the plan from the Instance
//! create until a watch sees `deploy` COMPLETE, the bare run from the first
//! apply until the last response. After each run its objects are removed,
//! untimed, so every run meets a namespace without thousands of objects of
//! earlier runs. Before the timed runs, one probe plan
//! prints what the controller sent per step (API requests by verb and
//! resource, reconciles, engine decisions), counted by a layer on the
//! controller's own client, and the process CPU time per plan and per bare
//! run (steadier than wall time on a loaded machine), then wall time in
//! alternating rounds of 10 bare runs and 10 plans (`PLAN_BENCH_ROUNDS`,
//! default 7), so that outside load hits both sides alike.
//! `PLAN_BENCH_PROFILE=plan` (or `bare`) runs only 200 runs of that side
//! after the probe, for a profiler.
//!
//! The process runs with mimalloc, the global allocator of the
//! `kudo-manager` binary; the sandbox and the bare client use it too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kudo_api::ExecutionStatus;
use kudo_e2e::{Env, NS, plan_status};
use serde_json::json;
use support::{Counts, process_cpu, spawn_controller};

mod support;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const STEPS: usize = 100;

/// A package whose deploy plan has STEPS serial steps, each applying one ConfigMap.
fn write_package(dir: &Path) {
    let mut op = String::from(
        "apiVersion: kudo.dev/v1beta1\nname: hundred\noperatorVersion: 0.1.0\nkubernetesVersion: 1.27.0\ntasks:\n",
    );
    for i in 0..STEPS {
        writeln!(
            op,
            "  - name: t{i}\n    kind: Apply\n    spec:\n      resources:\n        - cm{i}.yaml"
        )
        .unwrap();
    }
    op.push_str("plans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n");
    for i in 0..STEPS {
        writeln!(
            op,
            "          - name: s{i}\n            tasks:\n              - t{i}"
        )
        .unwrap();
    }
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(dir.join("operator.yaml"), op).unwrap();
    std::fs::write(
        dir.join("params.yaml"),
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
    )
    .unwrap();
    for i in 0..STEPS {
        std::fs::write(
            dir.join("templates").join(format!("cm{i}.yaml")),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Name }}}}-cm{i}\ndata:\n  step: \"{i}\"\n"),
        )
        .unwrap();
    }
}

fn new_instance(name: &str) -> kudo_api::Instance {
    let mut inst = kudo_api::Instance::new(
        name,
        kudo_api::InstanceSpec {
            operator_version: kudo_api::ObjectReference {
                name: Some("hundred-0.1.0".into()),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    inst.metadata.namespace = Some(NS.into());
    inst
}

/// Create an Instance and wait (watch) until its deploy plan is COMPLETE.
async fn run_plan(env: &Env, name: &str) {
    env.instances()
        .create(&Default::default(), &new_instance(name))
        .await
        .unwrap();
    env.wait_for(name, "deploy COMPLETE", Duration::from_secs(120), |i| {
        plan_status(i, "deploy") == Some(ExecutionStatus::Complete)
    })
    .await
    .unwrap();
}

/// Removes a run's objects (not timed), so that every run meets a
/// namespace as a plan usually does: its own objects, not thousands left
/// by earlier runs (the takeover check lists a kind once per pass when a
/// namespace holds at most a page of them, and asks per object beyond).
async fn clear_plan(env: &Env, name: &str) {
    env.instances()
        .delete(name, &Default::default())
        .await
        .unwrap();
    env.wait_gone(name, Duration::from_secs(120)).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), NS);
    let owned = ListParams::default().labels(&format!("kudo.dev/instance={name}"));
    let deadline = Instant::now() + Duration::from_secs(120);
    while !api.list_metadata(&owned).await.unwrap().items.is_empty() {
        assert!(Instant::now() < deadline, "the ConfigMaps of {name} stay");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn clear_bare(client: &kube::Client, prefix: &str) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    api.delete_collection(
        &Default::default(),
        &ListParams::default().labels(&format!("bench={prefix}")),
    )
    .await
    .unwrap();
}

/// A plan run's wall time, its objects cleared afterwards.
async fn timed_plan(env: &Env, name: &str) -> Duration {
    let start = Instant::now();
    run_plan(env, name).await;
    let took = start.elapsed();
    clear_plan(env, name).await;
    took
}

/// A bare run's wall time, its objects cleared afterwards.
async fn timed_bare(client: &kube::Client, prefix: &str) -> Duration {
    let start = Instant::now();
    bare_applies(client, prefix).await;
    let took = start.elapsed();
    clear_bare(client, prefix).await;
    took
}

/// 100 sequential server-side applies of the same ConfigMaps the plan writes.
async fn bare_applies(client: &kube::Client, prefix: &str) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    for i in 0..STEPS {
        let name = format!("{prefix}-cm{i}");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"bench": prefix}}, "data": {"step": i.to_string()}});
        api.patch(
            &name,
            &PatchParams::apply("bench").force(),
            &Patch::Apply(&cm),
        )
        .await
        .unwrap();
    }
}

/// Process CPU per plan and per 100 bare applies, averaged over `runs` of
/// each (each run's objects are cleared after it, outside the count).
async fn cpu_per_run(env: &Env, runs: u32) {
    let mut plan = Duration::ZERO;
    for i in 0..runs {
        let start = process_cpu();
        run_plan(env, &format!("cpu{i}")).await;
        // Let the plan's trailing watch events and reconcile finish.
        tokio::time::sleep(Duration::from_millis(50)).await;
        plan += process_cpu() - start;
        clear_plan(env, &format!("cpu{i}")).await;
    }
    let plan = plan / runs;
    let mut bare = Duration::ZERO;
    for i in 0..runs {
        let start = process_cpu();
        bare_applies(&env.client, &format!("cpubare{i}")).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        bare += process_cpu() - start;
        clear_bare(&env.client, &format!("cpubare{i}")).await;
    }
    let bare = bare / runs;
    eprintln!(
        "probe: process CPU per run ({runs} runs each): plan {plan:?}, bare {bare:?} ({:.2}x)",
        plan.as_secs_f64() / bare.as_secs_f64().max(f64::MIN_POSITIVE)
    );
}

/// Wall time per bare run and per plan in alternating rounds (bare, plan,
/// bare, plan, ...), so that load from outside hits both sides alike;
/// prints every round's ratio and their median.
async fn alternating_rounds(env: &Env, rounds: usize, runs_per_round: u32) {
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let mut bare = Duration::ZERO;
        for i in 0..runs_per_round {
            bare += timed_bare(&env.client, &format!("altbare{round}x{i}")).await;
        }
        let bare = bare / runs_per_round;
        let mut plan = Duration::ZERO;
        for i in 0..runs_per_round {
            plan += timed_plan(env, &format!("alt{round}x{i}")).await;
        }
        let plan = plan / runs_per_round;
        let ratio = plan.as_secs_f64() / bare.as_secs_f64();
        eprintln!(
            "probe: round {}: bare {bare:.1?}, plan {plan:.1?} ({ratio:.2}x)",
            round + 1
        );
        ratios.push(ratio);
    }
    ratios.sort_by(f64::total_cmp);
    if let Some(median) = ratios.get(ratios.len() / 2) {
        eprintln!("probe: alternating rounds: median ratio {median:.2}x over {rounds} rounds");
    }
}

/// `PLAN_BENCH_PROFILE=plan` or `=bare`: only `runs` runs of that side, for
/// a profiler attached to the bench (`perf record`) to see one side alone.
async fn one_side_only(env: &Env, side: &str, runs: u32) {
    let start = process_cpu();
    for i in 0..runs {
        match side {
            "plan" => drop(timed_plan(env, &format!("prof{i}")).await),
            "bare" => drop(timed_bare(&env.client, &format!("profbare{i}")).await),
            other => panic!("PLAN_BENCH_PROFILE={other}: expected plan or bare"),
        }
    }
    eprintln!(
        "probe: {runs} {side} runs (objects cleared after each) took {:?} of process CPU",
        process_cpu() - start
    );
}

/// Run one plan and print what the controller did for it, per step.
async fn probe(env: &Env, counts: &Counts, metrics: &kudo_manager::metrics::Metrics) {
    // Let the controller's start-up requests (discovery, initial lists) pass.
    tokio::time::sleep(Duration::from_millis(500)).await;
    counts.lock().unwrap().clear();
    let reconciles = metrics.reconciles.get();
    let decisions = metrics.decisions.get();
    let start = Instant::now();
    run_plan(env, "probe").await;
    let wall = start.elapsed();
    // The reconcile our last status write triggers (if any) comes after COMPLETE.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let counts = counts.lock().unwrap().clone();
    let total: usize = counts.values().sum();
    let per_step = |n: usize| n as f64 / STEPS as f64;
    eprintln!("probe: {STEPS}-step plan in {wall:?}");
    eprintln!(
        "probe: {total} API requests ({:.2}/step), {} reconciles, {} engine decisions ({:.2}/step)",
        per_step(total),
        metrics.reconciles.get() - reconciles,
        metrics.decisions.get() - decisions,
        per_step(usize::try_from(metrics.decisions.get() - decisions).unwrap()),
    );
    for (key, n) in &counts {
        eprintln!("probe:   {key:<40} {n:>5} ({:.2}/step)", per_step(*n));
    }
    clear_plan(env, "probe").await;
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let env = rt.block_on(Env::start_without_controller()).unwrap();
    let pkg = tempfile::tempdir().unwrap();
    write_package(pkg.path());
    rt.block_on(env.install_operator_version(pkg.path().to_path_buf()))
        .unwrap();
    // The client's buffer task needs the runtime.
    let (counts, stop, controller) = spawn_controller(&rt, &env);
    rt.block_on(probe(&env, &counts, &env.metrics));
    if let Ok(side) = std::env::var("PLAN_BENCH_PROFILE") {
        rt.block_on(one_side_only(&env, &side, 200));
        stop.cancel();
        let _ = rt.block_on(controller);
        return;
    }
    rt.block_on(cpu_per_run(&env, 40));
    let rounds = std::env::var("PLAN_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    rt.block_on(alternating_rounds(&env, rounds, 10));
    let counter = AtomicUsize::new(0);

    let mut group = c.benchmark_group("hundred_configmaps");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("bare_ssa_100_sequential", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut took = Duration::ZERO;
                for _ in 0..iters {
                    let run = counter.fetch_add(1, Ordering::Relaxed);
                    took += timed_bare(&env.client, &format!("bare{run}")).await;
                }
                took
            })
        });
    });
    group.bench_function("plan_100_serial_steps", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut took = Duration::ZERO;
                for _ in 0..iters {
                    let name = format!("h{}", counter.fetch_add(1, Ordering::Relaxed));
                    took += timed_plan(&env, &name).await;
                }
                took
            })
        });
    });
    group.finish();
    stop.cancel();
    let _ = rt.block_on(controller);
}

criterion_group!(benches, bench);
criterion_main!(benches);
