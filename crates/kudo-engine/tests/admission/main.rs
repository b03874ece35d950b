//! admission::review: KUDO's TestValidateUpdate cases, ported and changed
//! where kudo-rs changes the rule, plus kudo-rs's own rules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod advice;
mod kudo_ported;
mod kudo_rs_rules;
mod plan_parameters;
#[path = "../support/mod.rs"]
mod support;
mod tenant_input;

use std::collections::BTreeMap;

use kudo_api::names::CLEANUP_FINALIZER;
use kudo_api::{
    ActivePlan, AppliedConfig, AutoSuppression, ExecutionStatus as S, Instance, InstanceStatus,
    MaintenanceWindow, OperatorVersion, ParameterType, PlanAction, PlanExecution, Suppression,
    WindowKind,
};
use kudo_engine::admission::{Subject, Verdict};
use support::*;

fn fixture_ov(name: &str) -> OperatorVersion {
    ov(
        name,
        vec![
            (
                "deploy",
                plan(Some("serial"), &[phase("nodes", Some("serial"), 3)]),
            ),
            ("update", simple_plan(1)),
            ("cleanup", simple_plan(1)),
            (
                "canary",
                plan(None, &[phase("rollout", Some("serial-canary"), 3)]),
            ),
        ],
        vec![
            param("foo", Some("deploy")),
            param("other-foo", Some("deploy")),
            param("bar", Some("update")),
        ],
    )
}

/// Deployed: everything consumed, deploy COMPLETE.
fn idle() -> Instance {
    let mut i = instance("foo-operator");
    i.spec.parameters = Some(BTreeMap::from([("foo".into(), "foo".into())]));
    let ov = fixture_ov("foo-operator");
    let mut st = InstanceStatus {
        applied_operator_version: Some("foo-operator".into()),
        applied_parameters: i.spec.parameters.clone(),
        active_plan: Some(ActivePlan {
            name: "deploy".into(),
            uid: Some("u0".into()),
            status: S::Complete,
            ..Default::default()
        }),
        ..Default::default()
    };
    for (name, p) in &ov.spec.plans {
        st.plan_status
            .insert(name.clone(), kudo_engine::tree::sync_plan(name, p, None));
    }
    st.plan_status.get_mut("deploy").unwrap().status = Some(S::Complete);
    i.status = Some(st);
    i
}

/// deploy running, at phase "nodes", step "s1".
fn running() -> Instance {
    let mut i = idle();
    let st = i.status.as_mut().unwrap();
    st.active_plan.as_mut().unwrap().status = S::InProgress;
    let ps = st.plan_status.get_mut("deploy").unwrap();
    ps.status = Some(S::InProgress);
    ps.phases[0].status = Some(S::InProgress);
    ps.phases[0].steps[0].status = Some(S::Complete);
    ps.phases[0].steps[1].status = Some(S::InProgress);
    i
}

fn with(i: &Instance, f: impl FnOnce(&mut Instance)) -> Instance {
    let mut i = i.clone();
    f(&mut i);
    i
}

fn manual(plan: &str, uid: &str) -> impl FnOnce(&mut Instance) {
    let (plan, uid) = (plan.to_string(), uid.to_string());
    move |i| {
        i.spec.plan_execution = Some(PlanExecution {
            plan_name: Some(plan),
            uid: Some(uid),
            ..Default::default()
        })
    }
}

fn params(kv: &[(&str, &str)]) -> impl FnOnce(&mut Instance) {
    let map: BTreeMap<String, String> = kv
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |i| i.spec.parameters = Some(map)
}

fn upgraded(i: &mut Instance) {
    i.spec.operator_version.name = Some("foo-operator-2.0".into());
}

fn deleting(i: &mut Instance) {
    i.metadata.deletion_timestamp = Some(time(ts("2019-10-17T01:01:01Z")));
    i.metadata.finalizers = Some(vec![CLEANUP_FINALIZER.into()]);
}

/// The engine's review of Instances, converted to the admission model.
fn review_at(
    old: Option<&Instance>,
    new: &Instance,
    old_ov: Option<&OperatorVersion>,
    new_ov: Option<&OperatorVersion>,
    now: Option<jiff::Timestamp>,
) -> Verdict {
    let old = old.map(Subject::from);
    kudo_engine::admission::review(old.as_ref(), &Subject::from(new), old_ov, new_ov, now)
}

/// [`review_at`] without a clock: no time-dependent warnings.
fn review(
    old: Option<&Instance>,
    new: &Instance,
    old_ov: Option<&OperatorVersion>,
    new_ov: Option<&OperatorVersion>,
) -> Verdict {
    review_at(old, new, old_ov, new_ov, None)
}

fn update(old: &Instance, new: &Instance) -> Verdict {
    let ov = fixture_ov(kudo_engine::select::spec_ov_name(&new.spec));
    let old_ov = fixture_ov(kudo_engine::select::spec_ov_name(&old.spec));
    review(Some(old), new, Some(&old_ov), Some(&ov))
}

fn denied(v: &Verdict) -> &str {
    match v {
        Verdict::Denied { message } => message,
        Verdict::Allowed { warnings } => panic!("expected a denial, got allowed with {warnings:?}"),
    }
}

fn warnings(v: &Verdict) -> &[String] {
    match v {
        Verdict::Allowed { warnings } => warnings,
        Verdict::Denied { message } => panic!("expected allowed, got denied: {message}"),
    }
}
