//! Builders and a reconcile simulator shared by the integration tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::Timestamp;
use kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kudo_api::names::CLEANUP_FINALIZER;
use kudo_api::{
    Instance, InstanceSpec, InstanceStatus, ObjectReference, OperatorVersion, OperatorVersionSpec,
    Parameter, Phase, Plan, PlanAction, PlanOperation, Step, Task,
};
use kudo_engine::{
    Action, Decision, EngineConfig, Input, Observed, TaskKey, TaskOutcome, TaskResult, decide,
    decide_in_place,
};

/// A phase: name, strategy, step count, tasks per step.
pub struct PhaseDef<'a> {
    pub name: &'a str,
    pub strategy: Option<&'a str>,
    pub steps: usize,
    pub tasks: &'a [&'a str],
}

pub fn phase<'a>(name: &'a str, strategy: Option<&'a str>, steps: usize) -> PhaseDef<'a> {
    PhaseDef {
        name,
        strategy,
        steps,
        tasks: &["t"],
    }
}

pub fn plan(strategy: Option<&str>, phases: &[PhaseDef<'_>]) -> Plan {
    Plan {
        strategy: strategy.map(str::to_string),
        phases: phases
            .iter()
            .map(|p| Phase {
                name: p.name.to_string(),
                strategy: p.strategy.map(str::to_string),
                steps: (0..p.steps)
                    .map(|i| Step {
                        name: format!("s{i}"),
                        tasks: p.tasks.iter().map(|t| t.to_string()).collect(),
                    })
                    .collect(),
            })
            .collect(),
        downtime: None,
    }
}

/// One serial phase `main` with `steps` steps.
pub fn simple_plan(steps: usize) -> Plan {
    plan(Some("serial"), &[phase("main", Some("serial"), steps)])
}

pub fn ov(name: &str, plans: Vec<(&str, Plan)>, params: Vec<Parameter>) -> OperatorVersion {
    let mut tasks: BTreeSet<String> = BTreeSet::new();
    for (_, p) in &plans {
        for ph in &p.phases {
            for s in &ph.steps {
                tasks.extend(s.tasks.iter().cloned());
            }
        }
    }
    let mut ov = OperatorVersion::new(
        name,
        OperatorVersionSpec {
            tasks: tasks
                .into_iter()
                .map(|t| Task {
                    name: t,
                    kind: "Dummy".into(),
                    spec: Default::default(),
                })
                .collect(),
            parameters: params,
            plans: plans.into_iter().map(|(n, p)| (n.to_string(), p)).collect(),
            ..Default::default()
        },
    );
    ov.metadata.namespace = Some("default".into());
    ov
}

pub fn param(name: &str, trigger: Option<&str>) -> Parameter {
    Parameter {
        name: name.into(),
        trigger: trigger.map(str::to_string),
        ..Default::default()
    }
}

pub fn instance(ov_name: &str) -> Instance {
    Instance {
        metadata: ObjectMeta {
            name: Some("zk".into()),
            namespace: Some("default".into()),
            uid: Some("uid-1".into()),
            generation: Some(1),
            ..Default::default()
        },
        spec: InstanceSpec {
            operator_version: ObjectReference {
                name: Some(ov_name.into()),
                ..Default::default()
            },
            ..Default::default()
        },
        status: None,
    }
}

pub fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

pub fn op(id: &str, action: PlanAction, phase: Option<&str>, step: Option<&str>) -> PlanOperation {
    PlanOperation {
        id: id.into(),
        action,
        plan: None,
        phase: phase.map(str::to_string),
        step: step.map(str::to_string),
        reason: Some("testing".into()),
        requested_by: Some("alice".into()),
        pod: None,
        pod_uid: None,
    }
}

/// Runs reconciles like the manager: decide, run the new tasks, decide
/// again with the outcomes, until no new task is asked for; then store the
/// status and apply finalizer actions.
pub struct Sim {
    pub inst: Instance,
    pub ov: OperatorVersion,
    pub config: EngineConfig,
    pub now: Timestamp,
    pub events: Vec<(String, String)>,
    pub ran: Vec<TaskKey>,
    /// What the manager observes as drifted in every reconcile.
    pub drift: Vec<kudo_engine::recovery::Drift>,
    /// The node maintenance the manager reads for the Instance.
    pub maintenance: Option<kudo_engine::maintenance::Notice>,
    /// What the manager counted in the Instance's namespace.
    pub namespace: Option<kudo_engine::namespace::NamespaceSuppressions>,
}

impl Sim {
    pub fn new(inst: Instance, ov: OperatorVersion) -> Self {
        Self {
            inst,
            ov,
            config: EngineConfig::default(),
            now: ts("2026-11-24T12:00:00Z"),
            events: Vec::new(),
            ran: Vec::new(),
            drift: Vec::new(),
            maintenance: None,
            namespace: None,
        }
    }

    pub fn status(&self) -> &InstanceStatus {
        self.inst.status.as_ref().unwrap()
    }

    pub fn input<'a>(&'a self, observed: &'a Observed) -> Input<'a> {
        Input {
            instance: &self.inst,
            operator_version: Some(&self.ov),
            observed,
            now: self.now,
            config: &self.config,
        }
    }

    /// `decide` on the stored Instance, checked against `decide_in_place`
    /// on a copy of the stored status: same decision, and `changed` says
    /// exactly whether the status differs from the stored one.
    pub fn decide_once(&self, observed: &Observed) -> Decision {
        let d = decide(self.input(observed));
        let stored = self.inst.status.clone().unwrap_or_default();
        let mut status = stored.clone();
        let effects = decide_in_place(self.input(observed), &mut status);
        assert_eq!(status, d.status, "decide_in_place gave another status");
        assert_eq!(
            effects.actions, d.actions,
            "decide_in_place gave other actions"
        );
        assert_eq!(effects.requeue_after, d.requeue_after);
        assert_eq!(
            effects.changed,
            status != stored,
            "decide_in_place reported changed={} wrongly",
            effects.changed
        );
        d
    }

    /// One reconcile as the manager does it with `decide` on the stored
    /// Instance. Alongside, a working copy is fed through
    /// `decide_in_place` with the same observations, checking in every
    /// pass that `changed` says exactly whether that pass changed it, and at
    /// the end that a copy differing from the stored status was reported.
    pub fn reconcile(&mut self, outcome: impl Fn(&TaskKey) -> TaskOutcome) -> Decision {
        self.reconcile_with(|k| TaskResult {
            outcome: outcome(k),
            objects: Vec::new(),
            notes: Vec::new(),
        })
    }

    /// As [`Sim::reconcile`], each task reporting a whole result (objects
    /// applied, notes).
    pub fn reconcile_with(&mut self, result: impl Fn(&TaskKey) -> TaskResult) -> Decision {
        let mut observed = Observed {
            drift: self.drift.clone(),
            maintenance: self.maintenance.clone(),
            namespace: self.namespace.clone(),
            ..Observed::default()
        };
        let mut ran = BTreeSet::new();
        let stored = self.inst.status.clone().unwrap_or_default();
        let mut working = stored.clone();
        let mut any_changed = false;
        for _ in 0..10_000 {
            let d = self.decide_once(&observed);
            let before = working.clone();
            let effects = decide_in_place(self.input(&observed), &mut working);
            assert_eq!(
                effects.changed,
                working != before,
                "fed-back decide_in_place reported changed={} wrongly",
                effects.changed
            );
            any_changed |= effects.changed;
            let new: Vec<TaskKey> = d
                .actions
                .iter()
                .filter_map(|a| match a {
                    Action::RunTask { key, .. } if !ran.contains(key) => Some(key.clone()),
                    _ => None,
                })
                .collect();
            if new.is_empty() {
                assert!(
                    any_changed || working == stored,
                    "the working copy differs from the stored status but no pass said so"
                );
                self.store(&d);
                return d;
            }
            for k in new {
                ran.insert(k.clone());
                self.ran.push(k.clone());
                observed.tasks.insert(k.clone(), result(&k));
            }
        }
        panic!("reconcile did not settle");
    }

    fn store(&mut self, d: &Decision) {
        for a in &d.actions {
            match a {
                Action::AddFinalizer => self
                    .inst
                    .metadata
                    .finalizers
                    .get_or_insert_with(Vec::new)
                    .push(CLEANUP_FINALIZER.into()),
                Action::RemoveFinalizer => {
                    if let Some(f) = &mut self.inst.metadata.finalizers {
                        f.retain(|x| x != CLEANUP_FINALIZER);
                    }
                }
                Action::Event {
                    reason, message, ..
                } => self.events.push((reason.clone(), message.clone())),
                Action::RunTask { .. } | Action::DeleteClusterScoped { .. } => {}
            }
        }
        self.inst.status = Some(d.status.clone());
    }

    /// Reconciles with every task done.
    pub fn all_done(&mut self) -> Decision {
        self.reconcile(|_| TaskOutcome::Done)
    }

    pub fn advance(&mut self, d: Duration) {
        self.now = self
            .now
            .checked_add(jiff::SignedDuration::try_from(d).unwrap())
            .unwrap();
    }

    /// Changes spec like a user: bumps generation.
    pub fn edit(&mut self, f: impl FnOnce(&mut InstanceSpec)) {
        f(&mut self.inst.spec);
        let g = self.inst.metadata.generation.unwrap_or(0);
        self.inst.metadata.generation = Some(g + 1);
    }

    /// Requests a plan operation (as `kubectl kudo plan ...` does).
    pub fn operate(&mut self, operation: PlanOperation) {
        self.edit(|s| s.plan_operations.push(operation));
    }

    pub fn set_params(&mut self, kv: &[(&str, &str)]) {
        self.edit(|s| {
            let p = s.parameters.get_or_insert_with(BTreeMap::new);
            for (k, v) in kv {
                p.insert(k.to_string(), v.to_string());
            }
        });
    }

    pub fn plan_status(&self, plan: &str) -> kudo_api::ExecutionStatus {
        self.status().plan_status[plan].status()
    }

    pub fn step_status(&self, plan: &str, phase: &str, step: &str) -> kudo_api::ExecutionStatus {
        self.status().plan_status[plan]
            .phase(phase)
            .unwrap()
            .step(step)
            .unwrap()
            .status()
    }

    pub fn has_event(&self, reason: &str, message: &str) -> bool {
        self.events
            .iter()
            .any(|(r, m)| r == reason && m.contains(message))
    }
}

/// Task outcomes for [`Sim::reconcile`]: `outcome` for the tasks `pick`
/// selects, done for every other task.
pub fn only_where(
    pick: impl Fn(&TaskKey) -> bool,
    outcome: TaskOutcome,
) -> impl Fn(&TaskKey) -> TaskOutcome {
    move |k| {
        if pick(k) {
            outcome.clone()
        } else {
            TaskOutcome::Done
        }
    }
}

/// Keys of the RunTask actions of a decision.
pub fn run_keys(d: &Decision) -> Vec<String> {
    d.actions
        .iter()
        .filter_map(|a| match a {
            Action::RunTask { key, .. } => {
                Some(format!("{}/{}/{}", key.phase(), key.step(), key.task()))
            }
            _ => None,
        })
        .collect()
}

pub fn time(t: Timestamp) -> kudo_api::Time {
    kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t)
}
