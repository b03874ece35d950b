//! Faults (ignored by default; `make chaos` runs it): the sandbox answers
//! 10% of all API requests — reads, watches and writes, the test's own
//! included — with 409, 429, 500 or 503 (2.5% each), adds latency to every
//! request and closes every watch after a few events. 50 Instances of mixed
//! packages (first-operator, zookeeper, e2e-op, note-op, child-op, and
//! parent-op, whose KudoOperator task adds a child Instance each) must all
//! reach deploy COMPLETE and then uninstall cleanly: cleanup plans run, the
//! Instances are gone, and every object they owned (namespaced, and the
//! cluster-scoped ClusterRoles of e2e-op) is garbage-collected. The
//! in-process controller must count the errors it met in its metrics, must
//! still be running at the end, and nothing in the process may panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kudo_api::ExecutionStatus as S;
use kudo_api::names::{FIELD_MANAGER, HERITAGE_LABEL, HERITAGE_VALUE, OPERATOR_LABEL};
use kudo_api::{Instance, InstanceSpec, ObjectReference};
use kudo_e2e::resilient::{count_panics, error_counts, retry, wait_for_instances};
use kudo_e2e::{Env, fixture, operator, plan_status, skip_on_real_cluster};
use kudo_sandbox::{Faults, Sandbox};

/// (operator name, package, Instances of it); parent-op adds one child-op
/// Instance each.
fn mix() -> Vec<(&'static str, std::path::PathBuf, usize)> {
    vec![
        ("first-operator", operator("first-operator"), 10),
        ("zookeeper", operator("zookeeper"), 10),
        ("e2e-op", fixture("e2e-op-v1"), 10),
        ("note-op", fixture("note-op"), 10),
        ("child-op", fixture("child-op"), 5),
        ("parent-op", fixture("parent-op"), 5),
    ]
}
const INSTANCES: usize = 50;
const CHILDREN: usize = 5;
const WAIT: Duration = Duration::from_secs(150);
const ATTEMPTS: usize = 50;

fn faults() -> Faults {
    Faults::none()
        .fail_all(0.025, 409)
        .fail_all(0.025, 429)
        .fail_all(0.025, 500)
        .fail_all(0.025, 503)
        .latency(Duration::from_millis(5))
        .close_watches_after(5)
}

