//! Chaos (ignored by default; `make chaos` runs it): the real `kudo-manager`
//! binary is SIGKILLed at 20 random points of a 50-step serial plan and
//! restarted each time. The plan must finish in the execution it started in
//! (same plan uid), and no step recorded COMPLETE in the Instance status at a
//! kill may be applied again afterwards — counted per ConfigMap from the
//! sandbox's request log, not inferred from resourceVersions.
//!
//! A step that was IN_PROGRESS at a kill may legitimately be applied again
//! (the manager died between applying and recording it); the check only
//! covers steps already COMPLETE at the moment of the kill, read from the
//! store once the process is dead and the requests it had sent are answered.
//!
//! Kill points are drawn from a seeded generator: the seed is printed, and
//! `KUDO_CHAOS_SEED=<seed>` repeats a run. Each kill waits until the drawn
//! number of steps is COMPLETE, then a drawn 0–`JITTER_MS` ms, so kills land
//! anywhere in a step (before its apply, between apply and status write,
//! ...). The sandbox adds `LATENCY` to every request so that a step takes
//! longer than the test needs to notice it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use kudo_api::ExecutionStatus as S;
use kudo_api::names::FIELD_MANAGER;
use kudo_e2e::chaos::{
    KillPoint, Rng, applies_by_name, complete_steps, expect_no_reapplies, kill9, reapplies, seed,
    serial_configmap_package, spawn_manager, step_name, wait_for_apply,
};
use kudo_e2e::{Env, plan_status, plan_uid, skip_on_real_cluster};
use kudo_sandbox::{Faults, Sandbox};

const STEPS: usize = 50;
const KILLS: usize = 20;
const INSTANCE: &str = "chaos";
/// Added to every request: a step (one apply) then takes about as long,
/// so a status write (once a second in a run of quick steps) covers a few
/// steps and kills land before, between and during writes.
const LATENCY: Duration = Duration::from_millis(200);
/// A kill comes 0..JITTER after the apply of the drawn step was answered:
/// before the next apply, during it, or during a status write.
const JITTER_MS: u64 = 300;
/// Highest drawn step: the steps after it outlast the jitter, so the plan
/// is never finished at a kill.
const LAST_TARGET: u64 = STEPS as u64 - 3;
/// After a kill: time for the sandbox to answer what the dead process sent.
const SETTLE: Duration = Duration::from_millis(500);
const WAIT: Duration = Duration::from_secs(120);

fn object_of(step: &str) -> String {
    format!("{INSTANCE}-{step}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos: kills and restarts the manager binary 20 times; run with `make chaos`"]
async fn manager_sigkilled_at_random_points_finishes_the_plan_without_reapplying_completed_steps() {
    if skip_on_real_cluster("counts applies in the sandbox's request log") {
        return;
    }
    let seed = seed("KUDO_CHAOS_SEED");
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut env = Env::start_with(
        Sandbox::builder()
            .persist_to(dir.path().join("store.json"))
            .request_log(500_000)
            .faults(Faults::none().latency(LATENCY)),
    )
    .await
    .unwrap();
    env.stop_controller().await.unwrap();
    let sandbox = env.sandbox.as_sandbox().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    env.sandbox.write_kubeconfig(&kubeconfig).unwrap();
    let manager_log = dir.path().join("manager.log");
    let package = serial_configmap_package(dir.path(), "chaos-op", STEPS).unwrap();
    env.install(package, INSTANCE, &[]).await.unwrap();

    // Kill k comes after the apply of step targets[k] — or, when the last
    // run already recorded that step COMPLETE (it went on during the
    // jitter), after the apply of the first step not recorded.
    let targets = rng.distinct_sorted(KILLS, 1, LAST_TARGET);
    println!("kill after the apply of these steps (+ 0-{JITTER_MS} ms): {targets:?}");
    let started = Instant::now();
    let mut kills: Vec<KillPoint> = Vec::new();
    let mut first_uid: Option<String> = None;
    for (n, &drawn) in targets.iter().enumerate() {
        let recorded = kills.last().map_or(0, |k| k.complete.len()) as u64;
        let target = drawn.max(recorded + 1);
        let mark = sandbox.next_request_seq();
        let spawned = Instant::now();
        let mut child = spawn_manager(&kubeconfig, &manager_log).unwrap();
        let target_object = object_of(&step_name(target as usize));
        let applied = wait_for_apply(
            sandbox,
            mark,
            (&env.ns, &target_object),
            FIELD_MANAGER,
            &mut child,
            WAIT,
        )
        .await;
        if let Err(e) = applied {
            let log = std::fs::read_to_string(&manager_log).unwrap_or_default();
            panic!("before kill {}: {e}\nmanager log:\n{log}", n + 1);
        }
        tokio::time::sleep(Duration::from_millis(rng.between(0, JITTER_MS))).await;
        kill9(&mut child).await.unwrap();
        tokio::time::sleep(SETTLE).await;
        let last_seq = sandbox.next_request_seq().saturating_sub(1);
        let inst = env.instances().get(INSTANCE).await.unwrap();
        let complete = complete_steps(&inst, "deploy");
        // No uid yet: the dead run never wrote status, and the next may
        // start the plan afresh. Once recorded, the execution must stay.
        let uid = plan_uid(&inst, "deploy");
        match (&first_uid, uid) {
            (None, uid) => first_uid = uid,
            (Some(first), uid) => assert_eq!(
                uid.as_ref(),
                Some(first),
                "kill {} found another deploy execution",
                n + 1
            ),
        }
        assert!(
            complete.len() < STEPS,
            "the plan finished before kill {}; raise LATENCY so kills land mid-plan",
            n + 1
        );
        println!(
            "kill {:2} at {:5.1}s, {:4} ms after start, after the apply of step {target:2}: {:2} steps COMPLETE",
            n + 1,
            started.elapsed().as_secs_f64(),
            spawned.elapsed().as_millis(),
            complete.len()
        );
        kills.push(KillPoint {
            kill: n + 1,
            complete,
            last_seq,
        });
    }

    let mut child = spawn_manager(&kubeconfig, &manager_log).unwrap();
    let done = env
        .wait_for(INSTANCE, "deploy COMPLETE", WAIT, |i| {
            plan_status(i, "deploy") == Some(S::Complete)
        })
        .await;
    kill9(&mut child).await.unwrap();
    let done = done.unwrap_or_else(|e| {
        let log = std::fs::read_to_string(&manager_log).unwrap_or_default();
        panic!("{e}\nmanager log:\n{log}")
    });
    let elapsed = started.elapsed();
    assert_eq!(plan_uid(&done, "deploy"), first_uid, "the plan uid changed");
    assert_eq!(complete_steps(&done, "deploy").len(), STEPS);
    let history = done.status.as_ref().map(|s| s.history.len()).unwrap_or(0);
    tokio::time::sleep(SETTLE).await;

    let log = sandbox.requests();
    assert_eq!(sandbox.requests_dropped(), 0, "the request log overflowed");
    let applies = applies_by_name(&log, &env.ns, FIELD_MANAGER);
    for i in 1..=STEPS {
        let name = object_of(&step_name(i));
        assert!(
            applies.contains_key(&name),
            "ConfigMap {name} was never applied (is the request log working?)"
        );
    }
    let found = reapplies(&log, &kills, &env.ns, FIELD_MANAGER, object_of);
    let total: usize = applies.values().map(Vec::len).sum();
    let twice: Vec<&String> = applies
        .iter()
        .filter(|(_, s)| s.len() > 1)
        .map(|(n, _)| n)
        .collect();
    println!(
        "{KILLS} SIGKILLs survived, plan COMPLETE in {:.1}s (seed {seed}); {} requests logged; \
         {total} applies of {STEPS} ConfigMaps, applied more than once (IN_PROGRESS at a kill): {twice:?}; \
         history entries: {history}; re-applies of COMPLETE steps: {}",
        elapsed.as_secs_f64(),
        log.len(),
        found.len()
    );
    expect_no_reapplies(&found).unwrap();

    // The check can fail: an apply of a completed step's ConfigMap by the
    // manager's field manager, as a redone step would send, is caught.
    let cm = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": object_of("step-01")}, "data": {"step": "1"},
    });
    env.api::<ConfigMap>()
        .patch(
            &object_of("step-01"),
            &PatchParams::apply(FIELD_MANAGER),
            &Patch::Apply(&cm),
        )
        .await
        .unwrap();
    let log = sandbox.requests();
    let caught = reapplies(&log, &kills, &env.ns, FIELD_MANAGER, object_of);
    assert_eq!(
        caught.iter().map(|r| r.step.as_str()).collect::<Vec<_>>(),
        vec!["step-01"],
        "a deliberate re-apply of step-01 was not reported exactly once"
    );
    assert!(expect_no_reapplies(&caught).is_err());
}