fn not_complete(items: &[Arc<Instance>]) -> String {
    let pending: Vec<String> = items
        .iter()
        .filter(|i| plan_status(i, "deploy") != Some(S::Complete))
        .map(|i| {
            // The plan's message, its blocker and the plans beside it say
            // why when it is stuck.
            let status = i.status.as_ref();
            let message = status
                .and_then(|s| s.plan_status.get("deploy"))
                .map(|p| p.message.clone())
                .unwrap_or_default();
            let others: Vec<String> = status
                .map(|s| {
                    s.plan_status
                        .iter()
                        .filter(|(name, _)| *name != "deploy")
                        .map(|(name, p)| format!("{name}={:?}: {}", p.status, p.message))
                        .collect()
                })
                .unwrap_or_default();
            format!(
                "{} ({:?}: {message}; blockers {:?}; others {others:?})",
                i.metadata.name.clone().unwrap_or_default(),
                plan_status(i, "deploy"),
                status.map(|s| &s.blockers),
            )
        })
        .collect();
    format!("{} Instances, not COMPLETE: {pending:?}", items.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "faults: 50 Instances under injected errors; run with `make chaos`"]
async fn fifty_instances_complete_and_uninstall_under_injected_faults() {
    if skip_on_real_cluster("injects faults into the sandbox") {
        return;
    }
    let panics = count_panics();
    let env = Env::start_with(
        Sandbox::builder()
            .ready_delay(Duration::from_millis(100))
            .request_log(1_000_000),
    )
    .await
    .unwrap();
    let sandbox = env.sandbox.as_sandbox().unwrap();
    let mut ovs = Vec::new();
    for (op, package, count) in mix() {
        ovs.push((
            op,
            env.install_operator_version(package).await.unwrap(),
            count,
        ));
    }
    sandbox.set_faults(faults());
    let first_request = sandbox.next_request_seq();
    let started = Instant::now();

    let api = env.instances();
    let mut names = Vec::new();
    let mut test_retries = 0;
    for (op, ov, count) in &ovs {
        for i in 0..*count {
            let name = format!("{op}-{i}");
            let mut inst = Instance::new(
                &name,
                InstanceSpec {
                    operator_version: ObjectReference {
                        name: Some(ov.clone()),
                        ..ObjectReference::default()
                    },
                    ..InstanceSpec::default()
                },
            );
            inst.metadata.namespace = Some(env.ns.clone());
            inst.metadata.labels = Some([(OPERATOR_LABEL.to_string(), op.to_string())].into());
            let body = Patch::Apply(serde_json::to_value(&inst).unwrap());
            let pp = PatchParams::apply(FIELD_MANAGER).force();
            test_retries += retry(&format!("creating {name}"), ATTEMPTS, false, || {
                api.patch(&name, &pp, &body)
            })
            .await
            .unwrap();
            names.push(name);
        }
    }
    assert_eq!(names.len(), INSTANCES);
    let deployed = wait_for_instances(
        api.clone(),
        WAIT,
        |items| {
            items.len() == INSTANCES + CHILDREN
                && items
                    .iter()
                    .all(|i| plan_status(i, "deploy") == Some(S::Complete))
        },
        not_complete,
    )
    .await;
    if let Err(e) = deployed {
        panic!("{e}\n{}", requests_of_stuck(sandbox, &api).await);
    }
    let deployed = started.elapsed();

    let dp = DeleteParams::background();
    for name in &names {
        test_retries += retry(&format!("deleting {name}"), ATTEMPTS, true, || {
            api.delete(name, &dp)
        })
        .await
        .unwrap();
    }
    wait_for_instances(api.clone(), WAIT, |items| items.is_empty(), not_complete)
        .await
        .unwrap();
    let uninstalled = started.elapsed();
    let stats = sandbox.fault_stats();
    // Checked without faults, so a count of what is left is exact.
    sandbox.set_faults(Faults::none());
    let requests = sandbox.requests_since(first_request).len();
    let leftovers = owned_objects_left(&env).await;
    let metrics = env.metrics.render();
    let (errors, by_kind) = error_counts(&metrics);
    println!(
        "{INSTANCES} Instances (+{CHILDREN} children) COMPLETE in {:.1}s, uninstalled after {:.1}s in all; \
         {requests} requests, injected: {:?} ({} errors), {} watches closed; manager errors counted: {errors} {by_kind:?}; \
         test-side retries: {test_retries}; objects left: {leftovers:?}",
        deployed.as_secs_f64(),
        uninstalled.as_secs_f64(),
        stats.errors,
        stats.total_errors(),
        stats.watches_closed
    );
    assert!(
        [409, 429, 500, 503]
            .iter()
            .all(|c| stats.errors.get(c).copied().unwrap_or(0) > 0),
        "not every fault code was injected: {:?}",
        stats.errors
    );
    assert!(stats.watches_closed > 0, "no watch was closed");
    assert!(errors > 0, "the manager counted no errors:\n{metrics}");
    assert!(
        !env.controller_finished(),
        "the controller stopped during the run"
    );
    assert!(leftovers.is_empty(), "owned objects left: {leftovers:?}");
    assert_eq!(panics.load(Ordering::SeqCst), 0, "something panicked");
}

/// The last requests about each Instance not COMPLETE and its objects
/// (named after it), to tell a lost wake-up from a hung request.
async fn requests_of_stuck(sandbox: &Sandbox, api: &Api<Instance>) -> String {
    sandbox.set_faults(Faults::none());
    let items = api
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    let log = sandbox.requests();
    let mut out = String::new();
    for inst in items
        .iter()
        .filter(|i| plan_status(i, "deploy") != Some(S::Complete))
    {
        let name = inst.metadata.name.clone().unwrap_or_default();
        let about: Vec<String> = log
            .iter()
            .filter(|r| {
                r.path
                    .rsplit('/')
                    .any(|part| part == name || part.starts_with(&format!("{name}-")))
            })
            .map(|r| {
                format!(
                    "  #{} {} {} -> {}{} as {:?}",
                    r.seq,
                    r.method,
                    r.path,
                    r.code,
                    if r.injected { " (injected)" } else { "" },
                    r.impersonated_user
                )
            })
            .collect();
        let last = &about[about.len().saturating_sub(30)..];
        out.push_str(&format!(
            "{name}: {} requests, the last {} (log ends at #{}):\n{}\n",
            about.len(),
            last.len(),
            sandbox.next_request_seq(),
            last.join("\n")
        ));
    }
    out
}

/// Objects carrying KUDO's heritage label that are still there after the
/// Instances are gone, as `kind/name`; waits up to 30 s for the garbage
/// collector.
async fn owned_objects_left(env: &Env) -> Vec<String> {
    let lp = ListParams::default().labels(&format!("{HERITAGE_LABEL}={HERITAGE_VALUE}"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut left = Vec::new();
        let names = |kind: &str, items: Vec<Option<String>>| {
            items
                .into_iter()
                .map(|n| format!("{kind}/{}", n.unwrap_or_default()))
                .collect::<Vec<_>>()
        };
        macro_rules! left_of {
            ($ty:ty, $api:expr) => {{
                let api: Api<$ty> = $api;
                let items = api.list(&lp).await.unwrap().items;
                left.extend(names(
                    stringify!($ty),
                    items.into_iter().map(|o| o.metadata.name).collect(),
                ));
            }};
        }
        left_of!(ConfigMap, env.api());
        left_of!(Deployment, env.api());
        left_of!(StatefulSet, env.api());
        left_of!(Service, env.api());
        left_of!(PodDisruptionBudget, env.api());
        left_of!(ClusterRole, Api::all(env.client.clone()));
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
